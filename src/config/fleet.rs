//! `[store]` and `[fleet]`: where the control plane keeps its catalog (absent: SQLite in
//! the data directory; `url = "postgres://..."`: a PostgreSQL database several nodes
//! share), and how a node of such a fleet names itself and follows the others (see
//! docs/fleet.md).
//!
//! Must not touch: sockets, runtime state.

use std::time::Duration;

use serde::Deserialize;

use super::{Dur, Secret};

/// `[store]`: the control plane's store.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// `postgres://USER[:PASSWORD]@HOST:PORT/DB`; absent: SQLite in `data_dir`. Never
    /// printed (it may hold a password).
    pub url: Option<Secret>,
}

/// `[fleet]`: this node among the nodes sharing one store.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FleetConfig {
    /// The node's name in leases and logs; absent: the host name.
    pub node_id: Option<String>,
    /// The follower reads the feed at least this often, doorbell or not.
    #[serde(default = "default_poll")]
    pub poll_interval: Dur,
    /// A leader that stops renewing its lease is replaced after this long; a node that
    /// stops renewing its registration leaves the fleet after this long (its clusters
    /// find another home).
    #[serde(default = "default_lease")]
    pub lease: Dur,
    /// Where this node listens for its peers (`"IP:PORT"`, advertised in the store as
    /// is, so a specific address; port 0: any free port). Set: one cluster, one
    /// allowance across the fleet (each cluster admitted by its home node, see
    /// docs/fleet.md); absent: every node counts its clusters' allowances alone.
    pub peer_listen: Option<std::net::SocketAddr>,
}

impl Default for FleetConfig {
    fn default() -> Self {
        FleetConfig {
            node_id: None,
            poll_interval: default_poll(),
            lease: default_lease(),
            peer_listen: None,
        }
    }
}

fn default_poll() -> Dur {
    Dur(Duration::from_secs(2))
}

fn default_lease() -> Dur {
    Dur(Duration::from_secs(5))
}

impl StoreConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        let Some(url) = &self.url else { return Ok(()) };
        let url = url.expose();
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(
                "store.url: a postgres://USER[:PASSWORD]@HOST:PORT/DB URL (absent: SQLite in data_dir)"
                    .into(),
            );
        }
        Ok(())
    }
}

impl FleetConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        if let Some(id) = &self.node_id {
            let ok = |b: u8| b.is_ascii_alphanumeric() || b"-_.".contains(&b);
            if id.is_empty() || id.len() > 64 || !id.bytes().all(ok) {
                return Err(format!(
                    "fleet.node_id: `{id}`: 1 to 64 letters, digits, `-`, `_` or `.`"
                ));
            }
        }
        if self.poll_interval.0 < Duration::from_millis(100) {
            return Err("fleet.poll_interval: must be at least 100ms".into());
        }
        if self.lease.0 < Duration::from_secs(1) {
            return Err("fleet.lease: must be at least 1s".into());
        }
        if let Some(a) = self.peer_listen {
            if a.ip().is_unspecified() {
                return Err(format!(
                    "fleet.peer_listen: `{a}`: a specific address (it is advertised to the other nodes as is)"
                ));
            }
        }
        Ok(())
    }

    /// The configured name, or the host name.
    pub fn node_id(&self) -> String {
        if let Some(id) = &self.node_id {
            return id.clone();
        }
        let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        match name.trim() {
            "" => "node".into(),
            n => n.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_node_ids_are_checked() {
        let store = |u: &str| StoreConfig {
            url: Some(Secret::new(u)),
        };
        assert!(store("postgres://sg:pw@127.0.0.1:5432/sg")
            .validate()
            .is_ok());
        assert!(store("postgresql://sg@127.0.0.1/sg").validate().is_ok());
        let e = store("mysql://x").validate().unwrap_err();
        assert!(e.contains("store.url") && !e.contains("mysql"), "{e}");
        assert!(StoreConfig::default().validate().is_ok());
        let fleet = |id: &str| FleetConfig {
            node_id: Some(id.into()),
            ..FleetConfig::default()
        };
        assert!(fleet("edge-1.eu").validate().is_ok());
        assert!(fleet("").validate().is_err());
        assert!(fleet("a b").validate().is_err());
        assert!(fleet(&"n".repeat(65)).validate().is_err());
        assert!(!FleetConfig::default().node_id().is_empty());
    }
}
