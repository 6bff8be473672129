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
    /// ends); false when none is idle.
    pub fn close_oldest(&self) -> bool {
        let oldest = self.lock().idle.pop_first();
        match oldest {
            Some((_, s)) => {
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
}
