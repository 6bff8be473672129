//! Search endpoints: `GET|POST /[<indices>/]_search` (body and URI search; `scroll=` opens a
//! scroll context), `_count`, and
//! `_msearch` (NDJSON header/body pairs, one response or error per search).

use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};

use super::json::{json_body, parse_body};
use super::params::Params;
use super::{ApiResult, Engine, Request, Response};
use crate::engine::error::EngineError;
use crate::engine::ndjson::{first_value, MsearchLines};
use crate::engine::query::{parse_query, Query};
use crate::engine::search::sort::SortSpec;
use crate::engine::search::{self as exec, ScrollParams, SearchRequest};
use crate::engine::store::index::IndexHandle;
use crate::engine::store::ResolveOptions;

fn resolve_opts(get: &dyn Fn(&str) -> Option<String>) -> ResolveOptions {
    ResolveOptions {
        ignore_unavailable: get("ignore_unavailable").is_some_and(|v| v != "false"),
        allow_no_indices: get("allow_no_indices").is_none_or(|v| v != "false"),
    }
}

/// The body, from the payload or the `source` parameter.
fn body(engine: &Engine, req: &mut Request<'_>) -> Result<Option<Value>, EngineError> {
    if let Some(src) = req.params.get("source") {
        return parse_body(src.as_bytes());
    }
    json_body(req.body, engine.max_body)
}

/// The parsed request and its target indices (with the filters of filtered aliases).
fn prepare(
    engine: &Engine,
    index: Option<&str>,
    body: Option<&Value>,
    params: &Params,
) -> Result<(SearchRequest, Vec<Arc<IndexHandle>>), EngineError> {
    let mut sr = SearchRequest::from_body(body)?;
    let get = params.lookup();
    sr.apply_params(&get)?;
    if sr.pit.is_some() {
        if index.is_some() {
            return Err(EngineError::Validation(vec![
                "[indices] cannot be used with point in time. Do not specify any index with point in time.".into(),
            ]));
        }
        return Ok((sr, vec![]));
    }
    let resolved = engine
        .store
        .resolve_filtered(index.unwrap_or("_all"), resolve_opts(&get))?;
    let mut targets = Vec::with_capacity(resolved.len());
    for (h, filters) in resolved {
        if let Some(fs) = filters {
            let q = alias_filter(&fs)?;
            sr.alias_filters.insert(h.name.clone(), q);
        }
        targets.push(h);
    }
    Ok((sr, targets))
}

/// The filters of the filtered aliases an index was reached through, as one query.
fn alias_filter(filters: &[Value]) -> Result<Query, EngineError> {
    let mut qs = filters
        .iter()
        .map(parse_query)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(if qs.len() == 1 {
        qs.remove(0)
    } else {
        Query::Bool {
            must: vec![],
            should: qs,
            must_not: vec![],
            filter: vec![],
            msm: Some(crate::engine::query::Msm::Count(1)),
            boost: 1.0,
        }
    })
}

/// Runs a prepared search: over a point in time when it names one.
fn execute(
    engine: &Engine,
    mut sr: SearchRequest,
    targets: &[Arc<IndexHandle>],
) -> Result<Value, EngineError> {
    let Some(pit) = sr.pit.clone() else {
        return exec::search(targets, &sr);
    };
    let keep = pit
        .keep_alive
        .as_deref()
        .map(ScrollParams::parse)
        .transpose()?;
    let p = engine.pits.get(&pit.id, keep)?;
    if !sr.sort.is_empty() && !sr.sort.iter().any(|s| s.field == "_shard_doc") {
        sr.sort.push(SortSpec {
            field: "_shard_doc".into(),
            desc: false,
            missing_first: false,
            unmapped_type: None,
        });
    }
    let mut v = exec::search_views(&p.indices, &p.views, &sr)?;
    if let Value::Object(m) = &mut v {
        let mut out = serde_json::Map::new();
        out.insert("pit_id".into(), Value::String(pit.id));
        out.extend(std::mem::take(m));
        *m = out;
    }
    Ok(v)
}

