//! One admitted request's exchange with its upstream: wait for an allowance slot (FIFO,
//! queue timeout, deadline, client gone), answer `100-continue`, take a pooled connection,
//! send the re-serialised head and stream the body (running byte count, bulk action count;
//! a refused body is abandoned unterminated), read the response head (one retry on a
//! reused connection that failed before any byte, when the request can be replayed), then
//! relay the response (see `relay`). The permit is held until the upstream's response has
//! been read to its end.
//!
//! Must not touch: policy decisions (already taken in `session`), the wire format (`proto`).

use std::future::Future;
use std::io::Write as _;
use std::time::{Duration, Instant};

use super::io::{read_tcp, write_tcp};
use super::session::{Admitted, Next, Outcome, Session};
use super::upstream::{Pool, UpstreamConn};
use crate::errors::EdgeError;
use crate::policy::admit::{Admission, Permit};
use crate::policy::bulk::BulkCounter;
use crate::policy::shards::{create_index_shards, ShardDefaults};
use crate::proto::{
    chunk_size_line, write_forward_request, BodyDecoder, ForwardRequest, Framing, HeadLimits,
    ProtoError, ResponseHead, LAST_CHUNK,
};
use crate::registry::Cluster;

/// Small bodies are sent in the same write as the head.
const COALESCE: usize = 16 * 1024;
/// Chunked bodies are re-framed into writes of about this size.
const CHUNKED_FLUSH: usize = 64 * 1024;

/// Why a queued request did not get a slot, and how long it waited (µs; `None`: it was
/// never queued).
enum Refusal {
    Gone(u64),
    Error(EdgeError, Option<u64>),
}

/// Why sending the request failed.
pub(super) enum SendFail {
    /// The upstream connection failed.
    Upstream,
    /// The client went away mid-body.
    Client,
    /// Answer this error (400 bad chunk, 408, 413, 504).
    Refuse(EdgeError),
}

/// Why reading the response head failed.
enum HeadFail {
    /// The upstream closed or failed before sending any byte.
    NoBytes,
    Bad(&'static str),
    Deadline,
}

/// Runs `fut` until `until`; `None` when time ran out.
pub(super) async fn until<F: Future>(until: Instant, fut: F) -> Option<F::Output> {
    let left = until.saturating_duration_since(Instant::now());
    monoio::time::timeout(left, fut).await.ok()
}

impl Session {
    fn has_body(&self) -> bool {
        !matches!(self.head.framing, Framing::None | Framing::Length(0))
    }

    /// The whole body is already in the buffer (so the request can be sent again).
    fn body_buffered(&self) -> bool {
        match self.head.framing {
            Framing::None => true,
            Framing::Length(n) => (self.buf.len() - self.head.len) as u64 >= n,
            Framing::Chunked | Framing::UntilClose => false,
        }
    }

    pub(super) async fn exchange(&mut self, adm: &Admitted<'_>, arrival: Instant) -> Outcome {
        let deadline = arrival + self.core.shared.limits.deadline;
        let reserved = match adm.create_index {
            true => match self.reserve_shards(adm.cluster, deadline).await {
                Ok(n) => n,
                Err(fail) => return self.send_failed(fail).await,
            },
            false => 0,
        };
        let outcome = self.admitted(adm, deadline).await;
        if reserved > 0 && !(200..300).contains(&outcome.status) {
            adm.cluster.state.release_shards(reserved);
        }
        outcome
    }

    /// Index creation (spec 2.2, 8): the body's `p * (1 + r)` must fit the plan's shard
    /// capacity; refused with 400 before anything reaches the upstream. Returns the shards
    /// reserved.
    async fn reserve_shards(
        &mut self,
        cluster: &Cluster,
        deadline: Instant,
    ) -> Result<u64, SendFail> {
        let len = self.buffer_body(deadline).await?;
        let body = &self.buf[self.head.len..self.head.len + len];
        let asked = create_index_shards(body, ShardDefaults::ES7)
            .map_err(SendFail::Refuse)?
            .total();
        let plan = &cluster.plan;
        match cluster.state.reserve_shards(asked, plan.shards) {
            Ok(()) => Ok(asked),
            Err(in_use) => Err(SendFail::Refuse(EdgeError::ShardCapacity {
                plan: plan.name.clone(),
                capacity: plan.shards,
                in_use,
                asked,
            })),
        }
    }

    async fn admitted(&mut self, adm: &Admitted<'_>, deadline: Instant) -> Outcome {
        let (permit, queue_us) = match self.wait_for_slot(adm.cluster, deadline).await {
            Ok(p) => p,
            Err(Refusal::Gone(waited)) => {
                return Outcome {
                    queue_us: Some(waited),
                    ..gone()
                }
            }
            Err(Refusal::Error(e, waited)) => {
                self.keep_alive &= !self.has_body();
                let o = self.refuse(&e).await;
                return Outcome {
                    queue_us: waited,
                    ..o
                };
            }
        };
        let mut outcome = self.forward(adm, deadline, permit).await;
        outcome.queue_us = queue_us;
        outcome
    }

