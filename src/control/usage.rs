//! Usage history: every `[billing] usage_interval` (on the control plane's clock) a sample
//! of each metered cluster is stored: its last metering reading (disk, documents, shards,
//! indices) and the requests and bytes the edge counted since the cluster's previous sample
//! (differences of the metrics hub's cumulative counters, which start at zero with the
//! process). Samples older than `usage_retention` are deleted as new ones are written.
//!
//! In a fleet every node counts the requests it served. Samples are taken at the
//! interval's boundaries (multiples of the interval since the epoch), so every node's
//! sample of a cluster lands on the same instant, where the store adds the counters up:
//! reading a sample gives the fleet's total. A node counts from zero when it starts, so a
//! restart counts nothing twice. A batch of samples the store did not take (it is
//! unreachable) is kept and written again, oldest first, before the next one ([`Flushes`]);
//! each batch carries a name that the store records with it in the same transaction, so a
//! batch written again after an answer was lost is counted once.
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

    /// The interval's boundary at or before `now`.
    fn boundary(&self, now: Millis) -> Millis {
        now - now.rem_euclid(self.interval_ms)
    }

    /// Samples of `clusters` (id, last reading, cumulative counters) at the interval's
    /// boundary at or before `now`; the next one is due at the next boundary. Also returns
    /// the instant before which samples are pruned. A cluster left out (not metered this
    /// time) keeps its counters: its next sample counts from its previous one.
    pub fn take(
        &mut self,
        now: Millis,
        clusters: Vec<(String, Usage, Counters)>,
    ) -> (Vec<(String, UsageSample)>, Millis) {
        let at = self.boundary(now);
        self.next_at = Some(at.saturating_add(self.interval_ms));
        let mut out = Vec::with_capacity(clusters.len());
        for (id, u, c) in clusters {
            let before = self.last.get(&id).copied().unwrap_or_default();
            out.push((
                id.clone(),
                UsageSample {
                    at,
                    disk_bytes: u.bytes,
                    documents: u.docs,
                    shards: u.shards,
                    indices: u.indices,
                    requests: c.requests.saturating_sub(before.requests),
                    bytes_in: c.bytes_in.saturating_sub(before.bytes_in),
                    bytes_out: c.bytes_out.saturating_sub(before.bytes_out),
                },
            ));
            self.last.insert(id, c);
        }
        (out, now.saturating_sub(self.retention_ms))
    }

    /// Forgets the counters of clusters `keep` does not hold (destroyed ones).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.last.retain(|id, _| keep(id));
    }
}

/// Batches of samples to write, oldest first, each with the name the store records it
/// under (`<prefix>/<n>`: a node and its start, then a count).
#[derive(Debug)]
pub struct Flushes {
    prefix: String,
    next: u64,
    queue: std::collections::VecDeque<Flush>,
    /// Batches dropped because the queue was full (their counts are lost).
    pub dropped: u64,
}

/// One batch of samples to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Flush {
    pub name: String,
    pub samples: Vec<(String, UsageSample)>,
    pub prune_before: Millis,
}

/// Most batches kept while the store is unreachable (a day of samples at one a minute).
pub const MAX_FLUSHES: usize = 1440;

impl Flushes {
    /// Batches named `<prefix>/<n>`: `prefix` must differ between nodes and between a
    /// node's starts (e.g. the node's id and the time it started).
    pub fn new(prefix: String) -> Flushes {
        Flushes {
            prefix,
            next: 0,
            queue: std::collections::VecDeque::new(),
            dropped: 0,
        }
    }

    /// Queues `samples` (nothing when empty); the oldest batch goes when the queue is full.
    pub fn push(&mut self, samples: Vec<(String, UsageSample)>, prune_before: Millis) {
        if samples.is_empty() {
            return;
        }
        if self.queue.len() >= MAX_FLUSHES {
            self.queue.pop_front();
            self.dropped += 1;
        }
        self.next += 1;
        self.queue.push_back(Flush {
            name: format!("{}/{}", self.prefix, self.next),
            samples,
            prune_before,
        });
    }

    /// Writes the queued batches in order with `write`, until one fails (it stays queued,
    /// with those after it). Returns the error of the failed one.
    pub fn write<E>(&mut self, mut write: impl FnMut(&Flush) -> Result<(), E>) -> Result<(), E> {
        while let Some(f) = self.queue.front() {
            write(f)?;
            self.queue.pop_front();
        }
        Ok(())
    }

