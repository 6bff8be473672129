//! The store: the data directory, the registry of open indices, index creation and
//! deletion, index expressions (`a,b*,-c`), WAL replay on start, the periodic refresher,
//! and the document write pipeline (`write`).
//!
//! Layout of the data directory:
//! ```text
//! engine.lock                 held (flock) while an engine runs on the directory
//! wal/wal-<gen>.log           the write-ahead log (see `wal`)
//! indices/<uuid>/index.json   name, settings, type, aliases, mapping (+ text slots)
//! indices/<uuid>/<shard>/     one tantivy index per primary shard
//! ```
//! Must not touch: HTTP, request parsing, response shapes.

pub mod cluster_settings;
pub mod index;
pub mod lookup;
pub mod ops;
pub mod routing;
pub mod schema;
pub mod settings;
pub mod shard;
pub mod templates;
pub mod wal;
mod walfile;
mod write;

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use index::{CreateIndex, IndexHandle};
use shard::WriterOptions;
use wal::{OwnedRecord, Wal, WalOp};

pub use write::{Action, ItemResult, RefreshPolicy, Touched, UpdateBody, WriteItem};

use super::error::{EngineError, EngineResult};
use super::names::{validate_index_name, AutoCreate};
pub use super::resolve::Options;
use super::resolve::{resolve_expression, write_target, IndexEntry};

/// An index an expression resolved to, with the filters of the filtered aliases it was
/// reached through (None: reached unfiltered).
pub type Filtered = (Arc<IndexHandle>, Option<Vec<serde_json::Value>>);

/// All indices of one data directory.
pub struct Store {
    root: PathBuf,
    indices: RwLock<BTreeMap<String, Arc<IndexHandle>>>,
    pub wal: Wal,
    admin: Mutex<()>,
    opts: WriterOptions,
    /// `action.auto_create_index` as started (`--auto-create-index`), and as the cluster
    /// settings set it since (`_cluster/settings`, persisted then transient).
    auto_create_default: AutoCreate,
    pub cluster_settings: cluster_settings::ClusterSettings,
    pub templates: templates::Templates,
    _lock: File,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("root", &self.root).finish()
    }
}

fn read_map<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

fn write_map<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

/// Takes an exclusive, non-blocking `flock` on `f` (released when the process dies).
fn lock_exclusive(f: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock(2) on a descriptor we own and keep open for as long as the lock is
    // meant to last (the store holds the File); it reads and writes no memory of ours.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn open_indices(
    dir: &Path,
    opts: WriterOptions,
) -> EngineResult<BTreeMap<String, Arc<IndexHandle>>> {
    let mut out = BTreeMap::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if !path.is_dir() {
            continue;
        }
        if path.extension().is_some_and(|e| e == "deleted") || !path.join("index.json").exists() {
            // a deletion or a creation cut short by a crash
            fs::remove_dir_all(&path)?;
            continue;
        }
        let handle = IndexHandle::open(&path, opts)?;
        out.insert(handle.name.clone(), Arc::new(handle));
    }
    Ok(out)
}

fn replay_record(
    by_uuid: &HashMap<String, Arc<IndexHandle>>,
    rec: OwnedRecord,
) -> EngineResult<()> {
    let Some(idx) = by_uuid.get(&rec.index_uuid) else {
        return Ok(()); // index deleted since
    };
    let Some(shard) = idx.shards.get(rec.shard as usize) else {
        return Ok(());
    };
    if rec.seq_no <= shard.committed_seq() {
        return Ok(());
    }
    match rec.op {
        WalOp::Index => {
            let src: serde_json::Map<String, serde_json::Value> =
                serde_json::from_slice(&rec.source).map_err(EngineError::internal)?;
            let mut doc = idx.map_document(&src, &rec.id)?;
            doc.routing = rec.routing.clone();
            shard.replay(&rec, Some(&doc))
        }
        WalOp::Delete => shard.replay(&rec, None),
    }
}

