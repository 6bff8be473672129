//! Taking over clusters whose home left the fleet (killed, crashed, cut off from the
//! store): the permits it granted to other nodes' requests outlive it (a request keeps
//! running upstream until its exchange ends, the edge's deadline at most), so they count
//! against the new home until they end.
//!
//! Before this node publishes a view in which it becomes home of clusters whose home
//! before is no longer live ([`orphaned`], pure), it charges their allowances in full (as
//! a joining node does, `super::handover`); a thread then asks every live node, itself
//! included, for the remote permits its requests still hold for them from homes other
//! than this one ([`super::wire::Request::Outstanding`], [`super::outstanding`]). Each
//! cluster's charged places come down to the sum of the latest reports, as the permits
//! end; a node that has not answered yet counts as holding all of them; a node that cannot
//! be asked keeps them until it leaves the fleet too or the deadline passed (its requests
//! ended by then).
//!
//! Must not touch: the request path, the store.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::handover::{connect, Asker, Charges};
use super::membership::{Member, View};
use super::rendezvous;
use super::wire::{self, Counts, Report};

/// The keys this node becomes home of in `next` whose home in `prev` was another node no
/// longer live in `next` (none before the first view: a node that just started took
/// nothing over from a node it never saw).
pub fn orphaned<'k>(prev: &View, next: &View, keys: impl Iterator<Item = &'k str>) -> Vec<&'k str> {
    if prev.members.is_empty() {
        return Vec::new();
    }
    keys.filter(|k| {
        let now = rendezvous::home(&next.members, k).map(|i| &next.members[i]);
        let was = rendezvous::home(&prev.members, k).map(|i| &prev.members[i]);
        match (now, was) {
            (Some(now), Some(was)) => {
                now.node == next.me
                    && was.node != next.me
                    && !next.members.iter().any(|m| m.node == was.node)
            }
            _ => false,
        }
    })
    .collect()
}

/// What the askers share: the clusters' charges and each node's latest report.
struct Tally {
    charges: Vec<Charges>,
    /// By source (peers, then this node): `None` until it answered.
    reports: Vec<Option<Vec<Counts>>>,
}

impl Tally {
    /// Source `i` reported `r`: each cluster's charges come down to what every source
    /// reports, once all did.
    fn reported(&mut self, i: usize, r: &Report) {
        let mut counts = vec![Counts::default(); self.charges.len()];
        for (at, c) in &r.0 {
            if let Some(slot) = counts.get_mut(*at as usize) {
                *slot = *c;
            }
        }
        self.reports[i] = Some(counts);
        if self.reports.iter().any(Option::is_none) {
            return;
        }
        for (k, charges) in self.charges.iter_mut().enumerate() {
            let mut sum = Counts::default();
            for r in self.reports.iter().flatten() {
                for (s, v) in sum.0.iter_mut().zip(r[k].0) {
                    *s = s.saturating_add(v);
                }
            }
            charges.settle(sum);
        }
    }
}

/// Starts taking over `clusters` (ids, each charged in full) from a home that left: asks
/// the live nodes `peers` (this node excluded) and this node itself.
pub fn start(asker: Asker, clusters: Vec<(String, Charges)>, peers: Vec<Member>) {
    if clusters.is_empty() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("fleet-orphans".into())
        .spawn(move || run(asker, clusters, peers));
    if spawned.is_err() {
        eprintln!("searchgate: fleet: no thread to count a departed home's permits; its clusters' places are given back at once");
    }
}