fn run_search(
    engine: &Engine,
    index: Option<&str>,
    body: Option<&Value>,
    params: &Params,
) -> Result<Value, EngineError> {
    let (sr, targets) = prepare(engine, index, body, params)?;
    execute(engine, sr, &targets)
}

/// URL parameters of `_search`, `_count` and `_msearch` (the ones without effect on one
/// node included: `preference`, `request_cache`, `search_type`, shard-request tuning).
const SEARCH_PARAMS: &[&str] = &[
    "q",
    "df",
    "default_operator",
    "analyzer",
    "analyze_wildcard",
    "lenient",
    "from",
    "size",
    "sort",
    "_source",
    "_source_includes",
    "_source_include",
    "_source_excludes",
    "_source_exclude",
    "version",
    "seq_no_primary_term",
    "track_scores",
    "track_total_hits",
    "rest_total_hits_as_int",
    "stored_fields",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "ignore_throttled",
    "scroll",
    "source",
    "source_content_type",
    "pretty",
    "human",
    "error_trace",
    "filter_path",
    "preference",
    "request_cache",
    "search_type",
    "batched_reduce_size",
    "max_concurrent_shard_requests",
    "max_concurrent_searches",
    "pre_filter_shard_size",
    "allow_partial_search_results",
    "ccs_minimize_roundtrips",
    "timeout",
    "typed_keys",
    "explain",
    "stats",
];

/// Refuses URL parameters a search endpoint does not know, and the known ones whose
/// effect the engine does not have, naming them (as Elasticsearch refuses unknown ones).
pub fn check_search_params(req: &Request<'_>) -> Result<(), EngineError> {
    for (k, v) in &req.params.0 {
        if !SEARCH_PARAMS.contains(&k.as_str()) {
            return Err(EngineError::IllegalArgument(format!(
                "request [{}] contains unrecognized parameter: [{k}]",
                req.path
            )));
        }
        let refused = match k.as_str() {
            "typed_keys" | "explain" => v != "false",
            "expand_wildcards" => v != "open",
            "search_type" => !matches!(v.as_str(), "query_then_fetch" | "dfs_query_then_fetch"),
            _ => false,
        };
        if refused {
            return Err(EngineError::IllegalArgument(format!(
                "[{k}={v}] is not supported by this engine"
            )));
        }
    }
    Ok(())
}

/// `GET|POST /[<index>/]_search`; with `scroll=<keep-alive>` it opens a scroll context.
pub fn search(engine: &Engine, req: &mut Request<'_>, index: Option<&str>) -> ApiResult {
    check_search_params(req)?;
    let body = body(engine, req)?;
    let v = match req.params.get("scroll") {
        Some(keep_alive) => {
            let params = ScrollParams::parse(keep_alive)?;
            let (sr, targets) = prepare(engine, index, body.as_ref(), &req.params)?;
            if !sr.alias_filters.is_empty() {
                return Err(EngineError::IllegalArgument(
                    "scrolling through a filtered alias is not supported by this engine".into(),
                ));
            }
            engine.scrolls.start(&targets, &sr, params)?
        }
        None => run_search(engine, index, body.as_ref(), &req.params)?,
    };
    Ok(Response::json(200, &v))
}

/// `GET|POST /[<index>/]_count`.
pub fn count(engine: &Engine, req: &mut Request<'_>, index: Option<&str>) -> ApiResult {
    check_search_params(req)?;
    let body = body(engine, req)?;
    let mut sr = SearchRequest::default();
    if let Some(b) = &body {
        let obj = b
            .as_object()
            .ok_or_else(|| EngineError::Parsing("request body must be an object".into()))?;
        for (k, v) in obj {
            match k.as_str() {
                "query" => sr.query = parse_query(v)?,
                other => {
                    return Err(EngineError::Parsing(format!(
                        "request does not support [{other}]"
                    )))
                }
            }
        }
    }
    let get = req.params.lookup();
    sr.apply_params(&get)?;
    let resolved = engine
        .store
        .resolve_filtered(index.unwrap_or("_all"), resolve_opts(&get))?;
    let mut targets = Vec::new();
    for (h, filters) in resolved {
        if let Some(fs) = filters {
            sr.alias_filters.insert(h.name.clone(), alias_filter(&fs)?);
        }
        targets.push(h);
    }
    Ok(Response::json(200, &exec::count(&targets, &sr)?))
}

