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
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use crate::cidr::{self, Cidr};
use crate::config::{pool_named, ClusterClass, Config, HealthSettings, Mode, PoolSpec};
use crate::policy::admit::{limit_for, Allowance, Lanes, Limit, Split};
use crate::policy::auth::Credential;
use crate::policy::keys::{AuthFail, KeyGrant, Principal};
use crate::policy::mode::{Mode as PolicyMode, ModeView, SetBy};
use crate::tenancy::{Prefix, TenancyKey};

pub mod catalog;
pub mod diff;
mod directory;
pub mod requestlog;
pub mod runtime;
pub mod seed;
pub mod state;
pub use catalog::{Catalog, ClusterRecord, Command, Millis, PlanRecord, Refusal};
pub use state::{ClusterState, ShardReservation, UpstreamContexts};

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
    clusters: Vec<Arc<Cluster>>,
    by_host: HashMap<String, usize>,
    by_id: HashMap<String, usize>,
    by_username: HashMap<String, usize>,
    /// The open search contexts of each shared upstream (carried from one snapshot to the
    /// next by address).
    contexts: HashMap<SocketAddr, Arc<UpstreamContexts>>,
    /// Usernames of destroyed clusters that no live cluster uses: a request routed by one
    /// of them meets Cluster Not Found, as at the cluster's host name, not a 401.
    destroyed_usernames: std::collections::HashSet<String>,
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

/// A live cluster ready to be put in a snapshot: its upstreams resolved, its prefix derived.
#[derive(Debug, Clone)]
struct Compiled {
    record: Arc<ClusterRecord>,
    upstreams: Vec<SocketAddr>,
    pool: Option<Arc<str>>,
    prefix: Option<Prefix>,
}

/// A catalog checked for serving (see [`compile`]).
#[derive(Debug, Clone)]
pub struct Checked {
    catalog: Arc<Catalog>,
    clusters: Vec<Compiled>,
    /// Every named pool's addresses (empty for an unused pool whose names do not resolve).
    pools: Vec<(Arc<PoolSpec>, Vec<SocketAddr>)>,
}

impl Checked {
    /// The catalog checked.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }
}

/// Resolves `host:port` (DNS) to every address it has: what [`compile`] uses where no
/// cache of lookups is kept (tests, benchmarks; the control plane keeps one, see
/// `nodes::resolve`).
pub fn resolve(u: &str) -> Result<Vec<SocketAddr>, String> {
    let addrs: Vec<SocketAddr> = u
        .to_socket_addrs()
        .map_err(|e| format!("upstream `{u}`: {e}"))?
        .collect();
    if addrs.is_empty() {
        return Err(format!("upstream `{u}` resolves to nothing"));
    }
    Ok(addrs)
}

/// How names are resolved for [`compile`]: `host:port` to every address.
pub type Resolve<'a> = &'a dyn Fn(&str) -> Result<Vec<SocketAddr>, String>;

