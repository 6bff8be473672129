//! NDJSON bodies (`_bulk`, `_msearch`) read with Elasticsearch 7.10's framing rules and
//! written again line by line by the edge, streaming: at most one line is held (bounded by
//! the request body limit), `_bulk` document lines pass through without being held.
//!
//! The rules (`BulkRequestParser.parse`, `MultiSearchRequest.readMultiLineFormat`):
//! - a line ends at `\n` only; one `\r` before it is trimmed;
//! - `_bulk`: an action line that is empty or whitespace-only is skipped (still counted
//!   as a line); every action but `delete` takes the next line as its source, whatever it
//!   holds;
//! - `_msearch`: a `\n` as the very first byte is skipped; an empty or whitespace-only
//!   header is an empty header (defaults from the path); every header is followed by a
//!   body line, which must hold a search body;
//! - bytes after the last `\n` are refused ("must be terminated by a newline [\n]", as
//!   7.10 answers), and so is an action or header whose source or body line is missing
//!   (7.10 drops it silently; the edge does not guess).
//!
//! A `_bulk` line that ends in the chunk it started in is read where it lies; only a line
//! split across chunks is collected first. Action lines of the common shapes are read
//! without a value tree (`references::bulk_fast`), their end found by reading them, the
//! others by the strict parser.
//!
//! The edge writes one compact JSON line per action, header or body and passes `index`/
//! `create` sources as sent (a document never names an index), each line ending in `\n`:
//! no blank lines, no `\r`. A blank source line is refused (an upstream that skipped it
//! would pair the lines differently). The row of the reference table for each key is in
//! `references::docs`.
//!
//! Must not touch: paths, responses, I/O.

use memchr::memchr;

use super::json;
use super::prefix::Prefix;
use super::references::bulk_heads::{bulk_action_fast_cached, HeadCache};
use super::references::docs::{
    bulk_action, bulk_update_source, msearch_header, ActionLine, BulkAction,
};
use super::references::search::search_body;
use super::references::{illegal, parsing, Tenant};
use crate::errors::EdgeError;

/// Longest line held (the edge's body limit bounds it first).
const MAX_LINE: usize = 100 << 20;
/// Distinct auto-creation candidates remembered per body.
const MAX_CANDIDATES: usize = 64;

fn not_terminated(what: &str) -> EdgeError {
    illegal(format!(
        "The {what} request must be terminated by a newline [\\n]"
    ))
}

/// Collects one line at a time across chunks.
#[derive(Debug, Default)]
struct Line {
    buf: Vec<u8>,
}

impl Line {
    fn check_len(len: usize) -> Result<(), EdgeError> {
        if len > MAX_LINE {
            return Err(illegal("a line of the request body is too long"));
        }
        Ok(())
    }

    fn push(&mut self, bytes: &[u8]) -> Result<(), EdgeError> {
        Self::check_len(self.buf.len() + bytes.len())?;
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// The line without a trailing `\r`.
    fn trimmed(&self) -> &[u8] {
        self.buf.strip_suffix(b"\r").unwrap_or(&self.buf)
    }
}

fn is_blank(b: &[u8]) -> bool {
    b.iter().all(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
}

/// A document (source) line that some reader could take for blank: only control bytes and
/// spaces. JSON's whitespace is four of them, but Java's `String.trim()` drops every byte
/// up to `' '` (a form feed too), and an engine that skipped such a line would pair the
/// lines after it differently. No JSON document looks like this, so refusing it costs a
/// valid client nothing. (Found by `fuzz/fuzz_targets/tenancy.rs`: a line of form feeds.)
fn is_blank_source(b: &[u8]) -> bool {
    b.iter().all(|&c| c <= b' ' || c == 0x7f)
}

/// What the next `_bulk` line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BulkNext {
    Action,
    /// The source of an `index`/`create`: streamed through.
    Document,
    /// The source of an `update`: held and checked.
    Update,
}

/// The `_bulk` body rewriter: action lines read and rewritten, documents streamed, actions
/// counted against the plan's limit (413 at `max_actions + 1`).
#[derive(Debug)]
pub struct BulkRewriter {
    prefix: Prefix,
    max_actions: u64,
    actions: u64,
    lines: usize,
    next: BulkNext,
    line: Line,
    /// Streaming a document: a non-blank byte seen, and a `\r` held back.
    doc_started: bool,
    doc_cr: bool,
    candidates: Vec<Vec<u8>>,
    /// The heads of the last action lines read fast (`references::bulk_heads`).
    heads: HeadCache,
}

impl BulkRewriter {
    pub fn new(prefix: Prefix, max_actions: u64) -> Self {
        BulkRewriter {
            prefix,
            max_actions,
            actions: 0,
            lines: 0,
            next: BulkNext::Action,
            line: Line::default(),
            doc_started: false,
            doc_cr: false,
            candidates: Vec::new(),
            heads: HeadCache::default(),
        }
    }

