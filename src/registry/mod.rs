//! The registry: plans and clusters as pure data ([`Catalog`], changed only by
//! [`catalog::apply`] and compared by [`diff::diff`]), the runtime state kept beside it by
//! cluster id ([`runtime::Runtime`]: allowances, readiness, usage), and the [`Snapshot`]
//! the edge reads: both put together, immutable, published through [`Registry`] and
//! swapped atomically.
//!
//! How a change flows (see `control`): apply the command to the catalog (pure; a refusal
//! changes nothing), [`compile`] the result (upstreams resolved, tenants' isolation
//! checked; still nothing changed), commit it to the store, then reconcile the runtime
//! from the diff and [`Snapshot::assemble`] and publish the next snapshot.
//!
//! Must not touch: sockets, monoio, the clock (time is passed in), the store. Cores read
//! snapshots; only the control plane publishes them.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use crate::cidr;
use crate::config::{ClusterClass, Config, HealthSettings, Mode, PoolSpec};
use crate::policy::admit::{limit_for, Allowance, Lanes, Limit, Split};
use crate::policy::auth::Credential;
use crate::policy::keys::{AuthFail, KeyGrant, Principal};
use crate::policy::mode::{Mode as PolicyMode, ModeView, SetBy};
use crate::tenancy::{Prefix, TenancyKey};

mod assemble;
pub mod catalog;
mod checked;
pub mod diff;
mod directory;
pub mod lookup;
pub mod requestlog;
pub mod runtime;
pub mod samples;
pub mod seed;
pub mod settling;
pub mod state;
pub use catalog::{Catalog, ClusterRecord, Command, Millis, PlanRecord, Refusal};
pub use checked::{compile, resolve, Checked, Resolve};
pub use settling::{ReadSoon, Settling};
pub use state::{ClusterState, IndexRefused, ShardReservation, UpstreamContexts};

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
    pub max_open_contexts: u64,
    /// Searches' and writes' own allowances (none: they share `concurrency`).
    pub split: Split,
}

impl Plan {
    /// The queue size of `limit` under this plan.
    pub fn queue_size_of(&self, limit: Limit) -> u32 {
        let lane = match limit {
            Limit::Shared => None,
            Limit::Search => self.split.search,
            Limit::Write => self.split.write,
        };
        lane.map_or(self.queue_size, |l| l.queue_size)
    }
}

