//! Latency distributions over recent time, per cluster, at HdrHistogram precision: a ring
//! of one-minute intervals (the last hour at most) under a byte budget.
//!
//! Each interval stores, for each cluster and metric, the count of every HdrHistogram
//! value class seen (the class's lowest equivalent value, 2 significant figures). The open
//! interval counts in a hash map; a closed one becomes two sorted arrays (12 bytes per
//! class) shared read-only (`Arc`) with the interval-log writer. A quiet cluster costs
//! nothing; a busy one at most the ~2,000 classes between 1 µs and 60 s per metric and
//! minute. When the intervals outgrow the budget the oldest go first, so memory stays
//! bounded with any number of clusters, and a report says which span it covers.
//!
//! Must not touch: the cumulative counters (see `hub`), files, sockets.

use std::collections::VecDeque;
use std::sync::Arc;

use hdrhistogram::Histogram;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Length of one interval.
pub const INTERVAL_MS: u64 = 60_000;
/// Intervals kept at most (one hour).
pub const KEPT_INTERVALS: usize = 60;
/// Default byte budget of the kept intervals.
pub const DEFAULT_BUDGET: usize = 128 << 20;
/// Significant figures of every latency histogram.
pub const SIGFIG: u8 = 2;

/// Values (µs) above this are counted at this value (17.9 minutes; far beyond any deadline).
const MAX_VALUE: u64 = (1 << 30) - 1;
/// Approximate bytes of one entry of the open interval's map (key, count, control byte,
/// load factor).
const OPEN_ENTRY_BYTES: usize = 16;

/// What a histogram measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Whole request.
    Total = 0,
    /// Wait for an allowance slot (requests that queued).
    Queue = 1,
    /// Allowance slot held: upstream exchange and relay.
    Upstream = 2,
}

impl Metric {
    pub const ALL: [Metric; 3] = [Metric::Total, Metric::Queue, Metric::Upstream];

    /// The tag used in interval logs and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Total => "total",
            Metric::Queue => "queue",
            Metric::Upstream => "upstream",
        }
    }
}

fn key(cluster: u32, metric: Metric, class: u64) -> u64 {
    (u64::from(cluster) << 32) | ((metric as u64) << 30) | class
}

fn split(key: u64) -> (u32, usize, u64) {
    (
        (key >> 32) as u32,
        ((key >> 30) & 3) as usize,
        key & MAX_VALUE,
    )
}

/// Adds `n` counts of `value` to `h`, growing it as needed (clamped only past its limits).
pub fn record_n(h: &mut Histogram<u64>, value: u64, n: u64) {
    if h.record_n(value, n).is_err() {
        h.saturating_record_n(value, n);
    }
}

/// A new empty histogram of the kind every report uses.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new(SIGFIG).expect("2 significant figures is valid")
}

/// The requests of one cluster in one interval (its whole-request samples).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntervalCount {
    pub from_unix_ms: u64,
    /// The interval's end; for the open interval, the moment it was read.
    pub to_unix_ms: u64,
    pub requests: u64,
}

/// One closed interval, read-only.
#[derive(Debug)]
pub struct SealedInterval {
    pub start_ms: u64,
    pub end_ms: u64,
    keys: Vec<u64>,
    counts: Vec<u32>,
}

impl SealedInterval {
    /// Adds `cluster`'s counts of this interval to `into` (one histogram per metric).
    pub fn add_to(&self, cluster: u32, into: &mut [Histogram<u64>; 3]) {
        let lo = self
            .keys
            .partition_point(|&k| k < key(cluster, Metric::Total, 0));
        let hi = self
            .keys
            .partition_point(|&k| k < key(cluster + 1, Metric::Total, 0));
        for (&k, &n) in self.keys[lo..hi].iter().zip(&self.counts[lo..hi]) {
            let (_, m, class) = split(k);
            record_n(&mut into[m], class.max(1), u64::from(n));
        }
    }

    /// `cluster`'s whole requests in this interval.
    pub fn requests(&self, cluster: u32) -> u64 {
        let lo = self
            .keys
            .partition_point(|&k| k < key(cluster, Metric::Total, 0));
        let hi = self
            .keys
            .partition_point(|&k| k < key(cluster, Metric::Queue, 0));
        self.counts[lo..hi].iter().map(|&n| u64::from(n)).sum()
    }

