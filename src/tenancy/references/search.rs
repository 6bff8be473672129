//! The search-body rows of the table (`_search`, `_msearch` bodies), the bodies that hold
//! only a query (`_count`, `_explain`, `_validate/query`, `_field_caps`), and the search
//! body's own options: `search_after` on `_index`, rescore, `indices_boost`, suggesters,
//! point in time, slices.
//!
//! Must not touch: the query DSL, the options of hits and aggregations themselves (see
//! `query`, `query::hits`, `aggs`).

use super::super::ids::IdKind;
use super::super::json::{Object, Value};
use super::super::names::rewrite_expr;
use super::aggs::aggregations;
use super::params::body_keep_alive;
use super::query::hits::{collapse, highlight, sort};
use super::query::query;
use super::{
    at, check_field_list, illegal, known_keys, no_scripts, object_mut, parsing, unsupported, Tenant,
};
use crate::errors::EdgeError;

/// What the edge does with one top-level key of a search body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// Cannot name an index: forwarded as data.
    Pass,
    Query,
    Aggs,
    Sort,
    SearchAfter,
    Highlight,
    Collapse,
    Rescore,
    IndicesBoost,
    Suggest,
    Pit,
    Slice,
    /// Scripts or opaque extensions: refused.
    Refuse,
}

/// Every top-level key of a search body, alphabetically.
pub static SEARCH_KEYS: &[(&str, Key)] = &[
    ("_source", Key::Pass),
    ("aggregations", Key::Aggs),
    ("aggs", Key::Aggs),
    ("collapse", Key::Collapse),
    ("docvalue_fields", Key::Pass),
    ("explain", Key::Pass),
    ("ext", Key::Refuse),
    ("fields", Key::Pass),
    ("from", Key::Pass),
    ("highlight", Key::Highlight),
    ("indices_boost", Key::IndicesBoost),
    ("min_score", Key::Pass),
    ("pit", Key::Pit),
    ("post_filter", Key::Query),
    ("profile", Key::Pass),
    ("query", Key::Query),
    ("rescore", Key::Rescore),
    ("runtime_mappings", Key::Refuse),
    ("script_fields", Key::Refuse),
    ("search_after", Key::SearchAfter),
    ("seq_no_primary_term", Key::Pass),
    ("size", Key::Pass),
    ("slice", Key::Slice),
    ("sort", Key::Sort),
    ("stats", Key::Pass),
    ("stored_fields", Key::Pass),
    ("suggest", Key::Suggest),
    ("terminate_after", Key::Pass),
    ("timeout", Key::Pass),
    ("track_scores", Key::Pass),
    ("track_total_hits", Key::Pass),
    ("version", Key::Pass),
];

/// What reading a search body found that the edge must act on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchFacts {
    /// The body searches a point in time (its id was opened): the path must name no index.
    pub pit: bool,
}

/// Reads and rewrites a search body.
pub fn search_body(t: &Tenant, v: &mut Value, allow_pit: bool) -> Result<SearchFacts, EdgeError> {
    let o = object_mut(v, "")?;
    let mut facts = SearchFacts::default();
    let mut index_sorts: Vec<usize> = Vec::new();
    if let Some(s) = o.get_mut("sort") {
        index_sorts = sort(t, s, "sort")?;
    }
    for (k, v) in o.iter_mut() {
        let Some(&(_, key)) = SEARCH_KEYS.iter().find(|(n, _)| *n == k) else {
            return Err(parsing(format!(
                "Unknown key for a {} in [{k}].",
                v.token_name()
            )));
        };
        match key {
            Key::Pass | Key::Sort => {}
            Key::Refuse if k == "ext" => return Err(unsupported("ext", k)),
            Key::Refuse => return Err(no_scripts(k)),
            Key::Query => query(t, v, k)?,
            Key::Aggs => aggregations(t, v, k)?,
            Key::SearchAfter => search_after(t, v, &index_sorts)?,
            Key::Highlight => highlight(t, v, k)?,
            Key::Collapse => collapse(t, v, k)?,
            Key::Rescore => rescore(t, v)?,
            Key::IndicesBoost => indices_boost(t, v)?,
            Key::Suggest => suggest(v)?,
            Key::Slice => slice(v, k)?,
            Key::Pit if !allow_pit => return Err(unsupported("pit", "pit")),
            Key::Pit => {
                pit(t, v)?;
                facts.pit = true;
            }
        }
    }
    Ok(facts)
}

/// A body whose only key is a query (`query` for `_count`, `_explain`, `_validate/query`;
/// `index_filter` for `_field_caps`).
pub fn query_only(t: &Tenant, v: &mut Value, key: &str) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    known_keys(o, &[key], "")?;
    match o.get_mut(key) {
        Some(q) => query(t, q, key),
        None => Ok(()),
    }
}

/// A `_field_caps` body: `index_filter` (a query) and `fields` (names, a string or an array
/// of strings, as Elasticsearch 8 and its clients send them; names of fields, not of
/// indices: the answer is about mappings, never values).
pub fn field_caps(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    known_keys(o, &["index_filter", "fields"], "")?;
    match o.get("fields") {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(a)) if a.iter().all(|f| matches!(f, Value::String(_))) => {}
        Some(_) => return Err(parsing("[fields] must be a string or an array of strings")),
    }
    match o.get_mut("index_filter") {
        Some(q) => query(t, q, "index_filter"),
        None => Ok(()),
    }
}