impl From<&PlanRecord> for Plan {
    fn from(p: &PlanRecord) -> Self {
        Plan {
            name: p.name.clone(),
            concurrency: p.concurrency,
            queue_size: p.queue_size,
            queue_timeout: Duration::from_millis(p.queue_timeout_ms),
            shards: p.shards,
            disk: p.disk,
            memory: p.memory,
            max_bulk_actions: p.max_bulk_actions,
            monthly_price_cents: p.monthly_price_cents,
            max_open_contexts: p.max_open_contexts,
            // Checked when the plan was stored (`put_plan`).
            split: p.split().unwrap_or_default(),
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
    /// The operator's mode (provisioning and destroyed included).
    pub mode: Mode,
    /// Why the operator set it (shown in the 403 body).
    pub mode_reason: Option<Arc<str>>,
    /// When a maintenance window ends (the control plane ends it then).
    pub mode_until: Option<Instant>,
    pub plan: Arc<Plan>,
    pub username: String,
    /// The username and the salted hash of the password.
    pub credential: Credential,
    /// Upstream nodes, resolved (every address of every name).
    pub upstreams: Vec<SocketAddr>,
    /// The `[[upstream_pools]]` its nodes are, if it names one.
    pub pool: Option<Arc<str>>,
    /// The allowance shared by every core (runtime state, kept across snapshots).
    pub allowance: Arc<Allowance>,
    /// The search and write allowances its plan may give (runtime state, kept too).
    pub lanes: Lanes,
    /// Usage, readiness (runtime state, kept across snapshots).
    pub state: Arc<ClusterState>,
    /// The pair replaced by a rotation, still accepted until its deadline (grace period).
    pub previous: Option<OldCredentials>,
    /// The namespace of the multitenant class's index names on the shared upstream.
    pub prefix: Option<Prefix>,
    /// The open search contexts of the shared upstream it is placed on (multitenant class).
    pub contexts: Option<Arc<UpstreamContexts>>,
    /// The stored record this view was made from.
    pub record: Arc<ClusterRecord>,
    /// Its keys by username.
    pub keys: HashMap<String, ClusterKey>,
}

/// A key as the request path holds it: its credential and what it may do.
#[derive(Debug, Clone)]
pub struct ClusterKey {
    pub credential: Credential,
    pub grant: KeyGrant,
}

/// Credentials replaced by a rotation and still accepted for a grace period.
#[derive(Debug, Clone)]
pub struct OldCredentials {
    pub credential: Credential,
    pub until: Instant,
}

impl Cluster {
    /// The most shard contexts a scroll or point-in-time open can make its upstream hold
    /// (what an open reserves before it is forwarded): one per primary shard in use (a
    /// search of all its indices), at least one, at most its plan's shard capacity.
    pub fn open_weight(&self) -> u64 {
        let primaries = self.state.usage().primaries;
        primaries.clamp(1, self.plan.shards.max(1))
    }

    /// From how many ms a request counts as slow in its request log.
    pub fn slow_request_ms(&self) -> u64 {
        self.record
            .slow_request_ms
            .unwrap_or(requestlog::DEFAULT_SLOW_MS)
    }

    /// The allowance a read (`read`) or an update waits for, and which limit it is.
    pub fn allowance_for(&self, read: bool) -> (&Arc<Allowance>, Limit) {
        let limit = limit_for(&self.plan.split, read);
        (self.lanes.get(limit, &self.allowance), limit)
    }

    /// Whether `user:pass` opens this cluster at `now`: the username compared and the
    /// password's salted HMAC checked, both in constant time.
    pub fn accepts(&self, user: &[u8], pass: &[u8], now: Instant) -> bool {
        let current = self.credential.matches(user, pass);
        let old = self
            .previous
            .as_ref()
            .is_some_and(|o| now < o.until && o.credential.matches(user, pass));
        current | old
    }

    /// Who `user:pass` is at `now`, from `client`: a live key of this cluster when the
    /// username is a key's (its `allowed_ips` checked first, before its password), else the
    /// master pair (current or in its grace). One password hash is computed at most.
    pub fn authenticate(
        &self,
        user: &[u8],
        pass: &[u8],
        client: IpAddr,
        now: Instant,
    ) -> Result<Principal<'_>, AuthFail> {
        let key = std::str::from_utf8(user)
            .ok()
            .and_then(|u| self.keys.get(u));
        match key {
            Some(k) if !cidr::allowed(&k.grant.allowed_ips, client) => Err(AuthFail::Address {
                key: k.grant.name.clone(),
            }),
            Some(k) => (k.credential.matches(user, pass) && k.grant.live_at(now))
                .then_some(Principal::Key(&k.grant))
                .ok_or(AuthFail::Credentials),
            None => self
                .accepts(user, pass, now)
                .then_some(Principal::Master)
                .ok_or(AuthFail::Credentials),
        }
    }

    /// The mode requests see (the operator's, or the overage ladder's, with its reason),
    /// as last published.
    pub fn effective_mode(&self) -> ModeView {
        self.view(self.mode)
    }

    /// The mode requests see at `now`: a maintenance window whose `until` passed counts
    /// as ended even before the control plane published its end.
    pub fn effective_mode_at(&self, now: Instant) -> ModeView {
        match self.mode_until {
            Some(until) if now >= until && self.mode == Mode::Maintenance => {
                self.view(Mode::Normal)
            }
            _ => self.effective_mode(),
        }
    }

    fn view(&self, mode: Mode) -> ModeView {
        // The ladder's read-only lets index deletions through (how an overage is cleared).
        let by_ladder = self.record.overage.as_ref().is_some_and(|o| o.owns_mode);
        let effective = match mode {
            Mode::ReadOnly if by_ladder => PolicyMode::ReadOnly(SetBy::Metering),
            Mode::Disabled if by_ladder => PolicyMode::Disabled(SetBy::Metering),
            other => other.into(),
        };
        let reason = (mode != Mode::Normal)
            .then(|| self.mode_reason.clone())
            .flatten();
        ModeView {
            mode: effective,
            reason,
        }
    }
}

/// An immutable view of every cluster; cheap to share between cores.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Increases with every published snapshot.
    pub generation: u64,
    pub domain: String,
    pub route_by_username: bool,
    /// The catalog this snapshot was made from.
    pub catalog: Arc<Catalog>,
    /// Live clusters by id (in order), and for the request path by id, by
    /// `<hostname>.<region>` and by username (master pair, keys, and a rotated-out pair in
    /// its grace unless another cluster has it). The next snapshot shares every cluster,
    /// and every lookup shard, a change did not touch.
    by_id: imbl::OrdMap<String, Arc<Cluster>>,
    ids: lookup::Lookup<Arc<Cluster>>,
    by_host: lookup::Lookup<Arc<Cluster>>,
    by_username: lookup::Lookup<Arc<Cluster>>,
    /// Rotated-out usernames in their grace, and whose they are.
    previous_users: imbl::HashMap<String, String>,
    /// The open search contexts of each shared upstream (carried from one snapshot to the
    /// next by address).
    contexts: HashMap<SocketAddr, Arc<UpstreamContexts>>,
    /// Usernames of destroyed clusters: one that no live cluster uses meets Cluster Not
    /// Found when a request is routed by it, as at the cluster's host name, not a 401.
    destroyed_users: lookup::Lookup<()>,
    /// The named pools, each with the addresses its nodes resolved to (empty: none yet).
    pub pools: Vec<(Arc<PoolSpec>, Vec<SocketAddr>)>,
    /// `[upstream_health]`: the checks of nodes listed by clusters rather than pools.
    pub health: Arc<HealthSettings>,
}

