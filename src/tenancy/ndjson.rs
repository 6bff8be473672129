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
use super::references::bulk_heads::{bulk_action_fast_learnt, Fit, HeadCache};
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

/// Bytes of the chunk being fed that go out as they are, not copied yet: consecutive runs
/// of them (a document, its `\n`, the next action line up to its index name) are copied
/// with one `memmove` when something written by the rewriter comes between them, or at
/// the chunk's end.
#[derive(Debug, Default)]
struct Span {
    start: usize,
    end: usize,
}

impl Span {
    /// `input[s..e]` goes out next.
    #[inline]
    fn pass(&mut self, input: &[u8], s: usize, e: usize, out: &mut Vec<u8>) {
        if self.end != s {
            self.flush(input, out);
            self.start = s;
        }
        self.end = e;
    }

    /// Copies what is pending: bytes written by the rewriter come next.
    #[inline]
    fn flush(&mut self, input: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(&input[self.start..self.end]);
        self.start = self.end;
    }
}

/// Where `piece`, a segment's bytes, begins in `input`, the chunk the framer was fed (it
/// hands out pieces of it); `None` (never, but then the piece is copied) otherwise.
#[inline]
fn offset_in(input: &[u8], piece: &[u8]) -> Option<usize> {
    let at = (piece.as_ptr() as usize).checked_sub(input.as_ptr() as usize)?;
    (at + piece.len() <= input.len()).then_some(at)
}

