//! The PROXY protocol's version 2 header: the binary preamble a load balancer in TCP mode
//! (HAProxy's `send-proxy-v2`, AWS NLB, Envoy) writes before the client's first byte so
//! that the server learns the client's address. This module reads it from a connection's
//! first bytes and says what they are; the header's fields are parsed by the `ppp` crate.
//!
//! Only v2 is read: its 12-byte signature (`\r\n\r\n\0\r\nQUIT\n`) can begin neither an
//! HTTP request (which starts with a method token) nor a TLS record (which starts with
//! 0x16), so the same bytes never have two readings. The text form (v1, `PROXY TCP4 ...`)
//! could be mistaken for a request line, and is not read.
//!
//! Must not touch: sockets, the list of trusted peers (the caller asks only for a peer it
//! trusts: from any other peer the signature is just bytes the HTTP or TLS layer refuses).

use std::net::SocketAddr;

use ppp::v2::{Addresses, Command, Header};

/// The signature every v2 header starts with.
pub const SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";

/// The fixed part: the signature, version and command, family and protocol, length.
pub const FIXED: usize = 16;

/// The longest header read (addresses and TLVs included): a Unix-socket pair (216 bytes)
/// plus the TLVs load balancers add (ALPN, authority, TLS details, a connection id) fit
/// with room; a longer one is refused rather than buffered.
pub const MAX_HEADER: usize = FIXED + 1024;

/// What a connection's first bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Preamble {
    /// Not yet decidable: read until there are this many bytes in all.
    NeedMore(usize),
    /// No PROXY header: the bytes are the client's own (HTTP or TLS).
    Absent,
    /// A header of `len` bytes; `source` is the client's address when the proxy relayed a
    /// TCP connection over IPv4 or IPv6, `None` for its own health checks (`LOCAL`) and for
    /// families without an IP address (the socket's address stands then).
    Present {
        len: usize,
        source: Option<SocketAddr>,
    },
    /// A header that cannot be read; the connection is closed.
    Invalid(String),
}

/// Reads the preamble at the start of `bytes` (a connection's first bytes).
pub fn read(bytes: &[u8]) -> Preamble {
    let start = &bytes[..bytes.len().min(SIGNATURE.len())];
    if start != &SIGNATURE[..start.len()] {
        return Preamble::Absent;
    }
    if bytes.len() < FIXED {
        return Preamble::NeedMore(FIXED);
    }
    let declared = u16::from_be_bytes([bytes[14], bytes[15]]) as usize;
    let len = FIXED + declared;
    if len > MAX_HEADER {
        return Preamble::Invalid(format!(
            "a PROXY header of {len} bytes is longer than {MAX_HEADER}"
        ));
    }
    if bytes.len() < len {
        return Preamble::NeedMore(len);
    }
    match Header::try_from(&bytes[..len]) {
        Ok(h) => Preamble::Present {
            len,
            source: source_of(&h),
        },
        Err(e) => Preamble::Invalid(format!("a PROXY header that cannot be read: {e}")),
    }
}

