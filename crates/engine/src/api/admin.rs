//! Index and cluster administration: `_close`/`_open`, `_stats` (docs, store, segments,
//! and of `search` only `open_contexts`: the shard contexts of open scrolls and points in
//! time, which is what the edge reads to count a cluster's contexts),
//! `_resolve/index`, `_field_caps`, `_cluster/settings`, and points in time
//! (`POST /<indices>/_pit`, `DELETE /_pit`).

use serde_json::{json, Map, Value};

use super::json::json_body;
use super::{ApiResult, Engine, Request, Response};
use crate::error::{EngineError, EngineResult};
use crate::mapping::{LeafKind, Mapping, ObjectMapping, Property};
use crate::names::wildcard_match;
use crate::resolve::Options;
use crate::search::ScrollParams;
use crate::store::index::IndexHandle;
use searchgate_core::proto::Method;

/// `POST /<indices>/_close` and `/_open` (wildcards match open indices for `_close`,
/// closed ones for `_open`, as Elasticsearch 7.10 expands them by default).
pub fn open_close(engine: &Engine, req: &mut Request<'_>, index: &str, open: bool) -> ApiResult {
    let _ = json_body(req.body, engine.max_body)?;
    let opts = req.params.indices_options(Options {
        forbid_closed: false,
        expand_open: !open,
        expand_closed: open,
        ..Options::default()
    })?;
    let targets = engine.store.resolve_filtered(index, opts)?;
    let mut closed = Map::new();
    for (h, _) in &targets {
        h.set_open(open)?;
        closed.insert(h.name.clone(), json!({"closed": true}));
    }
    Ok(Response::json(
        200,
        &if open {
            json!({"acknowledged": true, "shards_acknowledged": true})
        } else {
            json!({"acknowledged": true, "shards_acknowledged": true, "indices": closed})
        },
    ))
}

/// Index statistics metrics this engine reports.
const METRICS: &[&str] = &["docs", "store", "segments", "search"];

/// The open shard contexts (scrolls and points in time) by index uuid.
type Contexts = std::collections::HashMap<std::sync::Arc<str>, usize>;

fn index_stats(h: &IndexHandle, metrics: &[&str], contexts: &Contexts) -> Value {
    let st = h.stats();
    let segments: usize = h
        .shards
        .iter()
        .map(|s| s.searcher().segment_readers().len())
        .sum();
    let mut m = Map::new();
    for name in metrics {
        let v = match *name {
            "docs" => json!({"count": st.docs, "deleted": st.deleted}),
            "store" => json!({"size_in_bytes": st.bytes, "reserved_in_bytes": 0}),
            "search" => json!({"open_contexts": contexts.get(&h.uuid).copied().unwrap_or(0)}),
            _ => json!({"count": segments}),
        };
        m.insert(name.to_string(), v);
    }
    Value::Object(m)
}

fn add_into(total: &mut Value, part: &Value) {
    match (total, part) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                let zero = if v.is_object() { json!({}) } else { json!(0) };
                add_into(t.entry(k.clone()).or_insert(zero), v);
            }
        }
        (t, Value::Number(n)) => {
            *t = json!(t.as_u64().unwrap_or(0) + n.as_u64().unwrap_or(0));
        }
        _ => {}
    }
}

/// `GET [/<indices>]/_stats[/<metrics>]`.
pub fn stats(
    engine: &Engine,
    req: &mut Request<'_>,
    index: Option<&str>,
    metric: Option<&str>,
) -> ApiResult {
    let metrics: Vec<&str> = match metric {
        None | Some("_all") => METRICS.to_vec(),
        Some(m) => m.split(',').collect(),
    };
    if let Some(bad) = metrics.iter().find(|m| !METRICS.contains(m)) {
        return Err(EngineError::IllegalArgument(format!(
            "request [{}] asks for index statistics [{bad}], which this engine does not keep; it reports [docs, store, segments, search] (of search, only open_contexts)",
            req.path
        )));
    }
    let level = req.params.get("level").unwrap_or("indices");
    if !matches!(level, "cluster" | "indices") {
        return Err(EngineError::IllegalArgument(format!(
            "level parameter must be one of [cluster] or [indices] or [shards] but was [{level}]{}",
            if level == "shards" {
                ": [shards] is not supported by this engine"
            } else {
                ""
            }
        )));
    }
    let opts = req.params.indices_options(Options::default())?;
    let targets = engine.store.resolve(index.unwrap_or("_all"), opts)?;
    let mut contexts = Contexts::new();
    if metrics.contains(&"search") {
        engine.scrolls.count_by_index(&mut contexts);
        engine.pits.count_by_index(&mut contexts);
    }
    let (mut all, mut indices, mut shards) = (json!({}), Map::new(), 0usize);
    for h in &targets {
        let s = index_stats(h, &metrics, &contexts);
        add_into(&mut all, &s);
        shards += h.shards.len();
        indices.insert(
            h.name.clone(),
            json!({"uuid": &*h.uuid, "primaries": s, "total": s}),
        );
    }
    let mut body = json!({
        "_shards": {"total": shards, "successful": shards, "failed": 0},
        "_all": {"primaries": all, "total": all},
    });
    if level == "indices" {
        body["indices"] = Value::Object(indices);
    }
    Ok(Response::json(200, &body))
}

