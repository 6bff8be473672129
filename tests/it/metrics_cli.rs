//! `searchgate latency` on the files the edge and the load tests leave behind: an interval
//! log written by the hub's log writer, and wrk's latency counts. The distribution's
//! percentiles match the recorded samples within HdrHistogram's precision, the log round-
//! trips, and the plot is well-formed SVG with one line per metric.

use std::process::{Command, Output};
use std::time::{Duration, UNIX_EPOCH};

use searchgate::metrics::distribution::parse_distribution;
use searchgate::metrics::intervallog::{log_path, LogWriter};
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
    // Whole requests under the upstream's part of them, then the queue wait.
    assert_eq!(series, ["total", "upstream", "queue"]);

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
    // The span first: three minutes of the log, in UTC.
    assert!(
        text.starts_with(
            "acme: 6000 requests\n2023-11-14T22:14:00Z to 2023-11-14T22:17:00Z UTC (3m)\n"
        ),
        "{text}"
    );
    assert!(text.contains("\nms "));
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
    assert!(
        title.starts_with("Latency by percentile of plain-sg-uring-round1: "),
        "{title}"
    );

    let bad = dir.path().join("bad.counts");
    std::fs::write(&bad, "12 x\n").unwrap();
    let out = latency(&["--from-wrk", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1"));
}

/// Counts as loadtest/common.lua writes them for a run of `requests` over `duration_us`
/// ending at `end_s`: a 1 ms body and a tail to 150 ms.
fn wrk_counts(label: &str, target: &str, scale: u64, end_s: u64) -> String {
    let mut text = format!(
        "# wrk latency counts rebuilt from its percentiles: value_us count\n\
         # requests=20000 duration_us=4000000 end_unix_s={end_s}\n# label={label}\n# target={target}\n"
    );
    let mut n = 0;
    for i in 0..19_800u64 {
        text.push_str(&format!("{} 1\n", (800 + i % 400) * scale));
        n += 1;
    }
    for i in 0..200u64 {
        text.push_str(&format!("{} 1\n", (2_000 + i * 740) * scale));
        n += 1;
    }
    assert_eq!(n, 20_000);
    text
}

// issue 32: one computation of a run's percentiles: the summary `latency --from-wrk`
// prints, its JSON, and the `.hgrm` footer say the same figures
#[test]
fn a_runs_percentiles_are_the_same_in_the_summary_the_json_and_the_hgrm() {
    let dir = tempfile::tempdir().unwrap();
    let counts = dir.path().join("search-target-round1.counts");
    std::fs::write(
        &counts,
        wrk_counts(
            "search-target-round1",
            "https://u:****@localhost:9243",
            1,
            1_800_000_000,
        ),
    )
    .unwrap();
    let hgrm = dir.path().join("r.hgrm");
    let c = counts.to_str().unwrap();
    let text = ok(&latency(&[
        "--from-wrk",
        c,
        "--hgrm",
        hgrm.to_str().unwrap(),
    ]));
    let v: Value = serde_json::from_str(&ok(&latency(&["--from-wrk", c, "--json"]))).unwrap();
    let hgrm = std::fs::read_to_string(&hgrm).unwrap();
    let footer = hgrm
        .lines()
        .find(|l| l.starts_with("#[p50 = "))
        .expect("the percentiles in the .hgrm");
    let summary = text.lines().find(|l| l.starts_with("total ")).unwrap();
    let cols: Vec<&str> = summary.split_whitespace().collect();
    // total count p50 p90 p99 p99.9 p99.99 p99.999 max
    for (i, k) in [
        (2, "p50"),
        (3, "p90"),
        (4, "p99"),
        (5, "p99.9"),
        (6, "p99.99"),
        (7, "p99.999"),
    ] {
        let json = format!("{:.3}", v["total"][k].as_f64().unwrap());
        assert_eq!(cols[i], json, "{k} in the summary and the JSON");
        assert!(
            footer.contains(&format!("{k} = {json}")),
            "{k} = {json} in {footer}"
        );
    }
    // The header: requests, the run's span and rate, and where they went.
    assert!(
        text.starts_with(
            "search-target-round1: 20000 requests to https://u:****@localhost:9243\n\
         2027-01-15T07:59:56Z to 2027-01-15T08:00:00Z UTC (4.00 s)\nmean 5,000 req/s\n"
        ),
        "{text}"
    );
}

// issue 32: several runs on one chart, each in the legend with its figures; a log latency
// axis for a long tail; ticks at 90 %, 99 %, 99.9 %, 99.99 %; title with span, rate, target
#[test]
fn several_runs_go_on_one_readable_chart() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (i, scale) in [1u64, 2].iter().enumerate() {
        let label = format!("bulk-target-round{}", i + 1);
        let p = dir.path().join(format!("{label}.counts"));
        std::fs::write(
            &p,
            wrk_counts(
                &label,
                "https://u:****@h:9243",
                *scale,
                1_800_000_000 + 10 * i as u64,
            ),
        )
        .unwrap();
        files.push(p.to_str().unwrap().to_string());
    }
    let svg = dir.path().join("all.svg");
    let mut args = vec!["--from-wrk"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--plot", svg.to_str().unwrap()]);
    ok(&latency(&args));
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let series: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .filter_map(|n| n.attribute("data-series"))
        .collect();
    assert_eq!(
        series,
        ["bulk-target-round1 total", "bulk-target-round2 total"]
    );
    let strokes: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .filter_map(|n| n.attribute("stroke"))
        .collect();
    assert_ne!(strokes[0], strokes[1], "one colour per run");
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.is_element())
        .filter_map(|n| n.text())
        .collect();
    for want in ["90%", "99%", "99.9%", "99.99%", "latency (ms, log scale)"] {
        assert!(texts.contains(&want), "{want} in {texts:?}");
    }
    let legend: Vec<&str> = texts
        .iter()
        .copied()
        .filter(|t| t.starts_with("bulk-target-round"))
        .collect();
    assert_eq!(legend.len(), 2, "{legend:?}");
    assert!(
        legend[0].contains("20000 requests in 4.00 s (5,000 req/s); ms: p50 0.999"),
        "{legend:?}"
    );
    let title: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("title"))
        .filter_map(|n| n.text())
        .collect();
    assert!(
        title[0].starts_with("Latency by percentile of 2 inputs"),
        "{title:?}"
    );
    assert_eq!(title[1], "all to https://u:****@h:9243");
    assert!(
        title[2].starts_with("40000 requests, 2027-01-15T07:59:56Z to 2027-01-15T08:00:10Z UTC"),
        "{title:?}"
    );

    // --hgrm and --name describe one input.
    let mut args = vec!["--from-wrk"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--hgrm", "x.hgrm"]);
    let out = latency(&args);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("one input"));
}
