//! Bodies the edge must see whole before anything is forwarded (`BodyPlan::Whole`: index
//! creation, for the plan's shard capacity; the multitenant class's JSON bodies, read and
//! written again by `tenancy`; a single-tenant `_reindex`): read into the client buffer
//! right after the head, de-chunked, up to the plan's limit. Afterwards the request looks
//! like one that arrived with `Content-Length`, so the exchange streams it like any other
//! (and can replay it on a retry).
//!
//! A compressed body of the multitenant class is read the same way and inflated in place
//! ([`inflate_body`]).
//!
//! Must not touch: what is done with the body (`filter::whole_body`, `exchange`).

use std::time::Instant;

use super::client::Client;
use super::io::Transport;
use super::outcome::SendFail;
use crate::errors::EdgeError;
use crate::proto::{Framing, Step};
use crate::tenancy::encoding::{inflate, Coding};

/// Reads the whole body (at most `limit` bytes: 413 above) into `buf[head.len..]` and
/// returns its length; a chunked body is de-chunked in place and the head's framing
/// becomes `Length`. `Expect: 100-continue` is answered first (the client would otherwise
/// hold the body back).
pub(super) async fn read_whole<T: Transport>(
    c: &mut Client<T>,
    deadline: Instant,
    limit: u64,
) -> Result<usize, SendFail> {
    if let Framing::Length(n) = c.framing() {
        if n > limit {
            return Err(too_large(limit));
        }
    }
    // `Expect: 100-continue` answered now (the client would otherwise hold the body
    // back); not again when forwarding.
    if !c.send_continue().await {
        return Err(SendFail::Client);
    }
    match c.framing() {
        Framing::None => Ok(0),
        Framing::Length(n) => {
            let n = n as usize;
            while c.buffered_after_head() < n {
                c.read_more(deadline).await?;
            }
            Ok(n)
        }
        Framing::Chunked => dechunk(c, deadline, limit).await,
        Framing::UntilClose => Err(SendFail::Refuse(EdgeError::BadRequest(
            "request body without framing",
        ))),
    }
}

/// A compressed body the edge reads (`Decision::inflate`): read whole (at most `limit`
/// bytes as sent), inflated (at most `limit` bytes: 413 above, so a small bomb costs no
/// more than a plain body), and put in its place; the request then looks like one sent
/// plain with `Content-Length`, and everything after reads it so.
pub(super) async fn inflate_body<T: Transport>(
    c: &mut Client<T>,
    deadline: Instant,
    limit: u64,
    coding: Coding,
) -> Result<(), SendFail> {
    let len = read_whole(c, deadline, limit).await?;
    let mut plain = Vec::new();
    inflate(coding, body(c, len), limit, &mut plain)
        .map_err(|e| SendFail::Refuse(e.error(limit)))?;
    c.replace_body(len, &plain);
    Ok(())
}

/// The body read whole by [`read_whole`] (`len` bytes after the head).
pub(super) fn body<T: Transport>(c: &Client<T>, len: usize) -> &[u8] {
    let start = c.head_len();
    &c.buf()[start..start + len]
}

/// De-chunks the body into the buffer after the head (the stream is read through the one
/// cursor; nothing before the head's end is dropped, so the request can be replayed).
async fn dechunk<T: Transport>(
    c: &mut Client<T>,
    deadline: Instant,
    limit: u64,
) -> Result<usize, SendFail> {
    let head_len = c.head_len();
    let mut cur = c.body_cursor(limit)?;
    let mut body = Vec::new();
    loop {
        match c.step_body(&mut cur, limit)? {
            Step::Piece(r) => body.extend_from_slice(&c.buf()[r]),
            Step::Done => break,
            // The head stays in the buffer: more is read after everything.
            Step::NeedMore => c.read_more(deadline).await?,
        }
    }
    // head + body + whatever followed (pipelined requests)
    c.replace_body(cur.pos() - head_len, &body);
    Ok(body.len())
}

fn too_large(limit: u64) -> SendFail {
    SendFail::Refuse(EdgeError::BodyTooLarge(limit))
}
