//! The peer protocol, sans I/O: the handshake by which two nodes prove to each other that
//! they hold the fleet's secret, and the messages of a remote permit.
//!
//! **Why an HMAC handshake, not mutual TLS.** Peers need one thing from each other: proof
//! that the other end is a node of this fleet (a stranger must neither take permits nor
//! hand out false ones). The fleet already shares one secret every node is checked to hold
//! (the tenancy key, taken from the store; a node whose key differs refuses to start), so
//! the peer secret is derived from it ([`PeerSecret::of`]) and nothing new has to be
//! distributed, rotated or configured; a certificate authority for the fleet would be one
//! more secret to run. Each side sends a fresh random nonce and answers the other's with an
//! HMAC-SHA256 bound to its role, so a recorded handshake cannot be replayed and a node
//! cannot be made to answer its own challenge. The messages after the handshake carry no
//! customer data (a cluster id, a lane, a time budget, a verdict): the peer network is the
//! fleet's private network, as for the store.
//!
//! A peer listener speaks only this protocol: the first 8 bytes must be [`MAGIC`], so an
//! HTTP request (a customer's, or anybody's) is refused before anything else is read.
//!
//! Messages (integers big-endian):
//! - hello (requester → home): `MAGIC`, nonce (16), name length (1), name;
//! - challenge (home → requester): `MAGIC`, nonce (16), HMAC("home", requester's nonce,
//!   home's nonce) (32);
//! - proof (requester → home): HMAC("peer", home's nonce, requester's nonce) (32);
//! - welcome (home → requester): one byte, [`WELCOME`];
//! - acquire: `A`, lane (1: `1` a read), budget in ms (4), the places it reserves with the
//!   permit (an index creation's primaries and replicas, 4 each, `u32::MAX` primaries for
//!   none; the shard contexts of a scroll or point-in-time open, 4), id length (1), id;
//! - release: `R` (the permit goes back; the connection carries the next acquire);
//! - while a permit is held, what the request did with the places it counts
//!   ([`super::places::Held`], each answered once applied);
//! - verdict (home → requester, 9 bytes): a tag and two numbers ([`Verdict`]);
//! - handover (new home → old home): `H`, id length (1), id, address length (1), the new
//!   home's peer address; answered by counts (`C` and the old home's requests in flight
//!   in each of the cluster's allowances, shared, search, write: 4 bytes each), again each
//!   time they fall, the last all zero ([`Counts`]).
//! - outstanding (a new home that took clusters over from a home that left the fleet →
//!   every live node): `P`, length of the rest (4), the new home's peer address (length
//!   (1), text), a count (4) and the cluster ids (length (1), id each); answered by a
//!   [`Report`] of the remote permits the node holds for them from other homes, again each
//!   time they fall, the last empty.
//!
//! Must not touch: sockets, clocks, the registry.

use ring::hmac;

use crate::policy::shards::IndexShards;

/// The first bytes of every peer connection.
pub const MAGIC: &[u8; 8] = b"SGPEER/1";
/// The home's last handshake byte: the requester is in.
pub const WELCOME: u8 = 0x57;
/// Length of a nonce.
pub const NONCE: usize = 16;
/// Length of a MAC.
pub const MAC: usize = 32;
/// Length of a verdict.
pub const VERDICT: usize = 9;
/// Length of a challenge.
pub const CHALLENGE: usize = 8 + NONCE + MAC;
/// A release.
pub const RELEASE: u8 = b'R';
const ACQUIRE: u8 = b'A';
const HANDOVER: u8 = b'H';
const OUTSTANDING: u8 = b'P';
const REPORT: u8 = b'Q';
/// The longest outstanding question a node reads.
pub const MAX_OUTSTANDING: usize = 32 << 20;
/// Length of a counts message.
pub const COUNTS: usize = 13;

/// The fleet's peer secret.
#[derive(Debug, Clone)]
pub struct PeerSecret(hmac::Key);

impl PeerSecret {
    /// The peer secret derived from the fleet's tenancy key's subkey for peers.
    pub fn of(subkey: [u8; 32]) -> PeerSecret {
        PeerSecret(hmac::Key::new(hmac::HMAC_SHA256, &subkey))
    }

