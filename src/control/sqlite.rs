//! The embedded [`Store`]: SQLite through rusqlite (the library bundled, so no system
//! package is needed), in WAL mode with `synchronous = FULL`: a commit is on disk when it
//! returns, and a crash (kill -9, power loss) keeps every committed batch and no part of
//! an uncommitted one. Migrations are [`super::schema`]'s, rendered for SQLite and applied in
//! order at open; `PRAGMA user_version` records how many a database has.
//!
//! The billing tables (usage history, notices) are in [`super::sqlite_billing`].
//!
//! Must not touch: the registry's runtime state, sockets.

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::Value;

use super::sqlite_billing as billing;
use super::store::{
    AuditEntry, AuditQuery, Batch, Committed, Event, Idempotent, NodeRow, Notice, PlanChange,
    Store, StoreError, UsageSample,
};
use crate::registry::Millis;
use crate::registry::{Catalog, ClusterRecord, PlanRecord};

use super::schema::{ddl, Dialect, MIGRATIONS};

/// File name of the database inside the data directory.
pub const DB_FILE: &str = "control.db";

/// The SQLite store.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
}

pub(super) fn failed(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            StoreError::Busy(e.to_string())
        }
        _ => StoreError::Failed(e.to_string()),
    }
}

pub(super) fn json_err(e: serde_json::Error) -> StoreError {
    StoreError::Failed(format!("a stored record does not parse: {e}"))
}

impl SqliteStore {
    /// Opens (creating it if needed) the database at `path` and migrates it.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let conn = Connection::open(path).map_err(failed)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(failed)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(failed)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Failed(format!("journal mode {mode}, not WAL")));
        }
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .map_err(failed)?;
        let mut store = SqliteStore { conn };
        store.migrate()?;
        Ok(store)
    }

    /// Applies the migrations the database lacks, each in a write transaction that reads
    /// the version first (two processes opening a new database migrate it once).
    fn migrate(&mut self) -> Result<(), StoreError> {
        for (i, items) in MIGRATIONS.iter().enumerate() {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(failed)?;
            let version: i64 = tx
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .map_err(failed)?;
            let version = version.max(0) as usize;
            if version > MIGRATIONS.len() {
                return Err(StoreError::Failed(format!(
                    "the database has schema {version}, newer than this searchgate ({})",
                    MIGRATIONS.len()
                )));
            }
            if version > i {
                continue; // dropped: rolled back, nothing written
            }
            tx.execute_batch(&ddl(items, Dialect::Sqlite))
                .map_err(failed)?;
            tx.execute_batch(&format!("PRAGMA user_version = {}", i + 1))
                .map_err(failed)?;
            tx.commit().map_err(failed)?;
        }
        Ok(())
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<usize, StoreError> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
            .map(|v| v as usize)
            .map_err(failed)
    }
}

fn last_seq(tx: &Connection) -> Result<u64, StoreError> {
    tx.query_row("SELECT COALESCE(MAX(seq), 0) FROM changes", [], |r| {
        r.get::<_, i64>(0)
    })
    .map(|n| n as u64)
    .map_err(failed)
}

fn opt_json(v: &Option<Value>) -> Option<String> {
    v.as_ref().map(Value::to_string)
}

fn write_event(tx: &Connection, e: &Event) -> Result<(), StoreError> {
    match e {
        Event::Cluster { record } => {
            let text = serde_json::to_string(record).map_err(json_err)?;
            tx.execute(
                "INSERT INTO clusters (id, state, plan, record) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (id) DO UPDATE SET state = ?2, plan = ?3, record = ?4",
                params![record.id, record.state(), record.plan, text],
            )
        }
        Event::Plan { record } => {
            let text = serde_json::to_string(record).map_err(json_err)?;
            tx.execute(
                "INSERT INTO plans (name, record) VALUES (?1, ?2)
                 ON CONFLICT (name) DO UPDATE SET record = ?2",
                params![record.name, text],
            )
        }
        Event::PlanRemoved { name } => tx.execute("DELETE FROM plans WHERE name = ?1", [name]),
    }
    .map(drop)
    .map_err(failed)
}

