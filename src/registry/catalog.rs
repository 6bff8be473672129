//! The catalog: every plan and cluster as plain data, the truth the control plane stores.
//! Changed only by [`apply`]: a [`Command`] applied to a catalog gives a new catalog or a
//! [`Refusal`], and the catalog given is never touched, so a refused change changes
//! nothing. Time comes in with the command's [`Ctx`]; nothing here reads a clock, draws a
//! random number or does I/O (ids, credentials and salts are made by the caller).
//!
//! Must not touch: runtime state (allowances, readiness, usage: see `runtime`), sockets,
//! the store.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::{ClusterClass, Mode, PlanConfig};
use crate::policy::admit::lanes::split_of;
use crate::policy::admit::Split;
use crate::policy::auth::PasswordHash;
use crate::policy::keys::Role;
use crate::policy::ladder::{self, Overage};
use crate::policy::shards::{exceeded, Usage};

/// Wall-clock time in milliseconds since the Unix epoch (what the store keeps).
pub type Millis = i64;

/// A plan as stored (spec 1.6, 8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanRecord {
    pub name: String,
    pub concurrency: u32,
    pub queue_size: u32,
    pub queue_timeout_ms: u64,
    pub shards: u64,
    pub disk: u64,
    pub memory: u64,
    pub max_bulk_actions: u64,
    pub monthly_price_cents: u64,
    pub max_open_contexts: u64,
    /// The overage ladder: notice to read-only, read-only to disabled, and the extreme
    /// factor of the plan's disk (records stored before these existed get the defaults).
    #[serde(default = "ladder::default_grace_ms")]
    pub overage_grace_ms: u64,
    #[serde(default = "ladder::default_disable_after_ms")]
    pub overage_disable_after_ms: u64,
    #[serde(default = "ladder::default_extreme_factor")]
    pub overage_extreme_factor: u64,
    /// Searches' and writes' own allowances (absent: they share `concurrency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_concurrency: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_queue_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_concurrency: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_queue_size: Option<u32>,
}

impl PlanRecord {
    /// The plan's search and write lanes, or what is wrong with them.
    pub fn split(&self) -> Result<Split, String> {
        split_of(
            self.search_concurrency,
            self.search_queue_size,
            self.write_concurrency,
            self.write_queue_size,
        )
    }

    /// The plan's ladder settings.
    pub fn ladder(&self) -> ladder::Settings {
        let ms = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        ladder::Settings {
            grace_ms: ms(self.overage_grace_ms),
            disable_after_ms: ms(self.overage_disable_after_ms),
            extreme_factor: self.overage_extreme_factor,
        }
    }
}

impl From<&PlanConfig> for PlanRecord {
    fn from(p: &PlanConfig) -> Self {
        PlanRecord {
            name: p.name.clone(),
            concurrency: p.concurrency,
            queue_size: p.queue_size,
            queue_timeout_ms: p.queue_timeout.0.as_millis() as u64,
            shards: p.shards,
            disk: p.disk.0,
            memory: p.memory.0,
            max_bulk_actions: p.max_bulk_actions,
            monthly_price_cents: p.monthly_price_cents,
            max_open_contexts: p.max_open_contexts,
            search_concurrency: p.search_concurrency,
            search_queue_size: p.search_queue_size,
            write_concurrency: p.write_concurrency,
            write_queue_size: p.write_queue_size,
            overage_grace_ms: p.overage_grace.0.as_millis() as u64,
            overage_disable_after_ms: p.overage_disable_after.0.as_millis() as u64,
            overage_extreme_factor: p
                .overage_extreme_factor
                .unwrap_or_else(ladder::default_extreme_factor),
        }
    }
}

/// Where a cluster came from: the file's seed or the admin API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    File,
    Api,
}

/// Credentials replaced by a rotation, accepted until `until`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Previous {
    pub username: String,
    pub password: PasswordHash,
    pub until: Millis,
}

/// The longest slow-request threshold (ms): one hour.
pub const MAX_SLOW_MS: u64 = 3_600_000;

/// Most keys one cluster may have.
pub const MAX_KEYS: usize = 100;

