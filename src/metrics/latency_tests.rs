//! The latency report: its percentiles against recorded samples, its distribution text
//! against the summary, windows and spans.

use super::*;
use crate::metrics::distribution::parse_distribution;
use crate::metrics::window::{new_histogram, record_n};
use crate::metrics::{CoreMetrics, Sample};
use std::time::UNIX_EPOCH;

#[test]
fn the_distribution_has_hdrhistograms_columns_and_footer() {
    let mut h = new_histogram();
    for v in 1..=10_000u64 {
        h.record(v * 100).unwrap(); // 0.1 ms .. 1 s
    }
    let text = percentile_distribution(&h, MS);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "       Value     Percentile TotalCount 1/(1-Percentile)"
    );
    assert_eq!(lines[1], "");
    // First row: the smallest value at percentile 0.
    assert_eq!(
        lines[2],
        "       0.100 0.000000000000          1           1.00"
    );
    let rows = parse_distribution(&text).unwrap();
    assert!(rows.len() > 50);
    let last = rows.last().unwrap();
    assert_eq!(last.quantile, 1.0);
    assert_eq!(last.total_count, 10_000);
    let last_line = lines.iter().rev().find(|l| !l.starts_with('#')).unwrap();
    assert_eq!(
        last_line.split_whitespace().count(),
        3,
        "no 1/(1-p) at 100%"
    );
    assert!(rows
        .windows(2)
        .all(|w| w[0].quantile <= w[1].quantile && w[0].total_count <= w[1].total_count));
    for r in &rows {
        let expect = h.value_at_quantile(r.quantile) as f64 / MS;
        assert!((r.value - expect).abs() < 0.0015, "{r:?} vs {expect}");
    }
    // 50% is reached at 500 ms (within 1%) after 5,000 values.
    let p50 = rows.iter().find(|r| r.quantile == 0.5).unwrap();
    assert!(
        (p50.value - 500.0).abs() <= 5.0 && p50.total_count >= 5_000,
        "{p50:?}"
    );
    let footer: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("#["))
        .copied()
        .collect();
    assert_eq!(footer.len(), 4);
    assert!(footer[0].starts_with("#[Mean    = ") && footer[0].contains(", StdDeviation   = "));
    assert!(
        footer[1].starts_with("#[Max     = ")
            && footer[1].ends_with(", Total count    =        10000]")
    );
    assert!(
        footer[2].starts_with("#[Buckets = ")
            && footer[2].ends_with(", SubBuckets     =          256]")
    );
    // The percentiles as the summary prints them: the same figures, one computation.
    let p = Percentiles::of(&h);
    assert_eq!(
        footer[3],
        format!(
            "#[p50 = {:.3}, p90 = {:.3}, p99 = {:.3}, p99.9 = {:.3}, p99.99 = {:.3}, p99.999 = {:.3}]",
            p.p50, p.p90, p.p99, p.p99_9, p.p99_99, p.p99_999
        )
    );
    let mean: f64 = footer[0][12..24].trim().parse().unwrap();
    assert!((mean - 500.05).abs() < 5.0, "{mean}");
}

