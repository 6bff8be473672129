//! The client side of a connection: its transport, the bytes read from it (the current
//! request's head and body, and what follows: pipelined requests), the scratch buffer for
//! what goes back, how its body is being read (SO_RCVLOWAT), and whether it stays open
//! after this request (keep-alive). Every write to the client, error answers included,
//! goes through here.
//!
//! Files: `reads` (heads and body pieces from the socket, SO_RCVLOWAT), `answers` (every
//! write to the client: staged bytes, `100 Continue`, the edge's own answers); this file
//! holds the connection's state and the buffer's accessors.
//!
//! Must not touch: the upstream, policy. `session` runs the connection's request loop over
//! a [`Client`]; `exchange` and its stages borrow it for one request.

mod answers;
mod reads;

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Instant;

use super::core::Core;
use super::faults::Point;
use super::io::Transport;
use super::outcome::SendFail;
use super::timer::Timer;
use crate::errors::{EdgeError, ProtoLimits};
use crate::proto::{BodyCursor, Framing, Method, RequestHead, Step, Version};

/// One client connection.
///
/// The read buffer, the read position and the parsed head are private: the stages read
/// them through methods and move the position only by stepping a body cursor over the
/// buffer, so whether the connection can carry another request is derived in one place
/// ([`Client::reusable`]) from facts: the client wants it, the body was read to its end,
/// no shutdown began.
pub(super) struct Client<T> {
    pub core: Rc<Core>,
    pub io: T,
    pub peer: SocketAddr,
    /// Bytes from the client; `buf[pos..]` not consumed yet. A request's head starts at 0
    /// (until a streamed body drops what was decoded, see [`Client::read_body_more`]).
    buf: Vec<u8>,
    pos: usize,
    /// The current request's head, parsed from `buf`; never edited after parsing.
    head: RequestHead,
    /// What the current request's answer and the connection's reuse depend on, captured
    /// once when its head was read.
    req: Facts,
    /// Scratch for what goes to the client.
    pub out: Vec<u8>,
    /// The socket's SO_RCVLOWAT (1 but while a large body streams in).
    recv_lowat: usize,
    /// This request's body came too slowly to wait for whole buffers.
    slow_body: bool,
    /// The deadlines of this connection's reads and writes, client and upstream.
    pub timer: Timer,
    /// A byte of the current request's response (its final one, not `100 Continue`) was
    /// handed to the transport: a fault can then only close the connection.
    pub wrote: bool,
    /// Where the current request asks for an injected panic (test hooks only).
    pub hook: Option<Point>,
    /// The browser origin the current request's answer carries CORS headers for (empty:
    /// none; `policy::cors`).
    pub cors_origin: Vec<u8>,
}

/// The current request as the connection sees it: captured from its head once, then
/// changed only by what happens to its body.
#[derive(Debug, Clone, Copy)]
struct Facts {
    method: Method,
    version: Version,
    /// The head's length (0 for a head that could not be read).
    head_len: usize,
    /// The client asked to keep the connection (HTTP/1.1 without `Connection: close`,
    /// HTTP/1.0 with `keep-alive`).
    wants_keep_alive: bool,
    /// How the body in `buf` is framed: the head's framing, or `Length` once a body read
    /// whole was written back de-chunked or rewritten ([`Client::replace_body`]).
    framing: Framing,
    /// `100 Continue` was answered already.
    continued: bool,
    /// The body was read to its end (or there is none): `buf[pos..]` is what follows it.
    body_done: bool,
    /// Bytes before `pos` were dropped from `buf` while a body streamed: the head and the
    /// body's start are gone, the body cannot be sent again or skipped.
    head_dropped: bool,
    /// The stream cannot be read on (a head that could not be parsed, a contained panic).
    broken: bool,
}

impl Facts {
    fn new() -> Facts {
        Facts {
            method: Method::Get,
            version: Version::Http11,
            head_len: 0,
            wants_keep_alive: false,
            framing: Framing::None,
            continued: false,
            body_done: true,
            head_dropped: false,
            broken: false,
        }
    }
}