/// Why a catalog cannot be served (an upstream that does not resolve, tenants that would
/// share an upstream unnamespaced).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cluster `{cluster}`: {message}")]
pub struct RegistryError {
    pub cluster: String,
    pub message: String,
}

/// The edge's settings a snapshot is made with.
#[derive(Debug, Clone)]
pub struct Settings {
    pub domain: String,
    pub route_by_username: bool,
    /// The embedded engine (clusters without an upstream use it).
    pub engine: Option<SocketAddr>,
    /// The embedded engine's limit of open shard contexts (`[engine] max_open_contexts`);
    /// another shared upstream is taken to have Elasticsearch's default.
    pub engine_contexts: u64,
    pub key: TenancyKey,
    /// `[[upstream_pools]]`, checked.
    pub pools: Vec<Arc<PoolSpec>>,
    /// `[upstream_health]`, defaults filled in.
    pub health: Arc<HealthSettings>,
}

impl Settings {
    /// The settings of `config` with tenancy key `key`.
    pub fn from_config(config: &Config, key: &TenancyKey) -> Settings {
        Settings {
            domain: config.edge.domain.to_ascii_lowercase(),
            route_by_username: config.edge.route_by_username,
            engine: config.engine.as_ref().map(|e| e.listen),
            engine_contexts: config
                .engine
                .as_ref()
                .map_or(UPSTREAM_OPEN_CONTEXTS, |e| e.max_open_contexts),
            key: key.clone(),
            // Config::parse checked both: not reached with a loaded config
            pools: config
                .pools()
                .unwrap_or_default()
                .into_iter()
                .map(Arc::new)
                .collect(),
            health: Arc::new(config.upstream_health.settings().unwrap_or_default()),
        }
    }

    /// The pool named `name`.
    pub fn pool(&self, name: &str) -> Option<&Arc<PoolSpec>> {
        self.pools.iter().find(|p| p.name == name)
    }
}

impl Snapshot {
    /// Every live cluster, by id.
    pub fn clusters(&self) -> impl Iterator<Item = &Arc<Cluster>> + '_ {
        self.by_id.values()
    }

    /// How many live clusters there are.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// No live cluster.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The cluster with this id.
    pub fn by_id(&self, id: &str) -> Option<&Arc<Cluster>> {
        self.ids.get(id)
    }

    /// The cluster at `<hostname>.<region>` (lowercase, domain already removed).
    pub fn by_host(&self, hostname_region: &str) -> Option<&Arc<Cluster>> {
        self.by_host.get(hostname_region)
    }

    /// The cluster whose username is `username` (exact).
    pub fn by_username(&self, username: &str) -> Option<&Arc<Cluster>> {
        self.by_username.get(username)
    }

    /// Whether `username` was a destroyed cluster's (and is no live cluster's).
    pub fn is_destroyed_username(&self, username: &str) -> bool {
        self.destroyed_users.contains_key(username) && !self.by_username.contains_key(username)
    }
}

/// Elasticsearch's `search.max_open_scroll_context` (shard contexts): the limit assumed of
/// a shared upstream other than the embedded engine.
pub const UPSTREAM_OPEN_CONTEXTS: u64 = 500;

/// The published snapshot, read by every core without locks.
#[derive(Debug)]
pub struct Registry {
    current: ArcSwap<Snapshot>,
    generation: AtomicU64,
    /// Clusters whose usage the control thread should read now (takeovers that ended).
    pub read_soon: Arc<ReadSoon>,
}

impl Registry {
    /// A registry publishing `first`.
    pub fn new(first: Snapshot) -> Self {
        let generation = AtomicU64::new(first.generation);
        Registry {
            current: ArcSwap::from_pointee(first),
            generation,
            read_soon: Arc::default(),
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

    /// Publishes `next` (its generation must be the next one); only the control plane calls
    /// this, after the change is committed.
    pub fn publish(&self, next: Snapshot) {
        let generation = next.generation;
        self.current.store(Arc::new(next));
        self.generation.store(generation, Ordering::Release);
    }
}

#[cfg(test)]
pub(crate) mod tests;
