//! Which node of a cluster's list a request goes to, and whether a failed try may go to
//! another: power of two choices among the usable nodes (of two drawn at random, the one
//! with fewer requests in flight from this core), any node when none is usable (as the
//! official Elasticsearch clients do: a pool that is all down is tried rather than
//! refused), and a retry budget so a failing pool is not hammered.
//!
//! Pure and allocation-free: the random numbers and the counts are passed in. Must not
//! touch: I/O, the book.

/// One node as the choice sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Candidate {
    pub usable: bool,
    /// Requests this core has in flight there.
    pub in_flight: u32,
}

/// The index of the node to try, never `exclude` (the node a retry comes from); `None`
/// only when there is no other node. `r1`, `r2`: random numbers.
pub fn choose(nodes: &[Candidate], exclude: Option<usize>, r1: u64, r2: u64) -> Option<usize> {
    let allowed = |i: usize| Some(i) != exclude;
    let any_usable = (0..nodes.len()).any(|i| allowed(i) && nodes[i].usable);
    // The pool: the usable nodes, or every node when none is (never the excluded one).
    let pool = || (0..nodes.len()).filter(move |&i| allowed(i) && (nodes[i].usable || !any_usable));
    let nth = |k: usize| pool().nth(k);
    match pool().count() {
        0 => None,
        1 => nth(0),
        n => {
            let i = (r1 % n as u64) as usize;
            let mut j = (r2 % (n as u64 - 1)) as usize;
            if j >= i {
                j += 1;
            }
            let (a, b) = (nth(i)?, nth(j)?);
            Some(if nodes[b].in_flight < nodes[a].in_flight {
                b
            } else {
                a
            })
        }
    }
}

/// Retries as a share of requests (tokens in tenths of a retry): each request earns
/// `percent / 10` tenths, a retry costs ten, at most `cap` retries saved up. With 20 %,
/// one retry per five requests in the long run, and a burst of `cap` after a quiet spell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryBudget {
    tenths: u32,
    earn: u32,
    cap: u32,
}

impl RetryBudget {
    /// A budget of `percent` of requests, `cap` retries at most saved up (starts full).
    pub fn new(percent: u32, cap: u32) -> Self {
        RetryBudget {
            tenths: cap * 10,
            earn: percent / 10,
            cap: cap * 10,
        }
    }

    /// A request was sent.
    pub fn on_request(&mut self) {
        self.tenths = (self.tenths + self.earn).min(self.cap);
    }

    /// Takes one retry if the budget has it.
    pub fn take(&mut self) -> bool {
        if self.tenths >= 10 {
            self.tenths -= 10;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(usable: bool, in_flight: u32) -> Candidate {
        Candidate { usable, in_flight }
    }

    // issue 28: usable nodes only; of two, the less busy; none usable: any; never the one
    // a retry comes from
    #[test]
    fn choices() {
        // nodes, excluded, r1, r2 -> chosen
        type Row<'a> = (&'a [Candidate], Option<usize>, u64, u64, Option<usize>);
        let table: [Row; 9] = [
            (&[c(true, 0)], None, 7, 9, Some(0)),
            (&[c(true, 0)], Some(0), 7, 9, None),
            (&[c(false, 0), c(true, 9)], None, 0, 0, Some(1)),
            (&[c(false, 0), c(false, 0)], None, 1, 0, Some(1)),
            (&[c(false, 0), c(false, 0)], Some(1), 1, 0, Some(0)),
            (&[c(true, 5), c(true, 1), c(true, 3)], None, 0, 0, Some(1)),
            (&[c(true, 5), c(true, 1), c(true, 3)], None, 2, 0, Some(2)),
            (
                &[c(true, 5), c(true, 1), c(true, 3)],
                Some(1),
                0,
                0,
                Some(2),
            ),
            (
                &[c(true, 0), c(false, 0), c(true, 0)],
                Some(0),
                3,
                4,
                Some(2),
            ),
        ];
        for (nodes, exclude, r1, r2, want) in table {
            assert_eq!(
                choose(nodes, exclude, r1, r2),
                want,
                "{nodes:?} {exclude:?}"
            );
        }
    }

    // the two draws are always distinct nodes, and every usable node gets chosen
    #[test]
    fn every_usable_node_is_chosen_and_draws_differ() {
        let nodes = [c(true, 0), c(false, 0), c(true, 0), c(true, 0)];
        let mut seen = [0u32; 4];
        for r1 in 0..12 {
            for r2 in 0..12 {
                seen[choose(&nodes, None, r1, r2).unwrap()] += 1;
            }
        }
        assert_eq!(seen[1], 0);
        assert!(
            seen.iter().enumerate().all(|(i, &n)| i == 1 || n > 0),
            "{seen:?}"
        );
    }

    // issue 28: about one retry per five requests, a bounded burst
    #[test]
    fn the_retry_budget_is_a_share_of_requests() {
        let mut b = RetryBudget::new(20, 3);
        assert!(b.take() && b.take() && b.take());
        assert!(!b.take(), "the burst is spent");
        for _ in 0..4 {
            b.on_request();
        }
        assert!(!b.take(), "4 requests earn 0.8 of a retry");
        b.on_request();
        assert!(b.take());
        for _ in 0..1000 {
            b.on_request();
        }
        assert!(
            b.take() && b.take() && b.take() && !b.take(),
            "saved up to the cap"
        );
    }
}
