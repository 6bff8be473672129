//! The hub: where the cores' samples are counted, merged across cores, and read.
//!
//! A core hands its buffered samples over about ten times a second (`absorb`): a push
//! under the `pending` lock, which nothing holds for longer than that push. Whoever
//! finds the `store` lock free then counts the pending samples into the cumulative
//! per-cluster figures (Prometheus) and the latency window; a core that finds it busy
//! leaves its samples for the next one. Readers (`snapshot`, `latency`, `sealed_since`)
//! take the store lock and count what is pending first, so they see every sample handed
//! over before they were called.
//!
//! Must not touch: sockets, files, the registry.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;

use super::buckets::Buckets;
use super::record::{CoreMetrics, Raw, NONE};
use super::window::{IntervalCount, Metric, SealedInterval, Window, DEFAULT_BUDGET};

/// Cumulative figures of one cluster since the process started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterTotals {
    pub requests: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Responses by status class: index 1..=5 for 1xx..5xx, 0 for anything else (499:
    /// the client went away counts as 4xx).
    pub status_classes: [u64; 6],
    /// 413 Request Too Large.
    pub too_large: u64,
    /// 429 Too Many Requests.
    pub too_many: u64,
    /// 504 Gateway Timeout.
    pub timeouts: u64,
    pub total: Buckets,
    pub queue: Buckets,
    pub upstream: Buckets,
}

impl ClusterTotals {
    fn count(&mut self, r: &Raw) {
        self.requests += 1;
        self.bytes_in += r.bytes_in;
        self.bytes_out += r.bytes_out;
        let class = usize::from(r.status / 100);
        self.status_classes[if (1..=5).contains(&class) { class } else { 0 }] += 1;
        match r.status {
            413 => self.too_large += 1,
            429 => self.too_many += 1,
            504 => self.timeouts += 1,
            _ => {}
        }
        self.total.observe(u64::from(r.total_us));
        if r.queue_us != NONE {
            self.queue.observe(u64::from(r.queue_us));
        }
        if r.upstream_us != NONE {
            self.upstream.observe(u64::from(r.upstream_us));
        }
    }
}

/// Cumulative figures of one core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreTotals {
    /// Requests the core answered (routed or not).
    pub requests: u64,
    /// Of which refused before a cluster was known.
    pub unrouted: u64,
    /// Open client connections at the last hand-over.
    pub connections: u64,
    /// Samples lost to a full buffer.
    pub dropped: u64,
}

/// A copy of the hub's cumulative figures, for rendering without holding the hub.
#[derive(Debug, Clone, Default)]
pub struct HubSnapshot {
    /// Clusters with at least one request, by id.
    pub clusters: Vec<(String, ClusterTotals)>,
    /// By core slot (the order cores first handed samples over).
    pub cores: Vec<CoreTotals>,
    /// Bytes held by the latency window.
    pub window_bytes: u64,
    /// Span the latency window covers now, in seconds.
    pub window_covered_secs: u64,
    /// Window intervals dropped to stay within the budget.
    pub window_evicted: u64,
    /// Faults contained so far (panics caught, restarts).
    pub faults: super::faults::FaultCounts,
    /// The fleet's store as this node sees it (`None`: no shared store).
    pub fleet: Option<super::fleet::FleetFigures>,
    /// This node's part in admitting clusters at their homes (`None`: not a fleet).
    pub peers: Option<super::fleet::PeerFigures>,
}

/// A cluster's latency histograms over a window.
#[derive(Debug, Clone)]
pub struct WindowData {
    /// Total, queue wait, upstream (see [`Metric`]).
    pub histograms: [Histogram<u64>; 3],
    /// Unix ms of the first and last moment covered (`None`: nothing kept in the window).
    pub span: Option<(u64, u64)>,
    /// Its requests per interval, oldest first.
    pub requests: Vec<IntervalCount>,
}

/// A closed interval of every cluster, for the interval-log writer.
#[derive(Debug, Clone)]
pub struct SealedView {
    pub interval: Arc<SealedInterval>,
    /// Hub numbers of the interval's clusters with their ids.
    pub clusters: Vec<(u32, String)>,
}

#[derive(Debug)]
struct Chunk {
    slot: usize,
    names: Vec<Box<str>>,
    samples: Vec<Raw>,
    unrouted: u64,
    dropped: u64,
    connections: u64,
}

