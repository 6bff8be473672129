//! Index endpoints: `PUT|GET|HEAD|DELETE /<index>`, `_refresh`, `_mapping` (typed by
//! default, as spec 4 shows it; `include_type_name=false` for the typeless form), and
//! `_settings`.

use serde_json::{json, Map, Value};

use super::json::json_body;
use super::{ApiResult, Engine, Request, Response};
use crate::engine::error::EngineError;
use crate::engine::mapping::{parse_mapping_body, parse_mappings};
use crate::engine::store::index::CreateIndex;
use crate::engine::store::settings::{flatten, IndexSettings};
use crate::engine::store::ResolveOptions;
use crate::proto::Method;

fn typed(req: &Request<'_>) -> Result<bool, EngineError> {
    Ok(req.params.bool("include_type_name")?.unwrap_or(true))
}

fn create_request(body: Option<Value>) -> Result<CreateIndex, EngineError> {
    let mut req = CreateIndex::default();
    let Some(body) = body else { return Ok(req) };
    let obj = body.as_object().ok_or_else(|| {
        EngineError::Parsing("Failed to parse the create index body: expected an object".into())
    })?;
    for (k, v) in obj {
        match k.as_str() {
            "settings" => req.settings = IndexSettings::from_create(Some(v))?,
            "mappings" => {
                let pm = parse_mappings(v)?;
                req.mapping = pm.mapping;
                req.type_name = pm.type_name;
            }
            "aliases" => {
                req.aliases = v
                    .as_object()
                    .cloned()
                    .ok_or_else(|| EngineError::Parsing("[aliases] must be an object".into()))?
            }
            other => {
                return Err(EngineError::Parsing(format!(
                    "unknown key [{other}] for create index"
                )))
            }
        }
    }
    if let Some(t) = &req.type_name {
        if t.starts_with('_') && t != "_doc" {
            return Err(EngineError::IllegalArgument(format!(
                "mapping type name [{t}] can't start with '_' unless it is called [_doc]"
            )));
        }
    }
    Ok(req)
}

/// `PUT|GET|HEAD|DELETE /<index>`.
pub fn index(engine: &Engine, req: &mut Request<'_>, name: &str) -> ApiResult {
    match req.method {
        Method::Put => {
            let body = json_body(req.body, engine.max_body)?;
            let handle = engine.store.create(name, create_request(body)?)?;
            Ok(Response::json(
                200,
                &json!({"acknowledged": true, "shards_acknowledged": true, "index": handle.name}),
            ))
        }
        Method::Head => match engine.store.resolve(
            name,
            ResolveOptions {
                ignore_unavailable: false,
                allow_no_indices: false,
            },
        ) {
            Ok(_) => Ok(Response::status(200)),
            Err(_) => Ok(Response::status(404)),
        },
        Method::Delete => {
            let opts = ResolveOptions {
                ignore_unavailable: req.params.flag("ignore_unavailable"),
                allow_no_indices: true,
            };
            for h in engine.store.resolve(name, opts)? {
                engine.store.delete(&h.name)?;
            }
            Ok(Response::json(200, &json!({"acknowledged": true})))
        }
        _ => {
            let typed = typed(req)?;
            let mut out = Map::new();
            for h in engine.store.resolve(
                name,
                ResolveOptions {
                    ignore_unavailable: false,
                    allow_no_indices: false,
                },
            )? {
                out.insert(
                    h.name.clone(),
                    json!({
                        "aliases": h.aliases(),
                        "mappings": h.mappings_json(typed),
                        "settings": h.settings().to_json(&h.name, &h.uuid, h.created_ms),
                    }),
                );
            }
            Ok(Response::json(200, &Value::Object(out)))
        }
    }
}

/// `POST /[<index>/]_refresh`.
pub fn refresh(engine: &Engine, index: Option<&str>) -> ApiResult {
    let (mut total, mut ok) = (0u64, 0u64);
    for h in engine
        .store
        .resolve(index.unwrap_or("_all"), ResolveOptions::default())?
    {
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
    let opts = ResolveOptions {
        ignore_unavailable: false,
        allow_no_indices: true,
    };
    let indices = engine.store.resolve(index.unwrap_or("_all"), opts)?;
    if matches!(req.method, Method::Put | Method::Post) {
        let body = json_body(req.body, engine.max_body)?
            .ok_or_else(|| EngineError::Validation(vec!["mapping source is missing".into()]))?;
        for h in &indices {
            let hint = type_name.map(String::from).unwrap_or_else(|| h.type_name());
            let typed_body = body
                .as_object()
                .is_some_and(|o| o.len() == 1 && o.contains_key(&hint));
            let m = parse_mapping_body(&body, Some(&hint))?;
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
    let indices = engine
        .store
        .resolve(index.unwrap_or("_all"), ResolveOptions::default())?;
    if req.method == Method::Put {
        let body = json_body(req.body, engine.max_body)?
            .ok_or_else(|| EngineError::Validation(vec!["no settings to update".into()]))?;
        let flat = flatten(&body)?;
        for h in &indices {
            h.update_settings(&flat)?;
        }
        return Ok(Response::json(200, &json!({"acknowledged": true})));
    }
    let mut out = Map::new();
    for h in indices {
        out.insert(
            h.name.clone(),
            json!({ "settings": h.settings().to_json(&h.name, &h.uuid, h.created_ms) }),
        );
    }
    Ok(Response::json(200, &Value::Object(out)))
}
