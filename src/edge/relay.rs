//! Relaying an upstream response to the client: the head with hop-by-hop headers removed,
//! then the body, through the exchange's [`ResponseFilter`].
//!
//! Passed through ([`ResponseFilter::Pass`]): Content-Length bodies go out untouched,
//! chunked bodies validated as they are (de-chunked for HTTP/1.0 clients), bodies delimited
//! by the upstream closing are chunked for HTTP/1.1 clients; small responses go out in one
//! write with their head, large ones straight from the upstream connection's buffer.
//! Rewritten ([`ResponseFilter::Rewrite`], the multitenant class): every piece of the
//! decoded body goes through the un-rewriter, whose output changes length, so the body goes
//! out chunked (close-delimited to HTTP/1.0 clients); header values are stripped too. A
//! client that accepts gzip gets the rewritten body gzip-compressed (`Content-Encoding:
//! gzip`, `Vary: Accept-Encoding`).
//!
//! Must not touch: policy, the request side (see `send`).

use std::time::Instant;

use super::client::Client;
use super::filter::ResponseFilter;
use super::io::Transport;
use super::outcome::{Cut, Next, Outcome};
use super::upstream::UpstreamConn;
use crate::policy::cors;
use crate::proto::{
    push_chunk, write_forward_response, BodyCursor, Framing, Method, ResponseHead, Step, Version,
    LAST_CHUNK,
};
use crate::tenancy::encoding::GzipStream;
use crate::tenancy::ResponseRewriter;

/// A response up to this size (head and body) goes out in a single write.
const ONE_WRITE: usize = 64 * 1024;
/// Rewritten bodies go out in writes of about this size.
const REWRITTEN_FLUSH: usize = 32 * 1024;

/// One response on its way to the client.
pub(super) struct Relaying<'a, T> {
    pub client: &'a mut Client<T>,
    pub up: &'a mut UpstreamConn,
    /// Scratch for the filter's output.
    pub rewritten: &'a mut Vec<u8>,
    pub deadline: Instant,
}