    /// Actions seen so far.
    pub fn actions(&self) -> u64 {
        self.actions
    }

    /// Whitelisted index names (as the tenant wrote them) that index/create/update actions
    /// target: the edge creates `<prefix><name>` for each before sending the body's end.
    pub fn auto_create_candidates(&self) -> &[Vec<u8>] {
        &self.candidates
    }

    /// Rewrites `input`, appending to `out`. `Err`: refuse the request and abandon the
    /// upstream request unterminated.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
        let mut i = 0;
        while i < input.len() {
            if self.next == BulkNext::Action && self.line.buf.is_empty() {
                if let Some(taken) = self.fast_action(&input[i..], out)? {
                    i += taken;
                    continue;
                }
            }
            let Some(nl) = memchr(b'\n', &input[i..]).map(|k| i + k) else {
                match self.next {
                    BulkNext::Document => self.document_bytes(&input[i..], out),
                    _ => self.line.push(&input[i..])?,
                }
                break;
            };
            self.lines += 1;
            let piece = &input[i..nl];
            match self.next {
                BulkNext::Document => {
                    self.document_bytes(piece, out);
                    self.document_end(out)?;
                }
                // A line whole in this chunk is read where it is, not copied first.
                _ if self.line.buf.is_empty() => {
                    Line::check_len(piece.len())?;
                    self.line_end(piece, out)?;
                }
                _ => {
                    self.line.push(piece)?;
                    let line = std::mem::take(&mut self.line.buf);
                    let ended = self.line_end(&line, out);
                    self.line.buf = line;
                    self.line.buf.clear();
                    ended?;
                }
            }
            i = nl + 1;
        }
        Ok(())
    }

    /// Ends the body: nothing may follow the last `\n`, and no source line may be missing.
    pub fn finish(&mut self, _out: &mut Vec<u8>) -> Result<(), EdgeError> {
        let pending = match self.next {
            BulkNext::Document => self.doc_started || self.doc_cr,
            _ => !self.line.buf.is_empty(),
        };
        if pending {
            return Err(not_terminated("bulk"));
        }
        if self.next != BulkNext::Action {
            return Err(illegal(format!(
                "Malformed action/metadata line [{}], the source line is missing",
                self.lines
            )));
        }
        Ok(())
    }

    fn document_bytes(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        if std::mem::take(&mut self.doc_cr) {
            out.push(b'\r');
        }
        let (body, cr) = match bytes.strip_suffix(b"\r") {
            Some(b) => (b, true),
            None => (bytes, false),
        };
        self.doc_started |= !is_blank_source(body);
        out.extend_from_slice(body);
        self.doc_cr = cr;
    }

    fn document_end(&mut self, out: &mut Vec<u8>) -> Result<(), EdgeError> {
        self.doc_cr = false;
        if !std::mem::take(&mut self.doc_started) {
            return Err(illegal(format!(
                "the source line [{}] of a bulk action is empty",
                self.lines
            )));
        }
        out.push(b'\n');
        self.next = BulkNext::Action;
        Ok(())
    }

    /// An action or update source line ended (`line`: without its `\n`).
    fn line_end(&mut self, line: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
        let text = line.strip_suffix(b"\r").unwrap_or(line);
        match self.next {
            BulkNext::Update => self.update_end(text, out),
            _ => self.action_end(text, out),
        }
    }

    /// An action line of the common shapes at the start of `rest`, read where it lies with
    /// its end found by reading it (`references::bulk_fast`): the bytes it took. `None`:
    /// the line goes the general way (its end searched for, then read).
    fn fast_action(&mut self, rest: &[u8], out: &mut Vec<u8>) -> Result<Option<usize>, EdgeError> {
        let t = Tenant {
            prefix: &self.prefix,
            ids: None,
        };
        let Some((a, taken)) = bulk_action_fast_cached(&t, rest, out, &mut self.heads) else {
            return Ok(None);
        };
        self.lines += 1;
        self.count_action()?;
        self.action_read(a, out);
        Ok(Some(taken))
    }

