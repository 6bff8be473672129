//! Which allowance a request waits for: a plan may give searches and writes their own
//! allowance and queue (`search_concurrency`/`search_queue_size`,
//! `write_concurrency`/`write_queue_size`), so a bulk load that fills the writes' queue
//! cannot make searches fail; without them every request shares the plan's `concurrency`.
//!
//! Owns: [`Split`] (a plan's optional lanes), [`Limit`] (the decision: shared, search or
//! write, by the read/update class the request vocabulary computes), and [`Lanes`] (the
//! search and write allowances a cluster keeps beside its shared one, always present so a
//! plan change can start or stop using them without replacing handles).
//!
//! Must not touch: the classification itself (`crate::request`), sockets, the clock.

use std::sync::Arc;

use super::Allowance;

/// One lane's allowance: requests in flight and requests that may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane {
    pub concurrency: u32,
    pub queue_size: u32,
}

/// A plan's own lanes for searches and writes (`None`: that kind shares the plan's
/// `concurrency` and `queue_size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Split {
    pub search: Option<Lane>,
    pub write: Option<Lane>,
}

/// The allowance a request waits for, named as the 429 and the metrics name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The plan's `concurrency`/`queue_size`, shared by every request without a lane.
    Shared,
    /// `search_concurrency`/`search_queue_size`: reads.
    Search,
    /// `write_concurrency`/`write_queue_size`: updates (index deletion included).
    Write,
}

impl Limit {
    /// Every limit, in the order the metrics list them.
    pub const ALL: [Limit; 3] = [Limit::Shared, Limit::Search, Limit::Write];

    /// `shared`, `search` or `write` (the 429's `limit` field, the metrics' label).
    pub fn name(self) -> &'static str {
        match self {
            Limit::Shared => "shared",
            Limit::Search => "search",
            Limit::Write => "write",
        }
    }
}

/// The limit a request of this kind waits for under `split`: a read takes the search
/// lane and an update the write lane when the plan has that lane; otherwise the shared one.
pub fn limit_for(split: &Split, read: bool) -> Limit {
    match (read, split.search, split.write) {
        (true, Some(_), _) => Limit::Search,
        (false, _, Some(_)) => Limit::Write,
        _ => Limit::Shared,
    }
}

/// The lanes a plan's four optional settings give, or what is wrong with them: a lane's
/// concurrency and queue size come together, and its concurrency is at least 1.
pub fn split_of(
    search_concurrency: Option<u32>,
    search_queue_size: Option<u32>,
    write_concurrency: Option<u32>,
    write_queue_size: Option<u32>,
) -> Result<Split, String> {
    Ok(Split {
        search: lane("search", search_concurrency, search_queue_size)?,
        write: lane("write", write_concurrency, write_queue_size)?,
    })
}

fn lane(kind: &str, concurrency: Option<u32>, queue: Option<u32>) -> Result<Option<Lane>, String> {
    match (concurrency, queue) {
        (None, None) => Ok(None),
        (Some(0), _) => Err(format!("{kind}_concurrency: must be at least 1")),
        (Some(concurrency), Some(queue_size)) => Ok(Some(Lane {
            concurrency,
            queue_size,
        })),
        (Some(_), None) => Err(format!(
            "{kind}_queue_size: required with {kind}_concurrency"
        )),
        (None, Some(_)) => Err(format!(
            "{kind}_concurrency: required with {kind}_queue_size"
        )),
    }
}

/// A cluster's search and write allowances (sized 0 while its plan has no such lane; a
/// request is never sent to an unused lane, see [`limit_for`]).
#[derive(Debug, Clone)]
pub struct Lanes {
    pub search: Arc<Allowance>,
    pub write: Arc<Allowance>,
}

impl Lanes {
    /// Lanes sized from `split`.
    pub fn new(split: &Split) -> Lanes {
        let (s, w) = (sizes(split.search), sizes(split.write));
        Lanes {
            search: Arc::new(Allowance::new(s.0, s.1)),
            write: Arc::new(Allowance::new(w.0, w.1)),
        }
    }

    /// Resizes both lanes in place (a plan change; queued requests included).
    pub fn resize(&self, split: &Split) {
        let (s, w) = (sizes(split.search), sizes(split.write));
        self.search.resize(s.0, s.1);
        self.write.resize(w.0, w.1);
    }

    /// The allowance of `limit` (`shared` is the cluster's own, passed in).
    pub fn get<'a>(&'a self, limit: Limit, shared: &'a Arc<Allowance>) -> &'a Arc<Allowance> {
        match limit {
            Limit::Shared => shared,
            Limit::Search => &self.search,
            Limit::Write => &self.write,
        }
    }

    /// Whether both lanes are the same handles as `other`'s.
    pub fn same(&self, other: &Lanes) -> bool {
        Arc::ptr_eq(&self.search, &other.search) && Arc::ptr_eq(&self.write, &other.write)
    }
}

fn sizes(lane: Option<Lane>) -> (u32, u32) {
    lane.map_or((0, 0), |l| (l.concurrency, l.queue_size))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LANE: Option<Lane> = Some(Lane {
        concurrency: 2,
        queue_size: 3,
    });

    // issue 29: separate search and write limits; absent, one shared allowance as before
    #[test]
    fn a_request_waits_for_its_own_lane_when_the_plan_has_one() {
        let table = [
            (None, None, true, Limit::Shared),
            (None, None, false, Limit::Shared),
            (LANE, None, true, Limit::Search),
            (LANE, None, false, Limit::Shared),
            (None, LANE, true, Limit::Shared),
            (None, LANE, false, Limit::Write),
            (LANE, LANE, true, Limit::Search),
            (LANE, LANE, false, Limit::Write),
        ];
        for (search, write, read, want) in table {
            let split = Split { search, write };
            assert_eq!(limit_for(&split, read), want, "{split:?} read={read}");
        }
    }

    #[test]
    fn a_lane_needs_both_its_settings_and_a_concurrency_of_at_least_one() {
        let ok = split_of(Some(2), Some(3), None, None).unwrap();
        assert_eq!((ok.search, ok.write), (LANE, None));
        assert_eq!(split_of(None, None, None, None).unwrap(), Split::default());
        let table = [
            (
                split_of(Some(0), Some(3), None, None),
                "search_concurrency: must be at least 1",
            ),
            (
                split_of(Some(2), None, None, None),
                "search_queue_size: required with search_concurrency",
            ),
            (
                split_of(None, None, None, Some(0)),
                "write_concurrency: required with write_queue_size",
            ),
            (
                split_of(None, None, Some(0), Some(0)),
                "write_concurrency: must be at least 1",
            ),
        ];
        for (got, want) in table {
            assert_eq!(got.unwrap_err(), want);
        }
    }

    #[test]
    fn lanes_are_sized_from_the_plan_and_resized_in_place() {
        let shared = Arc::new(Allowance::new(1, 1));
        let lanes = Lanes::new(&Split {
            search: LANE,
            write: None,
        });
        assert_eq!(lanes.get(Limit::Search, &shared).limit(), 2);
        assert_eq!(lanes.get(Limit::Write, &shared).limit(), 0);
        assert!(Arc::ptr_eq(lanes.get(Limit::Shared, &shared), &shared));
        let before = lanes.clone();
        lanes.resize(&Split {
            search: None,
            write: LANE,
        });
        assert!(lanes.same(&before));
        assert_eq!(lanes.write.limit(), 2);
        assert_eq!(lanes.search.limit(), 0);
        let names: Vec<_> = Limit::ALL.iter().map(|l| l.name()).collect();
        assert_eq!(names, ["shared", "search", "write"]);
    }
}
