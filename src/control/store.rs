//! The durable store behind one small trait: committed batches in (the events of a change,
//! its audit entries, the plan history it adds, the overage notices it queues, an
//! idempotent response, the file's seed), the catalog and the change feed out; beside
//! them, the usage history (samples in, ranges out), the notices' delivery state, and what
//! a fleet of nodes shares (named values such as the tenancy key, leases of once-per-fleet
//! work). SQLite is the embedded implementation ([`super::sqlite`]); a fleet of edges
//! shares a PostgreSQL store in its place ([`super::pg`]), whose commits ring a doorbell
//! (LISTEN/NOTIFY) for every node's follower to read [`Store::changes_since`].
//!
//! A commit is atomic and durable when it returns: the control plane acknowledges and
//! applies a change only after that.
//!
//! Must not touch: the registry's runtime state, sockets.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::registry::{Catalog, ClusterRecord, Millis, PlanRecord};

/// One record written by a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// A cluster's record after the change (tombstones too: records are never removed).
    Cluster { record: Box<ClusterRecord> },
    /// A plan's record after the change.
    Plan { record: PlanRecord },
    /// A plan removed.
    PlanRemoved { name: String },
}

/// Records of committed events put in place in `cat`.
pub fn apply_events(cat: &mut Catalog, events: &[Event]) {
    for e in events {
        match e {
            Event::Cluster { record } => cat.put(ClusterRecord::clone(record)),
            Event::Plan { record } => {
                cat.plans
                    .insert(record.name.clone(), std::sync::Arc::new(record.clone()));
            }
            Event::PlanRemoved { name } => {
                cat.plans.remove(name);
            }
        }
    }
}

/// Who changed what, when, before and after (without secrets).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub at: Millis,
    /// `token:<id>`, `file` or `system`.
    pub actor: String,
    pub action: String,
    pub target: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// The start of an interval a cluster spends on a plan (`plan` is `None` once destroyed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanChange {
    pub cluster_id: String,
    pub at: Millis,
    /// `created`, `changed`, `price` (the plan's price changed) or `destroyed`.
    pub event: String,
    pub plan: Option<String>,
    pub monthly_price_cents: Option<u64>,
}

/// The response to a request with an `Idempotency-Key`, secrets blanked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Idempotent {
    pub key: String,
    /// Hash of the request (method, path, body): the same key with other parameters is
    /// refused.
    pub fingerprint: String,
    pub status: u16,
    pub body: Value,
}

/// An overage notice to deliver to the webhook (queued with the step that made it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notice {
    pub cluster_id: String,
    pub at: Millis,
    /// The JSON POSTed.
    pub body: Value,
}

/// One usage sample of a cluster: the last metering reading, and the requests and bytes
/// the edge counted since the cluster's previous sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageSample {
    pub at: Millis,
    pub disk_bytes: u64,
    pub documents: u64,
    pub shards: u64,
    pub indices: u64,
    pub requests: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// Everything one change writes, committed at once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    pub at: Millis,
    pub events: Vec<Event>,
    pub audit: Vec<AuditEntry>,
    pub plan_changes: Vec<PlanChange>,
    pub notices: Vec<Notice>,
    pub idempotent: Option<Idempotent>,
    /// What the file declared, when this batch applied it.
    pub seed: Option<Value>,
}

/// A batch as the change feed gives it back.
#[derive(Debug, Clone, PartialEq)]
pub struct Committed {
    pub seq: u64,
    pub at: Millis,
    pub events: Vec<Event>,
}

/// Which audit entries to read, newest first.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// Only this cluster's or plan's.
    pub target: Option<String>,
    /// Only entries with an id below this (paging back).
    pub before_id: Option<u64>,
    pub limit: usize,
}

