//! Sending a request upstream: the re-serialised head, then the body streamed from the
//! client through the exchange's [`RequestFilter`]: forwarded as it comes (re-framed), with
//! `_bulk` actions counted, or rewritten into a tenant's namespace (then sent chunked,
//! since its length changes; whitelisted indices the body names are created first, see
//! `precreate`). A body refused midway (too large, too many actions, malformed) is
//! abandoned unterminated: the upstream never sees its end, so it never applies any of it.
//!
//! Must not touch: admission, the response (see `relay`), policy decisions.

use std::io::Write as _;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use super::client::Client;
use super::filter::RequestFilter;
use super::io::Transport;
use super::outcome::SendFail;
use super::peer::RemotePermit;
use super::precreate;
use super::tcp::write_tcp;
use super::upstream::UpstreamConn;
use crate::policy::decide::Decision;
use crate::proto::{
    push_chunk, push_chunk_with, write_forward_request, ForwardHeaders, ForwardRequest, Framing,
    Step, LAST_CHUNK,
};
use crate::registry::Cluster;
use crate::tenancy::headers::FORWARDED;
use crate::tenancy::Prefix;

/// Small bodies are sent in the same write as the head.
const COALESCE: usize = 16 * 1024;
/// Chunked bodies are re-framed into writes of about this size.
const CHUNKED_FLUSH: usize = 64 * 1024;

/// One request on its way upstream: the client it comes from, the connection it goes to,
/// and the buffers it is staged in (kept by the connection from request to request).
pub(super) struct Sending<'a, T> {
    pub client: &'a mut Client<T>,
    pub up: &'a mut UpstreamConn,
    /// What goes to the upstream next (head, small bodies, chunk framing, what the filter
    /// rewrote): `out[out_start..]`.
    pub out: &'a mut Vec<u8>,
    /// Where the bytes to send begin in `out` (after the room left over by the size line of
    /// a chunk written in place, see `proto::push_chunk_with`).
    pub out_start: usize,
    pub deadline: Instant,
    /// The permit the request holds from its cluster's home, when it is away from home:
    /// the shards of indices created on the way are counted there (issue 27).
    pub home: Option<&'a mut RemotePermit>,
}

