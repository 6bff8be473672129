//! The search-body rows of the table (`_search`, `_msearch` bodies), the bodies that hold
//! only a query (`_count`, `_explain`, `_validate/query`, `_field_caps`), and the options of
//! hits (`inner_hits`, `top_hits`): sort and `search_after` on `_index`, highlight,
//! collapse, rescore, `indices_boost`, suggesters, point in time, slices.
//!
//! Must not touch: the query DSL and aggregations themselves (see `query`, `aggs`).

use super::super::ids::IdKind;
use super::super::json::{Object, Value};
use super::super::lucene::could_name_index;
use super::super::names::rewrite_expr;
use super::aggs::aggregations;
use super::query::{query, refuse_scripts};
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

/// The sort spec (string, object or array of them); returns the positions sorting on
/// `_index`. Used for search bodies, `inner_hits`/`top_hits`, `top_metrics`, `bucket_sort`
/// and the `sort` of by-query jobs and `_reindex` sources: every option is read from
/// [`SORT_OPTIONS`] (a nested sort's `filter` and the deprecated `nested_filter` are
/// queries), unknown options refused (attacks-10 #6, #10).
pub fn sort(t: &Tenant, v: &mut Value, where_: &str) -> Result<Vec<usize>, EdgeError> {
    let mut on_index = Vec::new();
    let items: Vec<&mut Value> = match v {
        Value::Array(a) => a.iter_mut().collect(),
        other => vec![other],
    };
    for (i, item) in items.into_iter().enumerate() {
        let here = format!("{where_}[{i}]");
        let field = match item {
            Value::String(f) => f.clone(),
            Value::Object(o) if o.len() == 1 => {
                let (f, spec) = o.iter_mut().next().expect("one key");
                match f {
                    "_script" => return Err(no_scripts(&here)),
                    "_geo_distance" => geo_distance_sort(t, spec, &at(&here, f))?,
                    _ => sort_options(t, spec, &at(&here, f))?,
                }
                f.to_string()
            }
            _ => return Err(parsing(format!("[{here}] malformed sort"))),
        };
        if field == "_index" {
            on_index.push(i);
        } else if could_name_index(&field) {
            return Err(unsupported(&format!("sort on [{field}]"), &here));
        }
    }
    Ok(on_index)
}

/// What an option of a field sort holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SortKey {
    /// A scalar (`order`, `missing`, `mode`, ...).
    Scalar,
    /// A field path (`nested_path`): must not be `_index`.
    Path,
    /// `nested`: `{path, filter, max_children, nested}`.
    Nested,
    /// A query (`nested_filter`, deprecated but still parsed by 7.10).
    Query,
}

/// The options of a field sort (`FieldSortBuilder` of 7.10); `_score` and `_doc` take a
/// subset of them.
const SORT_OPTIONS: &[(&str, SortKey)] = &[
    ("order", SortKey::Scalar),
    ("missing", SortKey::Scalar),
    ("mode", SortKey::Scalar),
    ("sort_mode", SortKey::Scalar),
    ("unmapped_type", SortKey::Scalar),
    ("numeric_type", SortKey::Scalar),
    ("format", SortKey::Scalar),
    ("nested", SortKey::Nested),
    ("nested_path", SortKey::Path),
    ("nested_filter", SortKey::Query),
];

/// The options of a `_geo_distance` sort besides its one field (`GeoDistanceSortBuilder`).
const GEO_SORT_OPTIONS: &[(&str, SortKey)] = &[
    ("order", SortKey::Scalar),
    ("unit", SortKey::Scalar),
    ("mode", SortKey::Scalar),
    ("sort_mode", SortKey::Scalar),
    ("distance_type", SortKey::Scalar),
    ("validation_method", SortKey::Scalar),
    ("ignore_unmapped", SortKey::Scalar),
    ("nested", SortKey::Nested),
    ("nested_path", SortKey::Path),
    ("nested_filter", SortKey::Query),
];

fn sort_options(t: &Tenant, spec: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let Value::Object(o) = spec else {
        return match spec {
            Value::String(_) => Ok(()), // "asc" / "desc"
            _ => Err(parsing(format!("[{where_}] malformed sort"))),
        };
    };
    for (k, v) in o.iter_mut() {
        match SORT_OPTIONS.iter().find(|(n, _)| *n == k) {
            Some(&(_, key)) => sort_option(t, key, v, &at(where_, k))?,
            None => return Err(parsing(format!("[{where_}] unknown sort option [{k}]"))),
        }
    }
    Ok(())
}

