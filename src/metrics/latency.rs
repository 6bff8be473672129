//! The latency report a capacity engineer reads: percentiles p50 … p99.999 and max of a
//! cluster's whole-request, queue-wait and upstream times over a recent window, and the
//! full percentile distribution in HdrHistogram's text format (the four columns `Value
//! Percentile TotalCount 1/(1-Percentile)` with its `#[Mean …]` footer, as Java's
//! `outputPercentileDistribution` prints it and HdrHistogram's plotter reads it). Values are
//! recorded in µs and shown in milliseconds.
//!
//! Pure: the admin API (`GET /v1/clusters/{id}/latency?window=`) and the `latency` CLI call
//! [`report`] and serialise the result; nothing here does I/O.
//!
//! Must not touch: the hub's internals (it asks `MetricsHub::latency`), sockets.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use serde::ser::SerializeMap as _;
use serde::{Deserialize, Serialize, Serializer};

use super::hub::MetricsHub;
use super::intervallog::{decode_histogram, encode_histogram};
use super::window::{new_histogram, IntervalCount, Metric, INTERVAL_MS, KEPT_INTERVALS};

/// µs per unit shown (milliseconds).
pub const MS: f64 = 1000.0;
/// Reporting points per halving of the distance to 100% (Java's default).
pub const TICKS_PER_HALF_DISTANCE: u32 = 5;
/// The longest window kept.
pub const MAX_WINDOW: Duration = Duration::from_millis(INTERVAL_MS * KEPT_INTERVALS as u64);

/// Percentiles of one metric, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    #[serde(rename = "p99.9")]
    pub p99_9: f64,
    #[serde(rename = "p99.99")]
    pub p99_99: f64,
    #[serde(rename = "p99.999")]
    pub p99_999: f64,
    pub max_ms: f64,
}

impl Percentiles {
    /// The percentiles of `h` (µs), shown in ms; all zero when `h` is empty.
    pub fn of(h: &Histogram<u64>) -> Percentiles {
        let q = |q: f64| {
            if h.is_empty() {
                0.0
            } else {
                h.value_at_quantile(q) as f64 / MS
            }
        };
        Percentiles {
            count: h.len(),
            min_ms: if h.is_empty() {
                0.0
            } else {
                h.min() as f64 / MS
            },
            mean_ms: if h.is_empty() { 0.0 } else { h.mean() / MS },
            p50: q(0.5),
            p75: q(0.75),
            p90: q(0.9),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
            p99_999: q(0.99999),
            max_ms: if h.is_empty() {
                0.0
            } else {
                h.max() as f64 / MS
            },
        }
    }
}

/// One cluster's latency over a window.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyReport {
    pub cluster: String,
    /// What the requests were sent to, when the source says (a load test's URL, password
    /// masked); absent for a cluster's own report.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// A load test's own duration, in µs (the span below is in whole ms): its rate is
    /// requests over this, as the load test computes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_us: Option<u64>,
    /// The window asked for.
    pub window_secs: u64,
    /// What the kept minutes cover (whole minutes: at least the window when that much was
    /// kept, less after a restart or when the memory budget dropped old minutes).
    pub from_unix_ms: Option<u64>,
    pub to_unix_ms: Option<u64>,
    /// Whole requests.
    pub total: Percentiles,
    /// Of the requests that waited for a concurrency slot; absent when the source times
    /// whole requests only (a load test's counts: no figure rather than a false zero).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<Percentiles>,
    /// Of the requests that reached the upstream; absent as `queue` is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Percentiles>,
    /// Requests per interval (a minute; the one still open ends at the moment of the
    /// report), oldest first; empty when the source has no intervals (a load test's counts).
    pub requests: Vec<IntervalCount>,
    /// The busiest interval's mean rate, requests per second (an interval counts over at
    /// least one second); `None` without intervals.
    pub peak_rps: Option<f64>,
    /// The whole-request percentile distribution, HdrHistogram text format, in ms.
    pub distribution: String,
    /// The three histograms (µs) in HdrHistogram's compressed encoding (V2 + deflate,
    /// base64, as in interval logs), by metric name: what a client needs to redraw or merge
    /// them at full precision.
    #[serde(serialize_with = "encoded")]
    histograms: [Histogram<u64>; 3],
}

fn encoded<S: Serializer>(h: &[Histogram<u64>; 3], s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(3))?;
    for m in Metric::ALL {
        map.serialize_entry(m.name(), &encode_histogram(&h[m as usize]))?;
    }
    map.end()
}

