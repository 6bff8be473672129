//! The admin API's JSON: clusters (never a password, except the once-only fields the
//! handlers add), plans, audit entries, and times as RFC 3339.
//!
//! Must not touch: the store, the plane.

use serde_json::{json, Value};

use super::ApiEnv;
use crate::control::seed::{differs_from_file, DeclaredCluster};
use crate::control::store::AuditEntry;
use crate::policy::ladder::{self, Overage};
use crate::policy::mode::Mode as Effective;
use crate::policy::shards::Usage;
use crate::registry::catalog::{KeyRecord, Source};
use crate::registry::{ClusterRecord, Millis, PlanRecord};

/// `ms` as RFC 3339 (UTC, seconds).
pub fn time(ms: Millis) -> String {
    crate::calendar::rfc3339_of_millis(ms)
}

fn opt_time(ms: Option<Millis>) -> Value {
    ms.map_or(Value::Null, |m| json!(time(m)))
}

/// What the edge knows of a live cluster at the moment.
#[derive(Debug, Clone, Copy)]
pub struct Live {
    pub effective: Effective,
    pub usage: Usage,
    pub in_flight: u32,
    pub queued: u32,
}

/// The name of a mode as requests meet it.
pub fn effective_name(m: Effective) -> &'static str {
    match m {
        Effective::Normal => "normal",
        Effective::ReadOnly(_) => "read-only",
        Effective::Disabled(_) => "disabled",
        Effective::Maintenance => "maintenance",
        Effective::Provisioning => "provisioning",
        Effective::Destroyed => "destroyed",
    }
}

/// The cluster's address: `<scheme>://<username>[:<password>]@<hostname>.<region>.<domain>`.
pub fn address(r: &ClusterRecord, env: &ApiEnv, password: Option<&str>) -> String {
    address_as(r, &r.username, env, password)
}

/// The cluster's address with another username (one of its keys').
pub fn address_as(
    r: &ClusterRecord,
    username: &str,
    env: &ApiEnv,
    password: Option<&str>,
) -> String {
    let port = env.port.map(|p| format!(":{p}")).unwrap_or_default();
    let pass = password.map(|p| format!(":{p}")).unwrap_or_default();
    format!(
        "{}://{username}{pass}@{}.{}.{}{port}",
        env.scheme, r.hostname, r.region, env.domain
    )
}

/// The cluster's address at `localhost`, found by its username (`None` unless the edge
/// routes by username): the URL any client resolves, where `*.localhost` names may not be.
pub fn localhost_address(
    r: &ClusterRecord,
    env: &ApiEnv,
    password: Option<&str>,
) -> Option<String> {
    localhost_address_as(&r.username, env, password)
}

/// [`localhost_address`] of another username (one of a cluster's keys').
pub fn localhost_address_as(
    username: &str,
    env: &ApiEnv,
    password: Option<&str>,
) -> Option<String> {
    let port = env.port.map(|p| format!(":{p}")).unwrap_or_default();
    let pass = password.map(|p| format!(":{p}")).unwrap_or_default();
    env.route_by_username
        .then(|| format!("{}://{username}{pass}@localhost{port}", env.scheme))
}

/// A key of a cluster, without its password.
pub fn key(k: &KeyRecord) -> Value {
    json!({
        "id": k.id,
        "name": k.name,
        "role": k.role.as_str(),
        "username": k.username,
        "indices": k.indices,
        "expires_at": opt_time(k.expires_at),
        "allowed_origins": k.allowed_origins,
        "allowed_ips": k.allowed_ips,
        "created_at": time(k.created_at),
    })
}

/// The once-only fields of a create or a rotation: the password and the URLs with it.
pub fn secrets(r: &ClusterRecord, env: &ApiEnv, password: &str) -> Value {
    let mut v = json!({"password": password, "url": address(r, env, Some(password))});
    if let Some(u) = localhost_address(r, env, Some(password)) {
        v["localhost_url"] = json!(u);
    }
    v
}

