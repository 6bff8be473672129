//! The places a home counts for a permit it granted to another node (issue 27): the
//! shards of an index the request creates (the cluster's shard ledger, against the plan's
//! capacity) and the shard contexts of a scroll or point in time it opens (the cluster's
//! share of its shared upstream's open contexts). The home applies them to its own
//! ledgers, the ones its own requests use, so the plan is counted once for the fleet.
//!
//! Reservations are made when the acquire arrives, before it queues (as on one node);
//! what the request then did comes in [`Held`] messages while the permit is held. A
//! permit that ends with reservations not settled gives them back (dropped: an index
//! not created, a context not opened), as a failed request does on one node.
//!
//! Must not touch: sockets (the listener reads and answers, `super::home`), the rules
//! (the ledgers' own: `registry::ClusterState`, `tenancy::context_shares`).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::places::Held;
use super::wire::{Acquire, Verdict};
use crate::policy::shards::IndexShards;
use crate::registry::{Cluster, IndexRefused, ShardReservation};

/// What a granted permit holds besides its place in the allowance.
#[derive(Debug)]
pub struct Places<'c> {
    cluster: &'c Cluster,
    /// Index reservations not finished yet, oldest first.
    index: VecDeque<ShardReservation<'c>>,
    /// Shard contexts reserved by an open not answered yet.
    contexts: u64,
}

/// What the home answers to a held message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Nothing (a release).
    None,
    /// Applied.
    Ack,
    /// A reservation's verdict.
    Verdict(Verdict),
}

fn sat(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl<'c> Places<'c> {
    /// Nothing reserved.
    pub fn none(cluster: &'c Cluster) -> Places<'c> {
        Places {
            cluster,
            index: VecDeque::new(),
            contexts: 0,
        }
    }

    /// Makes the reservations acquire `a` carries, at `now`; the refusal's verdict when
    /// one does not fit (nothing is then reserved). An open weighs what it weighs here
    /// (this node's ledger knows the indices created away from home too).
    pub fn reserve(cluster: &'c Cluster, a: &Acquire, now: Instant) -> Result<Self, Verdict> {
        let mut p = Places::none(cluster);
        if let Some(asked) = a.index {
            p.reserve_index(asked)?;
        }
        if a.contexts > 0 {
            if cluster.state.is_moving() {
                return Err(Verdict::NotHome);
            }
            let (id, weight) = (cluster.id.as_str(), cluster.open_weight());
            let Some(ledger) = cluster.contexts.as_ref() else {
                // Not counted for this cluster here (single-tenant): nothing to hold.
                return Ok(p);
            };
            ledger.with(|l| match l.reserve(id, weight, now) {
                Ok(()) => Ok(()),
                Err(_) => Err(Verdict::Contexts {
                    share: sat(l.share(id)),
                    used: sat(l.used(id, now)),
                }),
            })?;
            p.contexts = weight;
        }
        Ok(p)
    }

    fn reserve_index(&mut self, asked: IndexShards) -> Result<(), Verdict> {
        let c: &'c Cluster = self.cluster;
        match c.state.reserve_index(asked, c.plan.shards) {
            Ok(r) => {
                self.index.push_back(r);
                Ok(())
            }
            Err(IndexRefused::Capacity(in_use)) => Err(Verdict::ShardCapacity {
                in_use: sat(in_use),
            }),
            // Moving here: not home for what counts yet (the requester answers 503).
            Err(IndexRefused::Moving) => Err(Verdict::NotHome),
        }
    }

    /// Applies `h` at `now`; what to answer.
    pub fn apply(&mut self, h: Held, now: Instant) -> Answer {
        let id = self.cluster.id.as_str();
        let ledger = self.cluster.contexts.as_ref();
        match h {
            Held::Release => return Answer::None,
            Held::ReserveIndex(asked) => {
                return Answer::Verdict(match self.reserve_index(asked) {
                    Ok(()) => Verdict::Granted,
                    Err(v) => v,
                })
            }
            Held::Finished { name, created } => {
                if let Some(r) = self.index.pop_front() {
                    r.finish(&name, created);
                }
            }
            Held::Closed { ids } => {
                if let Some(l) = ledger {
                    l.with(|l| l.closed(id, &ids));
                }
            }
            Held::Opened {
                id: opened,
                shards,
                keep_alive_ms,
            } => {
                let reserved = std::mem::take(&mut self.contexts);
                let keep_alive = Duration::from_millis(keep_alive_ms);
                let opened = opened.as_deref().map(|o| (o, shards));
                if let Some(l) = ledger {
                    l.with(|l| l.opened(id, reserved, opened, keep_alive, now));
                }
            }
            Held::Continued {
                sent,
                got,
                keep_alive_ms,
            } => {
                let keep_alive = keep_alive_ms.map(Duration::from_millis);
                if let Some(l) = ledger {
                    l.with(|l| l.continued(id, &sent, got.as_deref(), keep_alive, now));
                }
            }
        }
        Answer::Ack
    }
}

impl Drop for Places<'_> {
    fn drop(&mut self) {
        // Unfinished index reservations go back with their guards; an open never
        // answered gives its contexts back.
        if self.contexts > 0 {
            let (id, reserved) = (self.cluster.id.as_str(), self.contexts);
            if let Some(l) = self.cluster.contexts.as_ref() {
                l.with(|l| l.opened(id, reserved, None, Duration::ZERO, Instant::now()));
            }
        }
    }
}