impl<T: Transport> Relaying<'_, T> {
    /// Relays the response whose head is in `rh` (parsed from `up.buf`) through `filter`.
    /// Returns the outcome and whether the upstream connection can go back to the pool.
    pub async fn relay(
        &mut self,
        rh: &ResponseHead,
        filter: &mut ResponseFilter,
    ) -> (Outcome, bool) {
        let c = &*self.client;
        let to = client_framing(rh.framing, c.version(), filter);
        let keep = c.reusable() && to != Framing::UntilClose;
        let head_bytes = self.write_head(rh, to, keep, filter);
        let pos = rh.len;
        let sink = match filter {
            ResponseFilter::Rewrite { un, gzip, .. } => Sink::Rewrite(un, gzip.as_mut()),
            // Validated chunked bytes pass through as they came.
            ResponseFilter::Pass if rh.framing == Framing::Chunked && to == Framing::Chunked => {
                Sink::Raw
            }
            ResponseFilter::Pass => Sink::Payload,
        };
        let result = match rh.framing {
            Framing::None => self.client.send_out().await.map(|_| 0),
            from => self.body(pos, from, to, sink).await,
        };
        let status = rh.status;
        match result {
            Ok(body) => {
                let reusable =
                    rh.keep_alive && rh.framing != Framing::UntilClose && self.up.buf.is_empty();
                let next = if keep { Next::KeepAlive } else { Next::Linger };
                let o = Outcome {
                    status,
                    bytes_in: 0,
                    bytes_out: head_bytes + body,
                    queue_us: None,
                    upstream_us: None,
                    next,
                };
                (o, reusable)
            }
            Err(_) => {
                let o = Outcome {
                    status,
                    bytes_in: 0,
                    bytes_out: head_bytes,
                    queue_us: None,
                    upstream_us: None,
                    next: Next::Close,
                };
                (o, false)
            }
        }
    }

    /// Stages the response head for the client in `client.out`; returns its length.
    fn write_head(
        &mut self,
        rh: &ResponseHead,
        to: Framing,
        keep: bool,
        filter: &ResponseFilter,
    ) -> u64 {
        let c = &mut *self.client;
        let version = c.version();
        c.out.clear();
        match filter {
            ResponseFilter::Pass => {
                let mut extra: Vec<(&str, &[u8])> = Vec::new();
                if let (Method::Head, Some(v)) =
                    (c.method(), rh.header(&self.up.buf, b"content-length"))
                {
                    extra.push(("Content-Length", v));
                }
                if !c.cors_origin.is_empty() {
                    extra.extend(cors::response_headers(&c.cors_origin));
                }
                write_forward_response(&mut c.out, rh, &self.up.buf, version, to, keep, &extra);
            }
            ResponseFilter::Rewrite { prefix, gzip, .. } => {
                // Location, Warning and the like name indices too.
                self.rewritten.clear();
                write_forward_response(self.rewritten, rh, &self.up.buf, version, to, keep, &[]);
                match prefix {
                    Some(p) => p.strip_into(self.rewritten, &mut c.out),
                    None => c.out.extend_from_slice(self.rewritten),
                }
                let mut extra: Vec<(&str, &[u8])> = Vec::new();
                if gzip.is_some() {
                    extra.push(("Content-Encoding", b"gzip"));
                    extra.push(("Vary", b"Accept-Encoding"));
                }
                if !c.cors_origin.is_empty() {
                    extra.extend(cors::response_headers(&c.cors_origin));
                }
                if !extra.is_empty() {
                    // before the blank line that ends the head
                    c.out.truncate(c.out.len() - 2);
                    for (name, value) in extra {
                        c.out.extend_from_slice(name.as_bytes());
                        c.out.extend_from_slice(b": ");
                        c.out.extend_from_slice(value);
                        c.out.extend_from_slice(b"\r\n");
                    }
                    c.out.extend_from_slice(b"\r\n");
                }
            }
        }
        c.out.len() as u64
    }

    /// Writes `up.buf[range]` to the client (after what is staged).
    async fn send_upstream_bytes(&mut self, range: std::ops::Range<usize>) -> Result<(), Cut> {
        let buf = std::mem::take(&mut self.up.buf);
        let (res, buf) = self.client.send_slice(buf, range).await;
        self.up.buf = buf;
        res
    }

    /// Reads more from the upstream after compacting `up.buf` from `keep_from`.
    async fn read_upstream(&mut self, keep_from: usize) -> Result<usize, Cut> {
        self.up.buf.drain(..keep_from);
        self.up
            .read_more(&mut self.client.timer, self.deadline)
            .await
            .map_err(|_| Cut::Upstream)
    }

    /// Streams the upstream body (`from` framing, starting at `up.buf[pos]`) to the client
    /// (`to` framing) through `sink`; returns the payload bytes sent. One loop for every
    /// framing, on the one body reader.
    async fn body(
        &mut self,
        pos: usize,
        from: Framing,
        to: Framing,
        mut sink: Sink<'_>,
    ) -> Result<u64, Cut> {
        let mut cur = BodyCursor::new(from, u64::MAX, pos).map_err(|_| Cut::Upstream)?;
        let raw = matches!(sink, Sink::Raw);
        let flush_at = match sink {
            Sink::Rewrite(..) => REWRITTEN_FLUSH,
            _ => ONE_WRITE / 2,
        };
        let (mut raw_from, mut sent) = (pos, 0u64);
        loop {
            match cur.step(&self.up.buf).map_err(|_| Cut::Upstream)? {
                Step::Piece(r) => sent += self.piece(r, to, &mut sink).await?,
                Step::Done => break,
                Step::NeedMore => {
                    if raw {
                        self.send_raw(raw_from..cur.pos()).await?;
                        raw_from = 0;
                    }
                    if self.client.out.len() >= flush_at {
                        self.client.send_out().await?;
                    }
                    let decoded = cur.pos();
                    let read = self.read_upstream(decoded).await;
                    cur.dropped(decoded);
                    match read {
                        Ok(n) if n > 0 => {}
                        // Close-delimited: the end of the stream is the end of the body.
                        Ok(_) if cur.complete_at_eof() => break,
                        _ => return Err(Cut::Upstream),
                    }
                }
            }
        }
        if raw {
            self.send_raw(raw_from..cur.pos()).await?;
            sent = cur.total();
        }
        if let Sink::Rewrite(un, mut gzip) = sink {
            self.rewritten.clear();
            un.finish(self.rewritten);
            sent += self.frame_rewritten(to, gzip.as_deref_mut());
            if let Some(g) = gzip {
                sent += frame(&mut self.client.out, to, g.finish());
            }
        }
        if to == Framing::Chunked && !raw {
            self.client.out.extend_from_slice(LAST_CHUNK);
        }
        self.client.send_out().await?;
        self.up.buf.drain(..cur.pos()); // anything left is not part of this response
        Ok(sent)
    }

    /// Passes one decoded piece of the body (`up.buf[r]`) on; returns its payload bytes.
    async fn piece(
        &mut self,
        r: std::ops::Range<usize>,
        to: Framing,
        sink: &mut Sink<'_>,
    ) -> Result<u64, Cut> {
        let n = r.len() as u64;
        match sink {
            // Sent with its framing when the cursor needs more or is done.
            Sink::Raw => return Ok(0),
            Sink::Rewrite(un, gzip) => {
                self.rewritten.clear();
                un.feed(&self.up.buf[r], self.rewritten);
                return Ok(self.frame_rewritten(to, gzip.as_deref_mut()));
            }
            Sink::Payload if to == Framing::Chunked => {
                push_chunk(&mut self.client.out, &self.up.buf[r])
            }
            Sink::Payload if self.client.out.len() + r.len() <= ONE_WRITE => {
                self.client.out.extend_from_slice(&self.up.buf[r]);
            }
            Sink::Payload => self.send_upstream_bytes(r).await?,
        }
        Ok(n)
    }

    /// Passes `up.buf[r]` on as it is (validated chunked framing and payload).
    async fn send_raw(&mut self, r: std::ops::Range<usize>) -> Result<(), Cut> {
        if self.client.out.len() + r.len() <= ONE_WRITE {
            self.client.out.extend_from_slice(&self.up.buf[r]);
            Ok(())
        } else {
            self.send_upstream_bytes(r).await
        }
    }

    /// Stages `rewritten` (gzip-compressed when `gzip`) in the client's framing; returns
    /// the payload bytes.
    fn frame_rewritten(&mut self, to: Framing, gzip: Option<&mut GzipStream>) -> u64 {
        match gzip {
            Some(g) => frame(&mut self.client.out, to, g.feed(self.rewritten)),
            None => frame(&mut self.client.out, to, self.rewritten),
        }
    }
}

