//! Handover when a node joins: clusters move to it only after the old home's requests for
//! them ended (or the deadline passed), and the cluster's plan is never exceeded meanwhile.
//!
//! Before this node publishes a view in which it becomes home of a cluster whose old home
//! is still live ([`takeovers`], pure), it *charges* the cluster's allowances in full
//! ([`crate::policy::admit::Allowance::charge`]): its requests for the cluster queue
//! (FIFO, with the plan's timeout) instead of being admitted next to the old home's. A
//! thread then asks the old home to hand the cluster over ([`super::wire::Request`]): the
//! old home stops admitting it at once and counts down its requests in flight; each count
//! gives back the charged places above it, the last (zero, or the deadline passed, or the
//! old home's connection ended: its permits ended with it) gives back the rest.
//!
//! Must not touch: the request path, the store.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::membership::{Member, View};
use super::rendezvous;
use super::wire::{self, Counts, PeerSecret, CHALLENGE, COUNTS, MAC, NONCE};
use crate::policy::admit::{Allowance, Limit, Permit};
use crate::registry::settling::{self, ReadSoon, Settling};
use crate::registry::Cluster;

fn home_of<'a>(members: &'a [Member], key: &str) -> Option<&'a Member> {
    rendezvous::home(members, key).map(|i| &members[i])
}

/// The keys this node becomes home of in `next` whose home before was another node that
/// is still live in `next`, with that node. Before the first view (no members yet) the
/// home before is the one the other nodes chose without this node.
pub fn takeovers<'k>(
    prev: &View,
    next: &View,
    keys: impl Iterator<Item = &'k str>,
) -> Vec<(&'k str, Member)> {
    let others: Vec<Member> = next
        .members
        .iter()
        .filter(|m| m.node != next.me)
        .cloned()
        .collect();
    let before = if prev.members.is_empty() {
        &others
    } else {
        &prev.members
    };
    keys.filter_map(|k| {
        let now = home_of(&next.members, k)?;
        if now.node != next.me {
            return None;
        }
        let was = home_of(before, k)?;
        let live = next
            .members
            .iter()
            .find(|m| m.node == was.node && m.node != next.me)?;
        Some((k, live.clone()))
    })
    .collect()
}

/// The places of a cluster's allowances a new home holds for the old home's requests,
/// and the takeover of its ledgers (`registry::settling`: its shard reservations and
/// context opens wait for a reading made after the charges are all given back).
#[derive(Debug)]
pub struct Charges {
    held: [Vec<Permit>; 3],
    /// Dropped after the permits (fields drop in order): the takeover ends with them.
    _moving: Option<Settling>,
}

impl Charges {
    /// Every allowance of `cluster` charged in full, its ledgers taken over (a reading is
    /// asked of `soon` when the charges end).
    pub fn full(cluster: &Cluster, soon: &Arc<ReadSoon>) -> Charges {
        let one = |limit: Limit| {
            let a: &Arc<Allowance> = cluster.lanes.get(limit, &cluster.allowance);
            (0..a.limit()).map(|_| a.charge()).collect()
        };
        Charges {
            held: [one(Limit::Shared), one(Limit::Search), one(Limit::Write)],
            _moving: Some(settling::take_over(&cluster.state, &cluster.id, soon)),
        }
    }

    /// Charges of places already taken.
    #[cfg(test)]
    pub(super) fn of(held: [Vec<Permit>; 3]) -> Charges {
        Charges {
            held,
            _moving: None,
        }
    }

    /// Gives back the places above what `counts` says is still in flight.
    pub fn settle(&mut self, counts: Counts) {
        for (held, n) in self.held.iter_mut().zip(counts.0) {
            held.truncate(held.len().min(n as usize));
        }
    }

    /// Places still held.
    pub fn held(&self) -> usize {
        self.held.iter().map(Vec::len).sum()
    }
}

/// What a handover thread needs.
#[derive(Debug, Clone)]
pub struct Asker {
    pub secret: PeerSecret,
    pub me: String,
    /// This node's peer listener (the old home forwards to it meanwhile).
    pub peer: SocketAddr,
    /// The longest the old home's requests may run.
    pub max_hold: Duration,
    /// This node's view (an old home that left the fleet holds nothing any more).
    pub membership: Arc<super::membership::Membership>,
    /// The remote permits this node's requests hold (counted when it takes clusters over
    /// from a home that left, `super::orphans`).
    pub outstanding: Arc<super::outstanding::Outstanding>,
}