impl Store {
    /// Opens the data directory: loads indices, replays the WAL, commits, starts a new log.
    pub fn open(root: &Path, opts: WriterOptions, auto_create: AutoCreate) -> EngineResult<Store> {
        fs::create_dir_all(root.join("indices"))?;
        let lockf = File::create(root.join("engine.lock"))?;
        lock_exclusive(&lockf).map_err(|e| {
            EngineError::internal(format!(
                "data directory {} is in use by another engine ({e})",
                root.display()
            ))
        })?;
        let indices = open_indices(&root.join("indices"), opts)?;
        let by_uuid: HashMap<String, Arc<IndexHandle>> = indices
            .values()
            .map(|i| (i.uuid.to_string(), i.clone()))
            .collect();
        let mut failures = 0u64;
        let info = wal::replay(&root.join("wal"), &mut |rec| {
            if let Err(e) = replay_record(&by_uuid, rec) {
                failures += 1;
                eprintln!("searchgate engine: skipping a log record on replay: {e}");
            }
            Ok(())
        })?;
        if info.records > 0 || info.torn {
            eprintln!(
                "searchgate engine: replayed {} log records ({} skipped){}",
                info.records,
                failures,
                if info.torn {
                    ", log ended in a cut record"
                } else {
                    ""
                }
            );
        }
        let wal = Wal::start(&root.join("wal"), info.last_gen + 1)?;
        for idx in indices.values() {
            idx.refresh(&wal)?;
        }
        for f in &info.files {
            fs::remove_file(f)?;
        }
        let templates = templates::Templates::open(root)?;
        Ok(Store {
            templates,
            root: root.to_path_buf(),
            indices: RwLock::new(indices),
            wal,
            admin: Mutex::new(()),
            opts,
            cluster_settings: cluster_settings::ClusterSettings::open(root)?,
            auto_create_default: auto_create,
            _lock: lockf,
        })
    }

