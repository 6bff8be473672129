//! `POST /<indices>/_delete_by_query`, `/_update_by_query` and `POST /_reindex` (local
//! indices only: `source.remote` is refused). The matches are taken from one view of the
//! shards (`search::snapshot`), then written in batches of `scroll_size` (1000) with the
//! `_seq_no` each match had, so a document changed meanwhile is a version conflict:
//! `conflicts=abort` (the default) stops after the batch and answers 409 with the
//! failures, `conflicts=proceed` counts them and goes on. The response has Elasticsearch's
//! fields (`total`, `deleted`/`updated`/`created`, `batches`, `version_conflicts`, `noops`,
//! `failures`, ...). Runs to completion: `wait_for_completion=false` (tasks), `slices` > 1
//! and throttling are refused.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::json::json_body;
use super::params::Params;
use super::{ApiResult, Engine, Request, Response};
use crate::error::{EngineError, EngineResult};
use crate::query::parse_query;
use crate::resolve::Options;
use crate::script::{parse_script, Op, Script};
use crate::search::snapshot::{snapshot, SnapDoc, Snapshot};
use crate::search::SearchRequest;
use crate::store::index::IndexHandle;
use crate::store::shard::{Cond, DocResult};
use crate::store::{Action, ItemResult, RefreshPolicy, WriteItem};

/// Refuses the parameter values whose effect these endpoints do not have (which parameters
/// they take is `allowed`'s table).
fn check_params(req: &Request<'_>) -> EngineResult<()> {
    for (k, v) in &req.params.0 {
        let refused = match k.as_str() {
            "wait_for_completion" => v == "false",
            "slices" => !matches!(v.as_str(), "1" | "auto"),
            "requests_per_second" => !matches!(v.as_str(), "-1" | "-1.0"),
            "search_type" => !matches!(v.as_str(), "query_then_fetch" | "dfs_query_then_fetch"),
            _ => false,
        };
        if refused {
            return Err(EngineError::IllegalArgument(format!(
                "[{k}={v}] is not supported by this engine: by-query requests run to completion, in one slice, unthrottled"
            )));
        }
    }
    Ok(())
}

/// What a by-query run counted.
#[derive(Debug, Default)]
struct Tally {
    total: u64,
    created: u64,
    updated: u64,
    deleted: u64,
    batches: u64,
    conflicts: u64,
    noops: u64,
    failures: Vec<Value>,
    status: u16,
}

impl Tally {
    fn count(&mut self, r: &ItemResult, abort: bool) {
        match &r.outcome {
            Ok(o) => match o.result {
                DocResult::Created => self.created += 1,
                DocResult::Updated => self.updated += 1,
                DocResult::Deleted => self.deleted += 1,
                DocResult::Noop | DocResult::NotFound => self.noops += 1,
            },
            Err(e) => {
                let is_conflict = matches!(e, EngineError::VersionConflict { .. });
                if is_conflict {
                    self.conflicts += 1;
                    if !abort {
                        return;
                    }
                }
                let b = e.body();
                self.status = self.status.max(b.status);
                self.failures
                    .push(json!({"index": r.index, "type": r.type_name, "id": r.id,
                    "cause": b.to_value()["error"], "status": b.status}));
            }
        }
    }

    fn render(&self, started: Instant, kind: &str) -> Response {
        let mut v = Map::new();
        v.insert("took".into(), json!(started.elapsed().as_millis() as u64));
        v.insert("timed_out".into(), json!(false));
        v.insert("total".into(), json!(self.total));
        if kind != "delete" {
            v.insert("updated".into(), json!(self.updated));
        }
        if kind == "reindex" {
            v.insert("created".into(), json!(self.created));
        }
        v.insert("deleted".into(), json!(self.deleted));
        v.insert("batches".into(), json!(self.batches));
        v.insert("version_conflicts".into(), json!(self.conflicts));
        v.insert("noops".into(), json!(self.noops));
        v.insert("retries".into(), json!({"bulk": 0, "search": 0}));
        v.insert("throttled_millis".into(), json!(0));
        v.insert("requests_per_second".into(), json!(-1.0));
        v.insert("throttled_until_millis".into(), json!(0));
        v.insert("failures".into(), json!(self.failures));
        let status = if self.failures.is_empty() {
            200
        } else {
            self.status.max(400)
        };
        Response::json(status, &Value::Object(v))
    }
}

/// The body keys of `_delete_by_query` / `_update_by_query`.
struct ByQuery {
    sr: SearchRequest,
    max_docs: Option<usize>,
    abort: bool,
    script: Option<Script>,
}