/// The fields of a serialised report a client rebuilds it from.
#[derive(Debug, Deserialize)]
struct Wire {
    cluster: String,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    duration_us: Option<u64>,
    window_secs: u64,
    from_unix_ms: Option<u64>,
    to_unix_ms: Option<u64>,
    #[serde(default)]
    requests: Vec<IntervalCount>,
    histograms: WireHistograms,
    /// Absent in a report of whole requests only (with `upstream`).
    #[serde(default)]
    queue: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Deserialize)]
struct WireHistograms {
    total: String,
    queue: String,
    upstream: String,
}

impl LatencyReport {
    /// A report of the given histograms (total, queue, upstream; µs).
    pub fn from_histograms(
        cluster: &str,
        window: Duration,
        span: Option<(u64, u64)>,
        histograms: [Histogram<u64>; 3],
    ) -> LatencyReport {
        LatencyReport {
            cluster: cluster.to_string(),
            target: None,
            duration_us: None,
            window_secs: window.as_secs(),
            from_unix_ms: span.map(|s| s.0),
            to_unix_ms: span.map(|s| s.1),
            total: Percentiles::of(&histograms[0]),
            queue: Some(Percentiles::of(&histograms[1])),
            upstream: Some(Percentiles::of(&histograms[2])),
            requests: Vec::new(),
            peak_rps: None,
            distribution: percentile_distribution(&histograms[0], MS),
            histograms,
        }
    }

    /// The report of a source that times whole requests only (a load test: the client
    /// sees neither the queue nor the upstream): no queue or upstream figures.
    pub fn whole_requests_only(mut self) -> LatencyReport {
        self.queue = None;
        self.upstream = None;
        self
    }

    /// The report with its requests per interval (and so its peak rate).
    pub fn with_requests(mut self, requests: Vec<IntervalCount>) -> LatencyReport {
        self.peak_rps = peak_rps(&requests);
        self.requests = requests;
        self
    }

    /// A report read back from its JSON (the admin API's answer): rebuilt from the encoded
    /// histograms, so every figure is computed here exactly as where it was made.
    pub fn from_json(text: &str) -> Result<LatencyReport, String> {
        let w: Wire =
            serde_json::from_str(text).map_err(|e| format!("not a latency report: {e}"))?;
        let decode = |name: &str, text: &str| {
            decode_histogram(text).map_err(|e| format!("histogram `{name}`: {e}"))
        };
        let h = [
            decode("total", &w.histograms.total)?,
            decode("queue", &w.histograms.queue)?,
            decode("upstream", &w.histograms.upstream)?,
        ];
        let span = w.from_unix_ms.zip(w.to_unix_ms);
        let window = Duration::from_secs(w.window_secs);
        let mut r = LatencyReport::from_histograms(&w.cluster, window, span, h);
        if w.queue.is_none() {
            r = r.whole_requests_only();
        }
        r.target = w.target;
        r.duration_us = w.duration_us;
        Ok(r.with_requests(w.requests))
    }

    /// The report with the target its requests were sent to.
    pub fn with_target(mut self, target: Option<String>) -> LatencyReport {
        self.target = target;
        self
    }

    /// The time the report covers, in seconds (`None`: the source did not record it).
    pub fn span_secs(&self) -> Option<f64> {
        if let Some(us) = self.duration_us {
            return Some(us as f64 / 1e6);
        }
        let (from, to) = self.from_unix_ms.zip(self.to_unix_ms)?;
        Some(to.saturating_sub(from) as f64 / 1000.0)
    }

    /// Requests per second over the span covered (`None` without a span).
    pub fn mean_rps(&self) -> Option<f64> {
        let secs = self.span_secs()?;
        Some(self.total.count as f64 / secs.max(0.001))
    }

