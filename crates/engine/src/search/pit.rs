//! Points in time (`POST /<indices>/_pit`, `pit` in a search body, `DELETE /_pit`): the
//! searchers of every shard of the target indices, taken when the point in time opened and
//! kept under a random id until its keep-alive runs out (each search renews it, with the
//! `keep_alive` it names). Searches over it see the indices as they were then, whatever
//! was written, deleted or refreshed since, through the filters of the filtered aliases it
//! was opened with (as Elasticsearch keeps them in the point in time).
//!
//! Owns: ids, expiry. Must not touch: HTTP, how searches run (`search_views`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tantivy::Searcher;

use super::scroll::ScrollParams;
use crate::error::{EngineError, EngineResult};
use crate::store::index::IndexHandle;
use crate::store::Filtered;

/// Random bytes in an id (32 characters of URL-safe base64).
const ID_BYTES: usize = 24;

/// One open point in time.
pub struct Pit {
    pub indices: Vec<Arc<IndexHandle>>,
    pub views: Vec<Vec<Searcher>>,
    /// Per index, the filters of the filtered aliases it was reached through (None: none).
    pub filters: Vec<Option<Vec<serde_json::Value>>>,
    /// When it opened, in milliseconds since the epoch (OpenSearch's `creation_time`).
    pub created_ms: u64,
    deadline: AtomicU64,
    /// The keep-alive last asked for, in milliseconds (OpenSearch's `keep_alive`).
    keep_alive_ms: AtomicU64,
}

/// One open point in time as OpenSearch lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PitInfo {
    pub id: String,
    pub created_ms: u64,
    pub keep_alive_ms: u64,
}

impl std::fmt::Debug for Pit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pit")
            .field("indices", &self.indices.len())
            .finish()
    }
}

/// The open points in time of the engine.
#[derive(Debug)]
pub struct Pits {
    map: Mutex<HashMap<String, Arc<Pit>>>,
    base: Instant,
}

impl Default for Pits {
    fn default() -> Self {
        Pits {
            map: Mutex::new(HashMap::new()),
            base: Instant::now(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn missing(id: &str) -> EngineError {
    EngineError::ScrollMissing(id.to_string())
}

impl Pits {
    fn now(&self) -> u64 {
        self.base.elapsed().as_millis() as u64
    }

    /// Opens a point in time over `targets` (indices, with their alias filters); returns
    /// its id.
    pub fn open(&self, targets: Vec<Filtered>, keep_alive: ScrollParams) -> String {
        self.open_pit(targets, keep_alive).0
    }

    /// Opens a point in time; returns its id and the point in time.
    pub fn open_pit(&self, targets: Vec<Filtered>, keep_alive: ScrollParams) -> (String, Arc<Pit>) {
        use base64::Engine as _;
        let (indices, filters): (Vec<_>, Vec<_>) = targets.into_iter().unzip();
        let views = super::current_views(&indices);
        let bytes: [u8; ID_BYTES] = rand::random();
        let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let keep_ms = super::scroll::millis(keep_alive.keep_alive);
        let deadline = self.now().saturating_add(keep_ms);
        let created_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, super::scroll::millis);
        let pit = Arc::new(Pit {
            indices,
            views,
            filters,
            created_ms,
            deadline: AtomicU64::new(deadline),
            keep_alive_ms: AtomicU64::new(keep_ms),
        });
        lock(&self.map).insert(id.clone(), pit.clone());
        (id, pit)
    }

    /// The open points in time (expired ones are dropped), by creation then id.
    pub fn list(&self) -> Vec<PitInfo> {
        let now = self.now();
        let mut map = lock(&self.map);
        map.retain(|_, p| p.deadline.load(Ordering::Relaxed) > now);
        let mut out: Vec<PitInfo> = map
            .iter()
            .map(|(id, p)| PitInfo {
                id: id.clone(),
                created_ms: p.created_ms,
                keep_alive_ms: p.keep_alive_ms.load(Ordering::Relaxed),
            })
            .collect();
        out.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
        out
    }

    /// The ids of every open point in time.
    pub fn ids(&self) -> Vec<String> {
        self.list().into_iter().map(|p| p.id).collect()
    }

    /// The point in time `id`, its keep-alive renewed (with `keep_alive` when given).
    pub fn get(&self, id: &str, keep_alive: Option<ScrollParams>) -> EngineResult<Arc<Pit>> {
        let now = self.now();
        let mut map = lock(&self.map);
        let pit = map.get(id).cloned().ok_or_else(|| missing(id))?;
        if pit.deadline.load(Ordering::Relaxed) <= now {
            map.remove(id);
            return Err(missing(id));
        }
        if let Some(k) = keep_alive {
            let ms = super::scroll::millis(k.keep_alive);
            pit.deadline
                .store(now.saturating_add(ms), Ordering::Relaxed);
            pit.keep_alive_ms.store(ms, Ordering::Relaxed);
        }
        Ok(pit)
    }

    /// Closes the given points in time; returns how many shard contexts they held (what
    /// Elasticsearch reports as `num_freed`).
    pub fn close(&self, ids: &[String]) -> usize {
        let now = self.now();
        let mut map = lock(&self.map);
        ids.iter()
            .filter_map(|id| map.remove(id))
            .filter(|p| p.deadline.load(Ordering::Relaxed) > now)
            .map(|p| p.views.iter().map(Vec::len).sum::<usize>())
            .sum()
    }

    /// Closes each of `ids`: whether it was open (OpenSearch's `successful`).
    pub fn close_each(&self, ids: &[String]) -> Vec<bool> {
        let now = self.now();
        let mut map = lock(&self.map);
        ids.iter()
            .map(|id| {
                map.remove(id)
                    .is_some_and(|p| p.deadline.load(Ordering::Relaxed) > now)
            })
            .collect()
    }

    /// Adds the shard contexts of unexpired points in time to `out`, by index uuid.
    pub fn count_by_index(&self, out: &mut HashMap<Arc<str>, usize>) {
        let now = self.now();
        for p in lock(&self.map).values() {
            if p.deadline.load(Ordering::Relaxed) > now {
                for (h, views) in p.indices.iter().zip(&p.views) {
                    *out.entry(h.uuid.clone()).or_default() += views.len();
                }
            }
        }
    }

    /// Drops expired points in time; returns how many.
    pub fn sweep(&self) -> usize {
        let now = self.now();
        let mut map = lock(&self.map);
        let before = map.len();
        map.retain(|_, p| p.deadline.load(Ordering::Relaxed) > now);
        before - map.len()
    }

    /// Open points in time.
    pub fn len(&self) -> usize {
        lock(&self.map).len()
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
