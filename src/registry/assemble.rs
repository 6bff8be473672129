//! Putting a [`Snapshot`] together: from a whole checked catalog ([`Snapshot::assemble`],
//! at start and when the settings or a plan change), or from the previous snapshot and
//! what a change touched ([`Snapshot::update`]: the clusters it names get new views, every
//! other one is shared, through persistent maps, with the previous snapshot, so a change
//! costs what it changes, not the number of clusters).
//!
//! Must not touch: the store, sockets, the clock (time is passed in).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::checked::{Checked, Compiled};
use super::diff::Diff;
use super::runtime::{self, Handles};
use super::{
    seed, Catalog, Cluster, ClusterKey, ClusterRecord, Millis, OldCredentials, Plan, RegistryError,
    Settings, Snapshot, UpstreamContexts, UPSTREAM_OPEN_CONTEXTS,
};
use crate::cidr::Cidr;
use crate::config::{ClusterClass, Config};
use crate::policy::auth::Credential;
use crate::policy::keys::KeyGrant;
use crate::tenancy::TenancyKey;

/// `until_ms` (wall clock) as an instant, given that `now_ms` is `now`.
fn instant_of(until_ms: Millis, now: Instant, now_ms: Millis) -> Instant {
    now + Duration::from_millis(until_ms.saturating_sub(now_ms).max(0) as u64)
}

/// The plans of `cat`, for the request path.
fn plans_of(cat: &Catalog) -> HashMap<&str, Arc<Plan>> {
    cat.plans
        .iter()
        .map(|(n, p)| (n.as_str(), Arc::new(Plan::from(&**p))))
        .collect()
}