/// A node of the fleet whose registration has not run out (see [`Store::heartbeat`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRow {
    pub node: String,
    /// The address of its peer listener, as it advertised it.
    pub peer: String,
}

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database is busy (another writer holds it): retry shortly.
    #[error("the store is busy: {0}")]
    Busy(String),
    /// Another writer committed since this one loaded (a fleet's store).
    #[error("the store moved on to change {0}; reload and retry")]
    Stale(u64),
    #[error("the store failed: {0}")]
    Failed(String),
}

/// The durable store.
pub trait Store: Send {
    /// The catalog as last committed, and the sequence number of the last batch.
    fn load(&mut self) -> Result<(Catalog, u64), StoreError>;
    /// Commits `batch` after change `after_seq` (refused with [`StoreError::Stale`] when
    /// another batch came first); durable when it returns. Returns the batch's number.
    fn commit(&mut self, after_seq: u64, batch: &Batch) -> Result<u64, StoreError>;
    /// The change feed: batches committed after `seq`, oldest first, at most `limit`.
    fn changes_since(&mut self, seq: u64, limit: usize) -> Result<Vec<Committed>, StoreError>;
    /// Audit entries, newest first, with their ids.
    fn audit(&mut self, q: &AuditQuery) -> Result<Vec<(u64, AuditEntry)>, StoreError>;
    /// The stored response of an idempotent request.
    fn idempotent(&mut self, key: &str) -> Result<Option<Idempotent>, StoreError>;
    /// What the file declared when it was last applied.
    fn seed(&mut self) -> Result<Option<Value>, StoreError>;
    /// A cluster's plan intervals, oldest first (what invoices are computed from).
    fn plan_history(&mut self, cluster: &str) -> Result<Vec<PlanChange>, StoreError>;
    /// Adds usage samples by cluster id (a second sample of a cluster at the same instant
    /// adds its counters to the first) and deletes every sample before `prune_before`.
    /// With a `flush` name, the batch is recorded under it in the same transaction, and a
    /// batch of that name already recorded adds nothing (written again after its answer
    /// was lost: counted once).
    fn record_usage(
        &mut self,
        flush: Option<&str>,
        samples: &[(String, UsageSample)],
        prune_before: Millis,
    ) -> Result<(), StoreError>;
    /// A cluster's samples with `from <= at <= to`, oldest first, at most `limit`.
    fn usage(
        &mut self,
        cluster: &str,
        from: Millis,
        to: Millis,
        limit: usize,
    ) -> Result<Vec<UsageSample>, StoreError>;
    /// The oldest notice not delivered yet, with its id and the attempts made so far.
    fn next_notice(&mut self) -> Result<Option<(u64, u32, Notice)>, StoreError>;
    /// The value stored under `name`, storing `proposed` first when there is none (the
    /// first node of a fleet decides).
    fn shared_value(&mut self, name: &str, proposed: &str) -> Result<String, StoreError>;
    /// Takes or extends lease `name` for `holder` until `now + ttl`: true when `holder`
    /// holds it now (it was free, expired, or already its own).
    fn lease(
        &mut self,
        name: &str,
        holder: &str,
        now: Millis,
        ttl: Millis,
    ) -> Result<bool, StoreError>;
    /// Gives lease `name` up, if `holder` holds it.
    fn release(&mut self, name: &str, holder: &str) -> Result<(), StoreError>;
    /// Registers node `node` (its peer listener at `peer`) until `ttl` milliseconds after
    /// the store's own clock reads now, and returns every node registered past that
    /// instant (this one included), ordered by name: the fleet's live nodes.
    fn heartbeat(
        &mut self,
        node: &str,
        peer: &str,
        ttl: Millis,
    ) -> Result<Vec<NodeRow>, StoreError>;
    /// Removes node `node`'s registration (a clean stop: its clusters move at once).
    fn leave(&mut self, node: &str) -> Result<(), StoreError>;
    /// Records a delivery attempt of notice `id`: delivered at `delivered`, or failed with
    /// `error`.
    fn notice_attempt(
        &mut self,
        id: u64,
        delivered: Option<Millis>,
        error: Option<&str>,
    ) -> Result<(), StoreError>;
}