/// A named key of a cluster besides its master pair (issue 29): its own credentials (the
/// password only as its salted hash), a role, the index patterns it may name, an expiry,
/// the browser origins and client addresses it may be used from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    pub id: String,
    pub name: String,
    pub role: Role,
    pub username: String,
    pub password: PasswordHash,
    /// Index patterns (empty: any index).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indices: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Millis>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_ips: Vec<String>,
    pub created_at: Millis,
}

/// A cluster as stored. Destroyed clusters stay as tombstones (`destroyed_at` set): their
/// ids are never reused, and billing needs their history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterRecord {
    pub id: String,
    pub name: Option<String>,
    pub hostname: String,
    pub region: String,
    pub class: ClusterClass,
    pub plan: String,
    pub username: String,
    pub password: PasswordHash,
    pub previous: Option<Previous>,
    pub mode: Mode,
    pub mode_reason: Option<String>,
    /// A maintenance window ends by itself at this time.
    pub mode_until: Option<Millis>,
    /// Upstream nodes (`host:port`); `None`: the embedded engine.
    pub upstream: Option<Vec<String>>,
    pub source: Source,
    pub created_at: Millis,
    /// When its upstream first answered (single-tenant: `provisioning` until then).
    pub provisioned_at: Option<Millis>,
    pub destroyed_at: Option<Millis>,
    /// A destroyed multitenant cluster's indices were deleted from its shared upstream.
    pub purged: bool,
    /// Increases with every change (the admin API's ETag).
    pub version: u64,
    /// Usage over the plan, as the overage ladder last found it (`None`: not over).
    #[serde(default)]
    pub overage: Option<Overage>,
    /// Its keys (records stored before keys existed have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<KeyRecord>,
    /// Requests this slow or slower (ms) go to its slow-request log too (`None`: the
    /// default, `requestlog::DEFAULT_SLOW_MS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_request_ms: Option<u64>,
}

impl ClusterRecord {
    /// Not destroyed.
    pub fn is_live(&self) -> bool {
        self.destroyed_at.is_none()
    }

    /// `<hostname>.<region>`, the key the edge routes by.
    pub fn host_key(&self) -> String {
        format!("{}.{}", self.hostname, self.region)
    }

    /// `provisioning`, `running` or `destroyed`.
    pub fn state(&self) -> &'static str {
        if self.destroyed_at.is_some() || self.mode == Mode::Destroyed {
            "destroyed"
        } else if self.provisioned_at.is_none() || self.mode == Mode::Provisioning {
            "provisioning"
        } else {
            "running"
        }
    }
}

/// Every plan and cluster.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    pub plans: BTreeMap<String, Arc<PlanRecord>>,
    /// Live clusters and tombstones, by id (a persistent map: a copy costs nothing, and
    /// the copy a change makes shares every record it did not touch).
    pub clusters: imbl::OrdMap<String, Arc<ClusterRecord>>,
    /// Live clusters by `<hostname>.<region>` and by username (uniqueness, lookups).
    hosts: imbl::HashMap<String, String>,
    users: imbl::HashMap<String, String>,
}

/// A change to the catalog.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Creates or replaces a plan (the file's seed).
    PutPlan(PlanRecord),
    /// Removes a plan no live cluster is on.
    RemovePlan { name: String },
    /// Adds a cluster (its id, host name and credentials made by the caller).
    CreateCluster(Box<ClusterRecord>),
    /// Moves a cluster to another plan (refused when its usage exceeds the plan).
    ChangePlan { id: String, plan: String },
    /// Sets the operator's mode, its reason, and when a maintenance window ends.
    SetMode {
        id: String,
        mode: Mode,
        reason: Option<String>,
        until: Option<Millis>,
    },
    /// New credentials; the old pair stays valid until `grace_until` (none: 401 at once).
    SetCredentials {
        id: String,
        username: String,
        password: PasswordHash,
        grace_until: Option<Millis>,
    },
    /// Another host name or region (the file's seed).
    SetAddress {
        id: String,
        hostname: String,
        region: String,
    },
    /// Other upstream nodes (the file's seed); a single-tenant cluster is provisioning again.
    SetUpstream {
        id: String,
        upstream: Option<Vec<String>>,
    },
    /// Its upstream answered for the first time.
    MarkProvisioned { id: String },
    /// Deprovisions it: 404 on the next request; a tombstone stays.
    Destroy { id: String },
    /// Its indices were deleted from the shared upstream.
    MarkPurged { id: String },
    /// Adds a key (its id, username and password hash made by the caller).
    CreateKey { id: String, key: Box<KeyRecord> },
    /// Revokes key `key_id`: it opens nothing from the next request on.
    RevokeKey { id: String, key_id: String },
    /// Sets the whole time (ms) from which a request counts as slow in its request log.
    SetSlowThreshold { id: String, ms: u64 },
    /// The overage ladder's step (actor `system`): the overage as it is now, and the mode
    /// the ladder sets with its reason (`None`: the mode stays).
    SetOverage {
        id: String,
        overage: Option<Overage>,
        mode: Option<(Mode, Option<String>)>,
    },
}