/// Checks that `cat` can be served: every live cluster's upstreams resolve (with
/// `resolve`; a pool's name must be one of `settings.pools`), and tenants of a shared
/// upstream are isolated. Changes nothing.
pub fn compile(
    cat: &Arc<Catalog>,
    settings: &Settings,
    resolve: Resolve<'_>,
) -> Result<Checked, RegistryError> {
    let mut cache: HashMap<String, Result<Vec<SocketAddr>, String>> = HashMap::new();
    let mut addrs_of = |list: &[String]| -> Result<Vec<SocketAddr>, String> {
        let mut out = Vec::with_capacity(list.len());
        for u in list {
            let found = cache.entry(u.clone()).or_insert_with(|| resolve(u));
            for a in found.clone()? {
                if !out.contains(&a) {
                    out.push(a);
                }
            }
        }
        Ok(out)
    };
    type Found = Result<Vec<SocketAddr>, String>;
    let pools: Vec<(Arc<PoolSpec>, Found)> = settings
        .pools
        .iter()
        .map(|p| (p.clone(), addrs_of(&p.nodes)))
        .collect();
    let mut clusters = Vec::with_capacity(cat.clusters.len());
    for c in cat.live() {
        let err = |message: String| RegistryError {
            cluster: c.id.clone(),
            message,
        };
        let (upstreams, pool) = match &c.upstream {
            Some(list) => match pool_named(list) {
                Some(name) => {
                    let (spec, found) = pools
                        .iter()
                        .find(|(p, _)| p.name == name)
                        .ok_or_else(|| err(format!("no upstream pool named `{name}`")))?;
                    let addrs = found
                        .clone()
                        .map_err(|e| err(format!("pool `{name}`: {e}")))?;
                    (addrs, Some(Arc::from(spec.name.as_str())))
                }
                None => (addrs_of(list).map_err(err)?, None),
            },
            None => (
                vec![settings
                    .engine
                    .ok_or_else(|| err("no upstream and no engine".into()))?],
                None,
            ),
        };
        let prefix =
            (c.class == ClusterClass::Multitenant).then(|| Prefix::derive(&settings.key, &c.id));
        clusters.push(Compiled {
            record: c.clone(),
            upstreams,
            pool,
            prefix,
        });
    }
    check_isolation(&clusters)?;
    Ok(Checked {
        catalog: cat.clone(),
        clusters,
        pools: pools
            .into_iter()
            .map(|(p, found)| (p, found.unwrap_or_default()))
            .collect(),
    })
}

/// Tenants of a shared upstream are isolated only if every index on it is namespaced: a
/// single-tenant cluster must not share an upstream with multitenant ones, and no two
/// prefixes may be equal.
fn check_isolation(clusters: &[Compiled]) -> Result<(), RegistryError> {
    let shared: HashMap<SocketAddr, &str> = clusters
        .iter()
        .filter(|c| c.record.class == ClusterClass::Multitenant)
        .flat_map(|c| c.upstreams.iter().map(move |a| (*a, c.record.id.as_str())))
        .collect();
    let mut prefixes: HashMap<Prefix, &str> = HashMap::new();
    for c in clusters {
        let id = c.record.id.as_str();
        if let Some(p) = c.prefix {
            if let Some(other) = prefixes.insert(p, id) {
                return Err(RegistryError {
                    cluster: id.into(),
                    message: format!("its index prefix equals cluster `{other}`'s; rename one"),
                });
            }
        } else if let Some(m) = c.upstreams.iter().find_map(|a| shared.get(a)) {
            return Err(RegistryError {
                cluster: id.into(),
                message: format!("a single-tenant cluster cannot share its upstream with the multitenant cluster `{m}` (its indices would not be namespaced)"),
            });
        }
    }
    Ok(())
}

/// `until_ms` (wall clock) as an instant, given that `now_ms` is `now`.
fn instant_of(until_ms: Millis, now: Instant, now_ms: Millis) -> Instant {
    now + Duration::from_millis(until_ms.saturating_sub(now_ms).max(0) as u64)
}

