//! What each core holds: the process-wide [`Shared`] state (read-only but for the registry
//! swap and the draining flag) and the core-local [`Core`]: its cached registry snapshot,
//! upstream pool, buffer pool, metrics, access log and shutdown signal. Nothing in `Core`
//! is shared with another core.
//!
//! Must not touch: request handling (see `session` and `exchange`).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use rustls::ServerConfig;

use super::accesslog::AccessLog;
use super::upstream::{Pool, UPSTREAM_BUF};
use crate::cidr::Cidr;
use crate::config::EdgeConfig;
use crate::metrics::{CoreMetrics, MetricsHub};
use crate::nodes::{NodeBook, RetryBudget};
use crate::proto::HeadLimits;
use crate::registry::{Registry, Snapshot};

/// Client read buffer size (pooled; bodies stream through it).
pub const CLIENT_BUF: usize = 64 * 1024;
/// Largest buffer a large body grows the client buffer to (see `Client::read_body_more`).
pub const BODY_BUF: usize = 1024 * 1024;
/// Buffers over 4 x `CLIENT_BUF` the pool keeps per core (the others at most 1024).
const LARGE_POOLED: usize = 32;
/// How long a core trusts that an index it created (or found) still exists (see
/// `precreate`).
pub const KNOWN_INDEX_TTL: Duration = Duration::from_secs(2);

/// Retries as a share of each core's requests, and how many may be saved up.
const RETRY_PERCENT: u32 = 20;
const RETRY_BURST: u32 = 10;

/// A non-zero seed for a core's random numbers.
fn seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let here = &t as *const u64 as u64; // differs per thread's stack
    (t ^ here.rotate_left(32)) | 1
}

/// Limits and timeouts of the edge (from `[edge]`; fixed for the process's life).
#[derive(Debug, Clone)]
pub struct Limits {
    pub head: HeadLimits,
    pub max_body: u64,
    pub deadline: Duration,
    pub head_timeout: Duration,
    pub body_timeout: Duration,
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
    pub upstream_idle: Duration,
    pub shutdown_grace: Duration,
    /// How long a connection closed after an error keeps draining what the client sends.
    pub linger: Duration,
    /// TCP congestion control set on each new upstream connection (`None`: the host's).
    pub upstream_congestion: Option<Arc<str>>,
    /// `[edge] trusted_proxies`, parsed (checked when the config loaded).
    pub trusted_proxies: Vec<Cidr>,
}

impl Limits {
    /// The limits an `[edge]` section sets.
    pub fn from_config(e: &EdgeConfig) -> Limits {
        Limits {
            head: HeadLimits {
                max_head: e.max_head.0 as usize,
                ..HeadLimits::default()
            },
            max_body: e.max_body.0,
            deadline: e.deadline.0,
            head_timeout: e.head_timeout.0,
            body_timeout: e.body_timeout.0,
            idle_timeout: e.idle_timeout.0,
            connect_timeout: e.connect_timeout.0,
            upstream_idle: e.upstream_idle.0,
            shutdown_grace: e.shutdown_grace.0,
            linger: Duration::from_secs(2),
            upstream_congestion: Some(e.upstream_congestion.as_str())
                .filter(|c| !c.is_empty())
                .map(Arc::from),
            trusted_proxies: e
                .trusted_proxies
                .iter()
                .filter_map(|p| Cidr::parse(p).ok())
                .collect(),
        }
    }
}