impl Command {
    /// The cluster or plan the command is about.
    pub fn target(&self) -> &str {
        match self {
            Command::PutPlan(p) => &p.name,
            Command::RemovePlan { name } => name,
            Command::CreateCluster(c) => &c.id,
            Command::ChangePlan { id, .. }
            | Command::SetMode { id, .. }
            | Command::SetCredentials { id, .. }
            | Command::SetAddress { id, .. }
            | Command::SetUpstream { id, .. }
            | Command::MarkProvisioned { id }
            | Command::Destroy { id }
            | Command::MarkPurged { id }
            | Command::SetOverage { id, .. }
            | Command::CreateKey { id, .. }
            | Command::RevokeKey { id, .. }
            | Command::SetSlowThreshold { id, .. } => id,
        }
    }

    /// A short name of the action, for the audit log.
    pub fn action(&self) -> &'static str {
        match self {
            Command::PutPlan(_) => "plan.put",
            Command::RemovePlan { .. } => "plan.remove",
            Command::CreateCluster(_) => "cluster.create",
            Command::ChangePlan { .. } => "cluster.plan",
            Command::SetMode { .. } => "cluster.mode",
            Command::SetCredentials { .. } => "cluster.credentials",
            Command::SetAddress { .. } => "cluster.address",
            Command::SetUpstream { .. } => "cluster.upstream",
            Command::MarkProvisioned { .. } => "cluster.provisioned",
            Command::Destroy { .. } => "cluster.destroy",
            Command::MarkPurged { .. } => "cluster.purged",
            Command::SetOverage { .. } => "cluster.overage",
            Command::CreateKey { .. } => "key.create",
            Command::RevokeKey { .. } => "key.revoke",
            Command::SetSlowThreshold { .. } => "cluster.slow_threshold",
        }
    }

    /// Whether the command is about a plan (else a cluster).
    pub fn is_plan(&self) -> bool {
        matches!(self, Command::PutPlan(_) | Command::RemovePlan { .. })
    }
}

/// What a command is applied with: the time, and the usage of each cluster (a plan
/// downgrade is checked against it).
pub struct Ctx<'a> {
    pub now: Millis,
    pub usage: &'a dyn Fn(&str) -> Usage,
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx").field("now", &self.now).finish()
    }
}

/// Why a command was refused. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no cluster `{0}`")]
    NoCluster(String),
    #[error("cluster `{0}` was destroyed")]
    Destroyed(String),
    /// With the names of the plans there are.
    #[error("no plan `{name}` (the plans: {})", .known.join(", "))]
    NoPlan { name: String, known: Vec<String> },
    #[error("{0}")]
    Conflict(String),
    #[error("no key `{0}`")]
    NoKey(String),
    #[error("{0}")]
    Invalid(String),
    /// The cluster's usage exceeds the plan it would move to.
    #[error("cluster `{id}` cannot move to plan `{plan}`: {}", .exceeded.join("; "))]
    Downgrade {
        id: String,
        plan: String,
        /// e.g. "11 shards in use, the plan allows 10".
        exceeded: Vec<String>,
        shards_in_use: u64,
        shards_allowed: u64,
        disk_in_use: u64,
        disk_allowed: u64,
    },
}