impl Snapshot {
    /// The snapshot of a checked catalog with the runtime's handles. Clusters whose record,
    /// plan and handles did not change are shared with `prev`.
    pub fn assemble(
        checked: &Checked,
        runtime: &runtime::Runtime,
        prev: Option<&Snapshot>,
        settings: &Settings,
        generation: u64,
        (now, now_ms): (Instant, Millis),
    ) -> Snapshot {
        let cat = &checked.catalog;
        let plans: HashMap<&str, Arc<Plan>> = cat
            .plans
            .iter()
            .map(|(n, p)| (n.as_str(), Arc::new(Plan::from(&**p))))
            .collect();
        let mut snap = Snapshot {
            generation,
            domain: settings.domain.clone(),
            route_by_username: settings.route_by_username,
            catalog: cat.clone(),
            pools: checked.pools.clone(),
            health: settings.health.clone(),
            ..Snapshot::default()
        };
        snap.contexts = context_ledgers(checked, &plans, prev, settings);
        for c in &checked.clusters {
            let (Some(h), Some(plan)) =
                (runtime.get(&c.record.id), plans.get(c.record.plan.as_str()))
            else {
                continue; // compile and reconcile saw the same catalog: not reached
            };
            let reuse = prev.and_then(|p| p.by_id(&c.record.id)).filter(|o| {
                Arc::ptr_eq(&o.record, &c.record)
                    && *o.plan == **plan
                    && Arc::ptr_eq(&o.allowance, &h.allowance)
                    && o.lanes.same(&h.lanes)
                    && Arc::ptr_eq(&o.state, &h.state)
                    && o.upstreams == c.upstreams
                    && o.pool == c.pool
                    && same_ledger(&o.contexts, &snap.ledger_of(c))
            });
            let cluster = match reuse {
                Some(o) => o.clone(),
                None => {
                    let contexts = snap.ledger_of(c);
                    Arc::new(view(c, plan.clone(), h, contexts, now, now_ms))
                }
            };
            snap.push(cluster);
        }
        for c in cat.clusters.values().filter(|c| !c.is_live()) {
            let previous = c.previous.as_ref().map(|p| &p.username);
            for user in std::iter::once(&c.username).chain(previous) {
                if !snap.by_username.contains_key(user) {
                    snap.destroyed_usernames.insert(user.clone());
                }
            }
        }
        snap
    }

    /// The ledger of the shared upstream cluster `c` is placed on (multitenant class).
    fn ledger_of(&self, c: &Compiled) -> Option<Arc<UpstreamContexts>> {
        let addr = shared_upstream(c)?;
        self.contexts.get(&addr).cloned()
    }

    fn push(&mut self, c: Arc<Cluster>) {
        let index = self.clusters.len();
        self.by_host
            .insert(format!("{}.{}", c.hostname, c.region), index);
        self.by_id.insert(c.id.clone(), index);
        self.by_username.insert(c.username.clone(), index);
        for user in c.keys.keys() {
            self.by_username.insert(user.clone(), index);
        }
        if let Some(o) = &c.previous {
            // Rotated-out usernames keep routing during their grace (unless reused since).
            self.by_username
                .entry(o.credential.username.clone())
                .or_insert(index);
        }
        self.clusters.push(c);
    }

