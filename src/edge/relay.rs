//! Relaying an upstream response to the client: the head with hop-by-hop headers removed,
//! then the body streamed through the upstream connection's buffer. Content-Length bodies
//! pass through untouched; chunked bodies pass through validated (or are de-chunked for
//! HTTP/1.0 clients); bodies delimited by the upstream closing are chunked for HTTP/1.1
//! clients. Small responses go out in one write with their head.
//!
//! Must not touch: policy, the request side (see `exchange`).

use std::time::Instant;

use super::session::{Next, Outcome, Session};
use super::upstream::UpstreamConn;
use crate::proto::{
    chunk_size_line, write_forward_response, BodyDecoder, Framing, Method, ResponseHead, Version,
    LAST_CHUNK,
};

/// A response up to this size (head and body) goes out in a single write.
const ONE_WRITE: usize = 64 * 1024;

/// The response head is out; a failure now can only cut the connection.
pub(super) enum Cut {
    Upstream,
    Client,
}

impl Session {
    /// Relays the response whose head is in `rh` (parsed from `up.buf`). Returns the outcome
    /// and whether the upstream connection can go back to the pool.
    pub(super) async fn relay(
        &mut self,
        up: &mut UpstreamConn,
        rh: &ResponseHead,
        deadline: Instant,
    ) -> (Outcome, bool) {
        let client_framing = match (rh.framing, self.version) {
            (Framing::Chunked, Version::Http10) | (Framing::UntilClose, Version::Http10) => {
                Framing::UntilClose
            }
            (Framing::UntilClose, Version::Http11) => Framing::Chunked,
            (f, _) => f,
        };
        let keep = self.keep_alive
            && client_framing != Framing::UntilClose
            && !self.core.shutdown.is_fired();
        self.out.clear();
        let length_header;
        let extra: &[(&str, &[u8])] = match (self.method, rh.header(&up.buf, b"content-length")) {
            (Method::Head, Some(v)) => {
                length_header = [("Content-Length", v)];
                &length_header
            }
            _ => &[],
        };
        write_forward_response(
            &mut self.out,
            rh,
            &up.buf,
            self.version,
            client_framing,
            keep,
            extra,
        );
        let head_bytes = self.out.len() as u64;
        let body_start = rh.len;
        let result = match rh.framing {
            Framing::None => self.send_out().await.map(|_| 0),
            Framing::Length(n) => self.relay_length(up, body_start, n, deadline).await,
            Framing::Chunked => {
                self.relay_chunked(up, body_start, client_framing, deadline)
                    .await
            }
            Framing::UntilClose => {
                self.relay_until_close(up, body_start, client_framing, deadline)
                    .await
            }
        };
        let status = rh.status;
        match result {
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
                        upstream_us: None,
                        next,
                    },
                    reusable,
                )
            }
            Err(_) => (
                Outcome {
                    status,
                    bytes_in: 0,
                    bytes_out: head_bytes,
                    queue_us: None,
                    upstream_us: None,
                    next: Next::Close,
                },
                false,
            ),
        }
    }

    /// Writes and empties `out`.
    pub(super) async fn send_out(&mut self) -> Result<(), Cut> {
        if self.out.is_empty() {
            return Ok(());
        }
        let out = std::mem::take(&mut self.out);
        let (res, mut out) = self.io.write_all(out).await;
        out.clear();
        self.out = out;
        res.map_err(|_| Cut::Client)
    }

    /// Writes `up.buf[range]` to the client.
    async fn send_upstream_bytes(
        &mut self,
        up: &mut UpstreamConn,
        range: std::ops::Range<usize>,
    ) -> Result<(), Cut> {
        self.send_out().await?;
        let buf = std::mem::take(&mut up.buf);
        let (res, buf) = self.io.write(buf, range).await;
        up.buf = buf;
        res.map_err(|_| Cut::Client)
    }

    /// Reads more from the upstream after compacting `up.buf` from `keep_from`.
    async fn read_upstream(
        &mut self,
        up: &mut UpstreamConn,
        keep_from: usize,
        deadline: Instant,
    ) -> Result<usize, Cut> {
        up.buf.drain(..keep_from);
        up.read_more(deadline).await.map_err(|_| Cut::Upstream)
    }

    async fn relay_length(
        &mut self,
        up: &mut UpstreamConn,
        mut pos: usize,
        n: u64,
        deadline: Instant,
    ) -> Result<u64, Cut> {
        let mut left = n;
        loop {
            let avail = ((up.buf.len() - pos) as u64).min(left) as usize;
            if self.out.len() + avail <= ONE_WRITE {
                self.out.extend_from_slice(&up.buf[pos..pos + avail]);
            } else {
                self.send_upstream_bytes(up, pos..pos + avail).await?;
            }
            pos += avail;
            left -= avail as u64;
            if left == 0 {
                break;
            }
            if self.out.len() >= ONE_WRITE / 2 {
                self.send_out().await?;
            }
            if self.read_upstream(up, pos, deadline).await? == 0 {
                return Err(Cut::Upstream);
            }
            pos = 0;
        }
        self.send_out().await?;
        up.buf.drain(..pos); // anything left is not part of this response
        Ok(n)
    }

    async fn relay_chunked(
        &mut self,
        up: &mut UpstreamConn,
        mut pos: usize,
        to: Framing,
        deadline: Instant,
    ) -> Result<u64, Cut> {
        let mut dec = BodyDecoder::new(Framing::Chunked, u64::MAX).map_err(|_| Cut::Upstream)?;
        loop {
            let start = pos;
            while !dec.is_done() {
                let d = dec.decode(&up.buf[pos..]).map_err(|_| Cut::Upstream)?;
                if to == Framing::UntilClose {
                    self.out
                        .extend_from_slice(&up.buf[pos + d.data.start..pos + d.data.end]);
                }
                pos += d.consumed;
                if d.consumed == 0 {
                    break;
                }
            }
            if to == Framing::Chunked {
                // Validated chunked bytes pass through as they came.
                if self.out.len() + (pos - start) <= ONE_WRITE {
                    self.out.extend_from_slice(&up.buf[start..pos]);
                } else {
                    self.send_upstream_bytes(up, start..pos).await?;
                }
            }
            if dec.is_done() {
                break;
            }
            if self.out.len() >= ONE_WRITE / 2 {
                self.send_out().await?;
            }
            if self.read_upstream(up, pos, deadline).await? == 0 {
                return Err(Cut::Upstream);
            }
            pos = 0;
        }
        self.send_out().await?;
        up.buf.drain(..pos);
        Ok(dec.total())
    }

    async fn relay_until_close(
        &mut self,
        up: &mut UpstreamConn,
        pos: usize,
        to: Framing,
        deadline: Instant,
    ) -> Result<u64, Cut> {
        let mut total = 0u64;
        let mut start = pos;
        loop {
            let data = start..up.buf.len();
            total += data.len() as u64;
            if to == Framing::Chunked && !data.is_empty() {
                let mut line = [0u8; 18];
                self.out
                    .extend_from_slice(chunk_size_line(data.len(), &mut line));
                self.out.extend_from_slice(&up.buf[data]);
                self.out.extend_from_slice(b"\r\n");
            } else {
                self.out.extend_from_slice(&up.buf[data]);
            }
            self.send_out().await?;
            let end = up.buf.len();
            if self.read_upstream(up, end, deadline).await? == 0 {
                break;
            }
            start = 0;
        }
        if to == Framing::Chunked {
            self.out.extend_from_slice(LAST_CHUNK);
            self.send_out().await?;
        }
        up.buf.clear();
        Ok(total)
    }
}