/// `search_after`: the values at `_index` sort positions get the prefix (compared with
/// prefixed names upstream, an unprefixed value would reveal the prefix by its order).
fn search_after(t: &Tenant, v: &mut Value, index_sorts: &[usize]) -> Result<(), EdgeError> {
    let Value::Array(values) = v else {
        return Err(parsing("[search_after] must be an array"));
    };
    for &i in index_sorts {
        match values.get_mut(i) {
            Some(Value::String(s)) => *s = t.prefixed(s),
            Some(_) => {
                return Err(parsing(
                    "[search_after] values for [_index] must be strings",
                ))
            }
            None => {}
        }
    }
    Ok(())
}

fn rescore(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    let items: Vec<&mut Value> = match v {
        Value::Array(a) => a.iter_mut().collect(),
        other => vec![other],
    };
    for (i, r) in items.into_iter().enumerate() {
        let here = format!("rescore[{i}]");
        let o = object_mut(r, &here)?;
        known_keys(o, &["window_size", "query"], &here)?;
        if let Some(w) = o.get("window_size") {
            rescore_window(w, &at(&here, "window_size"))?;
        }
        if let Some(q) = o.get_mut("query") {
            let qhere = at(&here, "query");
            let qo = object_mut(q, &qhere)?;
            known_keys(
                qo,
                &[
                    "rescore_query",
                    "query_weight",
                    "rescore_query_weight",
                    "score_mode",
                ],
                &qhere,
            )?;
            if let Some(rq) = qo.get_mut("rescore_query") {
                query(t, rq, &at(&qhere, "rescore_query"))?;
            }
        }
    }
    Ok(())
}

/// Elasticsearch's default `index.max_rescore_window`. The upstream does not clamp a rescore
/// window to the shard's documents: it allocates a priority queue of that many entries, so a
/// window of 5·10⁸ (after raising the index setting) exhausts the shared JVM (attacks-10 r2
/// #3). The edge keeps the default's bound whatever the index setting says.
const MAX_RESCORE_WINDOW: u64 = 10_000;

fn rescore_window(v: &Value, where_: &str) -> Result<(), EdgeError> {
    let n = match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
        _ => None,
    };
    match n {
        Some(n) if n <= MAX_RESCORE_WINDOW => Ok(()),
        _ => Err(illegal(format!(
            "[{where_}] must be an integer of at most [{MAX_RESCORE_WINDOW}] on this cluster (the upstream allocates the whole window)"
        ))),
    }
}

/// `indices_boost`: `[{name: boost}]` or `{name: boost}`; each name one index or pattern.
fn indices_boost(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    let rename = |o: &mut Object| -> Result<(), EdgeError> {
        for (name, _) in o.entries_mut().iter_mut() {
            if name.is_empty() || name.contains(',') {
                return Err(parsing(
                    "[indices_boost] takes one index name or pattern per entry",
                ));
            }
            let mut out = Vec::with_capacity(name.len() + 24);
            rewrite_expr(t.prefix, name.as_bytes(), &mut out)?;
            *name = String::from_utf8(out).expect("UTF-8 name");
        }
        Ok(())
    };
    match v {
        Value::Object(o) => rename(o),
        Value::Array(list) => list
            .iter_mut()
            .try_for_each(|e| rename(object_mut(e, "indices_boost")?)),
        _ => Err(parsing("[indices_boost] must be an array or an object")),
    }
}

/// `suggest`: suggesters' fields checked; `collate` (a template) and scripts refused.
fn suggest(v: &Value) -> Result<(), EdgeError> {
    fn walk(v: &Value, where_: &str) -> Result<(), EdgeError> {
        match v {
            Value::Object(o) => o.iter().try_for_each(|(k, v)| {
                let here = at(where_, k);
                match k {
                    "collate" => Err(unsupported("collate", &here)),
                    "script" => Err(no_scripts(&here)),
                    "field" => check_field_list(v, &here),
                    _ => walk(v, &here),
                }
            }),
            Value::Array(a) => a.iter().try_for_each(|v| walk(v, where_)),
            _ => Ok(()),
        }
    }
    walk(v, "suggest")
}

fn slice(v: &Value, where_: &str) -> Result<(), EdgeError> {
    let Value::Object(o) = v else {
        return Err(parsing("[slice] must be an object"));
    };
    known_keys(o, &["id", "max", "field"], where_)?;
    match o.get("field") {
        Some(f) => check_field_list(f, &at(where_, "field")),
        None => Ok(()),
    }
}

/// `pit`: `{id, keep_alive}`, the id opened.
fn pit(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "pit")?;
    known_keys(o, &["id", "keep_alive"], "pit")?;
    if let Some(k) = o.get_mut("keep_alive") {
        body_keep_alive(k, "keep_alive")?;
    }
    match o.get_mut("id") {
        Some(Value::String(id)) => {
            *id = t.open(IdKind::Pit, id)?;
            Ok(())
        }
        _ => Err(parsing("[pit] requires a string [id]")),
    }
}
