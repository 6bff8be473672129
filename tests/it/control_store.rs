//! The control plane's store, one table of cases run on both back ends: the embedded
//! SQLite store and the fleet's PostgreSQL store (issue 26; a throw-away server from
//! `support::pg`). Commits read back, the change feed in commit order with concurrent
//! writers (no reader ever skips a batch), the optimistic check, atomic batches, audit
//! paging, idempotent responses, the seed, plan history, usage samples, notices, values a
//! fleet shares and its leader lease.

use std::sync::{Arc, Mutex};

use searchgate::control::pg::PgStore;
use searchgate::control::schema::MIGRATIONS;
use searchgate::control::sqlite::{SqliteStore, DB_FILE};
use searchgate::control::store::{
    AuditEntry, AuditQuery, Batch, Event, Idempotent, Notice, PlanChange, Store, StoreError,
    UsageSample,
};
use searchgate::registry::{samples, ClusterRecord, PlanRecord};
use serde_json::json;

use crate::support::pg::Pg;

/// Opens another connection to the same store.
type Open<'a> = &'a (dyn Fn() -> Box<dyn Store> + Sync);

/// A case: its name and what it runs on an opener.
type Case = (&'static str, fn(Open<'_>));

/// Every case, by name.
const CASES: &[Case] = &[
    (
        "commits are read back and feed the change log",
        commits_feed_the_log,
    ),
    ("a stale commit is refused and writes nothing", stale_commit),
    (
        "concurrent writers: the feed is in commit order",
        concurrent_writers,
    ),
    (
        "audit, idempotency, seed and plan history",
        audit_and_history,
    ),
    ("a failed batch writes nothing", failed_batch),
    ("usage history is kept, merged and pruned", usage_history),
    ("notices are queued with their batch, in order", notices),
    ("a fleet's shared values: the first wins", shared_values),
    ("the leader lease has one holder at a time", leases),
];

#[test]
fn every_case_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    for (name, case) in CASES {
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(path.with_extension("db-wal"));
        let _ = std::fs::remove_file(path.with_extension("db-shm"));
        eprintln!("case: {name}");
        let p = path.clone();
        case(&move || Box::new(SqliteStore::open(&p).unwrap()) as Box<dyn Store>);
    }
}

#[test]
fn every_case_on_postgresql() {
    let pg = Pg::start();
    for (name, case) in CASES {
        let url = pg.database(); // each case on a new database
        eprintln!("case: {name}");
        case(&move || Box::new(PgStore::open(&url).unwrap()) as Box<dyn Store>);
    }
}

fn plan(name: &str, concurrency: u32) -> PlanRecord {
    PlanRecord {
        overage_grace_ms: 86_400_000,
        overage_disable_after_ms: 2 * 86_400_000,
        ..samples::plan(name, concurrency)
    }
}

fn record(id: &str) -> ClusterRecord {
    samples::record(id, "p")
}

fn cluster(id: &str) -> Event {
    Event::Cluster {
        record: Box::new(record(id)),
    }
}

fn batch(at: i64, events: Vec<Event>) -> Batch {
    Batch {
        at,
        events,
        ..Batch::default()
    }
}

fn commits_feed_the_log(open: Open<'_>) {
    let mut s = open();
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
    let removed = batch(30, vec![Event::PlanRemoved { name: "q".into() }]);
    assert_eq!(s.commit(2, &removed).unwrap(), 3);
    drop(s);

    let mut s = open(); // another connection: what was committed is there
    let (cat, seq) = s.load().unwrap();
    assert_eq!(seq, 3);
    assert_eq!(cat.plans["p"].concurrency, 2);
    assert_eq!(cat.by_username("auser").unwrap().id, "a", "indexes rebuilt");
    assert!(cat.clusters["a"].password.verify(b"apass"));
    let feed = s.changes_since(1, 10).unwrap();
    assert_eq!(feed.len(), 2);
    assert_eq!((feed[0].seq, feed[0].at), (2, 20));
    assert!(
        matches!(&feed[0].events[..], [Event::Cluster { record }] if record.id == "b"),
        "{:?}",
        feed[0].events
    );
    assert_eq!(s.changes_since(0, 1).unwrap().len(), 1, "the limit");
    assert!(s.changes_since(3, 10).unwrap().is_empty());
}