fn write_batch(tx: &Connection, seq: u64, b: &Batch) -> Result<(), StoreError> {
    let events = serde_json::to_string(&b.events).map_err(json_err)?;
    tx.execute(
        "INSERT INTO changes (seq, at, events) VALUES (?1, ?2, ?3)",
        params![seq as i64, b.at, events],
    )
    .map_err(failed)?;
    for e in &b.events {
        write_event(tx, e)?;
    }
    for a in &b.audit {
        tx.execute(
            "INSERT INTO audit (seq, at, actor, action, target, before, after)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                seq as i64,
                a.at,
                a.actor,
                a.action,
                a.target,
                opt_json(&a.before),
                opt_json(&a.after)
            ],
        )
        .map_err(failed)?;
    }
    for p in &b.plan_changes {
        tx.execute(
            "INSERT INTO plan_history (seq, cluster_id, at, event, plan, monthly_price_cents)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                seq as i64,
                p.cluster_id,
                p.at,
                p.event,
                p.plan,
                p.monthly_price_cents.map(|c| c as i64)
            ],
        )
        .map_err(failed)?;
    }
    billing::queue_notices(tx, seq, &b.notices)?;
    if let Some(i) = &b.idempotent {
        tx.execute(
            "INSERT INTO idempotency (key, fingerprint, status, body, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![i.key, i.fingerprint, i.status, i.body.to_string(), b.at],
        )
        .map_err(failed)?;
    }
    if let Some(s) = &b.seed {
        tx.execute(
            "INSERT INTO seed (one, declared) VALUES (1, ?1)
             ON CONFLICT (one) DO UPDATE SET declared = ?1",
            [s.to_string()],
        )
        .map_err(failed)?;
    }
    Ok(())
}

impl Store for SqliteStore {
    fn load(&mut self) -> Result<(Catalog, u64), StoreError> {
        let tx = self.conn.transaction().map_err(failed)?;
        let mut cat = Catalog::default();
        {
            let mut q = tx.prepare("SELECT record FROM plans").map_err(failed)?;
            let rows = q.query_map([], |r| r.get::<_, String>(0)).map_err(failed)?;
            for text in rows {
                let p: PlanRecord =
                    serde_json::from_str(&text.map_err(failed)?).map_err(json_err)?;
                cat.plans.insert(p.name.clone(), p.into());
            }
            let mut q = tx.prepare("SELECT record FROM clusters").map_err(failed)?;
            let rows = q.query_map([], |r| r.get::<_, String>(0)).map_err(failed)?;
            for text in rows {
                let c: ClusterRecord =
                    serde_json::from_str(&text.map_err(failed)?).map_err(json_err)?;
                cat.put(c);
            }
        }
        let seq = last_seq(&tx)?;
        Ok((cat, seq))
    }