/// Header keys of an `_msearch` search, as Elasticsearch 7.10 reads them.
const MSEARCH_HEADER: &[&str] = &[
    "index",
    "indices",
    "type",
    "types",
    "search_type",
    "ccs_minimize_roundtrips",
    "request_cache",
    "preference",
    "routing",
    "allow_partial_search_results",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "ignore_throttled",
];

/// The parameters one `_msearch` search runs with: the request's, then its header's.
fn header_params(
    default_index: Option<&str>,
    header: &Value,
    outer: &Params,
) -> Result<(Option<String>, Params), EngineError> {
    let empty = serde_json::Map::new();
    let h = match header {
        Value::Object(o) => o,
        Value::Null => &empty,
        _ => {
            return Err(EngineError::Parsing(
                "msearch header must be an object".into(),
            ))
        }
    };
    let mut params = Params::default();
    for k in [
        "rest_total_hits_as_int",
        "ignore_unavailable",
        "allow_no_indices",
    ] {
        if let Some(v) = outer.get(k) {
            params.0.push((k.to_string(), v.to_string()));
        }
    }
    let mut index = default_index.map(String::from);
    for (k, v) in h {
        if !MSEARCH_HEADER.contains(&k.as_str()) {
            return Err(EngineError::IllegalArgument(format!(
                "key [{k}] is not supported in the metadata section"
            )));
        }
        match (k.as_str(), v) {
            ("index" | "indices", Value::String(s)) => index = Some(s.clone()),
            ("index" | "indices", Value::Array(a)) => {
                index = Some(
                    a.iter()
                        .map(|x| x.as_str().map_or_else(|| x.to_string(), String::from))
                        .collect::<Vec<_>>()
                        .join(","),
                )
            }
            ("ignore_unavailable" | "allow_no_indices", v) => params.0.push((
                k.to_string(),
                v.as_bool().map_or_else(|| v.to_string(), |b| b.to_string()),
            )),
            _ => {}
        }
    }
    Ok((index, params))
}

/// One search of an `_msearch`, as its entry in `responses`.
fn one(engine: &Engine, index: Option<&str>, params: &Params, body: &Value) -> Value {
    match run_search(engine, index, Some(body), params) {
        Ok(mut v) => {
            v["status"] = json!(200);
            v
        }
        Err(e) => {
            let b = e.body();
            json!({"error": b.to_value()["error"], "status": b.status})
        }
    }
}

/// `GET|POST /[<index>/]_msearch`: NDJSON framed as Elasticsearch 7.10 frames it.
pub fn msearch(engine: &Engine, req: &mut Request<'_>, index: Option<&str>) -> ApiResult {
    check_search_params(req)?;
    let started = Instant::now();
    let mut lines = MsearchLines::new(engine.max_body);
    let mut searches = Vec::new();
    while let Some((header, body)) = lines.next_pair(req.body)? {
        let header = first_value(&header)
            .map_err(|e| EngineError::NotJson(format!("Failed to parse the msearch header: {e}")))?
            .unwrap_or(Value::Null);
        let (idx, params) = header_params(index, &header, &req.params)?;
        let body = first_value(&body)
            .map_err(|e| EngineError::NotJson(format!("Failed to parse the msearch body: {e}")))?
            .ok_or_else(|| {
                EngineError::Parsing("Expected [START_OBJECT] but found [null]".into())
            })?;
        searches.push((idx, params, body));
    }
    if searches.is_empty() {
        return Err(EngineError::Validation(vec!["no requests added".into()]));
    }
    let responses: Vec<Value> = searches
        .iter()
        .map(|(i, p, b)| one(engine, i.as_deref(), p, b))
        .collect();
    Ok(Response::json(
        200,
        &json!({"took": started.elapsed().as_millis() as u64, "responses": responses}),
    ))
}