    /// Batches waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Nothing waiting.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
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
        let (first, prune) = s.take(1_020_000, vec![("a".into(), reading(5), counted(7))]);
        assert_eq!(prune, 1_020_000 - 3_600_000);
        assert_eq!(first[0].1.requests, 7, "since the process started");
        assert_eq!(first[0].1.disk_bytes, 5);
        assert!(!s.due(1_079_999));
        assert!(s.due(1_080_000));
        let (second, _) = s.take(
            1_080_000,
            vec![
                ("a".into(), reading(6), counted(10)),
                ("b".into(), reading(1), counted(2)),
            ],
        );
        assert_eq!(second[0].1.requests, 3);
        assert_eq!(second[0].1.at, 1_080_000, "at the interval's boundary");
        assert_eq!(second[0].1.bytes_in, 30);
        assert_eq!(second[0].1.bytes_out, 300);
        assert_eq!(second[1].1.requests, 2, "a new cluster counts from zero");
        assert_eq!(second[0].1.documents, 3);
    }

    // issue 26: every node samples at the same boundaries (the store adds their counts up);
    // a cluster left out of a sample counts from its previous one, not from zero again.
    #[test]
    fn samples_fall_on_the_intervals_boundaries() {
        let mut s = Sampler::new(60_000, 3_600_000);
        let (first, _) = s.take(1_000_123, vec![("a".into(), reading(1), counted(4))]);
        assert_eq!(first[0].1.at, 960_000);
        assert!(!s.due(1_019_999));
        assert!(s.due(1_020_000), "due at the next boundary");
        let (none, _) = s.take(1_020_001, vec![]);
        assert!(none.is_empty());
        let (later, _) = s.take(1_080_001, vec![("a".into(), reading(1), counted(9))]);
        assert_eq!(later[0].1.requests, 5, "not counted twice");
        assert_eq!(later[0].1.at, 1_080_000);
        s.retain(|_| false);
        let (again, _) = s.take(1_140_000, vec![("a".into(), reading(1), counted(10))]);
        assert_eq!(again[0].1.requests, 10, "forgotten: from zero");
    }

    fn batch(n: u64) -> Vec<(String, UsageSample)> {
        vec![(
            "a".into(),
            UsageSample {
                requests: n,
                ..UsageSample::default()
            },
        )]
    }

    // issue 26: batches the store refused are written again, in order, under their names.
    #[test]
    fn refused_batches_are_kept_and_written_again_in_order() {
        let mut f = Flushes::new("n1/5".into());
        f.push(Vec::new(), 0);
        assert!(f.is_empty(), "nothing to write");
        f.push(batch(1), 0);
        f.push(batch(2), 0);
        let mut written = Vec::new();
        let down: Result<(), &str> = f.write(|_| Err("down"));
        assert_eq!(down, Err("down"));
        assert_eq!(f.len(), 2);
        f.push(batch(3), 0);
        let mut calls = 0;
        let blink = f.write(|b| {
            calls += 1;
            if calls == 2 {
                return Err("blink");
            }
            written.push((b.name.clone(), b.samples[0].1.requests));
            Ok(())
        });
        assert_eq!(blink, Err("blink"));
        f.write(|b| {
            written.push((b.name.clone(), b.samples[0].1.requests));
            Ok::<(), ()>(())
        })
        .unwrap();
        let want = [("n1/5/1", 1), ("n1/5/2", 2), ("n1/5/3", 3)];
        let want: Vec<(String, u64)> = want.iter().map(|(n, r)| (n.to_string(), *r)).collect();
        assert_eq!(written, want);
        assert!(f.is_empty());
    }

    // The queue is bounded: the oldest batch goes first, and is counted.
    #[test]
    fn the_queue_of_batches_is_bounded() {
        let mut f = Flushes::new("n".into());
        for i in 0..MAX_FLUSHES as u64 + 2 {
            f.push(batch(i), 0);
        }
        assert_eq!((f.len(), f.dropped), (MAX_FLUSHES, 2));
        let mut first = None;
        f.write(|b| {
            first.get_or_insert(b.samples[0].1.requests);
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(first, Some(2));
    }
}
