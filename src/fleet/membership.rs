//! Who is in the fleet and who is home of what: the [`View`] of the live nodes this node
//! last read from the store, and the pure decision of a cluster's home at an instant
//! ([`View::home`]).
//!
//! A node's registration in the store runs out `lease` after the store's clock read its
//! last renewal. The node trusts its own registration only until `lease - margin` after it
//! *sent* that renewal (on its own monotonic clock, [`View::valid_until`]): a renewal that
//! reached the store was sent before the store read its clock, so this node stops
//! admitting for its clusters strictly before any other node can see it gone and take
//! them (the margin covers clocks that run at slightly different rates).
//!
//! Must not touch: the store and sockets (the heartbeat thread in [`super::beat`] reads
//! one, the peer code the other); the clock is passed in.

use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use super::rendezvous;

/// A live node: its name and its peer listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub node: String,
    pub peer: SocketAddr,
}

impl AsRef<str> for Member {
    fn as_ref(&self) -> &str {
        &self.node
    }
}

/// The fleet as this node last read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// This node's name.
    pub me: String,
    /// The live nodes, ordered by name (this one included once registered).
    pub members: Vec<Member>,
    /// Until when this node may act as a home (`None`: never registered yet).
    pub valid_until: Option<Instant>,
    /// Clusters this node handed to a new home that its view does not show yet.
    pub handed: Vec<Handed>,
}

/// A cluster handed over to a new home (which asked for it, [`super::handover`]): this
/// node no longer admits it, whatever its view says, until `until` (by then its view
/// shows the new home).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handed {
    pub cluster: String,
    pub to: Member,
    pub until: Instant,
}

/// Where a cluster's requests are admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Home<'a> {
    /// Here: this node is the home and its registration is valid.
    Here,
    /// At this other node.
    Peer(&'a Member),
    /// Nowhere now (no live node, or this node is the home and could not renew): 503.
    Unavailable,
}

/// The share of the lease a node keeps in hand: it stops admitting this long before its
/// registration can run out.
pub fn margin(lease: Duration) -> Duration {
    lease / 5
}

impl View {
    /// The view of a node that has not registered yet.
    pub fn empty(me: String) -> View {
        View {
            me,
            members: Vec::new(),
            valid_until: None,
            handed: Vec::new(),
        }
    }

    /// The home of the cluster keyed `key` at `now`.
    pub fn home(&self, key: &str, now: Instant) -> Home<'_> {
        let Some(i) = rendezvous::home(&self.members, key) else {
            return Home::Unavailable;
        };
        let m = &self.members[i];
        if m.node != self.me {
            return Home::Peer(m);
        }
        match self.valid_until {
            Some(u) if now < u => {}
            _ => return Home::Unavailable,
        }
        match self
            .handed
            .iter()
            .find(|h| h.cluster == key && now < h.until)
        {
            Some(h) => Home::Peer(&h.to),
            None => Home::Here,
        }
    }

    /// The node the rendezvous hash names for `key` over the live nodes, whatever its
    /// state (what a load balancer should route to).
    pub fn home_node(&self, key: &str) -> Option<&Member> {
        rendezvous::home(&self.members, key).map(|i| &self.members[i])
    }

    /// A map for a load balancer: one line per cluster, `<prefix> <home node>`, from
    /// `(cluster id, host prefix)` pairs (see docs/fleet.md, tuning/haproxy-fleet.cfg).
    pub fn homes_map<'a>(&self, clusters: impl Iterator<Item = (&'a str, String)>) -> String {
        let mut out = String::new();
        for (id, prefix) in clusters {
            if let Some(m) = self.home_node(id) {
                out.push_str(&format!("{prefix} {}\n", m.node));
            }
        }
        out
    }

    /// How many of `keys` this node is home of at `now`.
    pub fn homes<'k>(&self, keys: impl Iterator<Item = &'k str>, now: Instant) -> usize {
        keys.filter(|k| self.home(k, now) == Home::Here).count()
    }
}

/// The view shared by the heartbeat thread (the writer), the workers and the peer
/// listener (readers).
#[derive(Debug)]
pub struct Membership {
    view: ArcSwap<View>,
    /// Views published so far, and the bell rung on each: threads waiting on a change of
    /// the view ([`Membership::wait_for`]) wake on it instead of polling.
    published: Mutex<u64>,
    bell: Condvar,
}

impl Membership {
    pub fn new(me: String) -> Membership {
        Membership {
            view: ArcSwap::from_pointee(View::empty(me)),
            published: Mutex::new(0),
            bell: Condvar::new(),
        }
    }

