//! Bodies the edge must see whole before anything is forwarded (`BodyPlan::Whole`: index
//! creation, for the plan's shard capacity and the multitenant alias names): read into the
//! client buffer right after the head, de-chunked, up to a small limit. Afterwards the
//! request looks like one that arrived with `Content-Length`, so the exchange streams it
//! like any other (and can replay it on a retry).
//!
//! Must not touch: what is done with the body (`filter::whole_body`, `exchange`).

use std::time::Instant;

use super::client::Client;
use super::io::Transport;
use super::outcome::SendFail;
use crate::errors::EdgeError;
use crate::proto::{BodyDecoder, Framing, ProtoError};

/// Largest body the edge buffers to inspect (index creation bodies are small).
pub const MAX_INSPECTED_BODY: u64 = 1 << 20;

/// Reads the whole body into `buf[head.len..]` and returns its length; a chunked body is
/// de-chunked in place and the head's framing becomes `Length`.
pub(super) async fn read_whole<T: Transport>(
    c: &mut Client<T>,
    deadline: Instant,
) -> Result<usize, SendFail> {
    let head_len = c.head.len;
    match c.head.framing {
        Framing::None => Ok(0),
        Framing::Length(n) if n > MAX_INSPECTED_BODY => Err(too_large()),
        Framing::Length(n) => {
            let n = n as usize;
            c.pos = c.buf.len();
            while c.buf.len() - head_len < n {
                c.read_more(deadline).await?;
            }
            c.pos = head_len;
            Ok(n)
        }
        Framing::Chunked => dechunk(c, deadline).await,
        Framing::UntilClose => Err(SendFail::Refuse(EdgeError::BadRequest(
            "request body without framing",
        ))),
    }
}

/// The body inspected by [`read_whole`] (`len` bytes after the head).
pub(super) fn body<T>(c: &Client<T>, len: usize) -> &[u8] {
    &c.buf[c.head.len..c.head.len + len]
}

async fn dechunk<T: Transport>(c: &mut Client<T>, deadline: Instant) -> Result<usize, SendFail> {
    let head_len = c.head.len;
    let mut dec =
        BodyDecoder::new(Framing::Chunked, MAX_INSPECTED_BODY).map_err(|_| too_large())?;
    let mut body = Vec::new();
    let mut pos = head_len;
    while !dec.is_done() {
        if pos == c.buf.len() {
            c.pos = pos;
            c.read_more(deadline).await?;
        }
        let d = dec.decode(&c.buf[pos..]).map_err(|e| match e {
            ProtoError::BodyTooLarge => too_large(),
            _ => SendFail::Refuse(EdgeError::BadRequest("malformed chunked body")),
        })?;
        body.extend_from_slice(&c.buf[pos + d.data.start..pos + d.data.end]);
        pos += d.consumed;
        if d.consumed == 0 && !d.done {
            c.pos = pos;
            c.read_more(deadline).await?;
        }
    }
    // head + body + whatever followed (pipelined requests)
    c.replace_body(pos - head_len, &body);
    Ok(body.len())
}

fn too_large() -> SendFail {
    SendFail::Refuse(EdgeError::BodyTooLarge(MAX_INSPECTED_BODY))
}
