//! Sending a request upstream: the re-serialised head, then the body streamed from the
//! client through a [`BodyFilter`]: forwarded as it comes (re-framed), with `_bulk` actions
//! counted, or rewritten into a tenant's namespace (then sent chunked, since its length
//! changes). A body refused midway (too large, too many actions, malformed) is abandoned
//! unterminated: the upstream never sees its end, so it never applies any of it.
//!
//! Must not touch: admission, the response (see `relay`), policy decisions.

use std::future::Future as _;
use std::io::Write as _;
use std::task::Poll;
use std::time::{Duration, Instant};

use super::core::BODY_BUF;
use super::exchange::{until, SendFail};
use super::io::{read_tcp_cancelable, write_tcp, ClientIo};
use super::session::{Admitted, Session};
use super::upstream::UpstreamConn;
use crate::errors::EdgeError;
use crate::policy::bulk::BulkCounter;
use crate::proto::{
    chunk_size_line, write_forward_request, BodyDecoder, ForwardRequest, Framing, ProtoError,
    LAST_CHUNK,
};
use crate::tenancy::BodyRewriter;

/// Small bodies are sent in the same write as the head.
const COALESCE: usize = 16 * 1024;
/// How long a body read waits for a whole buffer (SO_RCVLOWAT) before taking what comes.
const LOWAT_PATIENCE: Duration = Duration::from_millis(50);
/// Chunked bodies are re-framed into writes of about this size.
const CHUNKED_FLUSH: usize = 64 * 1024;
/// Request headers never forwarded for the multitenant class (responses must come back
/// uncompressed to be rewritten).
const TENANT_DROPPED: &[&[u8]] = &[b"accept-encoding"];

/// What happens to the body's bytes on their way upstream.
#[derive(Debug)]
pub(super) enum BodyFilter {
    /// Forwarded as they are.
    Pass,
    /// Forwarded as they are; `_bulk` actions counted (413 over the plan's limit).
    Count(BulkCounter, u64),
    /// Rewritten into the tenant's namespace (sent chunked).
    Rewrite(BodyRewriter),
}

fn refusal(e: ProtoError, max_body: u64) -> SendFail {
    match e {
        ProtoError::BodyTooLarge => SendFail::Refuse(EdgeError::BodyTooLarge(max_body)),
        ProtoError::BadChunk(why) | ProtoError::Malformed(why) | ProtoError::Smuggling(why) => {
            SendFail::Refuse(EdgeError::BadRequest(why))
        }
        _ => SendFail::Refuse(EdgeError::BadRequest("malformed request body")),
    }
}

impl Session {
    /// Writes `up_out` to the upstream and empties it.
    async fn flush_up(&mut self, up: &mut UpstreamConn, deadline: Instant) -> Result<(), SendFail> {
        if self.up_out.is_empty() {
            return Ok(());
        }
        let out = std::mem::take(&mut self.up_out);
        let len = out.len();
        match until(deadline, write_tcp(&mut up.tcp, out, 0..len)).await {
            Some((res, mut out)) => {
                out.clear();
                self.up_out = out;
                res.map_err(|_| SendFail::Upstream)
            }
            None => {
                self.up_out = Vec::with_capacity(4096);
                Err(self.deadline_refusal())
            }
        }
    }

    fn deadline_refusal(&self) -> SendFail {
        SendFail::Refuse(EdgeError::GatewayTimeout(
            self.core.shared.limits.deadline.as_secs(),
        ))
    }

    /// Writes `buf[range]` (client bytes) straight to the upstream.
    async fn forward_slice(
        &mut self,
        up: &mut UpstreamConn,
        range: std::ops::Range<usize>,
        deadline: Instant,
    ) -> Result<(), SendFail> {
        self.flush_up(up, deadline).await?;
        let buf = std::mem::take(&mut self.buf);
        match until(deadline, write_tcp(&mut up.tcp, buf, range)).await {
            Some((res, buf)) => {
                self.buf = buf;
                res.map_err(|_| SendFail::Upstream)
            }
            None => {
                self.buf = self.core.take_buffer();
                Err(self.deadline_refusal())
            }
        }
    }

