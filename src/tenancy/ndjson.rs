//! NDJSON bodies (`_bulk`, `_msearch`) read with Elasticsearch 7.10's framing rules and
//! written again line by line by the edge, streaming: at most one line is held (bounded by
//! the request body limit), `_bulk` document lines pass through without being held.
//!
//! The framing is the core's one framer (`searchgate_core::ndjson::Framer`: where a line
//! ends, which lines are actions, sources, headers and bodies, which blank lines are
//! skipped); the edge's `_bulk` count and the embedded engine read bodies with it too. What
//! is decided here is what the edge refuses on top of that framing:
//! - bytes after the last `\n` ("must be terminated by a newline [\n]", as 7.10 answers),
//!   and an action or header whose source or body line is missing (7.10 drops it
//!   silently; the edge does not guess);
//! - a blank source line (an upstream that skipped it would pair the lines differently);
//! - an action line whose parsed action is not the one the framing read from its first
//!   key (cannot happen for a line the parser accepts; checked, not assumed).
//!
//! A line whole in the chunk it came in is read where it lies; only a line split across
//! chunks is collected first. Action lines of the common shapes are read without a value
//! tree (`references::bulk_fast`, with the per-body cache of `references::bulk_heads`), the
//! others by the strict parser.
//!
//! The edge writes one compact JSON line per action, header or body and passes `index`/
//! `create` sources as sent (a document never names an index), each line ending in `\n`:
//! no blank lines, no `\r`. The row of the reference table for each key is in
//! `references::docs`.
//!
//! Must not touch: paths, responses, I/O, the framing rules (the core's `ndjson`).

use searchgate_core::ndjson::{ActionKey, End, Format, Framer, Segment};

use super::json;
use super::prefix::Prefix;
use super::references::bulk_fast::bulk_action;
use super::references::bulk_heads::{bulk_action_fast_cached, HeadCache};
use super::references::docs::{bulk_update_source, msearch_header, ActionLine, BulkAction};
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

/// Collects one line across chunks.
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

    /// The line of which `seg` is a piece, once it is complete: read where it lies when it
    /// came whole, else collected here. `None`: more pieces to come.
    fn collect<'s>(&'s mut self, seg: &Segment<'s>) -> Result<Option<&'s [u8]>, EdgeError> {
        if let Some(whole) = seg.whole() {
            Line::check_len(whole.len())?;
            return Ok(Some(whole));
        }
        if seg.first {
            self.buf.clear();
        }
        Line::check_len(self.buf.len() + seg.bytes().len())?;
        self.buf.extend_from_slice(seg.bytes());
        Ok(seg.end.then_some(&self.buf[..]))
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
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

/// The `_bulk` body rewriter: action lines read and rewritten, documents streamed, actions
/// counted against the plan's limit (413 at `max_actions + 1`).
#[derive(Debug)]
pub struct BulkRewriter {
    framer: Framer,
    st: BulkState,
}

/// What the rewriter keeps between segments.
#[derive(Debug)]
struct BulkState {
    prefix: Prefix,
    max_actions: u64,
    actions: u64,
    /// The action whose source line comes next.
    action: BulkAction,
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
            framer: Framer::new(Format::Bulk),
            st: BulkState {
                prefix,
                max_actions,
                actions: 0,
                action: BulkAction::Delete,
                line: Line::default(),
                doc_started: false,
                doc_cr: false,
                candidates: Vec::new(),
                heads: HeadCache::default(),
            },
        }
    }

    /// Actions seen so far.
    pub fn actions(&self) -> u64 {
        self.st.actions
    }

    /// Whitelisted index names (as the tenant wrote them) that index/create/update actions
    /// target: the edge creates `<prefix><name>` for each before sending the body's end.
    pub fn auto_create_candidates(&self) -> &[Vec<u8>] {
        &self.st.candidates
    }

    /// Rewrites `input`, appending to `out`. `Err`: refuse the request and abandon the
    /// upstream request unterminated.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
        let st = &mut self.st;
        self.framer.feed(input, |seg| st.segment(seg, out))
    }

    /// Ends the body: nothing may follow the last `\n`, and no source line may be missing.
    pub fn finish(&mut self, _out: &mut Vec<u8>) -> Result<(), EdgeError> {
        match self.framer.finish() {
            End::Complete => Ok(()),
            End::Unterminated => Err(not_terminated("bulk")),
            End::MissingSource { line } => Err(illegal(format!(
                "Malformed action/metadata line [{line}], the source line is missing"
            ))),
        }
    }
}

