//! Runtime facts about a cluster that outlive registry snapshots (kept by cluster id across
//! reloads): the last usage reading, the shards of indices created since, whether the
//! cluster's upstream has answered yet, and (multitenant class) the search contexts it
//! holds open (`tenancy::contexts`). (What usage does to the cluster's mode is the overage
//! ladder's, recorded in the catalog: see `policy::ladder`.)
//!
//! Written by the control thread (metering, readiness probes) and by cores (indices they
//! create); the request path reads readiness with single atomic loads. Shards are kept in
//! a small ledger under a lock, taken only by index creations and metering readings; open
//! contexts likewise, taken only by scroll and point-in-time requests.
//!
//! Must not touch: I/O (the probes and metering live in `edge::control`), the clock.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use crate::policy::shards::Usage;
use crate::tenancy::OpenContexts;

/// A cluster's runtime state.
#[derive(Debug)]
pub struct ClusterState {
    ready: AtomicBool,
    shards: Mutex<ShardLedger>,
    bytes: AtomicU64,
    docs: AtomicU64,
    indices: AtomicU64,
    /// Metering readings taken so far.
    readings: AtomicU64,
    /// Open scrolls and points in time (the multitenant class's plan limit).
    contexts: Mutex<OpenContexts>,
}

/// A metering reading begun (see [`ClusterState::begin_reading`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading(u64);

/// The shards in use (spec 8): the last reading's total, plus the shards of creations that
/// reading cannot have counted: those still in flight, and those that finished after it was
/// sent and are not among the indices it listed. Without the second part, a reading sent
/// while an index was being created would forget it, and the plan could be exceeded until
/// the next reading.
#[derive(Debug, Default)]
struct ShardLedger {
    /// Total of the last reading recorded.
    read: u64,
    /// The indices that reading listed (real names, as the upstream spells them).
    read_names: HashSet<Vec<u8>>,
    /// Readings begun so far.
    begun: u64,
    /// Shards reserved by creations still in flight.
    pending: u64,
    /// Finished creations the last reading did not count.
    created: Vec<Created>,
}

#[derive(Debug)]
struct Created {
    name: Vec<u8>,
    shards: u64,
    /// Readings begun when it finished: a reading begun later counts it.
    finished_at: u64,
}

impl ShardLedger {
    fn in_use(&self) -> u64 {
        self.created
            .iter()
            .fold(self.read.saturating_add(self.pending), |n, c| {
                n.saturating_add(c.shards)
            })
    }
}

impl ClusterState {
    /// A new cluster's state; `ready` when its upstream needs no probe first.
    pub fn new(ready: bool) -> Self {
        ClusterState {
            ready: AtomicBool::new(ready),
            shards: Mutex::new(ShardLedger::default()),
            bytes: AtomicU64::new(0),
            docs: AtomicU64::new(0),
            indices: AtomicU64::new(0),
            readings: AtomicU64::new(0),
            contexts: Mutex::new(OpenContexts::default()),
        }
    }

