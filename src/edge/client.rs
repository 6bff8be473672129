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
    write_response_head, BodyCursor, Framing, Method, ProtoError, RequestHead, Version,
};

/// How long a body read waits for a whole buffer (SO_RCVLOWAT) before taking what comes.
const LOWAT_PATIENCE: Duration = Duration::from_millis(50);

/// One client connection.
pub(super) struct Client<T> {
    pub core: Rc<Core>,
    pub io: T,
    pub peer: SocketAddr,
    /// Bytes from the client; `buf[pos..]` not consumed yet. A request's head starts at 0.
    pub buf: Vec<u8>,
    pub pos: usize,
    /// The current request's head, parsed from `buf`.
    pub head: RequestHead,
    /// Scratch for what goes to the client.
    pub out: Vec<u8>,
    /// The current request's method and version (the answer depends on them; the head's
    /// spans die with `buf` when it is drained).
    pub method: Method,
    pub version: Version,
    /// Whether the connection may carry another request after this one.
    pub keep_alive: bool,
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

impl<T: Transport> Client<T> {
    /// A client connection on `core`, with a pooled read buffer.
    pub fn new(core: Rc<Core>, io: T, peer: SocketAddr) -> Client<T> {
        Client {
            buf: core.take_buffer(),
            core,
            io,
            peer,
            pos: 0,
            head: RequestHead::new(),
            out: Vec::with_capacity(4096),
            method: Method::Get,
            version: Version::Http11,
            keep_alive: true,
            recv_lowat: 1,
            slow_body: false,
            timer: Timer::new(),
            wrote: false,
            hook: None,
            cors_origin: Vec::new(),
        }
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
        !matches!(self.head.framing, Framing::None | Framing::Length(0))
    }

    /// The whole body is already in the buffer (so the request can be sent again).
    pub fn body_buffered(&self) -> bool {
        match self.head.framing {
            Framing::None => true,
            Framing::Length(n) => (self.buf.len() - self.head.len) as u64 >= n,
            Framing::Chunked | Framing::UntilClose => false,
        }
    }

    /// When the whole body is in the buffer (read, or arrived with the head), moves past
    /// it, so that an answer to this request can keep the connection for the next one.
    pub fn skip_buffered_body(&mut self) -> bool {
        match self.head.framing {
            Framing::None => true,
            Framing::Length(n) if self.body_buffered() => {
                self.pos = self.head.len + n as usize;
                true
            }
            _ => false,
        }
    }

    /// Replaces the buffered body (`old_len` bytes after the head) with `new`; the request
    /// now looks like one sent with `Content-Length`.
    pub fn replace_body(&mut self, old_len: usize, new: &[u8]) {
        let head_len = self.head.len;
        let rest = self.buf.split_off(head_len + old_len);
        self.buf.truncate(head_len);
        self.buf.extend_from_slice(new);
        self.buf.extend_from_slice(&rest);
        self.head.framing = Framing::Length(new.len() as u64);
        self.pos = head_len;
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
    pub async fn read_body_more(
        &mut self,
        body: &BodyCursor,
        deadline: Instant,
    ) -> Result<(), SendFail> {
        self.buf.drain(..self.pos);
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

    /// Answers `Expect: 100-continue` (once admitted); false when the client is gone.
    pub async fn send_continue(&mut self) -> bool {
        if !(self.head.expect_continue && self.has_body()) {
            return true;
        }
        self.out.clear();
        self.out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        let wrote = self.wrote;
        let sent = self.send_out().await.is_ok();
        self.wrote = wrote; // an interim answer: the final one can still be an error
        sent
    }

    /// Sends an error of the edge's own; the connection is kept only when the request had
    /// no unread body and the client wants keep-alive.
    pub async fn answer_error(&mut self, e: &EdgeError) -> Outcome {
        let body = e.body().to_bytes();
        let keep = self.keep_alive && !self.core.shutdown.is_fired();
        self.out.clear();
        let mut headers: Vec<(&str, &[u8])> =
            vec![("Content-Type", b"application/json; charset=UTF-8")];
        headers.extend(e.headers().iter().map(|(k, v)| (*k, v.as_bytes())));
        if !self.cors_origin.is_empty() {
            headers.extend(cors::response_headers(&self.cors_origin));
        }
        write_response_head(
            &mut self.out,
            self.version,
            e.status(),
            &headers,
            Framing::Length(body.len() as u64),
            keep,
        );
        if self.method != Method::Head {
            self.out.extend_from_slice(&body);
        }
        let len = self.out.len() as u64;
        let next = match (self.send_out().await.is_ok(), keep) {
            (true, true) => Next::KeepAlive,
            (true, false) => Next::Linger,
            (false, _) => Next::Close,
        };
        Outcome {
            status: e.status(),
            bytes_in: 0,
            bytes_out: len,
            queue_us: None,
            upstream_us: None,
            next,
        }
    }

    /// The edge's own answer to an allowed CORS pre-check from `cors_origin`: 204, the
    /// headers a browser checks, no body and no upstream call.
    pub async fn answer_preflight(&mut self) -> Outcome {
        let keep = self.keep_alive && !self.core.shutdown.is_fired();
        self.out.clear();
        let headers = cors::preflight_headers(&self.cors_origin);
        write_response_head(
            &mut self.out,
            self.version,
            204,
            &headers,
            Framing::None,
            keep,
        );
        let len = self.out.len() as u64;
        let next = match (self.send_out().await.is_ok(), keep) {
            (true, true) => Next::KeepAlive,
            (true, false) => Next::Linger,
            (false, _) => Next::Close,
        };
        Outcome {
            status: 204,
            bytes_in: 0,
            bytes_out: len,
            queue_us: None,
            upstream_us: None,
            next,
        }
    }

    /// An error before any response byte was sent: answer it; keep the connection only when
    /// the request's body was fully read.
    pub async fn answer_before_response(&mut self, e: &EdgeError) -> Outcome {
        let body_done = self.pos >= self.buf.len() || self.body_buffered();
        self.keep_alive &= body_done;
        self.answer_error(e).await
    }

    /// Answers a failure to send the request; the connection closes after it (the rest
    /// of the body was never read), or at once when the client is gone.
    pub async fn answer_send_failure(&mut self, fail: SendFail) -> Outcome {
        let e = match fail {
            SendFail::Client => return Outcome::gone(),
            SendFail::Upstream => EdgeError::BadGateway(
                "the search engine closed the connection while receiving the request",
            ),
            SendFail::Refuse(e) => e,
        };
        self.keep_alive = false;
        self.answer_error(&e).await
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
