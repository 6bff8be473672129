//! The hot path: one core records each request's figures into its own [`CoreMetrics`]
//! without locks, atomics or allocation (once its buffers have grown): a lookup of the
//! cluster's core-local number and a push of a 40-byte [`Raw`] sample. About ten times a
//! second the core hands its samples to the hub (`MetricsHub::absorb`), which does the
//! counting, bucketing and windowing off the request path.
//!
//! Why a sample buffer and not per-core histograms: per-core, per-cluster histograms cost
//! memory for every cluster on every core (kilobytes each; gigabytes with 100k clusters on
//! many cores), while the buffer costs what the core's request rate puts in it between two
//! hand-overs, whatever the number of clusters.
//!
//! Must not touch: the hub's state (only `hub` merges), sockets, the registry.

use rustc_hash::FxHashMap;

/// Samples a core keeps between two hand-overs at most; beyond, samples are counted as
/// dropped (a core would need ten million requests per second to get there).
pub const MAX_BUFFERED: usize = 1 << 20;

/// "No value" in a [`Raw`] time field.
pub(crate) const NONE: u32 = u32::MAX;

/// One request's figures, as the edge knows them when it writes the access-log line.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    pub status: u16,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Time spent waiting for an allowance slot, in µs, when the request queued.
    pub queued_us: Option<u64>,
    /// Time the request held its allowance slot (sending to the upstream, its answer relayed
    /// back), in µs, when it got that far.
    pub upstream_us: Option<u64>,
    /// Whole request, first byte of the head to the last byte of the response, in µs.
    pub total_us: u64,
}

/// A sample as buffered: times in µs (saturated at `NONE - 1`), the cluster as the core's
/// local number.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Raw {
    pub cluster: u32,
    pub status: u16,
    pub total_us: u32,
    pub queue_us: u32,
    pub upstream_us: u32,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

fn micros(v: u64) -> u32 {
    v.min(u64::from(NONE - 1)) as u32
}

/// One core's figures since its last hand-over to the hub.
#[derive(Debug, Default)]
pub struct CoreMetrics {
    /// The core's place in the hub, given at its first hand-over.
    pub(crate) slot: Option<usize>,
    /// Cluster id -> core-local number (Fx: ids are short and not attacker-chosen; a
    /// cluster id comes from the registry, never from the request).
    ids: FxHashMap<Box<str>, u32>,
    /// Cluster ids numbered since the last hand-over, in number order.
    pub(crate) new_names: Vec<Box<str>>,
    pub(crate) samples: Vec<Raw>,
    /// Requests refused before a cluster was known (no route, bad head).
    pub(crate) unrouted: u64,
    pub(crate) dropped: u64,
    pub(crate) connections: u64,
}

impl CoreMetrics {
    /// Records one request of `cluster`.
    #[inline]
    pub fn record(&mut self, cluster: &str, s: &Sample) {
        let cluster = match self.ids.get(cluster) {
            Some(&n) => n,
            None => self.number(cluster),
        };
        if self.samples.len() >= MAX_BUFFERED {
            self.dropped += 1;
            return;
        }
        self.samples.push(Raw {
            cluster,
            status: s.status,
            total_us: micros(s.total_us),
            queue_us: s.queued_us.map_or(NONE, micros),
            upstream_us: s.upstream_us.map_or(NONE, micros),
            bytes_in: s.bytes_in,
            bytes_out: s.bytes_out,
        });
    }

    /// Counts a request that no cluster took (refused before routing).
    #[inline]
    pub fn record_unrouted(&mut self) {
        self.unrouted += 1;
    }

    /// The core's open client connections, reported with the next hand-over.
    pub fn set_connections(&mut self, n: usize) {
        self.connections = n as u64;
    }

    /// Requests refused before routing, since the last hand-over.
    pub fn unrouted(&self) -> u64 {
        self.unrouted
    }

    /// Samples waiting for the next hand-over.
    pub fn buffered(&self) -> usize {
        self.samples.len()
    }

    #[cold]
    fn number(&mut self, cluster: &str) -> u32 {
        let n = self.ids.len() as u32;
        self.ids.insert(cluster.into(), n);
        self.new_names.push(cluster.into());
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clusters_get_core_local_numbers_once_and_times_saturate() {
        let mut m = CoreMetrics::default();
        let s = Sample {
            status: 200,
            total_us: u64::MAX,
            queued_us: Some(5),
            ..Sample::default()
        };
        m.record("a", &s);
        m.record("b", &s);
        m.record("a", &Sample::default());
        assert_eq!(m.new_names, vec![Box::from("a"), Box::from("b")]);
        let clusters: Vec<u32> = m.samples.iter().map(|r| r.cluster).collect();
        assert_eq!(clusters, [0, 1, 0]);
        assert_eq!(m.samples[0].total_us, NONE - 1);
        assert_eq!(m.samples[0].queue_us, 5);
        assert_eq!(m.samples[0].upstream_us, NONE);
        assert_eq!(m.samples[2].queue_us, NONE);
    }

    #[test]
    fn a_full_buffer_counts_drops_instead_of_growing() {
        let mut m = CoreMetrics::default();
        m.samples.reserve(MAX_BUFFERED);
        for _ in 0..MAX_BUFFERED + 3 {
            m.record("a", &Sample::default());
        }
        assert_eq!(m.buffered(), MAX_BUFFERED);
        assert_eq!(m.dropped, 3);
    }
}