    fn commit(&mut self, after_seq: u64, batch: &Batch) -> Result<u64, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(failed)?;
        let last = last_seq(&tx)?;
        if last != after_seq {
            return Err(StoreError::Stale(last));
        }
        let seq = last + 1;
        write_batch(&tx, seq, batch)?;
        tx.commit().map_err(failed)?;
        Ok(seq)
    }

    fn changes_since(&mut self, seq: u64, limit: usize) -> Result<Vec<Committed>, StoreError> {
        let mut q = self
            .conn
            .prepare("SELECT seq, at, events FROM changes WHERE seq > ?1 ORDER BY seq LIMIT ?2")
            .map_err(failed)?;
        let rows = q
            .query_map(params![seq as i64, limit as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(failed)?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, at, events) = row.map_err(failed)?;
            out.push(Committed {
                seq: seq as u64,
                at,
                events: serde_json::from_str(&events).map_err(json_err)?,
            });
        }
        Ok(out)
    }

    fn audit(&mut self, q: &AuditQuery) -> Result<Vec<(u64, AuditEntry)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, at, actor, action, target, before, after FROM audit
                 WHERE (?1 IS NULL OR target = ?1) AND (?2 IS NULL OR id < ?2)
                 ORDER BY id DESC LIMIT ?3",
            )
            .map_err(failed)?;
        let before = q.before_id.map(|i| i as i64);
        let rows = stmt
            .query_map(params![q.target, before, q.limit as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)? as u64,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Option<String>>(5)?,
                    r.get::<_, Option<String>>(6)?,
                ))
            })
            .map_err(failed)?;
        let parse = |t: Option<String>| -> Result<Option<Value>, StoreError> {
            t.map(|t| serde_json::from_str(&t))
                .transpose()
                .map_err(json_err)
        };
        let mut out = Vec::new();
        for row in rows {
            let (id, at, actor, action, target, before, after) = row.map_err(failed)?;
            out.push((
                id,
                AuditEntry {
                    at,
                    actor,
                    action,
                    target,
                    before: parse(before)?,
                    after: parse(after)?,
                },
            ));
        }
        Ok(out)
    }

    fn idempotent(&mut self, key: &str) -> Result<Option<Idempotent>, StoreError> {
        let row = self
            .conn
            .query_row(
                "SELECT fingerprint, status, body FROM idempotency WHERE key = ?1",
                [key],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, u16>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                },
            )
            .optional()
            .map_err(failed)?;
        row.map(|(fingerprint, status, body)| {
            Ok(Idempotent {
                key: key.to_string(),
                fingerprint,
                status,
                body: serde_json::from_str(&body).map_err(json_err)?,
            })
        })
        .transpose()
    }

    fn seed(&mut self) -> Result<Option<Value>, StoreError> {
        let text: Option<String> = self
            .conn
            .query_row("SELECT declared FROM seed WHERE one = 1", [], |r| r.get(0))
            .optional()
            .map_err(failed)?;
        text.map(|t| serde_json::from_str(&t).map_err(json_err))
            .transpose()
    }

    fn plan_history(&mut self, cluster: &str) -> Result<Vec<PlanChange>, StoreError> {
        let mut q = self
            .conn
            .prepare(
                "SELECT at, event, plan, monthly_price_cents FROM plan_history
                 WHERE cluster_id = ?1 ORDER BY id",
            )
            .map_err(failed)?;
        let rows = q
            .query_map([cluster], |r| {
                Ok(PlanChange {
                    cluster_id: cluster.to_string(),
                    at: r.get(0)?,
                    event: r.get(1)?,
                    plan: r.get(2)?,
                    monthly_price_cents: r.get::<_, Option<i64>>(3)?.map(|c| c as u64),
                })
            })
            .map_err(failed)?;
        rows.collect::<Result<_, _>>().map_err(failed)
    }

    fn record_usage(
        &mut self,
        flush: Option<&str>,
        samples: &[(String, UsageSample)],
        prune_before: Millis,
    ) -> Result<(), StoreError> {
        billing::record_usage(&mut self.conn, flush, samples, prune_before)
    }

    fn usage(
        &mut self,
        cluster: &str,
        from: Millis,
        to: Millis,
        limit: usize,
    ) -> Result<Vec<UsageSample>, StoreError> {
        billing::usage(&self.conn, cluster, from, to, limit)
    }

    fn next_notice(&mut self) -> Result<Option<(u64, u32, Notice)>, StoreError> {
        billing::next_notice(&self.conn)
    }

    fn shared_value(&mut self, name: &str, proposed: &str) -> Result<String, StoreError> {
        self.conn
            .execute(
                "INSERT INTO fleet (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING",
                [name, proposed],
            )
            .map_err(failed)?;
        self.conn
            .query_row("SELECT value FROM fleet WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .map_err(failed)
    }

    fn lease(
        &mut self,
        name: &str,
        holder: &str,
        now: Millis,
        ttl: Millis,
    ) -> Result<bool, StoreError> {
        // A row comes back only when the lease was taken or extended.
        self.conn
            .query_row(
                "INSERT INTO leases (name, holder, expires_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (name) DO UPDATE
                    SET holder = excluded.holder, expires_at = excluded.expires_at
                    WHERE leases.holder = excluded.holder OR leases.expires_at < ?4
                 RETURNING holder",
                params![name, holder, now.saturating_add(ttl), now],
                |_| Ok(()),
            )
            .optional()
            .map(|r| r.is_some())
            .map_err(failed)
    }

    fn heartbeat(
        &mut self,
        node: &str,
        peer: &str,
        ttl: Millis,
    ) -> Result<Vec<NodeRow>, StoreError> {
        // The store is this machine's file: its clock is this machine's.
        let now = super::clock::system_ms();
        self.conn
            .execute(
                "INSERT INTO nodes (node, peer, expires_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (node) DO UPDATE
                    SET peer = excluded.peer, expires_at = excluded.expires_at",
                params![node, peer, now.saturating_add(ttl)],
            )
            .map_err(failed)?;
        let mut st = self
            .conn
            .prepare("SELECT node, peer FROM nodes WHERE expires_at > ?1 ORDER BY node")
            .map_err(failed)?;
        let rows = st
            .query_map([now], |r| {
                Ok(NodeRow {
                    node: r.get(0)?,
                    peer: r.get(1)?,
                })
            })
            .map_err(failed)?;
        rows.collect::<Result<_, _>>().map_err(failed)
    }

    fn leave(&mut self, node: &str) -> Result<(), StoreError> {
        self.conn
            .execute("DELETE FROM nodes WHERE node = ?1", [node])
            .map(drop)
            .map_err(failed)
    }

    fn release(&mut self, name: &str, holder: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "DELETE FROM leases WHERE name = ?1 AND holder = ?2",
                [name, holder],
            )
            .map(drop)
            .map_err(failed)
    }

    fn notice_attempt(
        &mut self,
        id: u64,
        delivered: Option<Millis>,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        billing::notice_attempt(&self.conn, id, delivered, error)
    }
}
