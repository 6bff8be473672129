//! The file's `[[plans]]` and `[[clusters]]` as catalog records and commands: what a
//! declaration in the file means in the catalog. The control plane decides which of them
//! to apply on start and reload (see `control::seed`); [`catalog_of`] applies them all to an
//! empty catalog (first start, tests, benchmarks).
//!
//! Must not touch: the store, the clock (time is passed in).

use super::catalog::{
    apply_all, Catalog, ClusterRecord, Command, Ctx, Millis, PlanRecord, Refusal, Source,
};
use crate::config::{ClusterClass, ClusterConfig, Config};
use crate::policy::auth::PasswordHash;
use crate::policy::shards::Usage;

/// The record a `[[clusters]]` entry declares, created at `now` (its password hashed with a
/// fresh salt).
pub fn record_of(c: &ClusterConfig, now: Millis) -> ClusterRecord {
    ClusterRecord {
        id: c.id.clone(),
        name: None,
        hostname: c.hostname.clone(),
        region: c.region.clone(),
        class: c.class,
        plan: c.plan.clone(),
        username: c.username.clone(),
        password: PasswordHash::new(c.password.expose().as_bytes()),
        previous: None,
        mode: c.mode,
        mode_reason: None,
        mode_until: None,
        upstream: c.upstream.clone(),
        source: Source::File,
        created_at: now,
        // The shared engine of the multitenant class is up; a single-tenant cluster is
        // provisioned once its upstream answers.
        provisioned_at: (c.class == ClusterClass::Multitenant).then_some(now),
        destroyed_at: None,
        purged: false,
        version: 1,
        overage: None,
        keys: Vec::new(),
        slow_request_ms: None,
    }
}

fn no_usage(_: &str) -> Usage {
    Usage::default()
}

/// The catalog of `config`'s plans and clusters alone, as of `now`.
pub fn catalog_of(config: &Config, now: Millis) -> Result<Catalog, Refusal> {
    let cmds: Vec<Command> = config
        .plans
        .iter()
        .map(|p| Command::PutPlan(PlanRecord::from(p)))
        .chain(
            config
                .clusters
                .iter()
                .map(|c| Command::CreateCluster(Box::new(record_of(c, now)))),
        )
        .collect();
    let ctx = Ctx {
        now,
        usage: &no_usage,
    };
    apply_all(&Catalog::default(), &cmds, &ctx)
}