#[derive(Debug, Default)]
struct Pending {
    chunks: Vec<Chunk>,
    /// Emptied sample buffers, given back to the cores.
    spare: Vec<Vec<Raw>>,
}

#[derive(Debug)]
struct Store {
    names: Vec<Box<str>>,
    numbers: HashMap<Box<str>, u32>,
    /// Per core slot: core-local cluster number -> hub number.
    core_numbers: Vec<Vec<u32>>,
    totals: Vec<ClusterTotals>,
    cores: Vec<CoreTotals>,
    window: Window,
}

/// Every core's figures, merged.
#[derive(Debug)]
pub struct MetricsHub {
    pending: Mutex<Pending>,
    store: Mutex<Store>,
    next_slot: AtomicUsize,
    /// Faults contained (panics caught, restarts); counted whether recording or not.
    pub faults: super::faults::Faults,
    /// This node's reading of the fleet's shared store (set by the follower).
    pub fleet: super::fleet::FleetGauges,
    /// False: the edge records nothing (`[edge] record_metrics = false`).
    recording: bool,
}

impl Default for MetricsHub {
    fn default() -> Self {
        MetricsHub::with_budget(DEFAULT_BUDGET)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl MetricsHub {
    /// A hub whose latency window keeps at most about `budget` bytes.
    pub fn with_budget(budget: usize) -> MetricsHub {
        MetricsHub {
            pending: Mutex::default(),
            store: Mutex::new(Store {
                names: Vec::new(),
                numbers: HashMap::new(),
                core_numbers: Vec::new(),
                totals: Vec::new(),
                cores: Vec::new(),
                window: Window::new(budget),
            }),
            next_slot: AtomicUsize::new(0),
            faults: super::faults::Faults::default(),
            fleet: super::fleet::FleetGauges::default(),
            recording: true,
        }
    }

    /// This hub, recording (`true`, the default) or not (`false`: the edge records no
    /// request; only the connection gauges and the process figures remain).
    pub fn recording(mut self, on: bool) -> MetricsHub {
        self.recording = on;
        self
    }

    /// Whether the edge records each request here.
    #[inline]
    pub fn is_recording(&self) -> bool {
        self.recording
    }

    /// Takes a core's buffered samples (its buffer is swapped for an empty one).
    pub fn absorb(&self, core: &mut CoreMetrics) {
        self.absorb_at(core, SystemTime::now());
    }

    /// [`absorb`](Self::absorb) with the clock passed in.
    pub fn absorb_at(&self, core: &mut CoreMetrics, now: SystemTime) {
        let slot = *core
            .slot
            .get_or_insert_with(|| self.next_slot.fetch_add(1, Ordering::Relaxed));
        {
            let mut pending = lock(&self.pending);
            let spare = pending.spare.pop().unwrap_or_default();
            pending.chunks.push(Chunk {
                slot,
                names: std::mem::take(&mut core.new_names),
                samples: std::mem::replace(&mut core.samples, spare),
                unrouted: std::mem::take(&mut core.unrouted),
                dropped: std::mem::take(&mut core.dropped),
                connections: core.connections,
            });
        }
        let store = match self.store.try_lock() {
            Ok(s) => s,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return, // the next hand-over counts it
        };
        drop(self.count_pending(store, unix_ms(now)));
    }

    /// Counts every pending chunk into the store; returns the store still locked.
    fn count_pending<'a>(
        &'a self,
        mut store: MutexGuard<'a, Store>,
        now_ms: u64,
    ) -> MutexGuard<'a, Store> {
        let chunks = std::mem::take(&mut lock(&self.pending).chunks);
        let mut emptied = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            emptied.push(store.count(chunk, now_ms));
        }
        store.window.roll(now_ms);
        let mut pending = lock(&self.pending);
        pending.spare.extend(emptied);
        pending.spare.truncate(64);
        drop(pending);
        store
    }

    fn store_at(&self, now: SystemTime) -> MutexGuard<'_, Store> {
        self.count_pending(lock(&self.store), unix_ms(now))
    }

    /// A copy of the cumulative figures at `now`.
    pub fn snapshot(&self, now: SystemTime) -> HubSnapshot {
        let store = self.store_at(now);
        let clusters = store
            .names
            .iter()
            .zip(&store.totals)
            .filter(|(_, t)| t.requests > 0)
            .map(|(n, t)| (n.to_string(), t.clone()))
            .collect();
        HubSnapshot {
            clusters,
            cores: store.cores.clone(),
            window_bytes: store.window.bytes() as u64,
            window_covered_secs: store.window.covered_ms(unix_ms(now)) / 1000,
            window_evicted: store.window.evicted,
            faults: self.faults.counts(),
            fleet: self.fleet.figures(unix_ms(now)),
            peers: self.fleet.peers.figures(),
        }
    }

    /// The cumulative figures of one cluster at `now` (`None`: no request seen).
    pub fn cluster(&self, cluster: &str, now: SystemTime) -> Option<ClusterTotals> {
        let store = self.store_at(now);
        let n = *store.numbers.get(cluster)?;
        Some(store.totals[n as usize].clone())
    }

    /// `cluster`'s histograms over the `window` before `now` (`None`: no request seen).
    pub fn latency(&self, cluster: &str, window: Duration, now: SystemTime) -> Option<WindowData> {
        let store = self.store_at(now);
        let n = *store.numbers.get(cluster)?;
        let now_ms = unix_ms(now);
        let since = now_ms.saturating_sub(window.as_millis() as u64);
        let (histograms, span) = store.window.histograms(n, since, now_ms);
        let requests = store.window.requests(n, since, now_ms);
        Some(WindowData {
            histograms,
            span,
            requests,
        })
    }

    /// Closes the latency window's open interval at `now` (at shutdown: its samples then
    /// reach the interval log before the process ends).
    pub fn close_open_interval(&self, now: SystemTime) {
        let mut store = self.store_at(now);
        store.window.close_open(unix_ms(now));
    }

    /// Closed intervals that started after `after_ms` (every kept one when `None`).
    pub fn sealed_since(&self, after_ms: Option<u64>, now: SystemTime) -> Vec<SealedView> {
        let store = self.store_at(now);
        store
            .window
            .sealed_after(after_ms)
            .into_iter()
            .map(|interval| {
                let clusters = interval
                    .clusters()
                    .into_iter()
                    .map(|n| (n, store.names[n as usize].to_string()))
                    .collect();
                SealedView { interval, clusters }
            })
            .collect()
    }
}