fn run(asker: Asker, clusters: Vec<(String, Charges)>, peers: Vec<Member>) {
    let end = Instant::now() + asker.max_hold;
    let (ids, charges): (Vec<String>, Vec<Charges>) = clusters.into_iter().unzip();
    let tally = Mutex::new(Tally {
        charges,
        reports: vec![None; peers.len() + 1],
    });
    let ids = Arc::new(ids);
    std::thread::scope(|s| {
        for (i, peer) in peers.iter().enumerate() {
            let (asker, ids, tally) = (&asker, &ids, &tally);
            s.spawn(move || {
                if let Err(e) = ask(asker, peer.peer, ids, end, i, tally) {
                    eprintln!(
                        "searchgate: fleet: cannot count node {}'s permits from a departed home ({e}); its places are held until it leaves or the deadline passes",
                        peer.node
                    );
                    asker.membership.wait_for(end, |v| !v.members.contains(peer));
                    lock(tally).reported(i, &Report::default());
                }
            });
        }
        // This node's own requests away from home.
        let out = &asker.outstanding;
        let mut last = out.report(&ids, asker.peer);
        loop {
            lock(&tally).reported(peers.len(), &last);
            if last.0.is_empty() {
                break;
            }
            last = out.wait_report(&ids, asker.peer, &last, end);
            if Instant::now() >= end {
                last = Report::default();
            }
        }
    });
}

fn lock(t: &Mutex<Tally>) -> std::sync::MutexGuard<'_, Tally> {
    t.lock().unwrap_or_else(|p| p.into_inner())
}

/// Asks the node at `addr` (source `i`) until it reports nothing left.
fn ask(
    a: &Asker,
    addr: SocketAddr,
    ids: &[String],
    end: Instant,
    i: usize,
    tally: &Mutex<Tally>,
) -> io::Result<()> {
    let mut conn = connect(addr, &a.secret, &a.me)?;
    let list: Vec<&str> = ids.iter().map(String::as_str).collect();
    conn.write_all(&wire::outstanding(&a.peer.to_string(), &list))?;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        conn.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        let mut head = [0u8; 5];
        conn.read_exact(&mut head)?;
        let bad = |_| io::Error::from(io::ErrorKind::InvalidData);
        let n = Report::parse_head(&head).map_err(bad)?;
        if n > ids.len() {
            return Err(io::ErrorKind::InvalidData.into());
        }
        let mut body = vec![0u8; n * 16];
        conn.read_exact(&mut body)?;
        let r = Report::parse_entries(&body).map_err(bad)?;
        lock(tally).reported(i, &r);
        if r.0.is_empty() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::membership::samples::view;
    use crate::policy::admit::Allowance;

    // Issue 27: a node takes over from a departed home exactly the keys it wins from it;
    // a join, a node's first view, and nothing changing take nothing over that way.
    #[test]
    fn orphans_are_the_keys_won_from_a_node_that_left() {
        let keys: Vec<String> = (0..300).map(|i| format!("c{i}")).collect();
        let ks = || keys.iter().map(String::as_str);
        let all = view("n3", &["n1", "n2", "n3"]);
        let n1_gone = view("n3", &["n2", "n3"]);
        let got = orphaned(&all, &n1_gone, ks());
        let three = ["n1", "n2", "n3"];
        let two = ["n2", "n3"];
        let want: Vec<&str> = ks()
            .filter(|k| {
                three[rendezvous::home(&three, k).unwrap()] == "n1"
                    && two[rendezvous::home(&two, k).unwrap()] == "n3"
            })
            .collect();
        assert!(!want.is_empty());
        assert_eq!(got, want);
        assert!(orphaned(&n1_gone, &all, ks()).is_empty(), "a join");
        assert!(orphaned(&View::empty("n3".into()), &all, ks()).is_empty());
        assert!(orphaned(&all, &all, ks()).is_empty());
    }

    // The charged places come down only once every source reported, to the sum of what
    // they report.
    #[test]
    fn charges_come_down_to_the_sum_of_every_report() {
        let a = Arc::new(Allowance::new(4, 0));
        let cluster =
            || Charges::of([(0..4).map(|_| a.charge()).collect(), Vec::new(), Vec::new()]);
        let mut t = Tally {
            charges: vec![cluster()],
            reports: vec![None, None],
        };
        t.reported(0, &Report(vec![(0, Counts([1, 0, 0]))]));
        assert_eq!(a.in_flight(), 4, "one source has not answered");
        t.reported(1, &Report(vec![(0, Counts([2, 0, 0]))]));
        assert_eq!(a.in_flight(), 3);
        t.reported(1, &Report::default());
        assert_eq!(a.in_flight(), 1);
        t.reported(0, &Report(vec![(9, Counts([1, 1, 1]))])); // out of range: ignored
        assert_eq!(a.in_flight(), 0);
    }
}
