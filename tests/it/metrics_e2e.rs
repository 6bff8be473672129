//! Issue 13 end to end: load driven through a cluster of a real edge (a mock upstream that
//! answers after known delays), then what a capacity engineer reads of it:
//! - a real Prometheus (Debian's package) scrapes the admin listener with the bearer token
//!   and answers `histogram_quantile` through its HTTP API; the unauthenticated
//!   `[edge] metrics` listener renders the same families;
//! - `GET /v1/clusters/{id}/latency` and `searchgate latency CLUSTER_ID` give percentiles
//!   that match the samples the edge recorded (its access log, µs) within HdrHistogram's
//!   precision, and a well-formed SVG plot;
//! - refusals with the cluster's credentials (413 on the Content-Length, a blocked
//!   endpoint) count for that cluster;
//! - `searchgate plan --from-cluster` sizes from the measured peak and p99, with the admin
//!   API's plans as its catalog;
//! - after SIGTERM, the interval log (`[edge] latency_log`) reads back through the
//!   `hdrhistogram` crate's log reader with every request in it.

use crate::support::e2e;
use crate::support::prometheus;

use std::process::{Command, Output};
use std::time::Duration;

use base64::Engine as _;
use e2e::mock::Mock;
use e2e::{eventually, ClusterSpec, Config, Edge, PlanSpec};
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use prometheus::Prometheus;
use serde_json::Value;

/// Requests driven, and the upstream delays (ms) they cycle through.
const REQUESTS: usize = 210;
const DELAYS_MS: [u64; 7] = [2, 5, 10, 20, 40, 80, 160];
const CLIENTS: usize = 6;

/// The `value_ms` at quantile `q` of sorted `v` (nearest rank, as HdrHistogram reports).
fn exact(v: &[f64], q: f64) -> f64 {
    v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
}

/// Within HdrHistogram's precision (2 significant figures: 1%), plus the µs a value is
/// rounded to when shown in ms.
fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= want * 0.01 + 0.002
}

/// The whole-request times (ms) of cluster `id` in the edge's access log.
fn access_log_totals(path: &std::path::Path, id: &str) -> Vec<f64> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut v: Vec<f64> = text
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(id))
        .map(|l| {
            let ms = l.rsplit("total_ms=").next().unwrap();
            ms.trim().parse().unwrap()
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

fn searchgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .args(args)
        .output()
        .expect("run searchgate")
}

fn stdout_ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The families (`# TYPE` lines) of an exposition.
fn families(text: &str) -> Vec<String> {
    let mut f: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("# TYPE "))
        .map(str::to_string)
        .collect();
    f.sort();
    f
}