/// `GET /_resolve/index/<expression>`: the indices and aliases a name or pattern matches.
pub fn resolve_index(engine: &Engine, _req: &mut Request<'_>, expr: &str) -> ApiResult {
    let all = engine.store.all();
    let parts: Vec<&str> = expr.split(',').collect();
    let matches = |name: &str| {
        parts
            .iter()
            .any(|p| *p == "_all" || wildcard_match(p, name))
    };
    let mut indices = Vec::new();
    let mut aliases: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for h in &all {
        let names: Vec<String> = h.aliases().keys().cloned().collect();
        if matches(&h.name) {
            let state = if h.is_open() { "open" } else { "closed" };
            indices.push(json!({"name": h.name, "aliases": names, "attributes": [state]}));
        }
        for a in names.iter().filter(|a| matches(a)) {
            aliases.entry(a.clone()).or_default().push(h.name.clone());
        }
    }
    let missing = parts.iter().find(|p| {
        !p.contains('*')
            && *p != &"_all"
            && !all.iter().any(|h| h.name == **p)
            && !aliases.contains_key(**p)
    });
    if let Some(m) = missing {
        return Err(EngineError::IndexNotFound(m.to_string()));
    }
    let aliases: Vec<Value> = aliases
        .into_iter()
        .map(|(name, indices)| json!({"name": name, "indices": indices}))
        .collect();
    Ok(Response::json(
        200,
        &json!({"indices": indices, "aliases": aliases, "data_streams": []}),
    ))
}

/// (type, searchable, aggregatable) of a mapped leaf.
fn caps(kind: LeafKind, type_name: &str, indexed: bool) -> (String, bool, bool) {
    match kind {
        LeafKind::Text => (type_name.into(), indexed, false),
        LeafKind::Binary | LeafKind::Unindexed => (type_name.into(), false, false),
        _ => (type_name.into(), indexed, true),
    }
}

/// `GET|POST [/<indices>]/_field_caps?fields=...`.
pub fn field_caps(engine: &Engine, req: &mut Request<'_>, index: Option<&str>) -> ApiResult {
    let mut fields: Vec<String> = req
        .params
        .get("fields")
        .map(|f| f.split(',').map(|s| s.trim().to_string()).collect())
        .unwrap_or_default();
    // elasticsearch-py 8/9 and the Node.js client send `fields` in the body
    if let Some(b) = json_body(req.body, engine.max_body)? {
        for (k, v) in b.as_object().into_iter().flatten() {
            match (k.as_str(), v) {
                ("fields", Value::String(s)) => {
                    fields.extend(s.split(',').map(|x| x.trim().to_string()))
                }
                ("fields", Value::Array(a)) => {
                    fields.extend(a.iter().filter_map(Value::as_str).map(String::from))
                }
                (other, _) => {
                    return Err(EngineError::IllegalArgument(format!(
                        "[field_caps] body key [{other}] is not supported by this engine"
                    )))
                }
            }
        }
    }
    fields.retain(|f| !f.is_empty());
    if fields.is_empty() {
        return Err(EngineError::Validation(vec![
            "specified fields can't be null or empty".into(),
        ]));
    }
    let opts = req.params.indices_options(Options::default())?;
    let targets = engine.store.resolve(index.unwrap_or("_all"), opts)?;
    let out = field_caps_of(&targets, &fields)?;
    Ok(Response::json(200, &out))
}

