//! `POST /_bulk`, `/<index>/_bulk`, `/<index>/<type>/_bulk`: the NDJSON body is read line
//! by line and applied in batches (bounded memory whatever the body size), then made
//! durable with one WAL sync; the response (`took`, `errors`, per-item results) is streamed.
//!
//! Lines are framed as Elasticsearch 7.10 frames them (`crate::ndjson`). A malformed
//! action line or a body not ending in a newline fails the whole request with 400 as in
//! Elasticsearch; batches before it may already have been applied (never acknowledged)
//! because the body is not buffered.

use std::io::{self, BufRead, Write};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::docs::parse_update;
use super::{ApiResult, Body, Engine, Request, Response, JSON};
use crate::error::EngineError;
use crate::ndjson::{first_value, BulkLines};
use crate::store::shard::{Cond, DocResult, Outcome};
use crate::store::{Action, ItemResult, RefreshPolicy, Touched, WriteItem};

/// Items per batch.
const BATCH_ITEMS: usize = 1000;
/// Source bytes per batch.
const BATCH_BYTES: usize = 4 << 20;

/// A bulk item's result, kept compact until the response is written.
struct Item {
    action: Action,
    index: Arc<str>,
    type_name: Arc<str>,
    id: Box<str>,
    copies: u32,
    outcome: Result<Outcome, Box<EngineError>>,
}

struct Defaults<'a> {
    index: Option<&'a str>,
    type_name: Option<&'a str>,
    routing: Option<&'a str>,
    /// `require_alias` of the request (an action may set its own).
    require_alias: bool,
}

fn malformed(line: usize, why: String) -> EngineError {
    EngineError::IllegalArgument(format!("Malformed action/metadata line [{line}], {why}"))
}

/// The name of the JSON token a value starts with, as Elasticsearch's parser names it.
fn token(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "START_OBJECT",
        Value::Array(_) => "START_ARRAY",
        Value::String(_) => "VALUE_STRING",
        Value::Number(_) => "VALUE_NUMBER",
        Value::Bool(_) => "VALUE_BOOLEAN",
        Value::Null => "VALUE_NULL",
    }
}

fn flag(v: &Value, k: &str) -> Result<bool, EngineError> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" || s == "false" => Ok(s == "true"),
        _ => Err(EngineError::IllegalArgument(format!(
            "Failed to parse value [{v}] as only [true] or [false] are allowed for [{k}]"
        ))),
    }
}

