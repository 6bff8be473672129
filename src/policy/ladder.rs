//! The overage ladder (spec 3 "usage overage", issue 12): what a metering reading does to a
//! cluster whose usage is over its plan. Pure: the reading, the plan, the cluster's overage
//! so far and the time come in; the next overage (or none) and the mode to set come out.
//!
//! - Over a limit (disk above the plan's, or more shards than its capacity): a **notice**
//!   at once (the cluster stays normal).
//! - Still over after the plan's grace period (default 10 days): **read-only** (deleting an
//!   index still passes: it is how the customer clears the overage).
//! - Still over after a second period (default 15 days more): **disabled**.
//! - Disk above the plan's extreme factor (default 2x its disk): **disabled** at once, the
//!   ladder skipped; below it again (but still over) the step follows the time elapsed.
//! - Back at or under every limit: the overage ends and the cluster is **normal** again.
//! - The ladder sets the mode only of a cluster that was `normal` when the overage began,
//!   and only until an operator sets a mode (any mode, `normal` included) during it: an
//!   operator's mode is never overridden. The steps are still recorded.
//!
//! Must not touch: the registry, the store, the clock (time is passed in), I/O.

use serde::{Deserialize, Serialize};

use super::pricing::Millis;
use super::shards::{exceeded, Usage};
use crate::config::Mode;

/// A day in milliseconds.
pub const DAY_MS: i64 = 86_400_000;

/// A plan's ladder settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// From the notice to read-only.
    pub grace_ms: i64,
    /// From read-only to disabled.
    pub disable_after_ms: i64,
    /// Disk above this many times the plan's: disabled at once.
    pub extreme_factor: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            grace_ms: 10 * DAY_MS,
            disable_after_ms: 15 * DAY_MS,
            extreme_factor: 2,
        }
    }
}

/// The default grace period in milliseconds (what a stored plan without one gets).
pub fn default_grace_ms() -> u64 {
    Settings::default().grace_ms as u64
}

/// The default second period in milliseconds.
pub fn default_disable_after_ms() -> u64 {
    Settings::default().disable_after_ms as u64
}

/// The default extreme factor.
pub fn default_extreme_factor() -> u64 {
    Settings::default().extreme_factor
}

/// What a plan allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub disk: u64,
    pub shards: u64,
}

/// A rung of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    Notice,
    ReadOnly,
    Disabled,
}

impl Step {
    /// `notice`, `read-only`, `disabled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Notice => "notice",
            Step::ReadOnly => "read-only",
            Step::Disabled => "disabled",
        }
    }
}

/// An overage in progress, kept in the cluster's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overage {
    /// The reading that first found the cluster over its plan.
    pub since: Millis,
    pub step: Step,
    /// When the current step was reached.
    pub step_at: Millis,
    /// Disabled at once: disk above the extreme factor.
    pub extreme: bool,
    /// The ladder sets the cluster's mode (it was normal when the overage began, and no
    /// operator has set a mode since).
    pub owns_mode: bool,
    /// When it becomes (or became) read-only, and disabled, if still over.
    pub read_only_at: Millis,
    pub disabled_at: Millis,
    /// The reading and the plan at the step.
    pub disk_bytes: u64,
    pub disk_allowed: u64,
    pub shards: u64,
    pub shards_allowed: u64,
    pub extreme_factor: u64,
}

/// What a reading changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    /// The overage after the reading (`None`: it ended).
    pub overage: Option<Overage>,
    /// The mode to set, with its reason (`None`: the mode stays).
    pub mode: Option<(Mode, Option<String>)>,
}

/// What a reading of `used` means for a cluster in `mode` with `current` overage, on a plan
/// with `limits` and `settings`, at `now`. `None`: nothing changes (no overage, or the same
/// step as before).
pub fn evaluate(
    current: Option<&Overage>,
    mode: Mode,
    used: Usage,
    limits: Limits,
    settings: Settings,
    now: Millis,
) -> Option<Moved> {
    let over = used.bytes > limits.disk || used.shards > limits.shards;
    if !over {
        let ended = current?;
        let back = ended.owns_mode && matches!(mode, Mode::ReadOnly | Mode::Disabled);
        return Some(Moved {
            overage: None,
            mode: back.then_some((Mode::Normal, None)),
        });
    }
    let extreme_factor = settings.extreme_factor.max(1);
    let extreme = used.bytes > limits.disk.saturating_mul(extreme_factor);
    let since = current.map_or(now, |c| c.since);
    let read_only_at = since.saturating_add(settings.grace_ms);
    let disabled_at = read_only_at.saturating_add(settings.disable_after_ms);
    let step = if extreme || now >= disabled_at {
        Step::Disabled
    } else if now >= read_only_at {
        Step::ReadOnly
    } else {
        Step::Notice
    };
    if current.is_some_and(|c| c.step == step && c.extreme == extreme) {
        return None;
    }
    let next = Overage {
        since,
        step,
        step_at: now,
        extreme,
        owns_mode: current.map_or(mode == Mode::Normal, |c| c.owns_mode),
        read_only_at,
        disabled_at,
        disk_bytes: used.bytes,
        disk_allowed: limits.disk,
        shards: used.shards,
        shards_allowed: limits.shards,
        extreme_factor,
    };
    let mode = next
        .owns_mode
        .then(|| mode_of(&next))
        .flatten()
        .filter(|(m, _)| {
            // A notice on a normal cluster changes nothing but the record.
            !(*m == Mode::Normal && mode == Mode::Normal)
        });
    Some(Moved {
        overage: Some(next),
        mode,
    })
}

/// The mode a step sets, with the reason the 403 body shows.
fn mode_of(o: &Overage) -> Option<(Mode, Option<String>)> {
    match o.step {
        Step::Notice => Some((Mode::Normal, None)),
        Step::ReadOnly => Some((Mode::ReadOnly, Some(reason(o)))),
        Step::Disabled => Some((Mode::Disabled, Some(reason(o)))),
    }
}

/// `ms` as RFC 3339 (UTC, seconds).
pub fn rfc3339(ms: Millis) -> String {
    crate::calendar::rfc3339_of_millis(ms)
}

/// What is over: `12 shards in use, the plan allows 10; 1500 bytes of disk in use, the
/// plan allows 1000`.
pub fn over_text(o: &Overage) -> String {
    exceeded(o.shards, o.shards_allowed, o.disk_bytes, o.disk_allowed).join("; ")
}

/// The sentence the 403 body, the audit log and the notice show for `o`.
pub fn reason(o: &Overage) -> String {
    let over = over_text(o);
    match (o.step, o.extreme) {
        (Step::Disabled, true) => format!(
            "usage far over the plan ({over}: more than {}x its disk): disabled at once on {}",
            o.extreme_factor,
            rfc3339(o.step_at)
        ),
        (Step::Notice, _) => format!(
            "usage over the plan since {} ({over}): read-only from {}, disabled from {} unless usage is back under the plan",
            rfc3339(o.since),
            rfc3339(o.read_only_at),
            rfc3339(o.disabled_at)
        ),
        (Step::ReadOnly, _) => format!(
            "usage over the plan since {} ({over}): read-only since {}, disabled from {} unless usage is back under the plan",
            rfc3339(o.since),
            rfc3339(o.step_at),
            rfc3339(o.disabled_at)
        ),
        (Step::Disabled, false) => format!(
            "usage over the plan since {} ({over}): read-only from {}, disabled since {}",
            rfc3339(o.since),
            rfc3339(o.read_only_at),
            rfc3339(o.step_at)
        ),
    }
}

#[cfg(test)]
#[path = "ladder_tests.rs"]
mod tests;
