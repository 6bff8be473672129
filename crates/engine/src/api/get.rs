//! Reading documents: `GET|HEAD /<index>/<type>/<id>` (realtime, as Elasticsearch reads its
//! translog), `GET /<index>/_source/<id>` and `_mget`, with `routing`, `_source` filtering
//! (`_source`, `_source_includes`, `_source_excludes`), `stored_fields` (no `_source`
//! unless asked), `realtime`, `refresh` (the index is refreshed first) and `version` (409
//! when the document's version differs). The index may be an alias of one index; a closed
//! index is 400 `index_closed_exception`. `_mget` takes the same per document (`routing`,
//! `_source`, `stored_fields`) and reports each failure in its entry.

use serde_json::{json, Map, Value};

use super::json::json_body;
use super::params::Params;
use super::{ApiResult, Engine, Request, Response};
use crate::error::{EngineError, EngineResult};
use crate::search::source::SourceFilter;
use crate::store::index::IndexHandle;

/// How one document is read.
#[derive(Debug, Clone, PartialEq)]
pub struct GetOpts {
    pub routing: Option<String>,
    pub filter: Option<SourceFilter>,
    pub realtime: bool,
    pub refresh: bool,
    /// `stored_fields` was given: no `_source` unless a filter asks for it.
    pub stored_fields: bool,
    pub version: Option<u64>,
}

impl Default for GetOpts {
    fn default() -> Self {
        GetOpts {
            routing: None,
            filter: None,
            realtime: true,
            refresh: false,
            stored_fields: false,
            version: None,
        }
    }
}

impl GetOpts {
    /// From URL parameters.
    pub fn from_params(p: &Params) -> EngineResult<GetOpts> {
        let version = p.number("version")?;
        if let Some(t) = p.get("version_type") {
            if !matches!(t, "internal" | "external" | "external_gte") {
                return Err(EngineError::IllegalArgument(format!(
                    "No version type match [{t}]"
                )));
            }
        }
        Ok(GetOpts {
            routing: p.get("routing").map(String::from),
            filter: SourceFilter::from_params(
                p.get("_source"),
                p.get("_source_includes").or(p.get("_source_include")),
                p.get("_source_excludes").or(p.get("_source_exclude")),
            ),
            realtime: p.bool("realtime")?.unwrap_or(true),
            refresh: p.bool("refresh")?.unwrap_or(false),
            stored_fields: p.get("stored_fields").is_some(),
            version,
        })
    }

    /// These options with the keys of one `_mget` entry over them.
    fn with_doc(&self, doc: &Map<String, Value>) -> EngineResult<GetOpts> {
        let mut o = self.clone();
        for (k, v) in doc {
            match k.as_str() {
                "_index" | "_id" | "_type" => {}
                "routing" | "_routing" => {
                    o.routing = Some(v.as_str().map_or_else(|| v.to_string(), String::from))
                }
                "_source" => o.filter = Some(SourceFilter::from_body(v)?),
                "stored_fields" => o.stored_fields = true,
                other => {
                    return Err(EngineError::Parsing(format!(
                        "Unknown key for a {} in [{other}].",
                        if v.is_object() {
                            "START_OBJECT"
                        } else {
                            "VALUE_STRING"
                        }
                    )))
                }
            }
        }
        Ok(o)
    }
}

impl GetOpts {
    /// These options for a read of `name` (resolved to `h`): through an alias, the alias's
    /// `index_routing` is the read's routing (as Elasticsearch's `resolveIndexRouting`).
    fn through(mut self, engine: &Engine, name: &str, h: &IndexHandle) -> EngineResult<Self> {
        if name != h.name {
            self.routing = crate::alias_routing::write_routing(
                &engine.store.universe(),
                name,
                &h.name,
                self.routing.as_deref(),
            )?;
        }
        Ok(self)
    }
}

/// The body of one GET (status, JSON).
pub fn get_json(
    engine: &Engine,
    h: &IndexHandle,
    type_name: Option<&str>,
    id: &str,
    o: &GetOpts,
) -> EngineResult<(u16, Value)> {
    let t = h.type_name();
    if o.routing.is_none() && h.mapping().routing_required() {
        return Err(EngineError::RoutingMissing {
            index: h.name.clone(),
            type_name: t,
            id: id.to_string(),
        });
    }
    if o.refresh {
        h.refresh(&engine.store.wal)?;
    }
    let wrong_type = type_name.is_some_and(|x| x != "_doc" && x != t);
    let stored = if wrong_type {
        None
    } else {
        h.shard_for(o.routing.as_deref().unwrap_or(id))
            .get(&engine.store.wal, id, o.realtime)?
    };
    let Some(s) = stored else {
        return Ok((
            404,
            json!({"_index": h.name, "_type": type_name.unwrap_or(&t), "_id": id, "found": false}),
        ));
    };
    if let Some(want) = o.version.filter(|v| *v != s.version) {
        return Err(EngineError::VersionConflict {
            index: h.name.clone(),
            id: id.to_string(),
            reason: format!(
                "version conflict, current version [{}] is different than the one provided [{want}]",
                s.version
            ),
        });
    }
    let mut v = json!({"_index": h.name, "_type": t, "_id": id, "_version": s.version,
        "_seq_no": s.seq_no, "_primary_term": 1});
    if let Some(r) = &s.routing {
        v["_routing"] = json!(r);
    }
    v["found"] = json!(true);
    match &o.filter {
        Some(SourceFilter::None) => {}
        None if o.stored_fields => {}
        Some(f) => {
            let src: Map<String, Value> = serde_json::from_slice(&s.source).unwrap_or_default();
            v["_source"] = Value::Object(f.apply(&src));
        }
        None => {
            v["_source"] = serde_json::from_slice(&s.source).map_err(EngineError::internal)?;
        }
    }
    Ok((200, v))
}

