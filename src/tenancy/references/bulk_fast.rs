//! The fast reading of the common `_bulk` action lines (`{"index":{"_index":"x","_id":"1"}}`
//! and its kin): a strict subset of JSON that every JSON reader reads alike, taken whole or
//! not at all. A line outside the subset, or one the slow reader would refuse, is left to
//! the slow reader (`docs::bulk_action_strict`, the full strict parser), which decides it;
//! [`bulk_action`] is the one entry that tries them in that order.
//!
//! The subset: an object of one action key (`index`, `create`, `update`, `delete`) whose
//! value is an object of distinct keys of [`BULK_ACTION_KEYS`], each holding a string
//! without escapes or control characters, an unsigned integer without leading zeros,
//! `true` or `false`; spaces and tabs between tokens; valid UTF-8. `_index` must be such a
//! string and one name the slow reader would rewrite without refusing. Everything the
//! slow reader checks of such a line holds by construction, and the line it would write
//! (compact, keys in order, strings as sent since they need no escape, numbers as sent,
//! `_index` rewritten) is the one written here, byte for byte: `bulk_fast_tests.rs`
//! compares the two readers on generated lines.
//!
//! A line of the subset holds no `\n`, so `ndjson` can also hand over the rest of a chunk
//! ([`bulk_action_fast_at`]): the line's end is then found by reading it, where the
//! framing would cut it, instead of searched for first.
//!
//! [`read_at`] also tells where a line's "head" ends, for the per-body cache of heads
//! (`bulk_heads`).
//!
//! Why by hand: a `_bulk` body of 1KB documents has about 900 action lines per MB, and
//! the tree of the slow reader (a `String` per key and value, a `Vec` per object) cost
//! about 300ns a line, half of the edge's CPU on such a body (tuning/multitenant-bulk.md).
//! No JSON crate validates a subset and rewrites one value in one pass without a tree.
//!
//! Must not touch: the framing rules (`ndjson`), what a key means (`docs`), I/O.

use std::borrow::Cow;

use super::super::names::{is_auto_create, is_concrete, rewrite_name_part};
use super::docs::{bulk_action_strict, ActionLine, BulkAction, BULK_ACTION_KEYS};
use super::{is_one_name, Tenant};
use crate::errors::EdgeError;

/// Reads action line number `n` (1-based, as Elasticsearch counts lines), appending its
/// rewritten form (compact, no newline) to `out`. The common shapes are read by
/// `bulk_fast` without building a tree; every other line by the strict parser.
pub fn bulk_action<'l>(
    t: &Tenant,
    line: &'l [u8],
    n: usize,
    out: &mut Vec<u8>,
) -> Result<ActionLine<'l>, EdgeError> {
    match bulk_action_fast(t, line, out) {
        Some(a) => Ok(a),
        None => bulk_action_strict(t, line, n, out),
    }
}

/// Reads `line` (without its `\n` and trailing `\r`) when it is in the subset, appending
/// the line the slow reader would write to `out`. `None`, with `out` as it was: the slow
/// reader must decide the line.
pub fn bulk_action_fast<'l>(
    t: &Tenant,
    line: &'l [u8],
    out: &mut Vec<u8>,
) -> Option<ActionLine<'l>> {
    let mut cursor = Cursor::new(line);
    let read = cursor.action()?;
    if cursor.pos != line.len() {
        return None;
    }
    write_line(t, line, &cursor, read, out)
}

/// Like [`bulk_action_fast`] for the line at the start of `rest`, whose end is found by
/// reading it rather than searched for first: the line must end in `\n` or `\r\n` (what
/// the framing would cut there, `\r` trimmed). Returns the bytes the line took, its end
/// included. A `\n` cannot come earlier: the subset has none inside a line.
pub fn bulk_action_fast_at<'l>(
    t: &Tenant,
    rest: &'l [u8],
    out: &mut Vec<u8>,
) -> Option<(ActionLine<'l>, usize)> {
    let (a, taken, _) = read_at(t, rest, out)?;
    Some((a, taken))
}

