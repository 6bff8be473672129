//! The one framing of NDJSON request bodies (`_bulk`, `_msearch`), as Elasticsearch 7.10
//! frames them (`BulkRequestParser`, `MultiSearchRequest.readMultiLineFormat`), for every
//! reader of such a body: the edge's `_bulk` action count, the multitenant rewriting and
//! the embedded engine.
//!
//! The rules:
//! - a line ends at `\n`, and only there; bytes after the last `\n` (blank space too) leave
//!   the body unterminated ([`End::Unterminated`]);
//! - `_bulk`: where an action must start, a line of blank space (` `, `\t`, `\r`) is
//!   skipped (it still counts as a line); otherwise it is an action line, counted from its
//!   first byte that is not blank space. Its first key ([`ActionKey`], read as Jackson
//!   reads it) says what follows: `delete` nothing, any other a source line, which is the
//!   next line whatever it holds (a blank one too);
//! - `_msearch`: a `\n` as the body's very first byte is skipped; then header and body lines
//!   alternate, a blank header being an empty header, never skipped;
//! - an action without its source line, or a header without its body line, at the end:
//!   [`End::MissingSource`] (Elasticsearch drops it; the edge refuses it).
//!
//! [`Framer::feed`] takes the body in pieces of any size (the state between pieces is
//! carried) and hands every line over as [`Segment`]s: a line whole in a piece comes as one
//! segment, a line across pieces as several. Line ends are found in whole 64-byte blocks
//! with SSE2 compare masks, and with memchr inside long lines (`newlines`); only the first
//! bytes of action lines are read besides (most are decided by one 8-byte compare), so a
//! body of tiny documents costs about what `memchr::memchr_iter` costs to visit its `\n`s
//! (`benches/ndjson.rs`). What a consumer refuses (a blank
//! document, a line too long) is its own decision; the framing is decided here only.
//!
//! Must not touch: I/O, JSON beyond an action's first key, tenants, limits.

mod key;
mod newlines;
#[cfg(test)]
mod tests;

pub use key::ActionKey;
use key::{quick_key, KeyReader};
use newlines::Newlines;

/// Which NDJSON API a body is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Bulk,
    Msearch,
}

/// What a line is, from where it stands in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `_bulk`: an action line (blank ones are skipped, never handed over).
    Action,
    /// `_bulk`: the source line of the action before it.
    Source,
    /// `_msearch`: a header line.
    Header,
    /// `_msearch`: a search body line.
    Body,
}

/// A piece of one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment<'a> {
    pub role: Role,
    /// The line's number in the body, from 1 (skipped blank lines count).
    pub line: usize,
    /// The piece, with the line's `\n` last when [`Self::end`].
    raw: &'a [u8],
    /// The line's first piece (an action line's starts at its first byte that is not
    /// blank space).
    pub first: bool,
    /// The line ends with this piece.
    pub end: bool,
    /// At the end of an action line: its first key.
    pub key: Option<ActionKey>,
}

impl<'a> Segment<'a> {
    /// The piece's bytes, without the `\n`.
    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        match self.end {
            true => &self.raw[..self.raw.len() - 1],
            false => self.raw,
        }
    }

    /// The piece's bytes with the line's `\n` when it ends here.
    #[inline]
    pub fn with_newline(&self) -> &'a [u8] {
        self.raw
    }

    /// The whole line, when it came in one piece (without its `\n`).
    #[inline]
    pub fn whole(&self) -> Option<&'a [u8]> {
        (self.first && self.end).then(|| self.bytes())
    }
}

/// How a body ended ([`Framer::finish`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Every line ended, every action has its source, every header its body.
    Complete,
    /// Bytes follow the last `\n`.
    Unterminated,
    /// The last action line has no source line (`_bulk`), or the last header no body
    /// line (`_msearch`); `line` is that line's number.
    MissingSource { line: usize },
}

/// Streaming NDJSON framer (module docs).
#[derive(Debug, Clone)]
pub struct Framer {
    format: Format,
    /// The role of the line under way, or of the next one.
    next: Role,
    /// Some bytes of the line under way have been read.
    mid: bool,
    /// The action line under way has begun (a byte that is not blank space).
    started: bool,
    key: KeyReader,
    /// The number of the line under way, or of the last one.
    line: usize,
    /// The last action's or header's line (for [`End::MissingSource`]).
    opened: usize,
    actions: u64,
    /// Nothing of the body read yet (`_msearch` skips a first `\n`).
    at_start: bool,
}

impl Framer {
    /// A framer at the start of a body.
    pub fn new(format: Format) -> Framer {
        Framer {
            format,
            next: match format {
                Format::Bulk => Role::Action,
                Format::Msearch => Role::Header,
            },
            mid: false,
            started: false,
            key: KeyReader::default(),
            line: 0,
            opened: 0,
            actions: 0,
            at_start: true,
        }
    }

    /// Actions begun so far (`_bulk`; `_msearch` counts headers).
    #[inline]
    pub fn actions(&self) -> u64 {
        self.actions
    }

    /// Lines begun so far.
    pub fn lines(&self) -> usize {
        self.line
    }