/// A cluster: state, mode and its reason, plan, usage, address without password.
/// `now` is the control plane's clock (a rotation's grace shows until it passes).
pub fn cluster(
    r: &ClusterRecord,
    live: Option<Live>,
    env: &ApiEnv,
    declared: Option<&DeclaredCluster>,
    now: Millis,
) -> Value {
    let usage = live.map(|l| {
        json!({
            "indices": l.usage.indices,
            "shards": l.usage.shards,
            "documents": l.usage.docs,
            "disk_bytes": l.usage.bytes,
            "requests_in_flight": l.in_flight,
            "requests_queued": l.queued,
        })
    });
    // An expired grace is no grace: the old pair no longer opens the cluster.
    let grace = r
        .previous
        .as_ref()
        .filter(|p| p.until > now)
        .map(|p| time(p.until));
    let mut v = json!({
        "id": r.id,
        "name": r.name,
        "class": r.class.as_str(),
        "region": r.region,
        "hostname": r.hostname,
        "state": r.state(),
        "mode": r.mode.as_str(),
        "mode_reason": r.mode_reason,
        "mode_until": opt_time(r.mode_until),
        "effective_mode": live.map(|l| effective_name(l.effective)),
        "plan": r.plan,
        "address": address(r, env, None),
        "localhost_address": localhost_address(r, env, None),
        "username": r.username,
        "previous_credentials_valid_until": grace,
        "upstream": upstream(r.upstream.as_deref()),
        "usage": usage,
        "source": match r.source { Source::File => "file", Source::Api => "api" },
        "created_at": time(r.created_at),
        "provisioned_at": opt_time(r.provisioned_at),
        "destroyed_at": opt_time(r.destroyed_at),
        "version": r.version,
        "overage": r.overage.as_ref().map(overage),
    });
    if let (Some(d), true) = (declared, r.is_live()) {
        v["differs_from_file"] = json!(differs_from_file(d, r));
    }
    v
}

/// A cluster's upstream as the API takes it: a pool by its name (a string), nodes as a
/// list of `host:port`, or the embedded engine.
fn upstream(u: Option<&[String]>) -> Value {
    match u {
        None => json!("embedded engine"),
        Some([pool]) if !pool.contains(':') => json!(pool),
        Some(nodes) => json!(nodes),
    }
}

/// An overage in progress: its step, since when, and what comes next.
fn overage(o: &Overage) -> Value {
    json!({
        "step": o.step.as_str(),
        "since": time(o.since),
        "step_at": time(o.step_at),
        "read_only_at": time(o.read_only_at),
        "disabled_at": time(o.disabled_at),
        "extreme": o.extreme,
        "mode_applied": o.owns_mode,
        "reason": ladder::reason(o),
    })
}

/// A plan.
pub fn plan(p: &PlanRecord) -> Value {
    json!({
        "name": p.name,
        "concurrency": p.concurrency,
        "queue_size": p.queue_size,
        "queue_timeout_ms": p.queue_timeout_ms,
        "shards": p.shards,
        "disk_bytes": p.disk,
        "memory_bytes": p.memory,
        "max_bulk_actions": p.max_bulk_actions,
        "max_open_contexts": p.max_open_contexts,
        "monthly_price_cents": p.monthly_price_cents,
        "overage_grace_seconds": p.overage_grace_ms / 1000,
        "overage_disable_after_seconds": p.overage_disable_after_ms / 1000,
        "overage_extreme_factor": p.overage_extreme_factor,
        "search_concurrency": p.search_concurrency,
        "search_queue_size": p.search_queue_size,
        "write_concurrency": p.write_concurrency,
        "write_queue_size": p.write_queue_size,
    })
}

/// An audit entry.
pub fn audit(id: u64, e: &AuditEntry) -> Value {
    json!({
        "id": id,
        "at": time(e.at),
        "actor": e.actor,
        "action": e.action,
        "target": e.target,
        "before": e.before,
        "after": e.after,
    })
}
