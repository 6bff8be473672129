//! `[upstream_health]`: how the edge checks its upstream nodes and ejects failing ones
//! (see `nodes`). Every key is optional; the defaults suit a small Elasticsearch cluster.

use std::time::Duration;

use serde::Deserialize;

use super::units::Dur;

/// How nodes are checked and ejected (`[upstream_health]`, defaults filled in; read by `nodes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthSettings {
    /// Path of the active check (`GET`); any 2xx answer is healthy.
    pub path: String,
    /// Time between two active checks of one node.
    pub interval: Duration,
    /// How long an active check may take.
    pub timeout: Duration,
    /// Successful checks in a row that bring a down node up.
    pub rise: u32,
    /// Failed checks in a row that take an up node down.
    pub fall: u32,
    /// Failed requests in a row (connection failures or 5xx) that eject a node.
    pub passive_failures: u32,
    /// The first ejection's length; each ejection in a row doubles it.
    pub eject_base: Duration,
    /// The longest ejection.
    pub eject_max: Duration,
    /// The largest share of a pool's nodes (percent) ejected at once.
    pub max_ejected_percent: u8,
    /// Time between two lookups of the nodes' host names (`[upstream_health]` only).
    pub resolve_interval: Duration,
}

impl Default for HealthSettings {
    fn default() -> Self {
        HealthSettings {
            path: "/".into(),
            interval: Duration::from_secs(2),
            timeout: Duration::from_secs(1),
            rise: 2,
            fall: 3,
            passive_failures: 3,
            eject_base: Duration::from_secs(5),
            eject_max: Duration::from_secs(300),
            max_ejected_percent: 50,
            resolve_interval: Duration::from_secs(30),
        }
    }
}

/// The section as written.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HealthConfig {
    /// Path of the active check (`GET`, default `/`).
    pub path: Option<String>,
    /// Time between checks of one node (default `2s`).
    pub interval: Option<Dur>,
    /// How long a check may take (default `1s`).
    pub timeout: Option<Dur>,
    /// Successful checks in a row that bring a node back (default 2).
    pub rise: Option<u32>,
    /// Failed checks in a row that take a node out (default 3).
    pub fall: Option<u32>,
    /// Failed requests in a row (connection failures, 5xx) that eject a node (default 3).
    pub passive_failures: Option<u32>,
    /// First ejection's length, doubled for each one in a row (default `5s`).
    pub eject_base: Option<Dur>,
    /// Longest ejection (default `5m`).
    pub eject_max: Option<Dur>,
    /// Largest share of a cluster's nodes ejected at once, in percent (default 50).
    pub max_ejected_percent: Option<u8>,
    /// Time between two lookups of the nodes' host names (default `30s`; not per pool).
    pub resolve_interval: Option<Dur>,
}

impl HealthConfig {
    /// The settings, defaults filled in; `Err` names the key whose value cannot work.
    pub fn settings(&self) -> Result<HealthSettings, String> {
        self.settings_of("upstream_health")
    }

    /// These keys where set, `base`'s elsewhere (a pool's settings over `[upstream_health]`).
    pub fn over(&self, base: &HealthConfig) -> HealthConfig {
        HealthConfig {
            path: self.path.clone().or_else(|| base.path.clone()),
            interval: self.interval.or(base.interval),
            timeout: self.timeout.or(base.timeout),
            rise: self.rise.or(base.rise),
            fall: self.fall.or(base.fall),
            passive_failures: self.passive_failures.or(base.passive_failures),
            eject_base: self.eject_base.or(base.eject_base),
            eject_max: self.eject_max.or(base.eject_max),
            max_ejected_percent: self.max_ejected_percent.or(base.max_ejected_percent),
            resolve_interval: self.resolve_interval.or(base.resolve_interval),
        }
    }

    /// [`HealthConfig::settings`], errors naming their keys under `section`.
    pub fn settings_of(&self, section: &str) -> Result<HealthSettings, String> {
        let d = HealthSettings::default();
        let s = HealthSettings {
            path: self.path.clone().unwrap_or(d.path),
            interval: self.interval.map_or(d.interval, |x| x.0),
            timeout: self.timeout.map_or(d.timeout, |x| x.0),
            rise: self.rise.unwrap_or(d.rise),
            fall: self.fall.unwrap_or(d.fall),
            passive_failures: self.passive_failures.unwrap_or(d.passive_failures),
            eject_base: self.eject_base.map_or(d.eject_base, |x| x.0),
            eject_max: self.eject_max.map_or(d.eject_max, |x| x.0),
            max_ejected_percent: self.max_ejected_percent.unwrap_or(d.max_ejected_percent),
            resolve_interval: self.resolve_interval.map_or(d.resolve_interval, |x| x.0),
        };
        let bad = |key: &str, why: &str| Err(format!("{section}.{key}: {why}"));
        if !s.path.starts_with('/') || s.path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return bad(
                "path",
                "must start with / and hold no spaces or control bytes",
            );
        }
        if s.interval.is_zero() || s.timeout.is_zero() || s.eject_base.is_zero() {
            return bad("interval, timeout, eject_base", "must be longer than 0");
        }
        if s.rise == 0 || s.fall == 0 || s.passive_failures == 0 {
            return bad("rise, fall, passive_failures", "must be at least 1");
        }
        if s.eject_max < s.eject_base {
            return bad("eject_max", "must not be shorter than eject_base");
        }
        if s.eject_max > Duration::from_secs(86_400) || s.interval > Duration::from_secs(3_600) {
            return bad("eject_max, interval", "must not be longer than 1d and 1h");
        }
        let r = s.resolve_interval;
        if r < Duration::from_secs(1) || r > Duration::from_secs(86_400) {
            return bad("resolve_interval", "must be between 1s and 1d");
        }
        if s.max_ejected_percent > 100 {
            return bad("max_ejected_percent", "is a percentage (0 to 100)");
        }
        Ok(s)
    }
}
