//! The registry: clusters, plans, credentials and modes as an immutable [`Snapshot`],
//! published through [`Registry`] and swapped atomically on reload.
//!
//! Owns: building a snapshot from a validated [`Config`] (pure), carrying each cluster's
//! allowance across snapshots by cluster id so a reload never forgets requests in flight
//! (a plan change resizes the allowance at once), and lookups by host and by username.
//!
//! Must not touch: sockets, monoio, the clock. Cores read snapshots; only the control
//! thread publishes them.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::config::{ClusterClass, Config, Mode, PlanConfig, Secret};
use crate::policy::admit::Allowance;

/// A plan's limits (spec 1.6, 8).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub name: String,
    pub concurrency: u32,
    pub queue_size: u32,
    pub queue_timeout: Duration,
    pub shards: u64,
    pub disk: u64,
    pub memory: u64,
    pub max_bulk_actions: u64,
    pub monthly_price_cents: u64,
}

impl From<&PlanConfig> for Plan {
    fn from(p: &PlanConfig) -> Self {
        Plan {
            name: p.name.clone(),
            concurrency: p.concurrency,
            queue_size: p.queue_size,
            queue_timeout: p.queue_timeout.0,
            shards: p.shards,
            disk: p.disk.0,
            memory: p.memory.0,
            max_bulk_actions: p.max_bulk_actions,
            monthly_price_cents: p.monthly_price_cents,
        }
    }
}

/// One customer cluster as the edge sees it.
#[derive(Debug)]
pub struct Cluster {
    pub id: String,
    pub hostname: String,
    pub region: String,
    pub class: ClusterClass,
    pub mode: Mode,
    pub plan: Arc<Plan>,
    pub username: String,
    pub password: Secret,
    /// Upstream nodes, resolved.
    pub upstreams: Vec<SocketAddr>,
    /// The allowance shared by every core (and kept across snapshots).
    pub allowance: Arc<Allowance>,
}

/// An immutable view of every cluster; cheap to share between cores.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Increases with every published snapshot.
    pub generation: u64,
    pub domain: String,
    pub route_by_username: bool,
    clusters: Vec<Arc<Cluster>>,
    by_host: HashMap<String, usize>,
    by_username: HashMap<String, usize>,
}

/// Why a snapshot could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cluster `{cluster}`: {message}")]
pub struct RegistryError {
    pub cluster: String,
    pub message: String,
}

impl Snapshot {
    /// Builds a snapshot from `config`, reusing the allowances of `prev` by cluster id
    /// (resized to the new plan).
    pub fn build(
        config: &Config,
        prev: Option<&Snapshot>,
        generation: u64,
    ) -> Result<Snapshot, RegistryError> {
        let plans: HashMap<&str, Arc<Plan>> = config
            .plans
            .iter()
            .map(|p| (p.name.as_str(), Arc::new(Plan::from(p))))
            .collect();
        let engine = config.engine.as_ref().map(|e| e.listen);
        let mut snap = Snapshot {
            generation,
            domain: config.edge.domain.to_ascii_lowercase(),
            route_by_username: config.edge.route_by_username,
            ..Snapshot::default()
        };
        for c in &config.clusters {
            let err = |message: String| RegistryError {
                cluster: c.id.clone(),
                message,
            };
            let plan = plans
                .get(c.plan.as_str())
                .cloned()
                .ok_or_else(|| err(format!("no plan `{}`", c.plan)))?;
            let upstreams = match &c.upstream {
                Some(list) => resolve(list).map_err(err)?,
                None => vec![engine.ok_or_else(|| err("no upstream and no engine".into()))?],
            };
            let allowance = match prev.and_then(|p| p.by_id(&c.id)) {
                Some(old) => {
                    old.allowance.resize(plan.concurrency, plan.queue_size);
                    old.allowance.clone()
                }
                None => Arc::new(Allowance::new(plan.concurrency, plan.queue_size)),
            };
            let index = snap.clusters.len();
            snap.by_host
                .insert(format!("{}.{}", c.hostname, c.region), index);
            snap.by_username.insert(c.username.clone(), index);
            snap.clusters.push(Arc::new(Cluster {
                id: c.id.clone(),
                hostname: c.hostname.clone(),
                region: c.region.clone(),
                class: c.class,
                mode: c.mode,
                plan,
                username: c.username.clone(),
                password: c.password.clone(),
                upstreams,
                allowance,
            }));
        }
        Ok(snap)
    }

    /// Every cluster.
    pub fn clusters(&self) -> &[Arc<Cluster>] {
        &self.clusters
    }

    /// The cluster with this id.
    pub fn by_id(&self, id: &str) -> Option<&Arc<Cluster>> {
        self.clusters.iter().find(|c| c.id == id)
    }

    /// The cluster at `<hostname>.<region>` (lowercase, domain already removed).
    pub fn by_host(&self, hostname_region: &str) -> Option<&Arc<Cluster>> {
        self.by_host
            .get(hostname_region)
            .map(|&i| &self.clusters[i])
    }

    /// The cluster whose username is `username` (exact).
    pub fn by_username(&self, username: &str) -> Option<&Arc<Cluster>> {
        self.by_username.get(username).map(|&i| &self.clusters[i])
    }
}

fn resolve(list: &[String]) -> Result<Vec<SocketAddr>, String> {
    let mut out = Vec::with_capacity(list.len());
    for u in list {
        let addr = u
            .to_socket_addrs()
            .map_err(|e| format!("upstream `{u}`: {e}"))?
            .next()
            .ok_or_else(|| format!("upstream `{u}` resolves to nothing"))?;
        out.push(addr);
    }
    Ok(out)
}

/// The published snapshot, read by every core without locks.
#[derive(Debug)]
pub struct Registry {
    current: ArcSwap<Snapshot>,
    generation: AtomicU64,
}

impl Registry {
    /// A registry publishing `first`.
    pub fn new(first: Snapshot) -> Self {
        let generation = AtomicU64::new(first.generation);
        Registry {
            current: ArcSwap::from_pointee(first),
            generation,
        }
    }

    /// The current snapshot.
    pub fn load(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// The current generation (cheap check before [`Registry::load`]).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Builds and publishes a snapshot of `config`; returns its generation.
    pub fn apply(&self, config: &Config) -> Result<u64, RegistryError> {
        let prev = self.load();
        let generation = prev.generation + 1;
        let next = Snapshot::build(config, Some(&prev), generation)?;
        self.current.store(Arc::new(next));
        self.generation.store(generation, Ordering::Release);
        Ok(generation)
    }
}

#[cfg(test)]
pub(crate) mod tests;
