//! The SQLite store's billing tables (schema 2 of `schema`): usage samples and the
//! queue of overage notices. Called by [`super::sqlite::SqliteStore`]'s `Store` methods.
//!
//! Must not touch: the catalog's tables (see `sqlite`), sockets.

use rusqlite::{params, Connection, OptionalExtension};

use super::sqlite::{failed, json_err};
use super::store::{Notice, StoreError, UsageSample};
use crate::registry::Millis;

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Queues `notices` as part of batch `seq` (inside its transaction).
pub(super) fn queue_notices(
    tx: &Connection,
    seq: u64,
    notices: &[Notice],
) -> Result<(), StoreError> {
    for n in notices {
        tx.execute(
            "INSERT INTO notices (seq, cluster_id, at, body) VALUES (?1, ?2, ?3, ?4)",
            params![int(seq), n.cluster_id, n.at, n.body.to_string()],
        )
        .map_err(failed)?;
    }
    Ok(())
}

/// What the names of usage batches written start with in the `fleet` table.
pub(super) const FLUSH_PREFIX: &str = "usage-flush/";

pub(super) fn record_usage(
    conn: &mut Connection,
    flush: Option<&str>,
    samples: &[(String, UsageSample)],
    prune_before: Millis,
) -> Result<(), StoreError> {
    let tx = conn.transaction().map_err(failed)?;
    if let Some(name) = flush {
        let at = samples.iter().map(|(_, u)| u.at).max().unwrap_or(0);
        let new = tx
            .execute(
                "INSERT INTO fleet (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING",
                params![format!("{FLUSH_PREFIX}{name}"), at.to_string()],
            )
            .map_err(failed)?;
        if new == 0 {
            return tx.commit().map_err(failed);
        }
    }
    for (id, u) in samples {
        tx.execute(
            "INSERT INTO usage_history (cluster_id, at, disk_bytes, documents, shards, indices,
                                        requests, bytes_in, bytes_out)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT (cluster_id, at) DO UPDATE SET
                disk_bytes = ?3, documents = ?4, shards = ?5, indices = ?6,
                requests = requests + ?7, bytes_in = bytes_in + ?8, bytes_out = bytes_out + ?9",
            params![
                id,
                u.at,
                int(u.disk_bytes),
                int(u.documents),
                int(u.shards),
                int(u.indices),
                int(u.requests),
                int(u.bytes_in),
                int(u.bytes_out)
            ],
        )
        .map_err(failed)?;
    }
    tx.execute("DELETE FROM usage_history WHERE at < ?1", [prune_before])
        .map_err(failed)?;
    tx.execute(
        "DELETE FROM fleet WHERE name LIKE 'usage-flush/%' AND CAST(value AS BIGINT) < ?1",
        [prune_before],
    )
    .map_err(failed)?;
    tx.commit().map_err(failed)
}

pub(super) fn usage(
    conn: &Connection,
    cluster: &str,
    from: Millis,
    to: Millis,
    limit: usize,
) -> Result<Vec<UsageSample>, StoreError> {
    let mut q = conn
        .prepare(
            "SELECT at, disk_bytes, documents, shards, indices, requests, bytes_in, bytes_out
             FROM usage_history WHERE cluster_id = ?1 AND at >= ?2 AND at <= ?3
             ORDER BY at LIMIT ?4",
        )
        .map_err(failed)?;
    let n = |r: &rusqlite::Row<'_>, i| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
    let rows = q
        .query_map(params![cluster, from, to, int(limit as u64)], |r| {
            Ok(UsageSample {
                at: r.get(0)?,
                disk_bytes: n(r, 1)?,
                documents: n(r, 2)?,
                shards: n(r, 3)?,
                indices: n(r, 4)?,
                requests: n(r, 5)?,
                bytes_in: n(r, 6)?,
                bytes_out: n(r, 7)?,
            })
        })
        .map_err(failed)?;
    rows.collect::<Result<_, _>>().map_err(failed)
}

pub(super) fn next_notice(conn: &Connection) -> Result<Option<(u64, u32, Notice)>, StoreError> {
    let row = conn
        .query_row(
            "SELECT id, attempts, cluster_id, at, body FROM notices
             WHERE delivered_at IS NULL ORDER BY id LIMIT 1",
            [],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, String>(4)?,
                ))
            },
        )
        .optional()
        .map_err(failed)?;
    row.map(|(id, attempts, cluster_id, at, body)| {
        Ok((
            id as u64,
            attempts.clamp(0, i64::from(u32::MAX)) as u32,
            Notice {
                cluster_id,
                at,
                body: serde_json::from_str(&body).map_err(json_err)?,
            },
        ))
    })
    .transpose()
}

pub(super) fn notice_attempt(
    conn: &Connection,
    id: u64,
    delivered: Option<Millis>,
    error: Option<&str>,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE notices SET attempts = attempts + 1, delivered_at = ?2, last_error = ?3
         WHERE id = ?1",
        params![int(id), delivered, error],
    )
    .map(drop)
    .map_err(failed)
}
