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
//! - acquire: `A`, lane (1: `1` a read), budget in ms (4), id length (1), id;
//! - release: `R` (the permit goes back; the connection carries the next acquire);
//! - verdict (home → requester, 9 bytes): a tag and two numbers ([`Verdict`]);
//! - handover (new home → old home): `H`, id length (1), id, address length (1), the new
//!   home's peer address; answered by counts (`C` and the old home's requests in flight
//!   in each of the cluster's allowances, shared, search, write: 4 bytes each), again each
//!   time they fall, the last all zero ([`Counts`]).
//!
//! Must not touch: sockets, clocks, the registry.

use ring::hmac;

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
}

impl Acquire {
    pub fn encode(&self, out: &mut Vec<u8>) {
        let id = &self.cluster.as_bytes()[..self.cluster.len().min(255)];
        out.push(ACQUIRE);
        out.push(u8::from(self.read));
        out.extend_from_slice(&self.budget_ms.to_be_bytes());
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
        if buf.len() < 7 {
            return Ok(None);
        }
        let read = match buf[1] {
            0 => false,
            1 => true,
            _ => return Err(WireError::Malformed),
        };
        let budget_ms = u32::from_be_bytes([buf[2], buf[3], buf[4], buf[5]]);
        let end = 7 + usize::from(buf[6]);
        if buf.len() < end {
            return Ok(None);
        }
        let cluster = std::str::from_utf8(&buf[7..end]).map_err(|_| WireError::Malformed)?;
        let a = Acquire {
            cluster: cluster.to_string(),
            read,
            budget_ms,
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
        };
        let mut buf = Vec::new();
        a.encode(&mut buf);
        for cut in 0..buf.len() {
            assert_eq!(Acquire::parse(&buf[..cut]), Ok(None), "cut at {cut}");
        }
        assert_eq!(Acquire::parse(&buf), Ok(Some((a, buf.len()))));
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
}