impl Catalog {
    /// The live cluster at `<hostname>.<region>`.
    pub fn by_host(&self, host_key: &str) -> Option<&Arc<ClusterRecord>> {
        self.hosts
            .get(host_key)
            .and_then(|id| self.clusters.get(id))
    }

    /// The live cluster with this username.
    pub fn by_username(&self, username: &str) -> Option<&Arc<ClusterRecord>> {
        self.users
            .get(username)
            .and_then(|id| self.clusters.get(id))
    }

    /// Live clusters.
    pub fn live(&self) -> impl Iterator<Item = &Arc<ClusterRecord>> {
        self.clusters.values().filter(|c| c.is_live())
    }

    fn index(&mut self, c: &ClusterRecord) {
        if c.is_live() {
            self.hosts.insert(c.host_key(), c.id.clone());
            for user in usernames(c) {
                self.users.insert(user.clone(), c.id.clone());
            }
        }
    }

    fn unindex(&mut self, c: &ClusterRecord) {
        if self.hosts.get(&c.host_key()) == Some(&c.id) {
            self.hosts.remove(&c.host_key());
        }
        for user in usernames(c) {
            if self.users.get(user) == Some(&c.id) {
                self.users.remove(user);
            }
        }
    }

    /// Puts a record in place (indexes updated); used by `apply` and when loading a store.
    pub fn put(&mut self, c: ClusterRecord) {
        if let Some(old) = self.clusters.get(&c.id).cloned() {
            self.unindex(&old);
        }
        self.index(&c);
        self.clusters.insert(c.id.clone(), Arc::new(c));
    }

    fn live_cluster(&self, id: &str) -> Result<ClusterRecord, Refusal> {
        match self.clusters.get(id) {
            None => Err(Refusal::NoCluster(id.into())),
            Some(c) if !c.is_live() => Err(Refusal::Destroyed(id.into())),
            Some(c) => Ok(ClusterRecord::clone(c)),
        }
    }

    fn check_unique(&self, c: &ClusterRecord) -> Result<(), Refusal> {
        if let Some(other) = self.hosts.get(&c.host_key()).filter(|o| **o != c.id) {
            return Err(Refusal::Conflict(format!(
                "`{}` is already the address of cluster `{other}`",
                c.host_key()
            )));
        }
        for user in usernames(c) {
            if let Some(other) = self.users.get(user).filter(|o| **o != c.id) {
                return Err(Refusal::Conflict(format!(
                    "username `{user}` is already used by cluster `{other}`"
                )));
            }
        }
        Ok(())
    }
}

/// The usernames that open cluster `c`: its master pair's and its keys'.
fn usernames(c: &ClusterRecord) -> impl Iterator<Item = &String> {
    std::iter::once(&c.username).chain(c.keys.iter().map(|k| &k.username))
}

/// Applies `cmd` to `cat`: the new catalog, or why not (and `cat` is unchanged).
pub fn apply(cat: &Catalog, cmd: &Command, ctx: &Ctx<'_>) -> Result<Catalog, Refusal> {
    let mut next = cat.clone();
    apply_in_place(&mut next, cmd, ctx)?;
    Ok(next)
}

/// Applies every command in order, all or none.
pub fn apply_all(cat: &Catalog, cmds: &[Command], ctx: &Ctx<'_>) -> Result<Catalog, Refusal> {
    let mut next = cat.clone();
    for cmd in cmds {
        apply_in_place(&mut next, cmd, ctx)?;
    }
    Ok(next)
}

/// Applies one command to a catalog the caller owns (a copy it throws away on refusal).
fn apply_in_place(cat: &mut Catalog, cmd: &Command, ctx: &Ctx<'_>) -> Result<(), Refusal> {
    match cmd {
        Command::PutPlan(p) => put_plan(cat, p),
        Command::RemovePlan { name } => remove_plan(cat, name),
        Command::CreateCluster(c) => create(cat, c, ctx),
        Command::MarkPurged { id } => mark_purged(cat, id),
        _ => {
            let mut c = cat.live_cluster(cmd.target())?;
            change(cat, &mut c, cmd, ctx)?;
            c.version += 1;
            cat.check_unique(&c)?;
            cat.put(c);
            Ok(())
        }
    }
}

