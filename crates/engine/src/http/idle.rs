//! The connections waiting for their next request (keep-alive, idle), oldest first, so that
//! at the connection limit the engine closes the one idle the longest instead of refusing
//! the new one: the limit then bounds the connections doing work, which its client (the
//! edge) bounds by its plans' allowances, and idle connections its pools keep can never
//! lock everyone out (issue 25: at the limit, every tenant got 503).
//!
//! Must not touch: request handling.

use std::collections::BTreeMap;
use std::net::{Shutdown, TcpStream};
use std::sync::{Mutex, MutexGuard};

/// The idle connections, by the order they became idle.
#[derive(Debug, Default)]
pub struct IdleSet {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    idle: BTreeMap<u64, TcpStream>,
}

/// A connection's place in the set while it is idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket(u64);

impl IdleSet {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The connection of `handle` (a clone of its stream) waits for a request.
    pub fn idle(&self, handle: TcpStream) -> Ticket {
        let mut i = self.lock();
        let t = i.next;
        i.next += 1;
        i.idle.insert(t, handle);
        Ticket(t)
    }

    /// The connection got a request; false when it was closed for room meanwhile.
    pub fn busy(&self, t: Ticket) -> bool {
        self.lock().idle.remove(&t.0).is_some()
    }

    /// Closes the connection idle the longest (its thread sees the end of its stream and
    /// ends); false when none is idle. A connection whose next request has already come
    /// (its thread has not read it yet) is not idle: it is left alone, never closed with a
    /// request its client sent.
    pub fn close_oldest(&self) -> bool {
        let mut i = self.lock();
        let oldest = i
            .idle
            .iter()
            .find(|(_, s)| !request_waiting(s))
            .map(|(&t, _)| t);
        match oldest.and_then(|t| i.idle.remove(&t)) {
            Some(s) => {
                let _ = s.shutdown(Shutdown::Both);
                true
            }
            None => false,
        }
    }

    /// Connections idle now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().idle.len()
    }

    /// Whether no connection is idle.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether bytes of a request wait to be read on `s`: peeked without blocking (a flag of
/// this one call, not the socket's mode, which the connection's own thread shares) and
/// without consuming anything.
fn request_waiting(s: &TcpStream) -> bool {
    let mut byte = [std::mem::MaybeUninit::<u8>::uninit()];
    let flags = libc::MSG_PEEK | libc::MSG_DONTWAIT;
    matches!(socket2::SockRef::from(s).recv_with_flags(&mut byte, flags), Ok(n) if n > 0)
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::net::TcpListener;

    use super::*;

    fn pair(l: &TcpListener) -> (TcpStream, TcpStream) {
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (c, s)
    }

    #[test]
    fn the_connection_idle_longest_is_closed_first_and_busy_ones_never() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let set = IdleSet::default();
        let (_c1, s1) = pair(&l);
        let (_c2, s2) = pair(&l);
        let (_c3, s3) = pair(&l);
        let t1 = set.idle(s1.try_clone().unwrap());
        let t2 = set.idle(s2.try_clone().unwrap());
        let t3 = set.idle(s3.try_clone().unwrap());
        assert!(set.busy(t2), "the second got a request");
        assert_eq!(set.len(), 2);
        assert!(set.close_oldest());
        let mut s1 = s1;
        assert_eq!(s1.read(&mut [0u8; 1]).unwrap(), 0, "the oldest was closed");
        assert!(!set.busy(t1), "closed for room: its thread knows");
        assert!(set.close_oldest());
        assert!(!set.busy(t3));
        assert!(!set.close_oldest(), "none left");
        assert!(set.is_empty());
    }

    // issue 25: a connection whose request came before its thread read it is not idle:
    // closing it for room would drop a request its client sent (seen under load as a
    // busy wait evicted in place of an idle connection).
    #[test]
    fn a_connection_with_a_request_waiting_is_never_closed_for_room() {
        use std::io::Write;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let set = IdleSet::default();
        let (mut c1, s1) = pair(&l);
        let (_c2, s2) = pair(&l);
        set.idle(s1.try_clone().unwrap());
        let t2 = set.idle(s2.try_clone().unwrap());
        c1.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        while !request_waiting(&s1) {
            std::thread::yield_now(); // loopback: the bytes arrive at once
        }
        assert!(set.close_oldest(), "the younger idle one makes room");
        assert!(!set.busy(t2), "it was the one closed");
        assert!(!set.close_oldest(), "the one with a request is left alone");
        let mut s1 = s1;
        let mut got = [0u8; 3];
        s1.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"GET", "its request is still there to read");
    }
}
