//! Runtime facts about a cluster that outlive registry snapshots (kept by cluster id across
//! reloads): the last usage reading, the shards of indices created since (and how many of
//! them are primaries), whether the cluster's upstream has answered yet. (The search
//! contexts of the multitenant class are counted per shared upstream: see
//! [`UpstreamContexts`].) (What usage does to the cluster's mode is the overage
//! ladder's, recorded in the catalog: see `policy::ladder`.)
//!
//! Also the cluster's customer-visible request log (`requestlog`: the edge pushes, the
//! admin API reads).
//!
//! Written by the control thread (metering, readiness probes) and by cores (indices they
//! create); the request path reads readiness with single atomic loads. Shards are kept in
//! a small ledger under a lock, taken only by index creations and metering readings.
//!
//! While the cluster moves to this node from another home its ledgers are not trusted:
//! see the `settling` module.
//!
//! Must not touch: I/O (the probes and metering live in `edge::control`), the clock.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use super::requestlog::RequestLog;
use crate::policy::shards::{IndexShards, Usage};
use crate::tenancy::context_shares::SharedContexts;

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
    /// 0: settled; [`TAKING_OVER`]: a takeover is running; else the number of the reading
    /// whose record settles the cluster (see the `settling` module).
    settle_at: AtomicU64,
    /// Takeovers of it running (two can overlap: a join, then its old home's death).
    takeovers: AtomicU64,
    /// Its customer-visible request log (bounded rings; `requestlog`).
    pub requests: RequestLog,
}

/// The open search contexts of one shared upstream, for every multitenant cluster on it
/// (`tenancy::context_shares`), behind a lock taken only by scroll and point-in-time
/// requests and by publishing a snapshot. Kept across snapshots by upstream address.
#[derive(Debug)]
pub struct UpstreamContexts {
    ledger: Mutex<SharedContexts>,
}

impl UpstreamContexts {
    /// The ledger of an upstream allowing `limit` shard contexts at once.
    pub fn new(limit: u64) -> UpstreamContexts {
        UpstreamContexts {
            ledger: Mutex::new(SharedContexts::new(limit)),
        }
    }

