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
//! Files: `handshake` (hello, challenge, proof, welcome: the fleet's secret proved both ways),
//! `messages` (what the nodes say once they trust each other: acquire, release, verdicts,
//! handover counts, outstanding reports); this file holds [`WireError`] and the tests.
//!
//! Must not touch: sockets, clocks, the registry.

mod handshake;
mod messages;

pub use handshake::{
    challenge, hello, parse_challenge, parse_hello, PeerSecret, CHALLENGE, MAC, MAGIC, NONCE,
    WELCOME,
};
pub use messages::{
    handover, outstanding, parse_request, Acquire, Counts, Report, Request, Verdict, COUNTS,
    MAX_OUTSTANDING, RELEASE, VERDICT,
};

/// Why bytes were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// Not this protocol (no magic): never a peer.
    NotPeer,
    /// A message this protocol does not have.
    Malformed,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::shards::IndexShards;

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
