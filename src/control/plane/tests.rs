//! The writer: commit then publish, refusals that touch neither the store nor the
//! snapshot, the plan history and the system's own changes.

use super::*;
use crate::config::{ClusterClass, Mode};
use crate::control::sqlite::{SqliteStore, DB_FILE};
use crate::registry::catalog::tests::{plan, record};
use crate::registry::ClusterRecord;
use crate::tenancy::TenancyKey;

pub(crate) fn settings() -> Settings {
    Settings {
        domain: "example.test".into(),
        route_by_username: false,
        engine: Some("127.0.0.1:9201".parse().unwrap()),
        engine_contexts: 500,
        key: TenancyKey::from_bytes([3; 32]),
        pools: Vec::new(),
        health: Default::default(),
    }
}

fn open(dir: &std::path::Path) -> Plane {
    let store = SqliteStore::open(&dir.join(DB_FILE)).unwrap();
    Plane::open(Box::new(store), settings()).unwrap()
}

fn api(cmds: Vec<Command>) -> Change {
    Change {
        actor: "token:t1".into(),
        cmds,
        ..Change::default()
    }
}

fn seeded(dir: &std::path::Path) -> Plane {
    let mut p = open(dir);
    p.submit(api(vec![
        Command::PutPlan(plan("small", 2)),
        Command::PutPlan(plan("big", 8)),
        Command::CreateCluster(Box::new(record("a", "small"))),
    ]))
    .unwrap();
    p
}

#[test]
fn a_change_is_committed_then_published_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = seeded(dir.path());
    assert_eq!(p.snapshot().generation, 2);
    let out = p
        .submit(api(vec![Command::ChangePlan {
            id: "a".into(),
            plan: "big".into(),
        }]))
        .unwrap();
    assert_eq!((out.seq, out.generation), (Some(2), 3));
    assert_eq!(p.snapshot().by_id("a").unwrap().plan.name, "big");
    drop(p);
    let mut p = open(dir.path());
    let a = p.snapshot().by_id("a").unwrap().clone();
    assert_eq!(a.plan.name, "big");
    assert_eq!(a.allowance.limit(), 8);
    let history = p.store().plan_history("a").unwrap();
    let events: Vec<(&str, Option<&str>)> = history
        .iter()
        .map(|h| (h.event.as_str(), h.plan.as_deref()))
        .collect();
    assert_eq!(
        events,
        [("created", Some("small")), ("changed", Some("big"))]
    );
    assert_eq!(history[1].monthly_price_cents, Some(900));
}

// issue 11: a refused change changes nothing: not the store, not the snapshot
#[test]
fn a_refused_change_commits_and_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = seeded(dir.path());
    let before = p.snapshot();
    for cmds in [
        vec![Command::ChangePlan {
            id: "a".into(),
            plan: "gold".into(),
        }],
        // A single-tenant cluster on the multitenant engine: refused when compiled.
        vec![Command::CreateCluster(Box::new({
            let mut r = record("solo", "small");
            r.class = ClusterClass::SingleTenant;
            r
        }))],
    ] {
        assert!(p.submit(api(cmds)).is_err());
    }
    assert!(Arc::ptr_eq(&before, &p.snapshot()), "nothing published");
    assert_eq!(p.store().changes_since(0, 10).unwrap().len(), 1);
    let audit = p
        .store()
        .audit(&crate::control::store::AuditQuery {
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(audit.len(), 3, "only the first batch's three commands");
    let created = &audit
        .iter()
        .find(|(_, a)| a.action == "cluster.create")
        .unwrap()
        .1;
    assert_eq!(created.actor, "token:t1");
    let after = created.after.as_ref().unwrap();
    assert!(
        after.get("password").is_none(),
        "no secret in the audit log: {after}"
    );
}

#[test]
fn maintenance_ends_by_itself_and_provisioning_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = seeded(dir.path());
    let mut solo = record("solo", "small");
    solo.class = ClusterClass::SingleTenant;
    solo.upstream = Some(vec!["127.0.0.1:9333".into()]);
    solo.provisioned_at = None;
    p.submit(api(vec![
        Command::CreateCluster(Box::new(solo)),
        Command::SetMode {
            id: "a".into(),
            mode: Mode::Maintenance,
            reason: Some("upgrade".into()),
            until: Some(now_ms() + 60_000),
        },
    ]))
    .unwrap();
    assert_eq!(p.expire_maintenance().unwrap(), 0, "not yet");
    assert_eq!(p.expire_maintenance_at(now_ms() + 60_001).unwrap(), 1);
    assert_eq!(p.snapshot().by_id("a").unwrap().mode, Mode::Normal);
    assert_eq!(
        p.snapshot().catalog.clusters["solo"].state(),
        "provisioning"
    );
    p.mark_provisioned(&["solo".into()]).unwrap();
    assert_eq!(p.snapshot().catalog.clusters["solo"].state(), "running");
}

