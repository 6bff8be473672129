//! The fixed bucket set of the Prometheus histograms: 1 ms to 60 s (the spec's request
//! deadline, section 8), the same for every cluster and every metric so that
//! `histogram_quantile` can aggregate across clusters.
//!
//! Must not touch: anything but counting.

/// Upper bounds of the finite buckets, in µs (`le` = value at most this).
pub const BOUNDS_US: [u64; 15] = [
    1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000,
    5_000_000, 10_000_000, 30_000_000, 60_000_000,
];

/// The `le` label of each finite bucket, in seconds as Prometheus expects.
pub const BOUNDS_LABELS: [&str; 15] = [
    "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5",
    "10", "30", "60",
];

/// Counts per bucket (not cumulative; the last is `+Inf`) and the sum of observations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Buckets {
    pub counts: [u64; BOUNDS_US.len() + 1],
    pub sum_us: u64,
}

impl Buckets {
    /// Counts one observation of `us` microseconds.
    #[inline]
    pub fn observe(&mut self, us: u64) {
        let i = BOUNDS_US.partition_point(|&b| b < us);
        self.counts[i] += 1;
        self.sum_us = self.sum_us.saturating_add(us);
    }

    /// Observations in all buckets.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Adds `other`'s counts to these.
    pub fn merge(&mut self, other: &Buckets) {
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
        self.sum_us = self.sum_us.saturating_add(other.sum_us);
    }

    /// `(le label, cumulative count)` for every bucket, `+Inf` last.
    pub fn cumulative(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        let labels = BOUNDS_LABELS.iter().copied().chain(std::iter::once("+Inf"));
        labels.zip(self.counts.iter().scan(0u64, |acc, &c| {
            *acc += c;
            Some(*acc)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_on_a_bound_counts_in_that_bucket_and_the_next_one_up_does_not() {
        let mut b = Buckets::default();
        b.observe(1_000); // le=0.001
        b.observe(1_001); // le=0.0025
        b.observe(60_000_000); // le=60
        b.observe(60_000_001); // +Inf
        b.observe(0); // le=0.001
        assert_eq!(b.counts[0], 2);
        assert_eq!(b.counts[1], 1);
        assert_eq!(b.counts[14], 1);
        assert_eq!(b.counts[15], 1);
        assert_eq!(b.count(), 5);
        assert_eq!(b.sum_us, 1_000 + 1_001 + 60_000_000 + 60_000_001);
        let cum: Vec<(&str, u64)> = b.cumulative().collect();
        assert_eq!(cum.len(), 16);
        assert_eq!(cum[0], ("0.001", 2));
        assert_eq!(cum[1], ("0.0025", 3));
        assert_eq!(cum[13], ("30", 3));
        assert_eq!(cum[14], ("60", 4));
        assert_eq!(cum[15], ("+Inf", 5));
    }

    #[test]
    fn labels_say_the_bounds_in_seconds() {
        for (us, label) in BOUNDS_US.iter().zip(BOUNDS_LABELS) {
            let secs: f64 = label.parse().unwrap();
            assert_eq!((secs * 1e6).round() as u64, *us, "{label}");
        }
        assert!(BOUNDS_US.windows(2).all(|w| w[0] < w[1]));
    }
}
