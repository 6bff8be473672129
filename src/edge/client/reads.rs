//! Reading from the client: a request head (idle and head timeouts, shutdown), more body
//! bytes (body timeout, deadline), the buffer grown for large bodies and SO_RCVLOWAT set so
//! a read takes a whole buffer where it can.
//!
//! Must not touch: what is written back (`answers`), the upstream, policy.

use std::time::{Duration, Instant};

use crate::edge::core::BODY_BUF;
use crate::edge::io::{Patient, Transport};
use crate::edge::outcome::SendFail;
use crate::errors::EdgeError;
use crate::proto::BodyCursor;

use super::{Client, HeadEnd};

impl<T: Transport> Client<T> {
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
}

/// How long a body read waits for a whole buffer (SO_RCVLOWAT) before taking what comes.
const LOWAT_PATIENCE: Duration = Duration::from_millis(50);