/// Starts the handover of `cluster` from `from`, holding `charges` until it ends.
pub fn start(asker: Asker, cluster: String, from: Member, mut charges: Charges) {
    let spawned = std::thread::Builder::new()
        .name("fleet-handover".into())
        .spawn(move || {
            let end = Instant::now() + asker.max_hold;
            let got = ask(&asker, &cluster, from.peer, end, &mut charges);
            if let Err(e) = got {
                // Unreachable: hold the places until its registration runs out (its
                // permits ended with it) or the deadline passed (its requests did).
                eprintln!(
                    "searchgate: fleet: handover of {cluster} from {}: {e}; holding its places until it leaves the fleet or the deadline passes",
                    from.node
                );
                asker.membership.wait_for(end, |v| !v.members.contains(&from));
            }
            drop(charges);
        });
    if spawned.is_err() {
        eprintln!("searchgate: fleet: no thread for a handover; its places are given back at once");
    }
}

/// Asks `home` for `cluster` and settles `charges` on each count until none is in flight.
fn ask(
    a: &Asker,
    cluster: &str,
    home: SocketAddr,
    end: Instant,
    charges: &mut Charges,
) -> io::Result<()> {
    let mut conn = connect(home, &a.secret, &a.me)?;
    conn.write_all(&wire::handover(cluster, &a.peer.to_string()))?;
    loop {
        let left = end
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        conn.set_read_timeout(Some(left))?;
        let mut buf = [0u8; COUNTS];
        match conn.read_exact(&mut buf) {
            Ok(()) => {}
            // The old home ended: its permits ended with its process.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let counts =
            Counts::parse(&buf).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
        charges.settle(counts);
        if counts.is_zero() {
            return Ok(());
        }
    }
}

/// A blocking connection to peer listener `addr`, through the handshake.
pub fn connect(addr: SocketAddr, secret: &PeerSecret, me: &str) -> io::Result<TcpStream> {
    let mut conn = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    conn.set_nodelay(true)?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mine: [u8; NONCE] = rand::random();
    conn.write_all(&wire::hello(&mine, me))?;
    let mut c = [0u8; CHALLENGE];
    conn.read_exact(&mut c)?;
    let bad = || io::Error::new(io::ErrorKind::PermissionDenied, "not a peer of this fleet");
    let (theirs, mac) = wire::parse_challenge(&c).map_err(|_| bad())?;
    if !PeerSecret::check(&secret.home_mac(&mine, &theirs), mac) {
        return Err(bad());
    }
    let proof: [u8; MAC] = secret.peer_mac(&theirs, &mine);
    conn.write_all(&proof)?;
    let mut w = [0u8; 1];
    conn.read_exact(&mut w)?;
    if w[0] != wire::WELCOME {
        return Err(bad());
    }
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::membership::samples::view;

    // Issue 27: a joining node takes over exactly the keys it becomes home of, each from
    // the node that was home before; a node that died hands nothing over (its permits
    // died with it), nor does a node whose home stays.
    #[test]
    fn takeovers_are_the_keys_a_node_wins_from_live_nodes() {
        let keys: Vec<String> = (0..300).map(|i| format!("c{i}")).collect();
        let ks = || keys.iter().map(String::as_str);
        let old = view("n4", &["n1", "n2", "n3"]);
        let joined = view("n4", &["n1", "n2", "n3", "n4"]);
        let t = takeovers(&old, &joined, ks());
        let names = ["n1", "n2", "n3", "n4"];
        let won: Vec<&str> = ks()
            .filter(|k| names[rendezvous::home(&names, k).unwrap()] == "n4")
            .collect();
        assert_eq!(t.iter().map(|(k, _)| *k).collect::<Vec<_>>(), won);
        for (k, from) in &t {
            let three = ["n1", "n2", "n3"];
            assert_eq!(from.node, three[rendezvous::home(&three, k).unwrap()]);
        }
        // The first view of a node (nothing before): the same.
        let first = takeovers(&View::empty("n4".into()), &joined, ks());
        assert_eq!(first, t);
        // n1 died: n4 (already a member) wins n1's keys from nobody live.
        let after = view("n4", &["n2", "n3", "n4"]);
        let from_dead = takeovers(&joined, &after, ks());
        assert!(from_dead.is_empty(), "{from_dead:?}");
        // Nothing changes: nothing to take over.
        assert!(takeovers(&joined, &joined, ks()).is_empty());
    }

    #[test]
    fn charges_settle_down_to_what_is_in_flight() {
        let a = Arc::new(Allowance::new(3, 0));
        let mut c = Charges::of([(0..3).map(|_| a.charge()).collect(), Vec::new(), Vec::new()]);
        assert_eq!(a.in_flight(), 3);
        c.settle(Counts([1, 0, 0]));
        assert_eq!((c.held(), a.in_flight()), (1, 1));
        c.settle(Counts([5, 0, 0])); // never takes more
        assert_eq!(c.held(), 1);
        c.settle(Counts::default());
        assert_eq!(a.in_flight(), 0);
    }
}
