//! Upstream connections: per-core keep-alive pools (reused most-recently-returned first,
//! dropped when idle too long or closed by the peer), and reading a response head from a
//! connection, the one place where interim (1xx) heads are skipped, for the main request
//! and the edge's own requests alike.
//!
//! Must not touch: policy, the request (see `send`); the exchange decides what is
//! reusable.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use monoio::net::TcpStream;

use super::outcome::HeadFail;
use crate::proto::{HeadLimits, Method, ResponseHead};

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
    /// of kind `TimedOut` when `deadline` passes first (the buffer is then lost with the read).
    pub async fn read_more(&mut self, deadline: Instant) -> io::Result<usize> {
        let buf = std::mem::take(&mut self.buf);
        let left = deadline.saturating_duration_since(Instant::now());
        match monoio::time::timeout(left, super::tcp::read_tcp(&mut self.tcp, buf)).await {
            Ok((res, buf)) => {
                self.buf = buf;
                res
            }
            Err(_) => Err(io::ErrorKind::TimedOut.into()),
        }
    }

    /// Reads the response head to a `method` request into `rh`, skipping interim 1xx heads
    /// (`100 Continue` and the like: their bytes are dropped and the next head is read).
    /// The body that follows starts at `buf[rh.len..]`.
    pub async fn read_head(
        &mut self,
        rh: &mut ResponseHead,
        method: Method,
        deadline: Instant,
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
            match self.read_more(deadline).await {
                Ok(n) if n > 0 => got_any = true,
                Err(e) if e.kind() == io::ErrorKind::TimedOut => return Err(HeadFail::Deadline),
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
}

impl Pool {
    /// A pool keeping at most `max_idle` idle connections per address.
    pub fn new(max_idle: usize, idle_timeout: Duration) -> Self {
        Pool {
            idle: RefCell::new(HashMap::new()),
            max_idle,
            idle_timeout,
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
        Pool::connect(addr, timeout, buf()).await
    }

    /// A new connection to `addr`.
    pub async fn connect(
        addr: SocketAddr,
        timeout: Duration,
        buf: Vec<u8>,
    ) -> Result<UpstreamConn, ConnectError> {
        match monoio::time::timeout(timeout, TcpStream::connect_addr(addr)).await {
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