    /// Runs `f` on the cluster's ledger of open search contexts (under its lock: keep `f`
    /// short, it does no I/O).
    pub fn contexts<R>(&self, f: impl FnOnce(&mut OpenContexts) -> R) -> R {
        f(&mut self.contexts.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn ledger(&self) -> MutexGuard<'_, ShardLedger> {
        self.shards.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks the start of a metering reading: call it before asking the upstream. Readings
    /// are taken one at a time.
    pub fn begin_reading(&self) -> Reading {
        let mut l = self.ledger();
        l.begun += 1;
        Reading(l.begun)
    }

    /// Records a reading begun with `reading`: its totals and the names of the indices it
    /// listed (`names`).
    pub fn record_usage(&self, reading: Reading, usage: Usage, names: &[String]) {
        let listed: HashSet<Vec<u8>> = names.iter().map(|n| n.as_bytes().to_vec()).collect();
        {
            let mut l = self.ledger();
            l.read = usage.shards;
            // Finished before this reading was sent: it counted them (or they are gone).
            l.created
                .retain(|c| c.finished_at >= reading.0 && !listed.contains(&c.name));
            l.read_names = listed;
        }
        self.bytes.store(usage.bytes, Relaxed);
        self.docs.store(usage.docs, Relaxed);
        self.indices.store(usage.indices, Relaxed);
        self.readings.fetch_add(1, Relaxed);
    }

    /// The last usage reading, its shards with the creations it did not count.
    pub fn usage(&self) -> Usage {
        Usage {
            indices: self.indices.load(Relaxed),
            shards: self.ledger().in_use(),
            docs: self.docs.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
        }
    }

    /// Metering readings taken so far.
    pub fn readings(&self) -> u64 {
        self.readings.load(Relaxed)
    }

    /// Reserves `asked` shards against `capacity` for an index about to be created; call
    /// [`ClusterState::finish_creation`] once the upstream answered. `Err(in_use)` when they
    /// do not fit.
    pub fn reserve_shards(&self, asked: u64, capacity: u64) -> Result<(), u64> {
        let mut l = self.ledger();
        let in_use = l.in_use();
        match in_use.checked_add(asked) {
            Some(total) if total <= capacity => {
                l.pending += asked;
                Ok(())
            }
            _ => Err(in_use),
        }
    }

    /// Ends a creation that reserved `asked` shards: `created` when the upstream created
    /// index `name` (its real name), false when it did not (refused, already there, failed).
    pub fn finish_creation(&self, name: &[u8], asked: u64, created: bool) {
        let mut l = self.ledger();
        l.pending = l.pending.saturating_sub(asked);
        if created && !l.read_names.contains(name) {
            let finished_at = l.begun;
            l.created.push(Created {
                name: name.to_vec(),
                shards: asked,
                finished_at,
            });
        }
    }

    /// Whether the upstream has answered (new single-tenant clusters: 404 until then).
    pub fn is_ready(&self) -> bool {
        self.ready.load(Relaxed)
    }

    /// Marks the upstream as answering (or not).
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(bytes: u64) -> Usage {
        Usage {
            indices: 1,
            shards: 2,
            docs: 3,
            bytes,
        }
    }

    fn shards(n: u64) -> Usage {
        Usage {
            shards: n,
            ..Usage::default()
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// A whole reading of `n` shards in indices `listed`.
    fn read(s: &ClusterState, n: u64, listed: &[&str]) {
        let r = s.begin_reading();
        s.record_usage(r, shards(n), &names(listed));
    }

    #[test]
    fn readings_keep_the_last_totals() {
        let s = ClusterState::new(true);
        s.record_usage(s.begin_reading(), usage(150), &[]);
        s.record_usage(s.begin_reading(), usage(100), &[]);
        assert_eq!(s.usage().bytes, 100);
        assert_eq!(s.usage().docs, 3);
        assert_eq!(s.readings(), 2);
    }

    // spec 8: shards reserved and created count until a reading lists them
    #[test]
    fn created_shards_count_until_a_reading_lists_them() {
        let s = ClusterState::new(true);
        read(&s, 2, &["a"]);
        assert_eq!(
            s.reserve_shards(4, 6),
            Ok(()),
            "2 + 4 = 6: exactly at capacity"
        );
        assert_eq!(s.reserve_shards(1, 6), Err(6), "one more does not fit");
        assert_eq!(s.usage().shards, 6);
        s.finish_creation(b"b", 4, false);
        assert_eq!(s.usage().shards, 2, "not created: given back");
        s.reserve_shards(4, 6).unwrap();
        s.finish_creation(b"b", 4, true);
        assert_eq!(s.usage().shards, 6);
        read(&s, 6, &["a", "b"]);
        assert_eq!(s.usage().shards, 6, "counted once");
        read(&s, 2, &["b"]);
        assert_eq!(
            s.usage().shards,
            2,
            "a reading after a deletion frees its shards"
        );
    }

    // spec 8: a reading sent while an index was being created does not list it; its shards
    // must still count (else the plan could be exceeded until the next reading).
    #[test]
    fn a_reading_that_missed_a_creation_keeps_its_shards() {
        let s = ClusterState::new(true);
        read(&s, 2, &["a"]);
        s.reserve_shards(4, 6).unwrap();
        let r = s.begin_reading(); // sent while `b` is being created
        s.finish_creation(b"b", 4, true);
        s.record_usage(r, shards(2), &names(&["a"]));
        assert_eq!(s.reserve_shards(1, 6), Err(6));
        // Still in flight when the reading comes back: counted too.
        let s = ClusterState::new(true);
        read(&s, 2, &["a"]);
        s.reserve_shards(4, 6).unwrap();
        read(&s, 2, &["a"]);
        assert_eq!(s.reserve_shards(1, 6), Err(6));
        // The reading saw it before the creation's answer came back: counted once after.
        read(&s, 6, &["a", "b"]);
        s.finish_creation(b"b", 4, true);
        assert_eq!(s.usage().shards, 6);
        // Created, then deleted before the next reading: that reading frees it.
        s.reserve_shards(2, 10).unwrap();
        s.finish_creation(b"c", 2, true);
        assert_eq!(s.usage().shards, 8);
        read(&s, 2, &["a"]);
        assert_eq!(s.usage().shards, 2);
    }
}