    /// The clusters (hub numbers) with counts in this interval, ascending.
    pub fn clusters(&self) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        for &k in &self.keys {
            let c = (k >> 32) as u32;
            if out.last() != Some(&c) {
                out.push(c);
            }
        }
        out
    }

    fn bytes(&self) -> usize {
        self.keys.capacity() * 8 + self.counts.capacity() * 4
    }
}

#[derive(Debug)]
struct OpenInterval {
    start_ms: u64,
    entries: FxHashMap<u64, u32>,
}

/// The ring of intervals.
#[derive(Debug)]
pub struct Window {
    /// Gives each value its HdrHistogram class (lowest equivalent value).
    classes: Histogram<u32>,
    open: Option<OpenInterval>,
    sealed: VecDeque<Arc<SealedInterval>>,
    sealed_bytes: usize,
    budget: usize,
    /// Intervals dropped for the budget (not for age).
    pub evicted: u64,
}

impl Window {
    /// An empty window keeping at most about `budget` bytes.
    pub fn new(budget: usize) -> Window {
        Window {
            classes: Histogram::new(SIGFIG).expect("2 significant figures is valid"),
            open: None,
            sealed: VecDeque::new(),
            sealed_bytes: 0,
            budget,
            evicted: 0,
        }
    }

    /// Counts `value_us` of `cluster`'s `metric` in the interval of `now_ms`.
    #[inline]
    pub fn record(&mut self, now_ms: u64, cluster: u32, metric: Metric, value_us: u64) {
        let class = self.classes.lowest_equivalent(value_us.clamp(1, MAX_VALUE));
        let open = match &mut self.open {
            Some(o) if now_ms < o.start_ms + INTERVAL_MS => o,
            _ => self.open_at(now_ms),
        };
        let c = open.entries.entry(key(cluster, metric, class)).or_insert(0);
        *c = c.saturating_add(1);
    }

    fn open_at(&mut self, now_ms: u64) -> &mut OpenInterval {
        self.seal(now_ms);
        self.open.insert(OpenInterval {
            start_ms: now_ms - now_ms % INTERVAL_MS,
            entries: FxHashMap::default(),
        })
    }

    /// Closes the open interval if its minute is over (or it alone outgrew the budget),
    /// then drops intervals older than an hour and, oldest first, what exceeds the budget.
    pub fn roll(&mut self, now_ms: u64) {
        let over = self.open.as_ref().is_some_and(|o| {
            now_ms >= o.start_ms + INTERVAL_MS
                || o.entries.capacity() * OPEN_ENTRY_BYTES > self.budget
        });
        if over {
            self.seal(now_ms);
        }
        let oldest = now_ms.saturating_sub(KEPT_INTERVALS as u64 * INTERVAL_MS);
        while self.sealed.front().is_some_and(|s| s.end_ms <= oldest)
            || self.sealed.len() > KEPT_INTERVALS
        {
            self.drop_oldest();
        }
        while self.bytes() > self.budget && !self.sealed.is_empty() {
            self.drop_oldest();
            self.evicted += 1;
        }
    }

    fn drop_oldest(&mut self) {
        if let Some(s) = self.sealed.pop_front() {
            self.sealed_bytes -= s.bytes();
        }
    }

    /// Closes the open interval at `now_ms`, before its minute is over (at shutdown, so its
    /// samples reach the interval log). A sample recorded later opens a new interval.
    pub fn close_open(&mut self, now_ms: u64) {
        self.seal(now_ms);
    }

    fn seal(&mut self, now_ms: u64) {
        let Some(open) = self.open.take() else { return };
        let mut pairs: Vec<(u64, u32)> = open.entries.into_iter().collect();
        pairs.sort_unstable_by_key(|p| p.0);
        let sealed = SealedInterval {
            start_ms: open.start_ms,
            end_ms: now_ms
                .min(open.start_ms + INTERVAL_MS)
                .max(open.start_ms + 1),
            keys: pairs.iter().map(|p| p.0).collect(),
            counts: pairs.iter().map(|p| p.1).collect(),
        };
        self.sealed_bytes += sealed.bytes();
        self.sealed.push_back(Arc::new(sealed));
    }

    /// Bytes held (approximately: arrays by capacity, the open map by entries).
    pub fn bytes(&self) -> usize {
        let open = self
            .open
            .as_ref()
            .map_or(0, |o| o.entries.capacity() * OPEN_ENTRY_BYTES);
        self.sealed_bytes + open
    }