    /// Runs `f` on the ledger (under its lock: keep `f` short, it does no I/O).
    pub fn with<R>(&self, f: impl FnOnce(&mut SharedContexts) -> R) -> R {
        f(&mut self.ledger.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// A metering reading begun (see [`ClusterState::begin_reading`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading(u64);

/// `settle_at` while a takeover runs.
const TAKING_OVER: u64 = u64::MAX;

/// Why an index's shards were not reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexRefused {
    /// They do not fit the capacity: the shards in use.
    Capacity(u64),
    /// The cluster is moving to this node: its shards in use are not known yet (503).
    Moving,
}

/// The shards in use (spec 8): the last reading's total, plus the shards of creations that
/// reading cannot have counted: those still in flight, and those that finished after it was
/// sent and are not among the indices it listed. Without the second part, a reading sent
/// while an index was being created would forget it, and the plan could be exceeded until
/// the next reading.
#[derive(Debug, Default)]
struct ShardLedger {
    /// Total of the last reading recorded.
    read: u64,
    /// Primary shards among them.
    read_primaries: u64,
    /// The indices that reading listed (real names, as the upstream spells them).
    read_names: HashSet<Vec<u8>>,
    /// Readings begun so far.
    begun: u64,
    /// Shards reserved by creations still in flight.
    pending: u64,
    /// Primary shards among them.
    pending_primaries: u64,
    /// Finished creations the last reading did not count.
    created: Vec<Created>,
}

#[derive(Debug)]
struct Created {
    name: Vec<u8>,
    shards: u64,
    primaries: u64,
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

    fn primaries_in_use(&self) -> u64 {
        self.created.iter().fold(
            self.read_primaries.saturating_add(self.pending_primaries),
            |n, c| n.saturating_add(c.primaries),
        )
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
            settle_at: AtomicU64::new(0),
            takeovers: AtomicU64::new(0),
            requests: RequestLog::default(),
        }
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

    /// A takeover of this cluster began (the `settling` module): reservations are
    /// refused until it ends and a reading begun after that is recorded.
    pub(super) fn begin_takeover(&self) {
        let _l = self.ledger();
        self.takeovers.fetch_add(1, Relaxed);
        self.settle_at.store(TAKING_OVER, Relaxed);
    }

    /// A takeover ended: once none is running, the next reading to begin settles the
    /// cluster.
    pub(super) fn settle_after_next_reading(&self) {
        let l = self.ledger();
        if self.takeovers.fetch_sub(1, Relaxed) == 1 {
            self.settle_at.store(l.begun + 1, Relaxed);
        }
    }

    /// Whether the cluster is moving here (its ledgers are not trusted yet).
    pub fn is_moving(&self) -> bool {
        self.settle_at.load(Relaxed) != 0
    }

    /// Whether recording `reading` settles a cluster that is moving here.
    pub fn settles_with(&self, reading: Reading) -> bool {
        let at = self.settle_at.load(Relaxed);
        at != 0 && at != TAKING_OVER && reading.0 >= at
    }

    /// Settles a moving cluster without a reading (metering does not read it: nothing can
    /// be created or opened on it).
    pub fn settle_unread(&self) {
        let at = self.settle_at.load(Relaxed);
        if at != TAKING_OVER {
            // Not if another takeover began meanwhile.
            let _ = self.settle_at.compare_exchange(at, 0, Relaxed, Relaxed);
        }
    }

    /// Records a reading begun with `reading`: its totals and the names of the indices it
    /// listed (`names`). It settles a cluster moving here when it began after the move.
    pub fn record_usage(&self, reading: Reading, usage: Usage, names: &[String]) {
        let listed: HashSet<Vec<u8>> = names.iter().map(|n| n.as_bytes().to_vec()).collect();
        {
            let mut l = self.ledger();
            l.read = usage.shards;
            l.read_primaries = usage.primaries;
            // Finished before this reading was sent: it counted them (or they are gone).
            l.created
                .retain(|c| c.finished_at >= reading.0 && !listed.contains(&c.name));
            l.read_names = listed;
        }
        self.bytes.store(usage.bytes, Relaxed);
        self.docs.store(usage.docs, Relaxed);
        self.indices.store(usage.indices, Relaxed);
        self.readings.fetch_add(1, Relaxed);
        if self.settles_with(reading) {
            // Not if another takeover began meanwhile.
            let at = self.settle_at.load(Relaxed);
            let _ = self.settle_at.compare_exchange(at, 0, Relaxed, Relaxed);
        }
    }

    /// The last usage reading, its shards with the creations it did not count.
    pub fn usage(&self) -> Usage {
        let l = self.ledger();
        Usage {
            indices: self.indices.load(Relaxed),
            shards: l.in_use(),
            primaries: l.primaries_in_use(),
            docs: self.docs.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
        }
    }

    /// Metering readings taken so far.
    pub fn readings(&self) -> u64 {
        self.readings.load(Relaxed)
    }

    /// Reserves `asked` shards against `capacity` for an index about to be created.
    /// `Err` when they do not fit, or the cluster is moving here. The reservation is a guard, like an allowance
    /// permit: [`ShardReservation::finish`] records what the upstream did; dropped without
    /// it (a refusal, a failure, a panic, a cancelled request) it is released as a creation
    /// that did not happen.
    pub fn reserve_index(
        &self,
        asked: IndexShards,
        capacity: u64,
    ) -> Result<ShardReservation<'_>, IndexRefused> {
        let mut l = self.ledger();
        if self.is_moving() {
            return Err(IndexRefused::Moving);
        }
        let in_use = l.in_use();
        match in_use.checked_add(asked.total()) {
            Some(total) if total <= capacity => {
                l.pending += asked.total();
                l.pending_primaries += asked.primaries;
                Ok(ShardReservation {
                    state: self,
                    asked,
                    finished: false,
                })
            }
            _ => Err(IndexRefused::Capacity(in_use)),
        }
    }

    /// Ends a creation that reserved `asked` shards: `created` when the upstream created
    /// index `name` (its real name), false when it did not (refused, already there, failed).
    fn finish_index(&self, name: &[u8], asked: IndexShards, created: bool) {
        let mut l = self.ledger();
        l.pending = l.pending.saturating_sub(asked.total());
        l.pending_primaries = l.pending_primaries.saturating_sub(asked.primaries);
        if created && !l.read_names.contains(name) {
            let finished_at = l.begun;
            l.created.push(Created {
                name: name.to_vec(),
                shards: asked.total(),
                primaries: asked.primaries,
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

/// Shards reserved for an index being created ([`ClusterState::reserve_index`]), held
/// until the upstream answered; released on drop when not finished.
#[must_use = "a reservation is released when dropped"]
#[derive(Debug)]
pub struct ShardReservation<'a> {
    state: &'a ClusterState,
    asked: IndexShards,
    finished: bool,
}

impl ShardReservation<'_> {
    /// The shards reserved.
    pub fn shards(&self) -> IndexShards {
        self.asked
    }

    /// The upstream answered: `created` when it created index `name` (its real name).
    pub fn finish(mut self, name: &[u8], created: bool) {
        self.finished = true;
        self.state.finish_index(name, self.asked, created);
    }
}

impl Drop for ShardReservation<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.state.finish_index(b"", self.asked, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(bytes: u64) -> Usage {
        Usage {
            indices: 1,
            shards: 2,
            primaries: 1,
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

    /// `n` shards counted as primaries (an upper bound when only the total is known).
    fn all(n: u64) -> IndexShards {
        IndexShards {
            primaries: n,
            replicas: 0,
        }
    }

    /// Whether `n` more shards fit under `capacity` (the reservation given back at once).
    fn fits(s: &ClusterState, n: u64, capacity: u64) -> Result<(), u64> {
        s.reserve_index(all(n), capacity)
            .map(drop)
            .map_err(|e| match e {
                IndexRefused::Capacity(in_use) => in_use,
                IndexRefused::Moving => u64::MAX,
            })
    }

    // spec 8: shards reserved and created count until a reading lists them
    #[test]
    fn created_shards_count_until_a_reading_lists_them() {
        let s = ClusterState::new(true);
        read(&s, 2, &["a"]);
        let b = s
            .reserve_index(all(4), 6)
            .expect("2 + 4 = 6: exactly at capacity");
        assert_eq!(fits(&s, 1, 6), Err(6), "one more does not fit");
        assert_eq!(s.usage().shards, 6);
        b.finish(b"b", false);
        assert_eq!(s.usage().shards, 2, "not created: given back");
        s.reserve_index(all(4), 6).unwrap().finish(b"b", true);
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

    // issue 31: a reservation is a guard: dropped unfinished (a refusal, a failure, a panic
    // that unwinds, a cancelled request), its shards are given back as a creation that did
    // not happen.
    #[test]
    fn a_reservation_dropped_unfinished_is_given_back() {
        let s = ClusterState::new(true);
        read(&s, 2, &["a"]);
        let r = s.reserve_index(all(4), 6).unwrap();
        assert_eq!(r.shards(), all(4));
        assert_eq!(fits(&s, 1, 6), Err(6));
        drop(r);
        assert_eq!(s.usage().shards, 2);
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _r = s.reserve_index(all(4), 6).unwrap();
            panic!("a request failing while it holds the reservation");
        }));
        assert!(unwound.is_err());
        assert_eq!(s.usage().shards, 2, "released by the unwinding");
        assert_eq!(fits(&s, 4, 6), Ok(()));
    }

    // issue 25 #3: primaries are counted apart (a search opens one context per primary),
    // through creations and readings alike
    #[test]
    fn primaries_are_counted_apart_from_replicas() {
        let s = ClusterState::new(true);
        let three = IndexShards {
            primaries: 3,
            replicas: 1,
        };
        let a = s.reserve_index(three, 100).unwrap();
        assert_eq!((s.usage().shards, s.usage().primaries), (6, 3));
        a.finish(b"a", true);
        assert_eq!((s.usage().shards, s.usage().primaries), (6, 3));
        s.reserve_index(three, 100).unwrap().finish(b"b", false);
        assert_eq!(s.usage().primaries, 3, "not created: given back");
        let r = s.begin_reading();
        let reading = Usage {
            shards: 6,
            primaries: 3,
            ..Usage::default()
        };
        s.record_usage(r, reading, &names(&["a"]));
        assert_eq!(
            (s.usage().shards, s.usage().primaries),
            (6, 3),
            "counted once"
        );
        // a total alone counts as primaries (an upper bound)
        let _held = s.reserve_index(all(2), 100).unwrap();
        assert_eq!(s.usage().primaries, 5);
    }

    // spec 8: a reading sent while an index was being created does not list it; its shards
    // must still count (else the plan could be exceeded until the next reading).
    #[test]
    fn a_reading_that_missed_a_creation_keeps_its_shards() {
        let s = ClusterState::new(true);
        read(&s, 2, &["a"]);
        let b = s.reserve_index(all(4), 6).unwrap();
        let r = s.begin_reading(); // sent while `b` is being created
        b.finish(b"b", true);
        s.record_usage(r, shards(2), &names(&["a"]));
        assert_eq!(fits(&s, 1, 6), Err(6));
        // Still in flight when the reading comes back: counted too.
        let s = ClusterState::new(true);
        read(&s, 2, &["a"]);
        let b = s.reserve_index(all(4), 6).unwrap();
        read(&s, 2, &["a"]);
        assert_eq!(fits(&s, 1, 6), Err(6));
        // The reading saw it before the creation's answer came back: counted once after.
        read(&s, 6, &["a", "b"]);
        b.finish(b"b", true);
        assert_eq!(s.usage().shards, 6);
        // Created, then deleted before the next reading: that reading frees it.
        s.reserve_index(all(2), 10).unwrap().finish(b"c", true);
        assert_eq!(s.usage().shards, 8);
        read(&s, 2, &["a"]);
        assert_eq!(s.usage().shards, 2);
    }
}
