//! The process-wide book of upstream nodes and their health: one entry per address, shared
//! by every edge worker, the active checker and the metrics. Each node's [`NodeHealth`]
//! sits behind its own lock, taken only by the checker and by requests that have something
//! to report (a failure, or an answer after failures); what the hot path reads (up, and
//! ejected until when) is published in atomics, so choosing a node takes no lock.
//!
//! Must not touch: I/O (the checker does it), the registry (the checker hands the book
//! the addresses in use).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use super::choose::{choose, Candidate};
use super::health::{may_eject, Change, Check, HealthSettings, NodeHealth, Passive};
use super::resolve::{NameView, Resolver};

/// One upstream node.
#[derive(Debug)]
pub struct Node {
    pub addr: SocketAddr,
    /// How it is checked and ejected (its pool's, else `[upstream_health]`).
    settings: ArcSwap<HealthSettings>,
    health: Mutex<NodeHealth>,
    up: AtomicBool,
    /// Milliseconds after the book's epoch until which it is ejected (0: it is not).
    ejected_until_ms: AtomicU64,
    /// Passive failures were reported since the last answer (an answer must reset them).
    failing: AtomicBool,
    ejections: AtomicU64,
    checks_failed: AtomicU64,
    /// Requests in flight there, from every core (power of two choices).
    in_flight: AtomicU32,
    /// Times its checks took it down.
    downs: AtomicU64,
}

/// Why a request was tried again on another node (or connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryReason {
    /// No connection could be made.
    Connect,
    /// Writing the request failed: the node never had all of it.
    NotSent,
    /// A read got no answer at all.
    NoAnswer,
    /// A read waited on a node that its health checks took down meanwhile.
    NodeDown,
}

impl RetryReason {
    /// Every reason, in the exposition's order.
    pub const ALL: [RetryReason; 4] = [
        RetryReason::Connect,
        RetryReason::NotSent,
        RetryReason::NoAnswer,
        RetryReason::NodeDown,
    ];

    /// The exposition's `reason` label.
    pub fn label(self) -> &'static str {
        match self {
            RetryReason::Connect => "connect",
            RetryReason::NotSent => "not_sent",
            RetryReason::NoAnswer => "no_answer",
            RetryReason::NodeDown => "node_down",
        }
    }
}

/// A node's state for the metrics and the admin API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    pub addr: SocketAddr,
    /// Active checks hold it up.
    pub up: bool,
    /// Time left of its ejection, if it is ejected.
    pub ejected_for: Option<Duration>,
    pub ejections: u64,
    pub checks_failed: u64,
    pub in_flight: u32,
}

impl NodeView {
    /// `up`, `ejected` or `down`.
    pub fn state(&self) -> &'static str {
        match (self.up, self.ejected_for) {
            (false, _) => "down",
            (true, Some(_)) => "ejected",
            (true, None) => "up",
        }
    }
}

/// Every node in use.
#[derive(Debug)]
pub struct NodeBook {
    /// The settings of nodes synced without their own.
    settings: Arc<HealthSettings>,
    epoch: Instant,
    nodes: ArcSwap<HashMap<SocketAddr, Arc<Node>>>,
    /// Serialises [`NodeBook::sync`] (the map is replaced whole).
    writer: Mutex<()>,
    retries: [AtomicU64; 4],
    /// Times any node was taken down by its checks (workers compare it once a second to
    /// give up on answers from a node that went down: [`Node::downs`]).
    downs: AtomicU64,
    /// The host names of the nodes and their addresses (for the metrics), once known.
    names: std::sync::OnceLock<Arc<Resolver>>,
}

impl NodeBook {
    /// An empty book; `settings`: those of nodes given none.
    pub fn new(settings: HealthSettings) -> Self {
        NodeBook {
            settings: Arc::new(settings),
            epoch: Instant::now(),
            nodes: ArcSwap::from_pointee(HashMap::new()),
            writer: Mutex::new(()),
            retries: Default::default(),
            downs: AtomicU64::new(0),
            names: std::sync::OnceLock::new(),
        }
    }

    pub fn settings(&self) -> &HealthSettings {
        &self.settings
    }

    /// Keeps exactly the nodes of `addrs` (those already known keep their state), with
    /// these settings (the first given for an address counts).
    pub fn sync(&self, addrs: impl IntoIterator<Item = (SocketAddr, Arc<HealthSettings>)>) {
        let _w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let old = self.nodes.load();
        let mut next = HashMap::new();
        for (a, s) in addrs {
            if next.contains_key(&a) {
                continue;
            }
            let node = match old.get(&a) {
                Some(n) => {
                    if *n.settings.load_full() != *s {
                        n.settings.store(s);
                    }
                    n.clone()
                }
                None => Arc::new(Node::new(a, s)),
            };
            next.insert(a, node);
        }
        if next.len() != old.len() || next.keys().any(|a| !old.contains_key(a)) {
            self.nodes.store(Arc::new(next));
        }
    }