    /// `cluster`'s histograms (total, queue, upstream) over the intervals that end after
    /// `since_ms`, and the span `(from_ms, to_ms)` they cover (`None`: no interval).
    pub fn histograms(
        &self,
        cluster: u32,
        since_ms: u64,
        now_ms: u64,
    ) -> ([Histogram<u64>; 3], Option<(u64, u64)>) {
        let mut h = [new_histogram(), new_histogram(), new_histogram()];
        let mut span: Option<(u64, u64)> = None;
        let mut widen = |from: u64, to: u64| {
            span = Some(span.map_or((from, to), |(a, b)| (a.min(from), b.max(to))));
        };
        for s in self.sealed.iter().filter(|s| s.end_ms > since_ms) {
            s.add_to(cluster, &mut h);
            widen(s.start_ms, s.end_ms);
        }
        if let Some(o) = self.open.as_ref().filter(|_| now_ms > since_ms) {
            for (&k, &n) in &o.entries {
                let (c, m, class) = split(k);
                if c == cluster {
                    record_n(&mut h[m], class.max(1), u64::from(n));
                }
            }
            widen(o.start_ms, now_ms.max(o.start_ms));
        }
        (h, span)
    }

    /// `cluster`'s requests per interval, over the intervals that end after `since_ms`,
    /// oldest first (intervals without any of its requests left out).
    pub fn requests(&self, cluster: u32, since_ms: u64, now_ms: u64) -> Vec<IntervalCount> {
        let mut out: Vec<IntervalCount> = self
            .sealed
            .iter()
            .filter(|s| s.end_ms > since_ms)
            .map(|s| IntervalCount {
                from_unix_ms: s.start_ms,
                to_unix_ms: s.end_ms,
                requests: s.requests(cluster),
            })
            .collect();
        if let Some(o) = self.open.as_ref().filter(|_| now_ms > since_ms) {
            let requests = o
                .entries
                .iter()
                .filter(|(&k, _)| {
                    let (c, m, _) = split(k);
                    c == cluster && m == Metric::Total as usize
                })
                .map(|(_, &n)| u64::from(n))
                .sum();
            out.push(IntervalCount {
                from_unix_ms: o.start_ms,
                to_unix_ms: now_ms.max(o.start_ms),
                requests,
            });
        }
        out.retain(|i| i.requests > 0);
        out
    }

    /// Closed intervals that started after `after_ms` (all when `None`), oldest first.
    pub fn sealed_after(&self, after_ms: Option<u64>) -> Vec<Arc<SealedInterval>> {
        self.sealed
            .iter()
            .filter(|s| after_ms.is_none_or(|a| s.start_ms > a))
            .cloned()
            .collect()
    }

