//! The document write pipeline shared by the single-document endpoints and `_bulk`:
//! resolve (or auto-create) the index, check the mapping type, parse and map sources
//! outside any shard lock, group by shard keeping order, apply, then make the batch durable
//! (one WAL sync for the whole request) and honour `refresh`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::index::IndexHandle;
use super::shard::{Cond, Outcome, ShardOp, Update};
use super::Store;
use crate::error::{EngineError, EngineResult};
use crate::mapping::IndexedDoc;
use crate::names::generate_id;

/// The four bulk actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Index,
    Create,
    Update,
    Delete,
}

impl Action {
    /// The action's name in bulk bodies and responses.
    pub fn name(self) -> &'static str {
        match self {
            Action::Index => "index",
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
        }
    }
}

/// The body of an update.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateBody {
    pub doc: Option<Map<String, Value>>,
    pub upsert: Option<Map<String, Value>>,
    pub doc_as_upsert: bool,
    pub detect_noop: bool,
    /// A script (the Painless subset) instead of `doc`.
    pub script: Option<crate::script::Script>,
    /// `scripted_upsert`: the script also runs when the document is missing.
    pub scripted_upsert: bool,
}

/// One document write.
#[derive(Debug, Clone)]
pub struct WriteItem {
    pub action: Action,
    pub index: String,
    pub type_name: Option<String>,
    /// None: generated (index and create only).
    pub id: Option<String>,
    pub routing: Option<String>,
    /// The document (index, create).
    pub source: Vec<u8>,
    /// The update request (update).
    pub update: Option<UpdateBody>,
    pub cond: Cond,
}

/// The result of one write.
#[derive(Debug)]
pub struct ItemResult {
    pub index: String,
    pub type_name: String,
    pub id: String,
    /// Total shard copies (1 + replicas) for `_shards`.
    pub copies: u32,
    pub outcome: EngineResult<Outcome>,
}

/// `refresh` parameter of writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RefreshPolicy {
    #[default]
    None,
    Immediate,
    WaitFor,
}

/// What a batch touched: WAL position to sync, shards with the refresh generation seen.
#[derive(Debug, Default)]
pub struct Touched {
    pub wal_end: u64,
    shards: BTreeMap<(String, u16), (Arc<IndexHandle>, u64)>,
}

impl Touched {
    /// Adds another batch's footprint.
    pub fn merge(&mut self, other: Touched) {
        self.wal_end = self.wal_end.max(other.wal_end);
        for (k, v) in other.shards {
            self.shards.entry(k).or_insert(v);
        }
    }
}

struct Prepared {
    handle: Arc<IndexHandle>,
    id: String,
    doc: Option<IndexedDoc>,
}

fn parse_source(source: &[u8]) -> EngineResult<Map<String, Value>> {
    match serde_json::from_slice::<Value>(source) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(EngineError::MapperParsing {
            reason: "failed to parse".into(),
            cause: Some(("not_x_content_exception".into(),
                "Compressor detection can only be called on some xcontent bytes or compressed xcontent bytes".into())),
        }),
        Err(e) => Err(EngineError::MapperParsing {
            reason: "failed to parse".into(),
            cause: Some(("json_parse_exception".into(), e.to_string())),
        }),
    }
}

