//! Socket plumbing: SO_REUSEPORT listeners (one per worker, all on the same port, also when
//! the configured port is 0) and a non-consuming check for a peer that went away.
//!
//! Must not touch: HTTP or policy.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;

use socket2::{Domain, Protocol, Socket, Type};

/// Binds `count` listeners with SO_REUSEPORT on `addr`. With port 0, the first picks the
/// port and the others join it. Returns them and the bound address.
pub fn reuseport_listeners(
    addr: SocketAddr,
    count: usize,
) -> io::Result<(Vec<TcpListener>, SocketAddr)> {
    let mut out = Vec::with_capacity(count);
    let mut bound = addr;
    for _ in 0..count.max(1) {
        let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        s.set_reuse_address(true)?;
        s.set_reuse_port(true)?;
        s.set_tcp_nodelay(true)?;
        s.bind(&bound.into())?;
        s.listen(4096)?;
        let l: TcpListener = s.into();
        bound = l.local_addr()?;
        out.push(l);
    }
    Ok((out, bound))
}

/// True when the peer closed its side or the connection failed; false while it is open
/// (with or without bytes waiting). Never consumes a byte and never blocks.
pub fn peer_closed(stream: &impl AsRawFd) -> bool {
    let mut byte = [0u8; 1];
    let fd = stream.as_raw_fd();
    // SAFETY: `fd` is an open socket owned by `stream`, which the caller borrows for the
    // duration of this call; `byte` is a valid writable buffer of the length passed.
    // MSG_PEEK leaves the data in the socket; MSG_DONTWAIT makes the call non-blocking.
    let n = unsafe {
        libc::recv(
            fd,
            byte.as_mut_ptr().cast(),
            byte.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    if n > 0 {
        return false;
    }
    if n == 0 {
        return true;
    }
    let err = io::Error::last_os_error();
    !matches!(
        err.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn port_zero_listeners_share_one_port() {
        let (ls, addr) = reuseport_listeners("127.0.0.1:0".parse().unwrap(), 3).unwrap();
        assert_eq!(ls.len(), 3);
        assert_ne!(addr.port(), 0);
        for l in &ls {
            assert_eq!(l.local_addr().unwrap(), addr);
        }
    }

    #[test]
    fn peer_closed_sees_open_pending_and_closed() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut server, _) = l.accept().unwrap();
        assert!(!peer_closed(&server), "open, nothing sent");
        client.write_all(b"x").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!peer_closed(&server), "open with a byte waiting");
        let mut b = [0u8; 1];
        server.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"x", "the peeked byte was not consumed");
        drop(client);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(peer_closed(&server), "closed");
    }
}