    /// The node at `addr`, if the book has it.
    pub fn node(&self, addr: SocketAddr) -> Option<Arc<Node>> {
        self.nodes.load().get(&addr).cloned()
    }

    /// Every node, sorted by address.
    pub fn nodes(&self) -> Vec<Arc<Node>> {
        let mut v: Vec<_> = self.nodes.load().values().cloned().collect();
        v.sort_by_key(|n| n.addr);
        v
    }

    /// Whether requests may go to `addr` at `now` (a node not in the book yet: yes), and
    /// the requests in flight there.
    pub fn usable(&self, addr: SocketAddr, now: Instant) -> (bool, u32) {
        let c = candidate(&self.nodes.load(), addr, self.ms(now));
        (c.usable, c.in_flight)
    }

    /// The node of `nodes` a request goes to at `now` (never `exclude`, the node a retry
    /// comes from): power of two choices among the usable ones by requests in flight
    /// (see [`choose`]); `r1`, `r2`: random numbers. `None`: no other node. Per request:
    /// the book read once, and no allocation for up to [`PICK_ON_STACK`] nodes.
    pub fn pick(
        &self,
        nodes: &[SocketAddr],
        exclude: Option<SocketAddr>,
        now: Instant,
        (r1, r2): (u64, u64),
    ) -> Option<SocketAddr> {
        let map = self.nodes.load();
        let now_ms = self.ms(now);
        let excluded = exclude.and_then(|x| nodes.iter().position(|&a| a == x));
        let chosen = if nodes.len() <= PICK_ON_STACK {
            let mut cands = [Candidate::default(); PICK_ON_STACK];
            for (c, &a) in cands.iter_mut().zip(nodes) {
                *c = candidate(&map, a, now_ms);
            }
            choose(&cands[..nodes.len()], excluded, r1, r2)
        } else {
            let cands: Vec<Candidate> = nodes.iter().map(|&a| candidate(&map, a, now_ms)).collect();
            choose(&cands, excluded, r1, r2)
        };
        chosen.map(|i| nodes[i])
    }

    /// The first node of `nodes` usable at `now`, else the first (for the control plane's
    /// own calls: metering, purges).
    pub fn first_usable(&self, nodes: &[SocketAddr], now: Instant) -> Option<SocketAddr> {
        let usable = nodes.iter().find(|&&a| self.usable(a, now).0);
        usable.or(nodes.first()).copied()
    }

