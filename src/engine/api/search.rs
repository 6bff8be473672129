//! Search endpoints: `GET|POST /[<indices>/]_search` (body and URI search; `scroll=` opens a
//! scroll context), `_count`, and
//! `_msearch` (NDJSON header/body pairs, one response or error per search).

use std::io::BufRead;
use std::time::Instant;

use serde_json::{json, Value};

use super::json::{json_body, parse_body};
use super::params::Params;
use super::{ApiResult, Engine, Request, Response};
use crate::engine::error::EngineError;
use crate::engine::query::parse_query;
use crate::engine::search::{self as exec, ScrollParams, SearchRequest};
use crate::engine::store::index::IndexHandle;
use crate::engine::store::ResolveOptions;

fn resolve_opts(get: &dyn Fn(&str) -> Option<String>) -> ResolveOptions {
    ResolveOptions {
        ignore_unavailable: get("ignore_unavailable").is_some_and(|v| v != "false"),
        allow_no_indices: get("allow_no_indices").is_none_or(|v| v != "false"),
    }
}

fn indices(
    engine: &Engine,
    index: Option<&str>,
    opts: ResolveOptions,
) -> Result<Vec<std::sync::Arc<IndexHandle>>, EngineError> {
    engine.store.resolve(index.unwrap_or("_all"), opts)
}

/// The body, from the payload or the `source` parameter.
fn body(engine: &Engine, req: &mut Request<'_>) -> Result<Option<Value>, EngineError> {
    if let Some(src) = req.params.get("source") {
        return parse_body(src.as_bytes());
    }
    json_body(req.body, engine.max_body)
}

/// The parsed request and its target indices.
fn prepare(
    engine: &Engine,
    index: Option<&str>,
    body: Option<&Value>,
    params: &Params,
) -> Result<(SearchRequest, Vec<std::sync::Arc<IndexHandle>>), EngineError> {
    let mut sr = SearchRequest::from_body(body)?;
    let get = params.lookup();
    sr.apply_params(&get)?;
    let targets = indices(engine, index, resolve_opts(&get))?;
    Ok((sr, targets))
}

fn run_search(
    engine: &Engine,
    index: Option<&str>,
    body: Option<&Value>,
    params: &Params,
) -> Result<Value, EngineError> {
    let (sr, targets) = prepare(engine, index, body, params)?;
    exec::search(&targets, &sr)
}

/// `GET|POST /[<index>/]_search`; with `scroll=<keep-alive>` it opens a scroll context.
pub fn search(engine: &Engine, req: &mut Request<'_>, index: Option<&str>) -> ApiResult {
    let body = body(engine, req)?;
    let v = match req.params.get("scroll") {
        Some(keep_alive) => {
            let params = ScrollParams::parse(keep_alive)?;
            let (sr, targets) = prepare(engine, index, body.as_ref(), &req.params)?;
            engine.scrolls.start(&targets, &sr, params)?
        }
        None => run_search(engine, index, body.as_ref(), &req.params)?,
    };
    Ok(Response::json(200, &v))
}

/// `GET|POST /[<index>/]_count`.
pub fn count(engine: &Engine, req: &mut Request<'_>, index: Option<&str>) -> ApiResult {
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
    let targets = indices(engine, index, resolve_opts(&get))?;
    Ok(Response::json(200, &exec::count(&targets, &sr.query)?))
}

fn read_line(body: &mut dyn BufRead, line: &mut Vec<u8>) -> Result<bool, EngineError> {
    line.clear();
    let n = body
        .read_until(b'\n', line)
        .map_err(|e| EngineError::IllegalArgument(format!("failed to read the body: {e}")))?;
    if n == 0 {
        return Ok(false);
    }
    if line.last() != Some(&b'\n') {
        return Err(EngineError::IllegalArgument(
            "The msearch request must be terminated by a newline [\\n]".into(),
        ));
    }
    Ok(true)
}

/// One search of an `_msearch`, as its entry in `responses`.
fn one(engine: &Engine, default_index: Option<&str>, header: &Value, body: &Value) -> Value {
    let index = match header.get("index") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(a)) => Some(
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","),
        ),
        _ => default_index.map(String::from),
    };
    let mut params = Params::default();
    for k in ["ignore_unavailable", "allow_no_indices"] {
        if let Some(v) = header.get(k) {
            params.0.push((
                k.to_string(),
                v.as_bool().map_or_else(|| v.to_string(), |b| b.to_string()),
            ));
        }
    }
    match run_search(engine, index.as_deref(), Some(body), &params) {
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

/// `GET|POST /[<index>/]_msearch`.
pub fn msearch(engine: &Engine, req: &mut Request<'_>, index: Option<&str>) -> ApiResult {
    let started = Instant::now();
    let (mut line, mut responses) = (Vec::new(), Vec::new());
    let mut total = 0u64;
    while read_line(req.body, &mut line)? {
        total += line.len() as u64;
        if total > engine.max_body {
            return Err(EngineError::BodyTooLarge(engine.max_body));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let header = parse_body(&line)?.unwrap_or(json!({}));
        if !read_line(req.body, &mut line)? {
            return Err(EngineError::IllegalArgument(
                "the msearch body line is missing".into(),
            ));
        }
        let body = parse_body(&line)?.unwrap_or(json!({}));
        responses.push(one(engine, index, &header, &body));
    }
    if responses.is_empty() {
        return Err(EngineError::Validation(vec!["no requests added".into()]));
    }
    Ok(Response::json(
        200,
        &json!({"took": started.elapsed().as_millis() as u64, "responses": responses}),
    ))
}