/// Why no request head could be read.
pub(super) enum HeadEnd {
    /// The client closed or idled out between requests, or shutdown began: close quietly.
    Quiet,
    /// A refusal to answer, then close.
    Refuse(EdgeError, Instant),
}

impl<T: Transport> Client<T> {
    /// A client connection on `core`, with a pooled read buffer holding `early` (the
    /// connection's first bytes, when they were read before).
    pub fn new(core: Rc<Core>, io: T, peer: SocketAddr, early: &[u8]) -> Client<T> {
        let mut buf = core.take_buffer();
        buf.extend_from_slice(early);
        Client {
            buf,
            core,
            io,
            peer,
            pos: 0,
            head: RequestHead::new(),
            req: Facts::new(),
            out: Vec::with_capacity(4096),
            recv_lowat: 1,
            slow_body: false,
            timer: Timer::new(),
            wrote: false,
            hook: None,
            cors_origin: Vec::new(),
        }
    }

    /// The bytes read from the client (the current request's head at the front, until a
    /// streamed body drops it).
    pub fn buf(&self) -> &[u8] {
        &self.buf
    }

    /// The current request's head (spans into [`Client::buf`]).
    pub fn head(&self) -> &RequestHead {
        &self.head
    }

    /// The current request's method (the answer to `HEAD` has no body).
    pub fn method(&self) -> Method {
        self.req.method
    }

    /// The current request's HTTP version (the answer's).
    pub fn version(&self) -> Version {
        self.req.version
    }

    /// The current request head's length in bytes (0 for one that could not be read).
    pub fn head_len(&self) -> usize {
        self.req.head_len
    }

    /// How the current request's body in the buffer is framed.
    pub fn framing(&self) -> Framing {
        self.req.framing
    }

    /// The request whose head was just parsed begins: its facts are captured, reading
    /// goes on after its head.
    pub fn begin_request(&mut self) {
        let h = &self.head;
        self.req = Facts {
            method: h.method,
            version: h.version,
            head_len: h.len,
            wants_keep_alive: h.keep_alive,
            framing: h.framing,
            continued: false,
            body_done: !has_body(h.framing),
            head_dropped: false,
            broken: false,
        };
        self.pos = h.len;
        self.wrote = false;
    }

    /// A head that could not be read: it is answered as a `GET` over HTTP/1.1 would be,
    /// and the connection ends after the answer.
    pub fn begin_unreadable(&mut self) {
        self.req = Facts {
            broken: true,
            ..Facts::new()
        };
        self.wrote = false;
    }

    /// A contained panic left the stream where it was: the connection ends after the answer.
    pub fn break_off(&mut self) {
        self.req.broken = true;
    }

    /// The answer to the current request carries CORS headers for its `Origin`.
    pub fn cors_for_origin(&mut self) {
        let origin = self.head.header(&self.buf, b"origin").unwrap_or_default();
        self.cors_origin.extend_from_slice(origin);
    }

    /// After an answer that kept the connection: what follows the request (pipelined
    /// requests) moves to the front of the buffer.
    pub fn next_request(&mut self) {
        self.buf.drain(..self.pos);
        self.pos = 0;
    }

    /// Whether the connection may carry another request after this one's answer, derived
    /// from facts only: the client wants it, the whole body was read, the stream is
    /// intact, and no shutdown began. The one place this is decided.
    pub fn reusable(&self) -> bool {
        let r = &self.req;
        r.wants_keep_alive && r.body_done && !r.broken && !self.core.shutdown.is_fired()
    }

    /// How protocol errors are reported (the edge's limits).
    pub fn proto_limits(&self) -> ProtoLimits {
        let limits = &self.core.shared.limits;
        ProtoLimits {
            max_head: limits.head.max_head,
            max_body: limits.max_body,
        }
    }

    /// The request declared a body.
    pub fn has_body(&self) -> bool {
        has_body(self.req.framing)
    }