    /// A request's report about `addr` at `now`; `pool`: the nodes it was chosen among
    /// (the share of them ejected bounds ejection).
    pub fn report(&self, addr: SocketAddr, p: Passive, pool: &[SocketAddr], now: Instant) {
        let map = self.nodes.load();
        let Some(node) = map.get(&addr) else { return };
        if p == Passive::Answered
            && !node.failing.load(Ordering::Relaxed)
            && node.ejected_until_ms.load(Ordering::Relaxed) == 0
        {
            return; // the common case: nothing to reset, no lock
        }
        let now_ms = self.ms(now);
        let ejected = pool
            .iter()
            .filter(|a| **a != addr)
            .filter_map(|a| map.get(a))
            .filter(|n| n.ejected_until_ms.load(Ordering::Relaxed) > now_ms)
            .count();
        let settings = node.settings.load();
        let may = may_eject(&settings, ejected, pool.len().max(1));
        let mut h = node.health.lock().unwrap_or_else(|e| e.into_inner());
        let change = h.on_passive(p, &settings, now, may);
        node.failing.store(
            !matches!(p, Passive::Answered | Passive::Overloaded),
            Ordering::Relaxed,
        );
        if let Change::Ejected(d) = change {
            node.ejections.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "searchgate: upstream {addr} ejected for {}s after failed requests",
                d.as_secs()
            );
        }
        self.publish(node, &h, now);
    }

    /// An active check's result for `node`.
    pub fn checked(&self, node: &Node, c: Check, now: Instant) -> Change {
        if c == Check::Failed {
            node.checks_failed.fetch_add(1, Ordering::Relaxed);
        }
        let mut h = node.health.lock().unwrap_or_else(|e| e.into_inner());
        let change = h.on_check(c, &node.settings.load());
        match change {
            Change::Down => {
                node.downs.fetch_add(1, Ordering::Release);
                self.downs.fetch_add(1, Ordering::Release);
                eprintln!("searchgate: upstream {} is down (health checks)", node.addr)
            }
            Change::Up => eprintln!("searchgate: upstream {} is up (health checks)", node.addr),
            _ => {}
        }
        self.publish(node, &h, now);
        change
    }

    /// Shows `resolver`'s names with the nodes (the first one given counts).
    pub fn watch_names(&self, resolver: Arc<Resolver>) {
        let _ = self.names.set(resolver);
    }

    /// The host names looked up, their addresses and failed lookups.
    pub fn names(&self) -> Vec<NameView> {
        self.names.get().map(|r| r.names()).unwrap_or_default()
    }

    /// Counts a retry.
    pub fn count_retry(&self, why: RetryReason) {
        self.retries[why as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Times any node was taken down by its health checks.
    pub fn downs(&self) -> u64 {
        self.downs.load(Ordering::Acquire)
    }

    /// Retries by reason.
    pub fn retries(&self) -> [(RetryReason, u64); 4] {
        RetryReason::ALL.map(|r| (r, self.retries[r as usize].load(Ordering::Relaxed)))
    }

    /// Every node's state at `now`.
    pub fn views(&self, now: Instant) -> Vec<NodeView> {
        let now_ms = self.ms(now);
        self.nodes()
            .iter()
            .map(|n| {
                let until = n.ejected_until_ms.load(Ordering::Relaxed);
                NodeView {
                    addr: n.addr,
                    up: n.up.load(Ordering::Relaxed),
                    ejected_for: (until > now_ms).then(|| Duration::from_millis(until - now_ms)),
                    ejections: n.ejections.load(Ordering::Relaxed),
                    checks_failed: n.checks_failed.load(Ordering::Relaxed),
                    in_flight: n.in_flight.load(Ordering::Relaxed),
                }
            })
            .collect()
    }

    fn publish(&self, node: &Node, h: &NodeHealth, now: Instant) {
        node.up.store(h.up(), Ordering::Relaxed);
        let until = h.ejected_until(now).map_or(0, |u| self.ms(u).max(1));
        node.ejected_until_ms.store(until, Ordering::Relaxed);
    }

    /// Milliseconds after the epoch (never 0 after it, so 0 can mean "not ejected").
    fn ms(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_millis() as u64 + 1
    }
}

/// Most nodes [`NodeBook::pick`] chooses among without allocating.
pub const PICK_ON_STACK: usize = 16;

/// `addr` as a candidate at `now_ms` (a node not in the book yet: usable, idle).
fn candidate(map: &HashMap<SocketAddr, Arc<Node>>, addr: SocketAddr, now_ms: u64) -> Candidate {
    match map.get(&addr) {
        None => Candidate {
            usable: true,
            in_flight: 0,
        },
        Some(n) => Candidate {
            usable: n.usable(now_ms),
            in_flight: n.in_flight.load(Ordering::Relaxed),
        },
    }
}

impl Node {
    fn new(addr: SocketAddr, settings: Arc<HealthSettings>) -> Node {
        Node {
            addr,
            settings: ArcSwap::new(settings),
            health: Mutex::new(NodeHealth::default()),
            up: AtomicBool::new(true),
            ejected_until_ms: AtomicU64::new(0),
            failing: AtomicBool::new(false),
            ejections: AtomicU64::new(0),
            checks_failed: AtomicU64::new(0),
            in_flight: AtomicU32::new(0),
            downs: AtomicU64::new(0),
        }
    }

    /// Times its health checks took it down: a request that waits for its answer and sees
    /// this grow gives up on it (the node does not even answer its checks).
    pub fn downs(&self) -> u64 {
        self.downs.load(Ordering::Acquire)
    }

    /// How it is checked and ejected now.
    pub fn settings(&self) -> Arc<HealthSettings> {
        self.settings.load_full()
    }

    fn usable(&self, now_ms: u64) -> bool {
        self.up.load(Ordering::Relaxed) && self.ejected_until_ms.load(Ordering::Relaxed) <= now_ms
    }

    /// Counts a request in flight here until the guard drops.
    pub fn enter(self: &Arc<Node>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(self.clone())
    }
}

/// A request in flight at a node (see [`Node::enter`]).
#[derive(Debug)]
pub struct InFlight(Arc<Node>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    // issue 28: passive reports eject through the book; the hot path sees it without a
    // lock; the pool share keeps the last node of two in
    #[test]
    fn reports_eject_and_the_pool_keeps_a_share() {
        let s = HealthSettings {
            passive_failures: 1,
            ..HealthSettings::default()
        };
        let book = NodeBook::new(HealthSettings::default());
        let (a, b) = (addr(1), addr(2));
        let s = Arc::new(s);
        book.sync([(a, s.clone()), (b, s.clone())]);
        let t = Instant::now();
        assert_eq!(book.usable(a, t), (true, 0));
        book.report(a, Passive::ConnectionFailed, &[a, b], t);
        assert!(!book.usable(a, t).0);
        book.report(b, Passive::ConnectionFailed, &[a, b], t);
        assert!(book.usable(b, t).0, "half of the pool is out already");
        let views = book.views(t);
        assert_eq!(views[0].state(), "ejected");
        assert_eq!(views[1].state(), "up");
        assert!(book.usable(addr(3), t).0, "unknown nodes are tried");
        // sync keeps the state of known nodes, drops the others
        book.sync([(a, s)]);
        assert!(!book.usable(a, t).0);
        assert_eq!(book.views(t).len(), 1);
        let g = book.node(a).unwrap().enter();
        assert_eq!(book.usable(a, t).1, 1);
        drop(g);
        assert_eq!(book.usable(a, t).1, 0);
    }
}
