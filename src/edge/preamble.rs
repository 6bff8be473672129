//! A trusted proxy's PROXY protocol v2 header, read off a freshly accepted connection
//! before TLS or HTTP see it: the client's address it names replaces the socket's.
//!
//! Asked only for peers in `[edge] trusted_proxies` (from any other peer the bytes go to
//! TLS or HTTP as they are, which refuse a header as malformed, so a client cannot name
//! its own address). The header is optional from a trusted peer too (an HTTP proxy that
//! sends `X-Forwarded-For` instead works as before): the first bytes are read at most up to
//! the header's fixed part, and when they do not start one they are handed on, unread by
//! anyone else, as the connection's first bytes. Reads never go past the header, so no
//! client byte is consumed here.
//!
//! Must not touch: TLS, HTTP, policy (`proxy_v2` decides what the bytes are).

use std::io;
use std::net::SocketAddr;

use monoio::net::TcpStream;

use super::tcp::read_tcp_upto;
use crate::proxy_v2::{self, Preamble};

/// What the connection starts with, once read.
#[derive(Debug)]
pub struct Opened {
    /// The client's address: the header's source, else the socket's peer.
    pub peer: SocketAddr,
    /// Bytes read that are the client's own (no header came): TLS or HTTP reads them first.
    pub early: Vec<u8>,
}

/// Reads the PROXY header a trusted `peer` may send first on `tcp`.
pub async fn read(tcp: &mut TcpStream, peer: SocketAddr) -> io::Result<Opened> {
    let mut buf = Vec::with_capacity(proxy_v2::FIXED);
    loop {
        match proxy_v2::read(&buf) {
            Preamble::Absent => return Ok(Opened { peer, early: buf }),
            Preamble::Present { len, source } => {
                debug_assert_eq!(len, buf.len(), "reads stop at the header's end");
                let peer = source.unwrap_or(peer);
                return Ok(Opened {
                    peer,
                    early: Vec::new(),
                });
            }
            Preamble::Invalid(why) => {
                return Err(io::Error::new(io::ErrorKind::InvalidData, why));
            }
            Preamble::NeedMore(want) => {
                let (res, b) = read_tcp_upto(tcp, buf, want).await;
                buf = b;
                if res? == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
            }
        }
    }
}
