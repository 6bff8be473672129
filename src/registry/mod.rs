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
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use crate::config::{ClusterClass, ClusterConfig, Config, Mode, PlanConfig, Secret};
use crate::policy::admit::Allowance;
use crate::policy::auth::credentials_match;
use crate::tenancy::{Prefix, TenancyKey};

mod directory;
pub mod state;
pub use state::ClusterState;

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
    /// Metering verdict, usage, readiness (kept across snapshots).
    pub state: Arc<ClusterState>,
    /// The pair replaced by a rotation, still accepted until its deadline (grace period).
    pub previous: Option<OldCredentials>,
    /// The namespace of the multitenant class's index names on the shared upstream.
    pub prefix: Option<Prefix>,
}

/// Credentials replaced by a rotation and still accepted for a grace period.
#[derive(Debug, Clone)]
pub struct OldCredentials {
    pub username: String,
    pub password: Secret,
    pub until: Instant,
}

impl Cluster {
    /// Whether `user:pass` opens this cluster at `now` (constant-time comparisons).
    pub fn accepts(&self, user: &[u8], pass: &[u8], now: Instant) -> bool {
        let current = credentials_match(
            user,
            pass,
            self.username.as_bytes(),
            self.password.expose().as_bytes(),
        );
        let old = self.previous.as_ref().is_some_and(|o| {
            now < o.until
                && credentials_match(
                    user,
                    pass,
                    o.username.as_bytes(),
                    o.password.expose().as_bytes(),
                )
        });
        current | old
    }

    /// The mode requests see (operator's mode, or metering's verdict under normal).
    pub fn effective_mode(&self) -> crate::policy::mode::Mode {
        self.state.effective_mode(self.mode)
    }
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
    by_id: HashMap<String, usize>,
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
    /// Builds a snapshot from `config` at `now`, reusing the allowances and states of `prev`
    /// by cluster id (allowances resized to the new plan), and keeping rotated-out
    /// credentials for the configured grace period.
    pub fn build(
        config: &Config,
        prev: Option<&Snapshot>,
        generation: u64,
        now: Instant,
        key: &TenancyKey,
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
            let old = prev.and_then(|p| p.by_id(&c.id));
            let allowance = match old {
                Some(old) => {
                    old.allowance.resize(plan.concurrency, plan.queue_size);
                    old.allowance.clone()
                }
                None => Arc::new(Allowance::new(plan.concurrency, plan.queue_size)),
            };
            let state = carry_state(old, c.class, &upstreams);
            let previous = rotated(old, c, config.edge.credential_grace.0, now);
            let prefix = (c.class == ClusterClass::Multitenant).then(|| Prefix::derive(key, &c.id));
            let index = snap.clusters.len();
            snap.by_host
                .insert(format!("{}.{}", c.hostname, c.region), index);
            snap.by_id.insert(c.id.clone(), index);
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
                state,
                previous,
                prefix,
            }));
        }
        check_isolation(&snap.clusters)?;
        // Rotated-out usernames keep routing during their grace (unless reused since).
        for (i, c) in snap.clusters.iter().enumerate() {
            if let Some(o) = &c.previous {
                snap.by_username.entry(o.username.clone()).or_insert(i);
            }
        }
        Ok(snap)
    }

    /// Every cluster.
    pub fn clusters(&self) -> &[Arc<Cluster>] {
        &self.clusters
    }

    /// The cluster with this id.
    pub fn by_id(&self, id: &str) -> Option<&Arc<Cluster>> {
        self.by_id.get(id).map(|&i| &self.clusters[i])
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

/// Tenants of a shared upstream are isolated only if every index on it is namespaced: a
/// single-tenant cluster must not share an upstream with multitenant ones, and no two
/// prefixes may be equal.
fn check_isolation(clusters: &[Arc<Cluster>]) -> Result<(), RegistryError> {
    let shared: HashMap<SocketAddr, &str> = clusters
        .iter()
        .filter(|c| c.class == ClusterClass::Multitenant)
        .flat_map(|c| c.upstreams.iter().map(move |a| (*a, c.id.as_str())))
        .collect();
    let mut prefixes: HashMap<Prefix, &str> = HashMap::new();
    for c in clusters {
        if let Some(p) = c.prefix {
            if let Some(other) = prefixes.insert(p, &c.id) {
                return Err(RegistryError {
                    cluster: c.id.clone(),
                    message: format!("its index prefix equals cluster `{other}`'s; rename one"),
                });
            }
        } else if let Some(m) = c.upstreams.iter().find_map(|a| shared.get(a)) {
            return Err(RegistryError {
                cluster: c.id.clone(),
                message: format!("a single-tenant cluster cannot share its upstream with the multitenant cluster `{m}` (its indices would not be namespaced)"),
            });
        }
    }
    Ok(())
}

/// The state a cluster keeps across a reload. A single-tenant cluster that is new, or whose
/// upstream changed, must answer before it is reachable (404 until then); the shared
/// engine of the multitenant class is always up.
fn carry_state(
    old: Option<&Arc<Cluster>>,
    class: ClusterClass,
    upstreams: &[SocketAddr],
) -> Arc<ClusterState> {
    match old {
        Some(o) if o.upstreams == upstreams => o.state.clone(),
        Some(o) => {
            o.state.set_ready(class == ClusterClass::Multitenant);
            o.state.clone()
        }
        None => Arc::new(ClusterState::new(class == ClusterClass::Multitenant)),
    }
}

/// The credentials a reload rotated out, kept for `grace` (none when grace is zero).
fn rotated(
    old: Option<&Arc<Cluster>>,
    c: &ClusterConfig,
    grace: Duration,
    now: Instant,
) -> Option<OldCredentials> {
    let old = old?;
    if old.username == c.username && old.password == c.password {
        // Unchanged: an earlier rotation's grace carries on.
        return old.previous.clone().filter(|p| now < p.until);
    }
    (!grace.is_zero()).then(|| OldCredentials {
        username: old.username.clone(),
        password: old.password.clone(),
        until: now + grace,
    })
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
    key: TenancyKey,
}

impl Registry {
    /// A registry publishing `first`, built with `key` (reloads use it too).
    pub fn new(first: Snapshot, key: TenancyKey) -> Self {
        let generation = AtomicU64::new(first.generation);
        Registry {
            current: ArcSwap::from_pointee(first),
            generation,
            key,
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

    /// Builds and publishes a snapshot of `config` at `now`; returns its generation.
    pub fn apply(&self, config: &Config, now: Instant) -> Result<u64, RegistryError> {
        let prev = self.load();
        let generation = prev.generation + 1;
        let next = Snapshot::build(config, Some(&prev), generation, now, &self.key)?;
        self.current.store(Arc::new(next));
        self.generation.store(generation, Ordering::Release);
        Ok(generation)
    }
}

#[cfg(test)]
pub(crate) mod tests;