impl Store {
    fn number(&mut self, name: Box<str>) -> u32 {
        if let Some(&n) = self.numbers.get(&name) {
            return n;
        }
        let n = self.names.len() as u32;
        self.names.push(name.clone());
        self.numbers.insert(name, n);
        self.totals.push(ClusterTotals::default());
        n
    }

    /// Counts one chunk; returns its emptied sample buffer.
    fn count(&mut self, chunk: Chunk, now_ms: u64) -> Vec<Raw> {
        if self.core_numbers.len() <= chunk.slot {
            self.core_numbers.resize_with(chunk.slot + 1, Vec::new);
            self.cores.resize(chunk.slot + 1, CoreTotals::default());
        }
        for name in chunk.names {
            let n = self.number(name);
            self.core_numbers[chunk.slot].push(n);
        }
        let core = &mut self.cores[chunk.slot];
        core.requests += chunk.samples.len() as u64 + chunk.unrouted;
        core.unrouted += chunk.unrouted;
        core.dropped += chunk.dropped;
        core.connections = chunk.connections;
        let numbers = &self.core_numbers[chunk.slot];
        for r in &chunk.samples {
            let n = numbers[r.cluster as usize];
            self.totals[n as usize].count(r);
            let w = &mut self.window;
            w.record(now_ms, n, Metric::Total, u64::from(r.total_us));
            if r.queue_us != NONE {
                w.record(now_ms, n, Metric::Queue, u64::from(r.queue_us));
            }
            if r.upstream_us != NONE {
                w.record(now_ms, n, Metric::Upstream, u64::from(r.upstream_us));
            }
        }
        let mut samples = chunk.samples;
        samples.clear();
        samples
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::Sample;
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn cores_fold_into_the_hub_without_double_counting() {
        let hub = MetricsHub::default();
        let (mut a, mut b) = (CoreMetrics::default(), CoreMetrics::default());
        for i in 1..=100 {
            let s = Sample {
                status: 200,
                total_us: i * 10,
                upstream_us: Some(i * 5),
                bytes_in: 1,
                ..Sample::default()
            };
            a.record("acme", &s);
        }
        let queued = Sample {
            status: 429,
            total_us: 5_000,
            queued_us: Some(4_000),
            ..Sample::default()
        };
        b.record("acme", &queued);
        b.record(
            "beta",
            &Sample {
                status: 504,
                total_us: 60_000_000,
                ..Sample::default()
            },
        );
        b.record_unrouted();
        b.set_connections(3);
        let t = at(1_700_000_000);
        hub.absorb_at(&mut a, t);
        hub.absorb_at(&mut b, t);
        hub.absorb_at(&mut a, t); // nothing new
        let acme = hub.cluster("acme", t).unwrap();
        assert_eq!(acme.requests, 101);
        assert_eq!(acme.status_classes[2], 100);
        assert_eq!(acme.status_classes[4], 1);
        assert_eq!((acme.too_many, acme.too_large, acme.timeouts), (1, 0, 0));
        assert_eq!(acme.bytes_in, 100);
        assert_eq!(acme.queue.count(), 1);
        assert_eq!(acme.upstream.count(), 100);
        assert_eq!(acme.total.count(), 101);
        let snap = hub.snapshot(t);
        assert_eq!(snap.clusters.len(), 2);
        assert_eq!(snap.cores.len(), 2);
        assert_eq!(snap.cores[0].requests, 100);
        assert_eq!(
            snap.cores[1],
            CoreTotals {
                requests: 3,
                unrouted: 1,
                connections: 3,
                dropped: 0
            }
        );
        let beta = &snap.clusters.iter().find(|c| c.0 == "beta").unwrap().1;
        assert_eq!(beta.timeouts, 1);
        let w = hub.latency("acme", Duration::from_secs(300), t).unwrap();
        assert_eq!(w.histograms[0].len(), 101);
        assert_eq!(w.histograms[1].len(), 1);
        let p50 = w.histograms[0].value_at_quantile(0.5);
        assert!((495..=515).contains(&p50), "p50 {p50}");
        assert!(hub.latency("nobody", Duration::from_secs(60), t).is_none());
    }

    #[test]
    fn a_busy_store_leaves_samples_pending_and_readers_count_them() {
        let hub = MetricsHub::default();
        let mut core = CoreMetrics::default();
        core.record(
            "acme",
            &Sample {
                status: 200,
                total_us: 10,
                ..Sample::default()
            },
        );
        {
            let _busy = lock(&hub.store);
            hub.absorb_at(&mut core, at(1_700_000_000));
            assert_eq!(lock(&hub.pending).chunks.len(), 1);
        }
        assert_eq!(hub.cluster("acme", at(1_700_000_000)).unwrap().requests, 1);
        assert!(lock(&hub.pending).chunks.is_empty());
    }

    #[test]
    fn buffers_go_back_to_the_cores() {
        let hub = MetricsHub::default();
        let mut core = CoreMetrics::default();
        for _ in 0..1000 {
            core.record("acme", &Sample::default());
        }
        hub.absorb_at(&mut core, at(1_700_000_000));
        hub.absorb_at(&mut core, at(1_700_000_000));
        assert!(
            core.samples.capacity() >= 1000,
            "the grown buffer came back"
        );
    }

    #[test]
    fn the_window_answers_for_the_minutes_asked() {
        let hub = MetricsHub::default();
        let mut core = CoreMetrics::default();
        let t0 = 1_700_000_040; // a minute boundary
        for minute in 0..10u64 {
            for _ in 0..10 {
                core.record(
                    "acme",
                    &Sample {
                        status: 200,
                        total_us: 1000 * (minute + 1),
                        ..Sample::default()
                    },
                );
            }
            hub.absorb_at(&mut core, at(t0 + minute * 60 + 30));
        }
        let now = at(t0 + 9 * 60 + 40);
        let last5 = hub
            .latency("acme", Duration::from_secs(5 * 60), now)
            .unwrap();
        // At least the five minutes asked: minutes 4..=9, as minute 4 ends after now - 5m.
        assert_eq!(last5.histograms[0].len(), 60);
        assert!(last5.histograms[0].equivalent(last5.histograms[0].min(), 5000));
        let (from, to) = last5.span.unwrap();
        assert_eq!(from, (t0 + 4 * 60) * 1000);
        assert_eq!(to, (t0 + 9 * 60 + 40) * 1000);
        let sealed = hub.sealed_since(None, now);
        assert_eq!(sealed.len(), 9);
        assert_eq!(sealed[0].clusters, vec![(0, "acme".to_string())]);
    }
}
