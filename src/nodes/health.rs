//! One upstream node's health, as a pure state machine: active checks move it down after
//! `fall` failures in a row and up again after `rise` successes; passive reports from real
//! requests (connection failures, 5xx answers) eject it for a back-off that doubles with
//! each ejection in a row, unless too large a share of its pool is out already. A 429 is
//! the node saying it is busy, not that it is broken: it counts for nothing.
//!
//! Data in, decision out, the clock passed in. Must not touch: I/O, atomics, locks (the
//! shared book in `book` owns a `NodeHealth` behind its lock and publishes what the hot
//! path reads).

use std::time::{Duration, Instant};

pub use crate::config::HealthSettings;

/// Whether one more node may be ejected from a pool of `pool` nodes of which `ejected`
/// are out now. A pool of one may lose its node (every request then tries it anyway).
pub fn may_eject(s: &HealthSettings, ejected: usize, pool: usize) -> bool {
    if pool <= 1 {
        return true;
    }
    (ejected + 1) * 100 <= pool * usize::from(s.max_ejected_percent)
}

/// What an active check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Healthy,
    Failed,
}

/// What a real request learnt about the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passive {
    /// It answered (any status but those below).
    Answered,
    /// No connection could be made, or it closed or reset without an answer.
    ConnectionFailed,
    /// It answered 500, 502, 503 or 504.
    ServerError,
    /// It answered 429: busy, not broken.
    Overloaded,
}

/// A change worth logging and counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    None,
    /// Active checks took it down.
    Down,
    /// Active checks brought it up (an ejection, if any, ends with it).
    Up,
    /// Passive reports ejected it for this long.
    Ejected(Duration),
}

/// One node's health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHealth {
    up: bool,
    /// Active results in a row that disagree with `up`.
    streak: u32,
    /// Passive failures in a row.
    failures: u32,
    ejected_until: Option<Instant>,
    /// Ejections in a row (the back-off's exponent); reset by a request answered after
    /// the last ejection ended.
    ejections: u32,
}

impl Default for NodeHealth {
    /// A node not checked yet is tried: it is up until checks or requests say otherwise.
    fn default() -> Self {
        NodeHealth {
            up: true,
            streak: 0,
            failures: 0,
            ejected_until: None,
            ejections: 0,
        }
    }
}

impl NodeHealth {
    /// Whether requests may go to it at `now`.
    pub fn usable(&self, now: Instant) -> bool {
        self.up && self.ejected_until.is_none_or(|u| now >= u)
    }

    /// Whether active checks hold it up.
    pub fn up(&self) -> bool {
        self.up
    }

    /// Until when it is ejected, if it is at `now`.
    pub fn ejected_until(&self, now: Instant) -> Option<Instant> {
        self.ejected_until.filter(|&u| now < u)
    }

    /// An active check's result.
    pub fn on_check(&mut self, c: Check, s: &HealthSettings) -> Change {
        let agrees = (c == Check::Healthy) == self.up;
        if agrees {
            self.streak = 0;
            return Change::None;
        }
        self.streak += 1;
        let needed = if self.up { s.fall } else { s.rise };
        if self.streak < needed.max(1) {
            return Change::None;
        }
        self.streak = 0;
        self.up = !self.up;
        self.failures = 0;
        if self.up {
            self.ejected_until = None;
            Change::Up
        } else {
            Change::Down
        }
    }

