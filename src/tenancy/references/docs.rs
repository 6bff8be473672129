//! The document-API rows of the table: `_bulk` action lines, `_msearch` header lines,
//! `_mget`, `_update` (and bulk `update` sources), `_termvectors`, `_analyze`, and the
//! bodies that carry sealed ids (`_search/scroll`, clear scroll, closing a point in time).
//!
//! Must not touch: line framing (see `ndjson`), the query DSL (see `query`).

use std::borrow::Cow;

use super::super::ids::IdKind;
use super::super::json::{self, Object, Value};
use super::super::names::{is_auto_create, is_concrete};
use super::super::painless::check_script;
use super::params::body_keep_alive;
use super::{
    at, illegal, known_keys, object_mut, parsing, resolve_date_math, rewrite_expression,
    rewrite_name, Tenant,
};
use crate::errors::EdgeError;

/// A `_bulk` action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BulkAction {
    Index,
    Create,
    Update,
    Delete,
}

/// Keys of an action line's metadata (Elasticsearch 7.10's `BulkRequestParser`), with
/// `pipeline` refused: ingest pipelines are cluster-wide on a shared upstream.
pub static BULK_ACTION_KEYS: &[&str] = &[
    "_index",
    "_type",
    "_id",
    "routing",
    "op_type",
    "version",
    "version_type",
    "if_seq_no",
    "if_primary_term",
    "retry_on_conflict",
    "require_alias",
    "_source",
];

/// A rewritten action line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionLine<'l> {
    pub action: BulkAction,
    /// The tenant's index name when it is one concrete whitelisted name (auto-creation):
    /// borrowed from the line when it needed no unescaping.
    pub auto_create: Option<Cow<'l, str>>,
}

/// The strict reading of a `_bulk` action line (`bulk_fast::bulk_action` tries the fast
/// reader first): a value tree read, checked, rewritten, written.
pub fn bulk_action_strict(
    t: &Tenant,
    line: &[u8],
    n: usize,
    out: &mut Vec<u8>,
) -> Result<ActionLine<'static>, EdgeError> {
    let mut v = json::parse(line)?;
    let malformed = |why: String| illegal(format!("Malformed action/metadata line [{n}], {why}"));
    let Value::Object(o) = &mut v else {
        return Err(malformed(format!(
            "expected START_OBJECT but found [{}]",
            v.token_name()
        )));
    };
    // Elasticsearch 7.10's parser reads a field name, then the action's object, then the end
    match o.len() {
        0 => {
            return Err(malformed(
                "expected FIELD_NAME but found [END_OBJECT]".into(),
            ))
        }
        1 => {}
        _ => {
            return Err(malformed(
                "expected END_OBJECT but found [FIELD_NAME]".into(),
            ))
        }
    }
    let (name, meta) = o.iter_mut().next().expect("one key");
    let action = match name {
        "index" => BulkAction::Index,
        "create" => BulkAction::Create,
        "update" => BulkAction::Update,
        "delete" => BulkAction::Delete,
        other => {
            return Err(malformed(format!(
                "expected field [create], [delete], [index] or [update] but found [{other}]"
            )))
        }
    };
    let Value::Object(meta) = meta else {
        return Err(malformed(format!(
            "expected START_OBJECT but found [{}]",
            meta.token_name()
        )));
    };
    if meta.get("pipeline").is_some() {
        return Err(illegal(format!(
            "Action/metadata line [{n}]: [pipeline] is not supported on this cluster (ingest pipelines are shared by every cluster on the upstream)"
        )));
    }
    if let Some(k) = meta.keys().find(|k| !BULK_ACTION_KEYS.contains(k)) {
        return Err(illegal(format!(
            "Action/metadata line [{n}] contains an unknown parameter [{k}]"
        )));
    }
    let mut auto_create = None;
    match meta.get_mut("_index") {
        None | Some(Value::Null) => {}
        Some(index) => {
            resolve_date_math(t, index)?;
            if let Value::String(s) = &*index {
                if action != BulkAction::Delete
                    && is_concrete(s.as_bytes())
                    && is_auto_create(s.as_bytes())
                {
                    auto_create = Some(Cow::Owned(s.clone()));
                }
            }
            rewrite_name(t, index, &format!("line {n}._index"))?;
        }
    }
    json::write(&v, out);
    Ok(ActionLine {
        action,
        auto_create,
    })
}

/// Keys of an `_msearch` header line (`MultiSearchRequest.readMultiLineFormat`).
pub static MSEARCH_HEADER_KEYS: &[&str] = &[
    "index",
    "indices",
    "search_type",
    "searchType",
    "ccs_minimize_roundtrips",
    "ccsMinimizeRoundtrips",
    "request_cache",
    "requestCache",
    "preference",
    "routing",
    "allow_partial_search_results",
    "expand_wildcards",
    "expandWildcards",
    "ignore_unavailable",
    "ignoreUnavailable",
    "allow_no_indices",
    "allowNoIndices",
    "ignore_throttled",
    "ignoreThrottled",
];