impl Snapshot {
    /// An empty snapshot of `checked`'s catalog with `settings`.
    fn base(checked: &Checked, settings: &Settings, generation: u64) -> Snapshot {
        Snapshot {
            generation,
            domain: settings.domain.clone(),
            route_by_username: settings.route_by_username,
            catalog: checked.catalog.clone(),
            pools: checked.pools.clone(),
            health: settings.health.clone(),
            ..Snapshot::default()
        }
    }

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
        let plans = plans_of(cat);
        let mut snap = Snapshot::base(checked, settings, generation);
        snap.contexts = context_ledgers(checked, &plans, prev, settings);
        for c in checked.clusters.values() {
            let (Some(h), Some(plan)) =
                (runtime.get(&c.record.id), plans.get(c.record.plan.as_str()))
            else {
                continue; // compile and reconcile saw the same catalog: not reached
            };
            let reuse = prev.and_then(|p| p.by_id(&c.record.id)).filter(|o| {
                Arc::ptr_eq(&o.record, &c.record)
                    && *o.plan == **plan
                    && same_handles(o, h)
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
            snap.insert(cluster);
        }
        for c in cat.clusters.values().filter(|c| !c.is_live()) {
            snap.bury(c);
        }
        snap
    }

    /// The snapshot after `prev` of a checked catalog that differs from `prev`'s by `d`,
    /// with the same plans and settings: only the clusters `d` names get new views (and
    /// only their places in the shared upstreams' context ledgers change).
    pub fn update(
        prev: &Snapshot,
        checked: &Checked,
        runtime: &runtime::Runtime,
        d: &Diff,
        settings: &Settings,
        generation: u64,
        (now, now_ms): (Instant, Millis),
    ) -> Snapshot {
        let cat = &checked.catalog;
        let mut snap = Snapshot {
            by_id: prev.by_id.clone(),
            ids: prev.ids.clone(),
            by_host: prev.by_host.clone(),
            by_username: prev.by_username.clone(),
            previous_users: prev.previous_users.clone(),
            contexts: prev.contexts.clone(),
            destroyed_users: prev.destroyed_users.clone(),
            ..Snapshot::base(checked, settings, generation)
        };
        let mut placed: Vec<(SocketAddr, &str, u64)> = Vec::new();
        let mut left: Vec<(SocketAddr, &str)> = Vec::new();
        for (id, _) in &d.clusters {
            let Some(old) = snap.remove(id) else { continue };
            if old.class == ClusterClass::Multitenant {
                left.extend(old.upstreams.first().map(|a| (*a, id.as_str())));
            }
        }
        for (id, _) in &d.clusters {
            let Some(c) = checked.clusters.get(id) else {
                continue; // no longer live
            };
            let (Some(h), Some(p)) = (runtime.get(id), cat.plans.get(&c.record.plan)) else {
                continue; // compile and reconcile saw the same catalog: not reached
            };
            let plan = Arc::new(Plan::from(&**p));
            let contexts = shared_upstream(c).map(|addr| {
                placed.push((addr, id.as_str(), plan.max_open_contexts));
                snap.contexts
                    .entry(addr)
                    .or_insert_with(|| Arc::new(UpstreamContexts::new(limit_of(settings, addr))))
                    .clone()
            });
            snap.insert(Arc::new(view(c, plan, h, contexts, now, now_ms)));
        }
        for id in &d.records {
            if let Some(c) = cat.clusters.get(id).filter(|c| !c.is_live()) {
                snap.bury(c);
            }
        }
        for (addr, id) in left {
            if !placed.iter().any(|(a, i, _)| *a == addr && *i == id) {
                if let Some(l) = snap.contexts.get(&addr) {
                    l.with(|l| l.set_member(id, 0));
                }
            }
        }
        for (addr, id, budget) in placed {
            if let Some(l) = snap.contexts.get(&addr) {
                l.with(|l| l.set_member(id, budget));
            }
        }
        snap
    }

    /// The ledger of the shared upstream cluster `c` is placed on (multitenant class).
    fn ledger_of(&self, c: &Compiled) -> Option<Arc<UpstreamContexts>> {
        let addr = shared_upstream(c)?;
        self.contexts.get(&addr).cloned()
    }

    /// Puts live cluster `c` in: its address, its usernames (a rotated-out one only where
    /// no other cluster has it).
    fn insert(&mut self, c: Arc<Cluster>) {
        self.by_host
            .insert(format!("{}.{}", c.hostname, c.region), c.clone());
        self.by_username.insert(c.username.clone(), c.clone());
        for user in c.keys.keys() {
            self.by_username.insert(user.clone(), c.clone());
        }
        if let Some(o) = &c.previous {
            let user = &o.credential.username;
            self.previous_users.insert(user.clone(), c.id.clone());
            if !self.by_username.contains_key(user) {
                self.by_username.insert(user.clone(), c.clone());
            }
        }
        self.ids.insert(c.id.clone(), c.clone());
        self.by_id.insert(c.id.clone(), c);
    }

    /// Takes live cluster `id` out, giving a rotated-out username it held back to the
    /// cluster whose it was; returns its view.
    fn remove(&mut self, id: &str) -> Option<Arc<Cluster>> {
        let c = self.by_id.remove(id)?;
        self.ids.remove(id);
        let host = format!("{}.{}", c.hostname, c.region);
        if self.by_host.get(&host).is_some_and(|x| Arc::ptr_eq(x, &c)) {
            self.by_host.remove(&host);
        }
        let previous = c.previous.as_ref().map(|o| &o.credential.username);
        if let Some(user) = previous {
            if self.previous_users.get(user).is_some_and(|o| o == id) {
                self.previous_users.remove(user);
            }
        }
        let users = std::iter::once(&c.username)
            .chain(c.keys.keys())
            .chain(previous);
        for user in users {
            if !self
                .by_username
                .get(user)
                .is_some_and(|x| Arc::ptr_eq(x, &c))
            {
                continue;
            }
            self.by_username.remove(user);
            let heir = self
                .previous_users
                .get(user)
                .and_then(|o| self.by_id.get(o));
            if let Some(heir) = heir.cloned() {
                self.by_username.insert(user.clone(), heir);
            }
        }
        Some(c)
    }

    /// Remembers destroyed cluster `c`'s usernames.
    fn bury(&mut self, c: &ClusterRecord) {
        let previous = c.previous.as_ref().map(|p| &p.username);
        for user in std::iter::once(&c.username).chain(previous) {
            self.destroyed_users.insert(user.clone(), ());
        }
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
        let checked = super::compile(&Arc::new(cat), &settings, &super::resolve)?;
        let runtime = match prev {
            Some(p) => {
                let mut rt = runtime::Runtime::of_snapshot(p);
                rt.reconcile(
                    &super::diff::diff(&p.catalog, checked.catalog()),
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
}

fn same_handles(o: &Cluster, h: &Handles) -> bool {
    Arc::ptr_eq(&o.allowance, &h.allowance)
        && o.lanes.same(&h.lanes)
        && Arc::ptr_eq(&o.state, &h.state)
}

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

/// The shard contexts shared upstream `addr` allows.
fn limit_of(settings: &Settings, addr: SocketAddr) -> u64 {
    if settings.engine == Some(addr) {
        settings.engine_contexts
    } else {
        UPSTREAM_OPEN_CONTEXTS
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
    for c in checked.clusters.values() {
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
            .unwrap_or_else(|| Arc::new(UpstreamContexts::new(limit_of(settings, addr))));
        ledger.with(|l| l.set_members(list));
        ledgers.insert(addr, ledger);
    }
    ledgers
}

fn view(
    c: &Compiled,
    plan: Arc<Plan>,
    h: &Handles,
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
