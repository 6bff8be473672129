//! Scroll contexts (`_search?scroll=`, `_search/scroll`, clear scroll), as Elasticsearch 7.10
//! keeps them: server-side, in memory, each under an unguessable random id.
//!
//! A context holds the compiled query, one tantivy `Searcher` per shard taken when the
//! scroll started (a point-in-time view: later writes and refreshes do not change what it
//! returns), the full hit count, and a cursor (`scroll_page`): never the hits themselves.
//! It expires `keep_alive` after its last use; every scroll call renews it. Expired contexts
//! are dropped by [`Scrolls::sweep`] (the engine's reaper thread, and before each new scroll)
//! or when their id is next used.
//!
//! Limits, as Elasticsearch's defaults: at most [`MAX_OPEN_SCROLL_CONTEXT`] open shard
//! contexts (a scroll over two shards counts two; beyond: 500 `exception` inside
//! `search_phase_execution_exception`), keep-alive at most 24h, `size` at most the index's
//! `max_result_window`, no `from`.
//!
//! Owns: ids, expiry, limits, the scroll request's validation and response shape.
//! Must not touch: HTTP, the write path, how a page is found (`scroll_page`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tantivy::query::EnableScoring;
use tantivy::Searcher;

use super::render::{render_page, Page};
use super::scroll_page::{next_page, Cursor, View};
use super::sort::{is_score_order, Key};
use super::{aggs, merge_keys, now_ms, plan, Plan, SearchRequest};
use crate::error::{EngineError, EngineResult};
use crate::store::index::IndexHandle;
use searchgate_core::params;

/// Open shard contexts allowed at once (Elasticsearch's `search.max_open_scroll_context`).
pub const MAX_OPEN_SCROLL_CONTEXT: usize = 500;
/// Random bytes in an id (192 bits; 32 characters of URL-safe base64).
const ID_BYTES: usize = 24;

/// The scroll parameters of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScrollParams {
    pub keep_alive: Duration,
}

impl ScrollParams {
    /// Reads a keep-alive such as `1m`, `30s`, `500ms` (at most `search.max_keep_alive`,
    /// 24h) with the reader the edge shares (`searchgate_core::params`): both refuse the
    /// same values with the same 400, and read the rest as the same duration (issue 25). A
    /// negative keep-alive, which Elasticsearch accepts, expires the context at once.
    pub fn parse(s: &str) -> EngineResult<ScrollParams> {
        Self::parse_named(s, "scroll")
    }

    /// [`ScrollParams::parse`] of parameter `name` (`scroll`, `keep_alive`).
    pub fn parse_named(s: &str, name: &str) -> EngineResult<ScrollParams> {
        let t = params::parse_time(s, name)?;
        params::check_keep_alive(&t, &params::MAX_KEEP_ALIVE)?;
        Ok(ScrollParams {
            keep_alive: t.to_duration(),
        })
    }
}

/// `d` in whole milliseconds, saturating (a keep-alive is at most a day once checked).
pub(super) fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One open scroll.
struct Context {
    plans: Vec<Plan>,
    searchers: Vec<Vec<Searcher>>,
    req: SearchRequest,
    keys: Vec<Key>,
    total: u64,
    cursor: Cursor,
}

struct Entry {
    /// Milliseconds after [`Scrolls::base`] when it expires.
    deadline: AtomicU64,
    keep_alive: AtomicU64,
    shards: usize,
    /// Its shard contexts by index uuid (what `_stats/search` reports per index).
    per_index: Vec<(Arc<str>, usize)>,
    ctx: Mutex<Context>,
}

/// The open scroll contexts of the engine.
#[derive(Debug)]
pub struct Scrolls {
    map: Mutex<HashMap<String, Arc<Entry>>>,
    max_open: usize,
    base: Instant,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("shards", &self.shards)
            .finish()
    }
}

