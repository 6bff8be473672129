//! The declarative seed of the file: `[[plans]]` and `[[clusters]]` (applied by the control
//! plane through its command path, see `control::seed`), the names of cluster classes and
//! modes, and their checks: plans defined once with whole lanes, clusters with unique ids,
//! host names and usernames, valid labels and credentials, an upstream that exists.
//!
//! Must not touch: the process's settings (`settings`), the store, sockets.

use std::collections::HashSet;
use std::time::Duration;

use serde::Deserialize;

use super::{pool_named, pools, ByteSize, Config, Dur, Secret};

/// Cluster class (spec 1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
pub enum ClusterClass {
    #[serde(rename = "multitenant")]
    Multitenant,
    #[serde(rename = "single-tenant")]
    SingleTenant,
}

/// Cluster mode (spec 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
pub enum Mode {
    #[serde(rename = "normal")]
    Normal,
    #[serde(rename = "read-only")]
    ReadOnly,
    #[serde(rename = "disabled")]
    Disabled,
    #[serde(rename = "maintenance")]
    Maintenance,
    /// Not provisioned yet.
    #[serde(rename = "provisioning")]
    Provisioning,
    #[serde(rename = "destroyed")]
    Destroyed,
}

impl ClusterClass {
    /// The name used in files and the admin API.
    pub fn as_str(self) -> &'static str {
        match self {
            ClusterClass::Multitenant => "multitenant",
            ClusterClass::SingleTenant => "single-tenant",
        }
    }

    /// The class named `s` (as in files and the admin API).
    pub fn parse(s: &str) -> Option<Self> {
        [ClusterClass::Multitenant, ClusterClass::SingleTenant]
            .into_iter()
            .find(|c| c.as_str() == s)
    }
}

impl Mode {
    /// Every mode, in the order of spec 3.
    pub const ALL: [Mode; 6] = [
        Mode::Normal,
        Mode::ReadOnly,
        Mode::Disabled,
        Mode::Maintenance,
        Mode::Provisioning,
        Mode::Destroyed,
    ];

    /// The name used in files and the admin API.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Normal => "normal",
            Mode::ReadOnly => "read-only",
            Mode::Disabled => "disabled",
            Mode::Maintenance => "maintenance",
            Mode::Provisioning => "provisioning",
            Mode::Destroyed => "destroyed",
        }
    }

    /// The mode named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Mode::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// `[[plans]]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlanConfig {
    pub name: String,
    /// Requests in flight at the upstream at once, across all cores.
    pub concurrency: u32,
    /// Requests that may wait for a slot; beyond: immediate 429.
    pub queue_size: u32,
    /// Longest wait for a slot (429).
    pub queue_timeout: Dur,
    pub shards: u64,
    pub disk: ByteSize,
    pub memory: ByteSize,
    /// More actions in one `_bulk`: 413.
    pub max_bulk_actions: u64,
    /// Monthly price in integer cents (invoices are prorated from it).
    #[serde(default)]
    pub monthly_price_cents: u64,
    /// Open scroll and point-in-time contexts allowed at once, counted as the upstream
    /// counts them: one per shard searched (a scroll over a 5-shard index is 5). On a
    /// shared upstream whose limit the plans together exceed, each cluster gets its part.
    #[serde(default = "default_max_open_contexts")]
    pub max_open_contexts: u64,
    /// Over the plan this long after the notice: read-only (the overage ladder).
    #[serde(default = "default_overage_grace")]
    pub overage_grace: Dur,
    /// Read-only this long, still over: disabled.
    #[serde(default = "default_overage_disable_after")]
    pub overage_disable_after: Dur,
    /// Disk above this many times the plan's: disabled at once (absent: `[edge]
    /// disable_factor`, whose default is 2).
    pub overage_extreme_factor: Option<u64>,
    /// Searches' own allowance and queue (absent: searches share `concurrency`).
    #[serde(default)]
    pub search_concurrency: Option<u32>,
    #[serde(default)]
    pub search_queue_size: Option<u32>,
    /// Writes' own allowance and queue (absent: writes share `concurrency`).
    #[serde(default)]
    pub write_concurrency: Option<u32>,
    #[serde(default)]
    pub write_queue_size: Option<u32>,
}

/// `[[clusters]]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    pub id: String,
    pub hostname: String,
    pub region: String,
    pub class: ClusterClass,
    pub plan: String,
    pub username: String,
    pub password: Secret,
    #[serde(default = "default_mode")]
    pub mode: Mode,
    /// Upstream nodes (`host:port`), or an `[[upstream_pools]]` name; absent: the
    /// embedded engine.
    #[serde(default, deserialize_with = "pools::upstream_field")]
    pub upstream: Option<Vec<String>>,
}

fn default_overage_grace() -> Dur {
    Dur(Duration::from_secs(10 * 86_400))
}

fn default_overage_disable_after() -> Dur {
    Dur(Duration::from_secs(15 * 86_400))
}

