//! The active health checks: one thread per process checks every node in the book once per
//! interval (a node shared by many clusters and every core is checked once), each check of
//! a round on its own short-lived thread so a black-holed node delays none of the others.
//! Each round first hands the book the addresses the current registry snapshot uses in
//! clusters of more than one node (a single node is always tried, whatever its health).
//!
//! Must not touch: requests (the edge reports what they see to the book itself).

use std::net::SocketAddr;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use super::book::NodeBook;
use super::health::Check;
use crate::outbound::{self, Trust};
use crate::registry::Registry;

/// The running checker; stops when [`Checker::stop`] is called (or it is dropped).
#[derive(Debug)]
pub struct Checker {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// Starts checking the nodes of `registry`'s clusters of several nodes into `book`.
pub fn spawn(book: Arc<NodeBook>, registry: Arc<Registry>) -> std::io::Result<Checker> {
    let (stop, stopped) = mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("health-checks".into())
        .spawn(move || loop {
            let snap = registry.load();
            // A cluster of one node sends every request there whatever its health: only
            // the nodes of clusters with a choice are worth checking.
            let choosing = snap.clusters().iter().filter(|c| c.upstreams.len() > 1);
            book.sync(choosing.flat_map(|c| c.upstreams.iter().copied()));
            drop(snap);
            round(&book);
            match stopped.recv_timeout(book.settings().interval) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => return,
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

/// One check of every node, in parallel.
fn round(book: &NodeBook) {
    let s = book.settings();
    let agent = outbound::agent("health check", s.timeout, Trust::BuiltIn);
    std::thread::scope(|scope| {
        for node in book.nodes() {
            let agent = &agent;
            scope.spawn(move || {
                let found = check(agent, node.addr, &s.path);
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
