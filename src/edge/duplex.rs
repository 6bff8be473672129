//! An in-memory duplex for tests: [`Duplex`] is the edge's end (a [`Transport`]), [`Peer`]
//! the client's end, driven by the test on the same monoio runtime. Bytes go through
//! unbounded in-memory pipes, in whatever pieces the test sends them.
//!
//! Must not touch: anything outside tests.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io;
use std::ops::Range;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::io::Transport;

/// One direction: bytes written and not read yet, whether the writer closed it, and the
/// reader waiting for either.
#[derive(Debug, Default)]
struct Pipe {
    bytes: RefCell<VecDeque<u8>>,
    closed: Cell<bool>,
    reader: RefCell<Option<Waker>>,
}

impl Pipe {
    fn push(&self, data: &[u8]) {
        self.bytes.borrow_mut().extend(data);
        self.wake();
    }

    fn close(&self) {
        self.closed.set(true);
        self.wake();
    }

    fn wake(&self) {
        if let Some(w) = self.reader.borrow_mut().take() {
            w.wake();
        }
    }

    /// Moves what is there (at most `buf`'s spare capacity) into `buf`; 0 once closed and
    /// drained; pending otherwise.
    fn poll_read(&self, cx: &mut Context<'_>, buf: &mut Vec<u8>) -> Poll<usize> {
        let mut bytes = self.bytes.borrow_mut();
        if !bytes.is_empty() {
            let n = bytes.len().min(buf.capacity() - buf.len());
            buf.extend(bytes.drain(..n));
            return Poll::Ready(n);
        }
        if self.closed.get() {
            return Poll::Ready(0);
        }
        *self.reader.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// The edge's end of an in-memory connection.
#[derive(Debug)]
pub(crate) struct Duplex {
    from_peer: Rc<Pipe>,
    to_peer: Rc<Pipe>,
}

/// The test's end: what it sends, the edge reads, and the other way round.
#[derive(Debug)]
pub(crate) struct Peer {
    to_edge: Rc<Pipe>,
    from_edge: Rc<Pipe>,
    /// Read from the edge and not consumed by a response yet.
    pending: Vec<u8>,
}

/// A connected pair.
pub(crate) fn duplex() -> (Duplex, Peer) {
    let (a, b) = (Rc::new(Pipe::default()), Rc::new(Pipe::default()));
    let edge = Duplex {
        from_peer: a.clone(),
        to_peer: b.clone(),
    };
    let peer = Peer {
        to_edge: a,
        from_edge: b,
        pending: Vec::new(),
    };
    (edge, peer)
}

impl Drop for Duplex {
    fn drop(&mut self) {
        self.to_peer.close();
    }
}

impl Transport for Duplex {
    async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        if buf.len() == buf.capacity() {
            buf.reserve(16 * 1024);
        }
        let n = std::future::poll_fn(|cx| self.from_peer.poll_read(cx, &mut buf)).await;
        (Ok(n), buf)
    }

    async fn write(&mut self, buf: Vec<u8>, range: Range<usize>) -> (io::Result<()>, Vec<u8>) {
        if self.to_peer.closed.get() {
            return (Err(io::ErrorKind::BrokenPipe.into()), buf);
        }
        self.to_peer.push(&buf[range]);
        (Ok(()), buf)
    }

    fn sni(&self) -> Option<&str> {
        None
    }

    fn is_plain(&self) -> bool {
        false
    }

    fn scheme(&self) -> &'static [u8] {
        b"http"
    }

    fn set_recv_lowat(&self, _bytes: usize) -> io::Result<()> {
        Ok(())
    }

    fn peer_closed(&self) -> bool {
        self.from_peer.closed.get()
    }

    async fn close(self, _scratch: Vec<u8>, _linger: Duration) {}
}

impl Peer {
    /// Sends bytes to the edge.
    pub fn send(&self, data: &[u8]) {
        self.to_edge.push(data);
    }

    /// Closes the client's side (the edge reads the end of the stream).
    pub fn close(&self) {
        self.to_edge.close();
    }

    /// Reads until `pred` holds for what came from the edge since the last call (or the
    /// edge closed); returns it.
    pub async fn read_until(&mut self, pred: impl Fn(&[u8]) -> bool) -> Vec<u8> {
        loop {
            if pred(&self.pending) {
                return std::mem::take(&mut self.pending);
            }
            let mut buf = Vec::with_capacity(16 * 1024);
            let n = std::future::poll_fn(|cx| self.from_edge.poll_read(cx, &mut buf)).await;
            if n == 0 {
                return std::mem::take(&mut self.pending);
            }
            self.pending.extend_from_slice(&buf);
        }
    }

    /// Reads one whole response with a `Content-Length` body (or none): its status line
    /// and headers as text, and its body.
    pub async fn response(&mut self) -> (String, Vec<u8>) {
        let got = self.read_until(complete_response).await;
        let end = find(&got, b"\r\n\r\n").expect("a complete head") + 4;
        let head = String::from_utf8_lossy(&got[..end]).into_owned();
        let len = content_length(&head);
        assert!(got.len() >= end + len, "a whole response: {head}");
        self.pending = got[end + len..].to_vec();
        (head, got[end..end + len].to_vec())
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// A final (not 1xx) response head and its Content-Length body are all there.
fn complete_response(got: &[u8]) -> bool {
    let Some(end) = find(got, b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&got[..end + 4]);
    if head.starts_with("HTTP/1.1 1") {
        return true; // an interim head: the caller looks at it
    }
    got.len() >= end + 4 + content_length(&head)
}