fn field_caps_of(
    targets: &[std::sync::Arc<IndexHandle>],
    fields: &[String],
) -> EngineResult<Value> {
    // field -> type -> (searchable, aggregatable, indices)
    type ByType = std::collections::BTreeMap<String, (bool, bool, Vec<String>)>;
    let mut by_field: std::collections::BTreeMap<String, ByType> = Default::default();
    let wanted = |f: &str| fields.iter().any(|p| wildcard_match(p, f));
    for h in targets {
        let m = h.mapping();
        let mut entries: Vec<(String, (String, bool, bool))> = m
            .fields()
            .into_iter()
            .map(|(p, info)| {
                let t = type_name_of(&m, p).unwrap_or_else(|| info.kind.name().to_string());
                (p.to_string(), caps(info.kind, &t, info.indexed))
            })
            .collect();
        for p in object_paths(&m.root, "") {
            entries.push((p, ("object".into(), false, false)));
        }
        for (meta, t, s, a) in [
            ("_id", "_id", true, true),
            ("_index", "_index", true, true),
            ("_source", "_source", false, false),
        ] {
            entries.push((meta.into(), (t.into(), s, a)));
        }
        for (path, (t, s, a)) in entries.into_iter().filter(|(p, _)| wanted(p)) {
            let e = by_field
                .entry(path)
                .or_default()
                .entry(t)
                .or_insert((s, a, vec![]));
            e.2.push(h.name.clone());
        }
    }
    let mut out = Map::new();
    for (field, types) in by_field {
        let many = types.len() > 1;
        let mut tm = Map::new();
        for (t, (s, a, idx)) in types {
            let mut v = json!({"type": t, "searchable": s, "aggregatable": a});
            if many {
                v["indices"] = json!(idx);
            }
            tm.insert(t, v);
        }
        out.insert(field, Value::Object(tm));
    }
    let names: Vec<&str> = targets.iter().map(|h| h.name.as_str()).collect();
    Ok(json!({"indices": names, "fields": out}))
}

/// The `type` a leaf was mapped with (multi-fields included).
fn type_name_of(m: &Mapping, path: &str) -> Option<String> {
    match m.property(path) {
        Some(Property::Leaf(l)) => Some(l.type_name.clone()),
        Some(Property::Object(_)) => None,
        None => {
            let (parent, sub) = path.rsplit_once('.')?;
            match m.property(parent) {
                Some(Property::Leaf(l)) => l.fields.get(sub).map(|f| f.type_name.clone()),
                _ => None,
            }
        }
    }
}

/// Dotted paths of every object under `o`.
fn object_paths(o: &ObjectMapping, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (k, p) in &o.properties {
        if let Property::Object(inner) = p {
            let path = crate::mapping::join(prefix, k);
            out.extend(object_paths(inner, &path));
            out.push(path);
        }
    }
    out
}

/// `GET|PUT /_cluster/settings`.
pub fn cluster_settings(engine: &Engine, req: &mut Request<'_>) -> ApiResult {
    let cs = &engine.store.cluster_settings;
    if req.method == Method::Put {
        let body = json_body(req.body, engine.max_body)?
            .ok_or_else(|| EngineError::Validation(vec!["no settings to update".into()]))?;
        return Ok(Response::json(200, &cs.update(&body)?));
    }
    let flat = req.params.bool("flat_settings")?.unwrap_or(false);
    let defaults = req.params.bool("include_defaults")?.unwrap_or(false);
    let d = engine.store.default_auto_create();
    Ok(Response::json(200, &cs.get(flat, defaults.then_some(&d))))
}

/// `POST /<indices>/_pit?keep_alive=` (open) and `DELETE /_pit` (close).
pub fn pit(engine: &Engine, req: &mut Request<'_>, index: Option<&str>) -> ApiResult {
    let Some(index) = index else {
        let body = json_body(req.body, engine.max_body)?
            .ok_or_else(|| EngineError::Validation(vec!["point in time id is missing".into()]))?;
        let id = body
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| EngineError::Validation(vec!["point in time id is missing".into()]))?;
        let freed = engine.pits.close(&[id.to_string()]);
        let status = if freed == 0 { 404 } else { 200 };
        return Ok(Response::json(
            status,
            &json!({"succeeded": true, "num_freed": freed}),
        ));
    };
    let (id, _) = open_pit(engine, req, index)?;
    Ok(Response::json(200, &json!({ "id": id })))
}

/// Opens a point in time over `index` with the request's `keep_alive` (required) and
/// index options: what `POST /<indices>/_pit` and OpenSearch's
/// `POST /<indices>/_search/point_in_time` share.
pub(super) fn open_pit(
    engine: &Engine,
    req: &mut Request<'_>,
    index: &str,
) -> EngineResult<(String, std::sync::Arc<crate::search::pit::Pit>)> {
    let keep = req
        .params
        .get("keep_alive")
        .ok_or_else(|| EngineError::Validation(vec!["[keep_alive] is not specified".into()]))?;
    let keep = ScrollParams::parse_named(keep, "keep_alive")?;
    let opts = req.params.indices_options(Options::default())?;
    let targets = engine.store.resolve_filtered(index, opts)?;
    Ok(engine.pits.open_pit(targets, keep))
}
