//! Single-document endpoints: index (`PUT|POST /<index>/<type>/<id>`, `_doc`, `_create`,
//! generated ids), DELETE, `_update` (`doc`, `upsert`, `doc_as_upsert`,
//! `script` in the Painless subset of `crate::script`, `scripted_upsert`); reads
//! are `get`. Write responses carry the spec's fields (`_index`, `_type`,
//! `_id`, integer `_version`, `_shards`, `created`) plus `result`, `_seq_no`,
//! `_primary_term`.

use serde_json::{json, Map, Value};

use super::json::{json_body, read_body};
use super::{ApiResult, Engine, Request, Response};
use crate::error::EngineError;
use crate::script::parse_script;
use crate::store::shard::DocResult;
use crate::store::{Action, ItemResult, RefreshPolicy, UpdateBody, WriteItem};
use searchgate_core::proto::Method;

const MAX_ID: usize = 512;

fn check_id(id: &str) -> Result<(), EngineError> {
    if id.len() > MAX_ID {
        return Err(EngineError::Validation(vec![format!(
            "id [{id}] is too long, must be no longer than 512 bytes but was: {}",
            id.len()
        )]));
    }
    Ok(())
}

/// The response body of one write (also a bulk item).
pub fn write_json(r: &ItemResult, forced_refresh: bool) -> Result<(u16, Value), EngineError> {
    let o = r.outcome.as_ref().map_err(Clone::clone)?;
    let status = match o.result {
        DocResult::Created => 201,
        DocResult::NotFound => 404,
        _ => 200,
    };
    let mut v = json!({
        "_index": r.index,
        "_type": r.type_name,
        "_id": r.id,
        "_version": o.version,
        "result": o.result.name(),
        "_shards": {"total": r.copies, "successful": if o.result == DocResult::Noop { 0 } else { 1 }, "failed": 0},
        "_seq_no": o.seq_no,
        "_primary_term": 1,
        "created": o.result == DocResult::Created,
    });
    if forced_refresh {
        v["forced_refresh"] = json!(true);
    }
    Ok((status, v))
}

fn write_one(engine: &Engine, item: WriteItem, refresh: RefreshPolicy) -> ApiResult {
    let (mut results, touched) = engine.store.write(vec![item]);
    engine.store.finish(&touched, refresh)?;
    let r = results
        .pop()
        .ok_or_else(|| EngineError::internal("no write result"))?;
    let (status, v) = write_json(&r, refresh == RefreshPolicy::Immediate)?;
    Ok(Response::json(status, &v))
}

/// Indexes one document (`id` None: generated).
pub fn index_doc(
    engine: &Engine,
    req: &mut Request<'_>,
    index: &str,
    type_name: Option<&str>,
    id: Option<String>,
    create: bool,
) -> ApiResult {
    if let Some(id) = &id {
        check_id(id)?;
    }
    let create = create
        || match req.params.get("op_type") {
            None | Some("index") => false,
            Some("create") => true,
            Some(other) => {
                return Err(EngineError::IllegalArgument(format!(
                    "opType must be 'create' or 'index', found: [{other}]"
                )))
            }
        };
    let source = read_body(req.body, engine.max_body)?;
    if source.iter().all(u8::is_ascii_whitespace) {
        return Err(EngineError::Validation(vec![
            "source is missing".into(),
            "content type is missing".into(),
        ]));
    }
    let item = WriteItem {
        action: if create {
            Action::Create
        } else {
            Action::Index
        },
        index: index.to_string(),
        type_name: type_name.map(String::from),
        id,
        routing: req.params.get("routing").map(String::from),
        source,
        update: None,
        cond: req.params.cond()?,
    };
    write_one(engine, item, req.params.refresh()?)
}

/// `GET|HEAD|PUT|POST|DELETE /<index>/<type>/<id>`.
pub fn doc(
    engine: &Engine,
    req: &mut Request<'_>,
    index: &str,
    type_name: Option<&str>,
    id: &str,
) -> ApiResult {
    match req.method {
        Method::Put | Method::Post => {
            index_doc(engine, req, index, type_name, Some(id.to_string()), false)
        }
        Method::Delete => {
            let item = WriteItem {
                action: Action::Delete,
                index: index.to_string(),
                type_name: type_name.map(String::from),
                id: Some(id.to_string()),
                routing: req.params.get("routing").map(String::from),
                source: Vec::new(),
                update: None,
                cond: req.params.cond()?,
            };
            write_one(engine, item, req.params.refresh()?)
        }
        _ => super::get::get(engine, req, index, type_name, id),
    }
}

fn obj_field(
    body: &Map<String, Value>,
    k: &str,
) -> Result<Option<Map<String, Value>>, EngineError> {
    match body.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o.clone())),
        Some(_) => Err(EngineError::Parsing(format!("[{k}] must be an object"))),
    }
}

/// Parses an update body (`_update` and bulk `update` source lines).
pub fn parse_update(body: &Value) -> Result<UpdateBody, EngineError> {
    let obj = body
        .as_object()
        .ok_or_else(|| EngineError::Parsing("update body must be an object".into()))?;
    for (k, v) in obj {
        match k.as_str() {
            "doc" | "upsert" | "doc_as_upsert" | "detect_noop" | "scripted_upsert" | "script" => {}
            "_source" if v == &Value::Bool(false) => {}
            "_source" => {
                return Err(EngineError::IllegalArgument(
                    "[_source] of an update response is not supported by this engine".into(),
                ))
            }
            other => {
                return Err(EngineError::Parsing(format!(
                    "[UpdateRequest] unknown field [{other}]"
                )))
            }
        }
    }
    let u = UpdateBody {
        doc: obj_field(obj, "doc")?,
        upsert: obj_field(obj, "upsert")?,
        doc_as_upsert: obj
            .get("doc_as_upsert")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        detect_noop: obj
            .get("detect_noop")
            .and_then(Value::as_bool)
            .unwrap_or(true),
        script: obj.get("script").map(parse_script).transpose()?,
        scripted_upsert: obj
            .get("scripted_upsert")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    };
    if u.doc.is_none() && u.script.is_none() {
        return Err(EngineError::Validation(vec![
            "script or doc is missing".into()
        ]));
    }
    if u.doc.is_some() && u.script.is_some() {
        return Err(EngineError::Validation(vec![
            "can't provide both script and doc".into(),
        ]));
    }
    Ok(u)
}

/// `POST /<index>/_update/<id>`.
pub fn update(
    engine: &Engine,
    req: &mut Request<'_>,
    index: &str,
    type_name: Option<&str>,
    id: &str,
) -> ApiResult {
    check_id(id)?;
    let body = json_body(req.body, engine.max_body)?
        .ok_or_else(|| EngineError::Validation(vec!["script or doc is missing".into()]))?;
    let item = WriteItem {
        action: Action::Update,
        index: index.to_string(),
        type_name: type_name.map(String::from),
        id: Some(id.to_string()),
        routing: req.params.get("routing").map(String::from),
        source: Vec::new(),
        update: Some(parse_update(&body)?),
        cond: req.params.cond()?,
    };
    write_one(engine, item, req.params.refresh()?)
}