impl BulkState {
    fn segment(&mut self, seg: Segment<'_>, out: &mut Vec<u8>) -> Result<(), EdgeError> {
        match (seg.role, self.action) {
            (searchgate_core::ndjson::Role::Action, _) => self.action_segment(seg, out),
            (_, BulkAction::Update) => {
                let Some(line) = self.line.collect(&seg)? else {
                    return Ok(());
                };
                let text = trim_cr(line);
                if is_blank(text) {
                    return Err(illegal(format!(
                        "the source line [{}] of a bulk action is empty",
                        seg.line
                    )));
                }
                bulk_update_source(text, seg.line, out)?;
                out.push(b'\n');
                Ok(())
            }
            _ => {
                self.document_bytes(seg.bytes(), out);
                match seg.end {
                    true => self.document_end(seg.line, out),
                    false => Ok(()),
                }
            }
        }
    }

    fn action_segment(&mut self, seg: Segment<'_>, out: &mut Vec<u8>) -> Result<(), EdgeError> {
        if seg.first {
            self.count_action()?;
        }
        let t = Tenant {
            prefix: &self.prefix,
            ids: None,
        };
        // A line whole in the chunk, of the common shapes: read where it lies, its head
        // perhaps from the cache (the fast reader finds the line's end by reading it: it
        // must be the framing's).
        let mark = out.len();
        let raw = seg.with_newline();
        let fast = match seg.whole() {
            Some(_) => bulk_action_fast_cached(&t, raw, out, &mut self.heads),
            None => None,
        };
        let a = match fast {
            Some((a, taken)) if taken == raw.len() => a,
            _ => {
                out.truncate(mark);
                let Some(line) = self.line.collect(&seg)? else {
                    return Ok(());
                };
                bulk_action(&t, trim_cr(line), seg.line, out)?
            }
        };
        let key = seg.key.unwrap_or(ActionKey::Unreadable);
        action_read(a, key, seg.line, &mut self.candidates, out).map(|action| self.action = action)
    }

    fn count_action(&mut self) -> Result<(), EdgeError> {
        self.actions += 1;
        if self.actions > self.max_actions {
            return Err(EdgeError::TooManyBulkActions(self.max_actions));
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

    fn document_end(&mut self, n: usize, out: &mut Vec<u8>) -> Result<(), EdgeError> {
        self.doc_cr = false;
        if !std::mem::take(&mut self.doc_started) {
            return Err(illegal(format!(
                "the source line [{n}] of a bulk action is empty"
            )));
        }
        out.push(b'\n');
        Ok(())
    }
}

/// An action line was read and written (without its `\n`): the action, once it is known to
/// be the one the framing read from the line's first key; its auto-created index noted.
fn action_read(
    a: ActionLine<'_>,
    key: ActionKey,
    n: usize,
    candidates: &mut Vec<Vec<u8>>,
    out: &mut Vec<u8>,
) -> Result<BulkAction, EdgeError> {
    let framed = match key {
        ActionKey::Index => Some(BulkAction::Index),
        ActionKey::Create => Some(BulkAction::Create),
        ActionKey::Update => Some(BulkAction::Update),
        ActionKey::Delete => Some(BulkAction::Delete),
        _ => None,
    };
    if framed != Some(a.action) {
        return Err(illegal(format!(
            "Malformed action/metadata line [{n}], its action is read two ways"
        )));
    }
    out.push(b'\n');
    if let Some(name) = a.auto_create {
        let known = candidates.iter().any(|c| c == name.as_bytes());
        if candidates.len() < MAX_CANDIDATES && !known {
            candidates.push(name.into_owned().into_bytes());
        }
    }
    Ok(a.action)
}

/// The `_msearch` body rewriter: headers and bodies read, rewritten and written again.
#[derive(Debug)]
pub struct MsearchRewriter {
    framer: Framer,
    st: MsearchState,
}

#[derive(Debug)]
struct MsearchState {
    prefix: Prefix,
    line: Line,
}

impl MsearchRewriter {
    pub fn new(prefix: Prefix) -> Self {
        MsearchRewriter {
            framer: Framer::new(Format::Msearch),
            st: MsearchState {
                prefix,
                line: Line::default(),
            },
        }
    }

    /// Rewrites `input`, appending to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
        let st = &mut self.st;
        self.framer.feed(input, |seg| st.segment(seg, out))
    }

    /// Ends the body.
    pub fn finish(&mut self, _out: &mut Vec<u8>) -> Result<(), EdgeError> {
        match self.framer.finish() {
            End::Complete => Ok(()),
            End::Unterminated => Err(not_terminated("msearch")),
            End::MissingSource { .. } => Err(illegal("the msearch body line is missing")),
        }
    }
}

impl MsearchState {
    fn segment(&mut self, seg: Segment<'_>, out: &mut Vec<u8>) -> Result<(), EdgeError> {
        let t = Tenant {
            prefix: &self.prefix,
            ids: None,
        };
        let Some(line) = self.line.collect(&seg)? else {
            return Ok(());
        };
        let text = trim_cr(line);
        if seg.role == searchgate_core::ndjson::Role::Body {
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
