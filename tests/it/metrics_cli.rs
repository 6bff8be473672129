//! `searchgate latency` on the files the edge and the load tests leave behind: an interval
//! log written by the hub's log writer, and wrk's latency counts. The distribution's
//! percentiles match the recorded samples within HdrHistogram's precision, the log round-
//! trips, and the plot is well-formed SVG with one line per metric.

use std::process::{Command, Output};
use std::time::{Duration, UNIX_EPOCH};

use searchgate::metrics::intervallog::{log_path, LogWriter};
use searchgate::metrics::latency::parse_distribution;
use searchgate::metrics::{CoreMetrics, MetricsHub, Sample};
use serde_json::Value;

fn latency(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .arg("latency")
        .args(args)
        .output()
        .expect("run searchgate latency")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The value at quantile `q` of sorted `v` (nearest rank), in ms.
fn exact(v: &[u64], q: f64) -> f64 {
    v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1] as f64 / 1000.0
}

#[test]
fn an_interval_log_of_the_hub_reads_back_as_a_report_table_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let hub = MetricsHub::default();
    let mut core = CoreMetrics::default();
    let t0 = 1_700_000_040u64;
    let mut totals = Vec::new();
    // Three minutes of traffic, the third one slower.
    for minute in 0..3u64 {
        for i in 0..2_000u64 {
            let us = 300 + (i * 7919 % 4_000) * (minute + 1);
            totals.push(us);
            let queued = (i % 20 == 0).then_some(us / 4);
            core.record(
                "acme",
                &Sample {
                    status: 200,
                    total_us: us,
                    queued_us: queued,
                    upstream_us: Some(us / 2),
                    ..Sample::default()
                },
            );
        }
        hub.absorb_at(
            &mut core,
            UNIX_EPOCH + Duration::from_secs(t0 + minute * 60 + 30),
        );
    }
    hub.absorb_at(&mut core, UNIX_EPOCH + Duration::from_secs(t0 + 200)); // closes the third minute
    let mut w = LogWriter::new(dir.path()).unwrap();
    assert_eq!(
        w.write_new(&hub, UNIX_EPOCH + Duration::from_secs(t0 + 200))
            .unwrap(),
        9
    );
    let log = log_path(dir.path(), "acme");

    let svg = dir.path().join("acme.svg");
    let hgrm = dir.path().join("acme.hgrm");
    let out = latency(&[
        "--from-log",
        log.to_str().unwrap(),
        "--json",
        "--plot",
        svg.to_str().unwrap(),
        "--hgrm",
        hgrm.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(v["cluster"], "acme");
    assert_eq!(v["total"]["count"], 6000);
    assert_eq!(v["queue"]["count"], 300);
    assert_eq!(v["upstream"]["count"], 6000);
    totals.sort_unstable();
    for (q, k) in [
        (0.5, "p50"),
        (0.9, "p90"),
        (0.99, "p99"),
        (0.999, "p99.9"),
        (0.99999, "p99.999"),
    ] {
        let (got, want) = (v["total"][k].as_f64().unwrap(), exact(&totals, q));
        assert!(
            (got - want).abs() <= want * 0.01 + 0.001,
            "{k}: {got} vs {want}"
        );
    }
    assert_eq!(v["from_unix_ms"], t0 * 1000);
    assert_eq!(v["to_unix_ms"], (t0 + 180) * 1000);

    let rows = parse_distribution(&std::fs::read_to_string(&hgrm).unwrap()).unwrap();
    assert_eq!(rows.last().unwrap().total_count, 6000);
    let doc_text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&doc_text).expect("well-formed SVG");
    let series: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .filter_map(|n| n.attribute("data-series"))
        .collect();
    assert_eq!(series, ["total", "queue", "upstream"]);

    // The last minute only: the slow one.
    let last = latency(&[
        "--from-log",
        log.to_str().unwrap(),
        "--window",
        "1m",
        "--json",
    ]);
    let v: Value = serde_json::from_str(&ok(&last)).unwrap();
    assert_eq!(v["total"]["count"], 2000);
    // Its slowest request: 300 + 3,999 x 3 µs = 12.297 ms (the others stop at 8.298 ms).
    let max = v["total"]["max_ms"].as_f64().unwrap();
    assert!((max - 12.297).abs() <= 0.13, "{max}");

    // The default output: summary and HdrHistogram's table.
    let text = ok(&latency(&["--from-log", log.to_str().unwrap()]));
    assert!(text.starts_with("ms "));
    assert!(text.contains("       Value     Percentile TotalCount 1/(1-Percentile)"));
}

#[test]
fn wrk_counts_become_a_distribution_and_a_plot() {
    let dir = tempfile::tempdir().unwrap();
    let counts = dir.path().join("plain-sg-uring-round1.counts");
    let mut text = String::from("# wrk latency counts: value_us count\n");
    let mut all = Vec::new();
    for v in (400..5_000u64).step_by(13) {
        let n = 1 + v % 5;
        text.push_str(&format!("{v} {n}\n"));
        all.extend(std::iter::repeat_n(v, n as usize));
    }
    std::fs::write(&counts, text).unwrap();
    let (hgrm, svg) = (dir.path().join("r.hgrm"), dir.path().join("r.svg"));
    ok(&latency(&[
        "--from-wrk",
        counts.to_str().unwrap(),
        "--hgrm",
        hgrm.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]));
    let rows = parse_distribution(&std::fs::read_to_string(&hgrm).unwrap()).unwrap();
    assert_eq!(rows.last().unwrap().total_count, all.len() as u64);
    let p99 = rows.iter().find(|r| r.quantile >= 0.99).unwrap();
    let want = exact(&all, p99.quantile);
    assert!(
        (p99.value - want).abs() <= want * 0.01 + 0.001,
        "{p99:?} vs {want}"
    );
    let doc_text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&doc_text).unwrap();
    assert!(doc
        .descendants()
        .any(|n| n.attribute("data-series") == Some("total")));
    let title = doc
        .descendants()
        .find(|n| n.has_tag_name("title"))
        .unwrap()
        .text()
        .unwrap();
    assert!(title.starts_with("plain-sg-uring-round1"), "{title}");

    let bad = dir.path().join("bad.counts");
    std::fs::write(&bad, "12 x\n").unwrap();
    let out = latency(&["--from-wrk", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1"));
}