    async fn wait_for_slot(
        &mut self,
        cluster: &Cluster,
        deadline: Instant,
    ) -> Result<(Permit, Option<u64>), Refusal> {
        let plan = &cluster.plan;
        let mut ticket = match cluster.allowance.acquire() {
            Admission::Granted(p) => return Ok((p, None)),
            Admission::Full => {
                return Err(Refusal::Error(
                    EdgeError::QueueFull {
                        concurrency: plan.concurrency,
                        queue_size: plan.queue_size,
                    },
                    None,
                ))
            }
            Admission::Queued(t) => t,
        };
        let start = Instant::now();
        let queue_end = (start + plan.queue_timeout).min(deadline);
        loop {
            let now = Instant::now();
            if now >= queue_end {
                let e = if now >= deadline {
                    EdgeError::GatewayTimeout(self.core.shared.limits.deadline.as_secs())
                } else {
                    EdgeError::QueueTimeout {
                        concurrency: plan.concurrency,
                        waited_ms: start.elapsed().as_millis() as u64,
                    }
                };
                return Err(Refusal::Error(e, Some(start.elapsed().as_micros() as u64)));
            }
            // Wake at least every 50 ms to notice a client that went away while queued.
            let slice = (queue_end - now).min(Duration::from_millis(50));
            if let Ok(p) = monoio::time::timeout(slice, &mut ticket).await {
                return Ok((p, Some(start.elapsed().as_micros() as u64)));
            }
            if self.io.peer_closed() {
                return Err(Refusal::Gone(start.elapsed().as_micros() as u64));
            }
        }
    }

    /// Sends the request (retrying once when allowed) and relays the response.
    async fn forward(&mut self, adm: &Admitted<'_>, deadline: Instant, permit: Permit) -> Outcome {
        if self.head.expect_continue && self.has_body() {
            let mut out = std::mem::take(&mut self.out);
            out.clear();
            out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
            let (res, out) = self.io.write_all(out).await;
            self.out = out;
            if res.is_err() {
                return gone();
            }
        }
        let replayable = self.body_buffered();
        let addr = adm.cluster.upstreams[self.core.pick(adm.cluster.upstreams.len())];
        let mut rhead = std::mem::take(&mut self.rhead);
        let mut outcome = None;
        for attempt in 0..2 {
            let pooled = if attempt == 0 {
                self.core.pool.take_idle(addr, Instant::now())
            } else {
                None
            };
            let mut up = match pooled {
                Some(c) => c,
                None => match Pool::connect(
                    addr,
                    self.core.shared.limits.connect_timeout,
                    self.core.take_upstream_buffer(),
                )
                .await
                {
                    Ok(c) => c,
                    Err(_) => {
                        outcome = Some(
                            self.fail(EdgeError::ServiceUnavailable(
                                "the cluster's search engine cannot be reached",
                            ))
                            .await,
                        );
                        break;
                    }
                },
            };
            let may_retry = attempt == 0 && up.reused && replayable;
            self.pos = self.head.len;
            let sent = self.send_request(&mut up, adm.bulk_limit, deadline).await;
            let result = match sent {
                Err(SendFail::Upstream) if may_retry => continue,
                Err(fail) => Err(self.send_failed(fail).await),
                Ok(body_bytes) => {
                    match self.read_response_head(&mut up, &mut rhead, deadline).await {
                        Err(HeadFail::NoBytes) if may_retry => continue,
                        Err(HeadFail::NoBytes) => Err(self
                            .fail(EdgeError::BadGateway(
                                "the search engine closed the connection without answering",
                            ))
                            .await),
                        Err(HeadFail::Bad(why)) => Err(self.fail(EdgeError::BadGateway(why)).await),
                        Err(HeadFail::Deadline) => Err(self
                            .fail(EdgeError::GatewayTimeout(
                                self.core.shared.limits.deadline.as_secs(),
                            ))
                            .await),
                        Ok(()) => Ok(body_bytes),
                    }
                }
            };
            outcome = Some(match result {
                Err(o) => o,
                Ok(body_bytes) => {
                    let (o, reusable) = self.relay(&mut up, &rhead, deadline).await;
                    if reusable {
                        self.core.pool.put(up, Instant::now());
                    }
                    Outcome {
                        bytes_in: body_bytes,
                        ..o
                    }
                }
            });
            break;
        }
        drop(permit);
        self.rhead = rhead;
        outcome.unwrap_or_else(gone)
    }

