//! Search endpoints: `GET|POST /[<indices>/]_search` (body and URI search; `scroll=` opens a
//! scroll context), `_count`, and
//! `_msearch` (NDJSON header/body pairs, one response or error per search).

use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};

use super::json::{json_body, parse_body};
use super::params::Params;
use super::{media, ApiResult, Engine, Request, Response};
use crate::error::{EngineError, EngineResult};
use crate::ndjson::{first_value, MsearchLines};
use crate::query::parse_query;
use crate::resolve::Options;
use crate::search::sort::SortSpec;
use crate::search::{self as exec, ScrollParams, SearchRequest};
use crate::store::index::IndexHandle;

/// The `source` parameter of a request without a body (`allowed` refuses it with one), as
/// Elasticsearch 7.10 reads it: with a `source_content_type` of JSON (or NDJSON), else 500
/// `illegal_state_exception`.
fn source_param(params: &Params) -> EngineResult<Option<&str>> {
    let Some(source) = params.get("source") else {
        return Ok(None);
    };
    let Some(ct) = params.get("source_content_type") else {
        return Err(EngineError::IllegalState(
            "source and source_content_type parameters are required".into(),
        ));
    };
    match media::parse_one(ct).map(|m| m.essence) {
        Ok(e) if media::is_json_body(&e) => Ok(Some(source)),
        _ => Err(EngineError::IllegalState(format!(
            "Unknown value for source_content_type [{ct}]"
        ))),
    }
}

/// The body, from the payload or the `source` parameter.
fn body(engine: &Engine, req: &mut Request<'_>) -> Result<Option<Value>, EngineError> {
    if let Some(src) = source_param(&req.params)? {
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
        if params.get("routing").is_some() {
            return Err(EngineError::Validation(vec![
                "[routing] cannot be used with point in time".into(),
            ]));
        }
        return Ok((sr, vec![]));
    }
    let targets = targets_of(engine, index.unwrap_or("_all"), params, &mut sr)?;
    Ok((sr, targets))
}

/// The indices a search or count over `expr` reads, with the filters of filtered aliases
/// and the routing values (request and aliases) added to `sr`.
fn targets_of(
    engine: &Engine,
    expr: &str,
    params: &Params,
    sr: &mut SearchRequest,
) -> Result<Vec<Arc<IndexHandle>>, EngineError> {
    let opts = params.indices_options(Options::default())?;
    let resolved = engine.store.resolve_filtered(expr, opts)?;
    let mut targets = Vec::with_capacity(resolved.len());
    for (h, filters) in resolved {
        if let Some(fs) = filters {
            sr.add_alias_filters(&h.name, &fs)?;
        }
        targets.push(h);
    }
    sr.routing = engine.store.search_routing(expr, params.get("routing"));
    Ok(targets)
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
        .map(|k| ScrollParams::parse_named(k, "keep_alive"))
        .transpose()?;
    let p = engine.pits.get(&pit.id, keep)?;
    for (h, filters) in p.indices.iter().zip(&p.filters) {
        if let Some(fs) = filters {
            sr.add_alias_filters(&h.name, fs)?;
        }
    }
    if !sr.sort.is_empty() && !sr.sort.iter().any(|s| s.field == "_shard_doc") {
        sr.sort.push(SortSpec::new("_shard_doc", false));
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

/// Refuses the values of search parameters whose effect the engine does not have (which
/// parameters each endpoint takes is `allowed`'s table).
pub fn check_search_params(req: &Request<'_>) -> Result<(), EngineError> {
    match req.params.get("search_type") {
        Some(v) if !matches!(v, "query_then_fetch" | "dfs_query_then_fetch") => Err(
            EngineError::IllegalArgument(format!("No search type for [{v}]")),
        ),
        _ => Ok(()),
    }
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
    let targets = targets_of(engine, index.unwrap_or("_all"), &req.params, &mut sr)?;
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
        "expand_wildcards",
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
            ("expand_wildcards", v) => params.0.push((
                k.to_string(),
                match v {
                    Value::Array(a) => a
                        .iter()
                        .map(|x| x.as_str().unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join(","),
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
            )),
            ("search_type", v)
                if !matches!(
                    v.as_str(),
                    Some("query_then_fetch" | "dfs_query_then_fetch")
                ) =>
            {
                return Err(EngineError::IllegalArgument(format!(
                    "No search type for [{}]",
                    v.as_str().unwrap_or_default()
                )))
            }
            ("routing", Value::String(s)) => params.0.push((k.to_string(), s.clone())),
            ("routing", Value::Number(n)) => params.0.push((k.to_string(), n.to_string())),
            ("routing", other) => {
                return Err(EngineError::Parsing(format!(
                    "[routing] must be a string, got [{other}]"
                )))
            }
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
    // the `source` parameter stands for a missing body
    let source = source_param(&req.params)?.map(|s| s.as_bytes().to_vec());
    let mut from_param: &[u8] = source.as_deref().unwrap_or_default();
    let input: &mut dyn std::io::BufRead = if source.is_some() {
        &mut from_param
    } else {
        &mut *req.body
    };
    while let Some((header, body)) = lines.next_pair(input)? {
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
        .map(|(i, p, b)| {
            crate::cancel::check();
            one(engine, i.as_deref(), p, b)
        })
        .collect();
    Ok(Response::json(
        200,
        &json!({"took": started.elapsed().as_millis() as u64, "responses": responses}),
    ))
}
