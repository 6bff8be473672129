//! The fleet's [`Store`]: PostgreSQL through the synchronous `postgres` client (it runs its
//! own small runtime on the calling thread: only control threads call it, never the edge's
//! workers). Selected by `[store] url = "postgres://..."`.
//!
//! Commits are serialised by a transaction-level advisory lock taken before the next
//! sequence number is read: a batch's number is allocated only once every earlier batch is
//! committed and visible, so the feed's order is commit order and a reader of
//! `seq > last_applied` never skips one. Each commit also sends `NOTIFY searchgate_changes`
//! (delivered at commit): the followers' doorbell ([`Doorbell`]). Migrations are
//! [`super::schema`]'s, rendered for PostgreSQL, applied under another advisory lock (nodes
//! starting together migrate once); `schema_version` records how many a database has.
//!
//! A lost connection is opened again on the next call; while the server is unreachable
//! every call fails with [`StoreError::Busy`] (the admin API answers 503 and Retry-After).
//!
//! Files: `commit` (a batch written in its transaction: changes, records, audit, plan
//! history, idempotent answer, seed, the notification), `doorbell` (the followers' `LISTEN`
//! connection); this file holds the connection, the migrations and the [`Store`] methods.
//!
//! Must not touch: the registry's runtime state, sockets other than the store's.

mod commit;
mod doorbell;

use std::str::FromStr;
use std::time::Duration;

use postgres::{Client, NoTls};
use serde_json::Value;

use super::pg_billing as billing;
use super::schema::{ddl, Dialect, MIGRATIONS};
use super::sqlite::json_err;
use super::store::{
    AuditEntry, AuditQuery, Batch, Committed, Idempotent, NodeRow, Notice, PlanChange, Store,
    StoreError, UsageSample,
};
use crate::registry::{Catalog, ClusterRecord, Millis, PlanRecord};

use commit::{last_seq, records, write_batch};
pub use doorbell::{Doorbell, Rang};

/// The channel commits notify.
pub const CHANNEL: &str = "searchgate_changes";
/// Advisory lock serialising commits (any constant: only this program takes it).
const COMMIT_LOCK: i64 = 0x5347_0001;
/// Advisory lock serialising migrations.
const MIGRATE_LOCK: i64 = 0x5347_0002;
/// How long a connection attempt waits.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// The PostgreSQL store.
pub struct PgStore {
    config: postgres::Config,
    client: Option<Client>,
    /// The migrations ran on this server (checked on the first connection).
    migrated: bool,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the URL: it may hold a password.
        f.debug_struct("PgStore").finish_non_exhaustive()
    }
}

/// What a PostgreSQL error means for the caller: a connection that failed, a conflict to
/// retry, or a real failure.
pub(super) fn failed(e: postgres::Error) -> StoreError {
    let state = e.code().map(|c| c.code().to_string());
    match state.as_deref() {
        // serialization_failure, deadlock_detected, lock_not_available
        Some("40001" | "40P01" | "55P03") => StoreError::Busy(e.to_string()),
        // connection exceptions, the server shutting down or restarting
        Some(s) if s.starts_with("08") || s.starts_with("57") => {
            StoreError::Busy(format!("the store is unreachable: {e}"))
        }
        Some(_) => StoreError::Failed(e.to_string()),
        None => StoreError::Busy(format!("the store is unreachable: {e}")),
    }
}