/// The `_bulk` body rewriter: action lines read and rewritten, documents streamed, actions
/// counted against the plan's limit (413 at `max_actions + 1`).
///
/// Rewriting touches action lines only: a document's bytes, its `\n`, and an action line
/// read from a kept head (`references::bulk_heads`, the common case) up to the index name
/// that gets the tenant's prefix are forwarded as they lie in the chunk ([`Span`]), copied
/// once per run instead of line by line.
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
    /// The request's wall clock: date-math `_index` values are resolved at it.
    now_ms: i64,
    /// The heads of the last action lines read fast (`references::bulk_heads`).
    heads: HeadCache,
    /// What of the chunk being fed goes out as it is, not copied yet.
    span: Span,
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
                now_ms: 0,
                heads: HeadCache::default(),
                span: Span::default(),
            },
        }
    }

    /// This rewriter, resolving date-math names at `now_ms` (the request's wall clock; 0,
    /// the epoch, until set).
    pub fn at(mut self, now_ms: i64) -> Self {
        self.st.now_ms = now_ms;
        self
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
        st.span = Span::default();
        let fed = self.framer.feed(input, |seg| st.segment(input, seg, out));
        // On a refusal too: what was read before it is in `out` as it always was.
        st.span.flush(input, out);
        fed
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
    fn segment(
        &mut self,
        input: &[u8],
        seg: Segment<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), EdgeError> {
        match (seg.role, self.action) {
            (searchgate_core::ndjson::Role::Action, _) => self.action_segment(input, seg, out),
            (_, BulkAction::Update) => {
                self.span.flush(input, out);
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
                self.document_bytes(input, seg.bytes(), out);
                match seg.end {
                    true => self.document_end(input, seg, out),
                    false => Ok(()),
                }
            }
        }
    }

    fn action_segment(
        &mut self,
        input: &[u8],
        seg: Segment<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), EdgeError> {
        if seg.first {
            self.count_action()?;
        }
        let raw = seg.with_newline();
        let key = seg.key.unwrap_or(ActionKey::Unreadable);
        // A line whole in the chunk with a kept head: left where it lies (the prefix put
        // in), or written from the head.
        let fit = match seg.whole() {
            Some(_) => self.heads.find(raw).filter(|f| f.taken == raw.len()),
            None => None,
        };
        if let Some(fit) = fit {
            return self.action_from_head(input, raw, fit, key, seg.line, out);
        }
        self.span.flush(input, out);
        let t = Tenant {
            prefix: &self.prefix,
            ids: None,
            now_ms: self.now_ms,
        };
        // A line whole in the chunk, of the common shapes: read where it lies (the fast
        // reader finds the line's end by reading it: it must be the framing's).
        let mark = out.len();
        let fast = match seg.whole() {
            Some(_) => bulk_action_fast_learnt(&t, raw, out, &mut self.heads),
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
        self.action = action_read(a, key, seg.line, &mut self.candidates)?;
        out.push(b'\n');
        Ok(())
    }

    /// An action line (`raw`, whole in `input`, its `\n` included) that a kept head fits:
    /// left where it lies with the prefix put in when the head allows, else written.
    fn action_from_head(
        &mut self,
        input: &[u8],
        raw: &[u8],
        fit: Fit<'_>,
        key: ActionKey,
        n: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), EdgeError> {
        if let (Some(at), Some(p)) = (offset_in(input, raw), self.heads.in_place(&fit)) {
            self.span.pass(input, at, at + p.at, out);
            if !p.insert.is_empty() {
                self.span.flush(input, out);
                out.extend_from_slice(p.insert);
            }
            self.span.pass(input, at + p.at, at + fit.end, out);
            self.action = action_read(fit.line, key, n, &mut self.candidates)?;
            let nl = at + raw.len() - 1;
            self.span.pass(input, nl, nl + 1, out);
            return Ok(());
        }
        self.span.flush(input, out);
        let (line, _) = self.heads.write(fit, raw, out);
        self.action = action_read(line, key, n, &mut self.candidates)?;
        out.push(b'\n');
        Ok(())
    }

    fn count_action(&mut self) -> Result<(), EdgeError> {
        self.actions += 1;
        if self.actions > self.max_actions {
            return Err(EdgeError::TooManyBulkActions(self.max_actions));
        }
        Ok(())
    }

    /// A piece of a document: forwarded as it is, but for a `\r` that ends it (held back:
    /// written only if more of the document follows).
    fn document_bytes(&mut self, input: &[u8], bytes: &[u8], out: &mut Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        if std::mem::take(&mut self.doc_cr) {
            self.span.flush(input, out);
            out.push(b'\r');
        }
        let (body, cr) = match bytes.strip_suffix(b"\r") {
            Some(b) => (b, true),
            None => (bytes, false),
        };
        self.doc_started |= !is_blank_source(body);
        match offset_in(input, body) {
            Some(at) => self.span.pass(input, at, at + body.len(), out),
            None => {
                self.span.flush(input, out);
                out.extend_from_slice(body);
            }
        }
        self.doc_cr = cr;
    }

    fn document_end(
        &mut self,
        input: &[u8],
        seg: Segment<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), EdgeError> {
        self.doc_cr = false;
        if !std::mem::take(&mut self.doc_started) {
            return Err(illegal(format!(
                "the source line [{}] of a bulk action is empty",
                seg.line
            )));
        }
        let raw = seg.with_newline();
        match offset_in(input, raw) {
            Some(at) => {
                let nl = at + raw.len() - 1;
                self.span.pass(input, nl, nl + 1, out);
            }
            None => {
                self.span.flush(input, out);
                out.push(b'\n');
            }
        }
        Ok(())
    }
}

/// An action line was read: the action, once it is known to be the one the framing read
/// from the line's first key; its auto-created index noted.
fn action_read(
    a: ActionLine<'_>,
    key: ActionKey,
    n: usize,
    candidates: &mut Vec<Vec<u8>>,
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
    now_ms: i64,
}

impl MsearchRewriter {
    pub fn new(prefix: Prefix) -> Self {
        MsearchRewriter {
            framer: Framer::new(Format::Msearch),
            st: MsearchState {
                prefix,
                line: Line::default(),
                now_ms: 0,
            },
        }
    }

    /// This rewriter, reading its headers at `now_ms` (the request's wall clock).
    pub fn at(mut self, now_ms: i64) -> Self {
        self.st.now_ms = now_ms;
        self
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
            now_ms: self.now_ms,
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
