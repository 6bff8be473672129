//! The control plane's one writer: every change (admin API, the file's seed, the system's
//! own: provisioned, maintenance ended, indices purged) goes through [`Plane::submit`]:
//!
//! 1. apply the commands to the current catalog (pure; a refusal changes nothing);
//! 2. compile the result for serving (upstreams resolve, tenants stay isolated);
//! 3. commit the batch (records, audit, plan history, idempotent response, seed) to the
//!    store: durable when it returns;
//! 4. only then reconcile the runtime state from the diff and publish the next snapshot.
//!
//! A crash between 3 and 4 loses nothing (the store has it; a restart serves it), and a
//! crash before 3 applies nothing. `SEARCHGATE_FAILPOINT=before-commit|after-commit` makes
//! an admin-API change stop at that point and print `searchgate: failpoint <name>`, so a
//! test can kill -9 the process there.
//!
//! Files: `system` (the system's own changes: maintenance windows that end, clusters found
//! provisioned, destroyed tenants' indices to purge), `batch` (what a change writes to the
//! store: events, audit entries, plan history); this file holds the writer and its path.
//!
//! Must not touch: sockets (the API and the control thread call it), the request path.

mod batch;
mod system;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

use super::bell::Bell;
use super::clock::Clock;
use super::lastknown::LastKnown;
use super::lease::{Leads, Lease};
use super::seed::Declared;
use super::store::{apply_events, Committed, Event, Idempotent, Notice, Store, StoreError};
use crate::nodes::Resolver;
use crate::policy::shards::Usage;
use crate::registry::catalog::{apply_all, Ctx};
use crate::registry::diff::{diff, Diff};
use crate::registry::runtime::Runtime;
use crate::registry::{
    compile, Catalog, Checked, Command, Millis, Refusal, Registry, RegistryError, Settings,
    Snapshot,
};

/// The plane shared by the admin API, the control loop and the control thread.
pub type SharedPlane = Arc<Mutex<Plane>>;

/// Locks the plane (a panicked holder does not poison it for the others).
pub fn lock(plane: &SharedPlane) -> std::sync::MutexGuard<'_, Plane> {
    plane.lock().unwrap_or_else(|p| p.into_inner())
}

/// The wall clock in milliseconds since the Unix epoch (the control plane's own time is
/// [`Plane::now`], which tests can set).
pub use super::clock::system_ms as now_ms;

use batch::batch_of;
pub use batch::redacted;
pub use system::Purge;

/// Batches read from the feed at a time; a node a whole page behind reloads instead.
pub const FEED_PAGE: usize = 1000;

/// How a catalog a follower installs goes into its last known catalog.
enum Kept<'a> {
    /// A page of the feed, appended to the journal.
    Page(&'a [Committed]),
    /// The whole catalog (a reload).
    Whole,
}
/// How often a change is applied again after another writer committed first.
const STALE_RETRIES: u32 = 8;

/// A change to submit: commands, who asks, and what to store with it.
#[derive(Debug, Clone, Default)]
pub struct Change {
    /// `token:<id>`, `file` or `system`.
    pub actor: String,
    pub cmds: Vec<Command>,
    /// The response to keep for an `Idempotency-Key`.
    pub idempotent: Option<Idempotent>,
    /// What the file declares, when this change applies it.
    pub seed: Option<Declared>,
    /// Overage notices for the webhook (queued only when one is configured).
    pub notices: Vec<Notice>,
}

/// Why a change was not made. Nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Unservable(#[from] RegistryError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A change made.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The store's batch number (`None`: nothing needed storing).
    pub seq: Option<u64>,
    /// The snapshot generation published.
    pub generation: u64,
    pub catalog: Arc<Catalog>,
}