/// Reads a header line (blank: an empty header), appending its rewritten form to `out`.
pub fn msearch_header(t: &Tenant, line: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
    let Some(mut v) = json::parse_opt(line)? else {
        out.extend_from_slice(b"{}");
        return Ok(());
    };
    let o = object_mut(&mut v, "msearch header")?;
    if let Some(k) = o.keys().find(|k| !MSEARCH_HEADER_KEYS.contains(k)) {
        return Err(illegal(format!(
            "key [{k}] is not supported in the metadata section"
        )));
    }
    if o.get("index").is_some() && o.get("indices").is_some() {
        return Err(illegal("a header names [index] and [indices]: send one"));
    }
    for key in ["index", "indices"] {
        match o.get_mut(key) {
            None => {}
            Some(Value::Array(list)) if list.is_empty() => {
                list.push(Value::String(String::new()));
                rewrite_expression(t, &mut list[0], key)?;
            }
            Some(Value::Array(list)) => {
                for e in list.iter_mut() {
                    rewrite_expression(t, e, key)?;
                }
            }
            Some(s @ Value::String(_)) => rewrite_expression(t, s, key)?,
            Some(other) => {
                return Err(parsing(format!(
                    "[{key}] must be a string or an array of strings, found [{}]",
                    other.token_name()
                )))
            }
        }
    }
    json::write(&v, out);
    Ok(())
}

/// `_mget`: `docs[]._index` rewritten; `ids` pass.
pub fn mget_body(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    known_keys(o, &["docs", "ids"], "")?;
    if let Some(docs) = o.get_mut("docs") {
        let Value::Array(docs) = docs else {
            return Err(parsing("[docs] must be an array"));
        };
        for (i, d) in docs.iter_mut().enumerate() {
            let here = format!("docs[{i}]");
            let d = object_mut(d, &here)?;
            known_keys(
                d,
                &[
                    "_index",
                    "_type",
                    "_id",
                    "routing",
                    "_source",
                    "stored_fields",
                    "version",
                    "version_type",
                ],
                &here,
            )?;
            if let Some(index) = d.get_mut("_index") {
                rewrite_name(t, index, &at(&here, "_index"))?;
            }
        }
    }
    Ok(())
}

/// `_update` bodies and bulk `update` source lines: documents pass, the script is checked.
pub fn update_body(o: &Object, where_: &str) -> Result<(), EdgeError> {
    known_keys(
        o,
        &[
            "doc",
            "upsert",
            "doc_as_upsert",
            "scripted_upsert",
            "detect_noop",
            "_source",
            "script",
        ],
        where_,
    )?;
    match o.get("script") {
        Some(s) => check_script(s, &at(where_, "script")),
        None => Ok(()),
    }
}

/// A bulk `update` source line, checked; returns it re-serialised.
pub fn bulk_update_source(line: &[u8], n: usize, out: &mut Vec<u8>) -> Result<(), EdgeError> {
    let v = json::parse(line)?;
    let Value::Object(o) = &v else {
        return Err(illegal(format!(
            "Malformed update source line [{n}], expected START_OBJECT"
        )));
    };
    update_body(o, &format!("line {n}"))?;
    json::write(&v, out);
    Ok(())
}

/// `_termvectors`: `_index` in the body overrides the path upstream: rewritten.
pub fn termvectors_body(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    known_keys(
        o,
        &[
            "_index",
            "_type",
            "_id",
            "doc",
            "fields",
            "offsets",
            "payloads",
            "positions",
            "term_statistics",
            "field_statistics",
            "routing",
            "version",
            "version_type",
            "per_field_analyzer",
            "filter",
            "preference",
            "realtime",
        ],
        "",
    )?;
    if let Some(i) = o.get_mut("_index") {
        rewrite_name(t, i, "_index")?;
    }
    Ok(())
}

/// `_analyze`: names no index (the path does); known keys only.
pub fn analyze_body(v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    known_keys(
        o,
        &[
            "analyzer",
            "tokenizer",
            "filter",
            "char_filter",
            "normalizer",
            "text",
            "field",
            "explain",
            "attributes",
        ],
        "",
    )
}

/// `_search/scroll` body: `{scroll, scroll_id}`, the id opened.
pub fn scroll_body(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    known_keys(o, &["scroll", "scroll_id", "rest_total_hits_as_int"], "")?;
    if let Some(k) = o.get_mut("scroll") {
        body_keep_alive(k, "scroll")?;
    }
    if let Some(id) = o.get_mut("scroll_id") {
        open_ids(t, IdKind::Scroll, id, "scroll_id")?;
    }
    Ok(())
}

/// `DELETE /_search/scroll` body: `scroll_id` (a string or an array), each opened.
pub fn clear_scroll_body(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    known_keys(o, &["scroll_id"], "")?;
    match o.get_mut("scroll_id") {
        Some(ids) => open_ids(t, IdKind::Scroll, ids, "scroll_id"),
        None => Err(illegal("no scroll ids specified")),
    }
}

/// `DELETE /_pit` body: `{id}`, opened.
pub fn close_pit_body(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    known_keys(o, &["id"], "")?;
    match o.get_mut("id") {
        Some(id) => open_ids(t, IdKind::Pit, id, "id"),
        None => Err(illegal("[id] is required to close a point in time")),
    }
}

/// OpenSearch's `DELETE /_search/point_in_time` body: `pit_id` (one or a list), opened.
pub fn close_pit_ids_body(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    known_keys(o, &["pit_id"], "")?;
    match o.get_mut("pit_id") {
        Some(ids) => open_ids(t, IdKind::Pit, ids, "pit_id"),
        None => Err(illegal("[pit_id] is required to delete points in time")),
    }
}

fn open_ids(t: &Tenant, kind: IdKind, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    match v {
        Value::String(s) => {
            *s = t.open(kind, s)?;
            Ok(())
        }
        Value::Array(list) => list
            .iter_mut()
            .try_for_each(|x| open_ids(t, kind, x, where_)),
        _ => Err(parsing(format!(
            "[{where_}] must be a string or an array of strings"
        ))),
    }
}