/// `_geo_distance`: one key is the field (its points pass), the others options.
fn geo_distance_sort(t: &Tenant, spec: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let o = object_mut(spec, where_)?;
    let mut fields = 0;
    for (k, v) in o.iter_mut() {
        let here = at(where_, k);
        match GEO_SORT_OPTIONS.iter().find(|(n, _)| *n == k) {
            Some(&(_, key)) => sort_option(t, key, v, &here)?,
            None if could_name_index(k) => {
                return Err(unsupported(&format!("_geo_distance on [{k}]"), &here))
            }
            None => {
                fields += 1;
                refuse_scripts(v, &here)?;
            }
        }
    }
    if fields > 1 {
        return Err(parsing(format!(
            "[{where_}] sorts on one field (found {fields})"
        )));
    }
    Ok(())
}

fn sort_option(t: &Tenant, key: SortKey, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    match key {
        SortKey::Scalar if !matches!(v, Value::Object(_) | Value::Array(_)) => Ok(()),
        SortKey::Scalar => Err(parsing(format!("[{where_}] must be a value"))),
        SortKey::Path => check_field_list(v, where_),
        SortKey::Nested => nested_sort(t, v, where_),
        SortKey::Query => query(t, v, where_),
    }
}

fn nested_sort(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let o = object_mut(v, where_)?;
    known_keys(o, &["path", "filter", "max_children", "nested"], where_)?;
    if let Some(p) = o.get("path") {
        check_field_list(p, &at(where_, "path"))?;
    }
    if let Some(f) = o.get_mut("filter") {
        query(t, f, &at(where_, "filter"))?;
    }
    if let Some(n) = o.get_mut("nested") {
        nested_sort(t, n, &at(where_, "nested"))?;
    }
    Ok(())
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

fn highlight(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let o = object_mut(v, where_)?;
    for (k, v) in o.iter_mut() {
        let here = at(where_, k);
        match k {
            "highlight_query" => query(t, v, &here)?,
            "fields" => match v {
                Value::Object(fields) => highlight_fields(t, fields, &here)?,
                Value::Array(list) => {
                    for f in list.iter_mut() {
                        highlight_fields(t, object_mut(f, &here)?, &here)?;
                    }
                }
                _ => return Err(parsing(format!("[{here}] must be an object or an array"))),
            },
            "matched_fields" => check_field_list(v, &here)?,
            _ => refuse_scripts(v, &here)?,
        }
    }
    Ok(())
}

fn highlight_fields(t: &Tenant, fields: &mut Object, where_: &str) -> Result<(), EdgeError> {
    for (name, opts) in fields.iter_mut() {
        let here = at(where_, name);
        if could_name_index(name) {
            return Err(unsupported(&format!("highlighting [{name}]"), &here));
        }
        if let Value::Object(_) = opts {
            highlight(t, opts, &here)?;
        }
    }
    Ok(())
}

fn collapse(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let o = object_mut(v, where_)?;
    known_keys(
        o,
        &["field", "inner_hits", "max_concurrent_group_searches"],
        where_,
    )?;
    if let Some(f) = o.get("field") {
        check_field_list(f, &at(where_, "field"))?;
    }
    match o.get_mut("inner_hits") {
        Some(Value::Array(list)) => list
            .iter_mut()
            .try_for_each(|h| hits_options(t, h, &at(where_, "inner_hits"))),
        Some(h) => hits_options(t, h, &at(where_, "inner_hits")),
        None => Ok(()),
    }
}

/// `inner_hits` and `top_hits`: what to return for each hit.
pub fn hits_options(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let o = object_mut(v, where_)?;
    if let Some(s) = o.get_mut("sort") {
        sort(t, s, &at(where_, "sort"))?;
    }
    for (k, v) in o.iter_mut() {
        let here = at(where_, k);
        match k {
            "sort" => {}
            "highlight" => highlight(t, v, &here)?,
            "collapse" => collapse(t, v, &here)?,
            "script_fields" => return Err(no_scripts(&here)),
            "name"
            | "from"
            | "size"
            | "_source"
            | "explain"
            | "version"
            | "seq_no_primary_term"
            | "stored_fields"
            | "docvalue_fields"
            | "fields"
            | "ignore_unmapped"
            | "track_scores" => refuse_scripts(v, &here)?,
            _ => return Err(parsing(format!("[{where_}] unknown field [{k}]"))),
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
    match o.get_mut("id") {
        Some(Value::String(id)) => {
            *id = t.open(IdKind::Pit, id)?;
            Ok(())
        }
        _ => Err(parsing("[pit] requires a string [id]")),
    }
}