/// The writer.
pub struct Plane {
    store: Box<dyn Store>,
    settings: Settings,
    runtime: Runtime,
    registry: Arc<Registry>,
    seq: u64,
    declared: Declared,
    failpoint: Option<String>,
    clock: Clock,
    /// Overage notices are queued for the webhook (`[billing] webhook` is set).
    notify: bool,
    /// Rung after a commit that queued notices: wakes the webhook's delivery thread.
    notice_bell: Arc<Bell>,
    /// The fleet's leader lease (`None`: a node on its own store, always the leader).
    lease: Option<Lease>,
    /// Upstream names and their addresses (looked up again by the checker thread).
    resolver: Arc<Resolver>,
    /// A fleet node's copy of the catalog in its data directory (see `control::lastknown`).
    last_known: Option<LastKnown>,
    /// The published catalog as checked for serving: the next change checks only what it
    /// touches against it.
    checked: Checked,
    /// The settings or the names' addresses changed: the next change checks everything.
    check_all: bool,
}

impl std::fmt::Debug for Plane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plane").field("seq", &self.seq).finish()
    }
}

impl Plane {
    /// Loads the store's catalog and publishes it as generation 1 (the system clock).
    pub fn open(store: Box<dyn Store>, settings: Settings) -> Result<Plane, String> {
        Plane::open_with(store, settings, Clock::system())
    }

    /// [`Plane::open`] with `clock` as the control plane's time.
    pub fn open_with(
        mut store: Box<dyn Store>,
        settings: Settings,
        clock: Clock,
    ) -> Result<Plane, String> {
        let (cat, seq) = store.load().map_err(|e| e.to_string())?;
        let declared = match store.seed().map_err(|e| e.to_string())? {
            Some(v) => serde_json::from_value(v).map_err(|e| format!("stored seed: {e}"))?,
            None => Declared::default(),
        };
        Plane::open_at(store, settings, clock, (cat, seq, declared))
    }

    /// A plane serving `cat`, committed by the store up to `seq`, the file's seed last
    /// applied being `declared` (a fleet node started from its last known catalog while
    /// the store is unreachable: the store is read again when it answers).
    pub fn open_at(
        store: Box<dyn Store>,
        settings: Settings,
        clock: Clock,
        (cat, seq, declared): (Catalog, u64, Declared),
    ) -> Result<Plane, String> {
        let resolver = Arc::new(Resolver::for_process());
        let by = |u: &str| resolver.resolve(u);
        let checked = compile(&Arc::new(cat), &settings, &by).map_err(|e| e.to_string())?;
        let runtime = Runtime::new(checked.catalog());
        let first = Snapshot::assemble(
            &checked,
            &runtime,
            None,
            &settings,
            1,
            (Instant::now(), clock.now_ms()),
        );
        Ok(Plane {
            store,
            settings,
            runtime,
            checked,
            check_all: false,
            registry: Arc::new(Registry::new(first)),
            seq,
            declared,
            failpoint: std::env::var("SEARCHGATE_FAILPOINT").ok(),
            clock,
            notify: false,
            notice_bell: Arc::default(),
            lease: None,
            resolver,
            last_known: None,
        })
    }

    /// Keeps this node's last known catalog in `lk` from now on (written whole now, then
    /// each batch the plane applies). A failure to write is said, not fatal: the store
    /// holds the truth.
    pub fn keep_last_known(&mut self, lk: LastKnown) {
        let declared = serde_json::to_value(&self.declared).unwrap_or_default();
        let mut lk = lk;
        let cat = self.registry.load().catalog.clone();
        if let Err(e) = lk.save(&cat, self.seq, &declared) {
            eprintln!("searchgate: fleet: keeping the last known catalog: {e}");
        }
        self.last_known = Some(lk);
    }

    /// How many times the last known catalog's journal was synced (`None`: not kept).
    pub fn last_known_syncs(&self) -> Option<u64> {
        self.last_known.as_ref().map(LastKnown::syncs)
    }

    /// Adds batch `seq` (`events`) to the last known catalog, now `cat`.
    fn remember(&mut self, seq: u64, events: &[Event], declared: Option<&Value>, cat: &Catalog) {
        let Some(lk) = self.last_known.as_mut() else {
            return;
        };
        if let Err(e) = lk.append(seq, events, declared, cat) {
            eprintln!("searchgate: fleet: keeping the last known catalog: {e}");
        }
    }

