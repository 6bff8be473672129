//! One index: its name and uuid, settings, single mapping type, mapping (grown dynamically
//! and persisted before any document that needed it is acknowledged), and its shards.
//!
//! Owns `index.json` (written atomically: temp file, fsync, rename, fsync of the directory).
//! Must not touch: the WAL's internals, HTTP, other indices.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::settings::IndexSettings;
use super::shard::{Shard, ShardStats, WriterOptions};
use super::wal::Wal;
use crate::error::{EngineError, EngineResult};
use crate::mapping::{map_document, IndexedDoc, Mapping};

/// What a create-index request asks for.
#[derive(Debug, Default)]
pub struct CreateIndex {
    pub settings: IndexSettings,
    pub mapping: Mapping,
    pub type_name: Option<String>,
    pub aliases: Map<String, Value>,
}

#[derive(Debug, Clone)]
struct Meta {
    settings: IndexSettings,
    type_name: Option<String>,
    aliases: Map<String, Value>,
    closed: bool,
}

/// Document counts and sizes of an index (primaries).
#[derive(Debug, Clone, Copy, Default)]
pub struct IndexStats {
    pub docs: u64,
    pub deleted: u64,
    pub bytes: u64,
}

/// One open index.
pub struct IndexHandle {
    pub name: String,
    pub uuid: Arc<str>,
    pub created_ms: i64,
    dir: PathBuf,
    meta: Mutex<Meta>,
    mapping: RwLock<Arc<Mapping>>,
    persist: Mutex<()>,
    pub shards: Vec<Shard>,
    last_refresh: Mutex<Instant>,
}