    fn mac(&self, role: &[u8], first: &[u8; NONCE], second: &[u8; NONCE]) -> [u8; MAC] {
        let mut ctx = hmac::Context::with_key(&self.0);
        ctx.update(role);
        ctx.update(first);
        ctx.update(second);
        let mut out = [0u8; MAC];
        out.copy_from_slice(ctx.sign().as_ref());
        out
    }

    /// The home's answer to the requester's nonce.
    pub fn home_mac(&self, theirs: &[u8; NONCE], mine: &[u8; NONCE]) -> [u8; MAC] {
        self.mac(b"home", theirs, mine)
    }

    /// The requester's answer to the home's nonce.
    pub fn peer_mac(&self, home: &[u8; NONCE], mine: &[u8; NONCE]) -> [u8; MAC] {
        self.mac(b"peer", home, mine)
    }

    /// Checks `mac` in constant time.
    pub fn check(expected: &[u8; MAC], mac: &[u8]) -> bool {
        use subtle::ConstantTimeEq;
        mac.len() == MAC && bool::from(expected.ct_eq(mac))
    }
}

/// A hello: the requester's nonce and name.
pub fn hello(nonce: &[u8; NONCE], name: &str) -> Vec<u8> {
    let name = &name.as_bytes()[..name.len().min(255)];
    let mut out = Vec::with_capacity(8 + NONCE + 1 + name.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(nonce);
    out.push(name.len() as u8);
    out.extend_from_slice(name);
    out
}

/// Why bytes were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// Not this protocol (no magic): never a peer.
    NotPeer,
    /// A message this protocol does not have.
    Malformed,
}

/// Reads a hello from `buf`: `Ok(None)` while incomplete; the nonce, the name and the
/// bytes used.
pub fn parse_hello(buf: &[u8]) -> Result<Option<([u8; NONCE], String, usize)>, WireError> {
    let head = buf.len().min(8);
    if buf[..head] != MAGIC[..head] {
        return Err(WireError::NotPeer);
    }
    if buf.len() < 8 + NONCE + 1 {
        return Ok(None);
    }
    let len = usize::from(buf[8 + NONCE]);
    let end = 8 + NONCE + 1 + len;
    if buf.len() < end {
        return Ok(None);
    }
    let mut nonce = [0u8; NONCE];
    nonce.copy_from_slice(&buf[8..8 + NONCE]);
    let name = std::str::from_utf8(&buf[8 + NONCE + 1..end]).map_err(|_| WireError::Malformed)?;
    Ok(Some((nonce, name.to_string(), end)))
}

/// A challenge: the home's nonce and its MAC of both.
pub fn challenge(nonce: &[u8; NONCE], mac: &[u8; MAC]) -> [u8; CHALLENGE] {
    let mut out = [0u8; CHALLENGE];
    out[..8].copy_from_slice(MAGIC);
    out[8..8 + NONCE].copy_from_slice(nonce);
    out[8 + NONCE..].copy_from_slice(mac);
    out
}

/// Splits a whole challenge into the home's nonce and MAC.
pub fn parse_challenge(buf: &[u8; CHALLENGE]) -> Result<([u8; NONCE], &[u8]), WireError> {
    if &buf[..8] != MAGIC {
        return Err(WireError::NotPeer);
    }
    let mut nonce = [0u8; NONCE];
    nonce.copy_from_slice(&buf[8..8 + NONCE]);
    Ok((nonce, &buf[8 + NONCE..]))
}

/// A request for a permit of cluster `id`'s allowance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acquire {
    pub cluster: String,
    /// The read lane (searches' allowance when the plan splits them).
    pub read: bool,
    /// What is left of the request's deadline when it was sent (time already spent
    /// counts), in ms.
    pub budget_ms: u32,
    /// The shards of an index the request creates, reserved against the plan's capacity
    /// before it queues (as on one node).
    pub index: Option<IndexShards>,
    /// Nonzero for a scroll or point-in-time open (the shard contexts it weighs on the
    /// requester): the home reserves the open's weight by its own ledger against the
    /// cluster's share of open contexts before it queues. 0: not an open.
    pub contexts: u32,
}

/// Length of an acquire before its id.
const ACQUIRE_HEAD: usize = 19;
/// Primaries that say "no index".
const NO_INDEX: u32 = u32::MAX;

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