    fn count_action(&mut self) -> Result<(), EdgeError> {
        self.actions += 1;
        if self.actions > self.max_actions {
            return Err(EdgeError::TooManyBulkActions(self.max_actions));
        }
        Ok(())
    }

    fn action_end(&mut self, text: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
        if is_blank(text) {
            return Ok(());
        }
        self.count_action()?;
        let t = Tenant {
            prefix: &self.prefix,
            ids: None,
        };
        let a = bulk_action(&t, text, self.lines, out)?;
        self.action_read(a, out);
        Ok(())
    }

    /// An action line was read and written (without its `\n`): what follows it.
    fn action_read(&mut self, a: ActionLine<'_>, out: &mut Vec<u8>) {
        out.push(b'\n');
        if let Some(name) = a.auto_create {
            let known = self.candidates.iter().any(|c| c == name.as_bytes());
            if self.candidates.len() < MAX_CANDIDATES && !known {
                self.candidates.push(name.into_owned().into_bytes());
            }
        }
        self.next = match a.action {
            BulkAction::Delete => BulkNext::Action,
            BulkAction::Update => BulkNext::Update,
            BulkAction::Index | BulkAction::Create => BulkNext::Document,
        };
    }

    fn update_end(&mut self, text: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
        if is_blank(text) {
            return Err(illegal(format!(
                "the source line [{}] of a bulk action is empty",
                self.lines
            )));
        }
        bulk_update_source(text, self.lines, out)?;
        out.push(b'\n');
        self.next = BulkNext::Action;
        Ok(())
    }
}

/// The `_msearch` body rewriter: headers and bodies read, rewritten and written again.
#[derive(Debug)]
pub struct MsearchRewriter {
    prefix: Prefix,
    at_start: bool,
    in_body: bool,
    line: Line,
}

impl MsearchRewriter {
    pub fn new(prefix: Prefix) -> Self {
        MsearchRewriter {
            prefix,
            at_start: true,
            in_body: false,
            line: Line::default(),
        }
    }

    /// Rewrites `input`, appending to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
        let mut i = 0;
        if self.at_start && !input.is_empty() {
            self.at_start = false;
            if input[0] == b'\n' {
                i = 1; // "support first line with \n"
            }
        }
        while i < input.len() {
            let nl = memchr(b'\n', &input[i..]).map(|k| i + k);
            let end = nl.unwrap_or(input.len());
            self.line.push(&input[i..end])?;
            let Some(nl) = nl else { break };
            self.line_end(out)?;
            i = nl + 1;
        }
        Ok(())
    }

    fn line_end(&mut self, out: &mut Vec<u8>) -> Result<(), EdgeError> {
        let t = Tenant {
            prefix: &self.prefix,
            ids: None,
        };
        let text = self.line.trimmed();
        if self.in_body {
            let Some(mut body) = json::parse_opt(text)? else {
                return Err(parsing(
                    "Expected [START_OBJECT] but found [null] (an empty msearch body line)",
                ));
            };
            search_body(&t, &mut body, false)?;
            json::write(&body, out);
        } else {
            msearch_header(&t, text, out)?;
        }
        out.push(b'\n');
        self.in_body = !self.in_body;
        self.line.buf.clear();
        Ok(())
    }

    /// Ends the body.
    pub fn finish(&mut self, _out: &mut Vec<u8>) -> Result<(), EdgeError> {
        if !self.line.buf.is_empty() {
            return Err(not_terminated("msearch"));
        }
        if self.in_body {
            return Err(illegal("the msearch body line is missing"));
        }
        Ok(())
    }
}

/// One of the streaming body rewriters.
#[derive(Debug)]
pub enum BodyRewriter {
    Bulk(BulkRewriter),
    Msearch(MsearchRewriter),
}

impl BodyRewriter {
    /// Rewrites the next chunk of the body.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
        match self {
            BodyRewriter::Bulk(b) => b.feed(input, out),
            BodyRewriter::Msearch(m) => m.feed(input, out),
        }
    }

    /// Ends the body; `Err` means the body must not be completed upstream.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), EdgeError> {
        match self {
            BodyRewriter::Bulk(b) => b.finish(out),
            BodyRewriter::Msearch(m) => m.finish(out),
        }
    }
}

#[cfg(test)]
#[path = "ndjson_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "ndjson_head_cache_tests.rs"]
mod head_cache_tests;
