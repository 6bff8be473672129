//! Streaming request-body rewriters for `_bulk`, `_msearch` and `_mget`, and the bulk
//! action counter the edge uses on every class to enforce `max_bulk_actions`.
//!
//! Framing follows the upstream's parsers exactly, so the edge and the upstream agree on
//! which line is which: lines end at `\n` only; a `_bulk` action line holding only
//! whitespace is skipped; every action but `delete` is followed by a source line, passed
//! through untouched (memchr, never buffered); `_msearch` alternates header and body lines
//! (a `\n` as the very first byte is skipped); `_mget` is one JSON document.
//!
//! Must not touch: paths, responses, I/O.

use memchr::memchr;

use super::json::{Action, Dialect, JsonRewriter};
use super::prefix::Prefix;
use crate::errors::EdgeError;

/// The `_bulk` body rewriter (multitenant): `_index` of action lines into the tenant's
/// namespace, actions counted against the plan's limit. (Single-tenant bodies are only
/// counted, by `policy::bulk::BulkCounter`.)
#[derive(Debug)]
pub struct BulkRewriter {
    json: JsonRewriter,
    max_actions: u64,
    actions: u64,
    in_source: bool,
}

impl BulkRewriter {
    /// Rewrites `_index` of action lines into `prefix`'s namespace and counts actions.
    pub fn new(prefix: Prefix, max_actions: u64) -> Self {
        BulkRewriter {
            json: JsonRewriter::new(Dialect::Bulk, Some(prefix)),
            max_actions,
            actions: 0,
            in_source: false,
        }
    }

    /// Actions seen so far.
    pub fn actions(&self) -> u64 {
        self.actions
    }

    /// Whitelisted index names (as the tenant wrote them) that index/create/update actions
    /// target: the edge creates `<prefix><name>` for each before sending the body's end.
    pub fn auto_create_candidates(&self) -> &[Vec<u8>] {
        self.json.candidates()
    }

    /// Rewrites `input`, appending to `out`. `Err`: refuse the request (400, or 413 at
    /// `max_actions + 1` actions) and abandon the upstream request unterminated.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
        let mut i = 0;
        while i < input.len() {
            let nl = memchr(b'\n', &input[i..]).map(|k| i + k);
            let end = nl.unwrap_or(input.len());
            if self.in_source {
                out.extend_from_slice(&input[i..end]);
            } else {
                self.json.feed(&input[i..end], out, true)?;
            }
            let Some(nl) = nl else { break };
            out.push(b'\n');
            if self.in_source {
                self.in_source = false;
            } else {
                self.end_action_line()?;
            }
            i = nl + 1;
        }
        Ok(())
    }

    /// Ends the body (a last line without `\n` included).
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), EdgeError> {
        let _ = out;
        if !self.in_source {
            self.end_action_line()?;
        }
        Ok(())
    }

    fn end_action_line(&mut self) -> Result<(), EdgeError> {
        self.json.end()?;
        if self.json.started() {
            self.actions += 1;
            if self.actions > self.max_actions {
                return Err(EdgeError::TooManyBulkActions(self.max_actions));
            }
            // The upstream reads a source line after every action but `delete`.
            self.in_source = self.json.action() != Action::Delete;
        }
        self.json.reset();
        Ok(())
    }
}

/// The `_msearch` body rewriter: `index`/`indices` of header lines.
#[derive(Debug)]
pub struct MsearchRewriter {
    json: JsonRewriter,
    in_body: bool,
    at_start: bool,
}

impl MsearchRewriter {
    pub fn new(prefix: Prefix) -> Self {
        MsearchRewriter {
            json: JsonRewriter::new(Dialect::Msearch, Some(prefix)),
            in_body: false,
            at_start: true,
        }
    }

    /// Rewrites `input`, appending to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
        let mut i = 0;
        if self.at_start && !input.is_empty() {
            self.at_start = false;
            if input[0] == b'\n' {
                out.push(b'\n');
                i = 1;
            }
        }
        while i < input.len() {
            let nl = memchr(b'\n', &input[i..]).map(|k| i + k);
            let end = nl.unwrap_or(input.len());
            if self.in_body {
                out.extend_from_slice(&input[i..end]);
            } else {
                self.json.feed(&input[i..end], out, true)?;
            }
            let Some(nl) = nl else { break };
            out.push(b'\n');
            if !self.in_body {
                self.json.end()?;
                self.json.reset();
            }
            self.in_body = !self.in_body;
            i = nl + 1;
        }
        Ok(())
    }

    /// Ends the body.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), EdgeError> {
        let _ = out;
        if self.in_body {
            Ok(())
        } else {
            self.json.end()
        }
    }
}

/// The `_mget` body rewriter: `_index` of `docs`.
#[derive(Debug)]
pub struct MgetRewriter {
    json: JsonRewriter,
}

impl MgetRewriter {
    pub fn new(prefix: Prefix) -> Self {
        MgetRewriter {
            json: JsonRewriter::new(Dialect::Mget, Some(prefix)),
        }
    }

    /// Rewrites `input`, appending to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
        self.json.feed(input, out, true)
    }

    /// Ends the body.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), EdgeError> {
        let _ = out;
        self.json.end()
    }
}

/// One of the streaming body rewriters, chosen by [`super::RequestPlan::body_rewriter`].
#[derive(Debug)]
pub enum BodyRewriter {
    Bulk(BulkRewriter),
    Msearch(MsearchRewriter),
    Mget(MgetRewriter),
}

impl BodyRewriter {
    /// Rewrites the next chunk of the body.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
        match self {
            BodyRewriter::Bulk(b) => b.feed(input, out),
            BodyRewriter::Msearch(m) => m.feed(input, out),
            BodyRewriter::Mget(m) => m.feed(input, out),
        }
    }

    /// Ends the body; `Err` means the body must not be completed upstream.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), EdgeError> {
        match self {
            BodyRewriter::Bulk(b) => b.finish(out),
            BodyRewriter::Msearch(m) => m.finish(out),
            BodyRewriter::Mget(m) => m.finish(out),
        }
    }
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