/// The reading of [`bulk_action_fast_at`], plus where the line's head ends, if it has one
/// (`bulk_heads`).
pub(super) fn read_at<'l>(
    t: &Tenant,
    rest: &'l [u8],
    out: &mut Vec<u8>,
) -> Option<(ActionLine<'l>, usize, Option<Learnt>)> {
    let mut cursor = Cursor::new(rest);
    let read = cursor.action()?;
    let end = cursor.pos;
    let taken = match &rest[end..] {
        [b'\n', ..] => end + 1,
        [b'\r', b'\n', ..] => end + 2,
        _ => return None,
    };
    let learnt = Learnt::of(rest, end, &read);
    let a = write_line(t, &rest[..end], &cursor, read, out)?;
    Some((a, taken, learnt))
}

/// Where a taken line's head ends, when it has one: its last value is a string of a key
/// other than `_index`, followed by nothing but `}}` (no blank space either).
pub(super) struct Learnt {
    /// The head: the line's bytes before that string's first byte.
    pub(super) head: usize,
    /// The line without its end.
    pub(super) end: usize,
    /// Where the auto-created index name (`_index`'s value) lies, if the line creates one.
    pub(super) auto_create: Option<(usize, usize)>,
}

impl Learnt {
    fn of(rest: &[u8], end: usize, read: &Read<'_>) -> Option<Learnt> {
        let (s, e) = read.last_string?;
        if &rest[e..end] != b"\"}}" {
            return None;
        }
        // The auto-created name is `_index`'s value.
        let auto_create = read.auto_create.and(read.index);
        Some(Learnt {
            head: s,
            end,
            auto_create,
        })
    }
}

/// Writes a line the reader took: the line as sent, without whitespace, `_index`'s value
/// rewritten in place.
fn write_line<'l>(
    t: &Tenant,
    line: &'l [u8],
    cursor: &Cursor<'l>,
    read: Read<'l>,
    out: &mut Vec<u8>,
) -> Option<ActionLine<'l>> {
    if cursor.non_ascii && std::str::from_utf8(line).is_err() {
        return None;
    }
    // Between ASCII quotes of a valid UTF-8 line: always valid.
    let auto_create = match read.auto_create {
        Some(name) => Some(Cow::Borrowed(std::str::from_utf8(name).ok()?)),
        None => None,
    };
    let (head, tail) = match read.index {
        Some((s, e)) => (&line[..s], &line[e..]),
        None => (line, &[][..]),
    };
    let start = out.len();
    let mut in_string = false;
    copy_compact(head, cursor.spaced, &mut in_string, out);
    if let Some((s, e)) = read.index {
        if rewrite_name_part(t.prefix, &line[s..e], out).is_err() {
            out.truncate(start);
            return None;
        }
    }
    copy_compact(tail, cursor.spaced, &mut in_string, out);
    Some(ActionLine {
        action: read.action,
        auto_create,
    })
}

/// Appends `bytes` of a line the reader took, without the whitespace between its tokens
/// (`in_string`: whether `bytes` starts inside a string; its strings have no escapes).
fn copy_compact(bytes: &[u8], spaced: bool, in_string: &mut bool, out: &mut Vec<u8>) {
    if !spaced {
        out.extend_from_slice(bytes);
        return;
    }
    for &c in bytes {
        match c {
            b'"' => *in_string = !*in_string,
            b' ' | b'\t' if !*in_string => continue,
            _ => {}
        }
        out.push(c);
    }
}

/// The bytes that end a run of a string's bytes: `"` (its end), `\` and control
/// characters (left to the strict reader), and bytes of non-ASCII characters (the line is
/// then checked to be UTF-8).
pub(super) static STOPS: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    while i < 0x100 {
        t[i] = i >= 0x80;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// What the reader found in a line it takes.
struct Read<'l> {
    action: BulkAction,
    /// Where `_index`'s value lies in the line (between its quotes).
    index: Option<(usize, usize)>,
    /// That value, when the action creates a whitelisted index.
    auto_create: Option<&'l [u8]>,
    /// Where the metadata's last value lies (between its quotes) when it is a string of a
    /// key other than `_index`.
    last_string: Option<(usize, usize)>,
}

struct Cursor<'l> {
    b: &'l [u8],
    pos: usize,
    /// Whitespace was skipped somewhere (the line is not compact).
    spaced: bool,
    /// A string holds bytes of non-ASCII characters.
    non_ascii: bool,
}

