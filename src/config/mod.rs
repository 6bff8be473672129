//! The configuration file (TOML) and its validation.
//!
//! Owns: the file format (`[edge]`, `[engine]`, `[admin]`, `[billing]`, `[[plans]]`,
//! `[[clusters]]`), unknown keys refused with a message naming the key, units, defaults, cross-checks (plans exist, ids,
//! host names and usernames unique), and the [`Secret`] type that keeps passwords out of
//! logs and `Debug` output. Also writes the embedded default config (see [`embedded`]).
//! `[[plans]]` and `[[clusters]]` are a declarative seed: the control plane applies them
//! through its command path (see `control::seed`); `[edge]`, `[engine]` and `[admin]` are
//! settings of this process.
//!
//! Files: `settings` (`[edge]`, `[engine]`, `[admin]`, `[debug]`: this process), `seed`
//! (`[[plans]]`, `[[clusters]]`: the declarative seed, the class and mode names), and one file
//! per other table (`billing`, `fleet`, `health`, `pools`); `units` parses sizes and durations.
//! This file holds the whole file's type, loading, [`Secret`] and the cross-table checks.
//!
//! Must not touch: sockets, runtime state. Loading is a pure function of the file's text.

mod billing;
pub mod embedded;
mod fleet;
mod health;
mod pools;
mod seed;
mod settings;
mod units;

use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use serde::Deserialize;

pub use billing::BillingConfig;
pub use fleet::{FleetConfig, StoreConfig};
pub use health::{HealthConfig, HealthSettings};
pub use pools::{pool_named, valid_pool_name, PoolConfig, PoolSpec};
pub use seed::{valid_credential, valid_label, ClusterClass, ClusterConfig, Mode, PlanConfig};
pub use settings::{AdminConfig, DebugConfig, EdgeConfig, EngineConfig, DEBUG_HOOKS_ENV};
pub use units::{parse_duration, parse_size, ByteSize, Dur};

/// A secret string (a cluster password): never shown by `Debug` or `Display`.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    /// The secret itself; call only where it is compared or written to its file.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// The whole configuration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub edge: EdgeConfig,
    pub engine: Option<EngineConfig>,
    /// The admin API (absent: no admin listener, unless this is the embedded default).
    pub admin: Option<AdminConfig>,
    #[serde(default)]
    pub plans: Vec<PlanConfig>,
    #[serde(default)]
    pub clusters: Vec<ClusterConfig>,
    /// Usage history, overage notices (absent: the defaults).
    #[serde(default)]
    pub billing: BillingConfig,
    /// Fault injection for tests (absent: none; see [`DebugConfig`]).
    #[serde(default)]
    pub debug: DebugConfig,
    /// The control plane's store (absent: SQLite in `data_dir`).
    #[serde(default)]
    pub store: StoreConfig,
    /// This node in a fleet sharing a PostgreSQL store.
    #[serde(default)]
    pub fleet: FleetConfig,
    /// Active checks and ejection of upstream nodes (absent: the defaults).
    #[serde(default)]
    pub upstream_health: HealthConfig,
    /// Named pools of upstream nodes, each with its own checks (absent: none).
    #[serde(default)]
    pub upstream_pools: Vec<PoolConfig>,
}

/// A configuration error, with the file and the key it is about.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct ConfigError {
    pub origin: String,
    pub message: String,
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            origin: origin.clone(),
            message: format!("cannot read: {e}"),
        })?;
        Config::parse(&text, &origin)
    }

    /// Parses and validates config text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let err = |message: String| ConfigError {
            origin: origin.to_string(),
            message,
        };
        let mut config: Config = toml::from_str(text).map_err(|e| err(e.to_string()))?;
        config.validate().map_err(err)?;
        for p in &mut config.plans {
            p.overage_extreme_factor
                .get_or_insert(config.edge.disable_factor);
        }
        Ok(config)
    }

    /// The access log destination: `None` when off.
    pub fn access_log_target(&self) -> Option<String> {
        match self.edge.access_log.as_deref() {
            Some("off") => None,
            Some(other) => Some(other.to_string()),
            None => Some(self.edge.data_dir.join("access.log").display().to_string()),
        }
    }

    /// The `[[upstream_pools]]`, checked, their settings over `[upstream_health]`.
    pub fn pools(&self) -> Result<Vec<PoolSpec>, String> {
        pools::pool_specs(&self.upstream_pools, &self.upstream_health)
    }

    fn validate(&self) -> Result<(), String> {
        self.upstream_health.settings()?;
        let pools = self.pools()?;
        let pool_names: HashSet<&str> = pools.iter().map(|p| p.name.as_str()).collect();
        self.edge.validate()?;
        if let Some(a) = &self.admin {
            a.validate(&self.edge, &pool_names)?;
        }
        self.billing.validate()?;
        self.store.validate()?;
        self.fleet.validate()?;
        if self.fleet.peer_listen.is_some() && self.store.url.is_none() {
            return Err(
                "fleet.peer_listen: a fleet needs a shared store ([store] url = \"postgres://...\")"
                    .into(),
            );
        }
        self.validate_plans()?;
        self.validate_clusters(&pool_names)
    }
}

#[cfg(test)]
mod tests;