/// State shared by every core.
#[derive(Debug)]
pub struct Shared {
    pub registry: Arc<Registry>,
    pub limits: Limits,
    pub tls: Option<Arc<ServerConfig>>,
    pub metrics: Arc<MetricsHub>,
    /// Access log target (`None`: off; `"-"`: stderr; else a file).
    pub access_log: Option<String>,
    /// Set on SIGTERM/SIGINT: stop accepting, finish what is in flight.
    pub draining: AtomicBool,
    /// Seals and opens the multitenant class's scroll and point-in-time ids.
    pub sealer: Arc<crate::tenancy::IdSealer>,
    /// The test-only fault injection is on (`[debug] panic_hooks`, see `faults`).
    pub debug_hooks: bool,
    /// Every upstream node's health (checked by the `nodes` checker, reported to by
    /// requests).
    pub nodes: Arc<NodeBook>,
    /// Admission at each cluster's home node (`[fleet] peer_listen`; `None`: this node
    /// admits every cluster itself).
    pub fleet: Option<Arc<super::peer::FleetHook>>,
}

impl Shared {
    /// True once shutdown began.
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }
}

/// One core's state.
#[derive(Debug)]
pub struct Core {
    pub shared: Arc<Shared>,
    /// `Rc` over the `Arc` on purpose: requests clone the core-local `Rc`, so the shared
    /// `Arc` count is touched once per reload, not on every request from every core.
    #[allow(clippy::redundant_allocation)]
    snapshot: RefCell<Rc<Arc<Snapshot>>>,
    pub pool: Pool,
    /// Idle connections to other nodes' peer listeners (remote permits).
    pub peers: Rc<super::peer::PeerPool>,
    pub metrics: RefCell<CoreMetrics>,
    pub log: RefCell<AccessLog>,
    /// Client connections open on this core.
    pub connections: Cell<usize>,
    buffers: BufferPool,
    /// State of the core's random numbers (xorshift: the choice of nodes needs no more).
    rng: Cell<u64>,
    /// Retries this core may still make (a share of its requests).
    retries: RefCell<RetryBudget>,
    pub shutdown: Signal,
    /// Rung (and replaced) by housekeeping when the health checks took any node down:
    /// requests waiting for a node's answer look whether it was theirs.
    node_down: RefCell<Rc<Signal>>,
    /// The book's count of nodes taken down, as housekeeping last saw it.
    downs_seen: Cell<u64>,
    /// Whitelisted indices this core created or found existing, and when (see `precreate`).
    known_indices: RefCell<HashMap<Vec<u8>, Instant>>,
    /// A request asked the worker itself to panic (test hooks only, see `faults`).
    pub crash_requested: Cell<bool>,
}

impl Core {
    /// A core's state over `shared`.
    pub fn new(shared: Arc<Shared>) -> std::io::Result<Core> {
        let log = AccessLog::open(shared.access_log.as_deref())?;
        let shared_downs = shared.nodes.downs();
        let snapshot = RefCell::new(Rc::new(shared.registry.load()));
        let limits = &shared.limits;
        let pool = Pool::new(
            256,
            limits.upstream_idle,
            limits.upstream_congestion.clone(),
        );
        Ok(Core {
            shared,
            snapshot,
            pool,
            peers: Rc::new(super::peer::PeerPool::default()),
            metrics: RefCell::new(CoreMetrics::default()),
            log: RefCell::new(log),
            connections: Cell::new(0),
            buffers: BufferPool::default(),
            rng: Cell::new(seed()),
            retries: RefCell::new(RetryBudget::new(RETRY_PERCENT, RETRY_BURST)),
            shutdown: Signal::default(),
            node_down: RefCell::new(Rc::new(Signal::default())),
            downs_seen: Cell::new(shared_downs),
            known_indices: RefCell::new(HashMap::new()),
            crash_requested: Cell::new(false),
        })
    }

    /// The current registry snapshot; one atomic load per call, a refresh only after a
    /// reload.
    #[allow(clippy::redundant_allocation)]
    pub fn snapshot(&self) -> Rc<Arc<Snapshot>> {
        let gen = self.shared.registry.generation();
        let mut cached = self.snapshot.borrow_mut();
        if cached.generation != gen {
            *cached = Rc::new(self.shared.registry.load());
        }
        cached.clone()
    }

