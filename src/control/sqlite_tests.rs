//! The SQLite store: migrations, commits read back after reopening, the change feed, the
//! optimistic check, audit paging, idempotent responses, the seed and the plan history.

use super::*;
use crate::registry::catalog::tests::{plan, record};
use serde_json::json;

fn batch(at: i64, events: Vec<Event>) -> Batch {
    Batch {
        at,
        events,
        ..Batch::default()
    }
}

fn cluster(id: &str) -> Event {
    Event::Cluster {
        record: Box::new(record(id, "p")),
    }
}

#[test]
fn commits_survive_a_reopen_and_feed_the_change_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    let mut s = SqliteStore::open(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), MIGRATIONS.len());
    let (cat, seq) = s.load().unwrap();
    assert_eq!((cat.clusters.len(), seq), (0, 0));
    let first = batch(
        10,
        vec![
            Event::Plan {
                record: plan("p", 2),
            },
            cluster("a"),
        ],
    );
    assert_eq!(s.commit(0, &first).unwrap(), 1);
    assert_eq!(s.commit(1, &batch(20, vec![cluster("b")])).unwrap(), 2);
    drop(s);

    let mut s = SqliteStore::open(&path).unwrap();
    let (cat, seq) = s.load().unwrap();
    assert_eq!(seq, 2);
    assert_eq!(cat.plans["p"].concurrency, 2);
    assert_eq!(cat.by_username("auser").unwrap().id, "a", "indexes rebuilt");
    assert!(cat.clusters["a"].password.verify(b"apass"));
    let feed = s.changes_since(1, 10).unwrap();
    assert_eq!(feed.len(), 1);
    assert_eq!((feed[0].seq, feed[0].at), (2, 20));
    assert!(
        matches!(&feed[0].events[..], [Event::Cluster { record }] if record.id == "b"),
        "{:?}",
        feed[0].events
    );
}

// A fleet's writers must not overwrite each other: a commit after a stale sequence fails.
#[test]
fn a_stale_commit_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open(&dir.path().join(DB_FILE)).unwrap();
    s.commit(0, &batch(1, vec![cluster("a")])).unwrap();
    let e = s.commit(0, &batch(2, vec![cluster("b")])).unwrap_err();
    assert!(matches!(e, StoreError::Stale(1)), "{e}");
    assert!(!s.load().unwrap().0.clusters.contains_key("b"));
}

#[test]
fn audit_idempotency_seed_and_plan_history() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open(&dir.path().join(DB_FILE)).unwrap();
    for (i, target) in ["a", "b", "a"].iter().enumerate() {
        let b = Batch {
            at: i as i64,
            audit: vec![AuditEntry {
                at: i as i64,
                actor: "token:x".into(),
                action: "cluster.mode".into(),
                target: target.to_string(),
                before: Some(json!({"mode": "normal"})),
                after: None,
            }],
            plan_changes: vec![PlanChange {
                cluster_id: target.to_string(),
                at: i as i64,
                event: "changed".into(),
                plan: Some(format!("p{i}")),
                monthly_price_cents: Some(100),
            }],
            idempotent: (i == 0).then(|| Idempotent {
                key: "k1".into(),
                fingerprint: "f".into(),
                status: 201,
                body: json!({"id": "a", "password": ""}),
            }),
            seed: Some(json!({"n": i})),
            ..Batch::default()
        };
        s.commit(i as u64, &b).unwrap();
    }
    let all = s
        .audit(&AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .unwrap();
    assert_eq!(all.len(), 3);
    assert!(all[0].0 > all[1].0, "newest first");
    let only_a = s
        .audit(&AuditQuery {
            target: Some("a".into()),
            limit: 10,
            before_id: Some(all[0].0),
        })
        .unwrap();
    assert_eq!(only_a.len(), 1);
    assert_eq!(only_a[0].1.before, Some(json!({"mode": "normal"})));
    let idem = s.idempotent("k1").unwrap().unwrap();
    assert_eq!((idem.status, idem.body["id"].as_str()), (201, Some("a")));
    assert!(s.idempotent("k2").unwrap().is_none());
    assert_eq!(s.seed().unwrap(), Some(json!({"n": 2})));
    let h = s.plan_history("a").unwrap();
    assert_eq!(
        h.iter()
            .map(|p| p.plan.clone().unwrap())
            .collect::<Vec<_>>(),
        ["p0", "p2"]
    );
}

