//! Upstream connections: per-core keep-alive pools (reused most-recently-returned first,
//! dropped when idle too long or closed by the peer), and reading a response head from a
//! connection, the one place where interim (1xx) heads are skipped, for the main request
//! and the edge's own requests alike. While the head is awaited, the client is looked at
//! every [`WATCH_SLICE`]: a client that went away ends the wait (`HeadFail::ClientGone`),
//! and the exchange drops the connection, which tells the upstream to stop the work.
//!
//! Must not touch: policy, the request (see `send`); the exchange decides what is
//! reusable.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use monoio::net::TcpStream;

use super::outcome::HeadFail;
use super::sock::set_congestion;
use super::timer::Timer;
use crate::proto::{HeadLimits, Method, ResponseHead};

/// How often the client is looked at while a response head is awaited.
pub const WATCH_SLICE: Duration = Duration::from_millis(100);

/// Response buffer kept with each upstream connection.
pub const UPSTREAM_BUF: usize = 64 * 1024;

/// An upstream connection and its read buffer.
#[derive(Debug)]
pub struct UpstreamConn {
    pub tcp: TcpStream,
    pub buf: Vec<u8>,
    pub addr: SocketAddr,
    /// Came from the pool (has served a request before).
    pub reused: bool,
    idle_since: Instant,
}

impl UpstreamConn {
    /// Appends what the upstream sends next to `buf`: `Ok(0)` at end of stream; an error
    /// of kind `TimedOut` when `deadline` passes first (the buffer is then lost with the
    /// read). `timer`: the connection's (the client's whose request this is).
    pub async fn read_more(&mut self, timer: &mut Timer, deadline: Instant) -> io::Result<usize> {
        let buf = std::mem::take(&mut self.buf);
        match timer
            .run(deadline, super::tcp::read_tcp(&mut self.tcp, buf))
            .await
        {
            Some((res, buf)) => {
                self.buf = buf;
                res
            }
            None => Err(io::ErrorKind::TimedOut.into()),
        }
    }

    /// [`Self::read_more`], looking every [`WATCH_SLICE`] whether the client is `gone`: an
    /// error of kind `ConnectionAborted` when it is (the buffer is then lost with the read).
    async fn read_more_watching(
        &mut self,
        timer: &mut Timer,
        deadline: Instant,
        gone: &dyn Fn() -> bool,
    ) -> io::Result<usize> {
        let buf = std::mem::take(&mut self.buf);
        let read = {
            let mut read = std::pin::pin!(super::tcp::read_tcp(&mut self.tcp, buf));
            loop {
                let now = Instant::now();
                if now >= deadline {
                    break Err(io::ErrorKind::TimedOut);
                }
                match timer
                    .run((now + WATCH_SLICE).min(deadline), read.as_mut())
                    .await
                {
                    Some(done) => break Ok(done),
                    None if gone() => break Err(io::ErrorKind::ConnectionAborted),
                    None => {}
                }
            }
        };
        let (res, buf) = read?;
        self.buf = buf;
        res
    }

    /// Reads the response head to a `method` request into `rh`, skipping interim 1xx heads
    /// (`100 Continue` and the like: their bytes are dropped and the next head is read).
    /// The body that follows starts at `buf[rh.len..]`.
    pub async fn read_head(
        &mut self,
        rh: &mut ResponseHead,
        method: Method,
        timer: &mut Timer,
        deadline: Instant,
        gone: &dyn Fn() -> bool,
    ) -> Result<(), HeadFail> {
        let limits = HeadLimits {
            max_head: 64 * 1024,
            max_auth: 0,
            max_headers: 256,
        };
        let mut got_any = !self.buf.is_empty();
        loop {
            if !self.buf.is_empty() {
                match rh.parse(&self.buf, method, &limits) {
                    Ok(true) if rh.status < 200 => {
                        self.buf.drain(..rh.len);
                        continue;
                    }
                    Ok(true) => return Ok(()),
                    Ok(false) => {}
                    Err(_) => {
                        return Err(HeadFail::Bad(
                            "the search engine sent a malformed response head",
                        ))
                    }
                }
            }
            match self.read_more_watching(timer, deadline, gone).await {
                Ok(n) if n > 0 => got_any = true,
                Err(e) if e.kind() == io::ErrorKind::TimedOut => return Err(HeadFail::Deadline),
                Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {
                    return Err(HeadFail::ClientGone)
                }
                _ if got_any => {
                    return Err(HeadFail::Bad("the search engine cut its response head"))
                }
                _ => return Err(HeadFail::NoBytes),
            }
        }
    }
}

/// Why no upstream connection could be had.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("connect to {0} timed out")]
    Timeout(SocketAddr),
    #[error("connect to {0}: {1}")]
    Refused(SocketAddr, io::Error),
}

/// One core's idle connections by upstream address.
#[derive(Debug)]
pub struct Pool {
    idle: RefCell<HashMap<SocketAddr, Vec<UpstreamConn>>>,
    max_idle: usize,
    idle_timeout: Duration,
    /// TCP congestion control of new connections (`None`: the host's).
    congestion: Option<Arc<str>>,
}

impl Pool {
    /// A pool keeping at most `max_idle` idle connections per address, opening new ones
    /// with the TCP congestion control `congestion` (`None`: the host's).
    pub fn new(max_idle: usize, idle_timeout: Duration, congestion: Option<Arc<str>>) -> Self {
        Pool {
            idle: RefCell::new(HashMap::new()),
            max_idle,
            idle_timeout,
            congestion,
        }
    }