    /// The bell housekeeping rings when the health checks took some node down (once a
    /// second at most); wait on it again after it rang.
    pub fn node_down_bell(&self) -> Rc<Signal> {
        self.node_down.borrow().clone()
    }

    /// A pooled buffer of at least `CLIENT_BUF` bytes, empty.
    pub fn take_buffer(&self) -> Vec<u8> {
        self.buffers.take()
    }

    /// A pooled buffer for an upstream connection.
    pub fn take_upstream_buffer(&self) -> Vec<u8> {
        let mut b = self.take_buffer();
        b.reserve(UPSTREAM_BUF);
        b
    }

    /// Returns a buffer to the core's pool.
    pub fn give_buffer(&self, b: Vec<u8>) {
        self.buffers.give(b)
    }

    /// The node of `nodes` a request goes to: of two usable ones drawn at random, the one
    /// with fewer requests in flight; any node when none is usable; never `exclude` (the
    /// node a retry comes from). `None` only when `nodes` has no other node.
    pub fn choose_node(
        &self,
        nodes: &[SocketAddr],
        exclude: Option<SocketAddr>,
    ) -> Option<SocketAddr> {
        if let ([one], None) = (nodes, exclude) {
            return Some(*one); // the common single-node cluster: nothing to choose
        }
        let random = (self.random(), self.random());
        self.shared
            .nodes
            .pick(nodes, exclude, Instant::now(), random)
    }

    /// Counts a request sent upstream towards the retry budget.
    pub fn on_upstream_request(&self) {
        self.retries.borrow_mut().on_request();
    }

    /// Takes one retry from the core's budget (about one per five requests).
    pub fn take_retry(&self) -> bool {
        self.retries.borrow_mut().take()
    }

    fn random(&self) -> u64 {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x
    }

    /// Whether index `path` was seen to exist within the trust period.
    pub fn index_known(&self, path: &[u8], now: Instant) -> bool {
        self.known_indices
            .borrow()
            .get(path)
            .is_some_and(|&t| now.saturating_duration_since(t) < KNOWN_INDEX_TTL)
    }

    /// Remembers that index `path` exists.
    pub fn remember_index(&self, path: Vec<u8>, now: Instant) {
        let mut known = self.known_indices.borrow_mut();
        if known.len() >= 100_000 {
            known.retain(|_, &mut t| now.saturating_duration_since(t) < KNOWN_INDEX_TTL);
        }
        known.insert(path, now);
    }

    /// Core-local housekeeping, about once a second: fold metrics, flush the log, drop
    /// stale pooled connections, ring the node-down bell, notice shutdown.
    pub fn housekeeping(&self, now: Instant) {
        if self.crash_requested.get() {
            panic!("injected worker panic (test hook, [debug] panic_hooks)");
        }
        let mut metrics = self.metrics.borrow_mut();
        metrics.set_connections(self.connections.get());
        self.shared.metrics.absorb(&mut metrics);
        drop(metrics);
        self.log.borrow_mut().flush();
        self.pool.sweep(now);
        let downs = self.shared.nodes.downs();
        if self.downs_seen.replace(downs) != downs {
            let rung = self.node_down.replace(Rc::new(Signal::default()));
            rung.fire();
        }
        if self.shared.draining() {
            self.shutdown.fire();
        }
    }
}

/// A core-local one-shot signal (shutdown) that any number of tasks can await.
#[derive(Debug, Default)]
pub struct Signal {
    fired: Cell<bool>,
    wakers: RefCell<Vec<Option<Waker>>>,
    /// Indices of empty slots in `wakers`.
    free: RefCell<Vec<usize>>,
}

impl Signal {
    /// Fires the signal, waking every waiter.
    pub fn fire(&self) {
        if self.fired.replace(true) {
            return;
        }
        let wakers: Vec<Waker> = self
            .wakers
            .borrow_mut()
            .iter_mut()
            .filter_map(Option::take)
            .collect();
        for w in wakers {
            w.wake();
        }
    }