/// Parses `url` (`postgres://USER[:PASSWORD]@HOST:PORT/DB`) with this store's timeouts.
pub fn parse_url(url: &str) -> Result<postgres::Config, String> {
    let mut config =
        postgres::Config::from_str(url).map_err(|e| format!("[store] url is not valid: {e}"))?;
    config.connect_timeout(CONNECT_TIMEOUT);
    config.application_name("searchgate");
    Ok(config)
}

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl PgStore {
    /// Connects to `url` and migrates the database. A server that cannot be reached is
    /// not an error here (a node can start from its last known catalog): the first call
    /// that reaches it migrates, and until then every call fails with
    /// [`StoreError::Busy`].
    pub fn open(url: &str) -> Result<PgStore, StoreError> {
        let config = parse_url(url).map_err(StoreError::Failed)?;
        let mut store = PgStore {
            config,
            client: None,
            migrated: false,
        };
        match store.client() {
            Ok(_) | Err(StoreError::Busy(_)) => Ok(store),
            Err(e) => Err(e),
        }
    }

    /// The connection, opened again (and the database migrated, the first time) when it
    /// was lost.
    fn client(&mut self) -> Result<&mut Client, StoreError> {
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
        if self.client.is_none() {
            let mut c = self.config.connect(NoTls).map_err(failed)?;
            if !self.migrated {
                migrate(&mut c).map_err(failed)??;
                self.migrated = true;
            }
            self.client = Some(c);
        }
        Ok(self.client.as_mut().expect("connected above"))
    }

    /// Runs `f` on the connection; a connection error drops it (the next call reconnects).
    fn with<T>(
        &mut self,
        f: impl FnOnce(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, StoreError> {
        let out = f(self.client()?);
        if out.is_err() && self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = None;
        }
        out.map_err(failed)
    }

    /// The schema version of the database.
    pub fn schema_version(&mut self) -> Result<usize, StoreError> {
        self.with(|c| c.query_one("SELECT version FROM schema_version", &[]))
            .map(|r| r.get::<_, i64>(0).max(0) as usize)
    }
}

/// Brings the database's schema up to [`MIGRATIONS`] (nodes starting together migrate
/// once: under an advisory lock).
fn migrate(c: &mut Client) -> Result<Result<(), StoreError>, postgres::Error> {
    let mut tx = c.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATE_LOCK])?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_version (
             one INTEGER PRIMARY KEY CHECK (one = 1),
             version BIGINT NOT NULL)",
    )?;
    let v: Option<i64> = tx
        .query_opt("SELECT version FROM schema_version", &[])?
        .map(|r| r.get(0));
    let version = v.unwrap_or(0).max(0) as usize;
    if version > MIGRATIONS.len() {
        tx.rollback()?;
        return Ok(Err(StoreError::Failed(format!(
            "the database has schema {version}, newer than this searchgate ({})",
            MIGRATIONS.len()
        ))));
    }
    for items in MIGRATIONS.iter().skip(version) {
        tx.batch_execute(&ddl(items, Dialect::Postgres))?;
    }
    tx.execute(
        "INSERT INTO schema_version (one, version) VALUES (1, $1)
         ON CONFLICT (one) DO UPDATE SET version = excluded.version",
        &[&(MIGRATIONS.len() as i64)],
    )?;
    tx.commit()?;
    Ok(Ok(()))
}