fn drive_load(edge: &Edge) {
    let tenant = edge.tenant("acme");
    let workers: Vec<_> = (0..CLIENTS)
        .map(|w| {
            let mut client = edge.client();
            let tenant = tenant.clone();
            std::thread::spawn(move || {
                for i in (w..REQUESTS).step_by(CLIENTS) {
                    let delay = DELAYS_MS[i % DELAYS_MS.len()];
                    let req = tenant
                        .req("GET", "/books/_search")
                        .mock(&format!("delay={delay}"));
                    assert_eq!(client.send(&req).status, 200);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
}

/// Refusals decided with the cluster's credentials: they count for it.
fn refusals(edge: &Edge) {
    let tenant = edge.tenant("acme");
    let big = tenant.req("POST", "/books/_doc").body(vec![b'x'; 2048]);
    assert_eq!(edge.send(&big).status, 413);
    assert_eq!(edge.send(&tenant.req("GET", "/_snapshot")).status, 501);
}

fn start_edge(mock: &Mock) -> Edge {
    let config = Config::new()
        .with_admin()
        .plan(PlanSpec::new("p").allowance(8, 64, "5s"))
        .cluster(ClusterSpec::single("acme", "p", mock.addr))
        .edge("max_body", "\"1kb\"")
        .edge("latency_log", "true")
        .edge("access_log", "\"access.log\"");
    let mut config = config;
    config.engine = false;
    Edge::start(config)
}

fn prometheus_for(edge: &Edge, token_file: &std::path::Path) -> Prometheus {
    let target = edge.admin().url.trim_start_matches("http://").to_string();
    let yaml = [
        "global:".to_string(),
        "  scrape_interval: 1s".into(),
        "  evaluation_interval: 1s".into(),
        "scrape_configs:".into(),
        "  - job_name: searchgate".into(),
        "    scrape_interval: 1s".into(),
        "    scrape_timeout: 1s".into(),
        "    authorization:".into(),
        "      type: Bearer".into(),
        format!("      credentials_file: {}", token_file.display()),
        "    static_configs:".into(),
        format!("      - targets: ['{target}']"),
    ];
    Prometheus::start(&(yaml.join("\n") + "\n"))
}

// issue 13: done when Prometheus scrapes and answers a quantile query, the latency endpoint
// and CLI match the recorded samples, a log round-trips, the plot is a valid SVG
#[test]
fn load_then_prometheus_the_latency_api_and_cli_the_planner_and_the_interval_log() {
    let mock = Mock::start();
    let edge = start_edge(&mock);
    let token_file = edge.dir.path().join("prometheus.token");
    std::fs::write(&token_file, &edge.admin().token).unwrap();
    let mut prom = prometheus_for(&edge, &token_file);
    // Bearer token accepted: the target is up before any load.
    prom.wait_for(
        "the first scrape of the admin listener",
        Duration::from_secs(30),
        |p| p.scalar("up{job=\"searchgate\"}").filter(|v| *v == 1.0),
    );

    drive_load(&edge);
    refusals(&edge);
    let total = REQUESTS + 2;
    let log = edge.dir.path().join("access.log");
    let recorded = eventually(
        "every request in the access log",
        Duration::from_secs(10),
        || {
            let v = access_log_totals(&log, "acme");
            (v.len() == total).then_some(v)
        },
    );

    check_metrics_endpoints(&edge, &mut prom);
    check_prometheus_quantiles(&mut prom, &recorded);
    let (url, token) = (edge.admin().url.clone(), token_file.display().to_string());
    check_latency_api_and_cli(&edge, &url, &token, &recorded);
    check_planner(&edge, &url, &token);
    drop(prom);

    let dir = edge.stop();
    check_interval_log(&dir.path().join("edge/latency/acme.hlog"), &recorded);
}

fn check_metrics_endpoints(edge: &Edge, prom: &mut Prometheus) {
    let admin = edge.admin();
    let anonymous = searchgate::outbound::agent(
        "test",
        std::time::Duration::from_secs(60),
        Default::default(),
    )
    .get(format!("{}/metrics", admin.url))
    .call()
    .unwrap();
    assert_eq!(
        anonymous.status().as_u16(),
        401,
        "the admin /metrics needs the token"
    );
    let mut with_token = ureq::get(format!("{}/metrics", admin.url))
        .header("Authorization", format!("Bearer {}", admin.token))
        .call()
        .unwrap();
    let ct = with_token.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(ct, "text/plain; version=0.0.4; charset=utf-8");
    let text = with_token.body_mut().read_to_string().unwrap();
    let c = "cluster=\"acme\"";
    for (line, value) in [
        (format!("searchgate_request_too_large_total{{{c}}}"), "1"),
        (
            format!("searchgate_requests_total{{{c},code=\"5xx\"}}"),
            "1",
        ),
        (
            format!("searchgate_requests_total{{{c},code=\"2xx\"}}"),
            &*REQUESTS.to_string(),
        ),
    ] {
        assert!(
            text.contains(&format!("{line} {value}\n")),
            "{line} {value} in\n{text}"
        );
    }
    // The unauthenticated listener renders the same exposition (one renderer).
    let open = e2e::metrics::scrape(edge.metrics.expect("[edge] metrics"));
    assert_eq!(families(&open), families(&text));
    assert!(open.contains("searchgate_queue_depth{cluster=\"acme\"} 0\n"));
    // Prometheus has every request once a scrape after the load came in.
    let want = (REQUESTS + 2) as f64;
    prom.wait_for(
        "Prometheus to scrape the whole load",
        Duration::from_secs(30),
        |p| {
            p.scalar("sum(searchgate_requests_total{cluster=\"acme\"})")
                .filter(|v| *v == want)
        },
    );
}

/// `histogram_quantile` interpolates inside the bucket that holds the quantile: the
/// recorded value's bucket bounds the answer.
fn check_prometheus_quantiles(prom: &mut Prometheus, recorded: &[f64]) {
    const LE_S: [f64; 15] = [
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    ];
    for q in [0.5, 0.9, 0.99] {
        let promql = format!(
            "histogram_quantile({q}, sum by (le) (searchgate_request_duration_seconds_bucket{{cluster=\"acme\"}}))"
        );
        let got = prom.scalar(&promql).expect("a quantile");
        let want = exact(recorded, q) / 1000.0;
        let hi = LE_S.iter().copied().find(|&le| le >= want).unwrap();
        let lo = LE_S
            .iter()
            .copied()
            .rev()
            .find(|&le| le < want)
            .unwrap_or(0.0);
        assert!(
            got > lo - 1e-9 && got <= hi + 1e-9,
            "q {q}: Prometheus {got} s, recorded {want} s, bucket ({lo}, {hi}]"
        );
    }
}

fn check_latency_api_and_cli(edge: &Edge, url: &str, token: &str, recorded: &[f64]) {
    let report = edge
        .admin()
        .call("GET", "/v1/clusters/acme/latency?window=5m", None)
        .expect(200);
    assert_eq!(report["total"]["count"], recorded.len());
    assert!(report["upstream"]["count"].as_u64().unwrap() >= REQUESTS as u64);
    for (k, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)] {
        let (got, want) = (report["total"][k].as_f64().unwrap(), exact(recorded, q));
        assert!(close(got, want), "API {k}: {got} ms vs recorded {want} ms");
    }
    let max = report["total"]["max_ms"].as_f64().unwrap();
    assert!(close(max, *recorded.last().unwrap()), "max {max}");
    // The slowest mock delay bounds the tail from below.
    assert!(report["upstream"]["p99"].as_f64().unwrap() >= 160.0 * 0.99);
    let bad = edge
        .admin()
        .call("GET", "/v1/clusters/acme/latency?window=2h", None);
    assert_eq!(bad.status, 400);
    assert!(bad.reason().starts_with("`window`: "), "{}", bad.reason());
    let unknown = edge
        .admin()
        .call("GET", "/v1/clusters/nosuch/latency", None);
    assert_eq!(unknown.status, 404);

    // The CLI: the same figures, its table, and the plot.
    let svg = edge.dir.path().join("acme.svg");
    let cli = |extra: &[&str]| {
        let mut args = vec!["latency", "acme", "--url", url, "--token-file", token];
        args.extend_from_slice(extra);
        searchgate(&args)
    };
    let out = cli(&["--window", "5m", "--json", "--plot", svg.to_str().unwrap()]);
    let v: Value = serde_json::from_str(&stdout_ok(&out)).unwrap();
    for k in [
        "count", "p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "max_ms",
    ] {
        assert_eq!(v["total"][k], report["total"][k], "{k}");
    }
    assert_eq!(v["distribution"], report["distribution"]);
    let table = stdout_ok(&cli(&[]));
    // issue 32: the report says what it covers before its figures: requests, the span in
    // UTC and what it is of the window, the rate.
    let head: Vec<&str> = table.lines().take(4).collect();
    assert_eq!(
        head[0],
        format!("acme: {} requests", recorded.len()),
        "{table}"
    );
    assert!(
        head[1].contains(" UTC (") && head[1].contains("the last 5m"),
        "{table}"
    );
    assert!(head[2].starts_with("mean "), "{table}");
    assert!(table.contains("\nms "), "{table}");
    assert!(table.contains("       Value     Percentile TotalCount 1/(1-Percentile)"));
    let distribution = &table[table.find("       Value").unwrap()..];
    let rows = searchgate::metrics::distribution::parse_distribution(distribution).unwrap();
    assert_eq!(rows.last().unwrap().total_count, recorded.len() as u64);
    let refused = cli(&["--window", "2h"]);
    assert_eq!(refused.status.code(), Some(2));
    // A window the one-minute intervals cannot honour is refused, by the API and the CLI.
    let short = cli(&["--window", "10s"]);
    assert_eq!(short.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&short.stderr).contains("whole minutes from 1m to 60m"),
        "{}",
        String::from_utf8_lossy(&short.stderr)
    );
    let short = edge
        .admin()
        .call("GET", "/v1/clusters/acme/latency?window=30s", None);
    assert_eq!(short.status, 400);
    let nosuch = searchgate(&["latency", "nosuch", "--url", url, "--token-file", token]);
    assert_eq!(nosuch.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&nosuch.stderr).contains("404"));

    let doc_text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&doc_text).expect("a well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    assert_eq!(
        doc.root_element().tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let series: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .filter_map(|n| n.attribute("data-series"))
        .collect();
    assert!(
        series.contains(&"total") && series.contains(&"upstream"),
        "{series:?}"
    );
}

fn check_planner(edge: &Edge, url: &str, token: &str) {
    let read = || {
        let r = edge
            .admin()
            .call("GET", "/v1/clusters/acme/latency?window=1h", None)
            .expect(200);
        (
            r["peak_rps"].as_f64().unwrap(),
            r["upstream"]["p99"].as_f64().unwrap(),
        )
    };
    let (peak_before, p99) = read();
    let out = searchgate(&[
        "plan",
        "--documents",
        "100000",
        "--bytes-per-doc",
        "1000",
        "--from-cluster",
        "acme",
        "--admin-url",
        url,
        "--token-file",
        token,
        "--json",
    ]);
    let v: Value = serde_json::from_str(&stdout_ok(&out)).unwrap();
    let (peak_after, p99_after) = read();
    // No traffic meanwhile: the p99 stays; the open minute's rate only falls as it ages.
    assert_eq!(p99_after, p99);
    let peak = v["inputs"]["peak_rps"].as_f64().unwrap();
    assert!(
        peak_after <= peak && peak <= peak_before,
        "{peak_after} <= {peak} <= {peak_before}"
    );
    assert!(peak > 0.0);
    assert_eq!(v["inputs"]["p99_ms"].as_f64().unwrap(), p99);
    assert_eq!(v["inputs"]["measured"]["p99_of"], "upstream");
    assert_eq!(v["inputs"]["measured"]["requests"], REQUESTS + 2);
    // spec 8.1.4: connections = peak rps / (1000 / p99 ms), rounded up.
    let want = (peak * p99 / 1000.0 - 1e-9).ceil().max(0.0) as u64;
    assert_eq!(v["connections"].as_u64().unwrap(), want);
    // The catalog is the admin API's: its one plan, `p`.
    assert_eq!(v["catalog"], format!("the admin API at {url}"));
    assert_eq!(v["plan"], "p");
}

fn check_interval_log(path: &std::path::Path, recorded: &[f64]) {
    let bytes = std::fs::read(path).expect("the interval log of acme");
    let mut total: Histogram<u64> = Histogram::new(2).unwrap();
    let mut de = Deserializer::new();
    let mut tags = Vec::new();
    for entry in IntervalLogIterator::new(&bytes) {
        let LogEntry::Interval(iv) = entry.expect("a log entry") else {
            continue;
        };
        let raw = base64::engine::general_purpose::STANDARD
            .decode(iv.encoded_histogram())
            .unwrap();
        let h: Histogram<u64> = de.deserialize(&mut raw.as_slice()).unwrap();
        let tag = iv.tag().map(|t| t.as_str().to_string());
        if tag.as_deref() == Some("total") {
            total.add(&h).unwrap();
        }
        tags.push(tag);
    }
    assert!(tags.contains(&Some("upstream".into())), "{tags:?}");
    assert_eq!(
        total.len(),
        recorded.len() as u64,
        "every request is in the log"
    );
    for q in [0.5, 0.9, 0.99, 1.0] {
        let (got, want) = (
            total.value_at_quantile(q) as f64 / 1000.0,
            exact(recorded, q),
        );
        assert!(
            close(got, want),
            "log q {q}: {got} ms vs recorded {want} ms"
        );
    }
    // And `searchgate latency --from-log` reads it the same way.
    let out = searchgate(&["latency", "--from-log", path.to_str().unwrap(), "--json"]);
    let v: Value = serde_json::from_str(&stdout_ok(&out)).unwrap();
    assert_eq!(v["total"]["count"], recorded.len());
}
