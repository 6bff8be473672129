//! What one change costs a fleet node (issue 26), at N clusters: a writer's plane commits
//! to a store and a follower's plane, on the same store, applies the feed
//! (`Plane::catch_up`: read the batch, apply it, check it for serving, reconcile the
//! runtime, publish the snapshot, append it to the last known catalog). Prints the
//! follower's start (load, check, first snapshot) and its memory per cluster, then the
//! time of one catch-up of a one-cluster change (a mode), median, p90 and max over the
//! rounds, and the writer's submit of that change. The store is SQLite in a temporary
//! directory (the store's own latency is not what is measured: `loadtest/fleet.py`
//! measures propagation through PostgreSQL).
//!
//! Run: `cargo bench --bench fleet_apply -- [CLUSTERS] [ROUNDS]` (100000 and 50 by
//! default).

use std::time::{Duration, Instant};

use searchgate::config::Mode;
use searchgate::control::lastknown::LastKnown;
use searchgate::control::sqlite::{SqliteStore, DB_FILE};
use searchgate::control::{Change, Plane};
use searchgate::registry::{samples, ClusterRecord, Command, PlanRecord, Settings};
use searchgate::tenancy::TenancyKey;

fn settings() -> Settings {
    Settings {
        domain: "example.test".into(),
        route_by_username: false,
        engine: Some("127.0.0.1:9201".parse().expect("an address")),
        engine_contexts: 500,
        key: TenancyKey::from_bytes([3; 32]),
        pools: Vec::new(),
        health: Default::default(),
    }
}

/// The samples' plan with 1 GB of disk and one open context per cluster (so 100k tenants
/// fit the engine's contexts).
fn plan() -> PlanRecord {
    PlanRecord {
        disk: 1 << 30,
        memory: 1 << 30,
        max_bulk_actions: 1000,
        max_open_contexts: 1,
        ..samples::plan("p", 4)
    }
}

fn record(i: usize) -> ClusterRecord {
    samples::record(&format!("c{i:06}"), "p")
}

fn change(cmds: Vec<Command>) -> Change {
    Change {
        actor: "system".into(),
        cmds,
        ..Change::default()
    }
}

/// The resident memory of this process, in bytes (Linux).
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(100_000);
    let rounds = args.get(1).copied().unwrap_or(50).max(1);
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join(DB_FILE);
    let open = || Box::new(SqliteStore::open(&path).expect("the store"));
    let mut writer = Plane::open(open(), settings()).expect("the writer");
    writer
        .submit(change(vec![Command::PutPlan(plan())]))
        .expect("the plan");
    let t = Instant::now();
    for start in (0..n).step_by(10_000) {
        let cmds = (start..n.min(start + 10_000))
            .map(|i| Command::CreateCluster(Box::new(record(i))))
            .collect();
        writer.submit(change(cmds)).expect("the clusters");
    }
    println!(
        "fleet_apply: {n} clusters created in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let before = rss();
    let t = Instant::now();
    let mut follower = Plane::open(open(), settings()).expect("the follower");
    let boot = t.elapsed();
    let grown = rss().saturating_sub(before);
    let t = Instant::now();
    follower.keep_last_known(LastKnown::new(dir.path()));
    let saved = t.elapsed();
    println!(
        "fleet_apply: follower start {:.0} ms (load, check, first snapshot), last known catalog written in {:.0} ms, {:.0} bytes of memory per cluster",
        ms(boot),
        ms(saved),
        grown as f64 / n.max(1) as f64
    );

    let mut applied = Vec::with_capacity(rounds);
    let mut submitted = Vec::with_capacity(rounds);
    for r in 0..rounds {
        let id = format!("c{:06}", (r * 7919) % n);
        let mode = if r % 2 == 0 {
            Mode::ReadOnly
        } else {
            Mode::Normal
        };
        let cmd = Command::SetMode {
            id,
            mode,
            reason: None,
            until: None,
        };
        let t = Instant::now();
        writer.submit(change(vec![cmd])).expect("a change");
        submitted.push(t.elapsed());
        let t = Instant::now();
        let got = follower.catch_up().expect("caught up");
        applied.push(t.elapsed());
        assert_eq!(got, 1, "one batch");
    }
    applied.sort();
    submitted.sort();
    let at = |v: &[Duration], q: f64| ms(v[((v.len() - 1) as f64 * q) as usize]);
    println!(
        "fleet_apply: one change at {n} clusters: catch-up median {:.2} ms, p90 {:.2} ms, max {:.2} ms; the writer's submit median {:.2} ms ({rounds} rounds)",
        at(&applied, 0.5),
        at(&applied, 0.9),
        at(&applied, 1.0),
        at(&submitted, 0.5),
    );
}
