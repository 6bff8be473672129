//! Whether the multitenant clusters placed on the embedded engine fit its connection
//! limit (issue 25: no tenant within its plan may make another tenant fail because an
//! engine-wide limit ran out). The engine serves each connection on a thread of its own
//! and refuses a connection with 503 only when `[engine] max_connections` connections are
//! all busy (an idle one gives its place up). The edge opens an upstream connection per
//! request it forwards and forwards at most a plan's allowances at once per cluster
//! (`concurrency`, plus `search_concurrency` and `write_concurrency` when the plan has
//! those lanes), so the busy connections never exceed the sum of those bounds over the
//! clusters on the engine, plus what the edge sends on its own (metering, health):
//! [`EDGE_OWN`]. When that sum is over the limit, a busy moment of some tenants can make
//! another tenant's request fail with 503: [`check`] says so, and the edge warns at start
//! and at each reload (docs/engine.md, "Connections").
//!
//! Pure. Must not touch: the registry (callers pass the plans' numbers in), sockets.

use super::admit::lanes::Split;

/// Connections the edge may hold busy on its own (metering, health checks).
pub const EDGE_OWN: u64 = 8;

/// The most requests one cluster's plan lets the edge forward at once.
pub fn in_flight_bound(concurrency: u32, split: &Split) -> u64 {
    let lane = |l: Option<super::admit::lanes::Lane>| l.map_or(0, |l| u64::from(l.concurrency));
    u64::from(concurrency) + lane(split.search) + lane(split.write)
}

/// The plans on the engine promise more connections than it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overcommit {
    /// Clusters counted.
    pub clusters: usize,
    /// Their bounds summed, [`EDGE_OWN`] included.
    pub wanted: u64,
    /// `[engine] max_connections`.
    pub limit: u64,
}

/// Checks the clusters' bounds ([`in_flight_bound`] each) against the engine's limit.
pub fn check(bounds: &[u64], max_connections: u64) -> Result<(), Overcommit> {
    let wanted = bounds
        .iter()
        .fold(EDGE_OWN, |sum, b| sum.saturating_add(*b));
    if wanted <= max_connections {
        return Ok(());
    }
    Err(Overcommit {
        clusters: bounds.len(),
        wanted,
        limit: max_connections,
    })
}

impl Overcommit {
    /// The operator's warning.
    pub fn warning(&self) -> String {
        format!(
            "searchgate: warning: the {} multitenant cluster(s) on the embedded engine may have {} requests in flight at once (their plans' concurrency, and {} for the edge's own), more than its [engine] max_connections = {}: when they all are busy, other tenants' requests get 503; raise [engine] max_connections to at least {} or give these clusters smaller plans",
            self.clusters, self.wanted, EDGE_OWN, self.limit, self.wanted
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::admit::lanes::Lane;
    use super::*;

    #[test]
    fn bounds_of_plans() {
        assert_eq!(in_flight_bound(16, &Split::default()), 16);
        let split = Split {
            search: Some(Lane {
                concurrency: 4,
                queue_size: 1,
            }),
            write: Some(Lane {
                concurrency: 2,
                queue_size: 1,
            }),
        };
        assert_eq!(in_flight_bound(16, &split), 22);
    }

    #[test]
    fn fits_at_n_and_not_at_n_plus_one() {
        // (bounds, limit) -> fits
        let table: [(&[u64], u64, bool); 6] = [
            (&[], EDGE_OWN, true),
            (&[], EDGE_OWN - 1, false),
            (&[16, 16], 40, true),
            (&[16, 16], 39, false),
            (&[u64::MAX, 1], u64::MAX, true),
            (&[16; 300], 4096, false),
        ];
        for (bounds, limit, fits) in table {
            assert_eq!(check(bounds, limit).is_ok(), fits, "{bounds:?} {limit}");
        }
        let e = check(&[16, 16], 4).unwrap_err();
        assert_eq!(
            e,
            Overcommit {
                clusters: 2,
                wanted: 40,
                limit: 4
            }
        );
        assert!(
            e.warning().contains("max_connections = 4"),
            "{}",
            e.warning()
        );
        assert!(e.warning().contains("at least 40"), "{}", e.warning());
    }
}
