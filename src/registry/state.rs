//! Runtime facts about a cluster that outlive registry snapshots (kept by cluster id across
//! reloads): metering's verdict on disk usage, the last usage reading, and whether the
//! cluster's upstream has answered yet.
//!
//! Written by the control thread (metering, readiness probes) and by cores (shards of
//! indices they just created); read by every core with single atomic loads.
//!
//! Must not touch: I/O (the probes and metering live in `edge::control`), the clock.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};

use crate::config::Mode as ConfigMode;
use crate::policy::mode::{after_metering, DiskLimits, Mode, SetBy};
use crate::policy::shards::Usage;

const METERED_NORMAL: u8 = 0;
const METERED_READ_ONLY: u8 = 1;
const METERED_DISABLED: u8 = 2;

/// A cluster's runtime state.
#[derive(Debug)]
pub struct ClusterState {
    metered: AtomicU8,
    ready: AtomicBool,
    shards: AtomicU64,
    bytes: AtomicU64,
    docs: AtomicU64,
    indices: AtomicU64,
    /// Metering readings taken so far.
    readings: AtomicU64,
}

impl ClusterState {
    /// A new cluster's state; `ready` when its upstream needs no probe first.
    pub fn new(ready: bool) -> Self {
        ClusterState {
            metered: AtomicU8::new(METERED_NORMAL),
            ready: AtomicBool::new(ready),
            shards: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            docs: AtomicU64::new(0),
            indices: AtomicU64::new(0),
            readings: AtomicU64::new(0),
        }
    }

    /// The mode requests see: an operator's mode wins; under `normal`, metering's verdict.
    pub fn effective_mode(&self, configured: ConfigMode) -> Mode {
        if configured != ConfigMode::Normal {
            return configured.into();
        }
        match self.metered.load(Relaxed) {
            METERED_READ_ONLY => Mode::ReadOnly(SetBy::Metering),
            METERED_DISABLED => Mode::Disabled(SetBy::Metering),
            _ => Mode::Normal,
        }
    }

    /// Takes a metering reading; returns the metered mode before and after it.
    pub fn record_usage(&self, usage: Usage, limits: DiskLimits) -> (Mode, Mode) {
        let before = self.effective_mode(ConfigMode::Normal);
        let after = after_metering(before, usage.bytes, limits);
        let code = match after {
            Mode::ReadOnly(_) => METERED_READ_ONLY,
            Mode::Disabled(_) => METERED_DISABLED,
            _ => METERED_NORMAL,
        };
        self.metered.store(code, Relaxed);
        self.shards.store(usage.shards, Relaxed);
        self.bytes.store(usage.bytes, Relaxed);
        self.docs.store(usage.docs, Relaxed);
        self.indices.store(usage.indices, Relaxed);
        self.readings.fetch_add(1, Relaxed);
        (before, after)
    }

    /// The last usage reading (plus shards created since).
    pub fn usage(&self) -> Usage {
        Usage {
            indices: self.indices.load(Relaxed),
            shards: self.shards.load(Relaxed),
            docs: self.docs.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
        }
    }

    /// Metering readings taken so far.
    pub fn readings(&self) -> u64 {
        self.readings.load(Relaxed)
    }

    /// Reserves `asked` shards against `capacity` (an index about to be created); counted
    /// until the next reading replaces the total. `Err(in_use)` when they do not fit.
    pub fn reserve_shards(&self, asked: u64, capacity: u64) -> Result<(), u64> {
        let mut cur = self.shards.load(Relaxed);
        loop {
            match cur.checked_add(asked) {
                Some(total) if total <= capacity => {}
                _ => return Err(cur),
            }
            match self
                .shards
                .compare_exchange_weak(cur, cur + asked, Relaxed, Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(now) => cur = now,
            }
        }
    }

    /// Gives back shards reserved for an index that was not created.
    pub fn release_shards(&self, n: u64) {
        let _ = self
            .shards
            .fetch_update(Relaxed, Relaxed, |v| Some(v.saturating_sub(n)));
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

    // spec 3: overage moves normal to read-only, then disabled; clearing it returns to normal
    #[test]
    fn metering_verdicts_apply_under_normal_only() {
        let s = ClusterState::new(true);
        let limits = DiskLimits::for_plan(100, 2);
        assert_eq!(
            s.record_usage(usage(150), limits),
            (Mode::Normal, Mode::ReadOnly(SetBy::Metering))
        );
        assert_eq!(
            s.effective_mode(ConfigMode::Normal),
            Mode::ReadOnly(SetBy::Metering)
        );
        assert_eq!(
            s.effective_mode(ConfigMode::Maintenance),
            Mode::Maintenance,
            "operator wins"
        );
        s.record_usage(usage(201), limits);
        assert_eq!(
            s.effective_mode(ConfigMode::Normal),
            Mode::Disabled(SetBy::Metering)
        );
        s.record_usage(usage(100), limits);
        assert_eq!(s.effective_mode(ConfigMode::Normal), Mode::Normal);
        assert_eq!(
            s.effective_mode(ConfigMode::ReadOnly),
            Mode::ReadOnly(SetBy::Operator)
        );
        assert_eq!(s.usage().docs, 3);
        assert_eq!(s.readings(), 3);
    }

    #[test]
    fn created_shards_count_until_the_next_reading() {
        let s = ClusterState::new(true);
        s.record_usage(usage(0), DiskLimits::for_plan(100, 2));
        assert_eq!(
            s.reserve_shards(4, 6),
            Ok(()),
            "2 + 4 = 6: exactly at capacity"
        );
        assert_eq!(s.reserve_shards(1, 6), Err(6), "one more does not fit");
        assert_eq!(s.usage().shards, 6);
        s.release_shards(4);
        assert_eq!(s.usage().shards, 2);
        s.reserve_shards(4, 6).unwrap();
        s.record_usage(usage(0), DiskLimits::for_plan(100, 2));
        assert_eq!(s.usage().shards, 2);
    }
}
