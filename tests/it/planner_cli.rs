//! `searchgate plan` as an operator runs it (spec 8.1): figures checked against the
//! hand-worked examples, the plan chosen from a config's catalog with the reasons smaller
//! plans do not fit, exit statuses, and bytes per document measured by indexing a sample
//! into a live engine (whose scratch index is deleted afterwards).

use crate::support::engine_support;

use std::process::{Command, Output};

use engine_support::Engine;
use serde_json::Value;

const CATALOG: &str = r#"
[edge]
domain = "example.test"
http = "127.0.0.1:0"
[[plans]]
name = "large"
concurrency = 100
queue_size = 10
queue_timeout = "5s"
shards = 200
disk = "400gb"
memory = "64gb"
max_bulk_actions = 10000
monthly_price_cents = 90000
[[plans]]
name = "small"
concurrency = 10
queue_size = 10
queue_timeout = "5s"
shards = 20
disk = "10gb"
memory = "2gb"
max_bulk_actions = 10000
monthly_price_cents = 5000
[[plans]]
name = "medium"
concurrency = 40
queue_size = 10
queue_timeout = "5s"
shards = 60
disk = "50gb"
memory = "8gb"
max_bulk_actions = 10000
monthly_price_cents = 20000
"#;

fn plan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .arg("plan")
        .args(args)
        .output()
        .expect("run searchgate plan")
}

