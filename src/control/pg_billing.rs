//! The PostgreSQL store's billing tables (schema 2 of `schema`): usage samples and the
//! queue of overage notices. Called by [`super::pg::PgStore`]'s `Store` methods; the
//! statements are the SQLite store's, in PostgreSQL's placeholders.
//!
//! Must not touch: the catalog's tables (see `pg`), sockets.

use postgres::{Client, Transaction};

use super::sqlite::json_err;
use super::sqlite_billing::FLUSH_PREFIX;
use super::store::{Notice, StoreError, UsageSample};
use crate::registry::Millis;

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Queues `notices` as part of batch `seq` (inside its transaction).
pub(super) fn queue_notices(
    tx: &mut Transaction<'_>,
    seq: i64,
    notices: &[Notice],
) -> Result<(), postgres::Error> {
    for n in notices {
        tx.execute(
            "INSERT INTO notices (seq, cluster_id, at, body) VALUES ($1, $2, $3, $4)",
            &[&seq, &n.cluster_id, &n.at, &n.body.to_string()],
        )?;
    }
    Ok(())
}

pub(super) fn record_usage(
    c: &mut Client,
    flush: Option<&str>,
    samples: &[(String, UsageSample)],
    prune_before: Millis,
) -> Result<(), postgres::Error> {
    let mut tx = c.transaction()?;
    if let Some(name) = flush {
        let at = samples.iter().map(|(_, u)| u.at).max().unwrap_or(0);
        let new = tx.execute(
            "INSERT INTO fleet (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
            &[&format!("{FLUSH_PREFIX}{name}"), &at.to_string()],
        )?;
        if new == 0 {
            return tx.commit();
        }
    }
    insert_samples(&mut tx, samples)?;
    tx.execute("DELETE FROM usage_history WHERE at < $1", &[&prune_before])?;
    tx.execute(
        "DELETE FROM fleet WHERE name LIKE 'usage-flush/%' AND CAST(value AS BIGINT) < $1",
        &[&prune_before],
    )?;
    tx.commit()
}

/// Adds `samples` to the history in one statement (one round trip, however many clusters:
/// the flush holds the control plane, which the feed's follower needs too). Samples of the
/// same cluster and instant are merged first as one row after another would be (gauges
/// the last, counters summed): one statement may not update a row twice.
fn insert_samples(
    tx: &mut Transaction<'_>,
    samples: &[(String, UsageSample)],
) -> Result<(), postgres::Error> {
    let mut rows: Vec<(&str, UsageSample)> = Vec::with_capacity(samples.len());
    let mut at: std::collections::HashMap<(&str, Millis), usize> = Default::default();
    for (id, u) in samples {
        match at.get(&(id.as_str(), u.at)) {
            Some(&i) => {
                let r = &mut rows[i].1;
                let (requests, bytes_in, bytes_out) = (r.requests, r.bytes_in, r.bytes_out);
                *r = *u;
                r.requests = r.requests.saturating_add(requests);
                r.bytes_in = r.bytes_in.saturating_add(bytes_in);
                r.bytes_out = r.bytes_out.saturating_add(bytes_out);
            }
            None => {
                at.insert((id.as_str(), u.at), rows.len());
                rows.push((id.as_str(), *u));
            }
        }
    }
    let ids: Vec<&str> = rows.iter().map(|(id, _)| *id).collect();
    let col = |f: fn(&UsageSample) -> i64| -> Vec<i64> { rows.iter().map(|(_, u)| f(u)).collect() };
    tx.execute(
        "INSERT INTO usage_history (cluster_id, at, disk_bytes, documents, shards, indices,
                                    requests, bytes_in, bytes_out)
         SELECT * FROM UNNEST($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::int8[],
                              $6::int8[], $7::int8[], $8::int8[], $9::int8[])
         ON CONFLICT (cluster_id, at) DO UPDATE SET
            disk_bytes = excluded.disk_bytes, documents = excluded.documents,
            shards = excluded.shards, indices = excluded.indices,
            requests = usage_history.requests + excluded.requests,
            bytes_in = usage_history.bytes_in + excluded.bytes_in,
            bytes_out = usage_history.bytes_out + excluded.bytes_out",
        &[
            &ids,
            &col(|u| u.at),
            &col(|u| int(u.disk_bytes)),
            &col(|u| int(u.documents)),
            &col(|u| int(u.shards)),
            &col(|u| int(u.indices)),
            &col(|u| int(u.requests)),
            &col(|u| int(u.bytes_in)),
            &col(|u| int(u.bytes_out)),
        ],
    )?;
    Ok(())
}

pub(super) fn usage(
    c: &mut Client,
    cluster: &str,
    from: Millis,
    to: Millis,
    limit: usize,
) -> Result<Vec<UsageSample>, postgres::Error> {
    let rows = c.query(
        "SELECT at, disk_bytes, documents, shards, indices, requests, bytes_in, bytes_out
         FROM usage_history WHERE cluster_id = $1 AND at >= $2 AND at <= $3
         ORDER BY at LIMIT $4",
        &[&cluster, &from, &to, &int(limit as u64)],
    )?;
    let n = |r: &postgres::Row, i| r.get::<_, i64>(i).max(0) as u64;
    Ok(rows
        .iter()
        .map(|r| UsageSample {
            at: r.get(0),
            disk_bytes: n(r, 1),
            documents: n(r, 2),
            shards: n(r, 3),
            indices: n(r, 4),
            requests: n(r, 5),
            bytes_in: n(r, 6),
            bytes_out: n(r, 7),
        })
        .collect())
}

/// The oldest notice not delivered yet (its body parsed by the caller's `transpose`).
#[allow(clippy::type_complexity)]
pub(super) fn next_notice(
    c: &mut Client,
) -> Result<Option<Result<(u64, u32, Notice), StoreError>>, postgres::Error> {
    let row = c.query_opt(
        "SELECT id, attempts, cluster_id, at, body FROM notices
         WHERE delivered_at IS NULL ORDER BY id LIMIT 1",
        &[],
    )?;
    Ok(row.map(|r| {
        let attempts: i64 = r.get(1);
        Ok((
            r.get::<_, i64>(0).max(0) as u64,
            attempts.clamp(0, i64::from(u32::MAX)) as u32,
            Notice {
                cluster_id: r.get(2),
                at: r.get(3),
                body: serde_json::from_str(r.get::<_, &str>(4)).map_err(json_err)?,
            },
        ))
    }))
}

pub(super) fn notice_attempt(
    c: &mut Client,
    id: u64,
    delivered: Option<Millis>,
    error: Option<&str>,
) -> Result<(), postgres::Error> {
    c.execute(
        "UPDATE notices SET attempts = attempts + 1, delivered_at = $2, last_error = $3
         WHERE id = $1",
        &[&int(id), &delivered, &error],
    )
    .map(drop)
}
