//! The exposition checked line by line against the text format's rules (0.0.4): every
//! sample after its family's HELP and TYPE, families not repeated, labels bounded,
//! histogram buckets cumulative and ending in `+Inf` equal to `_count`.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant, UNIX_EPOCH};

use super::prometheus;
use crate::config::Config;
use crate::metrics::process::ProcessFigures;
use crate::metrics::{CoreMetrics, MetricsHub, Sample};
use crate::registry::Snapshot;
use crate::tenancy::TenancyKey;

fn registry() -> Snapshot {
    let text = r#"
[edge]
domain = "example.test"
http = "127.0.0.1:0"
[[plans]]
name = "small"
concurrency = 3
queue_size = 5
queue_timeout = "1s"
shards = 4
disk = "1mb"
memory = "1mb"
max_bulk_actions = 10
[[clusters]]
id = "acme"
hostname = "acme"
region = "r1"
class = "single-tenant"
plan = "small"
username = "u1"
password = "p1"
upstream = ["127.0.0.1:9"]
[[clusters]]
id = "idle"
hostname = "idle"
region = "r1"
class = "single-tenant"
plan = "small"
username = "u2"
password = "p2"
upstream = ["127.0.0.1:9"]
"#;
    let config = Config::parse(text, "test").unwrap();
    Snapshot::build(
        &config,
        None,
        1,
        Instant::now(),
        &TenancyKey::from_bytes([1; 32]),
    )
    .unwrap()
}

struct Parsed {
    /// name -> (labels, value) in order.
    samples: Vec<(String, HashMap<String, String>, f64)>,
    types: HashMap<String, String>,
}

/// Parses and checks the exposition's structure; panics naming the offending line.
fn parse(text: &str) -> Parsed {
    let mut types = HashMap::new();
    let mut helped = HashSet::new();
    let mut done: HashSet<String> = HashSet::new();
    let mut current = String::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap().to_string();
            assert!(helped.insert(name.clone()), "HELP twice: {line}");
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(helped.contains(name), "TYPE before HELP: {line}");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            assert!(
                types.insert(name.to_string(), kind.to_string()).is_none(),
                "{line}"
            );
            if !current.is_empty() {
                done.insert(std::mem::take(&mut current));
            }
            current = name.to_string();
            continue;
        }
        assert!(
            !line.starts_with('#') && !line.is_empty(),
            "stray line: {line:?}"
        );
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("value: {line}"));
        let (name, labels) = match series.split_once('{') {
            Some((n, l)) => (n, l.strip_suffix('}').expect("closing brace")),
            None => (series, ""),
        };
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| types.get(*f).map(String::as_str) == Some("histogram"))
            })
            .unwrap_or(name);
        assert_eq!(family, current, "sample outside its family: {line}");
        assert!(!done.contains(family));
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        let mut map = HashMap::new();
        for pair in labels.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap();
            assert!(
                ["cluster", "code", "le", "core", "component", "limit"].contains(&k),
                "unbounded label {k}: {line}"
            );
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .expect("quoted");
            map.insert(k.to_string(), v.to_string());
        }
        samples.push((name.to_string(), map, value));
    }
    Parsed { samples, types }
}

impl Parsed {
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples
            .iter()
            .find(|(n, l, _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.get(*k).map(String::as_str) == Some(v))
            })
            .map(|s| s.2)
    }
}