impl Acquire {
    pub fn encode(&self, out: &mut Vec<u8>) {
        let id = &self.cluster.as_bytes()[..self.cluster.len().min(255)];
        out.push(ACQUIRE);
        out.push(u8::from(self.read));
        out.extend_from_slice(&self.budget_ms.to_be_bytes());
        let sat = |n: u64| u32::try_from(n).unwrap_or(NO_INDEX - 1);
        let (p, r) = self
            .index
            .map_or((NO_INDEX, 0), |i| (sat(i.primaries), sat(i.replicas)));
        out.extend_from_slice(&p.to_be_bytes());
        out.extend_from_slice(&r.to_be_bytes());
        out.extend_from_slice(&self.contexts.to_be_bytes());
        out.push(id.len() as u8);
        out.extend_from_slice(id);
    }

    /// Reads an acquire from `buf`: `Ok(None)` while incomplete; the bytes used.
    pub fn parse(buf: &[u8]) -> Result<Option<(Acquire, usize)>, WireError> {
        match buf.first() {
            None => return Ok(None),
            Some(&ACQUIRE) => {}
            Some(_) => return Err(WireError::Malformed),
        }
        if buf.len() < ACQUIRE_HEAD {
            return Ok(None);
        }
        let read = match buf[1] {
            0 => false,
            1 => true,
            _ => return Err(WireError::Malformed),
        };
        let budget_ms = be32(&buf[2..]);
        let index = match be32(&buf[6..]) {
            NO_INDEX => None,
            p => Some(IndexShards {
                primaries: u64::from(p),
                replicas: u64::from(be32(&buf[10..])),
            }),
        };
        let contexts = be32(&buf[14..]);
        let end = ACQUIRE_HEAD + usize::from(buf[ACQUIRE_HEAD - 1]);
        if buf.len() < end {
            return Ok(None);
        }
        let id = &buf[ACQUIRE_HEAD..end];
        let cluster = std::str::from_utf8(id).map_err(|_| WireError::Malformed)?;
        let a = Acquire {
            cluster: cluster.to_string(),
            read,
            budget_ms,
            index,
            contexts,
        };
        Ok(Some((a, end)))
    }
}

/// What a requester asks of a home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Acquire(Acquire),
    /// The sender is the cluster's new home (its peer listener at `peer`): stop admitting
    /// the cluster and count down what is in flight.
    Handover {
        cluster: String,
        peer: String,
    },
    /// The sender (its peer listener at `except`) took `clusters` over from a home that
    /// left the fleet: report the remote permits held here for them from other homes.
    Outstanding {
        except: String,
        clusters: Vec<String>,
    },
}

/// An outstanding question (see [`Request::Outstanding`]).
pub fn outstanding(except: &str, clusters: &[&str]) -> Vec<u8> {
    let except = &except.as_bytes()[..except.len().min(255)];
    let mut rest = vec![except.len() as u8];
    rest.extend_from_slice(except);
    rest.extend_from_slice(&(clusters.len() as u32).to_be_bytes());
    for c in clusters {
        let id = &c.as_bytes()[..c.len().min(255)];
        rest.push(id.len() as u8);
        rest.extend_from_slice(id);
    }
    let mut out = vec![OUTSTANDING];
    out.extend_from_slice(&(rest.len() as u32).to_be_bytes());
    out.extend_from_slice(&rest);
    out
}

fn parse_outstanding(buf: &[u8]) -> Result<Option<(Request, usize)>, WireError> {
    let Some(len) = buf.get(1..5).map(be32) else {
        return Ok(None);
    };
    let len = len as usize;
    if len > MAX_OUTSTANDING {
        return Err(WireError::Malformed);
    }
    let Some(rest) = buf.get(5..5 + len) else {
        return Ok(None);
    };
    let text = |b: &[u8]| {
        std::str::from_utf8(b)
            .map(str::to_string)
            .map_err(|_| WireError::Malformed)
    };
    let field = |at: usize| -> Result<(String, usize), WireError> {
        let n = usize::from(*rest.get(at).ok_or(WireError::Malformed)?);
        let b = rest.get(at + 1..at + 1 + n).ok_or(WireError::Malformed)?;
        Ok((text(b)?, at + 1 + n))
    };
    let (except, mut at) = field(0)?;
    let count = rest.get(at..at + 4).map(be32).ok_or(WireError::Malformed)?;
    at += 4;
    let mut clusters = Vec::with_capacity((count as usize).min(len));
    for _ in 0..count {
        let (id, next) = field(at)?;
        clusters.push(id);
        at = next;
    }
    if at != len {
        return Err(WireError::Malformed);
    }
    Ok(Some((Request::Outstanding { except, clusters }, 5 + len)))
}

