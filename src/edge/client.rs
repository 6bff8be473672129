//! The client side of a connection: its transport, the bytes read from it (the current
//! request's head and body, and what follows: pipelined requests), the scratch buffer for
//! what goes back, how its body is being read (SO_RCVLOWAT), and whether it stays open
//! after this request (keep-alive). Every write to the client, error answers included,
//! goes through here.
//!
//! Must not touch: the upstream, policy. `session` runs the connection's request loop over
//! a [`Client`]; `exchange` and its stages borrow it for one request.

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::core::{Core, BODY_BUF};
use super::faults::Point;
use super::io::{Patient, Transport};
use super::outcome::{Cut, Next, Outcome, SendFail};
use super::timer::Timer;
use crate::errors::{EdgeError, ProtoLimits};
use crate::policy::cors;
use crate::proto::{
    write_response_head, BodyCursor, Framing, Method, ProtoError, RequestHead, Step, Version,
};

/// How long a body read waits for a whole buffer (SO_RCVLOWAT) before taking what comes.
const LOWAT_PATIENCE: Duration = Duration::from_millis(50);

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

    /// Reads until a complete head is at the front of the buffer; returns when its first
    /// byte came. Between requests (no byte yet) the wait is the idle timeout and ends at
    /// shutdown; after the first byte, the head timeout (408).
    pub async fn read_head(&mut self) -> Result<Instant, HeadEnd> {
        debug_assert_eq!(
            self.pos, 0,
            "each request starts at the front of the buffer"
        );
        let limits = self.core.shared.limits.clone();
        let mut first_byte = (!self.buf.is_empty()).then(Instant::now);
        loop {
            if let Some(arrival) = first_byte {
                match self.head.parse(&self.buf, &limits.head) {
                    Ok(true) => return Ok(arrival),
                    Ok(false) => {}
                    Err(e) => {
                        let e = EdgeError::from_proto(e, self.proto_limits());
                        return Err(HeadEnd::Refuse(e, arrival));
                    }
                }
            }
            let wait = match first_byte {
                None => limits.idle_timeout,
                Some(t) => limits.head_timeout.saturating_sub(t.elapsed()),
            };
            let buf = std::mem::take(&mut self.buf);
            let (io, shutdown, timer) = (&mut self.io, &self.core.shutdown, &mut self.timer);
            let idle = first_byte.is_none();
            let until = Instant::now() + wait;
            let read = async {
                monoio::select! {
                    r = timer.run(until, io.read(buf)) => Some(r.ok_or(())),
                    _ = shutdown.wait(), if idle => None,
                }
            };
            match read.await {
                Some(Ok((Ok(n), b))) if n > 0 => {
                    self.buf = b;
                    first_byte.get_or_insert_with(Instant::now);
                }
                Some(Ok((_, b))) => {
                    self.buf = b; // closed or failed
                    return Err(HeadEnd::Quiet);
                }
                Some(Err(_)) if first_byte.is_some() => {
                    self.buf = self.core.take_buffer();
                    return Err(HeadEnd::Refuse(
                        EdgeError::RequestTimeout,
                        first_byte.unwrap_or_else(Instant::now),
                    ));
                }
                Some(Err(_)) | None => {
                    self.buf = self.core.take_buffer(); // idle timeout / shutdown: the read took it
                    return Err(HeadEnd::Quiet);
                }
            }
        }
    }

    /// The buffer and transport at the connection's end.
    pub fn into_parts(self) -> (T, Vec<u8>) {
        (self.io, self.buf)
    }

    /// Appends more bytes from the client to `buf`, keeping everything already there.
    /// Each read may take `body_timeout` (408), and none may pass `deadline` (504).
    pub async fn read_more(&mut self, deadline: Instant) -> Result<(), SendFail> {
        let limits = &self.core.shared.limits;
        let body_end = (Instant::now() + limits.body_timeout).min(deadline);
        let buf = std::mem::take(&mut self.buf);
        match self.timer.run(body_end, self.io.read(buf)).await {
            Some((Ok(n), buf)) if n > 0 => {
                self.buf = buf;
                Ok(())
            }
            Some((_, buf)) => {
                self.buf = buf;
                Err(SendFail::Client)
            }
            None => {
                self.buf = self.core.take_buffer();
                if Instant::now() >= deadline {
                    Err(self.deadline_refusal())
                } else {
                    Err(SendFail::Refuse(EdgeError::RequestTimeout))
                }
            }
        }
    }

    /// The 504 of a request whose deadline passed.
    pub fn deadline_refusal(&self) -> SendFail {
        SendFail::Refuse(EdgeError::GatewayTimeout(
            self.core.shared.limits.deadline.as_secs(),
        ))
    }

    /// Reads more body bytes into `buf` (compacting it first), growing the buffer while
    /// much of the body is still to come. Larger pieces mean fewer reads and writes per
    /// MB; measured with `loadtest/` 5MB `_bulk` bodies (8 clients, one core): io_uring 375
    /// req/s with 256KB pieces, 461 with 512KB, 511 with 1MB (epoll 467, 475, 483). The
    /// grown buffer stays with the connection and goes back to the core's pool, which keeps
    /// a few such buffers, so keep-alive clients allocate it once. SO_RCVLOWAT set to what
    /// the buffer can take (or the rest of the body) then took the same 5MB bodies from
    /// 0.99x to 1.00x nginx's MB/s under io_uring, 0.91x to 0.97x under epoll (3 rounds
    /// each, `loadtest/run.sh --scenarios bulk --rounds 3`).
    /// What was decoded (`buf[..pos]`, the head with it) is dropped first, and the cursor
    /// told so.
    pub async fn read_body_more(
        &mut self,
        body: &mut BodyCursor,
        deadline: Instant,
    ) -> Result<(), SendFail> {
        debug_assert_eq!(body.pos(), self.pos, "the cursor stepped through step_body");
        self.buf.drain(..self.pos);
        body.dropped(self.pos);
        self.req.head_dropped |= self.pos > 0;
        self.pos = 0;
        let cap = self.buf.capacity();
        let want = match body.remaining() {
            // Room for what is still to come, in powers of two.
            Some(left) => (left as usize)
                .saturating_add(self.buf.len())
                .next_power_of_two(),
            // Chunked: double while reads fill the buffer.
            None if self.buf.len() == cap => cap * 2,
            None => cap,
        }
        .min(BODY_BUF);
        if want > cap {
            self.buf.reserve_exact(want - self.buf.len());
        }
        // Wake for this read only once the buffer can be filled (or the body is all
        // there): fewer, larger reads and fewer wake-ups per MB. Plain TCP only (a TLS
        // read takes one record at a time), and not for a client found too slow for it.
        let room = self.buf.capacity() - self.buf.len();
        let lowat = match body.remaining() {
            Some(left) if self.io.is_plain() && !self.slow_body && self.buf.is_empty() => {
                (left as usize).min(room).max(1)
            }
            _ => 1,
        };
        self.set_lowat(lowat);
        if self.recv_lowat > 1 && self.read_batched(deadline).await? {
            return Ok(());
        }
        self.read_more(deadline).await
    }

    /// Sets the socket's SO_RCVLOWAT when it changes. A failure only costs wake-ups, so it
    /// is not an error; the value is then left as it was.
    fn set_lowat(&mut self, bytes: usize) {
        if bytes != self.recv_lowat && self.io.set_recv_lowat(bytes).is_ok() {
            self.recv_lowat = bytes;
        }
    }

    /// Back to reading whatever comes, for the next request.
    pub fn end_body_reads(&mut self) {
        self.set_lowat(1);
        self.slow_body = false;
    }

    /// A read into the empty `buf` that waits for `recv_lowat` bytes, for at most
    /// `LOWAT_PATIENCE`. A client slower than that is read as it comes for the rest of its
    /// body (false), so the body timeout keeps meaning "the client stalled", never "the
    /// client has not sent a whole buffer yet".
    async fn read_batched(&mut self, deadline: Instant) -> Result<bool, SendFail> {
        let patience = (Instant::now() + LOWAT_PATIENCE).min(deadline);
        let buf = std::mem::take(&mut self.buf);
        let (res, buf) = self.io.read_patiently(buf, &mut self.timer, patience).await;
        self.buf = buf;
        match res {
            Patient::Done(Ok(n)) if n > 0 => Ok(true),
            Patient::Canceled => {
                self.slow_body = true;
                self.set_lowat(1);
                Ok(false)
            }
            Patient::Unsupported => Ok(false),
            Patient::Done(_) => Err(SendFail::Client),
        }
    }

    /// Writes and empties `out`.
    pub async fn send_out(&mut self) -> Result<(), Cut> {
        if self.out.is_empty() {
            return Ok(());
        }
        self.wrote = true;
        let out = std::mem::take(&mut self.out);
        let (res, mut out) = self.io.write_all(out).await;
        out.clear();
        self.out = out;
        res.map_err(|_| Cut::Client)
    }

    /// Writes `out`, then `bytes[range]` (bytes of another buffer, e.g. the upstream's),
    /// without copying them; gives `bytes` back.
    pub async fn send_slice(
        &mut self,
        bytes: Vec<u8>,
        range: std::ops::Range<usize>,
    ) -> (Result<(), Cut>, Vec<u8>) {
        if let Err(cut) = self.send_out().await {
            return (Err(cut), bytes);
        }
        self.wrote = true;
        let (res, bytes) = self.io.write(bytes, range).await;
        (res.map_err(|_| Cut::Client), bytes)
    }

    /// Answers `Expect: 100-continue` (once admitted, and once only); false when the
    /// client is gone.
    pub async fn send_continue(&mut self) -> bool {
        if !(self.head.expect_continue && self.has_body()) || self.req.continued {
            return true;
        }
        self.req.continued = true;
        self.out.clear();
        self.out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        let wrote = self.wrote;
        let sent = self.send_out().await.is_ok();
        self.wrote = wrote; // an interim answer: the final one can still be an error
        sent
    }

    /// The one failure path of a request whose response has not begun: the client gone
    /// (nothing to send), the upstream failing while the request was sent (502), or a
    /// refusal of the edge's own. A body that is whole in the buffer is skipped, so the
    /// answer can keep the connection; whether it does is [`Client::reusable`].
    pub async fn fail(&mut self, fail: impl Into<SendFail>) -> Outcome {
        let e = match fail.into() {
            SendFail::Client => return Outcome::gone(),
            SendFail::Upstream => EdgeError::BadGateway(
                "the search engine closed the connection while receiving the request",
            ),
            SendFail::Refuse(e) => e,
        };
        self.skip_buffered_body();
        self.answer_error(&e).await
    }

    /// Sends an error of the edge's own, keeping the connection when
    /// [`Client::reusable`] says so.
    async fn answer_error(&mut self, e: &EdgeError) -> Outcome {
        let body = e.body().to_bytes();
        let keep = self.reusable();
        self.out.clear();
        let mut headers: Vec<(&str, &[u8])> =
            vec![("Content-Type", b"application/json; charset=UTF-8")];
        headers.extend(e.headers().iter().map(|(k, v)| (*k, v.as_bytes())));
        if !self.cors_origin.is_empty() {
            headers.extend(cors::response_headers(&self.cors_origin));
        }
        write_response_head(
            &mut self.out,
            self.req.version,
            e.status(),
            &headers,
            Framing::Length(body.len() as u64),
            keep,
        );
        if self.req.method != Method::Head {
            self.out.extend_from_slice(&body);
        }
        let (next, bytes_out) = self.sent_answer(keep).await;
        Outcome {
            status: e.status(),
            bytes_out,
            next,
            ..Outcome::gone()
        }
    }

    /// The edge's own answer to an allowed CORS pre-check from `cors_origin`: 204, the
    /// headers a browser checks, no body and no upstream call.
    pub async fn answer_preflight(&mut self) -> Outcome {
        self.skip_buffered_body();
        let keep = self.reusable();
        self.out.clear();
        let headers = cors::preflight_headers(&self.cors_origin);
        write_response_head(
            &mut self.out,
            self.req.version,
            204,
            &headers,
            Framing::None,
            keep,
        );
        let (next, bytes_out) = self.sent_answer(keep).await;
        Outcome {
            status: 204,
            bytes_out,
            next,
            ..Outcome::gone()
        }
    }

    /// Writes the answer staged in `out` (announcing `keep`): what the connection does
    /// next, and the bytes written.
    async fn sent_answer(&mut self, keep: bool) -> (Next, u64) {
        let len = self.out.len() as u64;
        let next = match (self.send_out().await.is_ok(), keep) {
            (true, true) => Next::KeepAlive,
            (true, false) => Next::Linger,
            (false, _) => Next::Close,
        };
        (next, len)
    }

    /// A protocol error in the request body read under `limit`: the answer (400, 413) as a
    /// send failure. The one mapping for every body the edge reads, streamed or whole.
    pub fn body_error(&self, e: ProtoError, limit: u64) -> SendFail {
        let limits = ProtoLimits {
            max_body: limit,
            ..self.proto_limits()
        };
        SendFail::Refuse(EdgeError::from_proto(e, limits))
    }
}

/// A framing that carries body bytes.
fn has_body(framing: Framing) -> bool {
    !matches!(framing, Framing::None | Framing::Length(0))
}
