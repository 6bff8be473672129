//! The control plane's clock: the instants it stores (changes, audit, plan history, usage
//! samples) and the time the overage ladder and maintenance windows are judged at. The
//! system clock in service; in tests, a manual one (`[admin] test_clock`) that moves only
//! when told (`POST /v1/test/clock`), so a test can live through a month in seconds.
//!
//! Must not touch: the request path's own timers (deadlines, queue waits: `Instant`).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::registry::Millis;

/// The wall clock in milliseconds since the Unix epoch.
pub fn system_ms() -> Millis {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as Millis)
}

/// The system clock, or a manual one shared by every clone.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    manual: Option<Arc<AtomicI64>>,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock { manual: None }
    }

    /// A manual clock standing at `at`.
    pub fn manual(at: Millis) -> Clock {
        Clock {
            manual: Some(Arc::new(AtomicI64::new(at))),
        }
    }

    /// Whether it moves only when told (tests).
    pub fn is_manual(&self) -> bool {
        self.manual.is_some()
    }

    /// Now, in milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> Millis {
        match &self.manual {
            Some(t) => t.load(Ordering::Acquire),
            None => system_ms(),
        }
    }

    /// Sets a manual clock to `at` (false: the system clock cannot be set).
    pub fn set(&self, at: Millis) -> bool {
        match &self.manual {
            Some(t) => {
                t.store(at, Ordering::Release);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_when_told_and_clones_share_it() {
        let c = Clock::manual(1_000);
        let d = c.clone();
        assert_eq!(c.now_ms(), 1_000);
        assert!(d.set(5_000));
        assert_eq!(c.now_ms(), 5_000);
        let s = Clock::system();
        assert!(!s.set(1));
        assert!(!s.is_manual() && c.is_manual());
        assert!((s.now_ms() - system_ms()).abs() < 60_000);
    }
}