fn stale_commit(open: Open<'_>) {
    let (mut a, mut b) = (open(), open());
    a.commit(0, &batch(1, vec![cluster("a")])).unwrap();
    let e = b.commit(0, &batch(2, vec![cluster("b")])).unwrap_err();
    assert!(matches!(e, StoreError::Stale(1)), "{e}");
    assert!(!a.load().unwrap().0.clusters.contains_key("b"));
    assert_eq!(b.commit(1, &batch(2, vec![cluster("b")])).unwrap(), 2);
}

// Four writers race, each retrying after the seq a stale commit reports; a reader follows
// the feed meanwhile. Every batch gets the next number, and the reader, reading
// `seq > last` again and again, sees every number once and in order.
fn concurrent_writers(open: Open<'_>) {
    const WRITERS: usize = 4;
    const EACH: usize = 15;
    let total = (WRITERS * EACH) as u64;
    let seen = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|scope| {
        for w in 0..WRITERS {
            scope.spawn(move || {
                let mut s = open();
                let mut last = 0;
                for i in 0..EACH {
                    let b = batch(i as i64, vec![cluster(&format!("w{w}-{i}"))]);
                    loop {
                        match s.commit(last, &b) {
                            Ok(n) => {
                                last = n;
                                break;
                            }
                            Err(StoreError::Stale(n)) => last = n,
                            Err(StoreError::Busy(_)) => {}
                            Err(e) => panic!("writer {w}: {e}"),
                        }
                    }
                }
            });
        }
        let seen = seen.clone();
        scope.spawn(move || {
            let mut s = open();
            let mut last = 0;
            while last < total {
                for c in s.changes_since(last, 7).unwrap() {
                    assert_eq!(c.seq, last + 1, "the reader skipped a batch");
                    last = c.seq;
                    seen.lock().unwrap().push(c.seq);
                }
            }
        });
    });
    let seen = seen.lock().unwrap();
    assert_eq!(*seen, (1..=total).collect::<Vec<_>>());
    let (cat, seq) = open().load().unwrap();
    assert_eq!((cat.clusters.len() as u64, seq), (total, total));
}

fn audit_and_history(open: Open<'_>) {
    let mut s = open();
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
    assert_eq!(only_a[0].1.after, None);
    let idem = s.idempotent("k1").unwrap().unwrap();
    assert_eq!((idem.status, idem.body["id"].as_str()), (201, Some("a")));
    assert!(s.idempotent("k2").unwrap().is_none());
    assert_eq!(s.seed().unwrap(), Some(json!({"n": 2})));
    let h = s.plan_history("a").unwrap();
    let plans: Vec<String> = h.iter().map(|p| p.plan.clone().unwrap()).collect();
    assert_eq!(plans, ["p0", "p2"]);
    assert_eq!(h[0].monthly_price_cents, Some(100));
}

// Atomicity: a batch that fails half-way (a duplicate idempotency key) leaves nothing.
fn failed_batch(open: Open<'_>) {
    let mut s = open();
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
    assert!(s.changes_since(1, 10).unwrap().is_empty());
    assert_eq!(s.commit(1, &batch(3, vec![cluster("c")])).unwrap(), 2);
}