    /// Waits until the view satisfies `done` or `until` passes, woken by each publish;
    /// returns the last view seen.
    pub fn wait_for(&self, until: Instant, done: impl Fn(&View) -> bool) -> Arc<View> {
        let mut seen = self.published.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let v = self.view();
            let now = Instant::now();
            if done(&v) || now >= until {
                return v;
            }
            seen = match self.bell.wait_timeout(seen, until - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// Rings the bell after the view changed.
    fn ring(&self) {
        *self.published.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.bell.notify_all();
    }

    /// The current view.
    pub fn view(&self) -> Arc<View> {
        self.view.load_full()
    }

    /// The current view without touching its shared count (the request path: no atomic
    /// write every core contends on).
    pub fn current(&self) -> arc_swap::Guard<Arc<View>> {
        self.view.load()
    }

    /// Publishes the next view read from the store, keeping the handovers still running.
    pub fn publish(&self, next: View, now: Instant) {
        self.view.rcu(|cur| {
            let mut v = next.clone();
            v.handed = cur
                .handed
                .iter()
                .filter(|h| now < h.until)
                .cloned()
                .collect();
            v
        });
        self.ring();
    }

    /// This node stops acting as a home (a clean stop): its registration counts as run
    /// out from now on.
    pub fn resign(&self) {
        self.view.rcu(|cur| View {
            valid_until: None,
            ..View::clone(cur)
        });
        self.ring();
    }

    /// Records that `cluster` was handed to `to` until `until`.
    pub fn hand(&self, cluster: &str, to: Member, until: Instant) {
        self.view.rcu(|cur| {
            let mut v = View::clone(cur);
            v.handed.retain(|h| h.cluster != cluster);
            v.handed.push(Handed {
                cluster: cluster.to_string(),
                to: to.clone(),
                until,
            });
            v
        });
    }
}

/// Views for the fleet's unit tests: members named `n` on port `n.len()`.
#[cfg(test)]
pub(crate) mod samples {
    use super::{Member, View};
    use std::net::SocketAddr;

    pub fn member(n: &str) -> Member {
        Member {
            node: n.into(),
            peer: SocketAddr::from(([127, 0, 0, 1], n.len() as u16)),
        }
    }

    /// The view of `me` with `names` live.
    pub fn view(me: &str, names: &[&str]) -> View {
        View {
            me: me.into(),
            members: names.iter().map(|n| member(n)).collect(),
            valid_until: None,
            handed: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(n: &str, port: u16) -> Member {
        Member {
            node: n.into(),
            peer: SocketAddr::from(([127, 0, 0, 1], port)),
        }
    }

    // Issue 27: the home is the rendezvous choice over the live nodes; this node admits
    // as home only while its registration is valid, and then nobody does (503).
    #[test]
    fn home_is_here_only_while_the_registration_is_valid() {
        let t0 = Instant::now();
        let members = vec![member("a", 1), member("b", 2), member("c", 3)];
        let key_of = |who: &str| {
            (0..1000)
                .map(|i| format!("k{i}"))
                .find(|k| {
                    let names = ["a", "b", "c"];
                    names[rendezvous::home(&names, k).unwrap()] == who
                })
                .unwrap()
        };
        let (ka, kb) = (key_of("a"), key_of("b"));
        let view = |valid: Option<Instant>| View {
            me: "a".into(),
            members: members.clone(),
            valid_until: valid,
            handed: Vec::new(),
        };
        let v = view(Some(t0 + Duration::from_secs(4)));
        assert_eq!(v.home(&ka, t0), Home::Here);
        assert_eq!(v.home(&kb, t0), Home::Peer(&members[1]));
        // At and after the end of the registration: no longer home; peers unchanged.
        let end = t0 + Duration::from_secs(4);
        assert_eq!(v.home(&ka, end), Home::Unavailable);
        assert_eq!(v.home(&kb, end), Home::Peer(&members[1]));
        assert_eq!(view(None).home(&ka, t0), Home::Unavailable);
        assert_eq!(View::empty("a".into()).home(&ka, t0), Home::Unavailable);
        let keys = [ka.as_str(), kb.as_str()];
        assert_eq!(v.homes(keys.iter().copied(), t0), 1);
        assert_eq!(margin(Duration::from_secs(5)), Duration::from_secs(1));
        // The balancer's map names the rendezvous home, valid or not.
        assert_eq!(view(None).home_node(&ka), Some(&members[0]));
        let map = v.homes_map(
            [
                (ka.as_str(), "x.r1.".to_string()),
                (kb.as_str(), "y.r1.".to_string()),
            ]
            .into_iter(),
        );
        assert_eq!(map, "x.r1. a\ny.r1. b\n");
    }

    // Issue 27: a cluster handed to a new home is no longer admitted here, even before
    // this node's view shows the new home; the mark ends at its `until`.
    #[test]
    fn a_handed_cluster_goes_to_its_new_home() {
        let t0 = Instant::now();
        let names = ["a", "b"];
        let ka = (0..1000)
            .map(|i| format!("k{i}"))
            .find(|k| names[rendezvous::home(&names, k).unwrap()] == "a")
            .unwrap();
        let m = Membership::new("a".into());
        let view = View {
            me: "a".into(),
            members: vec![member("a", 1), member("b", 2)],
            valid_until: Some(t0 + Duration::from_secs(10)),
            handed: Vec::new(),
        };
        m.publish(view.clone(), t0);
        assert_eq!(m.view().home(&ka, t0), Home::Here);
        let new = member("n", 3);
        m.hand(&ka, new.clone(), t0 + Duration::from_secs(2));
        assert_eq!(m.view().home(&ka, t0), Home::Peer(&new));
        // A view read from the store later keeps the mark while it runs...
        m.publish(view.clone(), t0 + Duration::from_secs(1));
        assert_eq!(
            m.view().home(&ka, t0 + Duration::from_secs(1)),
            Home::Peer(&new)
        );
        assert_eq!(m.view().home(&ka, t0 + Duration::from_secs(2)), Home::Here);
        // ... and drops it once it ran out.
        m.publish(view, t0 + Duration::from_secs(3));
        assert!(m.view().handed.is_empty());
    }
}