/// `GET|HEAD /<index>/<type>/<id>`.
pub fn get(
    engine: &Engine,
    req: &Request<'_>,
    index: &str,
    type_name: Option<&str>,
    id: &str,
) -> ApiResult {
    let h = engine.store.for_read(index)?;
    let o = GetOpts::from_params(&req.params)?.through(engine, index, &h)?;
    let (status, v) = get_json(engine, &h, type_name, id, &o)?;
    Ok(Response::json(status, &v))
}

/// `GET|HEAD /<index>/_source/<id>`: the source alone (filtered as asked).
pub fn source(engine: &Engine, req: &Request<'_>, index: &str, id: &str) -> ApiResult {
    let h = engine.store.for_read(index)?;
    let o = GetOpts::from_params(&req.params)?.through(engine, index, &h)?;
    let (status, v) = get_json(
        engine,
        &h,
        None,
        id,
        &GetOpts {
            stored_fields: false,
            ..o
        },
    )?;
    match (status, v.get("_source")) {
        (200, Some(src)) => Ok(Response::json(200, src)),
        (200, None) => Err(EngineError::NotFound(format!(
            "Document not found [{index}]/[_doc]/[{id}]"
        ))),
        _ => Err(EngineError::NotFound(format!(
            "Document not found [{index}]/[_doc]/[{id}]"
        ))),
    }
}

fn error_doc(index: &str, id: &str, e: &EngineError) -> Value {
    json!({"_index": index, "_type": "_doc", "_id": id, "error": e.body().to_value()["error"]})
}

fn id_of(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), String::from)
}

/// One `_mget` entry: index, id, the entry's own keys.
type Entry = (String, String, Map<String, Value>);

/// The entries of an `_mget` body.
fn entries(body: &Value, index: Option<&str>) -> EngineResult<Vec<Entry>> {
    let obj = body
        .as_object()
        .ok_or_else(|| EngineError::Validation(vec!["no documents to get".into()]))?;
    if let Some(k) = obj.keys().find(|k| !matches!(k.as_str(), "docs" | "ids")) {
        return Err(EngineError::Parsing(format!(
            "unknown parameter [{k}] in multi get"
        )));
    }
    if let Some(docs) = obj.get("docs").and_then(Value::as_array) {
        return docs
            .iter()
            .enumerate()
            .map(|(n, d)| {
                let d = d.as_object().ok_or_else(|| {
                    EngineError::Parsing("docs array element should include an object".into())
                })?;
                let i = d
                    .get("_index")
                    .and_then(Value::as_str)
                    .or(index)
                    .ok_or_else(|| {
                        EngineError::Validation(vec![format!("index is missing for doc {n}")])
                    })?;
                let id = d.get("_id").map(id_of).ok_or_else(|| {
                    EngineError::Validation(vec![format!("id is missing for doc {n}")])
                })?;
                Ok((i.to_string(), id, d.clone()))
            })
            .collect();
    }
    if let Some(ids) = obj.get("ids").and_then(Value::as_array) {
        let i = index
            .ok_or_else(|| EngineError::Validation(vec!["index is missing for doc 0".into()]))?;
        return Ok(ids
            .iter()
            .map(|v| (i.to_string(), id_of(v), Map::new()))
            .collect());
    }
    Err(EngineError::Validation(vec!["no documents to get".into()]))
}

/// `GET|POST /[<index>/]_mget`.
pub fn mget(engine: &Engine, req: &mut Request<'_>, index: Option<&str>) -> ApiResult {
    let body = json_body(req.body, engine.max_body)?.unwrap_or(Value::Null);
    let base = GetOpts::from_params(&req.params)?;
    let mut docs = Vec::new();
    for (i, id, keys) in entries(&body, index)? {
        crate::cancel::check();
        let o = base.with_doc(&keys)?;
        let doc = engine
            .store
            .for_read(&i)
            .and_then(|h| {
                let o = o.clone().through(engine, &i, &h)?;
                get_json(engine, &h, None, &id, &o)
            })
            .map(|(_, v)| v)
            .unwrap_or_else(|e| error_doc(&i, &id, &e));
        docs.push(doc);
    }
    Ok(Response::json(200, &json!({ "docs": docs })))
}