    /// A request's report at `now`; `may_eject`: the pool can lose one more node.
    pub fn on_passive(
        &mut self,
        p: Passive,
        s: &HealthSettings,
        now: Instant,
        may_eject: bool,
    ) -> Change {
        match p {
            Passive::Overloaded => Change::None,
            Passive::Answered => {
                self.failures = 0;
                if self.ejected_until.is_some_and(|u| now >= u) {
                    self.ejected_until = None;
                    self.ejections = 0;
                }
                Change::None
            }
            Passive::ConnectionFailed | Passive::ServerError => {
                if self.ejected_until(now).is_some() {
                    return Change::None; // already out: requests that were in flight
                }
                self.failures = self.failures.saturating_add(1);
                if self.failures < s.passive_failures.max(1) || !may_eject {
                    return Change::None;
                }
                let factor = 1u32 << self.ejections.min(16);
                let length = s.eject_base.saturating_mul(factor).min(s.eject_max);
                let Some(until) = now.checked_add(length) else {
                    return Change::None; // past what the clock can name: no ejection
                };
                self.failures = 0;
                self.ejections = self.ejections.saturating_add(1);
                self.ejected_until = Some(until);
                Change::Ejected(length)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> HealthSettings {
        HealthSettings {
            rise: 2,
            fall: 3,
            passive_failures: 2,
            eject_base: Duration::from_secs(5),
            eject_max: Duration::from_secs(12),
            ..HealthSettings::default()
        }
    }

    // issue 28: fall failures in a row take a node down, rise successes bring it back; a
    // success in between restarts the count
    #[test]
    fn active_checks_rise_and_fall() {
        use Check::*;
        let s = settings();
        let mut h = NodeHealth::default();
        let table = [
            (Failed, Change::None, true),
            (Failed, Change::None, true),
            (Healthy, Change::None, true),
            (Failed, Change::None, true),
            (Failed, Change::None, true),
            (Failed, Change::Down, false),
            (Healthy, Change::None, false),
            (Failed, Change::None, false),
            (Healthy, Change::None, false),
            (Healthy, Change::Up, true),
        ];
        for (i, (c, change, up)) in table.into_iter().enumerate() {
            assert_eq!((h.on_check(c, &s), h.up()), (change, up), "step {i}");
        }
    }

    // issue 28: consecutive failures eject; the back-off doubles per ejection in a row and
    // stops at the maximum; a 429 counts for nothing; an answer resets the count
    #[test]
    fn passive_failures_eject_with_a_growing_back_off() {
        use Passive::*;
        let s = settings();
        let t0 = Instant::now();
        let mut h = NodeHealth::default();
        assert_eq!(h.on_passive(ServerError, &s, t0, true), Change::None);
        assert_eq!(h.on_passive(Overloaded, &s, t0, true), Change::None);
        assert_eq!(h.on_passive(Answered, &s, t0, true), Change::None);
        assert_eq!(h.on_passive(ServerError, &s, t0, true), Change::None);
        let first = h.on_passive(ConnectionFailed, &s, t0, true);
        assert_eq!(first, Change::Ejected(Duration::from_secs(5)));
        assert!(!h.usable(t0 + Duration::from_secs(4)));
        assert!(h.usable(t0 + Duration::from_secs(5)));
        // failures while out change nothing
        assert_eq!(h.on_passive(ServerError, &s, t0, true), Change::None);
        let t1 = t0 + Duration::from_secs(6);
        h.on_passive(ServerError, &s, t1, true);
        let second = h.on_passive(ServerError, &s, t1, true);
        assert_eq!(second, Change::Ejected(Duration::from_secs(10)));
        let t2 = t1 + Duration::from_secs(11);
        h.on_passive(ServerError, &s, t2, true);
        let third = h.on_passive(ServerError, &s, t2, true);
        assert_eq!(third, Change::Ejected(Duration::from_secs(12)), "capped");
        // answered after the ejection ended: the back-off starts over
        let t3 = t2 + Duration::from_secs(13);
        h.on_passive(Answered, &s, t3, true);
        h.on_passive(ServerError, &s, t3, true);
        let again = h.on_passive(ServerError, &s, t3, true);
        assert_eq!(again, Change::Ejected(Duration::from_secs(5)));
    }

    // issue 28: never more than the configured share of a pool out at once
    #[test]
    fn the_pool_share_bounds_ejection() {
        let s = HealthSettings::default(); // 50 %
        let table = [
            // ejected, pool -> may eject one more
            (0, 1, true),
            (0, 2, true),
            (1, 2, false),
            (0, 3, true),
            (1, 3, false),
            (1, 4, true),
            (2, 4, false),
        ];
        for (ejected, pool, want) in table {
            assert_eq!(may_eject(&s, ejected, pool), want, "{ejected} of {pool}");
        }
        let mut h = NodeHealth::default();
        let t = Instant::now();
        for _ in 0..5 {
            assert_eq!(
                h.on_passive(Passive::ServerError, &s, t, false),
                Change::None
            );
        }
        assert!(h.usable(t));
    }

    // an active recovery ends a passive ejection at once
    #[test]
    fn checks_that_bring_a_node_up_end_its_ejection() {
        let s = settings();
        let t = Instant::now();
        let mut h = NodeHealth::default();
        for _ in 0..3 {
            h.on_check(Check::Failed, &s);
        }
        h.on_passive(Passive::ConnectionFailed, &s, t, true);
        h.on_passive(Passive::ConnectionFailed, &s, t, true);
        assert!(!h.usable(t));
        h.on_check(Check::Healthy, &s);
        assert_eq!(h.on_check(Check::Healthy, &s), Change::Up);
        assert!(h.usable(t));
    }
}