fn meta_str(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Parses an action line into an item without its source.
fn parse_action(line: &[u8], n: usize, d: &Defaults<'_>) -> Result<WriteItem, EngineError> {
    let v: Value = first_value(line)
        .map_err(|e| EngineError::NotJson(format!("Failed to parse bulk action line [{n}]: {e}")))?
        .unwrap_or(Value::Null);
    let obj = v.as_object().ok_or_else(|| {
        malformed(
            n,
            format!("expected START_OBJECT but found [{}]", token(&v)),
        )
    })?;
    let (name, meta) = match (obj.len(), obj.iter().next()) {
        (1, Some(kv)) => kv,
        (0, _) => {
            return Err(malformed(
                n,
                "expected FIELD_NAME but found [END_OBJECT]".into(),
            ))
        }
        _ => {
            return Err(malformed(
                n,
                "expected END_OBJECT but found [FIELD_NAME]".into(),
            ))
        }
    };
    let action = match name.as_str() {
        "index" => Action::Index,
        "create" => Action::Create,
        "update" => Action::Update,
        "delete" => Action::Delete,
        other => {
            return Err(malformed(
                n,
                format!(
                    "expected field [create], [delete], [index] or [update] but found [{other}]"
                ),
            ))
        }
    };
    let meta = meta.as_object().ok_or_else(|| {
        malformed(
            n,
            format!("expected START_OBJECT but found [{}]", token(meta)),
        )
    })?;
    let mut item = WriteItem {
        action,
        index: d.index.unwrap_or_default().to_string(),
        type_name: d.type_name.map(String::from),
        id: None,
        routing: d.routing.map(String::from),
        source: Vec::new(),
        update: None,
        cond: Cond {
            require_alias: d.require_alias,
            ..Cond::default()
        },
    };
    apply_meta(&mut item, meta, n)?;
    if item.index.is_empty() {
        return Err(EngineError::Validation(vec!["index is missing".into()]));
    }
    if item.id.is_none() && matches!(action, Action::Update | Action::Delete) {
        return Err(EngineError::Validation(vec!["id is missing".into()]));
    }
    Ok(item)
}

fn apply_meta(
    item: &mut WriteItem,
    meta: &Map<String, Value>,
    n: usize,
) -> Result<(), EngineError> {
    let mut version_type = "internal".to_string();
    let mut version = None;
    for (k, v) in meta {
        if v.is_object() || v.is_array() {
            return Err(malformed(
                n,
                format!(
                    "expected a simple value for field [{k}] but found [{}]",
                    token(v)
                ),
            ));
        }
        match k.as_str() {
            "_index" => item.index = meta_str(v).unwrap_or_default(),
            "_type" => item.type_name = meta_str(v),
            "_id" => item.id = meta_str(v),
            "routing" | "_routing" => item.routing = meta_str(v),
            "if_seq_no" => item.cond.if_seq_no = v.as_i64(),
            "if_primary_term" => item.cond.if_primary_term = v.as_u64(),
            "version" | "_version" => version = v.as_u64(),
            "version_type" | "_version_type" => version_type = meta_str(v).unwrap_or_default(),
            // updates run under the shard's lock: they never conflict with themselves
            "retry_on_conflict" | "_retry_on_conflict" => {}
            "require_alias" => item.cond.require_alias = flag(v, k)?,
            "op_type" if item.action == Action::Index => match meta_str(v).as_deref() {
                Some("create") => item.action = Action::Create,
                Some("index") => {}
                other => {
                    return Err(EngineError::IllegalArgument(format!(
                        "opType must be 'create' or 'index', found: [{}]",
                        other.unwrap_or_default()
                    )))
                }
            },
            "_source" if v == &Value::Bool(false) => {}
            "pipeline" => {
                return Err(EngineError::IllegalArgument(format!(
                    "pipeline with id [{}] does not exist (this engine has no ingest pipelines)",
                    meta_str(v).unwrap_or_default()
                )))
            }
            "_source" => {
                return Err(EngineError::IllegalArgument(format!(
                    "Action/metadata line [{n}]: [{k}] is not supported by this engine"
                )))
            }
            other => {
                return Err(EngineError::IllegalArgument(format!(
                    "Action/metadata line [{n}] contains an unknown parameter [{other}]"
                )))
            }
        }
    }
    if let Some(v) = version {
        match version_type.as_str() {
            "external" => item.cond.external = Some((v, false)),
            "external_gte" => item.cond.external = Some((v, true)),
            _ => return Err(EngineError::Validation(vec!["internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and `if_primary_term` instead".into()])),
        }
    }
    Ok(())
}

struct Run<'e> {
    engine: &'e Engine,
    items: Vec<Item>,
    touched: Touched,
    names: Vec<Arc<str>>,
}

impl Run<'_> {
    fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.names.iter().find(|a| &***a == s) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(s);
        if self.names.len() < 64 {
            self.names.push(a.clone());
        }
        a
    }

    fn flush(&mut self, batch: &mut Vec<WriteItem>) {
        if batch.is_empty() {
            return;
        }
        let actions: Vec<Action> = batch.iter().map(|i| i.action).collect();
        // date math in actions' `_index`, read at one clock reading for the batch
        let now = crate::date_names::wall_ms();
        let (results, touched) = self.engine.store.write_named(std::mem::take(batch), &|n| {
            crate::date_names::resolve_name(n, now)
        });
        self.touched.merge(touched);
        for (r, action) in results.into_iter().zip(actions) {
            let ItemResult {
                index,
                type_name,
                id,
                copies,
                outcome,
            } = r;
            let item = Item {
                action,
                index: self.intern(&index),
                type_name: self.intern(&type_name),
                id: id.into_boxed_str(),
                copies,
                outcome: outcome.map_err(Box::new),
            };
            self.items.push(item);
        }
    }
}

