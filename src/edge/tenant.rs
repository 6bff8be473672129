//! The multitenant class's I/O around the pure rewriting of `tenancy`: creating
//! whitelisted indices in the tenant's namespace before a write needs them (the upstream's
//! own whitelist cannot match prefixed names), and relaying responses through the
//! un-rewriter (the tenant's prefix removed everywhere, other tenants' `_cat` rows dropped),
//! which changes their length: they go out chunked (close-delimited to HTTP/1.0 clients).
//!
//! Must not touch: the rewriting rules themselves (`tenancy`), admission, policy.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::exchange::{until, SendFail};
use super::io::write_tcp;
use super::session::{Next, Outcome, Session, TenantPlan};
use super::upstream::{Pool, UpstreamConn};
use crate::errors::EdgeError;
use crate::policy::shards::ShardDefaults;
use crate::proto::{
    chunk_size_line, write_forward_response, BodyDecoder, Framing, HeadLimits, Method,
    ResponseHead, Version, LAST_CHUNK,
};
use crate::registry::Cluster;
use crate::tenancy::{self, BulkRewriter, IdSealer, Prefix};

/// How long a core trusts that an index it created (or found) still exists.
pub(super) const KNOWN_INDEX_TTL: Duration = Duration::from_secs(2);
/// Largest upstream answer to an index creation the edge reads.
const SMALL_ANSWER: u64 = 64 * 1024;

impl Session {
    /// Makes sure the tenant's whitelisted index `name` exists upstream, creating it (after
    /// the plan's shard check with the upstream's default shards) when it does not.
    pub(super) async fn ensure_index(
        &mut self,
        cluster: &Cluster,
        prefix: Option<&Prefix>,
        name: &[u8],
        deadline: Instant,
    ) -> Result<(), SendFail> {
        let mut path = Vec::with_capacity(64);
        match prefix {
            Some(p) => tenancy::write_index_path(p, name, &mut path).map_err(SendFail::Refuse)?,
            None => {
                path.push(b'/');
                crate::policy::path::encode_segment(name, &mut path);
            }
        }
        if self.core.index_known(&path, Instant::now()) {
            return Ok(());
        }
        let asked = ShardDefaults::ES7.primaries * (1 + ShardDefaults::ES7.replicas);
        let plan = &cluster.plan;
        cluster
            .state
            .reserve_shards(asked, plan.shards)
            .map_err(|in_use| {
                SendFail::Refuse(EdgeError::ShardCapacity {
                    plan: plan.name.clone(),
                    capacity: plan.shards,
                    in_use,
                    asked,
                })
            })?;
        let mut req = Vec::with_capacity(128);
        req.extend_from_slice(b"PUT ");
        req.extend_from_slice(&path);
        req.extend_from_slice(b" HTTP/1.1\r\nHost: searchgate\r\nContent-Length: 0\r\n\r\n");
        let addr = cluster.upstreams[self.core.pick(cluster.upstreams.len())];
        let answer = self.small_exchange(addr, req, deadline).await;
        let created = matches!(answer, Ok((200..=299, _)));
        cluster.state.finish_creation(&path[1..], asked, created);
        let exists = match &answer {
            Ok((200..=299, _)) => true,
            Ok((_, body)) => {
                memchr::memmem::find(body, b"resource_already_exists_exception").is_some()
            }
            Err(_) => false,
        };
        if exists {
            self.core.remember_index(path, Instant::now());
        }
        answer.map(|_| ())
    }

    /// Creates the whitelisted indices a `_bulk` body named since the last call.
    pub(super) async fn ensure_candidates(
        &mut self,
        bulk: &BulkRewriter,
        cluster: &Cluster,
        prefix: &Prefix,
        deadline: Instant,
    ) -> Result<(), SendFail> {
        while self.candidates_done < bulk.auto_create_candidates().len() {
            let name = bulk.auto_create_candidates()[self.candidates_done].clone();
            self.candidates_done += 1;
            self.ensure_index(cluster, Some(prefix), &name, deadline)
                .await?;
        }
        Ok(())
    }

    /// Sends one small request on its own connection and reads the whole answer.
    async fn small_exchange(
        &mut self,
        addr: std::net::SocketAddr,
        req: Vec<u8>,
        deadline: Instant,
    ) -> Result<(u16, Vec<u8>), SendFail> {
        let mut up = match self.core.pool.take_idle(addr, Instant::now()) {
            Some(c) => c,
            None => Pool::connect(
                addr,
                self.core.shared.limits.connect_timeout,
                self.core.take_upstream_buffer(),
            )
            .await
            .map_err(|_| {
                SendFail::Refuse(EdgeError::ServiceUnavailable(
                    "the cluster's search engine cannot be reached",
                ))
            })?,
        };
        let len = req.len();
        match until(deadline, write_tcp(&mut up.tcp, req, 0..len)).await {
            Some((Ok(()), _)) => {}
            _ => return Err(SendFail::Upstream),
        }
        let mut head = ResponseHead::default();
        let limits = HeadLimits {
            max_head: 64 * 1024,
            max_auth: 0,
            max_headers: 256,
        };
        loop {
            if !up.buf.is_empty()
                && head
                    .parse(&up.buf, Method::Put, &limits)
                    .map_err(|_| SendFail::Upstream)?
                && head.status >= 200
            {
                break;
            }
            read_some(&mut up, deadline).await?;
        }
        let mut dec =
            BodyDecoder::new(head.framing, SMALL_ANSWER).map_err(|_| SendFail::Upstream)?;
        let (mut body, mut pos) = (Vec::new(), head.len);
        while !dec.is_done() {
            let d = dec.decode(&up.buf[pos..]).map_err(|_| SendFail::Upstream)?;
            body.extend_from_slice(&up.buf[pos + d.data.start..pos + d.data.end]);
            pos += d.consumed;
            if d.consumed == 0 && !d.done {
                up.buf.drain(..pos);
                pos = 0;
                read_some(&mut up, deadline).await?;
            }
        }
        up.buf.drain(..pos);
        if head.keep_alive && up.buf.is_empty() {
            self.core.pool.put(up, Instant::now());
        }
        Ok((head.status, body))
    }

