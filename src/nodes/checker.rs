//! The active health checks and the lookups of host names: one thread per process. Each
//! node in the book is checked once per its settings' interval (a node shared by many
//! clusters, pools and every core is checked once), the checks due at once each on its own
//! short-lived thread so a black-holed node delays none of the others; every
//! `resolve_interval` the names in use are looked up again beside them. Each round first
//! hands the book the addresses to check, from the current registry snapshot: those of
//! named pools (with the pool's settings) and of clusters listing more than one node (with
//! `[upstream_health]`'s); a single node is always tried, whatever its health.
//!
//! Must not touch: requests (the edge reports what they see to the book itself).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::book::{Node, NodeBook};
use super::health::Check;
use super::resolve::Resolver;
use crate::config::HealthSettings;
use crate::outbound::{self, Trust};
use crate::registry::{Registry, Snapshot};

/// The running checker; stops when [`Checker::stop`] is called (or it is dropped).
#[derive(Debug)]
pub struct Checker {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// The nodes worth checking in `snap`, with their settings: a pool's nodes (the first pool
/// naming an address gives its settings), then the nodes of clusters that list several.
pub fn targets(snap: &Snapshot) -> Vec<(SocketAddr, Arc<HealthSettings>)> {
    let pools = snap.pools.iter().filter(|(_, addrs)| addrs.len() > 1);
    let from_pools = pools.flat_map(|(p, addrs)| addrs.iter().map(|a| (*a, p.health.clone())));
    // A cluster of one node sends every request there whatever its health: only the
    // nodes of clusters with a choice are worth checking.
    let listed = snap
        .clusters()
        .filter(|c| c.pool.is_none() && c.upstreams.len() > 1);
    let from_lists = listed.flat_map(|c| c.upstreams.iter().map(|a| (*a, snap.health.clone())));
    from_pools.chain(from_lists).collect()
}

/// Starts checking the nodes of `registry`'s pools and clusters into `book`, and looking
/// `resolver`'s names up again.
pub fn spawn(
    book: Arc<NodeBook>,
    registry: Arc<Registry>,
    resolver: Arc<Resolver>,
) -> std::io::Result<Checker> {
    book.watch_names(resolver.clone());
    let (stop, stopped) = mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("health-checks".into())
        .spawn(move || {
            let mut due: HashMap<SocketAddr, Instant> = HashMap::new();
            let mut lookups = Instant::now();
            loop {
                let snap = registry.load();
                book.sync(targets(&snap));
                let every = snap.health.resolve_interval;
                drop(snap);
                let now = Instant::now();
                let look = now >= lookups;
                if look {
                    lookups = now + every;
                }
                round(&book, &mut due, look.then_some(&*resolver), now);
                let next = due.values().copied().chain([lookups]).min();
                let wait = next.map_or(every, |t| t.saturating_duration_since(Instant::now()));
                match stopped.recv_timeout(wait.max(Duration::from_millis(10))) {
                    Err(RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
            }
        })?;
    Ok(Checker {
        stop: Some(stop),
        thread: Some(thread),
    })
}

impl Checker {
    /// Stops the checks (a round under way finishes first).
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Checker {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Checks the nodes due at `now` in parallel (each scheduled again an interval later),
/// and refreshes `resolver`'s names beside them if given.
fn round(
    book: &NodeBook,
    due: &mut HashMap<SocketAddr, Instant>,
    resolver: Option<&Resolver>,
    now: Instant,
) {
    let nodes = book.nodes();
    due.retain(|a, _| nodes.iter().any(|n| n.addr == *a));
    let mut checks: Vec<(Arc<Node>, Arc<HealthSettings>)> = Vec::new();
    for n in nodes {
        let at = due.entry(n.addr).or_insert(now);
        if *at <= now {
            let s = n.settings();
            *at = now + s.interval;
            checks.push((n, s));
        }
    }
    std::thread::scope(|scope| {
        if let Some(r) = resolver {
            scope.spawn(move || r.refresh());
        }
        for (node, s) in checks {
            scope.spawn(move || {
                let agent = outbound::agent("health check", s.timeout, Trust::BuiltIn);
                let found = check(&agent, node.addr, &s.path);
                book.checked(&node, found, Instant::now());
            });
        }
    });
}

/// `GET http://addr/path`: any answer below 500 means the node serves (a 401 of a
/// secured cluster or a 429 of a busy one included); none, or a 5xx, is a failure.
fn check(agent: &ureq::Agent, addr: SocketAddr, path: &str) -> Check {
    match agent.get(&format!("http://{addr}{path}")).call() {
        Ok(r) if r.status().as_u16() < 500 => Check::Healthy,
        _ => Check::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::tests::{config, key};
    use std::time::Duration;

    // issue 28: a node in two pools and a cluster's list is in the book once (checked
    // once), with the settings of the first pool naming it; a pool of one node and a
    // cluster of one node are not checked
    #[test]
    fn each_node_is_checked_once_with_its_first_pools_settings() {
        let extra = r#"upstream = ["127.0.0.1:9302", "127.0.0.1:9304"]
[[upstream_pools]]
name = "main"
nodes = ["127.0.0.1:9301", "127.0.0.1:9302"]
interval = "100ms"
[[upstream_pools]]
name = "other"
nodes = ["127.0.0.1:9302", "127.0.0.1:9303"]
interval = "5s"
[[upstream_pools]]
name = "single"
nodes = ["127.0.0.1:9305"]
"#;
        let c = config(extra, 2);
        let snap = Snapshot::build(&c, None, 1, Instant::now(), &key()).unwrap();
        let book = NodeBook::new(HealthSettings::default());
        book.sync(targets(&snap));
        let ports: Vec<u16> = book.nodes().iter().map(|n| n.addr.port()).collect();
        assert_eq!(ports, [9301, 9302, 9303, 9304]);
        let interval = |port: u16| {
            let n = book
                .nodes()
                .into_iter()
                .find(|n| n.addr.port() == port)
                .unwrap();
            n.settings().interval
        };
        assert_eq!(
            interval(9302),
            Duration::from_millis(100),
            "main's, listed first"
        );
        assert_eq!(interval(9303), Duration::from_secs(5));
        assert_eq!(
            interval(9304),
            Duration::from_secs(2),
            "[upstream_health]'s"
        );
    }
}