/// The remote permits a node holds for the clusters of an outstanding question, by their
/// place in the question (clusters with none left out).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report(pub Vec<(u32, Counts)>);

impl Report {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![REPORT];
        out.extend_from_slice(&(self.0.len() as u32).to_be_bytes());
        for (i, c) in &self.0 {
            out.extend_from_slice(&i.to_be_bytes());
            out.extend_from_slice(&c.encode()[1..]);
        }
        out
    }

    /// The number of entries a report's 5-byte head announces.
    pub fn parse_head(head: &[u8; 5]) -> Result<usize, WireError> {
        match head[0] {
            REPORT => Ok(be32(&head[1..]) as usize),
            _ => Err(WireError::Malformed),
        }
    }

    /// The entries (16 bytes each) after the head.
    pub fn parse_entries(b: &[u8]) -> Result<Report, WireError> {
        if b.len() % 16 != 0 {
            return Err(WireError::Malformed);
        }
        let entries = b.chunks(16).map(|e| {
            let n = |i: usize| be32(&e[4 + 4 * i..]);
            (be32(e), Counts([n(0), n(1), n(2)]))
        });
        Ok(Report(entries.collect()))
    }
}

/// A handover request of `cluster` to the node whose peer listener is `peer`.
pub fn handover(cluster: &str, peer: &str) -> Vec<u8> {
    let id = &cluster.as_bytes()[..cluster.len().min(255)];
    let peer = &peer.as_bytes()[..peer.len().min(255)];
    let mut out = vec![HANDOVER, id.len() as u8];
    out.extend_from_slice(id);
    out.push(peer.len() as u8);
    out.extend_from_slice(peer);
    out
}

/// Reads a request from `buf`: `Ok(None)` while incomplete; the bytes used.
pub fn parse_request(buf: &[u8]) -> Result<Option<(Request, usize)>, WireError> {
    if buf.first() == Some(&ACQUIRE) {
        return Ok(Acquire::parse(buf)?.map(|(a, n)| (Request::Acquire(a), n)));
    }
    if buf.first() == Some(&OUTSTANDING) {
        return parse_outstanding(buf);
    }
    match buf.first() {
        None => return Ok(None),
        Some(&HANDOVER) => {}
        Some(_) => return Err(WireError::Malformed),
    }
    let text = |b: &[u8]| {
        std::str::from_utf8(b)
            .map(str::to_string)
            .map_err(|_| WireError::Malformed)
    };
    let Some(&len) = buf.get(1) else {
        return Ok(None);
    };
    let id_end = 2 + usize::from(len);
    let Some(&plen) = buf.get(id_end) else {
        return Ok(None);
    };
    let end = id_end + 1 + usize::from(plen);
    if buf.len() < end {
        return Ok(None);
    }
    let r = Request::Handover {
        cluster: text(&buf[2..id_end])?,
        peer: text(&buf[id_end + 1..end])?,
    };
    Ok(Some((r, end)))
}

/// An old home's requests in flight in each of a cluster's allowances (shared, search,
/// write).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts(pub [u32; 3]);

impl Counts {
    pub fn encode(self) -> [u8; COUNTS] {
        let mut out = [0u8; COUNTS];
        out[0] = b'C';
        for (i, n) in self.0.iter().enumerate() {
            out[1 + 4 * i..5 + 4 * i].copy_from_slice(&n.to_be_bytes());
        }
        out
    }

    pub fn parse(buf: &[u8; COUNTS]) -> Result<Counts, WireError> {
        if buf[0] != b'C' {
            return Err(WireError::Malformed);
        }
        let n = |i: usize| {
            u32::from_be_bytes([
                buf[1 + 4 * i],
                buf[2 + 4 * i],
                buf[3 + 4 * i],
                buf[4 + 4 * i],
            ])
        };
        Ok(Counts([n(0), n(1), n(2)]))
    }