    /// True once fired.
    pub fn is_fired(&self) -> bool {
        self.fired.get()
    }

    /// Resolves when the signal fires.
    pub fn wait(&self) -> SignalWait<'_> {
        SignalWait {
            signal: self,
            slot: None,
        }
    }
}

/// Future of [`Signal::wait`]; frees its waker slot when dropped.
#[derive(Debug)]
pub struct SignalWait<'a> {
    signal: &'a Signal,
    slot: Option<usize>,
}

impl Future for SignalWait<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.signal.fired.get() {
            return Poll::Ready(());
        }
        let mut wakers = self.signal.wakers.borrow_mut();
        match self.slot {
            Some(i) if i < wakers.len() => wakers[i] = Some(cx.waker().clone()),
            _ => {
                let i = self.signal.free.borrow_mut().pop().unwrap_or_else(|| {
                    wakers.push(None);
                    wakers.len() - 1
                });
                wakers[i] = Some(cx.waker().clone());
                drop(wakers);
                self.slot = Some(i);
            }
        }
        Poll::Pending
    }
}

impl Drop for SignalWait<'_> {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            if let Some(w) = self.signal.wakers.borrow_mut().get_mut(i) {
                *w = None;
                self.signal.free.borrow_mut().push(i);
            }
        }
    }
}

/// The core's spare client buffers: at most 1024, of which at most `LARGE_POOLED` grown by
/// a large body, so memory stays bounded and a large body on a new connection still finds
/// a grown buffer.
#[derive(Debug, Default)]
struct BufferPool {
    buffers: RefCell<Vec<Vec<u8>>>,
    /// How many of `buffers` are over 4 x `CLIENT_BUF`.
    large: Cell<usize>,
}

impl BufferPool {
    fn take(&self) -> Vec<u8> {
        match self.buffers.borrow_mut().pop() {
            Some(b) => {
                if is_large(&b) {
                    self.large.set(self.large.get() - 1);
                }
                b
            }
            None => Vec::with_capacity(CLIENT_BUF),
        }
    }

    fn give(&self, mut b: Vec<u8>) {
        let mut pool = self.buffers.borrow_mut();
        if b.capacity() < CLIENT_BUF || b.capacity() > BODY_BUF || pool.len() >= 1024 {
            return;
        }
        if is_large(&b) {
            if self.large.get() >= LARGE_POOLED {
                return;
            }
            self.large.set(self.large.get() + 1);
        }
        b.clear();
        pool.push(b);
    }
}

fn is_large(b: &Vec<u8>) -> bool {
    b.capacity() > 4 * CLIENT_BUF
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_pool_keeps_few_large_buffers_and_no_odd_sizes() {
        let pool = BufferPool::default();
        for _ in 0..LARGE_POOLED + 5 {
            pool.give(Vec::with_capacity(BODY_BUF));
        }
        pool.give(Vec::with_capacity(BODY_BUF + 1));
        pool.give(Vec::with_capacity(CLIENT_BUF - 1));
        assert_eq!(pool.buffers.borrow().len(), LARGE_POOLED);
        for _ in 0..1100 {
            pool.give(Vec::with_capacity(CLIENT_BUF));
        }
        assert_eq!(pool.buffers.borrow().len(), 1024);
        // Taking buffers frees places for large ones again.
        let taken: Vec<Vec<u8>> = (0..1024).map(|_| pool.take()).collect();
        assert_eq!(pool.large.get(), 0);
        assert_eq!(taken.iter().filter(|b| is_large(b)).count(), LARGE_POOLED);
        let mut grown = pool.take();
        assert!(grown.capacity() >= CLIENT_BUF && grown.is_empty());
        grown.extend_from_slice(b"old bytes");
        grown.reserve_exact(BODY_BUF - grown.len());
        pool.give(grown);
        assert_eq!(pool.large.get(), 1);
        assert!(
            pool.take().is_empty(),
            "a returned buffer comes back cleared"
        );
    }
}