    /// A pooled connection to `addr` that is still fresh, open and quiet (nothing arrived
    /// on it while idle), if any.
    pub fn take_idle(&self, addr: SocketAddr, now: Instant) -> Option<UpstreamConn> {
        let mut idle = self.idle.borrow_mut();
        let list = idle.get_mut(&addr)?;
        while let Some(mut c) = list.pop() {
            let fresh = now.saturating_duration_since(c.idle_since) < self.idle_timeout;
            // Under epoll the runtime already knows whether anything arrived since the
            // last answer was read (`maybe_readable`, no syscall); only then, and always
            // under io_uring, is the socket asked.
            if fresh && !(c.tcp.maybe_readable() && super::sock::idle_unusable(&c.tcp)) {
                c.reused = true;
                return Some(c);
            }
        }
        None
    }

    /// A connection to `addr`: a pooled one unless `fresh` is asked for, else a new one
    /// (with `buf()` as its buffer).
    pub async fn checkout(
        &self,
        addr: SocketAddr,
        fresh: bool,
        timeout: Duration,
        buf: impl FnOnce() -> Vec<u8>,
    ) -> Result<UpstreamConn, ConnectError> {
        if !fresh {
            if let Some(c) = self.take_idle(addr, Instant::now()) {
                return Ok(c);
            }
        }
        // Boxed: a new connection is rare next to a pooled one, and the connect future
        // (with its timer) would otherwise make every request's future larger.
        Box::pin(self.connect(addr, timeout, buf())).await
    }

    /// A new connection to `addr`.
    pub async fn connect(
        &self,
        addr: SocketAddr,
        timeout: Duration,
        buf: Vec<u8>,
    ) -> Result<UpstreamConn, ConnectError> {
        // Set before the connection is made: switched on an established connection, the
        // new algorithm would inherit the pacing BBR's start switched on.
        let congestion = self.congestion.as_deref();
        let socket = TcpStream::connect_addr_prepared(addr, |fd| {
            if let Some(cc) = congestion {
                // Refused (not built in, or not allowed to this user): the host's stays,
                // as the start banner says (`sock::congestion_check`).
                let _ = set_congestion(&fd, cc);
            }
        });
        match monoio::time::timeout(timeout, socket).await {
            Err(_) => Err(ConnectError::Timeout(addr)),
            Ok(Err(e)) => Err(ConnectError::Refused(addr, e)),
            Ok(Ok(tcp)) => {
                let _ = tcp.set_nodelay(true);
                Ok(UpstreamConn {
                    tcp,
                    buf,
                    addr,
                    reused: false,
                    idle_since: Instant::now(),
                })
            }
        }
    }

    /// Returns a connection whose last exchange ended cleanly.
    pub fn put(&self, mut conn: UpstreamConn, now: Instant) {
        conn.buf.clear();
        conn.idle_since = now;
        let mut idle = self.idle.borrow_mut();
        let list = idle.entry(conn.addr).or_default();
        if list.len() < self.max_idle {
            list.push(conn);
        }
    }

    /// Drops idle connections older than the idle timeout.
    pub fn sweep(&self, now: Instant) {
        let mut idle = self.idle.borrow_mut();
        for list in idle.values_mut() {
            list.retain(|c| now.saturating_duration_since(c.idle_since) < self.idle_timeout);
        }
        idle.retain(|_, l| !l.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    /// The socket's `TCP_CONGESTION`, read back from the kernel.
    fn congestion_of(tcp: &TcpStream) -> String {
        let mut name = [0u8; 16];
        let mut len = name.len() as libc::socklen_t;
        // SAFETY: the fd is the open socket `tcp` holds; `name` and `len` are valid for
        // writes of `len` bytes and outlive the call.
        let rc = unsafe {
            libc::getsockopt(
                tcp.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_CONGESTION,
                name.as_mut_ptr().cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0, "{}", io::Error::last_os_error());
        let name = &name[..len as usize];
        String::from_utf8_lossy(name)
            .trim_end_matches('\0')
            .to_string()
    }

    /// Each new upstream connection gets the configured congestion control (reno: built
    /// into every kernel and allowed to every user); `None` leaves the host's; a name the
    /// kernel refuses leaves the host's and still connects.
    #[test]
    fn new_connections_get_the_configured_congestion_control() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let host = super::super::sock::congestion_check("reno").map(|_| ());
        assert!(host.is_ok(), "reno is always there: {host:?}");
        monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .unwrap()
            .block_on(async move {
                let t = Duration::from_secs(5);
                let reno = Pool::new(4, t, Some(Arc::from("reno")));
                let c = reno.connect(addr, t, Vec::new()).await.unwrap();
                assert_eq!(congestion_of(&c.tcp), "reno");

                let system =
                    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap();
                let plain = Pool::new(4, t, None);
                let c = plain.connect(addr, t, Vec::new()).await.unwrap();
                assert_eq!(congestion_of(&c.tcp), system.trim());

                let bogus = Pool::new(4, t, Some(Arc::from("nosuchcc")));
                let c = bogus.connect(addr, t, Vec::new()).await.unwrap();
                assert_eq!(congestion_of(&c.tcp), system.trim());
            });
        assert!(super::super::sock::congestion_check("nosuchcc").is_err());
    }
}