impl<'l> Cursor<'l> {
    fn new(b: &'l [u8]) -> Self {
        Cursor {
            b,
            pos: 0,
            spaced: false,
            non_ascii: false,
        }
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t') = self.b.get(self.pos) {
            self.pos += 1;
            self.spaced = true;
        }
    }

    /// The next token is the byte `c`.
    fn eat(&mut self, c: u8) -> Option<()> {
        self.skip_ws();
        (self.b.get(self.pos) == Some(&c)).then(|| self.pos += 1)
    }

    /// A string without escapes or control characters: where its bytes (between its
    /// quotes) lie.
    fn string(&mut self) -> Option<(usize, usize)> {
        self.eat(b'"')?;
        let start = self.pos;
        let mut end = start;
        loop {
            while end < self.b.len() && !STOPS[usize::from(self.b[end])] {
                end += 1;
            }
            match self.b.get(end) {
                Some(b'"') => break,
                Some(0x80..) => {
                    self.non_ascii = true;
                    end += 1;
                }
                _ => return None,
            }
        }
        self.pos = end + 1;
        Some((start, end))
    }

    /// One of `names` in quotes (a key or an action: compared where it lies, not scanned
    /// first): its position in `names`.
    fn known(&mut self, names: &[&str]) -> Option<usize> {
        self.eat(b'"')?;
        let rest = &self.b[self.pos..];
        let k = names.iter().position(|n| {
            let n = n.as_bytes();
            rest.get(n.len()) == Some(&b'"') && rest.starts_with(n)
        })?;
        self.pos += names[k].len() + 1;
        Some(k)
    }

    /// A value of a key other than `_index`: where it lies when it is a string. A value
    /// running into what follows (`12a`, `truex`, `01`) is caught by the caller, which
    /// expects `,` or `}`.
    fn scalar(&mut self) -> Option<Option<(usize, usize)>> {
        self.skip_ws();
        let start = self.pos;
        match *self.b.get(start)? {
            b'"' => return self.string().map(Some),
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                self.pos += 1;
                while self.b.get(self.pos).is_some_and(u8::is_ascii_digit) {
                    self.pos += 1;
                }
                // Past a long's 19 digits the strict reader decides (it refuses what is
                // past a double's range): the subset stays a subset.
                if self.pos - start > 19 {
                    return None;
                }
            }
            b't' if self.b[start..].starts_with(b"true") => self.pos += 4,
            b'f' if self.b[start..].starts_with(b"false") => self.pos += 5,
            _ => return None,
        }
        Some(None)
    }

    /// The action object and the whitespace after it (where the line must end; its
    /// strings are checked to be UTF-8 by the caller when `non_ascii`).
    fn action(&mut self) -> Option<Read<'l>> {
        const NAMES: [&str; 4] = ["index", "create", "update", "delete"];
        const ACTIONS: [BulkAction; 4] = [
            BulkAction::Index,
            BulkAction::Create,
            BulkAction::Update,
            BulkAction::Delete,
        ];
        self.eat(b'{')?;
        let action = ACTIONS[self.known(&NAMES)?];
        self.eat(b':')?;
        self.eat(b'{')?;
        let mut read = Read {
            action,
            index: None,
            auto_create: None,
            last_string: None,
        };
        self.metadata(&mut read)?;
        self.eat(b'}')?;
        self.skip_ws();
        Some(read)
    }

    /// The metadata object after its `{`, through its `}`: distinct known keys, `_index`
    /// one name.
    fn metadata(&mut self, read: &mut Read<'l>) -> Option<()> {
        self.skip_ws();
        if self.b.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Some(());
        }
        let mut seen = 0u32;
        loop {
            let k = self.known(BULK_ACTION_KEYS)?;
            if seen & (1 << k) != 0 {
                return None;
            }
            seen |= 1 << k;
            self.eat(b':')?;
            if BULK_ACTION_KEYS[k] == "_index" {
                let (s, e) = self.string()?;
                let name = &self.b[s..e];
                // date math is resolved by the strict reader (`docs::bulk_action_strict`)
                if !is_one_name(name) || name.first() == Some(&b'<') {
                    return None;
                }
                if read.action != BulkAction::Delete && is_auto_create(name) && is_concrete(name) {
                    read.auto_create = Some(name);
                }
                read.index = Some((s, e));
                read.last_string = None;
            } else {
                read.last_string = self.scalar()?;
            }
            self.skip_ws();
            match self.b.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
#[path = "bulk_fast_tests.rs"]
pub(super) mod tests;