impl Default for Scrolls {
    fn default() -> Self {
        Scrolls::new(MAX_OPEN_SCROLL_CONTEXT)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn missing(id: &str) -> EngineError {
    EngineError::ScrollMissing(id.to_string())
}

/// Checks the form of an id: anything else is Elasticsearch's "Cannot parse scroll id".
fn check_id(id: &str) -> EngineResult<()> {
    use base64::Engine as _;
    let ok = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(id)
        .is_ok_and(|b| b.len() == ID_BYTES);
    if ok {
        Ok(())
    } else {
        Err(EngineError::IllegalArgument(
            "Cannot parse scroll id".into(),
        ))
    }
}

fn new_id() -> String {
    use base64::Engine as _;
    let bytes: [u8; ID_BYTES] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Validation of a search that opens a scroll (Elasticsearch's `SearchRequest.validate`).
fn validate(indices: &[Arc<IndexHandle>], req: &SearchRequest) -> EngineResult<()> {
    let mut errors = Vec::new();
    if req.from > 0 {
        errors.push("using [from] is not allowed in a scroll context".to_string());
    }
    if req.size == 0 {
        errors.push("[size] cannot be [0] in a scroll context".to_string());
    }
    if req
        .track_total
        .is_some_and(|t| t != super::request::TrackTotal::Accurate)
    {
        errors.push("disabling [track_total_hits] is not allowed in a scroll context".to_string());
    }
    if req.pit.is_some() {
        errors.push("using [point in time] is not allowed in a scroll context".to_string());
    }
    if req.search_after.is_some() {
        errors.push("[search_after] cannot be used in a scroll context".to_string());
    }
    if req.collapse.is_some() {
        errors.push("cannot use `collapse` in a scroll context".to_string());
    }
    if !errors.is_empty() {
        return Err(EngineError::Validation(errors));
    }
    for h in indices {
        let max = h.settings().max_result_window;
        if req.size > max {
            return Err(EngineError::SearchPhase {
                kind: "illegal_argument_exception".into(),
                reason: format!("Batch size is too large, size must be less than or equal to: [{max}] but was [{}]. Scroll batch sizes cost as much memory as result windows so they are controlled by the [index.max_result_window] index level setting.", req.size),
            });
        }
    }
    Ok(())
}

/// Whether the sort is exactly `_doc` ascending: pages in index order, nothing scored.
fn doc_order(req: &SearchRequest) -> bool {
    matches!(req.sort.as_slice(), [s] if s.field == "_doc" && !s.desc)
}

/// Takes the point-in-time view and counts the hits; aggregations of the whole result
/// are computed once, here, as Elasticsearch returns them with the first page only.
fn open(
    indices: &[Arc<IndexHandle>],
    req: SearchRequest,
) -> EngineResult<(Context, Option<Value>)> {
    let now = now_ms();
    let plans = indices
        .iter()
        .map(|h| plan(h, &req, now))
        .collect::<EngineResult<Vec<_>>>()?;
    let searchers = super::routed_views(indices, &super::current_views(indices), &req);
    let prepared = super::agg_run::prepare_all(&plans, &searchers, req.aggs.as_ref())?;
    let mut total = 0u64;
    let mut agg_parts = Vec::new();
    for (ii, (p, shard_searchers)) in plans.iter().zip(&searchers).enumerate() {
        let per_index = prepared.as_ref().and_then(|a| a.get(ii)).map(|a| &a.aggs);
        for s in shard_searchers {
            let weight = p
                .hits_query
                .weight(EnableScoring::disabled_from_searcher(s))?;
            for seg in s.segment_readers() {
                total += weight.count(seg)? as u64;
            }
            if let (Some(a), Some(q)) = (per_index, &p.agg_query) {
                agg_parts.push(aggs::collect(s, &**q, a)?);
            }
        }
    }
    let aggregations = match &prepared {
        Some(pr) => Some(super::agg_run::finish(
            agg_parts, pr, &plans, &searchers, &req,
        )?),
        None => None,
    };
    let keys = merge_keys(&plans, is_score_order(&req.sort));
    let cursor = if doc_order(&req) {
        Cursor::Doc((0, 0, 0, 0))
    } else {
        Cursor::After(None)
    };
    let ctx = Context {
        plans,
        searchers,
        req,
        keys,
        total,
        cursor,
    };
    Ok((ctx, aggregations))
}

/// The next page of `ctx` as a search response carrying `_scroll_id`.
fn page(ctx: &mut Context, id: &str, aggregations: Option<Value>) -> EngineResult<Value> {
    let started = Instant::now();
    let view = View {
        plans: &ctx.plans,
        searchers: &ctx.searchers,
        keys: &ctx.keys,
    };
    let hits = next_page(&view, &mut ctx.cursor, ctx.req.size)?;
    let track = is_score_order(&ctx.req.sort) || ctx.req.track_scores;
    let max_score = hits
        .iter()
        .map(|c| c.score)
        .reduce(f32::max)
        .filter(|_| track);
    let page = Page {
        started,
        shards: ctx.searchers.iter().map(Vec::len).sum(),
        total: ctx.total,
        max_score,
        hits: &hits,
        aggregations,
    };
    let body = render_page(&ctx.plans, &ctx.req, &ctx.keys, page)?;
    let mut out = Map::new();
    out.insert("_scroll_id".into(), Value::String(id.to_string()));
    if let Value::Object(m) = body {
        out.extend(m);
    }
    Ok(Value::Object(out))
}

impl Scrolls {
    /// A registry allowing `max_open` open shard contexts.
    pub fn new(max_open: usize) -> Scrolls {
        Scrolls {
            map: Mutex::new(HashMap::new()),
            max_open,
            base: Instant::now(),
        }
    }

    fn now(&self) -> u64 {
        self.base.elapsed().as_millis() as u64
    }

    fn too_many(&self) -> EngineError {
        EngineError::TooManyScrolls(self.max_open)
    }

    /// Open shard contexts (expired ones not yet swept included).
    pub fn open_shard_contexts(&self) -> usize {
        lock(&self.map).values().map(|e| e.shards).sum()
    }

    /// Adds the open shard contexts of unexpired scrolls to `out`, by index uuid.
    pub fn count_by_index(&self, out: &mut HashMap<Arc<str>, usize>) {
        let now = self.now();
        for e in lock(&self.map).values() {
            if e.deadline.load(Ordering::Relaxed) > now {
                for (uuid, n) in &e.per_index {
                    *out.entry(uuid.clone()).or_default() += n;
                }
            }
        }
    }

    /// Drops every expired context; returns how many scrolls it dropped.
    pub fn sweep(&self) -> usize {
        let now = self.now();
        let mut map = lock(&self.map);
        let before = map.len();
        map.retain(|_, e| e.deadline.load(Ordering::Relaxed) > now);
        before - map.len()
    }

    /// `_search?scroll=`: opens a context over `indices` and returns its first page.
    pub fn start(
        &self,
        indices: &[Arc<IndexHandle>],
        req: &SearchRequest,
        params: ScrollParams,
    ) -> EngineResult<Value> {
        validate(indices, req)?;
        let shards: usize = indices.iter().map(|h| h.shards.len()).sum();
        self.sweep();
        if self.open_shard_contexts() + shards > self.max_open {
            return Err(self.too_many());
        }
        let mut req = req.clone();
        req.track_total = Some(super::request::TrackTotal::Accurate);
        let (mut ctx, aggregations) = open(indices, req)?;
        let id = new_id();
        let body = page(&mut ctx, &id, aggregations)?;
        let keep = millis(params.keep_alive);
        let per_index = indices
            .iter()
            .map(|h| (h.uuid.clone(), h.shards.len()))
            .collect();
        let entry = Arc::new(Entry {
            deadline: AtomicU64::new(self.now().saturating_add(keep)),
            keep_alive: AtomicU64::new(keep),
            shards,
            per_index,
            ctx: Mutex::new(ctx),
        });
        let mut map = lock(&self.map);
        let open: usize = map.values().map(|e| e.shards).sum();
        if open + shards > self.max_open {
            return Err(self.too_many());
        }
        map.insert(id, entry);
        Ok(body)
    }

    /// `_search/scroll`: the next page of scroll `id`, renewing its keep-alive (with
    /// `params` when given, else the one it had).
    pub fn next(
        &self,
        id: &str,
        params: Option<ScrollParams>,
        total_as_int: bool,
    ) -> EngineResult<Value> {
        check_id(id)?;
        let entry = lock(&self.map)
            .get(id)
            .cloned()
            .ok_or_else(|| missing(id))?;
        if entry.deadline.load(Ordering::Relaxed) <= self.now() {
            lock(&self.map).remove(id);
            return Err(missing(id));
        }
        if let Some(p) = params {
            let keep = millis(p.keep_alive);
            entry.keep_alive.store(keep, Ordering::Relaxed);
        }
        let renew = |e: &Entry| {
            let keep = e.keep_alive.load(Ordering::Relaxed);
            e.deadline
                .store(self.now().saturating_add(keep), Ordering::Relaxed);
        };
        renew(&entry);
        let mut ctx = lock(&entry.ctx);
        ctx.req.total_as_int = total_as_int;
        let body = page(&mut ctx, id, None)?;
        drop(ctx);
        renew(&entry);
        Ok(body)
    }

    /// Clear scroll: frees the given contexts; returns the shard contexts freed (unknown
    /// and expired ids free nothing).
    pub fn clear(&self, ids: &[String]) -> EngineResult<usize> {
        for id in ids {
            check_id(id)?;
        }
        let now = self.now();
        let mut map = lock(&self.map);
        let mut freed = 0;
        for id in ids {
            if let Some(e) = map.remove(id) {
                if e.deadline.load(Ordering::Relaxed) > now {
                    freed += e.shards;
                }
            }
        }
        Ok(freed)
    }

    /// `DELETE /_search/scroll/_all`: frees every context; returns the shard contexts freed.
    pub fn clear_all(&self) -> usize {
        let now = self.now();
        let mut map = lock(&self.map);
        let freed = map
            .values()
            .filter(|e| e.deadline.load(Ordering::Relaxed) > now)
            .map(|e| e.shards)
            .sum();
        map.clear();
        freed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_random_url_safe_and_checked() {
        let (a, b) = (new_id(), new_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
        assert!(check_id(&a).is_ok());
        assert_eq!(check_id("abc").unwrap_err().status(), 400);
        assert_eq!(check_id(&a[..31]).unwrap_err().status(), 400);
    }

    #[test]
    fn keep_alive_forms_and_limit() {
        let p = ScrollParams::parse("1m").unwrap();
        assert_eq!(p.keep_alive, Duration::from_secs(60));
        assert_eq!(
            ScrollParams::parse("500ms").unwrap().keep_alive,
            Duration::from_millis(500)
        );
        assert!(ScrollParams::parse("24h").is_ok());
        assert_eq!(ScrollParams::parse("2d").unwrap_err().status(), 400);
        assert_eq!(ScrollParams::parse("soon").unwrap_err().status(), 400);
        // issue 25 #1, #2: the engine reads what the edge reads (no silent 0 ms, `1 h` is
        // an hour), and refuses a huge keep-alive with Elasticsearch's message
        let huge = ScrollParams::parse("150000000000000d").unwrap_err().body();
        assert_eq!(huge.status, 400);
        assert!(huge.caused_by.unwrap().1.starts_with(
            "Keep alive for request (106751.9d) is too large. It must be less than (1d)."
        ));
        assert_eq!(
            ScrollParams::parse("1 h").unwrap().keep_alive,
            Duration::from_secs(3600)
        );
        assert_eq!(
            ScrollParams::parse("+1h").unwrap().keep_alive,
            Duration::from_secs(3600)
        );
        assert_eq!(
            ScrollParams::parse("-1").unwrap().keep_alive,
            Duration::ZERO
        );
    }
}
