//! `_template` (legacy), `_index_template` (composable) and `_component_template`
//! endpoints: PUT/POST, GET (names with wildcards), HEAD, DELETE.

use serde_json::{json, Map, Value};

use super::json::json_body;
use super::{ApiResult, Engine, Request, Response};
use crate::error::EngineError;
use crate::store::templates::{Kind, Template};
use searchgate_core::proto::Method;

fn missing(kind: Kind, name: &str) -> EngineError {
    match kind {
        Kind::Legacy => EngineError::NotFound(format!("index_template [{name}] missing")),
        Kind::Composable => {
            EngineError::NotFound(format!("index template matching [{name}] not found"))
        }
        Kind::Component => {
            EngineError::NotFound(format!("component template matching [{name}] not found"))
        }
    }
}

/// `/_template[/<name>]` and `/_index_template[/<name>]`.
pub fn template(
    engine: &Engine,
    req: &mut Request<'_>,
    kind: Kind,
    name: Option<&str>,
) -> ApiResult {
    let store = &engine.store.templates;
    match (req.method, name) {
        (Method::Put | Method::Post, Some(n)) => {
            let body = json_body(req.body, engine.max_body)?
                .ok_or_else(|| EngineError::Validation(vec!["template body is missing".into()]))?;
            let create = req.params.flag("create");
            store.put(Template::parse(kind, n, &body)?, create)?;
            Ok(Response::json(200, &json!({"acknowledged": true})))
        }
        (Method::Delete, Some(n)) => match store.delete(kind, n)? {
            true => Ok(Response::json(200, &json!({"acknowledged": true}))),
            false => Err(missing(kind, n)),
        },
        (Method::Head, n) => {
            let found = !store.list(kind, n).is_empty();
            Ok(Response::status(if found { 200 } else { 404 }))
        }
        (_, n) => {
            let list = store.list(kind, n);
            if list.is_empty() && n.is_some_and(|n| !n.contains('*')) {
                return match kind {
                    Kind::Legacy => Ok(Response::json(404, &json!({}))),
                    _ => Err(missing(kind, n.unwrap_or_default())),
                };
            }
            Ok(Response::json(200, &render(kind, &list)))
        }
    }
}

fn render(kind: Kind, list: &[Template]) -> Value {
    match kind {
        Kind::Legacy => {
            let mut out = Map::new();
            for t in list {
                let mut v = t.body.clone();
                if let Some(o) = v.as_object_mut() {
                    o.entry("order").or_insert(json!(0));
                    o.insert("index_patterns".into(), json!(t.patterns));
                    o.remove("template");
                    for k in ["settings", "mappings", "aliases"] {
                        o.entry(k).or_insert(json!({}));
                    }
                }
                out.insert(t.name.clone(), v);
            }
            Value::Object(out)
        }
        Kind::Composable => json!({"index_templates": list
            .iter()
            .map(|t| json!({"name": t.name, "index_template": t.body}))
            .collect::<Vec<_>>()}),
        Kind::Component => json!({"component_templates": list
            .iter()
            .map(|t| json!({"name": t.name, "component_template": t.body}))
            .collect::<Vec<_>>()}),
    }
}