fn conflicts_of(v: &str) -> EngineResult<bool> {
    match v {
        "abort" => Ok(true),
        "proceed" => Ok(false),
        other => Err(EngineError::IllegalArgument(format!(
            "conflicts may only be \"proceed\" or \"abort\" but was [{other}]"
        ))),
    }
}

fn max_docs_of(v: &Value) -> EngineResult<usize> {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .filter(|n| *n > 0)
        .map(|n| n as usize)
        .ok_or_else(|| {
            EngineError::Validation(vec![format!(
                "maxDocs should be greater than 0 if the request is limited to some number of documents or -1 if it isn't but it was [{v}]"
            )])
        })
}

fn parse_by_query(
    body: Option<&Value>,
    params: &Params,
    with_script: bool,
) -> EngineResult<ByQuery> {
    let mut q = ByQuery {
        sr: SearchRequest::default(),
        max_docs: None,
        abort: true,
        script: None,
    };
    if let Some(b) = body {
        let obj = b
            .as_object()
            .ok_or_else(|| EngineError::Parsing("request body must be an object".into()))?;
        for (k, v) in obj {
            match k.as_str() {
                "query" => q.sr.query = parse_query(v)?,
                "max_docs" | "size" => q.max_docs = Some(max_docs_of(v)?),
                "conflicts" => q.abort = conflicts_of(v.as_str().unwrap_or_default())?,
                "script" if with_script => q.script = Some(parse_script(v)?),
                other => {
                    return Err(EngineError::Parsing(format!(
                        "[{}] unknown field [{other}]",
                        if with_script {
                            "update_by_query"
                        } else {
                            "delete_by_query"
                        }
                    )))
                }
            }
        }
    }
    let get = |k: &str| {
        matches!(k, "q" | "df" | "default_operator")
            .then(|| params.get(k).map(String::from))
            .flatten()
    };
    q.sr.apply_params(&get)?;
    if let Some(c) = params.get("conflicts") {
        q.abort = conflicts_of(c)?;
    }
    if let Some(m) = params.get("max_docs") {
        q.max_docs = Some(max_docs_of(&json!(m))?);
    }
    Ok(q)
}

fn batch_size(params: &Params) -> EngineResult<usize> {
    Ok(params
        .number("scroll_size")?
        .unwrap_or(1000)
        .clamp(1, 10_000) as usize)
}

/// Writes `items` as one batch and counts the outcomes; false when the run must stop.
fn write_batch(
    engine: &Engine,
    items: Vec<WriteItem>,
    pre: &mut Tally,
    abort: bool,
) -> EngineResult<bool> {
    if items.is_empty() {
        return Ok(true);
    }
    pre.batches += 1;
    let (results, touched) = engine.store.write(items);
    engine.store.finish(&touched, RefreshPolicy::None)?;
    let before = pre.failures.len();
    for r in &results {
        pre.count(r, abort);
    }
    Ok(pre.failures.len() == before)
}

fn refresh_all(
    engine: &Engine,
    req: &Request<'_>,
    indices: &[Arc<IndexHandle>],
) -> EngineResult<()> {
    if req.params.refresh()? != RefreshPolicy::None {
        for h in indices {
            h.refresh(&engine.store.wal)?;
        }
    }
    Ok(())
}

fn item(action: Action, d: &SnapDoc, index: &str, source: Vec<u8>, cond: Cond) -> WriteItem {
    WriteItem {
        action,
        index: index.to_string(),
        type_name: None,
        id: Some(d.id.clone()),
        routing: d.routing.clone(),
        source,
        update: None,
        cond,
    }
}

fn same_version(d: &SnapDoc) -> Cond {
    Cond {
        if_seq_no: Some(d.seq_no),
        if_primary_term: Some(1),
        external: None,
        require_alias: false,
    }
}

/// The indices `index` names, with the filters of filtered aliases added to `sr` (a
/// by-query request through a filtered alias touches only what the filter matches).
fn targets(
    engine: &Engine,
    index: &str,
    params: &Params,
    sr: &mut SearchRequest,
) -> EngineResult<Vec<Arc<IndexHandle>>> {
    let opts = params.indices_options(Options::default())?;
    let mut out = Vec::new();
    for (h, filters) in engine.store.resolve_filtered(index, opts)? {
        if let Some(fs) = filters {
            sr.add_alias_filters(&h.name, &fs)?;
        }
        out.push(h);
    }
    sr.routing = engine.store.search_routing(index, params.get("routing"));
    Ok(out)
}

