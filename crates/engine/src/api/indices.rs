//! Index endpoints: `PUT|GET|HEAD|DELETE /<index>`, `_refresh`, `_mapping` (typed by
//! default, as spec 4 shows it; `include_type_name=false` for the typeless form), and
//! `_settings`.

use serde_json::{json, Map, Value};

use super::json::json_body;
use super::{ApiResult, Engine, Request, Response};
use crate::error::EngineError;
use crate::mapping::parse_mapping_body;
use crate::resolve::Options;
use crate::store::index::IndexHandle;
use crate::store::settings::flatten;
use searchgate_core::proto::Method;

fn typed(req: &Request<'_>) -> Result<bool, EngineError> {
    Ok(req.params.bool("include_type_name")?.unwrap_or(true))
}

/// An index's settings, nested or (`flat_settings=true`) with dotted keys.
fn settings_json(h: &IndexHandle, flat: bool) -> Value {
    let s = h.settings();
    if flat {
        s.to_flat_json(&h.name, &h.uuid, h.created_ms)
    } else {
        s.to_json(&h.name, &h.uuid, h.created_ms)
    }
}

/// Elasticsearch 7.10's `IndicesOptions.fromOptions(ignore_unavailable, allow_no_indices,
/// expand open, expand closed)`, closed indices allowed.
fn opts(allow_no_indices: bool, open: bool, closed: bool) -> Options {
    Options {
        allow_no_indices,
        forbid_closed: false,
        expand_open: open,
        expand_closed: closed,
        ..Options::default()
    }
}

/// `PUT|GET|HEAD|DELETE /<index>`.
pub fn index(engine: &Engine, req: &mut Request<'_>, name: &str) -> ApiResult {
    match req.method {
        Method::Put => {
            let body = json_body(req.body, engine.max_body)?;
            let handle = engine.store.create_from_body(name, body.as_ref())?;
            Ok(Response::json(
                200,
                &json!({"acknowledged": true, "shards_acknowledged": true, "index": handle.name}),
            ))
        }
        Method::Head => {
            let o = req.params.indices_options(opts(false, true, true))?;
            match engine.store.resolve(name, o) {
                Ok(_) => Ok(Response::status(200)),
                Err(_) => Ok(Response::status(404)),
            }
        }
        Method::Delete => {
            // Elasticsearch 7.10 deletes concrete indices only: `DELETE /<alias>` is a 400
            let o = Options {
                ignore_aliases: true,
                ..req.params.indices_options(opts(true, true, true))?
            };
            for h in engine.store.resolve(name, o)? {
                engine.store.delete(&h.name)?;
            }
            Ok(Response::json(200, &json!({"acknowledged": true})))
        }
        _ => {
            let typed = typed(req)?;
            let flat = req.params.bool("flat_settings")?.unwrap_or(false);
            let o = req.params.indices_options(opts(true, true, false))?;
            let mut out = Map::new();
            for h in engine.store.resolve(name, o)? {
                out.insert(
                    h.name.clone(),
                    json!({
                        "aliases": h.aliases(),
                        "mappings": h.mappings_json(typed),
                        "settings": settings_json(&h, flat),
                    }),
                );
            }
            Ok(Response::json(200, &Value::Object(out)))
        }
    }
}

/// `POST /[<index>/]_refresh` (and `_flush`, the same on this engine: a refresh commits).
pub fn refresh(engine: &Engine, req: &Request<'_>, index: Option<&str>) -> ApiResult {
    let (mut total, mut ok) = (0u64, 0u64);
    let o = req.params.indices_options(Options::default())?;
    for h in engine.store.resolve(index.unwrap_or("_all"), o)? {
        h.refresh(&engine.store.wal)?;
        let s = h.settings();
        total += s.shards as u64 * (1 + s.replicas as u64);
        ok += s.shards as u64;
    }
    Ok(Response::json(
        200,
        &json!({"_shards": {"total": total, "successful": ok, "failed": 0}}),
    ))
}

/// `GET|PUT /[<index>/]_mapping[/<type>]`.
pub fn mapping(
    engine: &Engine,
    req: &mut Request<'_>,
    index: Option<&str>,
    type_name: Option<&str>,
) -> ApiResult {
    let writing = matches!(req.method, Method::Put | Method::Post);
    let o = req.params.indices_options(opts(!writing, true, writing))?;
    let indices = engine.store.resolve(index.unwrap_or("_all"), o)?;
    if writing {
        let body = json_body(req.body, engine.max_body)?
            .ok_or_else(|| EngineError::Validation(vec!["mapping source is missing".into()]))?;
        for h in &indices {
            let hint = type_name.map(String::from).unwrap_or_else(|| h.type_name());
            let typed_body = body
                .as_object()
                .is_some_and(|o| o.len() == 1 && o.contains_key(&hint));
            let m = parse_mapping_body(&body, Some(&hint), &h.mapping().analysis)?;
            if type_name.is_some() || typed_body {
                h.accept_type(Some(&hint))?;
            }
            h.put_mapping(&m)?;
        }
        return Ok(Response::json(200, &json!({"acknowledged": true})));
    }
    let typed = typed(req)?;
    let mut out = Map::new();
    for h in indices {
        let mut m = h.mappings_json(typed);
        if let (Some(t), true) = (type_name, typed) {
            if h.type_name() != t {
                m = json!({});
            }
        }
        out.insert(h.name.clone(), json!({ "mappings": m }));
    }
    Ok(Response::json(200, &Value::Object(out)))
}

/// `GET|PUT /[<index>/]_settings`.
pub fn settings(engine: &Engine, req: &mut Request<'_>, index: Option<&str>) -> ApiResult {
    let writing = req.method == Method::Put;
    let o = req.params.indices_options(opts(!writing, true, true))?;
    let indices = engine.store.resolve(index.unwrap_or("_all"), o)?;
    if req.method == Method::Put {
        let body = json_body(req.body, engine.max_body)?
            .ok_or_else(|| EngineError::Validation(vec!["no settings to update".into()]))?;
        let flat = flatten(&body)?;
        for h in &indices {
            h.update_settings(&flat)?;
        }
        return Ok(Response::json(200, &json!({"acknowledged": true})));
    }
    let flat = req.params.bool("flat_settings")?.unwrap_or(false);
    let mut out = Map::new();
    for h in indices {
        out.insert(
            h.name.clone(),
            json!({ "settings": settings_json(&h, flat) }),
        );
    }
    Ok(Response::json(200, &Value::Object(out)))
}
