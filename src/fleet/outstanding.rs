//! The remote permits this node's requests hold now, by cluster, lane and the home that
//! granted them (issue 27): what a new home asks every node for when it takes over a
//! cluster whose old home died, so that the permits the dead home granted count against
//! the new home until they end ([`super::handover`]).
//!
//! Written when a remote permit is granted and when it ends (`edge::peer`: a mutex taken
//! on the away-from-home path only, next to a network round trip); each end rings a bell
//! that the peer listener's answer to such a question waits on.
//!
//! Must not touch: sockets, the allowance (a remote permit's place is at its home).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use super::wire::{Counts, Report};
use crate::policy::admit::Limit;

/// Remote permits held here: cluster → (granting home, counts per lane).
#[derive(Debug, Default)]
pub struct Outstanding {
    held: Mutex<HashMap<String, Vec<(SocketAddr, Counts)>>>,
    bell: Condvar,
}

/// One remote permit counted in [`Outstanding`]; uncounted on drop.
#[derive(Debug)]
pub struct Counted {
    out: Arc<Outstanding>,
    cluster: String,
    home: SocketAddr,
    lane: usize,
}

fn lane(limit: Limit) -> usize {
    Limit::ALL.iter().position(|l| *l == limit).unwrap_or(0)
}

impl Outstanding {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Vec<(SocketAddr, Counts)>>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a permit of `cluster`'s `limit` granted by `home`, until the guard drops.
    pub fn hold(self: &Arc<Self>, cluster: &str, home: SocketAddr, limit: Limit) -> Counted {
        let i = lane(limit);
        let mut held = self.lock();
        let list = held.entry(cluster.to_string()).or_default();
        match list.iter_mut().find(|(h, _)| *h == home) {
            Some((_, c)) => c.0[i] += 1,
            None => {
                let mut c = Counts::default();
                c.0[i] = 1;
                list.push((home, c));
            }
        }
        Counted {
            out: self.clone(),
            cluster: cluster.to_string(),
            home,
            lane: i,
        }
    }

    fn end(&self, c: &Counted) {
        let mut held = self.lock();
        if let Some(list) = held.get_mut(&c.cluster) {
            if let Some((_, n)) = list.iter_mut().find(|(h, _)| *h == c.home) {
                n.0[c.lane] = n.0[c.lane].saturating_sub(1);
            }
            list.retain(|(_, n)| !n.is_zero());
            if list.is_empty() {
                held.remove(&c.cluster);
            }
        }
        drop(held);
        self.bell.notify_all();
    }

    /// The permits of `cluster` held here that a home other than `except` granted.
    pub fn counts(&self, cluster: &str, except: SocketAddr) -> Counts {
        Self::sum(&self.lock(), cluster, except)
    }

    fn sum(
        held: &HashMap<String, Vec<(SocketAddr, Counts)>>,
        cluster: &str,
        except: SocketAddr,
    ) -> Counts {
        let mut total = Counts::default();
        for (_, n) in held
            .get(cluster)
            .into_iter()
            .flatten()
            .filter(|(h, _)| *h != except)
        {
            for (t, v) in total.0.iter_mut().zip(n.0) {
                *t += v;
            }
        }
        total
    }

    /// The permits held here for each of `clusters` from homes other than `except` (those
    /// with none left out).
    pub fn report(&self, clusters: &[String], except: SocketAddr) -> Report {
        Self::report_of(&self.lock(), clusters, except)
    }

    fn report_of(
        held: &HashMap<String, Vec<(SocketAddr, Counts)>>,
        clusters: &[String],
        except: SocketAddr,
    ) -> Report {
        if held.is_empty() {
            return Report::default();
        }
        let entries = clusters.iter().enumerate().filter_map(|(i, c)| {
            let n = Self::sum(held, c, except);
            (!n.is_zero()).then_some((i as u32, n))
        });
        Report(entries.collect())
    }

    /// Waits until [`Outstanding::report`] differs from `last` or `until` passes; the
    /// report then.
    pub fn wait_report(
        &self,
        clusters: &[String],
        except: SocketAddr,
        last: &Report,
        until: Instant,
    ) -> Report {
        let mut held = self.lock();
        loop {
            let now = Self::report_of(&held, clusters, except);
            let t = Instant::now();
            if now != *last || t >= until {
                return now;
            }
            held = match self.bell.wait_timeout(held, until - t) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.out.end(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn permits_are_counted_by_cluster_lane_and_home() {
        let out = Arc::new(Outstanding::default());
        let (h1, h2) = (
            SocketAddr::from(([127, 0, 0, 1], 1)),
            SocketAddr::from(([127, 0, 0, 1], 2)),
        );
        let a = out.hold("c1", h1, Limit::Shared);
        let b = out.hold("c1", h1, Limit::Search);
        let c = out.hold("c1", h2, Limit::Shared);
        let _other = out.hold("c2", h1, Limit::Write);
        let none = SocketAddr::from(([127, 0, 0, 1], 9));
        assert_eq!(out.counts("c1", none), Counts([2, 1, 0]));
        // What the new home h2 granted itself is not counted again.
        assert_eq!(out.counts("c1", h2), Counts([1, 1, 0]));
        drop(a);
        drop(c);
        assert_eq!(out.counts("c1", none), Counts([0, 1, 0]));
        let asked = vec!["c9".to_string(), "c1".to_string()];
        let last = out.report(&asked, none);
        assert_eq!(last, Report(vec![(1, Counts([0, 1, 0]))]));
        let waiter = {
            let (out, asked) = (out.clone(), asked.clone());
            std::thread::spawn(move || {
                let until = Instant::now() + Duration::from_secs(60);
                out.wait_report(&asked, none, &last, until)
            })
        };
        drop(b);
        assert_eq!(waiter.join().unwrap(), Report::default());
        assert_eq!(out.counts("c9", none), Counts::default());
    }
}
