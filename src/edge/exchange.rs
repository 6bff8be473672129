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
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::send::BodyFilter;
use super::session::{Admitted, Next, Outcome, Session};
use super::upstream::{Pool, UpstreamConn};
use crate::errors::EdgeError;
use crate::policy::admit::{Admission, Permit};
use crate::policy::bulk::BulkCounter;
use crate::policy::classify::BodyKind;
use crate::policy::shards::{create_index_shards, ShardDefaults};
use crate::proto::{Framing, HeadLimits, ResponseHead};
use crate::registry::Cluster;
use crate::tenancy::{self, Tenant};

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

/// The index of a `PUT /<index>` target as forwarded: its first path segment.
fn created_index(target: &[u8]) -> &[u8] {
    let path = target.strip_prefix(b"/").unwrap_or(target);
    let end = path
        .iter()
        .position(|&b| b == b'/' || b == b'?')
        .unwrap_or(path.len());
    &path[..end]
}

/// How long the edge looks for an upstream's early answer after it stopped reading a body.
const EARLY_ANSWER_WAIT: Duration = Duration::from_secs(1);

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

    pub(super) async fn exchange(&mut self, adm: &mut Admitted<'_>, arrival: Instant) -> Outcome {
        let deadline = arrival + self.core.shared.limits.deadline;
        if let Err(fail) = self.read_whole_body(adm, deadline).await {
            return match fail {
                // The body was read whole: the connection can carry the next request.
                SendFail::Refuse(e) if self.pos > self.head.len => self.refuse(&e).await,
                other => self.send_failed(other).await,
            };
        }
        let adm = &*adm;
        let reserved = match adm.create_index {
            true => match self.reserve_shards(adm.cluster, deadline).await {
                Ok(n) => n,
                Err(fail) => return self.send_failed(fail).await,
            },
            false => 0,
        };
        // The real name of the index being created (the ledger matches it with metering's).
        let created = adm
            .create_index
            .then(|| created_index(&self.fwd_target).to_vec());
        let outcome = self.admitted(adm, deadline).await;
        if let Some(name) = created {
            let ok = (200..300).contains(&outcome.status);
            adm.cluster.state.finish_creation(&name, reserved, ok);
        }
        outcome
    }

    /// The multitenant class's JSON bodies (and a single-tenant `_reindex`) are read whole,
    /// rewritten as data and written again before anything is forwarded (`tenancy`); what
    /// the body says can change the target and the response plan (a point in time).
    async fn read_whole_body(
        &mut self,
        adm: &mut Admitted<'_>,
        deadline: Instant,
    ) -> Result<(), SendFail> {
        let whole = match &adm.tenant {
            Some(t) => !t.plan.body.is_streamed() && t.plan.body != BodyKind::Document,
            None => adm.reindex,
        };
        if !whole || !self.has_body() {
            return Ok(());
        }
        let len = self
            .buffer_body(deadline, self.core.shared.limits.max_body)
            .await?;
        let body = &self.buf[self.head.len..self.head.len + len];
        let mut out = Vec::with_capacity(len + 64);
        let read = match &adm.tenant {
            Some(tp) => {
                let t = Tenant {
                    prefix: &tp.prefix,
                    ids: Some((&self.core.shared.sealer, &adm.cluster.id)),
                };
                tenancy::rewrite_json_body(&t, tp.plan.body, body, &mut out).map(Some)
            }
            None => tenancy::single_tenant_reindex(body).map(|b| {
                out = b;
                None
            }),
        };
        let facts = match read {
            Ok(f) => f,
            Err(e) => {
                self.pos = self.head.len + len; // read whole: the next request follows it
                return Err(SendFail::Refuse(e));
            }
        };
        self.replace_body(len, &out);
        if let (Some(facts), Some(tp)) = (facts, adm.tenant.as_mut()) {
            if let Err(e) = tp
                .plan
                .apply_body_facts(facts, &tp.prefix, &mut self.fwd_target)
            {
                self.pos = self.head.len + out.len();
                return Err(SendFail::Refuse(e));
            }
        }
        Ok(())
    }

    /// Index creation (spec 2.2, 8): the body's `p * (1 + r)` must fit the plan's shard
    /// capacity; refused with 400 before anything reaches the upstream. Returns the shards
    /// reserved. (A multitenant body was already read and rewritten.)
    async fn reserve_shards(
        &mut self,
        cluster: &Cluster,
        deadline: Instant,
    ) -> Result<u64, SendFail> {
        let len = self
            .buffer_body(deadline, super::buffered::MAX_INSPECTED_BODY)
            .await?;
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
        if !self.send_continue().await {
            return gone();
        }
        if !self.auto_create.is_empty() {
            let name = std::mem::take(&mut self.auto_create);
            let prefix = adm.tenant.map(|t| t.prefix);
            let made = self
                .ensure_index(adm.cluster, prefix.as_ref(), &name, deadline)
                .await;
            self.auto_create = name;
            if let Err(fail) = made {
                return self.send_failed(fail).await;
            }
        }
        let replayable = self.body_buffered();
        let addr = adm.cluster.upstreams[self.core.pick(adm.cluster.upstreams.len())];
        let mut rhead = std::mem::take(&mut self.rhead);
        let mut outcome = self
            .attempt(adm, addr, true, replayable, &mut rhead, deadline)
            .await;
        if outcome.is_none() {
            outcome = self
                .attempt(adm, addr, false, replayable, &mut rhead, deadline)
                .await;
        }
        drop(permit);
        self.rhead = rhead;
        outcome.unwrap_or_else(gone)
    }

    /// Answers `Expect: 100-continue` (once admitted); false when the client is gone.
    pub(super) async fn send_continue(&mut self) -> bool {
        if !(self.head.expect_continue && self.has_body()) {
            return true;
        }
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        let (res, out) = self.io.write_all(out).await;
        self.out = out;
        res.is_ok()
    }

    /// What the request's body goes through on its way upstream (multitenant JSON bodies
    /// were already rewritten whole: they pass).
    fn body_filter(adm: &Admitted<'_>) -> BodyFilter {
        match (adm.tenant, adm.bulk_limit) {
            (Some(t), limit) => t
                .plan
                .body_rewriter(t.prefix, limit.unwrap_or(u64::MAX))
                .map_or(BodyFilter::Pass, BodyFilter::Rewrite),
            (None, Some(limit)) => BodyFilter::Count(BulkCounter::new(), limit),
            (None, None) => BodyFilter::Pass,
        }
    }

    /// One try: connection, request, response head, relay. `None`: retry on a fresh
    /// connection (a reused one failed before any byte, and the request can be replayed).
    async fn attempt(
        &mut self,
        adm: &Admitted<'_>,
        addr: SocketAddr,
        first: bool,
        replayable: bool,
        rhead: &mut ResponseHead,
        deadline: Instant,
    ) -> Option<Outcome> {
        let pooled = if first {
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
                    return Some(
                        self.fail(EdgeError::ServiceUnavailable(
                            "the cluster's search engine cannot be reached",
                        ))
                        .await,
                    )
                }
            },
        };
        let may_retry = first && up.reused && replayable;
        self.pos = self.head.len;
        let mut filter = Self::body_filter(adm);
        let sent = self.send_request(&mut up, &mut filter, adm, deadline).await;
        self.end_body_reads(); // the next request head is read as soon as any byte comes
        let body_bytes = match sent {
            Err(SendFail::Upstream) if may_retry => return None,
            Err(SendFail::Upstream) => {
                // The upstream may have answered before reading the whole body (a 413 of
                // its own) and stopped reading: relay that answer rather than a 502.
                let early = (Instant::now() + EARLY_ANSWER_WAIT).min(deadline);
                if self
                    .read_response_head(&mut up, rhead, early)
                    .await
                    .is_err()
                {
                    return Some(self.send_failed(SendFail::Upstream).await);
                }
                self.keep_alive = false; // the rest of the client's body was never read
                (self.pos - self.head.len.min(self.pos)) as u64
            }
            Err(fail) => return Some(self.send_failed(fail).await),
            Ok(n) => n,
        };
        match self.read_response_head(&mut up, rhead, deadline).await {
            Err(HeadFail::NoBytes) if may_retry => return None,
            Err(f) => return Some(self.head_failed(f).await),
            Ok(()) => {}
        }
        let (o, reusable) = match adm.tenant {
            Some(t) => {
                let ids = t.plan.response.ids.map(|_| {
                    (
                        self.core.shared.sealer.clone(),
                        Arc::from(adm.cluster.id.as_str()),
                    )
                });
                self.relay_rewritten(&mut up, rhead, &t, ids, deadline)
                    .await
            }
            None => self.relay(&mut up, rhead, deadline).await,
        };
        if reusable {
            self.core.pool.put(up, Instant::now());
        }
        Some(Outcome {
            bytes_in: body_bytes,
            ..o
        })
    }

    async fn head_failed(&mut self, f: HeadFail) -> Outcome {
        let e = match f {
            HeadFail::NoBytes => {
                EdgeError::BadGateway("the search engine closed the connection without answering")
            }
            HeadFail::Bad(why) => EdgeError::BadGateway(why),
            HeadFail::Deadline => {
                EdgeError::GatewayTimeout(self.core.shared.limits.deadline.as_secs())
            }
        };
        self.fail(e).await
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
            match up.read_more(deadline).await {
                Ok(n) if n > 0 => got_any = true,
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    return Err(HeadFail::Deadline)
                }
                _ if got_any => {
                    return Err(HeadFail::Bad("the search engine cut its response head"))
                }
                _ => return Err(HeadFail::NoBytes),
            }
        }
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