    /// The open index named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<IndexHandle>> {
        read_map(&self.indices).get(name).cloned()
    }

    /// The index `name`, or 404.
    pub fn require(&self, name: &str) -> EngineResult<Arc<IndexHandle>> {
        self.get(name)
            .ok_or_else(|| EngineError::IndexNotFound(name.to_string()))
    }

    /// The one open index a single-document read names: the index itself, or the only
    /// index of an alias (Elasticsearch refuses an alias of several indices).
    pub fn for_read(&self, name: &str) -> EngineResult<Arc<IndexHandle>> {
        let universe = self.universe();
        let target = if universe.iter().any(|i| i.name == name) {
            name.to_string()
        } else {
            let members: Vec<&str> = universe
                .iter()
                .filter(|i| i.aliases.contains_key(name))
                .map(|i| i.name.as_str())
                .collect();
            match members.as_slice() {
                [] => return Err(EngineError::IndexNotFound(name.to_string())),
                [one] => one.to_string(),
                many => {
                    return Err(EngineError::IllegalArgument(format!(
                        "alias [{name}] has more than one index associated with it [{}], can't execute a single index op",
                        many.join(", ")
                    )))
                }
            }
        };
        let h = self.require(&target)?;
        if !h.is_open() {
            return Err(crate::resolve::closed(&target));
        }
        Ok(h)
    }

    /// Every open index, by name.
    pub fn all(&self) -> Vec<Arc<IndexHandle>> {
        read_map(&self.indices).values().cloned().collect()
    }

    /// Creates an index (`PUT /<index>`).
    pub fn create(&self, name: &str, req: CreateIndex) -> EngineResult<Arc<IndexHandle>> {
        validate_index_name(name)?;
        let _g = self.admin.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(existing) = self.get(name) {
            return Err(EngineError::IndexExists {
                name: name.to_string(),
                uuid: existing.uuid.to_string(),
            });
        }
        self.check_alias_names(name, &req)?;
        let uuid = super::names::generate_uuid();
        let dir = self.root.join("indices").join(&uuid);
        let handle = match IndexHandle::create(&dir, name, &uuid, req, self.opts) {
            Ok(h) => Arc::new(h),
            Err(e) => {
                let _ = fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        write_map(&self.indices).insert(name.to_string(), handle.clone());
        Ok(handle)
    }

    /// A new index `name` with the aliases of `req` may not share a name with an alias
    /// or an index, as Elasticsearch 7.10 refuses: an index named like an existing alias
    /// (`invalid_index_name_exception`: a write to the alias's name would otherwise
    /// create an index beside it, and auto-creation did), an alias named like an index
    /// (`invalid_alias_name_exception`), the index itself included.
    fn check_alias_names(&self, name: &str, req: &CreateIndex) -> EngineResult<()> {
        let universe = self.universe();
        if universe.iter().any(|i| i.aliases.contains_key(name)) {
            return Err(EngineError::InvalidIndexName {
                name: name.to_string(),
                reason: "already exists as alias".into(),
            });
        }
        for alias in req.aliases.keys() {
            if alias == name || universe.iter().any(|i| &i.name == alias) {
                return Err(EngineError::InvalidAliasName(alias.clone()));
            }
        }
        Ok(())
    }

    /// Creates an index from a create-index body, with the matching templates applied.
    pub fn create_from_body(
        &self,
        name: &str,
        body: Option<&serde_json::Value>,
    ) -> EngineResult<Arc<IndexHandle>> {
        validate_index_name(name)?;
        let req = self.templates.create_request(name, body)?;
        self.create(name, req)
    }

    /// The index a write targets: existing (or the write index of an alias), or created
    /// when `action.auto_create_index` allows it. A closed index refuses writes.
    pub fn for_write(&self, name: &str) -> EngineResult<Arc<IndexHandle>> {
        self.write_index(name, true)
    }

    /// The index a write targets (an alias's write index), closed and blocked indices
    /// refused; a missing one is created when `create` is set and the name may be.
    pub fn write_index(&self, name: &str, create: bool) -> EngineResult<Arc<IndexHandle>> {
        if let Some(target) = write_target(&self.universe(), name)? {
            let h = self.require(&target)?;
            if !h.is_open() {
                return Err(crate::resolve::closed(&target));
            }
            if let Some(block) = h.settings().write_block() {
                return Err(EngineError::Blocked(format!(
                    "index [{target}] blocked by: [{block}];"
                )));
            }
            return Ok(h);
        }
        let auto = self.auto_create();
        if !create {
            return Err(EngineError::IndexNotFound(name.to_string()));
        }
        if !auto.allows(name) {
            return Err(EngineError::IndexNotAutoCreated(name.to_string()));
        }
        match self.create_from_body(name, None) {
            Err(EngineError::IndexExists { .. }) => self.require(name),
            other => other,
        }
    }

    /// `action.auto_create_index` as the engine was started (`--auto-create-index`).
    pub fn default_auto_create(&self) -> AutoCreate {
        self.auto_create_default.clone()
    }

    /// `action.auto_create_index` in force: transient, then persistent, then the default.
    pub fn auto_create(&self) -> AutoCreate {
        self.cluster_settings
            .auto_create()
            .unwrap_or_else(|| self.auto_create_default.clone())
    }

    /// Deletes an index and its data.
    pub fn delete(&self, name: &str) -> EngineResult<()> {
        let _g = self.admin.lock().unwrap_or_else(|p| p.into_inner());
        let handle = write_map(&self.indices)
            .remove(name)
            .ok_or_else(|| EngineError::IndexNotFound(name.to_string()))?;
        self.wal.forget_index(&handle.uuid);
        let dir = handle.dir().to_path_buf();
        let trash = dir.with_extension("deleted");
        fs::rename(&dir, &trash)?;
        File::open(self.root.join("indices"))?.sync_all()?;
        drop(handle);
        fs::remove_dir_all(&trash)?;
        Ok(())
    }

    /// Every index as the expression resolver sees it.
    pub fn universe(&self) -> Vec<IndexEntry> {
        read_map(&self.indices)
            .values()
            .map(|h| IndexEntry {
                name: h.name.clone(),
                open: h.is_open(),
                hidden: h.settings().hidden(),
                aliases: h.aliases(),
            })
            .collect()
    }

    /// Resolves an index expression (names, aliases, `*` wildcards, `-` exclusions, `_all`)
    /// with `opts` (the endpoint's defaults, or what its parameters asked), with the filters
    /// of the filtered aliases each index was reached through.
    pub fn resolve_filtered(&self, expr: &str, opts: Options) -> EngineResult<Vec<Filtered>> {
        let resolved = resolve_expression(expr, &self.universe(), opts)?;
        let map = read_map(&self.indices);
        Ok(resolved
            .into_iter()
            .filter_map(|r| map.get(&r.index).map(|h| (h.clone(), r.filters)))
            .collect())
    }

    /// The routing values a search over `expr` uses per index (the request's `routing`,
    /// aliases' `search_routing`): `alias_routing::search_routing`.
    pub fn search_routing(
        &self,
        expr: &str,
        routing: Option<&str>,
    ) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
        crate::alias_routing::search_routing(expr, &self.universe(), routing)
    }

    /// Resolves an index expression to indices (aliases stand for their indices).
    pub fn resolve(&self, expr: &str, opts: Options) -> EngineResult<Vec<Arc<IndexHandle>>> {
        Ok(self
            .resolve_filtered(expr, opts)?
            .into_iter()
            .map(|(h, _)| h)
            .collect())
    }

    /// Commits every index (on shutdown, so that restart has nothing to replay).
    pub fn flush_all(&self) -> EngineResult<()> {
        for idx in self.all() {
            idx.refresh(&self.wal)?;
        }
        Ok(())
    }

    /// Runs periodic refreshes and closes idle writers until `stop` is set.
    pub fn run_refresher(&self, stop: &AtomicBool) {
        let mut last_idle = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
            for idx in self.all() {
                if idx.refresh_due() {
                    if let Err(e) = idx.refresh(&self.wal) {
                        eprintln!("searchgate engine: refresh of [{}] failed: {e}", idx.name);
                    }
                }
            }
            if last_idle.elapsed() > Duration::from_secs(10) {
                last_idle = Instant::now();
                for idx in self.all() {
                    for s in &idx.shards {
                        s.close_idle_writer(Duration::from_secs(60));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