#[test]
fn report_percentiles_match_the_recorded_samples_within_hdr_precision() {
    let hub = MetricsHub::default();
    let mut core = CoreMetrics::default();
    let mut exact: Vec<u64> = Vec::new();
    let mut x = 12345u64;
    for _ in 0..20_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let us = 200 + (x >> 33) % 50_000; // 0.2 .. 50 ms
        exact.push(us);
        core.record(
            "acme",
            &Sample {
                status: 200,
                total_us: us,
                upstream_us: Some(us / 2),
                ..Sample::default()
            },
        );
    }
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    hub.absorb_at(&mut core, now);
    let r = report(&hub, "acme", Duration::from_secs(300), now);
    exact.sort_unstable();
    let at = |q: f64| {
        exact[((q * exact.len() as f64).ceil() as usize).clamp(1, exact.len()) - 1] as f64 / MS
    };
    for (q, got) in [
        (0.5, r.total.p50),
        (0.9, r.total.p90),
        (0.99, r.total.p99),
        (0.999, r.total.p99_9),
        (0.99999, r.total.p99_999),
    ] {
        let want = at(q);
        assert!(
            (got - want).abs() <= want * 0.01 + 0.001,
            "q {q}: {got} vs {want}"
        );
    }
    assert_eq!(r.total.count, 20_000);
    assert_eq!(r.upstream.as_ref().unwrap().count, 20_000);
    assert_eq!(r.queue.as_ref().unwrap().count, 0);
    assert!((r.total.max_ms - *exact.last().unwrap() as f64 / MS).abs() <= r.total.max_ms * 0.01);
    assert_eq!(r.histogram(Metric::Total).len(), 20_000);

    let json = serde_json::to_value(&r).unwrap();
    for k in ["p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "max_ms"] {
        assert!(json["total"][k].is_f64(), "{k}");
    }
    assert_eq!(json["window_secs"], 300);
    assert_eq!(json["cluster"], "acme");
    assert!(json["distribution"]
        .as_str()
        .unwrap()
        .starts_with("       Value"));
    assert!(r.summary_table().lines().count() == 4);

    // One interval: the open minute, 20 s old (1,700,000,000 s is 20 s past a minute).
    assert_eq!(r.requests.len(), 1);
    assert_eq!(r.requests[0].requests, 20_000);
    assert_eq!(r.peak_rps, Some(1_000.0));
    assert_eq!(json["requests"][0]["requests"], 20_000);
    assert_eq!(json["peak_rps"], 1_000.0);

    // Read back from its JSON: the same figures, rebuilt from the encoded histograms.
    let back = LatencyReport::from_json(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back.total, r.total);
    assert_eq!(back.upstream, r.upstream);
    assert_eq!(back.distribution, r.distribution);
    assert_eq!(back.requests, r.requests);
    assert_eq!(
        back.histogram(Metric::Upstream),
        r.histogram(Metric::Upstream)
    );
    assert!(LatencyReport::from_json(r#"{"cluster":"x"}"#).is_err());

    let none = report(&hub, "nobody", Duration::from_secs(60), now);
    assert_eq!(none.total.count, 0);
    assert_eq!(none.from_unix_ms, None);
    assert_eq!(none.peak_rps, None);
}

#[test]
fn the_peak_is_the_busiest_interval_counted_over_at_least_a_second() {
    let iv = |from: u64, to: u64, requests: u64| IntervalCount {
        from_unix_ms: from,
        to_unix_ms: to,
        requests,
    };
    assert_eq!(peak_rps(&[]), None);
    let minutes = [
        iv(0, 60_000, 600),
        iv(60_000, 120_000, 1_200),
        iv(120_000, 120_500, 50),
    ];
    assert_eq!(peak_rps(&minutes), Some(50.0));
    assert_eq!(peak_rps(&minutes[..2]), Some(20.0));
}

#[test]
fn a_report_of_whole_requests_only_has_no_queue_or_upstream_figures() {
    let mut h = new_histogram();
    record_n(&mut h, 1_000, 10);
    let r = LatencyReport::from_histograms(
        "run",
        Duration::ZERO,
        None,
        [h, new_histogram(), new_histogram()],
    )
    .whole_requests_only();
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["total"]["count"], 10);
    assert!(json.get("queue").is_none() && json.get("upstream").is_none());
    let table = r.summary_table();
    assert!(table.lines().nth(1).unwrap().starts_with("total "));
    assert!(!table.contains("\nqueue ") && !table.contains("\nupstream "));
    assert!(table.contains("whole requests only"), "{table}");
    // Read back, it stays so; a cluster's report keeps its three metrics.
    let back = LatencyReport::from_json(&json.to_string()).unwrap();
    assert_eq!((back.queue, back.upstream), (None, None));
    assert_eq!(back.total, r.total);
}

#[test]
fn spans_are_written_as_a_person_reads_them() {
    assert_eq!(format_utc(1_800_000_006_980), "2027-01-15T08:00:07Z");
    assert_eq!(format_utc(1_800_000_015_000), "2027-01-15T08:00:15Z");
    assert_eq!(format_utc(1_800_000_015_499), "2027-01-15T08:00:15Z");
    for (secs, text) in [
        (4.0, "4.00 s"),
        (300.0, "5m"),
        (330.0, "5m30s"),
        (3600.0, "1h"),
        (3660.0, "1h1m"),
        (3630.0, "1h0m30s"),
    ] {
        assert_eq!(format_secs(secs), text);
    }
}

#[test]
fn windows_are_parsed_and_bounded() {
    assert_eq!(parse_window("5m"), Ok(Duration::from_secs(300)));
    assert_eq!(parse_window("1h"), Ok(MAX_WINDOW));
    assert!(parse_window("61m").is_err());
    assert!(parse_window("0s").is_err());
    assert_eq!(parse_window("300s"), Ok(Duration::from_secs(300)));
    assert_eq!(parse_window("1m"), Ok(Duration::from_secs(60)));
    // Not whole minutes: the report could not cover what they say.
    for w in ["10s", "30s", "90s", "59s"] {
        let e = parse_window(w).unwrap_err();
        assert!(e.contains("whole minutes from 1m to 60m"), "{e}");
    }
    assert!(parse_window("five").is_err());
}
