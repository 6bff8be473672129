//! Sample records with made-up values, built one way for every test and bench that needs
//! a plan or a cluster (unit tests, the `it` tests, `benches/`): a plan `name` and a
//! multitenant cluster `<id>.r1`. Pure data; nothing in the service's own paths uses it.
//! Must not touch: anything but the records it returns.

use crate::config::{ClusterClass, Mode};
use crate::policy::auth::PasswordHash;

use super::catalog::{ClusterRecord, PlanRecord, Source};

/// A plan `name` with `concurrency`, a queue of 10, 10 shards and 1000 bytes of disk.
pub fn plan(name: &str, concurrency: u32) -> PlanRecord {
    PlanRecord {
        name: name.into(),
        concurrency,
        queue_size: 10,
        queue_timeout_ms: 1000,
        shards: 10,
        disk: 1000,
        memory: 1000,
        max_bulk_actions: 100,
        monthly_price_cents: 900,
        max_open_contexts: 50,
        overage_grace_ms: 10 * 86_400_000,
        overage_disable_after_ms: 15 * 86_400_000,
        overage_extreme_factor: 2,
        search_concurrency: None,
        search_queue_size: None,
        write_concurrency: None,
        write_queue_size: None,
    }
}

/// A multitenant cluster `id` on `plan` at `<id>.r1` with username `<id>user` and password
/// `<id>pass`, provisioned, normal.
pub fn record(id: &str, plan: &str) -> ClusterRecord {
    ClusterRecord {
        id: id.into(),
        name: None,
        hostname: id.into(),
        region: "r1".into(),
        class: ClusterClass::Multitenant,
        plan: plan.into(),
        username: format!("{id}user"),
        password: PasswordHash::new(format!("{id}pass").as_bytes()),
        previous: None,
        mode: Mode::Normal,
        mode_reason: None,
        mode_until: None,
        upstream: None,
        source: Source::Api,
        created_at: 0,
        provisioned_at: Some(0),
        destroyed_at: None,
        purged: false,
        version: 1,
        overage: None,
        keys: Vec::new(),
        slow_request_ms: None,
    }
}