// issue 12: samples by cluster and time, counters added at the same instant, pruning
fn usage_history(open: Open<'_>) {
    let mut s = open();
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
    s.record_usage(None, &[a(at(1000, 5)), ("b".into(), at(1000, 1))], 0)
        .unwrap();
    s.record_usage(Some("n1/1"), &[a(at(2000, 3))], 0).unwrap();
    // A second sample at the same instant (another node's); then the first node's batch
    // written again (its answer lost): counted once.
    s.record_usage(Some("n2/1"), &[a(at(2000, 4))], 0).unwrap();
    s.record_usage(Some("n1/1"), &[a(at(2000, 3))], 0).unwrap();
    let mut s = open();
    let got = s.usage("a", 0, i64::MAX, 100).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], at(1000, 5));
    let sums = (got[1].requests, got[1].bytes_in, got[1].bytes_out);
    assert_eq!(sums, (7, 70, 140));
    assert_eq!(s.usage("a", 1500, 2000, 100).unwrap().len(), 1, "both ends");
    assert_eq!(s.usage("a", 0, i64::MAX, 1).unwrap().len(), 1, "the limit");
    s.record_usage(None, &[a(at(3000, 1))], 2000).unwrap();
    let kept: Vec<i64> = s
        .usage("a", 0, i64::MAX, 100)
        .unwrap()
        .iter()
        .map(|u| u.at)
        .collect();
    assert_eq!(kept, [2000, 3000]);
    assert!(s.usage("b", 0, i64::MAX, 100).unwrap().is_empty(), "pruned");
    // The same cluster and instant twice in one batch: as one row written after the other
    // (PostgreSQL writes a batch in one statement, which may not touch a row twice).
    s.record_usage(None, &[a(at(4000, 2)), a(at(4000, 5))], 0)
        .unwrap();
    let got = s.usage("a", 4000, 4000, 10).unwrap();
    assert_eq!(got, [at(4000, 7)]);
}

// issue 12: notices queued with their batch, delivered in order, attempts recorded
fn notices(open: Open<'_>) {
    let mut s = open();
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
    assert!(s.next_notice().unwrap().is_none());
    s.commit(0, &b).unwrap();
    let (id, attempts, first) = s.next_notice().unwrap().unwrap();
    assert_eq!((attempts, first.body["n"].as_i64()), (0, Some(1)));
    s.notice_attempt(id, None, Some("refused")).unwrap();
    let (again, attempts, _) = open().next_notice().unwrap().unwrap();
    assert_eq!((again, attempts), (id, 1), "the same one until delivered");
    s.notice_attempt(id, Some(5), None).unwrap();
    let (_, _, second) = s.next_notice().unwrap().unwrap();
    assert_eq!(second.body["n"], 2);
    assert!(s.commit(0, &b).is_err(), "stale: queues nothing");
    let (id2, _, _) = s.next_notice().unwrap().unwrap();
    s.notice_attempt(id2, Some(6), None).unwrap();
    assert!(s.next_notice().unwrap().is_none());
}

fn shared_values(open: Open<'_>) {
    let (mut a, mut b) = (open(), open());
    assert_eq!(a.shared_value("k", "first").unwrap(), "first");
    assert_eq!(b.shared_value("k", "second").unwrap(), "first");
    assert_eq!(b.shared_value("other", "x").unwrap(), "x");
}

// issue 26: one holder; it renews; another takes it only once it expired or was released.
fn leases(open: Open<'_>) {
    let (mut a, mut b) = (open(), open());
    assert!(a.lease("leader", "n1", 1_000, 500).unwrap(), "free: taken");
    assert!(!b.lease("leader", "n2", 1_200, 500).unwrap(), "held by n1");
    assert!(
        a.lease("leader", "n1", 1_400, 500).unwrap(),
        "renewed to 1900"
    );
    assert!(!b.lease("leader", "n2", 1_800, 500).unwrap(), "still n1's");
    assert!(
        b.lease("leader", "n2", 1_901, 500).unwrap(),
        "expired: n2 takes it"
    );
    assert!(!a.lease("leader", "n1", 1_950, 500).unwrap(), "n1 lost it");
    assert!(
        a.lease("other", "n1", 1_950, 500).unwrap(),
        "leases are by name"
    );
    a.release("leader", "n1").unwrap(); // not n1's: nothing happens
    assert!(!a.lease("leader", "n1", 2_000, 500).unwrap());
    b.release("leader", "n2").unwrap();
    assert!(
        a.lease("leader", "n1", 2_000, 500).unwrap(),
        "released: taken"
    );
}

// The schema is migrated once, by whichever opens first; opening again changes nothing.
#[test]
fn both_back_ends_are_at_the_last_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    SqliteStore::open(&path).unwrap();
    let s = SqliteStore::open(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), MIGRATIONS.len());
    let pg = Pg::start();
    let url = pg.database();
    let mut a = PgStore::open(&url).unwrap();
    let mut b = PgStore::open(&url).unwrap();
    assert_eq!(a.schema_version().unwrap(), MIGRATIONS.len());
    assert_eq!(b.schema_version().unwrap(), MIGRATIONS.len());
}
