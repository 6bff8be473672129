//! A cluster moving to this node (issue 27): while this node takes a cluster over from
//! its old home, the old home's ledgers (the shards of indices it created since the last
//! metering reading, the scrolls and points in time it counted) are not here. So the
//! cluster's shard reservations and context opens are refused with 503 (`Retry-After`)
//! from the moment this node charges the cluster's allowances until a metering reading
//! *begun after the takeover ended* (the old home's requests over: none of them can still
//! create an index or open a context) was recorded: that reading counts what the old home
//! left on the upstream, and the ledgers start from it.
//!
//! [`Settling`] is the guard a takeover holds ([`ClusterState::take_over`]); dropping it
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
    pub(super) state: Arc<ClusterState>,
    pub(super) id: String,
    pub(super) soon: Arc<ReadSoon>,
}

impl Drop for Settling {
    fn drop(&mut self) {
        self.state.settle_after_next_reading();
        self.soon.push(std::mem::take(&mut self.id));
    }
}
