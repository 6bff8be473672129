//! What a change writes to the store, a pure function of the catalogs before and after
//! and their diff: the records' events, one audit entry per command (passwords redacted)
//! and the plan intervals it starts (for billing).
//!
//! Must not touch: the store itself (the plane commits the batch), the runtime state.

use serde_json::Value;

use crate::control::store::{AuditEntry, Batch, Event, PlanChange};
use crate::registry::diff::{ClusterChange, Diff};
use crate::registry::{Catalog, ClusterRecord, Millis};

use super::Change;

/// A record as the audit log shows it: no password hash.
pub fn redacted(c: &ClusterRecord) -> Value {
    let mut v = serde_json::to_value(c).expect("a record serialises");
    if let Some(o) = v.as_object_mut() {
        o.remove("password");
        if let Some(p) = o.get_mut("previous").and_then(Value::as_object_mut) {
            p.remove("password");
        }
        for k in o
            .get_mut("keys")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(k) = k.as_object_mut() {
                k.remove("password");
            }
        }
    }
    v
}

/// What `change` (from `prev` to `next`, differing by `d`) writes to the store.
pub(super) fn batch_of(
    prev: &Catalog,
    next: &Catalog,
    d: &Diff,
    change: &Change,
    at: Millis,
) -> Batch {
    let mut events: Vec<Event> = d
        .records
        .iter()
        .filter_map(|id| next.clusters.get(id))
        .map(|c| Event::Cluster {
            record: Box::new(ClusterRecord::clone(c)),
        })
        .collect();
    for name in &d.plans {
        events.push(match next.plans.get(name) {
            Some(p) => Event::Plan {
                record: (**p).clone(),
            },
            None => Event::PlanRemoved { name: name.clone() },
        });
    }
    let audit = change
        .cmds
        .iter()
        .map(|cmd| {
            let (before, after) = if cmd.is_plan() {
                let plan = |c: &Catalog| {
                    c.plans
                        .get(cmd.target())
                        .map(|p| serde_json::to_value(&**p).expect("a plan serialises"))
                };
                (plan(prev), plan(next))
            } else {
                let rec = |c: &Catalog| c.clusters.get(cmd.target()).map(|r| redacted(r));
                (rec(prev), rec(next))
            };
            AuditEntry {
                at,
                actor: change.actor.clone(),
                action: cmd.action().into(),
                target: cmd.target().into(),
                before,
                after,
            }
        })
        .collect();
    Batch {
        at,
        events,
        audit,
        plan_changes: plan_changes(prev, next, d, at),
        notices: Vec::new(),
        idempotent: None,
        seed: None,
    }
}

/// The plan intervals a change starts: a cluster created, moved, destroyed, or its plan's
/// price changed.
fn plan_changes(prev: &Catalog, next: &Catalog, d: &Diff, at: Millis) -> Vec<PlanChange> {
    let price = |name: &str| next.plans.get(name).map(|p| p.monthly_price_cents);
    let row = |id: &str, event: &str, plan: Option<&str>| PlanChange {
        cluster_id: id.into(),
        at,
        event: event.into(),
        plan: plan.map(str::to_string),
        monthly_price_cents: plan.and_then(price),
    };
    let mut out = Vec::new();
    for (id, change) in &d.clusters {
        let new_plan = next.clusters.get(id).map(|c| c.plan.as_str());
        match change {
            ClusterChange::Added => out.push(row(id, "created", new_plan)),
            ClusterChange::Removed => out.push(row(id, "destroyed", None)),
            ClusterChange::Changed(f) if f.limits => {
                let old_plan = prev.clusters.get(id).map(|c| c.plan.as_str());
                let price_moved = new_plan.and_then(|p| {
                    let before = prev.plans.get(p).map(|x| x.monthly_price_cents);
                    (before != price(p)).then_some(())
                });
                if old_plan != new_plan {
                    out.push(row(id, "changed", new_plan));
                } else if price_moved.is_some() {
                    out.push(row(id, "price", new_plan));
                }
            }
            ClusterChange::Changed(_) => {}
        }
    }
    out
}