    /// The whole body is in the buffer right after the head (so the request can be sent
    /// again, or the body skipped).
    pub fn body_buffered(&self) -> bool {
        if self.req.head_dropped {
            return false;
        }
        match self.req.framing {
            Framing::None => true,
            Framing::Length(n) => (self.buf.len() - self.req.head_len) as u64 >= n,
            Framing::Chunked | Framing::UntilClose => false,
        }
    }

    /// The body when it is whole in the buffer right after the head (`Content-Length`).
    pub fn buffered_body(&self) -> Option<&[u8]> {
        match self.req.framing {
            Framing::Length(n) if self.body_buffered() => {
                let start = self.req.head_len;
                Some(&self.buf[start..start + n as usize])
            }
            Framing::None => Some(&[]),
            _ => None,
        }
    }

    /// Bytes in the buffer after the head (a body being read whole).
    pub fn buffered_after_head(&self) -> usize {
        self.buf.len() - self.req.head_len
    }

    /// When the whole body is in the buffer and was not streamed, moves past it, so that
    /// an answer to this request can keep the connection for the next one.
    fn skip_buffered_body(&mut self) {
        if self.req.body_done {
            return;
        }
        if let (Framing::Length(n), true) = (self.req.framing, self.body_buffered()) {
            self.pos = self.req.head_len + n as usize;
            self.req.body_done = true;
        }
    }

    /// Replaces the buffered body (`old_len` bytes after the head) with `new`; the request
    /// now looks like one sent with `Content-Length`, its body unread.
    pub fn replace_body(&mut self, old_len: usize, new: &[u8]) {
        let head_len = self.req.head_len;
        let rest = self.buf.split_off(head_len + old_len);
        self.buf.truncate(head_len);
        self.buf.extend_from_slice(new);
        self.buf.extend_from_slice(&rest);
        self.req.framing = Framing::Length(new.len() as u64);
        self.rewind_body();
    }

    /// Back to the body's start, to send the request (again): the head and the whole body
    /// must still be in the buffer ([`Client::body_buffered`]).
    pub fn rewind_body(&mut self) {
        debug_assert!(!self.req.head_dropped, "the body was streamed already");
        self.pos = self.req.head_len;
        self.req.body_done = !self.has_body();
    }

    /// A cursor over the current request's body from the read position, refusing more than
    /// `limit` payload bytes.
    pub fn body_cursor(&self, limit: u64) -> Result<BodyCursor, SendFail> {
        BodyCursor::new(self.req.framing, limit, self.pos).map_err(|e| self.body_error(e, limit))
    }

    /// The next step of `cur` (made by [`Client::body_cursor`]) over the buffer; the read
    /// position follows the cursor, and the body is done when the cursor is.
    pub fn step_body(&mut self, cur: &mut BodyCursor, limit: u64) -> Result<Step, SendFail> {
        let step = cur.step(&self.buf);
        self.pos = cur.pos();
        self.req.body_done |= cur.is_done();
        step.map_err(|e| self.body_error(e, limit))
    }

    /// Body bytes (framing included) read past the head so far, as far as the buffer
    /// still tells.
    pub fn bytes_past_head(&self) -> u64 {
        (self.pos - self.req.head_len.min(self.pos)) as u64
    }

    /// Lends the read buffer out (to write part of it elsewhere without a copy); give it
    /// back with [`Client::give_back_buf`].
    pub fn lend_buf(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    /// The read buffer lent by [`Client::lend_buf`]; `None` when the write that took it
    /// was abandoned: a fresh buffer takes its place and the stream cannot be read on.
    pub fn give_back_buf(&mut self, buf: Option<Vec<u8>>) {
        match buf {
            Some(b) => self.buf = b,
            None => {
                self.buf = self.core.take_buffer();
                self.pos = 0;
                self.req.broken = true;
                self.req.head_dropped = true;
            }
        }
    }

    /// The buffer and transport at the connection's end.
    pub fn into_parts(self) -> (T, Vec<u8>) {
        (self.io, self.buf)
    }
}

/// A framing that carries body bytes.
fn has_body(framing: Framing) -> bool {
    !matches!(framing, Framing::None | Framing::Length(0))
}