    /// Reads more body bytes from the client into `buf` (compacting it first), growing the
    /// buffer while much of the body is still to come. Larger pieces mean fewer reads and
    /// writes per MB; measured with `loadtest/` 5MB `_bulk` bodies (8 clients, one core):
    /// io_uring 375 req/s with 256KB pieces, 461 with 512KB, 511 with 1MB (epoll 467, 475,
    /// 483). The grown buffer stays with the connection and goes back to the core's pool,
    /// which keeps a few such buffers, so keep-alive clients allocate it once.
    /// SO_RCVLOWAT set to what the buffer can take (or the rest of the body) then took the
    /// same 5MB bodies from 0.99x to 1.00x nginx's MB/s under io_uring, 0.91x to 0.97x
    /// under epoll (3 rounds each, `loadtest/run.sh --scenarios bulk --rounds 3`).
    async fn read_body_more(
        &mut self,
        dec: &BodyDecoder,
        deadline: Instant,
    ) -> Result<(), SendFail> {
        self.buf.drain(..self.pos);
        self.pos = 0;
        let cap = self.buf.capacity();
        let want = match dec.remaining() {
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
        let lowat = match dec.remaining() {
            Some(left) if self.io.is_plain() && !self.slow_body && self.buf.is_empty() => {
                (left as usize).min(room).max(1)
            }
            _ => 1,
        };
        self.set_lowat(lowat);
        if self.recv_lowat > 1 && self.read_batched(deadline).await? {
            return Ok(());
        }
        self.read_more_keep(deadline).await
    }

    /// Sets the client socket's SO_RCVLOWAT when it changes. A failure only costs
    /// wake-ups, so it is not an error; the value is then left as it was.
    pub(super) fn set_lowat(&mut self, bytes: usize) {
        if bytes != self.recv_lowat && self.io.set_recv_lowat(bytes).is_ok() {
            self.recv_lowat = bytes;
        }
    }

    /// Back to reading whatever comes, for the next request.
    pub(super) fn end_body_reads(&mut self) {
        self.set_lowat(1);
        self.slow_body = false;
    }

    /// A read into the empty `buf` that waits for `recv_lowat` bytes, for at most
    /// `LOWAT_PATIENCE`. A client slower than that is read as it comes for the rest of its
    /// body (false), so the body timeout keeps meaning "the client stalled", never "the
    /// client has not sent a whole buffer yet". The read is canceled, not dropped, so bytes
    /// it took just before the cancel are kept.
    async fn read_batched(&mut self, deadline: Instant) -> Result<bool, SendFail> {
        let (res, buf) = {
            let ClientIo::Plain(tcp) = &mut self.io else {
                return Ok(false);
            };
            let patience = (Instant::now() + LOWAT_PATIENCE).min(deadline);
            let canceller = monoio::io::Canceller::new();
            let buf = std::mem::take(&mut self.buf);
            let mut read = std::pin::pin!(read_tcp_cancelable(tcp, buf, canceller.handle()));
            let mut wait = std::pin::pin!(monoio::time::sleep_until(
                monoio::time::Instant::from_std(patience)
            ));
            let first = std::future::poll_fn(|cx| {
                if let Poll::Ready(done) = read.as_mut().poll(cx) {
                    return Poll::Ready(Some(done));
                }
                wait.as_mut().poll(cx).map(|_| None)
            })
            .await;
            match first {
                Some(done) => done,
                None => {
                    canceller.cancel();
                    read.await
                }
            }
        };
        self.buf = buf;
        match res {
            Ok(n) if n > 0 => Ok(true),
            // Canceled: the patience ran out before any byte came.
            Err(e) if e.raw_os_error() == Some(libc::ECANCELED) => {
                self.slow_body = true;
                self.set_lowat(1);
                Ok(false)
            }
            _ => Err(SendFail::Client),
        }
    }

    /// Appends more bytes from the client to `buf`, keeping everything already there.
    pub(super) async fn read_more_keep(&mut self, deadline: Instant) -> Result<(), SendFail> {
        let limits = &self.core.shared.limits;
        let body_end = (Instant::now() + limits.body_timeout).min(deadline);
        let buf = std::mem::take(&mut self.buf);
        match until(body_end, self.io.read(buf)).await {
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

    fn forward_head(&mut self, framing: Framing, tenant: bool) {
        let mut ip = [0u8; 48];
        let n = {
            let mut cur = std::io::Cursor::new(&mut ip[..]);
            let _ = write!(cur, "{}", self.peer.ip());
            cur.position() as usize
        };
        self.up_out.clear();
        let fwd = ForwardRequest {
            target: &self.fwd_target,
            framing,
            forwarded_for: &ip[..n],
            forwarded_proto: self.io.scheme(),
            strip_authorization: true,
            strip_expect: true,
            drop: if tenant { TENANT_DROPPED } else { &[] },
        };
        write_forward_request(&mut self.up_out, &self.head, &self.buf, &fwd);
    }

    /// Appends `data` to `up_out` as one chunk.
    fn push_chunk(&mut self, data: std::ops::Range<usize>, from_rewritten: bool) {
        let len = data.len();
        if len == 0 {
            return;
        }
        let mut line = [0u8; 18];
        self.up_out
            .extend_from_slice(chunk_size_line(len, &mut line));
        let src = if from_rewritten {
            &self.rewritten[data]
        } else {
            &self.buf[data]
        };
        self.up_out.extend_from_slice(src);
        self.up_out.extend_from_slice(b"\r\n");
    }

    /// Sends head and body; returns the body bytes received from the client.
    pub(super) async fn send_request(
        &mut self,
        up: &mut UpstreamConn,
        filter: &mut BodyFilter,
        adm: &Admitted<'_>,
        deadline: Instant,
    ) -> Result<u64, SendFail> {
        let max_body = self.core.shared.limits.max_body;
        let framing = self.head.framing;
        let mut dec = BodyDecoder::new(framing, max_body).map_err(|e| refusal(e, max_body))?;
        let has_body = !matches!(framing, Framing::None | Framing::Length(0));
        let up_framing = match filter {
            BodyFilter::Rewrite(_) if has_body => Framing::Chunked,
            _ => framing,
        };
        self.forward_head(up_framing, matches!(filter, BodyFilter::Rewrite(_)));
        while !dec.is_done() {
            if self.pos == self.buf.len() {
                self.flush_up(up, deadline).await?;
                self.read_body_more(&dec, deadline).await?;
            }
            let d = dec
                .decode(&self.buf[self.pos..])
                .map_err(|e| refusal(e, max_body))?;
            let data = self.pos + d.data.start..self.pos + d.data.end;
            self.send_data(up, filter, adm, data, up_framing, deadline)
                .await?;
            self.pos += d.consumed;
            if d.consumed == 0 && !d.done {
                self.flush_up(up, deadline).await?;
                self.read_body_more(&dec, deadline).await?;
            }
        }
        if let BodyFilter::Rewrite(rw) = filter {
            self.rewritten.clear();
            rw.finish(&mut self.rewritten).map_err(SendFail::Refuse)?;
            let n = self.rewritten.len();
            self.push_chunk(0..n, true);
        }
        if up_framing == Framing::Chunked {
            self.up_out.extend_from_slice(LAST_CHUNK);
        }
        self.flush_up(up, deadline).await?;
        Ok(dec.total())
    }

    /// Passes one decoded piece of the body through the filter towards the upstream.
    async fn send_data(
        &mut self,
        up: &mut UpstreamConn,
        filter: &mut BodyFilter,
        adm: &Admitted<'_>,
        data: std::ops::Range<usize>,
        up_framing: Framing,
        deadline: Instant,
    ) -> Result<(), SendFail> {
        if data.is_empty() {
            return Ok(());
        }
        match filter {
            BodyFilter::Rewrite(rw) => {
                self.rewritten.clear();
                rw.feed(&self.buf[data], &mut self.rewritten)
                    .map_err(SendFail::Refuse)?;
                if let (BodyRewriter::Bulk(b), Some(t)) = (&*rw, adm.tenant) {
                    self.ensure_candidates(b, adm.cluster, &t.prefix, deadline)
                        .await?;
                }
                let n = self.rewritten.len();
                self.push_chunk(0..n, true);
                if self.up_out.len() >= CHUNKED_FLUSH {
                    self.flush_up(up, deadline).await?;
                }
                return Ok(());
            }
            BodyFilter::Count(counter, limit) => {
                if counter.feed(&self.buf[data.clone()]) > *limit {
                    return Err(SendFail::Refuse(EdgeError::TooManyBulkActions(*limit)));
                }
            }
            BodyFilter::Pass => {}
        }
        if up_framing == Framing::Chunked {
            self.push_chunk(data, false);
            if self.up_out.len() >= CHUNKED_FLUSH {
                self.flush_up(up, deadline).await?;
            }
        } else if self.up_out.len() + data.len() <= COALESCE {
            self.up_out.extend_from_slice(&self.buf[data]);
        } else {
            self.forward_slice(up, data, deadline).await?;
        }
        Ok(())
    }
}
