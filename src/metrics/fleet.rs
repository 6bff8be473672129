//! This node's view of the fleet's shared store, for `/metrics`: whether the store answers
//! (`searchgate_store_up`), how long ago the node last read the change feed to its end
//! (`searchgate_feed_lag_seconds`) and the last change it applied
//! (`searchgate_feed_applied_seq`). Written by the follower after each read of the feed,
//! read by the exposition; silent on a node with its own SQLite store (no fleet).
//!
//! On a node that admits as a fleet (`[fleet] peer_listen`, issue 27), also its part in
//! one allowance per cluster across the fleet ([`FleetCounters`]): the clusters it is home
//! of, the clusters it became home of (handovers), the requests it admitted with a permit
//! from another node's home, the permits it granted to its peers as a home, and the
//! requests answered 503 because no home could admit them.
//!
//! Must not touch: anything but the gauges (the follower owns the reading of the feed).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The gauges (shared by the follower thread and the scrapes).
#[derive(Debug, Default)]
pub struct FleetGauges {
    /// Set once a follower runs: only then are the series exposed.
    following: AtomicBool,
    store_up: AtomicBool,
    applied_seq: AtomicU64,
    /// Unix milliseconds of the last read of the feed that reached its end.
    read_at_ms: AtomicU64,
    /// Admission at each cluster's home (issue 27).
    pub peers: FleetCounters,
}

/// This node's part in admitting each cluster at its home (written by the heartbeat, the
/// peer listener and the workers; read by the scrapes).
#[derive(Debug, Default)]
pub struct FleetCounters {
    /// Set once the heartbeat runs: only then are the series exposed.
    pub on: AtomicBool,
    /// Live nodes in this node's view of the fleet (itself included).
    pub nodes: AtomicU64,
    /// Clusters this node is home of now.
    pub homes: AtomicU64,
    /// Clusters this node became home of since it started (after its first view).
    pub handovers: AtomicU64,
    /// Requests this node admitted with a permit from another node (their home).
    pub remote_permits: AtomicU64,
    /// Permits this node granted to its peers as a home.
    pub peer_grants: AtomicU64,
    /// Requests answered 503 because their home could not admit them (unreachable, not
    /// home yet, or this node's registration could not be renewed).
    pub unavailable: AtomicU64,
}

/// A copy of [`FleetCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerFigures {
    pub nodes: u64,
    pub homes: u64,
    pub handovers: u64,
    pub remote_permits: u64,
    pub peer_grants: u64,
    pub unavailable: u64,
}

impl FleetCounters {
    /// The figures, or `None` on a node that does not admit as a fleet.
    pub fn figures(&self) -> Option<PeerFigures> {
        if !self.on.load(Ordering::Relaxed) {
            return None;
        }
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Some(PeerFigures {
            nodes: get(&self.nodes),
            homes: get(&self.homes),
            handovers: get(&self.handovers),
            remote_permits: get(&self.remote_permits),
            peer_grants: get(&self.peer_grants),
            unavailable: get(&self.unavailable),
        })
    }
}

/// A copy of the gauges at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FleetFigures {
    pub store_up: bool,
    pub applied_seq: u64,
    /// Seconds since the feed was last read to its end (0 when never read yet and up).
    pub lag_seconds: f64,
}

impl FleetGauges {
    /// Records a read of the feed at `now`: `Some(seq)` when it reached the end after
    /// applying change `seq`, `None` when the store could not be read.
    pub fn read(&self, outcome: Option<u64>, now: SystemTime) {
        let now_ms = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        self.following.store(true, Ordering::Relaxed);
        match outcome {
            Some(seq) => {
                self.applied_seq.store(seq, Ordering::Relaxed);
                self.read_at_ms.store(now_ms, Ordering::Relaxed);
                self.store_up.store(true, Ordering::Relaxed);
            }
            None => self.store_up.store(false, Ordering::Relaxed),
        }
    }

    /// The figures at `now_ms`, or `None` on a node that follows no shared store.
    pub fn figures(&self, now_ms: u64) -> Option<FleetFigures> {
        if !self.following.load(Ordering::Relaxed) {
            return None;
        }
        let at = self.read_at_ms.load(Ordering::Relaxed);
        let lag_ms = if at == 0 {
            0
        } else {
            now_ms.saturating_sub(at)
        };
        Some(FleetFigures {
            store_up: self.store_up.load(Ordering::Relaxed),
            applied_seq: self.applied_seq.load(Ordering::Relaxed),
            lag_seconds: lag_ms as f64 / 1000.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_until_a_follower_reads_then_lag_grows_while_the_store_is_down() {
        let g = FleetGauges::default();
        assert_eq!(g.figures(5_000), None);
        let at = |ms| UNIX_EPOCH + std::time::Duration::from_millis(ms);
        g.read(Some(7), at(10_000));
        let up = FleetFigures {
            store_up: true,
            applied_seq: 7,
            lag_seconds: 0.5,
        };
        assert_eq!(g.figures(10_500), Some(up));
        g.read(None, at(12_000));
        let down = g.figures(13_000).expect("following");
        assert!(!down.store_up);
        assert_eq!(down.applied_seq, 7);
        assert_eq!(down.lag_seconds, 3.0);
        // A clock that went back never gives a negative lag.
        assert_eq!(g.figures(1_000).expect("following").lag_seconds, 0.0);
    }
}
