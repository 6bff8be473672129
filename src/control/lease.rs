//! Once-per-fleet work: a lease row in the shared store names the node that leads. The
//! leader renews it well before it expires; a node that stops renewing (killed, cut off
//! from the store) loses it when it expires, and the next node that asks takes it. Only
//! the leader runs the work that must happen once (overage steps, maintenance expiry,
//! purges, provisioned marks, webhook deliveries); every node serves.
//!
//! A single node on its own store (SQLite) has no lease and always leads.
//!
//! Must not touch: the catalog, sockets (the store is handed in).

use std::time::{Duration, Instant};

use super::clock::system_ms;
use super::store::Store;

/// The lease's name in the store.
pub const LEADER: &str = "leader";

/// This node's view of the leader lease.
#[derive(Debug)]
pub struct Lease {
    node: String,
    ttl: Duration,
    /// Until when this node holds it (its own monotonic clock, from the last renewal).
    held_until: Option<Instant>,
}

/// What [`Lease::check`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leads {
    /// This node leads (and did before).
    Yes,
    /// This node just became the leader.
    Gained,
    /// This node just lost the lease.
    Lost,
    No,
}

impl Leads {
    /// Whether this node leads now.
    pub fn now(self) -> bool {
        matches!(self, Leads::Yes | Leads::Gained)
    }
}

impl Lease {
    /// The lease of node `node`, held `ttl` from each renewal.
    pub fn new(node: String, ttl: Duration) -> Lease {
        Lease {
            node,
            ttl,
            held_until: None,
        }
    }

    /// This node's name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Whether this node leads at `now`: renews the lease once a third of it has passed
    /// (or tries to take it); a store that cannot be reached leaves a held lease to run
    /// out on its own.
    pub fn check(&mut self, store: &mut dyn Store, now: Instant) -> Leads {
        let before = self.held_until.is_some_and(|u| now < u);
        let fresh = self.held_until.is_some_and(|u| now + self.ttl * 2 / 3 < u);
        if !fresh {
            let ttl = i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX);
            match store.lease(LEADER, &self.node, system_ms(), ttl) {
                Ok(true) => self.held_until = Some(now + self.ttl),
                Ok(false) => self.held_until = None,
                Err(_) => {}
            }
        }
        let after = self.held_until.is_some_and(|u| now < u);
        match (before, after) {
            (true, true) => Leads::Yes,
            (false, true) => Leads::Gained,
            (true, false) => Leads::Lost,
            (false, false) => Leads::No,
        }
    }

    /// Gives the lease up (a clean stop: another node takes over at once).
    pub fn release(&mut self, store: &mut dyn Store) {
        if self.held_until.take().is_some() {
            let _ = store.release(LEADER, &self.node);
        }
    }
}