    /// Relays a multitenant response through the un-rewriter. Returns the outcome and
    /// whether the upstream connection can be reused.
    pub(super) async fn relay_rewritten(
        &mut self,
        up: &mut UpstreamConn,
        rh: &ResponseHead,
        t: &TenantPlan,
        ids: Option<(Arc<IdSealer>, Arc<str>)>,
        deadline: Instant,
    ) -> (Outcome, bool) {
        let to = match (rh.framing, self.version) {
            (Framing::None, _) => Framing::None,
            (_, Version::Http10) => Framing::UntilClose,
            _ => Framing::Chunked,
        };
        let keep = self.keep_alive && to != Framing::UntilClose && !self.core.shutdown.is_fired();
        let mut head = Vec::with_capacity(rh.len + 64);
        write_forward_response(&mut head, rh, &up.buf, self.version, to, keep, &[]);
        self.out.clear();
        t.prefix.strip_into(&head, &mut self.out); // Location, Warning and the like
        let head_bytes = self.out.len() as u64;
        let content_type = rh.header(&up.buf, b"content-type").map(<[u8]>::to_vec);
        let mut un = t
            .plan
            .response_rewriter(t.prefix, rh.status, content_type.as_deref(), ids);
        let pos = rh.len;
        let result = match rh.framing {
            Framing::None => Ok(0),
            f => self.rewrite_body(up, pos, f, to, &mut un, deadline).await,
        };
        let flushed = match result {
            Ok(n) => self.send_out().await.map_err(|_| ()).map(|_| n),
            Err(e) => Err(e),
        };
        let status = rh.status;
        match flushed {
            Ok(body) => {
                let reusable =
                    rh.keep_alive && rh.framing != Framing::UntilClose && up.buf.is_empty();
                let next = if keep { Next::KeepAlive } else { Next::Linger };
                (
                    Outcome {
                        status,
                        bytes_in: 0,
                        bytes_out: head_bytes + body,
                        queue_us: None,
                        next,
                    },
                    reusable,
                )
            }
            Err(()) => (
                Outcome {
                    status,
                    bytes_in: 0,
                    bytes_out: head_bytes,
                    queue_us: None,
                    next: Next::Close,
                },
                false,
            ),
        }
    }

    /// Streams the upstream body (`from` framing) through `un` to the client (`to` framing).
    async fn rewrite_body(
        &mut self,
        up: &mut UpstreamConn,
        mut pos: usize,
        from: Framing,
        to: Framing,
        un: &mut tenancy::ResponseRewriter,
        deadline: Instant,
    ) -> Result<u64, ()> {
        let mut dec = match from {
            Framing::UntilClose => None,
            f => Some(BodyDecoder::new(f, u64::MAX).map_err(|_| ())?),
        };
        let mut sent = 0u64;
        loop {
            match dec.as_mut() {
                None => {
                    self.rewritten.clear();
                    un.feed(&up.buf[pos..], &mut self.rewritten);
                    sent += self.frame_rewritten(to);
                    pos = up.buf.len();
                }
                Some(d) => {
                    while !d.is_done() {
                        let got = d.decode(&up.buf[pos..]).map_err(|_| ())?;
                        self.rewritten.clear();
                        un.feed(
                            &up.buf[pos + got.data.start..pos + got.data.end],
                            &mut self.rewritten,
                        );
                        sent += self.frame_rewritten(to);
                        pos += got.consumed;
                        if got.consumed == 0 {
                            break;
                        }
                    }
                }
            }
            if dec.as_ref().is_some_and(BodyDecoder::is_done) {
                break;
            }
            if self.out.len() >= 32 * 1024 {
                self.send_out().await.map_err(|_| ())?;
            }
            up.buf.drain(..pos);
            pos = 0;
            if read_some(up, deadline).await.is_err() {
                if dec.is_none() {
                    break; // close-delimited: this is the end of the body
                }
                return Err(());
            }
        }
        up.buf.drain(..pos);
        self.rewritten.clear();
        un.finish(&mut self.rewritten);
        sent += self.frame_rewritten(to);
        if to == Framing::Chunked {
            self.out.extend_from_slice(LAST_CHUNK);
        }
        Ok(sent)
    }

    /// Appends `rewritten` to `out` in the client's framing; returns the payload bytes.
    fn frame_rewritten(&mut self, to: Framing) -> u64 {
        let n = self.rewritten.len();
        if n == 0 {
            return 0;
        }
        if to == Framing::Chunked {
            let mut line = [0u8; 18];
            self.out.extend_from_slice(chunk_size_line(n, &mut line));
            self.out.extend_from_slice(&self.rewritten);
            self.out.extend_from_slice(b"\r\n");
        } else {
            self.out.extend_from_slice(&self.rewritten);
        }
        n as u64
    }
}

/// Reads more from the upstream into its buffer; `Err` at end of stream, error or deadline.
async fn read_some(up: &mut UpstreamConn, deadline: Instant) -> Result<(), SendFail> {
    match up.read_more(deadline).await {
        Ok(n) if n > 0 => Ok(()),
        _ => Err(SendFail::Upstream),
    }
}