impl<T: Transport> Sending<'_, T> {
    /// Sends the head (with `target`) and the body from the client's read position on;
    /// returns the body bytes received from the client.
    pub async fn send(
        &mut self,
        filter: &mut RequestFilter,
        d: &Decision<'_, Arc<Cluster>>,
        target: &[u8],
    ) -> Result<u64, SendFail> {
        let max_body = self.client.core.shared.limits.max_body;
        let framing = self.client.framing();
        let mut cur = self.client.body_cursor(max_body)?;
        let has_body = !cur.is_done();
        let up_framing = match filter.rewrites() && has_body {
            true => Framing::Chunked,
            false => framing,
        };
        let prefix = d.tenant.as_ref().map(|t| &t.prefix);
        self.write_head(
            target,
            up_framing,
            prefix,
            d.inflate.is_some(),
            d.seal.is_some(),
        );
        loop {
            match self.client.step_body(&mut cur, max_body)? {
                Step::Piece(data) => self.send_data(filter, d, data, up_framing).await?,
                Step::Done => break,
                Step::NeedMore => {
                    self.flush().await?;
                    // Reading more drops what was decoded.
                    self.client.read_body_more(&mut cur, self.deadline).await?;
                }
            }
        }
        if filter.rewrites() {
            push_chunk_with(self.out, &mut self.out_start, |out| filter.finish(out))?;
        }
        if up_framing == Framing::Chunked {
            self.out.extend_from_slice(LAST_CHUNK);
        }
        self.flush().await?;
        Ok(cur.total())
    }

    /// Passes one decoded piece of the body (`client.buf[data]`) through the filter
    /// towards the upstream.
    async fn send_data(
        &mut self,
        filter: &mut RequestFilter,
        d: &Decision<'_, Arc<Cluster>>,
        data: Range<usize>,
        up_framing: Framing,
    ) -> Result<(), SendFail> {
        if data.is_empty() {
            return Ok(());
        }
        if filter.rewrites() {
            // Rewritten straight into `out` as one chunk: the data is not copied again.
            let input = &self.client.buf()[data];
            push_chunk_with(self.out, &mut self.out_start, |out| filter.feed(input, out))?;
            // Indices the chunk names are created before the chunk is forwarded.
            while let Some(name) = filter.new_index() {
                let prefix = d.tenant.as_ref().map(|t| &t.prefix);
                let core = &self.client.core;
                let ledger = match self.home.as_deref_mut() {
                    Some(p) => precreate::Ledger::Home(p, &mut self.client.timer),
                    None => precreate::Ledger::Here,
                };
                precreate::ensure_index(core, d.cluster, prefix, &name, self.deadline, ledger)
                    .await?;
            }
        } else {
            // Forwarded as it is (a filter that does not rewrite appends nothing).
            filter.feed(&self.client.buf()[data.clone()], self.out)?;
            if up_framing == Framing::Chunked {
                self.push_chunk(data);
            } else if self.out.len() - self.out_start + data.len() <= COALESCE {
                self.out.extend_from_slice(&self.client.buf()[data]);
                return Ok(());
            } else {
                return self.forward_slice(data).await;
            }
        }
        if self.out.len() - self.out_start >= CHUNKED_FLUSH {
            self.flush().await?;
        }
        Ok(())
    }

    /// Stages the forwarded head: the client's, re-serialised for the upstream; for a tenant
    /// (`prefix`), only the headers of its table (`tenancy::headers::FORWARDED`); a body the
    /// edge inflated (`inflated`) goes without its `Content-Encoding`; a request whose
    /// response ids the edge seals (`sealed`: a single-tenant key's) without
    /// `Accept-Encoding`, so that the response comes back readable.
    fn write_head(
        &mut self,
        target: &[u8],
        framing: Framing,
        prefix: Option<&Prefix>,
        inflated: bool,
        sealed: bool,
    ) {
        let c = &*self.client;
        let mut ip = [0u8; 48];
        let n = {
            let mut cur = std::io::Cursor::new(&mut ip[..]);
            let _ = write!(cur, "{}", c.peer.ip());
            cur.position() as usize
        };
        self.out.clear();
        self.out_start = 0;
        let fwd = ForwardRequest {
            target,
            framing,
            forwarded_for: &ip[..n],
            forwarded_proto: c.io.scheme(),
            strip_authorization: true,
            strip_expect: true,
            headers: match prefix {
                Some(p) => ForwardHeaders::Only {
                    allow: &FORWARDED,
                    tag: p.as_bytes(),
                },
                None if sealed => {
                    ForwardHeaders::AllBut(&[b"content-encoding", b"accept-encoding"])
                }
                None if inflated => ForwardHeaders::AllBut(&[b"content-encoding"]),
                None => ForwardHeaders::All,
            },
        };
        write_forward_request(self.out, c.head(), c.buf(), &fwd);
    }

    /// Writes what is staged to the upstream and empties it.
    async fn flush(&mut self) -> Result<(), SendFail> {
        let start = std::mem::take(&mut self.out_start);
        if start >= self.out.len() {
            self.out.clear();
            return Ok(());
        }
        let out = std::mem::take(self.out);
        let len = out.len();
        let write = write_tcp(&mut self.up.tcp, out, start..len);
        match self.client.timer.run(self.deadline, write).await {
            Some((res, mut out)) => {
                out.clear();
                *self.out = out;
                res.map_err(|_| SendFail::Upstream)
            }
            None => {
                *self.out = Vec::with_capacity(4096);
                Err(self.client.deadline_refusal())
            }
        }
    }

    /// Writes `client.buf[range]` straight to the upstream (after what is staged).
    async fn forward_slice(&mut self, range: Range<usize>) -> Result<(), SendFail> {
        self.flush().await?;
        let buf = self.client.lend_buf();
        let write = write_tcp(&mut self.up.tcp, buf, range);
        match self.client.timer.run(self.deadline, write).await {
            Some((res, buf)) => {
                self.client.give_back_buf(Some(buf));
                res.map_err(|_| SendFail::Upstream)
            }
            None => {
                self.client.give_back_buf(None);
                Err(self.client.deadline_refusal())
            }
        }
    }

    /// Stages `client.buf[data]` as one chunk.
    fn push_chunk(&mut self, data: Range<usize>) {
        let src = &self.client.buf()[data];
        push_chunk(self.out, src);
    }
}
