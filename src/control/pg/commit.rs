//! One batch written inside the commit's transaction: the change row, the records it
//! touches, its audit entries, plan history, queued notices, the idempotent answer, the
//! file's seed, and the `NOTIFY` that rings the followers' doorbells at commit.
//!
//! Must not touch: the commit lock and sequence check (the `Store` method in `pg` takes
//! them), the connection.

use postgres::Transaction;
use serde_json::Value;

use crate::control::sqlite::json_err;
use crate::control::store::{Batch, Event, StoreError};

use super::{billing, int, CHANNEL};

pub(super) fn last_seq(tx: &mut Transaction<'_>) -> Result<u64, postgres::Error> {
    let r = tx.query_one("SELECT COALESCE(MAX(seq), 0)::BIGINT FROM changes", &[])?;
    Ok(r.get::<_, i64>(0).max(0) as u64)
}

fn opt_json(v: &Option<Value>) -> Option<String> {
    v.as_ref().map(Value::to_string)
}

fn write_event(tx: &mut Transaction<'_>, e: &Event, text: &str) -> Result<u64, postgres::Error> {
    match e {
        Event::Cluster { record } => tx.execute(
            "INSERT INTO clusters (id, state, plan, record) VALUES ($1, $2, $3, $4)
             ON CONFLICT (id) DO UPDATE SET
                state = excluded.state, plan = excluded.plan, record = excluded.record",
            &[&record.id, &record.state(), &record.plan, &text],
        ),
        Event::Plan { record } => tx.execute(
            "INSERT INTO plans (name, record) VALUES ($1, $2)
             ON CONFLICT (name) DO UPDATE SET record = excluded.record",
            &[&record.name, &text],
        ),
        Event::PlanRemoved { name } => tx.execute("DELETE FROM plans WHERE name = $1", &[name]),
    }
}

/// The records of `events` as JSON text (made before the transaction starts).
pub(super) fn records(events: &[Event]) -> Result<Vec<String>, StoreError> {
    events
        .iter()
        .map(|e| match e {
            Event::Cluster { record } => serde_json::to_string(record),
            Event::Plan { record } => serde_json::to_string(record),
            Event::PlanRemoved { .. } => Ok(String::new()),
        })
        .collect::<Result<_, _>>()
        .map_err(json_err)
}

pub(super) fn write_batch(
    tx: &mut Transaction<'_>,
    seq: i64,
    b: &Batch,
    events: &str,
    texts: &[String],
) -> Result<(), postgres::Error> {
    tx.execute(
        "INSERT INTO changes (seq, at, events) VALUES ($1, $2, $3)",
        &[&seq, &b.at, &events],
    )?;
    for (e, text) in b.events.iter().zip(texts) {
        write_event(tx, e, text)?;
    }
    write_history(tx, seq, b)?;
    billing::queue_notices(tx, seq, &b.notices)?;
    if let Some(i) = &b.idempotent {
        tx.execute(
            "INSERT INTO idempotency (key, fingerprint, status, body, at)
             VALUES ($1, $2, $3, $4, $5)",
            &[
                &i.key,
                &i.fingerprint,
                &i64::from(i.status),
                &i.body.to_string(),
                &b.at,
            ],
        )?;
    }
    if let Some(s) = &b.seed {
        tx.execute(
            "INSERT INTO seed (one, declared) VALUES (1, $1)
             ON CONFLICT (one) DO UPDATE SET declared = excluded.declared",
            &[&s.to_string()],
        )?;
    }
    tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &seq.to_string()])?;
    Ok(())
}

/// The batch's audit entries and the plan intervals it starts.
fn write_history(tx: &mut Transaction<'_>, seq: i64, b: &Batch) -> Result<(), postgres::Error> {
    for a in &b.audit {
        tx.execute(
            "INSERT INTO audit (seq, at, actor, action, target, before, after)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                &seq,
                &a.at,
                &a.actor,
                &a.action,
                &a.target,
                &opt_json(&a.before),
                &opt_json(&a.after),
            ],
        )?;
    }
    for p in &b.plan_changes {
        tx.execute(
            "INSERT INTO plan_history (seq, cluster_id, at, event, plan, monthly_price_cents)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &seq,
                &p.cluster_id,
                &p.at,
                &p.event,
                &p.plan,
                &p.monthly_price_cents.map(int),
            ],
        )?;
    }
    Ok(())
}
