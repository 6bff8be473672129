//! The overage ladder in the control plane: a metering reading of a cluster goes through
//! `policy::ladder`; a step is one `cluster.overage` command (actor `system`), so it is in
//! the audit log, committed before the edge sees it, and the mode it sets carries the
//! reason the 403 body shows. The step's notice for the webhook is queued in the same
//! transaction.
//!
//! Must not touch: sockets (the control thread reads usage; `webhook` delivers notices).

use serde_json::{json, Value};

use super::plane::{Change, ControlError, Plane};
use super::store::Notice;
use crate::policy::ladder::{self, Limits, Moved, Overage};
use crate::policy::shards::Usage;
use crate::registry::{ClusterRecord, Command, Millis, PlanRecord};

/// What a reading of `usage` changes for cluster `r` on `plan` at `now`: the command and
/// the notice of the step (`None`: nothing).
pub fn step_of(
    r: &ClusterRecord,
    plan: &PlanRecord,
    usage: Usage,
    now: Millis,
) -> Option<(Command, Notice)> {
    let limits = Limits {
        disk: plan.disk,
        shards: plan.shards,
    };
    let moved = ladder::evaluate(
        r.overage.as_ref(),
        r.mode,
        usage,
        limits,
        plan.ladder(),
        now,
    )?;
    let notice = Notice {
        cluster_id: r.id.clone(),
        at: now,
        body: notice_body(r, plan, &moved, now),
    };
    let cmd = Command::SetOverage {
        id: r.id.clone(),
        overage: moved.overage,
        mode: moved.mode,
    };
    Some((cmd, notice))
}

/// The JSON a notice POSTs.
fn notice_body(r: &ClusterRecord, plan: &PlanRecord, m: &Moved, now: Millis) -> Value {
    let time = ladder::rfc3339;
    match &m.overage {
        Some(o) => json!({
            "type": "overage",
            "cluster": r.id,
            "plan": plan.name,
            "step": o.step.as_str(),
            "at": time(now),
            "since": time(o.since),
            "read_only_at": time(o.read_only_at),
            "disabled_at": time(o.disabled_at),
            "extreme": o.extreme,
            "mode_applied": o.owns_mode,
            "disk_bytes": o.disk_bytes,
            "disk_allowed_bytes": o.disk_allowed,
            "shards": o.shards,
            "shards_allowed": o.shards_allowed,
            "reason": ladder::reason(o),
        }),
        None => json!({
            "type": "overage",
            "cluster": r.id,
            "plan": plan.name,
            "step": "normal",
            "at": time(now),
            "since": r.overage.as_ref().map(|o| time(o.since)),
            "mode_applied": m.mode.is_some(),
            "reason": "usage is back under the plan",
        }),
    }
}

/// One line for the operator about a step.
fn describe(id: &str, o: Option<&Overage>) -> String {
    match o {
        Some(o) => format!(
            "searchgate: cluster {id}: overage {}: {}",
            o.step.as_str(),
            ladder::reason(o)
        ),
        None => format!("searchgate: cluster {id}: usage is back under the plan"),
    }
}

impl Plane {
    /// Applies a metering reading of cluster `id` to its overage ladder at the control
    /// plane's time. Returns a line describing the step, if there was one.
    pub fn record_overage(
        &mut self,
        id: &str,
        usage: Usage,
    ) -> Result<Option<String>, ControlError> {
        if !self.leads() {
            return Ok(None); // the fleet's leader steps the ladder
        }
        let snap = self.snapshot();
        let Some(r) = snap.catalog.clusters.get(id).filter(|r| r.is_live()) else {
            return Ok(None);
        };
        let Some(plan) = snap.catalog.plans.get(&r.plan) else {
            return Ok(None);
        };
        let Some((cmd, notice)) = step_of(r, plan, usage, self.now()) else {
            return Ok(None);
        };
        let line = match &cmd {
            Command::SetOverage { overage, .. } => describe(id, overage.as_ref()),
            _ => String::new(),
        };
        self.submit(Change {
            actor: "system".into(),
            cmds: vec![cmd],
            notices: vec![notice],
            ..Change::default()
        })?;
        Ok(Some(line))
    }
}

#[cfg(test)]
#[path = "overage_tests.rs"]
mod tests;