impl Store for PgStore {
    fn load(&mut self) -> Result<(Catalog, u64), StoreError> {
        let (plans, clusters, seq) = self.with(|c| {
            // One snapshot of the database for the three reads.
            let mut tx = c
                .build_transaction()
                .isolation_level(postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let plans: Vec<String> = tx
                .query("SELECT record FROM plans", &[])?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let clusters: Vec<String> = tx
                .query("SELECT record FROM clusters", &[])?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let seq = last_seq(&mut tx)?;
            tx.commit()?;
            Ok((plans, clusters, seq))
        })?;
        let mut cat = Catalog::default();
        for text in plans {
            let p: PlanRecord = serde_json::from_str(&text).map_err(json_err)?;
            cat.plans.insert(p.name.clone(), p.into());
        }
        for text in clusters {
            let c: ClusterRecord = serde_json::from_str(&text).map_err(json_err)?;
            cat.put(c);
        }
        Ok((cat, seq))
    }

    fn commit(&mut self, after_seq: u64, batch: &Batch) -> Result<u64, StoreError> {
        let events = serde_json::to_string(&batch.events).map_err(json_err)?;
        let texts = records(&batch.events)?;
        self.with(|c| {
            let mut tx = c.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&COMMIT_LOCK])?;
            let last = last_seq(&mut tx)?;
            if last != after_seq {
                tx.rollback()?;
                return Ok(Err(StoreError::Stale(last)));
            }
            let seq = last + 1;
            write_batch(&mut tx, int(seq), batch, &events, &texts)?;
            tx.commit()?;
            Ok(Ok(seq))
        })?
    }

    fn changes_since(&mut self, seq: u64, limit: usize) -> Result<Vec<Committed>, StoreError> {
        let rows = self.with(|c| {
            c.query(
                "SELECT seq, at, events FROM changes WHERE seq > $1 ORDER BY seq LIMIT $2",
                &[&int(seq), &int(limit as u64)],
            )
        })?;
        rows.iter()
            .map(|r| {
                Ok(Committed {
                    seq: r.get::<_, i64>(0).max(0) as u64,
                    at: r.get(1),
                    events: serde_json::from_str(r.get::<_, &str>(2)).map_err(json_err)?,
                })
            })
            .collect()
    }

    fn audit(&mut self, q: &AuditQuery) -> Result<Vec<(u64, AuditEntry)>, StoreError> {
        let before = q.before_id.map(int);
        let rows = self.with(|c| {
            c.query(
                "SELECT id, at, actor, action, target, before, after FROM audit
                 WHERE ($1::TEXT IS NULL OR target = $1) AND ($2::BIGINT IS NULL OR id < $2)
                 ORDER BY id DESC LIMIT $3",
                &[&q.target, &before, &int(q.limit as u64)],
            )
        })?;
        let parse = |t: Option<String>| -> Result<Option<Value>, StoreError> {
            t.map(|t| serde_json::from_str(&t))
                .transpose()
                .map_err(json_err)
        };
        rows.iter()
            .map(|r| {
                Ok((
                    r.get::<_, i64>(0).max(0) as u64,
                    AuditEntry {
                        at: r.get(1),
                        actor: r.get(2),
                        action: r.get(3),
                        target: r.get(4),
                        before: parse(r.get(5))?,
                        after: parse(r.get(6))?,
                    },
                ))
            })
            .collect()
    }

    fn idempotent(&mut self, key: &str) -> Result<Option<Idempotent>, StoreError> {
        let row = self.with(|c| {
            c.query_opt(
                "SELECT fingerprint, status, body FROM idempotency WHERE key = $1",
                &[&key],
            )
        })?;
        row.map(|r| {
            Ok(Idempotent {
                key: key.to_string(),
                fingerprint: r.get(0),
                status: u16::try_from(r.get::<_, i64>(1)).unwrap_or(500),
                body: serde_json::from_str(r.get::<_, &str>(2)).map_err(json_err)?,
            })
        })
        .transpose()
    }

    fn seed(&mut self) -> Result<Option<Value>, StoreError> {
        let row = self.with(|c| c.query_opt("SELECT declared FROM seed WHERE one = 1", &[]))?;
        row.map(|r| serde_json::from_str(r.get::<_, &str>(0)).map_err(json_err))
            .transpose()
    }

    fn plan_history(&mut self, cluster: &str) -> Result<Vec<PlanChange>, StoreError> {
        let rows = self.with(|c| {
            c.query(
                "SELECT at, event, plan, monthly_price_cents FROM plan_history
                 WHERE cluster_id = $1 ORDER BY id",
                &[&cluster],
            )
        })?;
        Ok(rows
            .iter()
            .map(|r| PlanChange {
                cluster_id: cluster.to_string(),
                at: r.get(0),
                event: r.get(1),
                plan: r.get(2),
                monthly_price_cents: r.get::<_, Option<i64>>(3).map(|c| c.max(0) as u64),
            })
            .collect())
    }

    fn record_usage(
        &mut self,
        flush: Option<&str>,
        samples: &[(String, UsageSample)],
        prune_before: Millis,
    ) -> Result<(), StoreError> {
        self.with(|c| billing::record_usage(c, flush, samples, prune_before))
    }

    fn usage(
        &mut self,
        cluster: &str,
        from: Millis,
        to: Millis,
        limit: usize,
    ) -> Result<Vec<UsageSample>, StoreError> {
        self.with(|c| billing::usage(c, cluster, from, to, limit))
    }

    fn next_notice(&mut self) -> Result<Option<(u64, u32, Notice)>, StoreError> {
        self.with(billing::next_notice)?.transpose()
    }

    fn notice_attempt(
        &mut self,
        id: u64,
        delivered: Option<Millis>,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.with(|c| billing::notice_attempt(c, id, delivered, error))
    }

    fn shared_value(&mut self, name: &str, proposed: &str) -> Result<String, StoreError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO fleet (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                &[&name, &proposed],
            )?;
            let r = c.query_one("SELECT value FROM fleet WHERE name = $1", &[&name])?;
            Ok(r.get(0))
        })
    }

    fn lease(
        &mut self,
        name: &str,
        holder: &str,
        now: Millis,
        ttl: Millis,
    ) -> Result<bool, StoreError> {
        self.with(|c| {
            // A row comes back only when the lease was taken or extended.
            let r = c.query_opt(
                "INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO UPDATE
                    SET holder = excluded.holder, expires_at = excluded.expires_at
                    WHERE leases.holder = excluded.holder OR leases.expires_at < $4
                 RETURNING holder",
                &[&name, &holder, &now.saturating_add(ttl), &now],
            )?;
            Ok(r.is_some())
        })
    }

    fn heartbeat(
        &mut self,
        node: &str,
        peer: &str,
        ttl: Millis,
    ) -> Result<Vec<NodeRow>, StoreError> {
        self.with(|c| {
            // The server's clock, not this node's: every node compares against the same.
            let now: i64 = c
                .query_one(
                    "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
                    &[],
                )?
                .get(0);
            c.execute(
                "INSERT INTO nodes (node, peer, expires_at) VALUES ($1, $2, $3)
                 ON CONFLICT (node) DO UPDATE
                    SET peer = excluded.peer, expires_at = excluded.expires_at",
                &[&node, &peer, &now.saturating_add(ttl)],
            )?;
            let rows = c.query(
                "SELECT node, peer FROM nodes WHERE expires_at > $1 ORDER BY node",
                &[&now],
            )?;
            Ok(rows
                .iter()
                .map(|r| NodeRow {
                    node: r.get(0),
                    peer: r.get(1),
                })
                .collect())
        })
    }

    fn leave(&mut self, node: &str) -> Result<(), StoreError> {
        self.with(|c| c.execute("DELETE FROM nodes WHERE node = $1", &[&node]))
            .map(drop)
    }

    fn release(&mut self, name: &str, holder: &str) -> Result<(), StoreError> {
        self.with(|c| {
            c.execute(
                "DELETE FROM leases WHERE name = $1 AND holder = $2",
                &[&name, &holder],
            )
        })
        .map(drop)
    }
}
