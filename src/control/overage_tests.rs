//! The ladder through the control plane: each step committed, audited, published (the
//! edge's mode with its reason), its notice queued with it; an operator's mode untouched;
//! the overage kept across a restart.

use super::*;
use crate::config::Mode;
use crate::control::clock::Clock;
use crate::control::plane::tests::settings;
use crate::control::sqlite::{SqliteStore, DB_FILE};
use crate::control::store::AuditQuery;
use crate::policy::ladder::{Step, DAY_MS};
use crate::policy::mode::{self, Mode as Effective, SetBy};
use crate::registry::catalog::tests::{plan, record};
use crate::request::classify::Class;

const T0: Millis = 1_898_553_600_000; // 2030-03-01T00:00:00Z

fn open(dir: &std::path::Path, clock: &Clock) -> Plane {
    let store = SqliteStore::open(&dir.join(DB_FILE)).unwrap();
    let mut p = Plane::open_with(Box::new(store), settings(), clock.clone()).unwrap();
    p.queue_notices(true);
    p
}

fn seeded(dir: &std::path::Path, clock: &Clock) -> Plane {
    let mut p = open(dir, clock);
    p.submit(Change {
        actor: "file".into(),
        cmds: vec![
            Command::PutPlan(plan("p", 2)), // 1000 bytes of disk, 10 shards
            Command::CreateCluster(Box::new(record("a", "p"))),
        ],
        ..Change::default()
    })
    .unwrap();
    p
}

fn disk(bytes: u64) -> Usage {
    Usage {
        indices: 1,
        shards: 1,
        primaries: 1,
        docs: 1,
        bytes,
    }
}

fn record_of(p: &Plane) -> ClusterRecord {
    ClusterRecord::clone(&p.snapshot().catalog.clusters["a"])
}

fn overage_steps(p: &mut Plane) -> Vec<(String, Option<String>, String)> {
    let q = AuditQuery {
        target: Some("a".into()),
        before_id: None,
        limit: 100,
    };
    let mut out: Vec<_> = p
        .store()
        .audit(&q)
        .unwrap()
        .into_iter()
        .filter(|(_, e)| e.action == "cluster.overage")
        .map(|(_, e)| {
            let after = e.after.unwrap();
            let step = after["overage"]["step"].as_str().map(str::to_string);
            (e.actor, step, after["mode"].as_str().unwrap().to_string())
        })
        .collect();
    out.reverse();
    out
}

// issue 12: every step committed, audited, published, and its notice queued with it
#[test]
fn each_step_is_a_committed_audited_change_with_its_notice() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let mut p = seeded(dir.path(), &clock);
    assert_eq!(
        p.record_overage("a", disk(1000)).unwrap(),
        None,
        "at the plan"
    );
    let line = p.record_overage("a", disk(1500)).unwrap().unwrap();
    assert!(
        line.starts_with(
            "searchgate: cluster a: overage notice: usage over the plan since 2030-03-01T00:00:00Z"
        ),
        "{line}"
    );
    assert_eq!(
        p.record_overage("a", disk(1600)).unwrap(),
        None,
        "same step"
    );
    let (id, attempts, n) = p.store().next_notice().unwrap().unwrap();
    assert_eq!((attempts, n.cluster_id.as_str()), (0, "a"));
    assert_eq!(n.body["step"], "notice");
    assert_eq!(n.body["disk_bytes"], 1500);
    p.store().notice_attempt(id, Some(T0), None).unwrap();
    assert_eq!(p.store().next_notice().unwrap(), None);

    clock.set(T0 + 10 * DAY_MS);
    p.record_overage("a", disk(1500)).unwrap().unwrap();
    let a = p.snapshot().by_id("a").unwrap().clone();
    let view = a.effective_mode();
    assert_eq!(view.mode, Effective::ReadOnly(SetBy::Metering));
    let why = view.reason.clone().unwrap();
    assert!(
        why.contains("read-only since 2030-03-11T00:00:00Z"),
        "{why}"
    );
    assert_eq!(
        mode::decide(view.clone(), &Class::DeleteIndex),
        Ok(()),
        "deleting clears it"
    );
    assert!(mode::decide(view, &Class::Update).is_err());

    clock.set(T0 + 25 * DAY_MS);
    p.record_overage("a", disk(1500)).unwrap().unwrap();
    assert_eq!(record_of(&p).mode, Mode::Disabled);
    p.record_overage("a", disk(10)).unwrap().unwrap();
    assert_eq!(record_of(&p).mode, Mode::Normal);
    assert_eq!(record_of(&p).overage, None);
    let s =
        |a: &str, st: Option<&str>, m: &str| (a.to_string(), st.map(str::to_string), m.to_string());
    assert_eq!(
        overage_steps(&mut p),
        vec![
            s("system", Some("notice"), "normal"),
            s("system", Some("read-only"), "read-only"),
            s("system", Some("disabled"), "disabled"),
            s("system", None, "normal"),
        ]
    );
    let mut steps = Vec::new();
    while let Some((id, _, n)) = p.store().next_notice().unwrap() {
        steps.push(n.body["step"].as_str().unwrap().to_string());
        p.store().notice_attempt(id, Some(T0), None).unwrap();
    }
    assert_eq!(steps, ["read-only", "disabled", "normal"]);
}

// issue 12: an operator's mode set during an overage is never overridden, not even when it
// ends; the overage survives a restart
#[test]
fn an_operators_mode_stands_and_the_overage_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual(T0);
    let mut p = seeded(dir.path(), &clock);
    p.record_overage("a", disk(1500)).unwrap();
    p.submit(Change {
        actor: "token:t1".into(),
        cmds: vec![Command::SetMode {
            id: "a".into(),
            mode: Mode::Maintenance,
            reason: Some("moving shards".into()),
            until: None,
        }],
        ..Change::default()
    })
    .unwrap();
    assert!(!record_of(&p).overage.unwrap().owns_mode);
    drop(p);

    let mut p = open(dir.path(), &clock);
    assert_eq!(
        record_of(&p).overage.unwrap().step,
        Step::Notice,
        "kept in the store"
    );
    clock.set(T0 + 30 * DAY_MS);
    p.record_overage("a", disk(1500)).unwrap().unwrap();
    let r = record_of(&p);
    assert_eq!(
        (r.mode, r.overage.unwrap().step),
        (Mode::Maintenance, Step::Disabled)
    );
    assert_eq!(r.mode_reason.as_deref(), Some("moving shards"));
    p.record_overage("a", disk(1)).unwrap().unwrap();
    let r = record_of(&p);
    assert_eq!(
        (r.mode, r.overage),
        (Mode::Maintenance, None),
        "still the operator's"
    );
    // Notices are queued only with a webhook: the last step's is not.
    p.queue_notices(false);
    p.record_overage("a", disk(1500)).unwrap().unwrap();
    let mut queued = Vec::new();
    while let Some((id, _, n)) = p.store().next_notice().unwrap() {
        queued.push(n.body["step"].as_str().unwrap().to_string());
        p.store().notice_attempt(id, Some(T0), None).unwrap();
    }
    assert_eq!(queued, ["notice", "disabled", "normal"]);
}