// Atomicity: a batch that fails half-way (a duplicate idempotency key) leaves nothing.
#[test]
fn a_failed_batch_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open(&dir.path().join(DB_FILE)).unwrap();
    let idem = || Idempotent {
        key: "same".into(),
        fingerprint: "f".into(),
        status: 201,
        body: json!({}),
    };
    let mut b = batch(1, vec![cluster("a")]);
    b.idempotent = Some(idem());
    s.commit(0, &b).unwrap();
    let mut b = batch(2, vec![cluster("b")]);
    b.idempotent = Some(idem());
    assert!(s.commit(1, &b).is_err());
    let (cat, seq) = s.load().unwrap();
    assert_eq!(seq, 1);
    assert!(!cat.clusters.contains_key("b"));
}

// issue 12: usage samples by cluster and time, counters added at the same instant, pruning
#[test]
fn usage_history_is_kept_merged_and_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    let mut s = SqliteStore::open(&path).unwrap();
    let at = |at: i64, requests: u64| UsageSample {
        at,
        disk_bytes: 100 + at as u64,
        documents: 7,
        shards: 2,
        indices: 1,
        requests,
        bytes_in: requests * 10,
        bytes_out: requests * 20,
    };
    let a = |u: UsageSample| ("a".to_string(), u);
    s.record_usage(&[a(at(1000, 5)), ("b".into(), at(1000, 1))], 0)
        .unwrap();
    s.record_usage(&[a(at(2000, 3))], 0).unwrap();
    s.record_usage(&[a(at(2000, 4))], 0).unwrap(); // a final sample at the same instant
    drop(s);
    let mut s = SqliteStore::open(&path).unwrap();
    let got = s.usage("a", 0, i64::MAX, 100).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], at(1000, 5));
    assert_eq!(
        (got[1].requests, got[1].bytes_in, got[1].bytes_out),
        (7, 70, 140)
    );
    assert_eq!(
        s.usage("a", 1500, 2000, 100).unwrap().len(),
        1,
        "both ends included"
    );
    assert_eq!(s.usage("a", 0, i64::MAX, 1).unwrap().len(), 1, "the limit");
    s.record_usage(&[a(at(3000, 1))], 2000).unwrap();
    let kept: Vec<i64> = s
        .usage("a", 0, i64::MAX, 100)
        .unwrap()
        .iter()
        .map(|u| u.at)
        .collect();
    assert_eq!(kept, [2000, 3000]);
    assert!(
        s.usage("b", 0, i64::MAX, 100).unwrap().is_empty(),
        "pruned too"
    );
}

// issue 12: notices queued with their batch, delivered in order, attempts recorded
#[test]
fn notices_are_queued_with_their_batch_and_delivered_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open(&dir.path().join(DB_FILE)).unwrap();
    let notice = |n: i64| Notice {
        cluster_id: "a".into(),
        at: n,
        body: json!({ "n": n }),
    };
    let b = Batch {
        at: 1,
        events: vec![cluster("a")],
        notices: vec![notice(1), notice(2)],
        ..Batch::default()
    };
    s.commit(0, &b).unwrap();
    let (id, attempts, first) = s.next_notice().unwrap().unwrap();
    assert_eq!((attempts, first.body["n"].as_i64()), (0, Some(1)));
    s.notice_attempt(id, None, Some("refused")).unwrap();
    let (again, attempts, _) = s.next_notice().unwrap().unwrap();
    assert_eq!((again, attempts), (id, 1), "the same one until delivered");
    s.notice_attempt(id, Some(5), None).unwrap();
    let (_, _, second) = s.next_notice().unwrap().unwrap();
    assert_eq!(second.body["n"], 2);
    // A refused batch queues nothing.
    assert!(s.commit(0, &b).is_err());
}
