//! Per-cluster request metrics: latency and queue-wait histograms (hdrhistogram, in
//! microseconds), status classes, bytes in and out.
//!
//! Owns: [`CoreMetrics`], written by one core without locks or atomics on the hot path,
//! and [`MetricsHub`], into which each core folds its figures about once a second;
//! `exposition` renders them, with the clusters' live gauges, in Prometheus' text format.
//!
//! Must not touch: sockets, the registry.

use std::collections::HashMap;
use std::sync::Mutex;

pub mod exposition;

use hdrhistogram::Histogram;

/// Figures of one cluster.
#[derive(Debug, Clone)]
pub struct ClusterStats {
    /// Whole-request latency, first byte to last byte sent, in µs.
    pub latency_us: Histogram<u32>,
    /// Time spent waiting for an allowance slot, in µs (requests that queued).
    pub queue_us: Histogram<u32>,
    pub requests: u64,
    /// Responses by status class: index 1..=5 for 1xx..5xx, 0 for anything else.
    pub status_classes: [u64; 6],
    pub bytes_in: u64,
    pub bytes_out: u64,
}

impl Default for ClusterStats {
    fn default() -> Self {
        ClusterStats {
            latency_us: Histogram::new(2).expect("2 significant figures is valid"),
            queue_us: Histogram::new(2).expect("2 significant figures is valid"),
            requests: 0,
            status_classes: [0; 6],
            bytes_in: 0,
            bytes_out: 0,
        }
    }
}

impl ClusterStats {
    fn merge(&mut self, other: &ClusterStats) {
        let _ = self.latency_us.add(&other.latency_us);
        let _ = self.queue_us.add(&other.queue_us);
        self.requests += other.requests;
        for (a, b) in self.status_classes.iter_mut().zip(other.status_classes) {
            *a += b;
        }
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
    }

    fn reset(&mut self) {
        self.latency_us.reset();
        self.queue_us.reset();
        self.requests = 0;
        self.status_classes = [0; 6];
        self.bytes_in = 0;
        self.bytes_out = 0;
    }
}

/// One request's figures.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    pub status: u16,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Queue wait in µs, when the request waited.
    pub queued_us: Option<u64>,
    pub total_us: u64,
}

/// One core's metrics since its last fold into the hub.
#[derive(Debug, Default)]
pub struct CoreMetrics {
    clusters: HashMap<String, ClusterStats>,
}

impl CoreMetrics {
    /// Records one request of `cluster`.
    pub fn record(&mut self, cluster: &str, s: &Sample) {
        let stats = match self.clusters.get_mut(cluster) {
            Some(st) => st,
            None => self.clusters.entry(cluster.to_string()).or_default(),
        };
        record(&mut stats.latency_us, s.total_us);
        if let Some(q) = s.queued_us {
            record(&mut stats.queue_us, q);
        }
        stats.requests += 1;
        let class = (s.status / 100) as usize;
        stats.status_classes[if (1..=5).contains(&class) { class } else { 0 }] += 1;
        stats.bytes_in += s.bytes_in;
        stats.bytes_out += s.bytes_out;
    }
}

/// Records `v` (at least 1), growing the histogram as needed.
fn record(h: &mut Histogram<u32>, v: u64) {
    let v = v.max(1);
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}

/// Every core's figures, merged.
#[derive(Debug, Default)]
pub struct MetricsHub {
    merged: Mutex<HashMap<String, ClusterStats>>,
}

impl MetricsHub {
    /// Folds a core's figures in and resets them (keeping their allocations).
    pub fn absorb(&self, core: &mut CoreMetrics) {
        let mut merged = self.merged.lock().unwrap_or_else(|p| p.into_inner());
        for (id, stats) in core.clusters.iter_mut().filter(|(_, s)| s.requests > 0) {
            match merged.get_mut(id) {
                Some(m) => m.merge(stats),
                None => {
                    merged.insert(id.clone(), stats.clone());
                }
            }
            stats.reset();
        }
    }

    /// A copy of the merged figures of `cluster`.
    pub fn cluster(&self, cluster: &str) -> Option<ClusterStats> {
        self.merged
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(cluster)
            .cloned()
    }

    /// A copy of every cluster's merged figures.
    pub fn all(&self) -> HashMap<String, ClusterStats> {
        self.merged
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_fold_into_the_hub() {
        let hub = MetricsHub::default();
        let (mut a, mut b) = (CoreMetrics::default(), CoreMetrics::default());
        for i in 1..=100 {
            a.record(
                "acme",
                &Sample {
                    status: 200,
                    total_us: i * 10,
                    bytes_in: 1,
                    ..Sample::default()
                },
            );
        }
        b.record(
            "acme",
            &Sample {
                status: 429,
                total_us: 5_000,
                queued_us: Some(4_000),
                ..Sample::default()
            },
        );
        b.record(
            "beta",
            &Sample {
                status: 503,
                total_us: 7,
                ..Sample::default()
            },
        );
        hub.absorb(&mut a);
        hub.absorb(&mut b);
        hub.absorb(&mut a); // nothing new: no double counting
        let acme = hub.cluster("acme").unwrap();
        assert_eq!(acme.requests, 101);
        assert_eq!(acme.status_classes[2], 100);
        assert_eq!(acme.status_classes[4], 1);
        assert_eq!(acme.bytes_in, 100);
        assert_eq!(acme.queue_us.len(), 1);
        let p50 = acme.latency_us.value_at_quantile(0.5);
        assert!((495..=515).contains(&p50), "p50 {p50}");
        assert_eq!(hub.all().len(), 2);
    }
}