/// Goes through the matches of `snap` in batches of `size`: `make` turns a match into a
/// write (None: a no-op, counted); each batch is written and counted; the run stops after
/// a batch with failures.
fn run_batches(
    engine: &Engine,
    snap: &Snapshot,
    size: usize,
    abort: bool,
    make: &mut dyn FnMut(&SnapDoc) -> EngineResult<Option<WriteItem>>,
) -> EngineResult<Tally> {
    let mut t = Tally {
        total: snap.docs.len() as u64,
        ..Tally::default()
    };
    let mut n = 0;
    while n < snap.docs.len() {
        let end = (n + size).min(snap.docs.len());
        let mut items = Vec::new();
        for i in n..end {
            crate::cancel::check();
            match make(&snap.doc(i)?)? {
                Some(item) => items.push(item),
                None => t.noops += 1,
            }
        }
        n = end;
        if !write_batch(engine, items, &mut t, abort)? {
            break;
        }
    }
    Ok(t)
}

/// `POST /<indices>/_delete_by_query`.
pub fn delete_by_query(engine: &Engine, req: &mut Request<'_>, index: &str) -> ApiResult {
    let started = Instant::now();
    check_params(req)?;
    let body = json_body(req.body, engine.max_body)?;
    if body.as_ref().and_then(|b| b.get("query")).is_none() && req.params.get("q").is_none() {
        return Err(EngineError::Validation(vec!["query is missing".into()]));
    }
    let mut q = parse_by_query(body.as_ref(), &req.params, false)?;
    let indices = targets(engine, index, &req.params, &mut q.sr)?;
    let snap = snapshot(&indices, &q.sr, q.max_docs)?;
    let t = run_batches(engine, &snap, batch_size(&req.params)?, q.abort, &mut |d| {
        Ok(Some(item(
            Action::Delete,
            d,
            &d.index.name,
            vec![],
            same_version(d),
        )))
    })?;
    refresh_all(engine, req, &indices)?;
    Ok(t.render(started, "delete"))
}

/// The write a script (or none) makes of one document: None when it is a no-op.
fn scripted(
    script: Option<&Script>,
    d: &SnapDoc,
    dest: &str,
) -> EngineResult<Option<(Action, Vec<u8>)>> {
    let Some(s) = script else {
        return Ok(Some((Action::Index, d.source.clone())));
    };
    let src: Map<String, Value> = serde_json::from_slice(&d.source).unwrap_or_default();
    Ok(match s.run(src, &d.id, dest, "index")? {
        (Op::Index, m) => Some((
            Action::Index,
            serde_json::to_vec(&Value::Object(m)).map_err(EngineError::internal)?,
        )),
        (Op::Delete, _) => Some((Action::Delete, vec![])),
        (Op::Noop, _) => None,
    })
}

/// `POST /<indices>/_update_by_query`.
pub fn update_by_query(engine: &Engine, req: &mut Request<'_>, index: &str) -> ApiResult {
    let started = Instant::now();
    check_params(req)?;
    let body = json_body(req.body, engine.max_body)?;
    let mut q = parse_by_query(body.as_ref(), &req.params, true)?;
    let indices = targets(engine, index, &req.params, &mut q.sr)?;
    let snap = snapshot(&indices, &q.sr, q.max_docs)?;
    let t = run_batches(engine, &snap, batch_size(&req.params)?, q.abort, &mut |d| {
        Ok(scripted(q.script.as_ref(), d, &d.index.name)?
            .map(|(a, src)| item(a, d, &d.index.name, src, same_version(d))))
    })?;
    refresh_all(engine, req, &indices)?;
    Ok(t.render(started, "update"))
}

/// The parts of a `_reindex` body.
struct Reindex {
    source_index: String,
    query: SearchRequest,
    batch: usize,
    dest: String,
    create: bool,
    external: bool,
    script: Option<Script>,
    max_docs: Option<usize>,
    abort: bool,
}

fn refuse(what: &str) -> EngineError {
    EngineError::IllegalArgument(format!(
        "[{what}] is not supported by this engine's reindex"
    ))
}

