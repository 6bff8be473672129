//! Index endpoints: `PUT|GET|HEAD|DELETE /<index>`, `_refresh`, `_mapping` (typed by
//! default, as spec 4 shows it; `include_type_name=false` for the typeless form), and
//! `_settings`.

use serde_json::{json, Map, Value};

use super::json::json_body;
use super::{ApiResult, Engine, Request, Response};
use crate::error::EngineError;
use crate::mapping::parse_mapping_body;
use crate::names::wildcard_match;
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
    get_mapping(req, &indices, type_name)
}

/// `GET /[<index>/]_mapping[/<types>]`: with types (a comma list; `_all` and wildcards
/// match as Elasticsearch 7.10's typed form does), each index's mapping when its type is
/// asked for, `{}` otherwise; types that match no index's type make it a 404 whose body
/// names them beside the mappings found (`type [x] missing`, `types [x,y] missing`).
fn get_mapping(
    req: &Request<'_>,
    indices: &[std::sync::Arc<IndexHandle>],
    types: Option<&str>,
) -> ApiResult {
    let typed = typed(req)?;
    let types: Vec<&str> = types.map(|t| t.split(',').collect()).unwrap_or_default();
    if !types.is_empty() && !typed {
        return Err(EngineError::IllegalArgument(
            "Types cannot be provided in get mapping requests, unless include_type_name is set to true.".into(),
        ));
    }
    let asks = |pattern: &str, name: &str| pattern == "_all" || wildcard_match(pattern, name);
    let mut out = Map::new();
    for h in indices {
        let name = h.type_name();
        let m = match types.is_empty() || types.iter().any(|t| asks(t, &name)) {
            true => h.mappings_json(typed),
            false => json!({}),
        };
        out.insert(h.name.clone(), json!({ "mappings": m }));
    }
    let missing: Vec<&str> = types
        .iter()
        .copied()
        .filter(|t| !indices.iter().any(|h| asks(t, &h.type_name())))
        .collect();
    if missing.is_empty() {
        return Ok(Response::json(200, &Value::Object(out)));
    }
    let error = match missing.as_slice() {
        [one] => format!("type [{one}] missing"),
        many => format!("types [{}] missing", many.join(",")),
    };
    let mut body = Map::new();
    body.insert("error".into(), json!(error));
    body.insert("status".into(), json!(404));
    body.extend(out);
    Ok(Response::json(404, &Value::Object(body)))
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