fn catalog() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plans.toml");
    std::fs::write(&path, CATALOG).unwrap();
    let p = path.display().to_string();
    (dir, p)
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn spec_8_1_figures_and_the_smallest_plan_that_fits() {
    let (_d, cfg) = catalog();
    let out = plan(&[
        "--documents",
        "10000000",
        "--bytes-per-doc",
        "1000",
        "--primaries",
        "5",
        "--replicas",
        "1",
        "--peak-rps",
        "300",
        "--p99-ms",
        "100",
        "--config",
        &cfg,
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    // 8.1.1: 5 x (1+1) = 10 shards.
    assert_eq!(v["shards"], 10);
    // 8.1.2: 1000 B x 10,000,000 x (1+1) = 20,000,000,000 B, + 20% = 24,000,000,000 B.
    assert_eq!(v["disk_bytes"], 24_000_000_000u64);
    // 8.1.3: 10-30% of 20,000,000,000 B.
    assert_eq!(v["memory_bytes_min"], 2_000_000_000u64);
    assert_eq!(v["memory_bytes_max"], 6_000_000_000u64);
    // 8.1.4: 300 / (1000 / 100) = 30 connections.
    assert_eq!(v["connections"], 30);
    // small: 10 GiB disk < 24 GB, concurrency 10 < 30; medium fits.
    assert_eq!(v["plan"], "medium");
    assert_eq!(v["rejected"][0]["plan"], "small");
    let why: Vec<&str> = v["rejected"][0]["why"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(
        why,
        [
            "disk 24000000000 B > 10737418240 B",
            "connections 30 > concurrency allowance 10"
        ]
    );
    assert!(v["reasons"]["plan"]
        .as_str()
        .unwrap()
        .starts_with("smallest of the 3 plans"));
    assert_eq!(v["warnings"].as_array().unwrap().len(), 0);
}

#[test]
fn time_series_with_features_and_the_table() {
    let (_d, cfg) = catalog();
    let args = [
        "--documents",
        "1000000",
        "--bytes-per-doc",
        "512.5",
        "--primaries",
        "3",
        "--replicas",
        "2",
        "--indices-per-day",
        "2",
        "--retention-days",
        "30",
        "--peak-rps",
        "1000",
        "--p99-ms",
        "45.5",
        "--features",
        "aggregations,geo",
        "--config",
        &cfg,
    ];
    let out = plan(&[&args[..], &["--json"]].concat());
    // 540 shards (3 x 3 x 2 x 30) exceed every plan: exit 1, plan null.
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert_eq!(v["shards"], 540);
    // 512.5 x 1,000,000 x 3 = 1,537,500,000 B; disk + 20% = 1,845,000,000 B.
    assert_eq!(v["disk_bytes"], 1_845_000_000u64);
    // Two features: 30-60% of 1,537,500,000 = 461,250,000 .. 922,500,000.
    assert_eq!(v["memory_bytes_min"], 461_250_000u64);
    assert_eq!(v["memory_bytes_max"], 922_500_000u64);
    // 1000 x 45.5 / 1000 = 45.5 -> 46.
    assert_eq!(v["connections"], 46);
    assert_eq!(v["plan"], Value::Null);
    assert_eq!(v["rejected"].as_array().unwrap().len(), 3);

    let table = plan(&args);
    let text = String::from_utf8(table.stdout).unwrap();
    for row in [
        "shards",
        "disk",
        "memory",
        "connections",
        "plan",
        "  not small:",
    ] {
        assert!(text.lines().any(|l| l.starts_with(row)), "{row} in\n{text}");
    }
    assert!(text.contains("(none)"));
}

#[test]
fn many_shards_warn_about_the_open_file_budget() {
    let (_d, cfg) = catalog();
    // 10 x (1+1) x 1/day x 50 days = 1,000 shards x 50 files = 50,000 >= 75% of 65,535.
    let out = plan(&[
        "--documents",
        "1000",
        "--bytes-per-doc",
        "100",
        "--primaries",
        "10",
        "--indices-per-day",
        "1",
        "--retention-days",
        "50",
        "--peak-rps",
        "1",
        "--p99-ms",
        "10",
        "--config",
        &cfg,
        "--json",
    ]);
    let v = json(&out);
    assert_eq!(v["shards"], 1000);
    let w = v["warnings"][0].as_str().unwrap();
    assert!(
        w.contains("1000 shards x ~50 open files each = 50000, 76% of the 65535"),
        "{w}"
    );
}

#[test]
fn bad_input_exits_2_with_a_reason() {
    let base = ["--documents", "10", "--bytes-per-doc", "100"];
    let out = plan(&[&base[..], &["--from-cluster", "acme"]].concat());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--from-cluster acme") && err.contains("admin API"),
        "{err}"
    );

    let out = plan(
        &[
            &base[..],
            &[
                "--peak-rps",
                "1",
                "--p99-ms",
                "1",
                "--features",
                "telepathy",
            ],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown feature `telepathy`"));

    // clap refuses a half time-series layout and a missing bytes source.
    let out = plan(
        &[
            &base[..],
            &["--peak-rps", "1", "--p99-ms", "1", "--indices-per-day", "1"],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(2));
    let out = plan(&["--documents", "10", "--peak-rps", "1", "--p99-ms", "1"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bytes_per_document_measured_from_a_sample_in_a_live_cluster() {
    let engine = Engine::start();
    let dir = tempfile::tempdir().unwrap();
    let sample = dir.path().join("docs.ndjson");
    let docs: String = (0..200)
        .map(|i| format!("{{\"title\":\"Guide page {i}\",\"body\":\"search cluster index shard replica {i}\",\"n\":{i}}}\n"))
        .collect();
    std::fs::write(&sample, docs).unwrap();
    let url = format!("http://{}", engine.addr);
    let out = plan(&[
        "--documents",
        "1000000",
        "--sample",
        sample.to_str().unwrap(),
        "--url",
        &url,
        "--peak-rps",
        "10",
        "--p99-ms",
        "100",
        "--json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "{err}"
    );
    assert!(err.contains("sample of 200 documents took"), "{err}");
    let v = json(&out);
    let per_doc = v["inputs"]["bytes_per_doc"].as_f64().unwrap();
    assert!(per_doc > 10.0 && per_doc < 100_000.0, "{per_doc}");
    // disk = per_doc x 1,000,000 x 2 x 1.2 (default 1 replica), rounded up at each step.
    let data = (per_doc * 1_000_000.0 * 2.0).ceil();
    assert_eq!(v["data_bytes"].as_f64().unwrap(), data);
    // The scratch index is gone.
    let cat = engine.client().get("/_cat/indices?format=json").json();
    assert!(!cat.to_string().contains("searchgate-plan-sample"), "{cat}");

    let bad = dir.path().join("bad.ndjson");
    std::fs::write(&bad, "{\"ok\":1}\n[1,2]\n").unwrap();
    let out = plan(&[
        "--documents",
        "1",
        "--sample",
        bad.to_str().unwrap(),
        "--url",
        &url,
        "--peak-rps",
        "1",
        "--p99-ms",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2: not a JSON object"));
}