/// Stages `payload` in the client's framing (nothing for an empty chunk); returns its length.
fn frame(out: &mut Vec<u8>, to: Framing, payload: &[u8]) -> u64 {
    if to == Framing::Chunked {
        push_chunk(out, payload);
    } else {
        out.extend_from_slice(payload);
    }
    payload.len() as u64
}

/// What the relay does with the decoded body.
enum Sink<'u> {
    /// Chunked to chunked: the validated bytes, framing included, as they came.
    Raw,
    /// The payload in the client's framing.
    Payload,
    /// The payload through the un-rewriter (multitenant), gzip-compressed when the client
    /// accepts it, in the client's framing.
    Rewrite(&'u mut ResponseRewriter, Option<&'u mut GzipStream>),
}

/// The framing of the body as the client gets it.
fn client_framing(upstream: Framing, version: Version, filter: &ResponseFilter) -> Framing {
    match (filter, upstream, version) {
        (_, Framing::None, _) => Framing::None,
        // A rewritten body changes length.
        (ResponseFilter::Rewrite { .. }, _, Version::Http10) => Framing::UntilClose,
        (ResponseFilter::Rewrite { .. }, _, Version::Http11) => Framing::Chunked,
        (ResponseFilter::Pass, Framing::Chunked | Framing::UntilClose, Version::Http10) => {
            Framing::UntilClose
        }
        (ResponseFilter::Pass, Framing::UntilClose, Version::Http11) => Framing::Chunked,
        (ResponseFilter::Pass, f, _) => f,
    }
}