    /// Puts `cat`, the catalog at `seq`, in the last known catalog: a page of the feed
    /// appended with one sync, or the whole catalog written again.
    fn keep(&mut self, kept: Kept<'_>, cat: &Catalog, seq: u64) {
        let Some(lk) = self.last_known.as_mut() else {
            return;
        };
        let done = match kept {
            Kept::Page(page) => {
                let page: Vec<_> = page
                    .iter()
                    .map(|c| (c.seq, c.events.as_slice(), None))
                    .collect();
                lk.append_page(&page, cat)
            }
            Kept::Whole => {
                let declared = serde_json::to_value(&self.declared).unwrap_or_default();
                lk.save(cat, seq, &declared)
            }
        };
        if let Err(e) = done {
            eprintln!("searchgate: fleet: keeping the last known catalog: {e}");
        }
    }

    /// The control plane's time now (milliseconds since the Unix epoch).
    pub fn now(&self) -> Millis {
        self.clock.now_ms()
    }

    /// The control plane's clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Takes part in the fleet's leader election with `lease` (see `control::lease`).
    pub fn set_lease(&mut self, lease: Lease) {
        self.lease = Some(lease);
    }

    /// Whether this node runs the fleet's once-only work now (renewing or taking the
    /// lease as needed; a node without a lease always does). Says so when it changes.
    pub fn leads(&mut self) -> bool {
        let Some(lease) = self.lease.as_mut() else {
            return true;
        };
        let leads = lease.check(&mut *self.store, Instant::now());
        match leads {
            Leads::Gained => println!("searchgate: fleet: node {} leads", lease.node()),
            Leads::Lost => println!("searchgate: fleet: node {} no longer leads", lease.node()),
            Leads::Yes | Leads::No => {}
        }
        leads.now()
    }

    /// Whether this node is one of a fleet (it has a leader lease).
    pub fn in_fleet(&self) -> bool {
        self.lease.is_some()
    }

    /// Gives the leader lease up (a clean stop).
    pub fn release_lease(&mut self) {
        if let Some(lease) = self.lease.as_mut() {
            lease.release(&mut *self.store);
        }
    }

    /// Queue overage notices for the webhook from now on.
    pub fn queue_notices(&mut self, on: bool) {
        self.notify = on;
    }

    /// What the control plane rings after committing overage notices (the webhook's
    /// delivery thread waits on it).
    pub fn notice_bell(&self) -> Arc<Bell> {
        self.notice_bell.clone()
    }