    /// What the report covers, in words: requests, the span (UTC) and what it is of the
    /// window asked for, the mean and peak rates, and the target. One line per item.
    pub fn header(&self) -> Vec<String> {
        let mut lines = vec![match &self.target {
            Some(t) => format!("{}: {} requests to {t}", self.cluster, self.total.count),
            None => format!("{}: {} requests", self.cluster, self.total.count),
        }];
        let (Some((from, to)), Some(secs)) =
            (self.from_unix_ms.zip(self.to_unix_ms), self.span_secs())
        else {
            lines.push(if self.window_secs > 0 {
                format!(
                    "no request in the last {}",
                    format_secs(self.window_secs as f64)
                )
            } else {
                "the time span of these requests was not recorded".to_string()
            });
            return lines;
        };
        let mut span = format!(
            "{} to {} UTC ({})",
            format_utc(from),
            format_utc(to),
            format_secs(secs)
        );
        if self.window_secs > 0 {
            let w = format_secs(self.window_secs as f64);
            if secs + 0.5 >= self.window_secs as f64 {
                span += &format!(": the last {w}, rounded out to whole minutes");
            } else {
                span += &format!(" of the last {w}: the minutes before had no figures");
            }
        }
        lines.push(span);
        let mut rate = format!(
            "mean {} req/s",
            format_rate(self.mean_rps().unwrap_or_default())
        );
        if let Some(peak) = self.peak_rps.filter(|_| self.requests.len() > 1) {
            rate += &format!(", busiest minute {} req/s", format_rate(peak));
        }
        lines.push(rate);
        lines
    }

    /// The histogram of one metric (µs).
    pub fn histogram(&self, m: Metric) -> &Histogram<u64> {
        &self.histograms[m as usize]
    }

    /// The whole-request distribution as HdrHistogram's text table.
    pub fn percentile_table(&self) -> &str {
        &self.distribution
    }

    /// A short human summary: one line per metric the source measured.
    pub fn summary_table(&self) -> String {
        let mut s = format!(
            "{:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
            "ms", "count", "p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "max"
        );
        for (name, p) in [
            ("total", Some(&self.total)),
            ("queue", self.queue.as_ref()),
            ("upstream", self.upstream.as_ref()),
        ] {
            let Some(p) = p else { continue };
            let _ = writeln!(
                s,
                "{name:<10} {:>9} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
                p.count, p.p50, p.p90, p.p99, p.p99_9, p.p99_99, p.p99_999, p.max_ms
            );
        }
        if self.queue.is_none() {
            s.push_str("(whole requests only: a load test sees no queue wait or upstream time)\n");
        }
        s
    }
}

/// `cluster`'s report over the `window` before `now`; empty (count 0) when the hub has no
/// request of it in that time. The caller checks that the cluster exists.
pub fn report(hub: &MetricsHub, cluster: &str, window: Duration, now: SystemTime) -> LatencyReport {
    let window = window.min(MAX_WINDOW);
    match hub.latency(cluster, window, now) {
        Some(w) => LatencyReport::from_histograms(cluster, window, w.span, w.histograms)
            .with_requests(w.requests),
        None => {
            let empty = [new_histogram(), new_histogram(), new_histogram()];
            LatencyReport::from_histograms(cluster, window, None, empty)
        }
    }
}

/// The busiest interval's mean rate in requests per second (each interval counted over at
/// least a second, so a just-opened one cannot claim a huge rate).
pub fn peak_rps(intervals: &[IntervalCount]) -> Option<f64> {
    intervals
        .iter()
        .map(|i| {
            let secs = (i.to_unix_ms.saturating_sub(i.from_unix_ms) as f64 / 1000.0).max(1.0);
            i.requests as f64 / secs
        })
        .reduce(f64::max)
}

/// Parses a window: whole minutes from `1m` to `60m` (`1h`), as `5m`, `300s` or `1h`. The
/// window counts one-minute intervals, so a window that is not a whole number of minutes
/// could not mean what it says and is refused.
pub fn parse_window(text: &str) -> Result<Duration, String> {
    let max = MAX_WINDOW.as_secs() / 60;
    let why = || {
        format!(
            "window `{text}`: whole minutes from 1m to {max}m (1h), e.g. 5m; latency is kept in one-minute intervals"
        )
    };
    let d = crate::config::parse_duration(text).map_err(|_| why())?;
    if d < Duration::from_secs(60) || d > MAX_WINDOW || d.as_millis() % 60_000 != 0 {
        return Err(why());
    }
    Ok(d)
}

/// `2030-03-01T10:05:30Z` of milliseconds since the epoch.
fn format_utc(ms: u64) -> String {
    // To the nearest second (the text has no fraction): a run from 06.98 to 15.00 reads
    // `07 to 15 (8.02 s)`, not `06 to 15`.
    let ms = ms.saturating_add(500) / 1000 * 1000;
    crate::calendar::rfc3339_of_millis(i64::try_from(ms).unwrap_or(i64::MAX))
}