#[test]
fn the_exposition_follows_the_text_format_with_the_recorded_figures() {
    let hub = MetricsHub::default();
    hub.faults.panicked(crate::metrics::faults::PanicSite::Edge);
    hub.faults.worker_restarted();
    let mut core = CoreMetrics::default();
    for i in 0..100u64 {
        core.record(
            "acme",
            &Sample {
                status: 200,
                total_us: 800 + i,
                upstream_us: Some(500),
                bytes_in: 10,
                bytes_out: 100,
                ..Sample::default()
            },
        );
    }
    core.record(
        "acme",
        &Sample {
            status: 429,
            total_us: 1_500_000,
            queued_us: Some(1_499_000),
            ..Sample::default()
        },
    );
    core.record(
        "acme",
        &Sample {
            status: 413,
            total_us: 30_000,
            ..Sample::default()
        },
    );
    core.record(
        "acme",
        &Sample {
            status: 504,
            total_us: 60_000_100,
            upstream_us: Some(60_000_000),
            ..Sample::default()
        },
    );
    core.record(
        "gone\"odd",
        &Sample {
            status: 499,
            total_us: 5,
            ..Sample::default()
        },
    );
    core.record_unrouted();
    core.set_connections(7);
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    hub.absorb_at(&mut core, now);
    let registry = registry();
    let held = registry.by_id("acme").unwrap().allowance.clone();
    let _permit = match held.acquire() {
        crate::policy::admit::Admission::Granted(p) => p,
        _ => panic!("a slot is free"),
    };
    let process = ProcessFigures {
        open_fds: Some(12),
        max_fds: Some(1024),
        resident_bytes: Some(4096),
    };
    let text = prometheus(&hub.snapshot(now), &registry, &process);
    let p = parse(&text);

    let acme = [("cluster", "acme")];
    assert_eq!(
        p.get(
            "searchgate_requests_total",
            &[("cluster", "acme"), ("code", "2xx")]
        ),
        Some(100.0)
    );
    assert_eq!(
        p.get(
            "searchgate_requests_total",
            &[("cluster", "acme"), ("code", "4xx")]
        ),
        Some(2.0)
    );
    assert_eq!(
        p.get(
            "searchgate_requests_total",
            &[("cluster", "acme"), ("code", "5xx")]
        ),
        Some(1.0)
    );
    assert_eq!(
        p.get(
            "searchgate_requests_total",
            &[("cluster", "acme"), ("code", "other")]
        ),
        None
    );
    assert_eq!(p.get("searchgate_request_bytes_total", &acme), Some(1000.0));
    assert_eq!(
        p.get("searchgate_response_bytes_total", &acme),
        Some(10_000.0)
    );
    assert_eq!(
        p.get("searchgate_request_too_large_total", &acme),
        Some(1.0)
    );
    assert_eq!(
        p.get("searchgate_too_many_requests_total", &acme),
        Some(1.0)
    );
    assert_eq!(p.get("searchgate_gateway_timeouts_total", &acme), Some(1.0));
    assert_eq!(p.get("searchgate_requests_in_flight", &acme), Some(1.0));
    assert_eq!(
        p.get("searchgate_requests_in_flight", &[("cluster", "idle")]),
        Some(0.0)
    );
    assert_eq!(p.get("searchgate_queue_depth", &acme), Some(0.0));
    assert_eq!(p.get("searchgate_allowance", &acme), Some(3.0));
    // issue 29: the same per limit; a plan without lanes has only `shared`
    let shared = [("cluster", "acme"), ("limit", "shared")];
    assert_eq!(p.get("searchgate_limit_in_flight", &shared), Some(1.0));
    assert_eq!(p.get("searchgate_limit_concurrency", &shared), Some(3.0));
    assert_eq!(
        p.get("searchgate_limit_rejections_total", &shared),
        Some(0.0)
    );
    let search = [("cluster", "acme"), ("limit", "search")];
    assert_eq!(p.get("searchgate_limit_concurrency", &search), None);
    assert_eq!(
        p.get("searchgate_core_connections", &[("core", "0")]),
        Some(7.0)
    );
    assert_eq!(
        p.get("searchgate_core_requests_total", &[("core", "0")]),
        Some(105.0)
    );
    assert_eq!(
        p.get("searchgate_core_unrouted_requests_total", &[("core", "0")]),
        Some(1.0)
    );
    assert_eq!(p.get("searchgate_connections", &[]), Some(7.0));
    // issue 25: contained faults
    let edge = [("component", "edge")];
    assert_eq!(p.get("searchgate_panics_total", &edge), Some(1.0));
    let admin = [("component", "admin")];
    assert_eq!(p.get("searchgate_panics_total", &admin), Some(0.0));
    assert_eq!(p.get("searchgate_worker_restarts_total", &[]), Some(1.0));
    assert_eq!(p.get("searchgate_engine_restarts_total", &[]), Some(0.0));
    assert_eq!(p.get("process_open_fds", &[]), Some(12.0));
    assert_eq!(p.get("process_max_fds", &[]), Some(1024.0));
    // A label value with a quote is escaped and read back whole.
    assert_eq!(
        p.get(
            "searchgate_requests_total",
            &[("cluster", "gone\\\"odd"), ("code", "4xx")]
        ),
        Some(1.0)
    );
    assert!(text.contains("cluster=\"gone\\\"odd\""));

    // Histograms: cumulative, 16 buckets from 1 ms to +Inf, +Inf == _count, _sum in seconds.
    let h = "searchgate_request_duration_seconds";
    assert_eq!(p.types[h], "histogram");
    let buckets: Vec<(String, f64)> = p
        .samples
        .iter()
        .filter(|(n, l, _)| n == &format!("{h}_bucket") && l["cluster"] == "acme")
        .map(|(_, l, v)| (l["le"].clone(), *v))
        .collect();
    assert_eq!(buckets.len(), 16);
    assert_eq!(buckets[0].0, "0.001");
    assert_eq!(buckets[15].0, "+Inf");
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1));
    assert_eq!(buckets[0].1, 100.0, "the 0.8-0.9 ms requests");
    assert_eq!(buckets[4].1, 100.0, "le=0.025 leaves the 30 ms one out");
    assert_eq!(buckets[5].1, 101.0, "le=0.05 counts it");
    assert_eq!(
        buckets[14].1, 102.0,
        "everything up to 60 s but the 60.0001 s one"
    );
    assert_eq!(buckets[15].1, 103.0);
    assert_eq!(p.get(&format!("{h}_count"), &acme), Some(103.0));
    let sum = p.get(&format!("{h}_sum"), &acme).unwrap();
    let want = (100.0 * 800.0 + 4950.0 + 1_500_000.0 + 30_000.0 + 60_000_100.0) / 1e6;
    assert!((sum - want).abs() < 1e-6, "{sum} vs {want}");
    assert_eq!(
        p.get("searchgate_queue_wait_seconds_count", &acme),
        Some(1.0)
    );
    assert_eq!(
        p.get("searchgate_upstream_duration_seconds_count", &acme),
        Some(101.0)
    );
    assert_eq!(
        p.get(
            "searchgate_upstream_duration_seconds_bucket",
            &[("cluster", "acme"), ("le", "0.001")]
        ),
        Some(100.0)
    );
    // The idle cluster has gauges but no request series.
    assert_eq!(
        p.get(
            "searchgate_requests_total",
            &[("cluster", "idle"), ("code", "2xx")]
        ),
        None
    );
}

// Issue 28: each host name has its address count and its failed lookups, the name escaped.
#[test]
fn host_names_have_their_addresses_and_failures() {
    use crate::nodes::resolve::NameView;
    let names = [
        NameView {
            name: "es.internal:9200".into(),
            addrs: vec![
                "10.0.0.1:9200".parse().unwrap(),
                "10.0.0.2:9200".parse().unwrap(),
            ],
            failing: false,
            failures: 0,
        },
        NameView {
            name: "gone\"x:9200".into(),
            addrs: vec!["10.0.0.3:9200".parse().unwrap()],
            failing: true,
            failures: 4,
        },
    ];
    let text = super::name_figures(&names);
    for line in [
        "# TYPE searchgate_upstream_name_addresses gauge",
        "searchgate_upstream_name_addresses{name=\"es.internal:9200\"} 2",
        "searchgate_upstream_name_addresses{name=\"gone\\\"x:9200\"} 1",
        "# TYPE searchgate_upstream_resolve_failures_total counter",
        "searchgate_upstream_resolve_failures_total{name=\"es.internal:9200\"} 0",
        "searchgate_upstream_resolve_failures_total{name=\"gone\\\"x:9200\"} 4",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
    }
}