    /// Nothing in flight any more.
    pub fn is_zero(self) -> bool {
        self.0 == [0; 3]
    }
}

/// The home's answer to an acquire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The permit is the requester's until it sends a release or the connection ends.
    Granted,
    /// The queue is full (429).
    Full { concurrency: u32, queue_size: u32 },
    /// Waited the plan's queue timeout (429).
    QueueTimeout { concurrency: u32, waited_ms: u32 },
    /// The request's deadline passed while it waited (504).
    Deadline,
    /// This node is not (or no longer, or not yet) the cluster's home, or does not know
    /// it (503: the requester tries again later).
    NotHome,
    /// The index's shards do not fit the plan's capacity: the shards in use (400).
    ShardCapacity { in_use: u32 },
    /// The open's shard contexts do not fit the cluster's share (429).
    Contexts { share: u32, used: u32 },
}

impl Verdict {
    pub fn encode(self) -> [u8; VERDICT] {
        let (tag, a, b) = match self {
            Verdict::Granted => (b'G', 0, 0),
            Verdict::Full {
                concurrency,
                queue_size,
            } => (b'F', concurrency, queue_size),
            Verdict::QueueTimeout {
                concurrency,
                waited_ms,
            } => (b'T', concurrency, waited_ms),
            Verdict::Deadline => (b'D', 0, 0),
            Verdict::NotHome => (b'N', 0, 0),
            Verdict::ShardCapacity { in_use } => (b'S', in_use, 0),
            Verdict::Contexts { share, used } => (b'X', share, used),
        };
        let mut out = [0u8; VERDICT];
        out[0] = tag;
        out[1..5].copy_from_slice(&a.to_be_bytes());
        out[5..9].copy_from_slice(&b.to_be_bytes());
        out
    }