impl std::fmt::Debug for IndexHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexHandle")
            .field("name", &self.name)
            .field("uuid", &self.uuid)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes `bytes` to `path` atomically and durably.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(parent) = path.parent() {
        std::fs::File::open(parent)?.sync_all()?;
    }
    Ok(())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl IndexHandle {
    /// Creates a new index in `dir` (shards first, `index.json` last).
    pub fn create(
        dir: &Path,
        name: &str,
        uuid: &str,
        req: CreateIndex,
        opts: WriterOptions,
    ) -> EngineResult<IndexHandle> {
        std::fs::create_dir_all(dir)?;
        let meta = Meta {
            settings: req.settings,
            type_name: req.type_name,
            aliases: req.aliases,
            closed: false,
        };
        let handle = Self::assemble(dir, name, uuid, now_ms(), meta, req.mapping, opts)?;
        handle.save(&lock(&handle.meta).clone(), &handle.mapping())?;
        Ok(handle)
    }

    /// Opens an index from `dir/index.json`.
    pub fn open(dir: &Path, opts: WriterOptions) -> EngineResult<IndexHandle> {
        let bytes = std::fs::read(dir.join("index.json"))?;
        let v: Value = serde_json::from_slice(&bytes).map_err(EngineError::internal)?;
        let name = v["name"]
            .as_str()
            .ok_or_else(|| EngineError::internal("index.json without name"))?;
        let uuid = v["uuid"]
            .as_str()
            .ok_or_else(|| EngineError::internal("index.json without uuid"))?;
        let settings = IndexSettings::from_persisted(&v["settings"]);
        // settings kept by an engine that did not apply analysis yet may not resolve:
        // such an index reads (as it was indexed) with the built-in analyzers
        let analysis = crate::analysis::from_settings(&settings.extra).unwrap_or_default();
        let mapping = Mapping::from_persisted(&v["mapping"], &Arc::new(analysis))
            .map_err(EngineError::internal)?;
        let meta = Meta {
            settings,
            type_name: v["type"].as_str().map(String::from),
            aliases: v["aliases"].as_object().cloned().unwrap_or_default(),
            closed: v["closed"].as_bool().unwrap_or(false),
        };
        let created = v["created"].as_i64().unwrap_or(0);
        Self::assemble(dir, name, uuid, created, meta, mapping, opts)
    }

    fn assemble(
        dir: &Path,
        name: &str,
        uuid: &str,
        created_ms: i64,
        meta: Meta,
        mapping: Mapping,
        opts: WriterOptions,
    ) -> EngineResult<IndexHandle> {
        let uuid: Arc<str> = Arc::from(uuid);
        let shards = (0..meta.settings.shards as u16)
            .map(|n| Shard::open(&dir.join(n.to_string()), (uuid.clone(), n), &mapping, opts))
            .collect::<EngineResult<Vec<_>>>()?;
        Ok(IndexHandle {
            name: name.to_string(),
            uuid,
            created_ms,
            dir: dir.to_path_buf(),
            meta: Mutex::new(meta),
            mapping: RwLock::new(Arc::new(mapping)),
            persist: Mutex::new(()),
            shards,
            last_refresh: Mutex::new(Instant::now()),
        })
    }

    fn save(&self, meta: &Meta, mapping: &Mapping) -> EngineResult<()> {
        let v = json!({
            "name": self.name, "uuid": &*self.uuid, "created": self.created_ms,
            "settings": meta.settings.to_persisted(), "type": meta.type_name,
            "aliases": meta.aliases, "mapping": mapping.to_persisted(),
            "closed": meta.closed,
        });
        let bytes = serde_json::to_vec_pretty(&v).map_err(EngineError::internal)?;
        write_atomic(&self.dir.join("index.json"), &bytes)?;
        Ok(())
    }

    /// The index directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The current mapping.
    pub fn mapping(&self) -> Arc<Mapping> {
        self.mapping
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Current settings.
    pub fn settings(&self) -> IndexSettings {
        lock(&self.meta).settings.clone()
    }

    /// The index's aliases: name -> definition.
    pub fn aliases(&self) -> Map<String, Value> {
        lock(&self.meta).aliases.clone()
    }

    /// Replaces the aliases (durably).
    pub fn set_aliases(&self, aliases: Map<String, Value>) -> EngineResult<()> {
        let _g = lock(&self.persist);
        let mut meta = lock(&self.meta).clone();
        meta.aliases = aliases;
        self.save(&meta, &self.mapping())?;
        *lock(&self.meta) = meta;
        Ok(())
    }

    /// Whether the index is open (`_close` / `_open`).
    pub fn is_open(&self) -> bool {
        !lock(&self.meta).closed
    }

    /// Opens or closes the index (durably).
    pub fn set_open(&self, open: bool) -> EngineResult<()> {
        let _g = lock(&self.persist);
        let mut meta = lock(&self.meta).clone();
        meta.closed = !open;
        self.save(&meta, &self.mapping())?;
        *lock(&self.meta) = meta;
        Ok(())
    }

    /// The mapping type documents are reported under (`_doc` when none was named).
    pub fn type_name(&self) -> String {
        lock(&self.meta)
            .type_name
            .clone()
            .unwrap_or_else(|| "_doc".into())
    }

    /// Whether a mapping type was ever named or fields mapped (for `GET _mapping`).
    pub fn has_type(&self) -> bool {
        lock(&self.meta).type_name.is_some() || !self.mapping().is_empty()
    }

    /// Maps a document, installing (durably) any dynamic fields it adds.
    pub fn map_document(&self, src: &Map<String, Value>, id: &str) -> EngineResult<IndexedDoc> {
        for _ in 0..8 {
            let m = self.mapping();
            let (doc, grown) = map_document(&self.name, &m, src, id)?;
            let Some(grown) = grown else { return Ok(doc) };
            if self.install_mapping(&m, grown)? {
                return Ok(doc);
            }
        }
        Err(EngineError::internal(
            "the mapping kept changing while a document was mapped",
        ))
    }

    /// Merges an explicit mapping update (`PUT _mapping`).
    pub fn put_mapping(&self, incoming: &Mapping) -> EngineResult<()> {
        for _ in 0..8 {
            let m = self.mapping();
            let merged = m.merged(incoming)?;
            if self.install_mapping(&m, merged)? {
                return Ok(());
            }
        }
        Err(EngineError::internal("the mapping kept changing"))
    }

    fn install_mapping(&self, expected: &Arc<Mapping>, new: Mapping) -> EngineResult<bool> {
        let _g = lock(&self.persist);
        if !Arc::ptr_eq(&self.mapping(), expected) {
            return Ok(false);
        }
        let meta = lock(&self.meta).clone();
        self.save(&meta, &new)?;
        let new = Arc::new(new);
        *self.mapping.write().unwrap_or_else(|p| p.into_inner()) = new.clone();
        for s in &self.shards {
            s.update_tokenizers(&new);
        }
        Ok(true)
    }

    /// Checks a write's mapping type: one type per index, recorded on first use.
    pub fn accept_type(&self, t: Option<&str>) -> EngineResult<()> {
        let Some(t) = t.filter(|t| *t != "_doc") else {
            return Ok(());
        };
        if t.starts_with('_') {
            return Err(EngineError::IllegalArgument(format!(
                "mapping type name [{t}] can't start with '_' unless it is called [_doc]"
            )));
        }
        let _g = lock(&self.persist);
        let mut meta = lock(&self.meta).clone();
        match &meta.type_name {
            Some(x) if x == t => Ok(()),
            Some(x) => Err(EngineError::IllegalArgument(format!(
                "Rejecting mapping update to [{}] as the final mapping would have more than 1 type: [{x}, {t}]",
                self.name
            ))),
            None => {
                meta.type_name = Some(t.to_string());
                self.save(&meta, &self.mapping())?;
                *lock(&self.meta) = meta;
                Ok(())
            }
        }
    }

    /// Applies dynamic settings (`PUT _settings`).
    pub fn update_settings(
        &self,
        flat: &std::collections::BTreeMap<String, Value>,
    ) -> EngineResult<()> {
        let _g = lock(&self.persist);
        let mut meta = lock(&self.meta).clone();
        meta.settings.apply(flat, false)?;
        self.save(&meta, &self.mapping())?;
        *lock(&self.meta) = meta;
        Ok(())
    }

    /// The shard holding `routing` (the id unless a routing value was given).
    pub fn shard_for(&self, routing: &str) -> &Shard {
        &self.shards[self.shard_num_for(routing) as usize]
    }

    /// The number of the shard holding `routing`.
    pub fn shard_num_for(&self, routing: &str) -> u16 {
        super::routing::shard_for(routing, self.shards.len() as u32)
    }

    /// Refreshes every dirty shard.
    pub fn refresh(&self, wal: &Wal) -> EngineResult<()> {
        for s in &self.shards {
            s.refresh(wal)?;
        }
        *lock(&self.last_refresh) = Instant::now();
        Ok(())
    }

    /// Whether the periodic refresh is due.
    pub fn refresh_due(&self) -> bool {
        let ms = lock(&self.meta).settings.refresh_ms;
        ms >= 0
            && lock(&self.last_refresh).elapsed().as_millis() as i64 >= ms
            && self.shards.iter().any(Shard::is_dirty)
    }

    /// Counts and sizes summed over shards.
    pub fn stats(&self) -> IndexStats {
        self.shards
            .iter()
            .map(Shard::stats)
            .fold(IndexStats::default(), |a, s: ShardStats| IndexStats {
                docs: a.docs + s.docs,
                deleted: a.deleted + s.deleted,
                bytes: a.bytes + s.bytes,
            })
    }

    /// Health on a single node: replicas cannot be assigned, so any makes the index yellow.
    pub fn health(&self) -> &'static str {
        if lock(&self.meta).settings.replicas > 0 {
            "yellow"
        } else {
            "green"
        }
    }

    /// Mappings as `GET _mapping` shows them: under the type unless `typed` is false.
    pub fn mappings_json(&self, typed: bool) -> Value {
        let m = self.mapping().to_json();
        if !typed {
            return m;
        }
        if !self.has_type() {
            return json!({});
        }
        let mut out = Map::new();
        out.insert(self.type_name(), m);
        Value::Object(out)
    }
}