    /// A snapshot of `config`'s plans and clusters, as the control plane would publish it
    /// on first start (for tests and benchmarks). With `prev`, its runtime handles are
    /// carried over by cluster id and reconciled.
    pub fn build(
        config: &Config,
        prev: Option<&Snapshot>,
        generation: u64,
        now: Instant,
        key: &TenancyKey,
    ) -> Result<Snapshot, RegistryError> {
        let cat = seed::catalog_of(config, 0).map_err(|e| RegistryError {
            cluster: "-".into(),
            message: e.to_string(),
        })?;
        let settings = Settings::from_config(config, key);
        let checked = compile(&Arc::new(cat), &settings, &resolve)?;
        let runtime = match prev {
            Some(p) => {
                let mut rt = runtime::Runtime::of_snapshot(p);
                rt.reconcile(
                    &diff::diff(&p.catalog, checked.catalog()),
                    checked.catalog(),
                );
                rt
            }
            None => runtime::Runtime::new(checked.catalog()),
        };
        Ok(Snapshot::assemble(
            &checked,
            &runtime,
            prev,
            &settings,
            generation,
            (now, 0),
        ))
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

    /// Whether `username` was a destroyed cluster's (and is no live cluster's).
    pub fn is_destroyed_username(&self, username: &str) -> bool {
        self.destroyed_usernames.contains(username)
    }
}

/// Elasticsearch's `search.max_open_scroll_context` (shard contexts): the limit assumed of
/// a shared upstream other than the embedded engine.
pub const UPSTREAM_OPEN_CONTEXTS: u64 = 500;

/// The upstream whose search contexts a multitenant cluster `c` counts against (its first
/// node); `None` for the single-tenant class.
fn shared_upstream(c: &Compiled) -> Option<SocketAddr> {
    match c.record.class {
        ClusterClass::Multitenant => c.upstreams.first().copied(),
        ClusterClass::SingleTenant => None,
    }
}

fn same_ledger(a: &Option<Arc<UpstreamContexts>>, b: &Option<Arc<UpstreamContexts>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// The context ledgers of the shared upstreams of `checked` (those of `prev` carried over),
/// each told the clusters placed on it and their plans' budgets.
fn context_ledgers(
    checked: &Checked,
    plans: &HashMap<&str, Arc<Plan>>,
    prev: Option<&Snapshot>,
    settings: &Settings,
) -> HashMap<SocketAddr, Arc<UpstreamContexts>> {
    let mut members: HashMap<SocketAddr, Vec<(&str, u64)>> = HashMap::new();
    for c in &checked.clusters {
        let (Some(addr), Some(plan)) = (shared_upstream(c), plans.get(c.record.plan.as_str()))
        else {
            continue;
        };
        let list = members.entry(addr).or_default();
        list.push((c.record.id.as_str(), plan.max_open_contexts));
    }
    let mut ledgers = HashMap::new();
    for (addr, list) in members {
        let ledger = prev
            .and_then(|p| p.contexts.get(&addr).cloned())
            .unwrap_or_else(|| {
                let limit = if settings.engine == Some(addr) {
                    settings.engine_contexts
                } else {
                    UPSTREAM_OPEN_CONTEXTS
                };
                Arc::new(UpstreamContexts::new(limit))
            });
        ledger.with(|l| l.set_members(list));
        ledgers.insert(addr, ledger);
    }
    ledgers
}

fn view(
    c: &Compiled,
    plan: Arc<Plan>,
    h: &runtime::Handles,
    contexts: Option<Arc<UpstreamContexts>>,
    now: Instant,
    now_ms: Millis,
) -> Cluster {
    let r = &c.record;
    let previous = r
        .previous
        .as_ref()
        .filter(|p| p.until > now_ms)
        .map(|p| OldCredentials {
            credential: Credential::new(&p.username, &p.password),
            until: instant_of(p.until, now, now_ms),
        });
    Cluster {
        id: r.id.clone(),
        hostname: r.hostname.clone(),
        region: r.region.clone(),
        class: r.class,
        mode: r.mode,
        mode_reason: r.mode_reason.as_deref().map(Arc::from),
        mode_until: r.mode_until.map(|u| instant_of(u, now, now_ms)),
        plan,
        username: r.username.clone(),
        credential: Credential::new(&r.username, &r.password),
        upstreams: c.upstreams.clone(),
        pool: c.pool.clone(),
        allowance: h.allowance.clone(),
        lanes: h.lanes.clone(),
        state: h.state.clone(),
        previous,
        prefix: c.prefix,
        contexts,
        record: r.clone(),
        keys: keys_of(r, now, now_ms),
    }
}

/// The keys of record `r` for the request path, by username (expiry as an instant).
fn keys_of(r: &ClusterRecord, now: Instant, now_ms: Millis) -> HashMap<String, ClusterKey> {
    r.keys
        .iter()
        .map(|k| {
            let grant = KeyGrant {
                id: k.id.clone(),
                name: k.name.clone(),
                role: k.role,
                indices: k.indices.clone(),
                expires: k.expires_at.map(|e| instant_of(e, now, now_ms)),
                allowed_origins: k.allowed_origins.clone(),
                // checked when the key was made: a range that does not parse allows nothing
                allowed_ips: k
                    .allowed_ips
                    .iter()
                    .map(|s| Cidr::parse(s).unwrap_or(Cidr::NONE))
                    .collect(),
            };
            let credential = Credential::new(&k.username, &k.password);
            (k.username.clone(), ClusterKey { credential, grant })
        })
        .collect()
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