fn default_max_open_contexts() -> u64 {
    500
}

fn default_mode() -> Mode {
    Mode::Normal
}

/// One DNS label: 1-63 of a-z, 0-9 and `-`, not starting or ending with `-`.
pub fn valid_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && !s.starts_with('-')
        && !s.ends_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A username or password: 1-128 ASCII letters and digits.
pub fn valid_credential(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_alphanumeric())
}

impl PlanConfig {
    /// The plan's search and write lanes are whole: each concurrency comes with its queue
    /// size and is at least 1 (the registry checks stored plans the same way, with
    /// `policy::admit::lanes::split_of`).
    fn check_lanes(&self) -> Result<(), String> {
        let lanes = [
            ("search", self.search_concurrency, self.search_queue_size),
            ("write", self.write_concurrency, self.write_queue_size),
        ];
        for (kind, concurrency, queue) in lanes {
            match (concurrency, queue) {
                (Some(0), _) => return Err(format!("{kind}_concurrency: must be at least 1")),
                (Some(_), None) => {
                    return Err(format!(
                        "{kind}_queue_size: required with {kind}_concurrency"
                    ))
                }
                (None, Some(_)) => {
                    return Err(format!(
                        "{kind}_concurrency: required with {kind}_queue_size"
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl Config {
    pub(super) fn validate_plans(&self) -> Result<(), String> {
        let mut names = HashSet::new();
        for (i, p) in self.plans.iter().enumerate() {
            if !names.insert(p.name.as_str()) {
                return Err(format!(
                    "plans[{i}].name: plan `{}` is defined twice",
                    p.name
                ));
            }
            if p.concurrency == 0 {
                return Err(format!("plans[{i}].concurrency: must be at least 1"));
            }
            if p.overage_extreme_factor == Some(0) {
                return Err(format!(
                    "plans[{i}].overage_extreme_factor: must be at least 1"
                ));
            }
            p.check_lanes().map_err(|e| format!("plans[{i}].{e}"))?;
        }
        Ok(())
    }

    pub(super) fn validate_clusters(&self, pools: &HashSet<&str>) -> Result<(), String> {
        let plans: HashSet<&str> = self.plans.iter().map(|p| p.name.as_str()).collect();
        let (mut ids, mut hosts, mut users) = (HashSet::new(), HashSet::new(), HashSet::new());
        for (i, c) in self.clusters.iter().enumerate() {
            let at = |key: &str| format!("clusters[{i}].{key}");
            if !valid_label(&c.id) {
                return Err(format!(
                    "{}: `{}` must be 1-63 of a-z, 0-9, `-`",
                    at("id"),
                    c.id
                ));
            }
            for (key, value) in [("hostname", &c.hostname), ("region", &c.region)] {
                if !valid_label(value) {
                    return Err(format!(
                        "{}: `{value}` must be one DNS label (1-63 of a-z, 0-9, `-`)",
                        at(key)
                    ));
                }
            }
            if !plans.contains(c.plan.as_str()) {
                return Err(format!("{}: no plan named `{}`", at("plan"), c.plan));
            }
            if !ids.insert(c.id.as_str()) {
                return Err(format!("{}: cluster `{}` is defined twice", at("id"), c.id));
            }
            if !hosts.insert((c.hostname.as_str(), c.region.as_str())) {
                return Err(format!(
                    "{}: `{}.{}` is used twice",
                    at("hostname"),
                    c.hostname,
                    c.region
                ));
            }
            if !valid_credential(&c.username) || !valid_credential(c.password.expose()) {
                return Err(format!(
                    "{}: username and password must be 1-128 alphanumeric characters",
                    at("username")
                ));
            }
            if !users.insert(c.username.as_str()) {
                return Err(format!(
                    "{}: username `{}` is used twice",
                    at("username"),
                    c.username
                ));
            }
            self.validate_upstream(c, pools, &at)?;
        }
        Ok(())
    }

    fn validate_upstream(
        &self,
        c: &ClusterConfig,
        pools: &HashSet<&str>,
        at: &dyn Fn(&str) -> String,
    ) -> Result<(), String> {
        if let Some(p) = c.upstream.as_deref().and_then(pool_named) {
            if !pools.contains(p) {
                return Err(format!(
                    "{}: no [[upstream_pools]] named `{p}`",
                    at("upstream")
                ));
            }
            return Ok(());
        }
        match &c.upstream {
            None if self.engine.is_none() => Err(format!(
                "{}: no upstream given and no [engine] section to default to",
                at("upstream")
            )),
            Some(list) if list.is_empty() => Err(format!("{}: empty list", at("upstream"))),
            Some(list) => {
                for u in list {
                    if !u.contains(':') {
                        return Err(format!("{}: `{u}` must be host:port", at("upstream")));
                    }
                }
                Ok(())
            }
            None => Ok(()),
        }
    }
}
