//! Counts of faults the process contained and lived through: panics caught in a
//! connection's task (edge and admin API), edge worker threads restarted after one died,
//! and restarts of the supervised engine child. Counted by whoever contained the fault,
//! read by the exposition (`searchgate_panics_total`, `searchgate_worker_restarts_total`,
//! `searchgate_engine_restarts_total`).
//!
//! Must not touch: anything but the counters.

use std::sync::atomic::{AtomicU64, Ordering};

/// Where a panic was caught.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PanicSite {
    /// A client connection's task on an edge worker.
    Edge,
    /// A connection of the admin API.
    Admin,
}

impl PanicSite {
    /// Every site, in the exposition's order.
    pub const ALL: [PanicSite; 2] = [PanicSite::Edge, PanicSite::Admin];

    /// The value of the exposition's `component` label.
    pub fn label(self) -> &'static str {
        match self {
            PanicSite::Edge => "edge",
            PanicSite::Admin => "admin",
        }
    }
}

/// The counters (shared by every thread of the process).
#[derive(Debug, Default)]
pub struct Faults {
    edge_panics: AtomicU64,
    admin_panics: AtomicU64,
    worker_restarts: AtomicU64,
    engine_restarts: AtomicU64,
}

/// A copy of the counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultCounts {
    pub edge_panics: u64,
    pub admin_panics: u64,
    pub worker_restarts: u64,
    pub engine_restarts: u64,
}

impl FaultCounts {
    /// Panics caught at `site`.
    pub fn panics(&self, site: PanicSite) -> u64 {
        match site {
            PanicSite::Edge => self.edge_panics,
            PanicSite::Admin => self.admin_panics,
        }
    }
}

impl Faults {
    /// A panic was caught at `site`.
    pub fn panicked(&self, site: PanicSite) {
        let c = match site {
            PanicSite::Edge => &self.edge_panics,
            PanicSite::Admin => &self.admin_panics,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// An edge worker thread was started again after it died.
    pub fn worker_restarted(&self) {
        self.worker_restarts.fetch_add(1, Ordering::Relaxed);
    }

    /// The engine child was started again after it exited.
    pub fn engine_restarted(&self) {
        self.engine_restarts.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn counts(&self) -> FaultCounts {
        FaultCounts {
            edge_panics: self.edge_panics.load(Ordering::Relaxed),
            admin_panics: self.admin_panics.load(Ordering::Relaxed),
            worker_restarts: self.worker_restarts.load(Ordering::Relaxed),
            engine_restarts: self.engine_restarts.load(Ordering::Relaxed),
        }
    }
}

/// The text of a caught panic's payload (`panic!` with a message or a string).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(a panic without a message)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_counter_counts_its_own_fault() {
        let f = Faults::default();
        f.panicked(PanicSite::Edge);
        f.panicked(PanicSite::Edge);
        f.panicked(PanicSite::Admin);
        f.worker_restarted();
        f.engine_restarted();
        f.engine_restarted();
        f.engine_restarted();
        let c = f.counts();
        assert_eq!(c.panics(PanicSite::Edge), 2);
        assert_eq!(c.panics(PanicSite::Admin), 1);
        assert_eq!((c.worker_restarts, c.engine_restarts), (1, 3));
    }

    #[test]
    fn a_panic_message_is_read_from_either_payload() {
        let caught = std::panic::catch_unwind(|| panic!("at {}", 3)).unwrap_err();
        assert_eq!(panic_message(&*caught), "at 3");
        let caught = std::panic::catch_unwind(|| std::panic::panic_any("plain")).unwrap_err();
        assert_eq!(panic_message(&*caught), "plain");
        let caught = std::panic::catch_unwind(|| std::panic::panic_any(7u8)).unwrap_err();
        assert_eq!(panic_message(&*caught), "(a panic without a message)");
    }
}
