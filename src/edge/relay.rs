//! Relaying an upstream response to the client: the head with hop-by-hop headers removed,
//! then the body, through the exchange's [`ResponseFilter`].
//!
//! Passed through ([`ResponseFilter::Pass`]): Content-Length bodies go out untouched,
//! chunked bodies validated as they are (de-chunked for HTTP/1.0 clients), bodies delimited
//! by the upstream closing are chunked for HTTP/1.1 clients; small responses go out in one
//! write with their head, large ones straight from the upstream connection's buffer.
//! Rewritten ([`ResponseFilter::Rewrite`], the multitenant class): every piece of the
//! decoded body goes through the un-rewriter, whose output changes length, so the body goes
//! out chunked (close-delimited to HTTP/1.0 clients); header values are stripped too.
//!
//! Must not touch: policy, the request side (see `send`).

use std::time::Instant;

use super::client::Client;
use super::filter::ResponseFilter;
use super::io::Transport;
use super::outcome::{Cut, Next, Outcome};
use super::upstream::UpstreamConn;
use crate::proto::{
    push_chunk, write_forward_response, BodyDecoder, Framing, Method, ResponseHead, Version,
    LAST_CHUNK,
};
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
        let to = client_framing(rh.framing, c.version, filter);
        let keep = c.keep_alive && to != Framing::UntilClose && !c.core.shutdown.is_fired();
        let head_bytes = self.write_head(rh, to, keep, filter);
        let pos = rh.len;
        let result = match filter {
            ResponseFilter::Rewrite { un, .. } => match rh.framing {
                Framing::None => self.client.send_out().await.map(|_| 0),
                from => self.rewrite_body(pos, from, to, un).await,
            },
            ResponseFilter::Pass => match rh.framing {
                Framing::None => self.client.send_out().await.map(|_| 0),
                Framing::Length(n) => self.relay_length(pos, n).await,
                Framing::Chunked => self.relay_chunked(pos, to).await,
                Framing::UntilClose => self.relay_until_close(pos, to).await,
            },
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
        c.out.clear();
        match filter {
            ResponseFilter::Pass => {
                let length_header;
                let extra: &[(&str, &[u8])] =
                    match (c.method, rh.header(&self.up.buf, b"content-length")) {
                        (Method::Head, Some(v)) => {
                            length_header = [("Content-Length", v)];
                            &length_header
                        }
                        _ => &[],
                    };
                write_forward_response(&mut c.out, rh, &self.up.buf, c.version, to, keep, extra);
            }
            ResponseFilter::Rewrite { prefix, .. } => {
                // Location, Warning and the like name indices too.
                self.rewritten.clear();
                write_forward_response(self.rewritten, rh, &self.up.buf, c.version, to, keep, &[]);
                prefix.strip_into(self.rewritten, &mut c.out);
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

    async fn relay_length(&mut self, mut pos: usize, n: u64) -> Result<u64, Cut> {
        let mut left = n;
        loop {
            let avail = ((self.up.buf.len() - pos) as u64).min(left) as usize;
            if self.client.out.len() + avail <= ONE_WRITE {
                let bytes = &self.up.buf[pos..pos + avail];
                self.client.out.extend_from_slice(bytes);
            } else {
                self.send_upstream_bytes(pos..pos + avail).await?;
            }
            pos += avail;
            left -= avail as u64;
            if left == 0 {
                break;
            }
            if self.client.out.len() >= ONE_WRITE / 2 {
                self.client.send_out().await?;
            }
            if self.read_upstream(pos).await? == 0 {
                return Err(Cut::Upstream);
            }
            pos = 0;
        }
        self.client.send_out().await?;
        self.up.buf.drain(..pos); // anything left is not part of this response
        Ok(n)
    }

    async fn relay_chunked(&mut self, mut pos: usize, to: Framing) -> Result<u64, Cut> {
        let mut dec = BodyDecoder::new(Framing::Chunked, u64::MAX).map_err(|_| Cut::Upstream)?;
        loop {
            let start = pos;
            while !dec.is_done() {
                let d = dec.decode(&self.up.buf[pos..]).map_err(|_| Cut::Upstream)?;
                if to == Framing::UntilClose {
                    let data = &self.up.buf[pos + d.data.start..pos + d.data.end];
                    self.client.out.extend_from_slice(data);
                }
                pos += d.consumed;
                if d.consumed == 0 {
                    break;
                }
            }
            if to == Framing::Chunked {
                // Validated chunked bytes pass through as they came.
                if self.client.out.len() + (pos - start) <= ONE_WRITE {
                    let bytes = &self.up.buf[start..pos];
                    self.client.out.extend_from_slice(bytes);
                } else {
                    self.send_upstream_bytes(start..pos).await?;
                }
            }
            if dec.is_done() {
                break;
            }
            if self.client.out.len() >= ONE_WRITE / 2 {
                self.client.send_out().await?;
            }
            if self.read_upstream(pos).await? == 0 {
                return Err(Cut::Upstream);
            }
            pos = 0;
        }
        self.client.send_out().await?;
        self.up.buf.drain(..pos);
        Ok(dec.total())
    }

    async fn relay_until_close(&mut self, pos: usize, to: Framing) -> Result<u64, Cut> {
        let mut total = 0u64;
        let mut start = pos;
        loop {
            let data = &self.up.buf[start..];
            total += data.len() as u64;
            if to == Framing::Chunked {
                push_chunk(&mut self.client.out, data);
            } else {
                self.client.out.extend_from_slice(data);
            }
            self.client.send_out().await?;
            let end = self.up.buf.len();
            if self.read_upstream(end).await? == 0 {
                break;
            }
            start = 0;
        }
        if to == Framing::Chunked {
            self.client.out.extend_from_slice(LAST_CHUNK);
            self.client.send_out().await?;
        }
        self.up.buf.clear();
        Ok(total)
    }

    /// Streams the upstream body (`from` framing) through `un` to the client (`to`
    /// framing); returns the payload bytes sent.
    async fn rewrite_body(
        &mut self,
        mut pos: usize,
        from: Framing,
        to: Framing,
        un: &mut ResponseRewriter,
    ) -> Result<u64, Cut> {
        let mut dec = match from {
            Framing::UntilClose => None,
            f => Some(BodyDecoder::new(f, u64::MAX).map_err(|_| Cut::Upstream)?),
        };
        let mut sent = 0u64;
        loop {
            match dec.as_mut() {
                None => {
                    self.rewritten.clear();
                    un.feed(&self.up.buf[pos..], self.rewritten);
                    sent += self.frame_rewritten(to);
                    pos = self.up.buf.len();
                }
                Some(d) => {
                    while !d.is_done() {
                        let got = d.decode(&self.up.buf[pos..]).map_err(|_| Cut::Upstream)?;
                        self.rewritten.clear();
                        let data = &self.up.buf[pos + got.data.start..pos + got.data.end];
                        un.feed(data, self.rewritten);
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
            if self.client.out.len() >= REWRITTEN_FLUSH {
                self.client.send_out().await?;
            }
            let read = self.read_upstream(pos).await;
            pos = 0;
            match read {
                Ok(n) if n > 0 => {}
                // Close-delimited: the end of the stream is the end of the body.
                _ if dec.is_none() => break,
                _ => return Err(Cut::Upstream),
            }
        }
        self.up.buf.drain(..pos);
        self.rewritten.clear();
        un.finish(self.rewritten);
        sent += self.frame_rewritten(to);
        if to == Framing::Chunked {
            self.client.out.extend_from_slice(LAST_CHUNK);
        }
        self.client.send_out().await?;
        Ok(sent)
    }

    /// Stages `rewritten` in the client's framing; returns the payload bytes.
    fn frame_rewritten(&mut self, to: Framing) -> u64 {
        let n = self.rewritten.len();
        if to == Framing::Chunked {
            push_chunk(&mut self.client.out, self.rewritten);
        } else {
            self.client.out.extend_from_slice(self.rewritten);
        }
        n as u64
    }
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