fn source_of(h: &Header<'_>) -> Option<SocketAddr> {
    if h.command == Command::Local {
        return None;
    }
    match h.addresses {
        Addresses::IPv4(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
        Addresses::IPv6(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
        Addresses::Unix(_) | Addresses::Unspecified => None,
    }
}

/// The header a proxy sends for a TCP connection from `source` to `destination` (for
/// tests and load tools that stand in for a load balancer).
pub fn header_for(source: SocketAddr, destination: SocketAddr) -> Vec<u8> {
    let family = if source.is_ipv4() { 0x11 } else { 0x21 };
    let mut out = SIGNATURE.to_vec();
    out.push(0x21); // version 2, PROXY
    out.push(family); // IPv4 or IPv6, stream
    let mut addresses = Vec::new();
    match (source, destination) {
        (SocketAddr::V4(s), SocketAddr::V4(d)) => {
            addresses.extend(s.ip().octets());
            addresses.extend(d.ip().octets());
        }
        (SocketAddr::V6(s), SocketAddr::V6(d)) => {
            addresses.extend(s.ip().octets());
            addresses.extend(d.ip().octets());
        }
        _ => panic!("source and destination of one family"),
    }
    addresses.extend(source.port().to_be_bytes());
    addresses.extend(destination.port().to_be_bytes());
    out.extend((addresses.len() as u16).to_be_bytes());
    out.extend(addresses);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn with_len(mut h: Vec<u8>, declared: u16) -> Vec<u8> {
        h[14..16].copy_from_slice(&declared.to_be_bytes());
        h
    }

    #[test]
    fn first_bytes_from_a_table() {
        let v4 = header_for(addr("203.0.113.7:51000"), addr("10.0.0.1:9243"));
        let v6 = header_for(addr("[2001:db8::7]:51000"), addr("[2001:db8::1]:9243"));
        let mut local = v4.clone();
        local[12] = 0x20; // version 2, LOCAL
        let mut unix = SIGNATURE.to_vec();
        unix.extend([0x21, 0x31]);
        unix.extend(216u16.to_be_bytes());
        unix.extend([0u8; 216]);
        let mut v1 = v4.clone();
        v1[12] = 0x11;
        let mut followed = v4.clone();
        followed.extend(b"GET / HTTP/1.1\r\n");
        let cases: Vec<(&str, Vec<u8>, Preamble)> = vec![
            ("nothing yet", vec![], Preamble::NeedMore(FIXED)),
            (
                "an HTTP request",
                b"GET / HTTP/1.1\r\n".to_vec(),
                Preamble::Absent,
            ),
            ("a TLS record", vec![0x16, 3, 1, 0, 0xc8], Preamble::Absent),
            ("one CR", b"\r".to_vec(), Preamble::NeedMore(FIXED)),
            (
                "CRLF then a request",
                b"\r\nGET /".to_vec(),
                Preamble::Absent,
            ),
            (
                "the signature alone",
                SIGNATURE.to_vec(),
                Preamble::NeedMore(FIXED),
            ),
            (
                "the fixed part",
                v4[..FIXED].to_vec(),
                Preamble::NeedMore(28),
            ),
            (
                "IPv4",
                v4.clone(),
                Preamble::Present {
                    len: 28,
                    source: Some(addr("203.0.113.7:51000")),
                },
            ),
            (
                "IPv6",
                v6.clone(),
                Preamble::Present {
                    len: 52,
                    source: Some(addr("[2001:db8::7]:51000")),
                },
            ),
            (
                "LOCAL",
                local,
                Preamble::Present {
                    len: 28,
                    source: None,
                },
            ),
            (
                "a Unix socket",
                unix,
                Preamble::Present {
                    len: 232,
                    source: None,
                },
            ),
            (
                "the client's bytes after it",
                followed,
                Preamble::Present {
                    len: 28,
                    source: Some(addr("203.0.113.7:51000")),
                },
            ),
        ];
        for (what, bytes, want) in cases {
            assert_eq!(read(&bytes), want, "{what}");
        }
        assert!(
            matches!(read(&v1), Preamble::Invalid(_)),
            "version 1 in a v2 header"
        );
        let short = with_len(v4.clone(), 4); // shorter than two IPv4 addresses and ports
        assert!(matches!(read(&short[..20]), Preamble::Invalid(_)));
    }

    proptest::proptest! {
        // Any bytes, and any bytes after the signature: an answer, never a panic; a header
        // never claims more bytes than there are; more bytes never change a decided answer.
        #[test]
        fn any_first_bytes_get_one_answer(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..80), signed in proptest::bool::ANY) {
            let mut bytes = if signed { SIGNATURE.to_vec() } else { Vec::new() };
            bytes.extend(tail);
            let answer = read(&bytes);
            if let Preamble::Present { len, .. } = answer {
                proptest::prop_assert!(len <= bytes.len());
            }
            if !matches!(answer, Preamble::NeedMore(_)) {
                let mut more = bytes.clone();
                more.extend(b"GET / HTTP/1.1\r\n");
                proptest::prop_assert_eq!(read(&more), answer);
            }
        }
    }

    // The longest header is read at N and refused at N+1, before its bytes are asked for.
    #[test]
    fn a_header_is_at_most_max_header_bytes() {
        let base = header_for(addr("203.0.113.7:1"), addr("10.0.0.1:2"));
        let most = (MAX_HEADER - FIXED) as u16;
        let mut at = with_len(base.clone(), most);
        at.resize(MAX_HEADER, 0); // TLV bytes: type 0 length 0 (NOOP-like padding)
        assert_eq!(read(&at[..FIXED]), Preamble::NeedMore(MAX_HEADER));
        assert!(matches!(read(&at), Preamble::Present { len, .. } if len == MAX_HEADER));
        let over = with_len(base, most + 1);
        assert!(matches!(read(&over[..FIXED]), Preamble::Invalid(_)));
    }
}
