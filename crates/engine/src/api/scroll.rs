//! Scroll endpoints: `GET|POST /_search/scroll[/<id>]` (the next page) and
//! `DELETE /_search/scroll[/<ids>|/_all]` (clear scroll). The scroll id and keep-alive come
//! from the body (`scroll_id`, `scroll`), the query string or the path, the body winning as
//! in Elasticsearch. Opening a scroll is `_search?scroll=` (see `search`).
//!
//! Must not touch: the contexts themselves (`crate::search::Scrolls`).

use serde_json::{json, Value};

use super::json::json_body;
use super::{ApiResult, Engine, Request, Response};
use crate::error::EngineError;
use crate::search::ScrollParams;
use searchgate_core::proto::Method;

/// What a scroll or clear-scroll request names.
#[derive(Debug, Default)]
struct ScrollArgs {
    ids: Vec<String>,
    keep_alive: Option<String>,
}

fn split_ids(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

fn wrong(key: &str, v: &Value) -> EngineError {
    EngineError::IllegalArgument(format!(
        "Unknown parameter [{key}] in request body or parameter is of the wrong type[{}] ",
        match v {
            Value::Array(_) => "START_ARRAY",
            Value::Object(_) => "START_OBJECT",
            Value::Number(_) => "VALUE_NUMBER",
            _ => "VALUE_STRING",
        }
    ))
}

/// Reads the body keys over what the path and query string gave.
fn from_body(args: &mut ScrollArgs, body: &Value) -> Result<(), EngineError> {
    let obj = body
        .as_object()
        .ok_or_else(|| EngineError::Parsing("request body must be an object".into()))?;
    for (k, v) in obj {
        match (k.as_str(), v) {
            ("scroll_id", Value::String(s)) => args.ids = split_ids(s),
            ("scroll_id", Value::Array(a)) => {
                args.ids = a
                    .iter()
                    .map(|x| x.as_str().map(String::from).ok_or_else(|| wrong(k, x)))
                    .collect::<Result<_, _>>()?;
            }
            ("scroll", Value::String(s)) => args.keep_alive = Some(s.clone()),
            _ => return Err(wrong(k, v)),
        }
    }
    Ok(())
}

fn args(
    engine: &Engine,
    req: &mut Request<'_>,
    path_id: Option<&str>,
) -> Result<ScrollArgs, EngineError> {
    let mut a = ScrollArgs::default();
    if let Some(ids) = path_id.or(req.params.get("scroll_id")) {
        a.ids = split_ids(ids);
    }
    a.keep_alive = req.params.get("scroll").map(String::from);
    if let Some(body) = json_body(req.body, engine.max_body)? {
        from_body(&mut a, &body)?;
    }
    Ok(a)
}

/// `/_search/scroll[/<id>]`.
pub fn scroll(engine: &Engine, req: &mut Request<'_>, path_id: Option<&str>) -> ApiResult {
    let a = args(engine, req, path_id)?;
    if req.method == Method::Delete {
        return clear(engine, &a);
    }
    let [id] = a.ids.as_slice() else {
        return Err(EngineError::Validation(vec!["scrollId is missing".into()]));
    };
    let params = a
        .keep_alive
        .as_deref()
        .map(ScrollParams::parse)
        .transpose()?;
    let as_int = req.params.bool("rest_total_hits_as_int")?.unwrap_or(false);
    let v = engine.scrolls.next(id, params, as_int)?;
    Ok(Response::json(200, &v))
}

/// Clear scroll: 200 when something was freed, 404 otherwise (as Elasticsearch).
fn clear(engine: &Engine, a: &ScrollArgs) -> ApiResult {
    let freed = if a.ids.iter().any(|i| i == "_all") {
        engine.scrolls.clear_all()
    } else if a.ids.is_empty() {
        return Err(EngineError::Validation(vec![
            "no scroll ids specified".into()
        ]));
    } else {
        engine.scrolls.clear(&a.ids)?
    };
    let status = if freed == 0 { 404 } else { 200 };
    Ok(Response::json(
        status,
        &json!({"succeeded": true, "num_freed": freed}),
    ))
}