fn parse_source(v: &Value, r: &mut Reindex) -> EngineResult<()> {
    let o = v
        .as_object()
        .ok_or_else(|| EngineError::Parsing("[source] must be an object".into()))?;
    for (k, x) in o {
        match k.as_str() {
            "index" => {
                r.source_index = match x {
                    Value::Array(a) => a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(","),
                    other => other.as_str().unwrap_or_default().to_string(),
                }
            }
            "query" => r.query.query = parse_query(x)?,
            "size" => r.batch = max_docs_of(x)?,
            "remote" => {
                return Err(EngineError::IllegalArgument(
                    "reindex from a remote cluster ([source.remote]) is not supported: only local indices can be reindexed".into(),
                ))
            }
            other => return Err(refuse(&format!("source.{other}"))),
        }
    }
    Ok(())
}

fn parse_dest(v: &Value, r: &mut Reindex) -> EngineResult<()> {
    let o = v
        .as_object()
        .ok_or_else(|| EngineError::Parsing("[dest] must be an object".into()))?;
    for (k, x) in o {
        match (k.as_str(), x.as_str()) {
            ("index", Some(s)) => r.dest = s.to_string(),
            ("op_type", Some("create")) => r.create = true,
            ("op_type", Some("index")) => r.create = false,
            ("version_type", Some("external" | "external_gt")) => r.external = true,
            ("version_type", Some("internal")) => r.external = false,
            (other, _) => return Err(refuse(&format!("dest.{other}"))),
        }
    }
    Ok(())
}

fn parse_reindex(body: &Value, params: &Params) -> EngineResult<Reindex> {
    let o = body
        .as_object()
        .ok_or_else(|| EngineError::Parsing("request body must be an object".into()))?;
    let mut r = Reindex {
        source_index: String::new(),
        query: SearchRequest::default(),
        batch: 1000,
        dest: String::new(),
        create: false,
        external: false,
        script: None,
        max_docs: None,
        abort: true,
    };
    for (k, v) in o {
        match k.as_str() {
            "source" => parse_source(v, &mut r)?,
            "dest" => parse_dest(v, &mut r)?,
            "script" => r.script = Some(parse_script(v)?),
            "max_docs" | "size" => r.max_docs = Some(max_docs_of(v)?),
            "conflicts" => r.abort = conflicts_of(v.as_str().unwrap_or_default())?,
            other => {
                return Err(EngineError::Parsing(format!(
                    "[reindex] unknown field [{other}]"
                )))
            }
        }
    }
    let mut errors = Vec::new();
    if r.source_index.is_empty() {
        errors.push("use _all if you really want to copy from all existing indexes".to_string());
    }
    if r.dest.is_empty() {
        errors.push("index must be specified".to_string());
    }
    if !errors.is_empty() {
        return Err(EngineError::Validation(errors));
    }
    if let Some(c) = params.get("conflicts") {
        r.abort = conflicts_of(c)?;
    }
    if let Some(m) = params.get("max_docs") {
        r.max_docs = Some(max_docs_of(&json!(m))?);
    }
    Ok(r)
}

/// `POST /_reindex` between local indices.
pub fn reindex(engine: &Engine, req: &mut Request<'_>) -> ApiResult {
    let started = Instant::now();
    check_params(req)?;
    let body = json_body(req.body, engine.max_body)?
        .ok_or_else(|| EngineError::Validation(vec!["source is missing".into()]))?;
    let mut r = parse_reindex(&body, &req.params)?;
    // date math in the source and destination names, resolved once for the request
    let now = crate::date_names::wall_ms();
    r.source_index = crate::date_names::resolve_expression(&r.source_index, now)?;
    r.dest = crate::date_names::resolve_name(&r.dest, now)?;
    let indices = targets(engine, &r.source_index, &Params::default(), &mut r.query)?;
    if indices.iter().any(|h| h.name == r.dest) {
        return Err(EngineError::Validation(vec![format!(
            "reindex cannot write into an index its reading from [{}]",
            r.dest
        )]));
    }
    let snap = snapshot(&indices, &r.query, r.max_docs)?;
    let t = run_batches(engine, &snap, r.batch, r.abort, &mut |d| {
        let Some((action, src)) = scripted(r.script.as_ref(), d, &r.dest)? else {
            return Ok(None);
        };
        let action = match action {
            Action::Index if r.create => Action::Create,
            a => a,
        };
        let cond = Cond {
            external: r.external.then_some((d.version, false)),
            ..Cond::default()
        };
        Ok(Some(item(action, d, &r.dest, src, cond)))
    })?;
    if req.params.refresh()? != RefreshPolicy::None {
        if let Some(h) = engine.store.get(&r.dest) {
            h.refresh(&engine.store.wal)?;
        }
    }
    Ok(t.render(started, "reindex"))
}