/// Reads the next item (action line and, but for delete, its source line); None at the end.
fn next_item(
    body: &mut dyn BufRead,
    lines: &mut BulkLines,
    d: &Defaults<'_>,
) -> Result<Option<WriteItem>, EngineError> {
    let Some((n, action, source)) = lines.next_item(body)? else {
        return Ok(None);
    };
    let mut item = parse_action(&action, n, d)?;
    let Some(source) = source else {
        return Ok(Some(item));
    };
    if item.action == Action::Update {
        let v: Value = first_value(&source)
            .map_err(|e| {
                EngineError::NotJson(format!("Failed to parse bulk update line [{}]: {e}", n + 1))
            })?
            .unwrap_or(Value::Null);
        item.update = Some(parse_update(&v)?);
    } else {
        item.source = source;
    }
    Ok(Some(item))
}

/// `POST /[<index>/[<type>/]]_bulk`.
pub fn bulk(
    engine: &Engine,
    req: &mut Request<'_>,
    index: Option<&str>,
    type_name: Option<&str>,
) -> ApiResult {
    let started = Instant::now();
    let refresh = req.params.refresh()?;
    let routing = req.params.get("routing").map(String::from);
    let require_alias = match req.params.get("require_alias") {
        None => false,
        Some(v) => flag(&Value::String(v.to_string()), "require_alias")?,
    };
    let d = Defaults {
        index,
        type_name,
        routing: routing.as_deref(),
        require_alias,
    };
    let mut run = Run {
        engine,
        items: Vec::new(),
        touched: Touched::default(),
        names: Vec::new(),
    };
    let mut lines = BulkLines::new(engine.max_body);
    let (mut batch, mut bytes) = (Vec::new(), 0usize);
    while let Some(item) = next_item(req.body, &mut lines, &d)? {
        bytes += item.source.len();
        batch.push(item);
        if batch.len() >= BATCH_ITEMS || bytes >= BATCH_BYTES {
            run.flush(&mut batch);
            bytes = 0;
        }
    }
    run.flush(&mut batch);
    if run.items.is_empty() {
        return Err(EngineError::Validation(vec!["no requests added".into()]));
    }
    engine.store.finish(&run.touched, refresh)?;
    let errors = run.items.iter().any(|i| i.outcome.is_err());
    let took = started.elapsed().as_millis() as u64;
    let items = run.items;
    let forced = refresh == RefreshPolicy::Immediate;
    let write = move |w: &mut dyn Write| write_items(w, took, errors, &items, forced);
    Ok(Response {
        status: 200,
        content_type: JSON.into(),
        headers: vec![],
        body: Body::Stream(Box::new(write)),
    })
}

fn error_json(it: &Item, e: &EngineError) -> Value {
    let body = e.body();
    json!({"_index": &*it.index, "_type": &*it.type_name, "_id": &*it.id,
        "status": body.status, "error": body.to_value()["error"]})
}

/// Writes one item (the common success case by hand: it is most of a big response).
fn write_item(w: &mut dyn Write, it: &Item, forced: bool) -> io::Result<()> {
    write!(w, "{{\"{}\":", it.action.name())?;
    let o = match &it.outcome {
        Ok(o) => o,
        Err(e) => {
            serde_json::to_writer(&mut *w, &error_json(it, e))?;
            return w.write_all(b"}");
        }
    };
    let status = match o.result {
        DocResult::Created => 201,
        DocResult::NotFound => 404,
        _ => 200,
    };
    let ok = u8::from(o.result != DocResult::Noop);
    w.write_all(b"{\"_index\":")?;
    serde_json::to_writer(&mut *w, &*it.index)?;
    w.write_all(b",\"_type\":")?;
    serde_json::to_writer(&mut *w, &*it.type_name)?;
    w.write_all(b",\"_id\":")?;
    serde_json::to_writer(&mut *w, &*it.id)?;
    write!(
        w,
        ",\"_version\":{},\"result\":\"{}\",\"_shards\":{{\"total\":{},\"successful\":{ok},\"failed\":0}},\"_seq_no\":{},\"_primary_term\":1,\"created\":{},{}\"status\":{status}}}}}",
        o.version,
        o.result.name(),
        it.copies,
        o.seq_no,
        o.result == DocResult::Created,
        if forced { "\"forced_refresh\":true," } else { "" },
    )
}

fn write_items(
    w: &mut dyn Write,
    took: u64,
    errors: bool,
    items: &[Item],
    forced: bool,
) -> io::Result<()> {
    write!(w, "{{\"took\":{took},\"errors\":{errors},\"items\":[")?;
    for (i, it) in items.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        write_item(w, it, forced)?;
    }
    w.write_all(b"]}")
}