    /// The span of time the kept intervals cover, in ms.
    pub fn covered_ms(&self, now_ms: u64) -> u64 {
        let first = self
            .sealed
            .front()
            .map(|s| s.start_ms)
            .or(self.open.as_ref().map(|o| o.start_ms));
        first.map_or(0, |f| now_ms.saturating_sub(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_040_000; // a minute boundary

    #[test]
    fn a_window_sums_the_intervals_it_reaches_and_only_the_asked_cluster() {
        let mut w = Window::new(DEFAULT_BUDGET);
        for i in 0..3u64 {
            let at = T0 + i * INTERVAL_MS + 10;
            for v in 1..=100 {
                w.record(at, 7, Metric::Total, v * 10);
            }
            w.record(at, 8, Metric::Total, 999_999);
            w.record(at, 7, Metric::Upstream, 500);
            w.roll(at + 1);
        }
        let now = T0 + 2 * INTERVAL_MS + 20;
        // Since the end of the first minute: the open interval and the one closed before it.
        let (h, span) = w.histograms(7, T0 + INTERVAL_MS, now);
        assert_eq!(h[0].len(), 200);
        assert_eq!(h[2].len(), 2);
        assert_eq!(h[1].len(), 0);
        assert!(h[0].equivalent(h[0].max(), 1000));
        assert_eq!(span, Some((T0 + INTERVAL_MS, now)));
        // All of it.
        let (h, _) = w.histograms(7, 0, now);
        assert_eq!(h[0].len(), 300);
        let p50 = h[0].value_at_quantile(0.5);
        assert!((495..=505).contains(&p50), "p50 {p50}");
        let (other, _) = w.histograms(8, 0, now);
        assert_eq!(other[0].len(), 3);
        assert!(h[0].equivalent(other[0].max(), 999_999) || other[0].max() >= 999_999);
    }

    #[test]
    fn requests_per_interval_count_whole_requests_of_the_cluster_only() {
        let mut w = Window::new(DEFAULT_BUDGET);
        for i in 0..3u64 {
            let at = T0 + i * INTERVAL_MS + 10;
            for v in 0..(10 * (i + 1)) {
                w.record(at, 7, Metric::Total, 100 + v);
                w.record(at, 7, Metric::Upstream, 50);
                w.record(at, 7, Metric::Queue, 5);
            }
            w.record(at, 6, Metric::Total, 1);
            w.record(at, 8, Metric::Total, 1);
            w.roll(at + 1);
        }
        let now = T0 + 2 * INTERVAL_MS + 30_000;
        let counts = w.requests(7, 0, now);
        let want: Vec<(u64, u64, u64)> = vec![
            (T0, T0 + INTERVAL_MS, 10),
            (T0 + INTERVAL_MS, T0 + 2 * INTERVAL_MS, 20),
            (T0 + 2 * INTERVAL_MS, now, 30),
        ];
        let got: Vec<(u64, u64, u64)> = counts
            .iter()
            .map(|c| (c.from_unix_ms, c.to_unix_ms, c.requests))
            .collect();
        assert_eq!(got, want);
        assert_eq!(w.requests(7, T0 + INTERVAL_MS, now).len(), 2);
        assert!(w.requests(9, 0, now).is_empty());
        // Closing the open interval early keeps its samples, ending it at that moment.
        w.close_open(now);
        let sealed = w.sealed_after(Some(T0 + INTERVAL_MS));
        assert_eq!(sealed.len(), 1);
        assert_eq!(
            (sealed[0].start_ms, sealed[0].end_ms),
            (T0 + 2 * INTERVAL_MS, now)
        );
        assert_eq!(sealed[0].requests(7), 30);
        assert_eq!(sealed[0].requests(8), 1);
    }

    #[test]
    fn counts_keep_hdr_precision() {
        let mut w = Window::new(DEFAULT_BUDGET);
        let mut exact = new_histogram();
        for v in (1..50_000u64).step_by(7) {
            let us = v * v % 3_000_000 + 1;
            w.record(T0, 1, Metric::Total, us);
            exact.record(us).unwrap();
        }
        let (h, _) = w.histograms(1, 0, T0 + 1);
        for q in [0.5, 0.9, 0.99, 0.999, 0.99999, 1.0] {
            let (a, b) = (h[0].value_at_quantile(q), exact.value_at_quantile(q));
            assert!(h[0].equivalent(a, b), "q {q}: {a} vs {b}");
        }
        assert_eq!(h[0].len(), exact.len());
    }

    #[test]
    fn old_intervals_age_out_and_the_budget_drops_the_oldest_first() {
        let mut w = Window::new(DEFAULT_BUDGET);
        for i in 0..(KEPT_INTERVALS as u64 + 5) {
            w.record(T0 + i * INTERVAL_MS, 1, Metric::Total, 100);
        }
        w.roll(T0 + (KEPT_INTERVALS as u64 + 5) * INTERVAL_MS);
        assert!(w.sealed.len() <= KEPT_INTERVALS);
        assert_eq!(w.evicted, 0);

        let mut small = Window::new(64 * 1024);
        for i in 0..10u64 {
            for c in 0..2_000u32 {
                small.record(T0 + i * INTERVAL_MS, c, Metric::Total, 100 + u64::from(c));
            }
            small.roll(T0 + i * INTERVAL_MS + 1);
        }
        small.roll(T0 + 10 * INTERVAL_MS);
        assert!(small.bytes() <= 64 * 1024, "{} bytes", small.bytes());
        assert!(small.evicted > 0);
        let now = T0 + 10 * INTERVAL_MS;
        let (_, span) = small.histograms(5, 0, now);
        let (from, _) = span.expect("the newest intervals are kept");
        assert!(from > T0, "the oldest went first");
        assert_eq!(small.covered_ms(now), now - from);
    }

    #[test]
    fn sealed_intervals_list_their_clusters_and_can_be_followed() {
        let mut w = Window::new(DEFAULT_BUDGET);
        w.record(T0, 3, Metric::Total, 10);
        w.record(T0, 1, Metric::Queue, 10);
        w.roll(T0 + INTERVAL_MS);
        let s = w.sealed_after(None);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].clusters(), [1, 3]);
        assert_eq!((s[0].start_ms, s[0].end_ms), (T0, T0 + INTERVAL_MS));
        assert!(w.sealed_after(Some(T0)).is_empty());
    }
}