/// `4.00 s`, `5m30s`, `1h`, `1h0m30s`.
pub fn format_secs(secs: f64) -> String {
    if secs < 60.0 {
        return format!("{secs:.2} s");
    }
    let s = secs.round() as u64;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, m, 0) => format!("{m}m"),
        (0, m, r) => format!("{m}m{r}s"),
        (h, 0, 0) => format!("{h}h"),
        (h, m, 0) => format!("{h}h{m}m"),
        (h, m, r) => format!("{h}h{m}m{r}s"),
    }
}

/// A rate with three significant figures at least (`0.0500`, `12.3`, `3,086`).
pub fn format_rate(r: f64) -> String {
    if r >= 100.0 {
        let n = r.round() as u64;
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else if r >= 10.0 {
        format!("{r:.1}")
    } else if r >= 1.0 {
        format!("{r:.2}")
    } else {
        format!("{r:.4}")
    }
}

/// HdrHistogram's percentile distribution of `h`, values divided by `scale`.
pub fn percentile_distribution(h: &Histogram<u64>, scale: f64) -> String {
    let mut s = format!(
        "{:>12} {:>14} {:>10} {:>14}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    if !h.is_empty() {
        let mut total = 0u64;
        for v in h.iter_quantiles(TICKS_PER_HALF_DISTANCE) {
            total += v.count_since_last_iteration();
            let value = v.value_iterated_to() as f64 / scale;
            let q = v.quantile_iterated_to();
            if q < 1.0 {
                let _ = writeln!(
                    s,
                    "{value:12.3} {q:2.12} {total:10} {:14.2}",
                    1.0 / (1.0 - q)
                );
            } else {
                let _ = writeln!(s, "{value:12.3} {q:2.12} {total:10}");
            }
        }
    }
    let (mean, sd, max) = if h.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        (h.mean() / scale, h.stdev() / scale, h.max() as f64 / scale)
    };
    let buckets = u64::from(h.buckets());
    let sub_buckets = 2 * h.distinct_values() as u64 / (buckets + 1);
    let _ = write!(
        s,
        "#[Mean    = {mean:12.3}, StdDeviation   = {sd:12.3}]\n\
         #[Max     = {max:12.3}, Total count    = {:12}]\n\
         #[Buckets = {buckets:12}, SubBuckets     = {sub_buckets:12}]\n",
        h.len()
    );
    // The summary's percentiles (`Percentiles::of`, the same quantiles of the same
    // histogram), so the file says what the report and the load test print.
    let at = |q: f64| {
        if h.is_empty() {
            0.0
        } else {
            h.value_at_quantile(q) as f64 / scale
        }
    };
    let _ = writeln!(
        s,
        "#[p50 = {:.3}, p90 = {:.3}, p99 = {:.3}, p99.9 = {:.3}, p99.99 = {:.3}, p99.999 = {:.3}]",
        at(0.5),
        at(0.9),
        at(0.99),
        at(0.999),
        at(0.9999),
        at(0.99999)
    );
    s
}

/// One row of a percentile distribution read back from its text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DistributionRow {
    pub value: f64,
    pub quantile: f64,
    pub total_count: u64,
}

/// Reads the rows of a percentile distribution text (header, footer and blank lines
/// skipped); an error names the first line that is not a row.
pub fn parse_distribution(text: &str) -> Result<Vec<DistributionRow>, String> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with("Value") {
            continue;
        }
        let cols: Vec<&str> = t.split_whitespace().collect();
        let bad = || format!("line {}: not a distribution row: {line}", i + 1);
        if !(3..=4).contains(&cols.len()) {
            return Err(bad());
        }
        rows.push(DistributionRow {
            value: cols[0].parse().map_err(|_| bad())?,
            quantile: cols[1].parse().map_err(|_| bad())?,
            total_count: cols[2].parse().map_err(|_| bad())?,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn an_empty_histogram_prints_header_and_footer_only() {
        let text = percentile_distribution(&new_histogram(), MS);
        assert!(parse_distribution(&text).unwrap().is_empty());
        assert!(text.contains("Total count    =            0]"));
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
        assert!(
            (r.total.max_ms - *exact.last().unwrap() as f64 / MS).abs() <= r.total.max_ms * 0.01
        );
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

    #[test]
    fn a_row_that_is_not_a_row_is_named() {
        let e = parse_distribution("Value Percentile\n\n1.0 0.5 3 2.0\nbogus line here now x\n")
            .unwrap_err();
        assert!(e.starts_with("line 4"), "{e}");
    }
}
