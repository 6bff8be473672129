//! `[[upstream_pools]]`: named lists of upstream nodes that clusters (and `[admin]
//! shared_upstreams`) refer to by name, each with its own health-check settings over
//! `[upstream_health]`; and the `upstream` key of a cluster, a pool's name or a list of
//! `host:port` nodes.
//!
//! A cluster's upstream is kept as a list of strings everywhere (file seed, store, admin
//! API): a list of one entry without `:` names a pool (see [`pool_named`]); node entries
//! always hold a `:`, so the two never read alike.
//!
//! Must not touch: DNS (names are resolved by the registry's caller), runtime state.

use std::collections::HashSet;
use std::sync::Arc;

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;

use super::health::{HealthConfig, HealthSettings};

/// One `[[upstream_pools]]` table as written: `name`, `nodes`, and any key of
/// `[upstream_health]` but `resolve_interval`.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolConfig {
    pub name: String,
    pub nodes: Vec<String>,
    pub health: HealthConfig,
}

impl<'de> Deserialize<'de> for PoolConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut t = toml::Table::deserialize(d)?;
        let name = match t.remove("name") {
            Some(toml::Value::String(s)) => s,
            Some(_) => return Err(D::Error::custom("`name` must be a string")),
            None => return Err(D::Error::custom("missing field `name`")),
        };
        let nodes = match t.remove("nodes") {
            Some(v) => Vec::<String>::deserialize(v)
                .map_err(|e| D::Error::custom(format!("pool `{name}`: `nodes`: {e}")))?,
            None => return Err(D::Error::custom(format!("pool `{name}`: missing `nodes`"))),
        };
        let health = HealthConfig::deserialize(toml::Value::Table(t))
            .map_err(|e| D::Error::custom(format!("pool `{name}`: {e}")))?;
        Ok(PoolConfig {
            name,
            nodes,
            health,
        })
    }
}

/// A pool ready for use: its nodes as written (names resolved later) and its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolSpec {
    pub name: String,
    pub nodes: Vec<String>,
    pub health: Arc<HealthSettings>,
}

/// The pool a cluster's `upstream` list names, if it names one.
pub fn pool_named(upstream: &[String]) -> Option<&str> {
    match upstream {
        [one] if !one.contains(':') => Some(one),
        _ => None,
    }
}

/// A cluster's `upstream` in the file: a pool's name (`"main"`) or a list of `host:port`.
pub fn upstream_field<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Field {
        Pool(String),
        Nodes(Vec<String>),
    }
    match Field::deserialize(d) {
        Ok(Field::Pool(p)) if p.contains(':') => Err(D::Error::custom(format!(
            "`{p}`: a string names an upstream pool; list nodes as [\"host:port\", ...]"
        ))),
        Ok(Field::Pool(p)) => Ok(Some(vec![p])),
        Ok(Field::Nodes(v)) => Ok(Some(v)),
        Err(_) => Err(D::Error::custom(
            "a pool's name or a list of \"host:port\" nodes",
        )),
    }
}

/// Whether `s` can be a pool's name: 1-63 of a-z, 0-9, `-` and `_`.
pub fn valid_pool_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// The pools of the file, checked: names valid and unique, nodes `host:port` and at
/// least one, settings valid (the pool's over `base`, `resolve_interval` not allowed).
pub fn pool_specs(pools: &[PoolConfig], base: &HealthConfig) -> Result<Vec<PoolSpec>, String> {
    let mut names = HashSet::new();
    let mut out = Vec::with_capacity(pools.len());
    for (i, p) in pools.iter().enumerate() {
        let at = format!("upstream_pools[{i}]");
        if !valid_pool_name(&p.name) {
            return Err(format!(
                "{at}.name: `{}` must be 1-63 of a-z, 0-9, `-`, `_`",
                p.name
            ));
        }
        if !names.insert(p.name.as_str()) {
            return Err(format!("{at}.name: pool `{}` is defined twice", p.name));
        }
        if p.nodes.is_empty() {
            return Err(format!("{at}.nodes: pool `{}` has no nodes", p.name));
        }
        if let Some(bad) = p.nodes.iter().find(|n| !n.contains(':')) {
            return Err(format!("{at}.nodes: `{bad}` must be host:port"));
        }
        if p.health.resolve_interval.is_some() {
            return Err(format!(
                "{at}.resolve_interval: set in [upstream_health] only (one lookup schedule for every name)"
            ));
        }
        let health = p.health.over(base).settings_of(&at)?;
        out.push(PoolSpec {
            name: p.name.clone(),
            nodes: p.nodes.clone(),
            health: Arc::new(health),
        });
    }
    Ok(out)
}