    /// Frames the next piece of the body, handing every segment to `f` in order; an error
    /// of `f` stops the framing (the framer is then not to be fed again).
    #[inline]
    pub fn feed<'a, E>(
        &mut self,
        chunk: &'a [u8],
        mut f: impl FnMut(Segment<'a>) -> Result<(), E>,
    ) -> Result<(), E> {
        if chunk.is_empty() {
            return Ok(());
        }
        let mut start = 0;
        if std::mem::take(&mut self.at_start) {
            // "support first line with \n"
            start = usize::from(self.format == Format::Msearch && chunk[0] == b'\n');
        }
        let mut nls = Newlines::new(chunk, start);
        if self.mid {
            let Some(nl) = self.next_nl(&mut nls) else {
                return self.piece(&chunk[start..], false, &mut f);
            };
            self.piece(&chunk[start..=nl], true, &mut f)?;
            start = nl + 1;
        }
        while let Some(nl) = self.next_nl(&mut nls) {
            self.whole(&chunk[start..=nl], &mut f)?;
            start = nl + 1;
        }
        if start < chunk.len() {
            self.piece(&chunk[start..], false, &mut f)?;
        }
        Ok(())
    }

    /// Counts the actions of the next piece (a `feed` that hands nothing over): the
    /// running count.
    #[inline]
    pub fn count(&mut self, chunk: &[u8]) -> u64 {
        let framed: Result<(), std::convert::Infallible> = self.feed(chunk, |_| Ok(()));
        let Ok(()) = framed;
        self.actions
    }

    /// How the body ended, once it has all been fed.
    pub fn finish(&self) -> End {
        if self.mid {
            End::Unterminated
        } else if matches!(self.next, Role::Source | Role::Body) {
            End::MissingSource { line: self.opened }
        } else {
            End::Complete
        }
    }

    /// The end of the line under way or next: a source or search body (the long lines) is
    /// searched past the current block with memchr.
    #[inline(always)]
    fn next_nl(&self, nls: &mut Newlines<'_>) -> Option<usize> {
        match self.next {
            Role::Source | Role::Body => nls.next_far(),
            Role::Action | Role::Header => nls.next(),
        }
    }

    /// A line whole in the piece (`raw` ends with its `\n`), the framer between lines.
    #[inline(always)]
    fn whole<'a, E>(
        &mut self,
        raw: &'a [u8],
        f: &mut impl FnMut(Segment<'a>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.line += 1;
        let role = self.next;
        let (raw, key) = match role {
            Role::Action => {
                let s = match raw[0] {
                    b'{' => 0,
                    _ => match raw.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\r')) {
                        Some(i) if raw[i] != b'\n' => i,
                        _ => return Ok(()), // a blank line where an action may start
                    },
                };
                let line = &raw[s..];
                let key = match quick_key(line) {
                    Some(k) => k,
                    None => {
                        let mut reader = KeyReader::default();
                        reader
                            .feed(&line[..line.len() - 1])
                            .unwrap_or_else(|| reader.finish())
                    }
                };
                self.open(key.has_source());
                (line, Some(key))
            }
            Role::Source => {
                self.next = Role::Action;
                (raw, None)
            }
            Role::Header => {
                self.open(true);
                (raw, None)
            }
            Role::Body => {
                self.next = Role::Header;
                (raw, None)
            }
        };
        f(Segment {
            role,
            line: self.line,
            raw,
            first: true,
            end: true,
            key,
        })
    }

    /// An action or header begins on the current line; `then`: a line follows it.
    #[inline(always)]
    fn open(&mut self, then: bool) {
        self.actions += 1;
        self.opened = self.line;
        self.next = match (self.format, then) {
            (Format::Bulk, true) => Role::Source,
            (Format::Bulk, false) => Role::Action,
            (Format::Msearch, _) => Role::Body,
        };
    }

    /// A piece of a line across pieces of the body (`end`: `raw` ends with its `\n`).
    fn piece<'a, E>(
        &mut self,
        mut raw: &'a [u8],
        end: bool,
        f: &mut impl FnMut(Segment<'a>) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.mid {
            self.mid = true;
            self.started = false;
            self.line += 1;
        }
        let role = self.next;
        let mut first = false;
        let mut key = None;
        if role == Role::Action {
            if !self.started {
                let text = &raw[..raw.len() - usize::from(end)];
                match text.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\r')) {
                    Some(i) => raw = &raw[i..],
                    None => {
                        // Blank so far; a blank line ends here.
                        self.mid = !end;
                        return Ok(());
                    }
                }
                (self.started, first) = (true, true);
                self.key = KeyReader::default();
                self.actions += 1;
                self.opened = self.line;
            }
            let text = &raw[..raw.len() - usize::from(end)];
            let read = self.key.feed(text);
            if end {
                let k = read.unwrap_or_else(|| self.key.finish());
                key = Some(k);
                self.next = if k.has_source() {
                    Role::Source
                } else {
                    Role::Action
                };
            }
        } else {
            first = !self.started;
            self.started = true;
            if first && role == Role::Header {
                self.actions += 1;
                self.opened = self.line;
            }
            if end {
                self.end_other(role);
            }
        }
        if end {
            self.mid = false;
        }
        f(Segment {
            role,
            line: self.line,
            raw,
            first,
            end,
            key,
        })
    }

    /// A source, header or body line across pieces ended.
    fn end_other(&mut self, role: Role) {
        self.next = match role {
            Role::Source => Role::Action,
            Role::Header => Role::Body,
            Role::Body | Role::Action => Role::Header,
        };
    }
}
