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
use crate::proto::{BodyCursor, Framing, Step};
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
    let head_len = c.head.len;
    if let Framing::Length(n) = c.head.framing {
        if n > limit {
            return Err(too_large(limit));
        }
    }
    if c.head.expect_continue && c.has_body() {
        if !c.send_continue().await {
            return Err(SendFail::Client);
        }
        c.head.expect_continue = false; // answered: not again when forwarding
    }
    match c.head.framing {
        Framing::None => Ok(0),
        Framing::Length(n) => {
            let n = n as usize;
            c.pos = c.buf.len();
            while c.buf.len() - head_len < n {
                c.read_more(deadline).await?;
            }
            c.pos = head_len;
            Ok(n)
        }
        Framing::Chunked => dechunk(c, deadline, limit).await,
        Framing::UntilClose => Err(SendFail::Refuse(EdgeError::BadRequest(
            "request body without framing",
        ))),
    }
}

/// A compressed body of the multitenant class (`TenantPlan::inflate`): read whole (at most
/// `limit` bytes as sent), inflated (at most `limit` bytes: 413 above, so a small bomb
/// costs no more than a plain body), and put in its place; the head then frames the
/// inflated body by length, and everything after reads it as if it had come plain.
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

/// The body inspected by [`read_whole`] (`len` bytes after the head).
pub(super) fn body<T>(c: &Client<T>, len: usize) -> &[u8] {
    &c.buf[c.head.len..c.head.len + len]
}

async fn dechunk<T: Transport>(
    c: &mut Client<T>,
    deadline: Instant,
    limit: u64,
) -> Result<usize, SendFail> {
    let head_len = c.head.len;
    let mut cur =
        BodyCursor::new(Framing::Chunked, limit, head_len).map_err(|e| c.body_error(e, limit))?;
    let mut body = Vec::new();
    loop {
        match cur.step(&c.buf).map_err(|e| c.body_error(e, limit))? {
            Step::Piece(r) => body.extend_from_slice(&c.buf[r]),
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