/// Merges `patch` into `base` recursively (objects merge, everything else is replaced).
pub fn deep_merge(base: &mut Map<String, Value>, patch: &Map<String, Value>) {
    for (k, v) in patch {
        match (base.get_mut(k), v) {
            (Some(Value::Object(b)), Value::Object(p)) => deep_merge(b, p),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

fn run_update(
    handle: &IndexHandle,
    id: &str,
    routing: Option<&str>,
    body: &UpdateBody,
    current: Option<&[u8]>,
) -> EngineResult<Update> {
    use crate::script::Op;
    let merged = match (current, &body.script) {
        (None, Some(script)) => match (&body.upsert, body.scripted_upsert) {
            (Some(u), true) => match script.run(u.clone(), id, &handle.name, "create")? {
                (Op::Index, m) => m,
                (Op::Noop | Op::Delete, _) => return Ok(Update::Noop),
            },
            (Some(u), false) => u.clone(),
            (None, _) => return Err(missing(handle, id)),
        },
        (None, None) => match (&body.upsert, body.doc_as_upsert, &body.doc) {
            (Some(u), _, _) => u.clone(),
            (None, true, Some(d)) => d.clone(),
            _ => return Err(missing(handle, id)),
        },
        (Some(bytes), script) => {
            let mut cur = parse_source(bytes)?;
            let before = cur.clone();
            if let Some(s) = script {
                match s.run(cur, id, &handle.name, "index")? {
                    (Op::Index, m) => cur = m,
                    (Op::Noop, _) => return Ok(Update::Noop),
                    (Op::Delete, _) => return Ok(Update::Delete),
                }
            } else if let Some(d) = &body.doc {
                deep_merge(&mut cur, d);
            }
            if body.detect_noop && script.is_none() && cur == before {
                return Ok(Update::Noop);
            }
            cur
        }
    };
    let mut doc = handle.map_document(&merged, id)?;
    doc.routing = routing.map(String::from);
    let source = serde_json::to_vec(&Value::Object(merged)).map_err(EngineError::internal)?;
    Ok(Update::Write { source, doc })
}

fn missing(handle: &IndexHandle, id: &str) -> EngineError {
    EngineError::DocumentMissing {
        index: handle.name.clone(),
        id: id.to_string(),
    }
}

impl Store {
    fn prepare(
        &self,
        item: &mut WriteItem,
        cache: &mut HashMap<String, EngineResult<Arc<IndexHandle>>>,
    ) -> EngineResult<Prepared> {
        if item.cond.require_alias
            && !self
                .universe()
                .iter()
                .any(|i| i.aliases.contains_key(&item.index))
        {
            return Err(EngineError::RequireAlias(item.index.clone()));
        }
        if item.id.as_deref() == Some("") && matches!(item.action, Action::Index | Action::Create) {
            return Err(EngineError::IllegalArgument(
                "if _id is specified it must not be empty".into(),
            ));
        }
        // deletes never create an index (as Elasticsearch's bulk action)
        let handle = match item.action {
            Action::Delete => self.write_index(&item.index, false)?,
            _ => cache
                .entry(item.index.clone())
                .or_insert_with(|| self.for_write(&item.index))
                .clone()?,
        };
        handle.accept_type(item.type_name.as_deref())?;
        if item.index != handle.name {
            // through an alias: its index routing, if any, is the write's
            item.routing = crate::alias_routing::write_routing(
                &self.universe(),
                &item.index,
                &handle.name,
                item.routing.as_deref(),
            )?;
        }
        // the id stays on the item: an error after this point still names it
        let id = match &item.id {
            Some(id) => id.clone(),
            None => generate_id(),
        };
        if item.routing.is_none() && handle.mapping().routing_required() {
            return Err(EngineError::RoutingMissing {
                index: handle.name.clone(),
                type_name: handle.type_name(),
                id,
            });
        }
        let doc = match item.action {
            Action::Index | Action::Create => {
                let src = parse_source(&item.source)?;
                let mut doc = handle.map_document(&src, &id)?;
                doc.routing = item.routing.clone();
                Some(doc)
            }
            _ => None,
        };
        Ok(Prepared { handle, id, doc })
    }

    /// Applies `items` in order (per shard); returns one result per item and what the batch
    /// touched. Nothing is durable until [`Store::finish`].
    pub fn write(&self, items: Vec<WriteItem>) -> (Vec<ItemResult>, Touched) {
        self.write_named(items, &|name| Ok(name.to_string()))
    }

    /// [`Store::write`], each item's index name first read by `name` (`_bulk` resolves
    /// date math there: an expression it cannot read fails its item only).
    pub fn write_named(
        &self,
        mut items: Vec<WriteItem>,
        name: &dyn Fn(&str) -> EngineResult<String>,
    ) -> (Vec<ItemResult>, Touched) {
        let mut cache = HashMap::new();
        let prepared: Vec<EngineResult<Prepared>> = items
            .iter_mut()
            .map(|it| {
                it.index = name(&it.index)?;
                self.prepare(it, &mut cache)
            })
            .collect();
        let mut outcomes: Vec<Option<EngineResult<Outcome>>> =
            (0..items.len()).map(|_| None).collect();
        let mut groups: BTreeMap<(String, u16), Vec<usize>> = BTreeMap::new();
        for (i, p) in prepared.iter().enumerate() {
            match p {
                Ok(p) => {
                    let routing = items[i].routing.as_deref().unwrap_or(&p.id);
                    let shard = p.handle.shard_for(routing).num;
                    groups
                        .entry((p.handle.name.clone(), shard))
                        .or_default()
                        .push(i);
                }
                Err(e) => outcomes[i] = Some(Err(e.clone())),
            }
        }
        let mut touched = Touched::default();
        for ((name, shard), idxs) in groups {
            let handle = prepared[idxs[0]]
                .as_ref()
                .expect("grouped items are prepared")
                .handle
                .clone();
            let res = self.write_group(&handle, shard, &idxs, &items, &prepared);
            match res {
                Ok((results, end, gen)) => {
                    for (i, r) in idxs.iter().zip(results) {
                        outcomes[*i] = Some(r);
                    }
                    touched.wal_end = touched.wal_end.max(end);
                    touched.shards.insert((name, shard), (handle, gen));
                }
                Err(e) => idxs
                    .iter()
                    .for_each(|i| outcomes[*i] = Some(Err(e.clone()))),
            }
        }
        let results = items
            .into_iter()
            .zip(prepared)
            .zip(outcomes)
            .map(|((item, p), outcome)| item_result(item, p, outcome))
            .collect();
        (results, touched)
    }

    #[allow(clippy::type_complexity)]
    fn write_group(
        &self,
        handle: &Arc<IndexHandle>,
        shard: u16,
        idxs: &[usize],
        items: &[WriteItem],
        prepared: &[EngineResult<Prepared>],
    ) -> EngineResult<(Vec<EngineResult<Outcome>>, u64, u64)> {
        let mut updaters: Vec<Box<dyn FnMut(Option<&[u8]>) -> EngineResult<Update> + '_>> =
            Vec::new();
        for &i in idxs {
            if let (Action::Update, Ok(p)) = (items[i].action, &prepared[i]) {
                let body = items[i].update.clone().unwrap_or_default();
                let h = handle.clone();
                let id = p.id.clone();
                let routing = items[i].routing.clone();
                updaters.push(Box::new(move |cur| {
                    run_update(&h, &id, routing.as_deref(), &body, cur)
                }));
            }
        }
        let mut upd = updaters.iter_mut();
        let mut ops = Vec::with_capacity(idxs.len());
        for &i in idxs {
            let p = prepared[i].as_ref().expect("grouped items are prepared");
            let item = &items[i];
            ops.push(match item.action {
                Action::Index | Action::Create => ShardOp::Index {
                    id: &p.id,
                    source: &item.source,
                    doc: p.doc.as_ref().expect("mapped"),
                    create: item.action == Action::Create,
                    cond: item.cond,
                },
                Action::Delete => ShardOp::Delete {
                    id: &p.id,
                    cond: item.cond,
                },
                Action::Update => ShardOp::Update {
                    id: &p.id,
                    cond: item.cond,
                    updater: upd.next().expect("one updater per update").as_mut(),
                },
            });
        }
        let mut out = Vec::with_capacity(idxs.len());
        let (end, gen) = handle.shards[shard as usize].write(&self.wal, ops, &mut out)?;
        Ok((out, end, gen))
    }

    /// Makes a batch durable (WAL sync) and applies the refresh policy.
    pub fn finish(&self, touched: &Touched, refresh: RefreshPolicy) -> EngineResult<()> {
        self.wal.sync(touched.wal_end)?;
        for ((_, shard), (handle, gen)) in &touched.shards {
            let s = &handle.shards[*shard as usize];
            match refresh {
                RefreshPolicy::None => {}
                RefreshPolicy::Immediate => {
                    s.refresh(&self.wal)?;
                }
                RefreshPolicy::WaitFor => {
                    let periodic = handle.settings().refresh_ms >= 0;
                    if !periodic || !s.wait_refreshed(*gen, Duration::from_secs(60)) {
                        s.refresh(&self.wal)?;
                    }
                }
            }
        }
        Ok(())
    }
}

fn item_result(
    item: WriteItem,
    p: EngineResult<Prepared>,
    outcome: Option<EngineResult<Outcome>>,
) -> ItemResult {
    let outcome = outcome.unwrap_or_else(|| Err(EngineError::internal("write not applied")));
    let outcome = outcome.map_err(|e| match e {
        EngineError::VersionConflict { id, reason, .. } => EngineError::VersionConflict {
            index: item.index.clone(),
            id,
            reason,
        },
        other => other,
    });
    match p {
        Ok(p) => ItemResult {
            index: p.handle.name.clone(),
            type_name: p.handle.type_name(),
            id: p.id,
            copies: 1 + p.handle.settings().replicas,
            outcome,
        },
        Err(_) => ItemResult {
            type_name: item.type_name.clone().unwrap_or_else(|| "_doc".into()),
            index: item.index,
            id: item.id.unwrap_or_default(),
            copies: 1,
            outcome,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deep_merge_merges_objects_and_replaces_the_rest() {
        let mut a = json!({"a": {"x": 1, "y": 2}, "b": [1, 2], "c": 1})
            .as_object()
            .unwrap()
            .clone();
        let b = json!({"a": {"y": 3, "z": 4}, "b": [3], "d": true})
            .as_object()
            .unwrap()
            .clone();
        deep_merge(&mut a, &b);
        assert_eq!(
            Value::Object(a),
            json!({"a": {"x": 1, "y": 3, "z": 4}, "b": [3], "c": 1, "d": true})
        );
    }

    #[test]
    fn invalid_sources_are_mapper_parsing_errors() {
        let e = parse_source(b"{nope").unwrap_err();
        assert_eq!(e.body().kind, "mapper_parsing_exception");
        assert_eq!(e.body().caused_by.unwrap().0, "json_parse_exception");
        let e = parse_source(b"[1]").unwrap_err();
        assert_eq!(e.status(), 400);
    }
}