// issue 26: two nodes on one store. What one commits, the other applies from the feed and
// publishes (its runtime reconciled: the allowance follows the plan).
#[test]
fn a_node_follows_what_another_committed() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = seeded(dir.path());
    let mut b = open(dir.path());
    assert_eq!(b.seq(), a.seq());
    let generation = b.snapshot().generation;
    a.submit(api(vec![Command::ChangePlan {
        id: "a".into(),
        plan: "big".into(),
    }]))
    .unwrap();
    assert_eq!(b.snapshot().by_id("a").unwrap().plan.name, "small");
    assert_eq!(b.catch_up().unwrap(), 1);
    let snap = b.snapshot();
    assert_eq!(snap.generation, generation + 1);
    assert_eq!(snap.by_id("a").unwrap().plan.name, "big");
    assert_eq!(snap.by_id("a").unwrap().allowance.limit(), 8);
    assert_eq!(b.seq(), a.seq());
    assert_eq!(b.catch_up().unwrap(), 0, "nothing new: nothing published");
    assert_eq!(b.snapshot().generation, generation + 1);
}

// issue 26 (a node starts from its last known catalog): a follower keeps a page of the
// feed with one sync of its journal, not one per batch, and before it publishes the page;
// what is on disk then (the plane dropped without any clean-up, as by kill -9) holds every
// batch of the page.
#[test]
fn a_follower_syncs_its_last_known_catalog_once_per_page() {
    let dir = tempfile::tempdir().unwrap();
    let kept = tempfile::tempdir().unwrap();
    let mut a = seeded(dir.path());
    let mut b = open(dir.path());
    b.keep_last_known(LastKnown::new(kept.path()));
    assert_eq!(
        b.last_known_syncs(),
        Some(0),
        "saved whole, no journal sync yet"
    );
    for i in 0..50 {
        let c = record(&format!("c{i}"), "small");
        a.submit(api(vec![Command::CreateCluster(Box::new(c))]))
            .unwrap();
    }
    assert_eq!(b.catch_up().unwrap(), 50);
    assert_eq!(b.last_known_syncs(), Some(1), "one sync for 50 batches");
    a.submit(api(vec![Command::ChangePlan {
        id: "c7".into(),
        plan: "big".into(),
    }]))
    .unwrap();
    assert_eq!(b.catch_up().unwrap(), 1);
    assert_eq!(b.last_known_syncs(), Some(2));
    std::mem::forget(b);
    let known = LastKnown::load(kept.path()).unwrap().unwrap();
    assert_eq!(known.seq, a.seq());
    assert_eq!(known.catalog, *a.snapshot().catalog);
    assert_eq!(known.catalog.clusters["c7"].plan, "big");
}

