//! A cluster moving to this node (issue 27): while this node takes a cluster over from
//! its old home, the old home's ledgers (the shards of indices it created since the last
//! metering reading, the scrolls and points in time it counted) are not here. So the
//! cluster's shard reservations and context opens are refused with 503 (`Retry-After`)
//! from the moment this node charges the cluster's allowances until a metering reading
//! *begun after the takeover ended* (the old home's requests over: none of them can still
//! create an index or open a context) was recorded: that reading counts what the old home
//! left on the upstream, and the ledgers start from it.
//!
//! [`Settling`] is the guard a takeover holds ([`take_over`]); dropping it
//! ends the takeover and asks the control thread for that reading at once through
//! [`ReadSoon`] (else the next periodic reading settles it).
//!
//! Must not touch: I/O (the control thread reads, `edge::control`), the ledgers' rules.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::state::ClusterState;

/// Clusters whose usage the control thread should read now (takeovers that ended).
#[derive(Debug, Default)]
pub struct ReadSoon {
    ids: Mutex<Vec<String>>,
    bell: Condvar,
}

impl ReadSoon {
    fn ids(&self) -> MutexGuard<'_, Vec<String>> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks for a reading of cluster `id`.
    pub fn push(&self, id: String) {
        self.ids().push(id);
        self.bell.notify_all();
    }

    /// Waits at most `d` for an ask; takes every cluster asked for (none: `d` passed).
    pub fn wait(&self, d: Duration) -> Vec<String> {
        let ids = self.ids();
        let (mut ids, _) = self
            .bell
            .wait_timeout_while(ids, d, |ids| ids.is_empty())
            .unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *ids)
    }
}

/// A takeover of a cluster in progress: its shard reservations and context opens are
/// refused here until it ends (dropped) and a reading begun after that was recorded.
#[must_use = "the takeover ends when this is dropped"]
#[derive(Debug)]
pub struct Settling {
    state: Arc<ClusterState>,
    id: String,
    soon: Arc<ReadSoon>,
}

/// Starts a takeover of cluster `id` whose state is `state`; the reading that ends it is
/// asked of `soon`.
pub fn take_over(state: &Arc<ClusterState>, id: &str, soon: &Arc<ReadSoon>) -> Settling {
    state.begin_takeover();
    Settling {
        state: state.clone(),
        id: id.to_string(),
        soon: soon.clone(),
    }
}

impl Drop for Settling {
    fn drop(&mut self) {
        self.state.settle_after_next_reading();
        self.soon.push(std::mem::take(&mut self.id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::shards::{IndexShards, Usage};
    use crate::registry::IndexRefused;

    fn read(s: &ClusterState, shards: u64, names: &[&str]) {
        let r = s.begin_reading();
        record(s, r, shards, names);
    }

    fn record(s: &ClusterState, r: super::super::state::Reading, shards: u64, names: &[&str]) {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let usage = Usage {
            shards,
            ..Usage::default()
        };
        s.record_usage(r, usage, &names);
    }

    fn fits(s: &ClusterState, n: u64) -> Result<(), IndexRefused> {
        let asked = IndexShards {
            primaries: n,
            replicas: 0,
        };
        s.reserve_index(asked, 6).map(drop)
    }

    // Issue 27: a cluster taken over from another home refuses reservations (503, "moving")
    // from the takeover's start until a reading begun after its end is recorded; a reading
    // begun before the end (it may miss what the old home's last requests created) does
    // not settle it. The end asks for a reading at once.
    #[test]
    fn a_takeover_refuses_reservations_until_a_later_reading() {
        let s = Arc::new(ClusterState::new(true));
        let soon = Arc::new(ReadSoon::default());
        read(&s, 2, &["a"]);
        assert_eq!(fits(&s, 1), Ok(()));
        let moving = take_over(&s, "c1", &soon);
        assert!(s.is_moving());
        assert_eq!(fits(&s, 1), Err(IndexRefused::Moving));
        read(&s, 2, &["a"]);
        assert!(
            s.is_moving(),
            "a reading during the takeover does not settle it"
        );
        let early = s.begin_reading();
        drop(moving);
        assert_eq!(soon.wait(Duration::ZERO), vec!["c1".to_string()]);
        record(&s, early, 4, &["a", "b"]);
        assert!(s.is_moving(), "begun before the end: not trusted");
        assert_eq!(fits(&s, 1), Err(IndexRefused::Moving));
        read(&s, 4, &["a", "b"]);
        assert!(!s.is_moving());
        assert_eq!(
            fits(&s, 3),
            Err(IndexRefused::Capacity(4)),
            "the old home's index counts"
        );
        assert_eq!(fits(&s, 2), Ok(()));
        // Two takeovers overlap: the cluster settles only after both ended.
        let first = take_over(&s, "c1", &soon);
        let second = take_over(&s, "c1", &soon);
        drop(first);
        read(&s, 4, &["a", "b"]);
        assert!(s.is_moving(), "the second takeover still runs");
        drop(second);
        read(&s, 4, &["a", "b"]);
        assert!(!s.is_moving());
        // A cluster metering does not read settles without one.
        let t = Arc::new(ClusterState::new(false));
        drop(take_over(&t, "c2", &soon));
        t.settle_unread();
        assert!(!t.is_moving());
    }
}