fn put_plan(cat: &mut Catalog, p: &PlanRecord) -> Result<(), Refusal> {
    if p.name.is_empty() || p.concurrency == 0 {
        return Err(Refusal::Invalid(format!(
            "plan `{}`: a name and a concurrency of at least 1 are required",
            p.name
        )));
    }
    if let Err(e) = p.split() {
        return Err(Refusal::Invalid(format!("plan `{}`: {e}", p.name)));
    }
    cat.plans.insert(p.name.clone(), Arc::new(p.clone()));
    Ok(())
}

fn remove_plan(cat: &mut Catalog, name: &str) -> Result<(), Refusal> {
    if let Some(c) = cat.live().find(|c| c.plan == name) {
        return Err(Refusal::Conflict(format!(
            "plan `{name}` cannot be removed: cluster `{}` is on it",
            c.id
        )));
    }
    cat.plans
        .remove(name)
        .map(drop)
        .ok_or_else(|| no_plan(cat, name))
}

/// The refusal of a plan that does not exist, naming those that do.
fn no_plan(cat: &Catalog, name: &str) -> Refusal {
    Refusal::NoPlan {
        name: name.into(),
        known: cat.plans.keys().cloned().collect(),
    }
}

fn create(cat: &mut Catalog, c: &ClusterRecord, ctx: &Ctx<'_>) -> Result<(), Refusal> {
    if let Some(old) = cat.clusters.get(&c.id) {
        // A file may declare again a cluster it removed once its indices are gone.
        if old.is_live() || c.source != Source::File || !old.purged {
            return Err(Refusal::Conflict(format!(
                "cluster `{}` already exists{}",
                c.id,
                if old.is_live() {
                    ""
                } else {
                    " (destroyed; its indices are still being deleted)"
                }
            )));
        }
    }
    if !cat.plans.contains_key(&c.plan) {
        return Err(no_plan(cat, &c.plan));
    }
    check_labels(&c.hostname, &c.region)?;
    cat.check_unique(c)?;
    let mut c = c.clone();
    c.created_at = ctx.now;
    c.version = 1;
    c.destroyed_at = None;
    c.purged = false;
    c.overage = None;
    cat.put(c);
    Ok(())
}

fn check_labels(hostname: &str, region: &str) -> Result<(), Refusal> {
    for (what, v) in [("hostname", hostname), ("region", region)] {
        if !crate::config::valid_label(v) {
            return Err(Refusal::Invalid(format!(
                "{what} `{v}` must be one DNS label (1-63 of a-z, 0-9, `-`)"
            )));
        }
    }
    Ok(())
}

