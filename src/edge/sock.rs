//! Socket plumbing: SO_REUSEPORT listeners (one per worker, all on the same port, also when
//! the configured port is 0) and non-consuming checks for a peer that went away and for an
//! idle connection that can no longer be reused.
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

/// Sets the socket's TCP congestion control (`TCP_CONGESTION`) to `name`. Fails when the
/// kernel has no such algorithm or does not allow it to this user
/// (`net.ipv4.tcp_allowed_congestion_control`; root may use any that is available).
pub fn set_congestion(stream: &impl AsRawFd, name: &str) -> io::Result<()> {
    // SAFETY: the fd is an open socket the caller borrows for the call; the option value
    // is `name`'s bytes, alive across the call, with their exact length (the kernel copies
    // at most that many and needs no terminating NUL).
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether new upstream connections can use `name`, tried on a socket of its own: `Ok`
/// with the name the kernel reports, or why not (said once at start; each connection
/// then keeps the host's algorithm without a word).
pub fn congestion_check(name: &str) -> io::Result<String> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    set_congestion(&s, name)?;
    let got = s.tcp_congestion()?;
    Ok(String::from_utf8_lossy(&got)
        .trim_end_matches('\0')
        .to_string())
}

/// Sets SO_RCVLOWAT: the socket reads as ready once `bytes` are queued (or the peer ends,
/// or its receive window is nearly shut: Linux wakes the reader then, so a sender can never
/// stall on it). A read still returns whatever is there.
pub fn set_recv_lowat(stream: &impl AsRawFd, bytes: usize) -> io::Result<()> {
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: the fd is an open socket the caller borrows for the call; the option value
    // is a valid c_int that lives across the call, and its exact size is passed.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The socket's readiness for `events` right now (`revents`), without blocking or
/// consuming anything.
fn poll_now(stream: &impl AsRawFd, events: libc::c_short) -> libc::c_short {
    let mut pfd = libc::pollfd {
        fd: stream.as_raw_fd(),
        events,
        revents: 0,
    };
    loop {
        // SAFETY: `pfd` is one valid, initialised pollfd for an open socket the caller
        // borrows for the duration of the call; the count passed is 1; a zero timeout
        // makes the call non-blocking.
        let n = unsafe { libc::poll(&mut pfd, 1, 0) };
        if n >= 0 {
            return if n == 0 { 0 } else { pfd.revents };
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return libc::POLLERR;
        }
    }
}

/// True when the peer ended its side (FIN), reset the connection, or the socket failed,
/// also when bytes it sent before are still unread ahead of the end (a TLS close_notify,
/// a pipelined request); false while it is open, with or without bytes waiting. Never
/// consumes a byte and never blocks.
pub fn peer_closed(stream: &impl AsRawFd) -> bool {
    let gone = libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
    poll_now(stream, libc::POLLRDHUP) & gone != 0
}

/// True when an idle connection must not be used again: something arrived on it that
/// nobody asked for (bytes, such as a server's 408 for an idle connection, or the end of
/// stream), or it failed. Never consumes a byte and never blocks.
pub fn idle_unusable(stream: &impl AsRawFd) -> bool {
    poll_now(stream, libc::POLLIN | libc::POLLRDHUP) != 0
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
        // Waits for the event (the byte is there to read), not for a time.
        assert!(soon(|| poll_now(&server, libc::POLLIN) & libc::POLLIN != 0));
        assert!(!peer_closed(&server), "open with a byte waiting");
        let mut b = [0u8; 1];
        server.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"x", "the peeked byte was not consumed");
        drop(client);
        assert!(soon(|| peer_closed(&server)), "closed");
    }

    fn pair() -> (std::net::TcpStream, std::net::TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        (client, server)
    }

    /// Waits (bounded) for `cond` on a loopback socket: delivery is immediate there, the
    /// loop only guards against a slow scheduler.
    fn soon(cond: impl Fn() -> bool) -> bool {
        (0..500).any(|_| {
            cond() || {
                std::thread::sleep(std::time::Duration::from_millis(2));
                false
            }
        })
    }

    // A client that sent more (a TLS close_notify, a pipelined request) and then closed is
    // gone, though its last bytes are still unread.
    #[test]
    fn peer_closed_sees_the_end_behind_unread_bytes() {
        let (mut client, server) = pair();
        client.write_all(b"GET /next HTTP/1.1\r\n\r\n").unwrap();
        client.shutdown(std::net::Shutdown::Write).unwrap();
        assert!(soon(|| peer_closed(&server)));
        let mut b = [0u8; 3];
        (&server).read_exact(&mut b).unwrap();
        assert_eq!(&b, b"GET", "nothing was consumed");
    }

    // An idle pooled connection is unusable once anything arrived on it, or it ended.
    #[test]
    fn idle_unusable_sees_stray_bytes_and_the_end() {
        let (mut upstream, edge) = pair();
        assert!(!idle_unusable(&edge), "open and quiet: reusable");
        upstream
            .write_all(b"HTTP/1.1 408 Request Timeout\r\n\r\n")
            .unwrap();
        assert!(soon(|| idle_unusable(&edge)), "stray bytes");
        let (upstream, edge) = pair();
        drop(upstream);
        assert!(soon(|| idle_unusable(&edge)), "closed");
    }

    // The vendored monoio's epoll driver (vendor/PATCHES.md): a read that drains the socket
    // leaves it "not readable" without a syscall; bytes or an end arriving later make it
    // readable again, and a read then gets them (no wake-up is lost). Under io_uring the
    // answer is always "maybe".
    #[test]
    fn epoll_readiness_knows_when_an_idle_socket_got_something() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut peer = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (ours, _) = l.accept().unwrap();
        ours.set_nonblocking(true).unwrap();
        // An absence can only be shown by waiting a while; a change is waited for.
        let settle = || monoio::time::sleep(std::time::Duration::from_millis(30));
        // Bounded: the driver learns of the event at its next turn of the loop.
        async fn eventually(s: &monoio::net::TcpStream) -> bool {
            for _ in 0..500 {
                if s.maybe_readable() {
                    return true;
                }
                monoio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            false
        }
        monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .unwrap()
            .block_on(async {
                let mut s = monoio::net::TcpStream::from_std(ours).unwrap();
                for byte in [b'a', b'b'] {
                    peer.write_all(&[byte]).unwrap();
                    let (res, buf) =
                        super::super::tcp::read_tcp(&mut s, Vec::with_capacity(16)).await;
                    assert_eq!((res.unwrap(), buf[0]), (1, byte));
                    assert!(!s.maybe_readable(), "drained: nothing can be there");
                    settle().await;
                    assert!(!s.maybe_readable(), "still nothing");
                }
                peer.write_all(b"c").unwrap();
                assert!(eventually(&s).await, "a byte arrived");
                let (res, buf) = super::super::tcp::read_tcp(&mut s, Vec::with_capacity(16)).await;
                assert_eq!((res.unwrap(), buf[0]), (1, b'c'));
                drop(peer);
                assert!(eventually(&s).await, "the peer ended");
                let (res, _) = super::super::tcp::read_tcp(&mut s, Vec::with_capacity(16)).await;
                assert_eq!(res.unwrap(), 0);
                assert!(s.maybe_readable(), "the end stays readable");
            });
        let (a, _b) = pair();
        a.set_nonblocking(true).unwrap();
        monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
            .build()
            .expect("io_uring runtime (this test needs io_uring)")
            .block_on(async {
                let s = monoio::net::TcpStream::from_std(a).unwrap();
                assert!(
                    s.maybe_readable(),
                    "io_uring keeps no readiness: always maybe"
                );
            });
    }
}