// issue 26: a writer behind the store is refused (Stale) and changes nothing; submit
// catches up and applies its commands to the newer catalog.
#[test]
fn a_stale_writer_catches_up_and_retries() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = seeded(dir.path());
    let mut b = open(dir.path());
    a.submit(api(vec![Command::ChangePlan {
        id: "a".into(),
        plan: "big".into(),
    }]))
    .unwrap();
    let mode = || {
        api(vec![Command::SetMode {
            id: "a".into(),
            mode: Mode::ReadOnly,
            reason: Some("review".into()),
            until: None,
        }])
    };
    let e = b.submit_once(mode(), &mut |_| None).unwrap_err();
    assert!(
        matches!(e, ControlError::Store(StoreError::Stale(2))),
        "{e}"
    );
    assert_eq!(b.snapshot().by_id("a").unwrap().mode, Mode::Normal);
    let out = b.submit(mode()).unwrap();
    assert_eq!(out.seq, Some(3));
    let rec = &out.catalog.clusters["a"];
    assert_eq!((rec.plan.as_str(), rec.mode), ("big", Mode::ReadOnly));
    a.catch_up().unwrap();
    assert_eq!(a.snapshot().by_id("a").unwrap().mode, Mode::ReadOnly);
}

// issue 26: one leader among the nodes sharing a store; a clean stop hands the lead over.
#[test]
fn one_node_leads_until_it_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = seeded(dir.path());
    let mut b = open(dir.path());
    assert!(b.leads(), "without a lease a node leads alone");
    let lease = std::time::Duration::from_secs(60);
    a.set_lease(Lease::new("a".into(), lease));
    b.set_lease(Lease::new("b".into(), lease));
    assert!(a.leads());
    assert!(!b.leads());
    assert!(a.leads(), "renewed, still a");
    assert!(b.pending_purges().is_empty() && b.expire_maintenance().unwrap() == 0);
    a.release_lease();
    assert!(b.leads());
    assert!(!a.leads());
}

fn pool(name: &str, nodes: &[&str]) -> Arc<crate::config::PoolSpec> {
    Arc::new(crate::config::PoolSpec {
        name: name.into(),
        nodes: nodes.iter().map(|n| n.to_string()).collect(),
        health: Default::default(),
    })
}

// issue 28: new pools come with the file's change: a change that needs a pool the new
// settings lack is refused and the settings before stay (nothing published); accepted,
// the snapshot carries the new pools and the cluster its pool's nodes
#[test]
fn pool_settings_change_with_the_file_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = seeded(dir.path());
    let mut on_pool = record("b", "small");
    on_pool.class = crate::config::ClusterClass::SingleTenant;
    on_pool.upstream = Some(vec!["main".into()]);
    let create = |p: &mut Plane, r: &ClusterRecord| {
        p.submit(api(vec![Command::CreateCluster(Box::new(r.clone()))]))
            .map(|o| o.generation)
            .map_err(|e| e.to_string())
    };
    let gen = p.snapshot().generation;
    let e = p
        .with_upstream_settings(
            vec![pool("other", &["127.0.0.1:1"])],
            Default::default(),
            |p| create(p, &on_pool),
        )
        .unwrap_err();
    assert!(e.contains("no upstream pool named `main`"), "{e}");
    assert!(p.settings().pools.is_empty(), "the settings before");
    assert_eq!(p.snapshot().generation, gen, "nothing published");
    let two = pool("main", &["127.0.0.1:9301", "127.0.0.1:9302"]);
    p.with_upstream_settings(vec![two], Default::default(), |p| create(p, &on_pool))
        .unwrap();
    let snap = p.snapshot();
    assert_eq!(snap.pools[0].0.name, "main");
    let b = snap.by_id("b").unwrap();
    assert_eq!(b.pool.as_deref(), Some("main"));
    assert_eq!(b.upstreams.len(), 2);
    // the pool's nodes change alone (same catalog): published again, the cluster follows
    let one = pool("main", &["127.0.0.1:9303"]);
    p.with_upstream_settings(vec![one], Default::default(), |p| {
        p.refresh().map_err(|e| e.to_string())
    })
    .unwrap();
    let b = p.snapshot().by_id("b").unwrap().clone();
    assert_eq!(b.upstreams, ["127.0.0.1:9303".parse().unwrap()]);
}
