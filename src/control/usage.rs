//! Usage history: every `[billing] usage_interval` (on the control plane's clock) a sample
//! of each metered cluster is stored: its last metering reading (disk, documents, shards,
//! indices) and the requests and bytes the edge counted since the cluster's previous sample
//! (differences of the metrics hub's cumulative counters, which start at zero with the
//! process). Samples older than `usage_retention` are deleted as new ones are written.
//!
//! Must not touch: sockets, the metrics hub itself (the control thread hands the counters
//! in), the request path.

use std::collections::HashMap;

use super::store::UsageSample;
use crate::policy::shards::Usage;
use crate::registry::Millis;

/// The edge's cumulative counters of one cluster.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub requests: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// Decides when samples are due and turns cumulative counters into per-sample counts.
#[derive(Debug)]
pub struct Sampler {
    interval_ms: Millis,
    retention_ms: Millis,
    next_at: Option<Millis>,
    last: HashMap<String, Counters>,
}

impl Sampler {
    /// Samples every `interval_ms`, kept `retention_ms`.
    pub fn new(interval_ms: Millis, retention_ms: Millis) -> Sampler {
        Sampler {
            interval_ms: interval_ms.max(1),
            retention_ms,
            next_at: None,
            last: HashMap::new(),
        }
    }

    /// Whether a sample is due at `now` (the first one is due at once).
    pub fn due(&self, now: Millis) -> bool {
        self.next_at.is_none_or(|at| now >= at)
    }

    /// Samples at `now` of `clusters` (id, last reading, cumulative counters); the next one
    /// is due an interval later. Also returns the instant before which samples are pruned.
    pub fn take(
        &mut self,
        now: Millis,
        clusters: Vec<(String, Usage, Counters)>,
    ) -> (Vec<(String, UsageSample)>, Millis) {
        self.next_at = Some(now.saturating_add(self.interval_ms));
        let mut out = Vec::with_capacity(clusters.len());
        let mut last = HashMap::with_capacity(clusters.len());
        for (id, u, c) in clusters {
            let before = self.last.get(&id).copied().unwrap_or_default();
            out.push((
                id.clone(),
                UsageSample {
                    at: now,
                    disk_bytes: u.bytes,
                    documents: u.docs,
                    shards: u.shards,
                    indices: u.indices,
                    requests: c.requests.saturating_sub(before.requests),
                    bytes_in: c.bytes_in.saturating_sub(before.bytes_in),
                    bytes_out: c.bytes_out.saturating_sub(before.bytes_out),
                },
            ));
            last.insert(id, c);
        }
        self.last = last;
        (out, now.saturating_sub(self.retention_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(bytes: u64) -> Usage {
        Usage {
            indices: 1,
            shards: 2,
            primaries: 1,
            docs: 3,
            bytes,
        }
    }

    fn counted(requests: u64) -> Counters {
        Counters {
            requests,
            bytes_in: requests * 10,
            bytes_out: requests * 100,
        }
    }

    // issue 12: counters per interval, readings as they were, due at a fixed interval
    #[test]
    fn samples_count_what_happened_since_the_previous_one() {
        let mut s = Sampler::new(60_000, 3_600_000);
        assert!(s.due(0));
        let (first, prune) = s.take(1_000_000, vec![("a".into(), reading(5), counted(7))]);
        assert_eq!(prune, 1_000_000 - 3_600_000);
        assert_eq!(first[0].1.requests, 7, "since the process started");
        assert_eq!(first[0].1.disk_bytes, 5);
        assert!(!s.due(1_059_999));
        assert!(s.due(1_060_000));
        let (second, _) = s.take(
            1_060_000,
            vec![
                ("a".into(), reading(6), counted(10)),
                ("b".into(), reading(1), counted(2)),
            ],
        );
        assert_eq!(second[0].1.requests, 3);
        assert_eq!(second[0].1.bytes_in, 30);
        assert_eq!(second[0].1.bytes_out, 300);
        assert_eq!(second[1].1.requests, 2, "a new cluster counts from zero");
        assert_eq!((second[0].1.at, second[0].1.documents), (1_060_000, 3));
    }
}