/// Changes a live cluster's record as `cmd` says.
fn change(
    cat: &Catalog,
    c: &mut ClusterRecord,
    cmd: &Command,
    ctx: &Ctx<'_>,
) -> Result<(), Refusal> {
    match cmd {
        Command::ChangePlan { plan, .. } => {
            let p = cat.plans.get(plan).ok_or_else(|| no_plan(cat, plan))?;
            check_downgrade(c, p, (ctx.usage)(&c.id))?;
            c.plan = plan.clone();
        }
        Command::SetMode {
            mode,
            reason,
            until,
            ..
        } => {
            if until.is_some() && *mode != Mode::Maintenance {
                return Err(Refusal::Invalid("`until` is for maintenance only".into()));
            }
            if until.is_some_and(|u| u <= ctx.now) {
                return Err(Refusal::Invalid("`until` is in the past".into()));
            }
            c.mode = *mode;
            c.mode_reason = reason.clone().filter(|r| !r.is_empty());
            c.mode_until = *until;
            // An operator's mode during an overage: the ladder never overrides it.
            if let Some(o) = c.overage.as_mut() {
                o.owns_mode = false;
            }
        }
        Command::SetSlowThreshold { ms, .. } => {
            if !(1..=MAX_SLOW_MS).contains(ms) {
                return Err(Refusal::Invalid(format!(
                    "slow_threshold_ms: from 1 to {MAX_SLOW_MS}"
                )));
            }
            c.slow_request_ms = Some(*ms);
        }
        Command::SetOverage { overage, mode, .. } => {
            c.overage = overage.clone();
            if let Some((mode, reason)) = mode {
                c.mode = *mode;
                c.mode_reason = reason.clone();
                c.mode_until = None;
            }
        }
        Command::SetCredentials {
            username,
            password,
            grace_until,
            ..
        } => {
            if !crate::config::valid_credential(username) {
                return Err(Refusal::Invalid(
                    "usernames are 1-128 letters and digits".into(),
                ));
            }
            c.previous = grace_until.filter(|u| *u > ctx.now).map(|until| Previous {
                username: c.username.clone(),
                password: c.password.clone(),
                until,
            });
            c.username = username.clone();
            c.password = password.clone();
        }
        Command::SetAddress {
            hostname, region, ..
        } => {
            check_labels(hostname, region)?;
            c.hostname = hostname.clone();
            c.region = region.clone();
        }
        Command::SetUpstream { upstream, .. } => {
            c.upstream = upstream.clone();
            if c.class == ClusterClass::SingleTenant {
                c.provisioned_at = None;
            }
        }
        Command::MarkProvisioned { .. } => {
            c.provisioned_at.get_or_insert(ctx.now);
        }
        Command::Destroy { .. } => {
            c.destroyed_at = Some(ctx.now);
            // Only a multitenant cluster leaves indices on a shared upstream to delete.
            c.purged = c.class != ClusterClass::Multitenant;
        }
        Command::CreateKey { key, .. } => create_key(c, key, ctx.now)?,
        Command::RevokeKey { key_id, .. } => {
            let before = c.keys.len();
            c.keys.retain(|k| k.id != *key_id);
            if c.keys.len() == before {
                return Err(Refusal::NoKey(key_id.clone()));
            }
        }
        Command::PutPlan(_)
        | Command::RemovePlan { .. }
        | Command::CreateCluster(_)
        | Command::MarkPurged { .. } => {
            unreachable!("handled by apply_in_place")
        }
    }
    Ok(())
}

/// Adds `key` to `c` (refused: a name or id already there, too many keys, bad fields).
fn create_key(c: &mut ClusterRecord, key: &KeyRecord, now: Millis) -> Result<(), Refusal> {
    if c.keys.len() >= MAX_KEYS {
        return Err(Refusal::Invalid(format!(
            "cluster `{}` has {MAX_KEYS} keys, the most it may have; delete one first",
            c.id
        )));
    }
    if let Some(k) = c.keys.iter().find(|k| k.name == key.name || k.id == key.id) {
        return Err(Refusal::Conflict(format!(
            "cluster `{}` already has a key named `{}`",
            c.id, k.name
        )));
    }
    if !crate::config::valid_credential(&key.username) {
        return Err(Refusal::Invalid(
            "usernames are 1-128 letters and digits".into(),
        ));
    }
    if key.expires_at.is_some_and(|e| e <= now) {
        return Err(Refusal::Invalid("`expires_at` is in the past".into()));
    }
    let mut key = key.clone();
    key.created_at = now;
    c.keys.push(key);
    Ok(())
}

/// Marks a tombstone's indices as deleted (the other commands are for live clusters).
fn mark_purged(cat: &mut Catalog, id: &str) -> Result<(), Refusal> {
    let mut c = match cat.clusters.get(id) {
        Some(c) if !c.is_live() => ClusterRecord::clone(c),
        Some(_) => {
            return Err(Refusal::Conflict(format!(
                "cluster `{id}` is not destroyed"
            )))
        }
        None => return Err(Refusal::NoCluster(id.into())),
    };
    c.purged = true;
    c.version += 1;
    cat.put(c);
    Ok(())
}

/// Refuses a move to `plan` that the cluster's current usage exceeds, with the numbers.
fn check_downgrade(c: &ClusterRecord, plan: &PlanRecord, used: Usage) -> Result<(), Refusal> {
    let exceeded = exceeded(used.shards, plan.shards, used.bytes, plan.disk);
    if exceeded.is_empty() {
        return Ok(());
    }
    Err(Refusal::Downgrade {
        id: c.id.clone(),
        plan: plan.name.clone(),
        exceeded,
        shards_in_use: used.shards,
        shards_allowed: plan.shards,
        disk_in_use: used.bytes,
        disk_allowed: plan.disk,
    })
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
pub(crate) mod tests;
