//! The latency report a capacity engineer reads: percentiles p50 … p99.999 and max of a
//! cluster's whole-request, queue-wait and upstream times over a recent window, and the
//! full percentile distribution (`distribution`: HdrHistogram's text format). Values are
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

use super::distribution::percentile_distribution;
use super::hub::MetricsHub;
use super::intervallog::{decode_histogram, encode_histogram};
use super::window::{new_histogram, IntervalCount, Metric, INTERVAL_MS, KEPT_INTERVALS};

/// µs per unit shown (milliseconds).
pub const MS: f64 = 1000.0;
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

#[cfg(test)]
#[path = "latency_tests.rs"]
mod tests;