    pub fn parse(buf: &[u8; VERDICT]) -> Result<Verdict, WireError> {
        let a = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]);
        let b = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]);
        Ok(match buf[0] {
            b'G' => Verdict::Granted,
            b'F' => Verdict::Full {
                concurrency: a,
                queue_size: b,
            },
            b'T' => Verdict::QueueTimeout {
                concurrency: a,
                waited_ms: b,
            },
            b'D' => Verdict::Deadline,
            b'N' => Verdict::NotHome,
            b'S' => Verdict::ShardCapacity { in_use: a },
            b'X' => Verdict::Contexts { share: a, used: b },
            _ => return Err(WireError::Malformed),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_proves_the_secret_both_ways() {
        let s = PeerSecret::of([7; 32]);
        let other = PeerSecret::of([8; 32]);
        let (nc, nh) = ([1; NONCE], [2; NONCE]);
        let h = hello(&nc, "edge-2");
        assert_eq!(parse_hello(&h[..10]), Ok(None));
        let (nonce, name, used) = parse_hello(&h).unwrap().unwrap();
        assert_eq!((nonce, name.as_str(), used), (nc, "edge-2", h.len()));
        let c = challenge(&nh, &s.home_mac(&nc, &nh));
        let (got, mac) = parse_challenge(&c).unwrap();
        assert_eq!(got, nh);
        assert!(PeerSecret::check(&s.home_mac(&nc, &nh), mac));
        assert!(!PeerSecret::check(&other.home_mac(&nc, &nh), mac));
        // Roles differ: the home's answer is never a valid proof of a requester.
        assert!(!PeerSecret::check(&s.peer_mac(&nc, &nh), mac));
        assert!(!PeerSecret::check(&s.home_mac(&nc, &nh), &mac[..31]));
    }

    // A peer listener refuses what is not this protocol from the first byte (an HTTP
    // request never gets further).
    #[test]
    fn anything_but_the_magic_is_refused_at_once() {
        assert_eq!(parse_hello(b"GET / HTTP/1.1\r\n"), Err(WireError::NotPeer));
        assert_eq!(parse_hello(b"G"), Err(WireError::NotPeer));
        assert_eq!(parse_hello(b"SGP"), Ok(None));
        let mut bad = hello(&[0; NONCE], "x");
        *bad.last_mut().unwrap() = 0xff;
        assert_eq!(parse_hello(&bad), Err(WireError::Malformed));
    }

    #[test]
    fn acquires_and_verdicts_round_trip() {
        let a = Acquire {
            cluster: "c-42".into(),
            read: true,
            budget_ms: 59_800,
            index: None,
            contexts: 0,
        };
        let mut buf = Vec::new();
        a.encode(&mut buf);
        for cut in 0..buf.len() {
            assert_eq!(Acquire::parse(&buf[..cut]), Ok(None), "cut at {cut}");
        }
        assert_eq!(Acquire::parse(&buf), Ok(Some((a, buf.len()))));
        // The places an acquire reserves travel with it.
        let places = Acquire {
            cluster: "c-7".into(),
            read: false,
            budget_ms: 1,
            index: Some(IndexShards {
                primaries: 3,
                replicas: 1,
            }),
            contexts: 5,
        };
        let mut b2 = Vec::new();
        places.encode(&mut b2);
        assert_eq!(Acquire::parse(&b2), Ok(Some((places, b2.len()))));
        buf[1] = 2;
        assert_eq!(Acquire::parse(&buf), Err(WireError::Malformed));
        assert_eq!(Acquire::parse(b"X"), Err(WireError::Malformed));
        let all = [
            Verdict::Granted,
            Verdict::Full {
                concurrency: 2,
                queue_size: 4,
            },
            Verdict::QueueTimeout {
                concurrency: 2,
                waited_ms: 1000,
            },
            Verdict::Deadline,
            Verdict::NotHome,
            Verdict::ShardCapacity { in_use: 6 },
            Verdict::Contexts { share: 4, used: 3 },
        ];
        for v in all {
            assert_eq!(Verdict::parse(&v.encode()), Ok(v));
        }
        assert_eq!(Verdict::parse(&[b'?'; VERDICT]), Err(WireError::Malformed));
    }

    #[test]
    fn handovers_and_counts_round_trip() {
        let h = handover("c1", "127.0.0.1:9301");
        for cut in 0..h.len() {
            assert_eq!(parse_request(&h[..cut]), Ok(None), "cut at {cut}");
        }
        let want = Request::Handover {
            cluster: "c1".into(),
            peer: "127.0.0.1:9301".into(),
        };
        assert_eq!(parse_request(&h), Ok(Some((want, h.len()))));
        let mut a = Vec::new();
        Acquire {
            cluster: "c1".into(),
            read: false,
            budget_ms: 5,
            index: None,
            contexts: 0,
        }
        .encode(&mut a);
        assert!(matches!(
            parse_request(&a),
            Ok(Some((Request::Acquire(_), _)))
        ));
        assert_eq!(parse_request(b"GET"), Err(WireError::Malformed));
        let c = Counts([2, 0, 1]);
        assert_eq!(Counts::parse(&c.encode()), Ok(c));
        assert!(!c.is_zero() && Counts::default().is_zero());
        assert_eq!(Counts::parse(&[0; COUNTS]), Err(WireError::Malformed));
    }

    #[test]
    fn outstanding_questions_and_reports_round_trip() {
        let q = outstanding("127.0.0.1:9301", &["c1", "c2"]);
        for cut in 0..q.len() {
            assert_eq!(parse_request(&q[..cut]), Ok(None), "cut at {cut}");
        }
        let want = Request::Outstanding {
            except: "127.0.0.1:9301".into(),
            clusters: vec!["c1".into(), "c2".into()],
        };
        assert_eq!(parse_request(&q), Ok(Some((want, q.len()))));
        // A count that promises more ids than the length holds.
        let mut bad = q.clone();
        let at = 5 + 1 + "127.0.0.1:9301".len();
        bad[at + 3] = 3;
        assert_eq!(parse_request(&bad), Err(WireError::Malformed));
        let mut huge = vec![b'P'];
        huge.extend_from_slice(&(MAX_OUTSTANDING as u32 + 1).to_be_bytes());
        assert_eq!(parse_request(&huge), Err(WireError::Malformed));
        let r = Report(vec![(0, Counts([1, 0, 2])), (7, Counts([0, 3, 0]))]);
        let b = r.encode();
        let mut head = [0u8; 5];
        head.copy_from_slice(&b[..5]);
        assert_eq!(Report::parse_head(&head), Ok(2));
        assert_eq!(Report::parse_entries(&b[5..]), Ok(r));
        assert_eq!(Report::parse_entries(&b[5..20]), Err(WireError::Malformed));
    }
}
