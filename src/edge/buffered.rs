//! Requests whose body the edge must see whole before anything is forwarded (index
//! creation, for the plan's shard capacity; the multitenant class's JSON bodies, read and
//! written again by `tenancy`): read it into the client buffer right after the head,
//! de-chunked, up to a limit. Afterwards the request looks like one that arrived with
//! `Content-Length`, so the exchange streams it like any other.
//!
//! Must not touch: policy decisions (the caller decides what to do with the body).

use std::time::Instant;

use super::exchange::SendFail;
use super::session::Session;
use crate::errors::EdgeError;
use crate::proto::{BodyDecoder, Framing};

/// Largest body the edge buffers to inspect (index creation bodies are small).
pub const MAX_INSPECTED_BODY: u64 = 1 << 20;

impl Session {
    /// Reads the whole body (at most `limit` bytes) into `buf[head.len..]` and returns its
    /// length; chunked bodies are de-chunked in place and the head's framing becomes
    /// `Length`. Answers `Expect: 100-continue` first.
    pub(super) async fn buffer_body(
        &mut self,
        deadline: Instant,
        limit: u64,
    ) -> Result<usize, SendFail> {
        if self.head.expect_continue
            && !matches!(self.head.framing, Framing::None | Framing::Length(0))
        {
            if !self.send_continue().await {
                return Err(SendFail::Client);
            }
            self.head.expect_continue = false;
        }
        let head_len = self.head.len;
        match self.head.framing {
            Framing::None => Ok(0),
            Framing::Length(n) if n > limit => {
                Err(SendFail::Refuse(EdgeError::BodyTooLarge(limit)))
            }
            Framing::Length(n) => {
                let n = n as usize;
                self.pos = self.buf.len();
                while self.buf.len() - head_len < n {
                    self.read_more_keep(deadline).await?;
                }
                self.pos = head_len;
                Ok(n)
            }
            Framing::Chunked => self.dechunk(deadline, limit).await,
            Framing::UntilClose => Err(SendFail::Refuse(EdgeError::BadRequest(
                "request body without framing",
            ))),
        }
    }

    /// Replaces the buffered body (`old_len` bytes after the head) with `new`.
    pub(super) fn replace_body(&mut self, old_len: usize, new: &[u8]) {
        let head_len = self.head.len;
        let rest = self.buf.split_off(head_len + old_len);
        self.buf.truncate(head_len);
        self.buf.extend_from_slice(new);
        self.buf.extend_from_slice(&rest);
        self.head.framing = Framing::Length(new.len() as u64);
        self.pos = head_len;
    }

    async fn dechunk(&mut self, deadline: Instant, limit: u64) -> Result<usize, SendFail> {
        let head_len = self.head.len;
        let mut dec = BodyDecoder::new(Framing::Chunked, limit).map_err(|_| too_large(limit))?;
        let mut body = Vec::new();
        let mut pos = head_len;
        while !dec.is_done() {
            if pos == self.buf.len() {
                self.pos = pos;
                self.read_more_keep(deadline).await?;
            }
            let d = dec.decode(&self.buf[pos..]).map_err(|e| match e {
                crate::proto::ProtoError::BodyTooLarge => too_large(limit),
                _ => SendFail::Refuse(EdgeError::BadRequest("malformed chunked body")),
            })?;
            body.extend_from_slice(&self.buf[pos + d.data.start..pos + d.data.end]);
            pos += d.consumed;
            if d.consumed == 0 && !d.done {
                self.pos = pos;
                self.read_more_keep(deadline).await?;
            }
        }
        // head + body + whatever followed (pipelined requests)
        self.replace_body(pos - head_len, &body);
        Ok(body.len())
    }
}

fn too_large(limit: u64) -> SendFail {
    SendFail::Refuse(EdgeError::BodyTooLarge(limit))
}