    /// The registry the edge reads.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.registry.load()
    }

    /// The store, for reads (audit, idempotent responses, history).
    pub fn store(&mut self) -> &mut dyn Store {
        &mut *self.store
    }

    /// What the file declared when it was last applied.
    pub fn declared(&self) -> &Declared {
        &self.declared
    }

    /// The edge's settings snapshots are made with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The upstream names in use and their addresses.
    pub fn resolver(&self) -> &Arc<Resolver> {
        &self.resolver
    }

    /// Checks `next`, which differs from the published catalog by `d`, for serving with
    /// this plane's settings and resolver: only the clusters `d` names, unless a plan, the
    /// settings or the names' addresses changed (then all of them). Says which.
    fn check(&self, next: &Arc<Catalog>, d: &Diff) -> Result<(Checked, bool), ControlError> {
        let by = |u: &str| self.resolver.resolve(u);
        if self.check_all || !d.plans.is_empty() {
            return Ok((compile(next, &self.settings, &by)?, false));
        }
        Ok((self.checked.update(next, d, &self.settings, &by)?, true))
    }

    /// Runs `f` (which submits changes) with `pools` and `health` as the settings; if it
    /// fails, the settings before are restored (and nothing was published: a submit that
    /// fails publishes nothing). A successful submit publishes under the new settings.
    pub fn with_upstream_settings<T>(
        &mut self,
        pools: Vec<Arc<crate::config::PoolSpec>>,
        health: Arc<crate::config::HealthSettings>,
        f: impl FnOnce(&mut Plane) -> Result<T, String>,
    ) -> Result<T, String> {
        let old_pools = std::mem::replace(&mut self.settings.pools, pools);
        let old_health = std::mem::replace(&mut self.settings.health, health);
        self.check_all = true;
        let out = f(self);
        if out.is_err() {
            self.settings.pools = old_pools;
            self.settings.health = old_health;
        }
        out
    }

    /// Publishes the current catalog again (the names' addresses changed).
    pub fn refresh(&mut self) -> Result<(), ControlError> {
        self.check_all = true;
        let prev = self.registry.load();
        // The same catalog: nothing new to keep.
        self.install(
            &prev,
            Catalog::clone(&prev.catalog),
            self.seq,
            Kept::Page(&[]),
        )
        .map(drop)
    }

    /// A cluster's current usage (runtime state).
    pub fn usage(&self, id: &str) -> Usage {
        self.runtime
            .get(id)
            .map(|h| h.state.usage())
            .unwrap_or_default()
    }

    /// Applies, commits, then publishes `change` (see the module docs).
    pub fn submit(&mut self, change: Change) -> Result<Outcome, ControlError> {
        self.submit_with(change, &mut |_| None)
    }

    /// [`Plane::submit`], with `respond` called on the new catalog once it is checked and
    /// before the commit: the idempotent response it returns is committed with the change.
    /// When another node of the fleet committed first ([`StoreError::Stale`]), the plane
    /// catches up with the feed and applies the commands again to the newer catalog (a
    /// refusal then is final); the API, which checks `If-Match` before the commands, uses
    /// [`Plane::retrying`] around its whole request instead.
    pub fn submit_with(
        &mut self,
        change: Change,
        respond: &mut dyn FnMut(&Catalog) -> Option<Idempotent>,
    ) -> Result<Outcome, ControlError> {
        self.retrying(|p| p.submit_once(change.clone(), respond))
    }

    /// Runs `attempt` after catching up with the store's feed; when it fails because
    /// another writer committed first, catches up and runs it again (a few times).
    pub fn retrying<T>(
        &mut self,
        mut attempt: impl FnMut(&mut Plane) -> Result<T, ControlError>,
    ) -> Result<T, ControlError> {
        let mut tries = 0;
        loop {
            self.catch_up()?;
            match attempt(self) {
                Err(ControlError::Store(StoreError::Stale(_))) if tries < STALE_RETRIES => {
                    tries += 1;
                }
                other => return other,
            }
        }
    }

    /// One attempt of [`Plane::submit_with`]: apply, check, commit after the plane's own
    /// sequence number, publish.
    pub fn submit_once(
        &mut self,
        change: Change,
        respond: &mut dyn FnMut(&Catalog) -> Option<Idempotent>,
    ) -> Result<Outcome, ControlError> {
        let now_ms = self.clock.now_ms();
        let prev = self.registry.load();
        let runtime = &self.runtime;
        let usage = |id: &str| runtime.get(id).map(|h| h.state.usage()).unwrap_or_default();
        let ctx = Ctx {
            now: now_ms,
            usage: &usage,
        };
        let next = Arc::new(apply_all(&prev.catalog, &change.cmds, &ctx)?);
        let d = diff(&prev.catalog, &next);
        let checked = self.check(&next, &d)?;
        let seed = match &change.seed {
            Some(s) if *s != self.declared => Some(s),
            _ => None,
        };
        let idempotent = respond(&next).or_else(|| change.idempotent.clone());
        let mut seq = None;
        if !d.is_empty() || seed.is_some() || idempotent.is_some() {
            let mut batch = batch_of(&prev.catalog, &next, &d, &change, now_ms);
            batch.idempotent = idempotent;
            batch.seed = seed.map(|s| serde_json::to_value(s).expect("a seed serialises"));
            if self.notify {
                batch.notices = change.notices.clone();
            }
            self.failpoint("before-commit", &change.actor);
            let n = self.store.commit(self.seq, &batch)?;
            if !batch.notices.is_empty() {
                self.notice_bell.ring();
            }
            self.seq = n;
            seq = Some(n);
            self.remember(n, &batch.events, batch.seed.as_ref(), &next);
            self.failpoint("after-commit", &change.actor);
        }
        if let Some(s) = change.seed {
            self.declared = s;
        }
        let generation = self.publish(&prev, next.clone(), checked, &d);
        Ok(Outcome {
            seq,
            generation,
            catalog: next,
        })
    }

    /// Reconciles the runtime state with `next` (checked, differing from `prev` by `d`;
    /// `touched`: only the clusters `d` names were checked again) and publishes it as the
    /// next generation (made from `prev` and `d` when only those were).
    fn publish(
        &mut self,
        prev: &Arc<Snapshot>,
        next: Arc<Catalog>,
        (checked, touched): (Checked, bool),
        d: &Diff,
    ) -> u64 {
        self.runtime.reconcile(d, &next);
        let generation = prev.generation + 1;
        let now = (Instant::now(), self.clock.now_ms());
        let rt = &self.runtime;
        let snap = match touched {
            true => Snapshot::update(prev, &checked, rt, d, &self.settings, generation, now),
            false => Snapshot::assemble(&checked, rt, Some(prev), &self.settings, generation, now),
        };
        self.registry.publish(snap);
        self.checked = checked;
        self.check_all = false;
        generation
    }

    /// The store's sequence number this node has applied.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Applies what other writers committed since this node's sequence number (the change
    /// feed, a page at a time) and publishes it; a node more than a page behind reloads
    /// the whole catalog instead. Returns how many batches it applied (0: up to date).
    pub fn catch_up(&mut self) -> Result<u64, ControlError> {
        let from = self.seq;
        loop {
            let page = self.store.changes_since(self.seq, FEED_PAGE)?;
            if page.is_empty() {
                return Ok(self.seq.saturating_sub(from));
            }
            if page.len() == FEED_PAGE {
                self.reload()?;
                continue;
            }
            let prev = self.registry.load();
            let mut next = Catalog::clone(&prev.catalog);
            for c in &page {
                apply_events(&mut next, &c.events);
            }
            let last = page.last().map_or(self.seq, |c| c.seq);
            self.install(&prev, next, last, Kept::Page(&page))?;
        }
    }

    /// Replaces the catalog with the store's whole catalog (a node far behind the feed).
    pub fn reload(&mut self) -> Result<(), ControlError> {
        let (cat, seq) = self.store.load()?;
        let prev = self.registry.load();
        self.install(&prev, cat, seq, Kept::Whole)?;
        Ok(())
    }

    /// Publishes `next`, committed by the store up to `seq`, after `prev`, once it is in
    /// the last known catalog (`kept`: how), so that whatever this node serves survives a
    /// crash of the node.
    fn install(
        &mut self,
        prev: &Arc<Snapshot>,
        next: Catalog,
        seq: u64,
        kept: Kept<'_>,
    ) -> Result<Arc<Catalog>, ControlError> {
        let next = Arc::new(next);
        // What another node committed was checked there: a failure here is this node's
        // settings (e.g. an upstream it cannot resolve), and it must still follow.
        let d = diff(&prev.catalog, &next);
        let checked = self.check(&next, &d)?;
        self.keep(kept, &next, seq);
        self.seq = seq;
        self.publish(prev, next.clone(), checked, &d);
        Ok(next)
    }

    fn failpoint(&self, at: &str, actor: &str) {
        if self.failpoint.as_deref() != Some(at) || !actor.starts_with("token:") {
            return;
        }
        println!("searchgate: failpoint {at}: holding (seq {})", self.seq);
        let _ = std::io::stdout().flush();
        loop {
            std::thread::park();
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