    /// An error before any response byte was sent: answer it; keep the connection only
    /// when the request's body was fully read.
    async fn fail(&mut self, e: EdgeError) -> Outcome {
        let body_done = self.pos >= self.buf.len() || self.body_buffered();
        self.keep_alive &= body_done;
        self.refuse(&e).await
    }

    async fn send_failed(&mut self, fail: SendFail) -> Outcome {
        match fail {
            SendFail::Upstream => {
                self.keep_alive = false;
                self.refuse(&EdgeError::BadGateway(
                    "the search engine closed the connection while receiving the request",
                ))
                .await
            }
            SendFail::Client => gone(),
            SendFail::Refuse(e) => {
                self.keep_alive = false;
                self.refuse(&e).await
            }
        }
    }

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

    /// Reads more body bytes from the client into `buf` (compacting it first).
    async fn read_body_more(&mut self, deadline: Instant) -> Result<(), SendFail> {
        self.buf.drain(..self.pos);
        self.pos = 0;
        self.read_more_keep(deadline).await
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

    fn forward_head(&mut self, framing: Framing) {
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
        };
        write_forward_request(&mut self.up_out, &self.head, &self.buf, &fwd);
    }

    /// Sends head and body; returns the body bytes received from the client.
    async fn send_request(
        &mut self,
        up: &mut UpstreamConn,
        bulk_limit: Option<u64>,
        deadline: Instant,
    ) -> Result<u64, SendFail> {
        let limits = &self.core.shared.limits;
        let max_body = limits.max_body;
        let framing = self.head.framing;
        let mut dec = BodyDecoder::new(framing, max_body).map_err(|e| refusal(e, max_body))?;
        self.forward_head(framing);
        let mut counter = bulk_limit.map(|limit| (BulkCounter::new(), limit));
        let chunked = framing == Framing::Chunked;
        while !dec.is_done() {
            if self.pos == self.buf.len() {
                self.flush_up(up, deadline).await?;
                self.read_body_more(deadline).await?;
            }
            let d = dec
                .decode(&self.buf[self.pos..])
                .map_err(|e| refusal(e, max_body))?;
            let data = self.pos + d.data.start..self.pos + d.data.end;
            if let Some((c, limit)) = &mut counter {
                if c.feed(&self.buf[data.clone()]) > *limit {
                    return Err(SendFail::Refuse(EdgeError::TooManyBulkActions(*limit)));
                }
            }
            if chunked && !data.is_empty() {
                let mut line = [0u8; 18];
                self.up_out
                    .extend_from_slice(chunk_size_line(data.len(), &mut line));
                self.up_out.extend_from_slice(&self.buf[data]);
                self.up_out.extend_from_slice(b"\r\n");
                if self.up_out.len() >= CHUNKED_FLUSH {
                    self.flush_up(up, deadline).await?;
                }
            } else if self.up_out.len() + data.len() <= COALESCE {
                self.up_out.extend_from_slice(&self.buf[data]);
            } else {
                self.forward_slice(up, data, deadline).await?;
            }
            self.pos += d.consumed;
            if d.consumed == 0 && !d.done {
                self.flush_up(up, deadline).await?;
                self.read_body_more(deadline).await?;
            }
        }
        if chunked {
            self.up_out.extend_from_slice(LAST_CHUNK);
        }
        self.flush_up(up, deadline).await?;
        Ok(dec.total())
    }

    /// Reads the upstream's response head into `rh` (skipping interim 1xx heads).
    async fn read_response_head(
        &mut self,
        up: &mut UpstreamConn,
        rh: &mut ResponseHead,
        deadline: Instant,
    ) -> Result<(), HeadFail> {
        let limits = HeadLimits {
            max_head: 64 * 1024,
            max_auth: 0,
            max_headers: 256,
        };
        let mut got_any = !up.buf.is_empty();
        loop {
            if !up.buf.is_empty() {
                match rh.parse(&up.buf, self.method, &limits) {
                    Ok(true) if rh.status < 200 => {
                        up.buf.drain(..rh.len);
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
            let buf = std::mem::take(&mut up.buf);
            match until(deadline, read_tcp(&mut up.tcp, buf)).await {
                Some((Ok(n), buf)) if n > 0 => {
                    up.buf = buf;
                    got_any = true;
                }
                Some((_, buf)) => {
                    up.buf = buf;
                    return Err(if got_any {
                        HeadFail::Bad("the search engine cut its response head")
                    } else {
                        HeadFail::NoBytes
                    });
                }
                None => {
                    up.buf = Vec::new();
                    return Err(HeadFail::Deadline);
                }
            }
        }
    }
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

/// The client went away: nothing to send, close.
pub(super) fn gone() -> Outcome {
    Outcome {
        status: 499,
        bytes_in: 0,
        bytes_out: 0,
        queue_us: None,
        next: Next::Close,
    }
}
