//! The fast reading of the common `_bulk` action lines (`{"index":{"_index":"x","_id":"1"}}`
//! and its kin): a strict subset of JSON that every JSON reader reads alike, taken whole or
//! not at all. A line outside the subset, or one the slow reader would refuse, is left to
//! the slow reader (`docs::bulk_action`, the full strict parser), which decides it.
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
//! Consecutive action lines of a body usually differ only in their last value
//! (`..."_id":"page-000124"}}`). [`HeadCache`] keeps, per body, the start of the last line
//! taken whole, up to the opening quote of that value (its "head"), and what was written
//! for it; a line starting with the same head and ending in a plain string, `}}` and the
//! line end is then read from the head on. That is the same reading: the reader's state at
//! the end of the head depends only on the head's bytes, so it would read the same keys and
//! values, write the same bytes for them and then the rest as it is (see
//! [`HeadCache::read`]); `bulk_head_cache_tests.rs` compares the two on generated lines,
//! and `ndjson_head_cache_tests.rs` whole bodies fed in random chunks.
//!
//! Why by hand: a `_bulk` body of 1KB documents has about 900 action lines per MB, and
//! the tree of the slow reader (a `String` per key and value, a `Vec` per object) cost
//! about 300ns a line, half of the edge's CPU on such a body (tuning/multitenant-bulk.md).
//! No JSON crate validates a subset and rewrites one value in one pass without a tree.
//!
//! Must not touch: the framing rules (`ndjson`), what a key means (`docs`), I/O.

use std::borrow::Cow;

use super::super::names::{is_auto_create, is_concrete, rewrite_name_part};
use super::docs::{ActionLine, BulkAction, BULK_ACTION_KEYS};
use super::{is_one_name, Tenant};

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

/// [`bulk_action_fast_at`] with the body's [`HeadCache`]: a line with the cached head is
/// read from the head on; any other line the reader takes becomes the cached one when it
/// has a head.
pub fn bulk_action_fast_cached<'l>(
    t: &Tenant,
    rest: &'l [u8],
    out: &mut Vec<u8>,
    cache: &mut HeadCache,
) -> Option<(ActionLine<'l>, usize)> {
    if let Some(hit) = cache.read(rest, out) {
        #[cfg(test)]
        {
            cache.hits += 1;
        }
        return Some(hit);
    }
    let start = out.len();
    let (a, taken, learnt) = read_at(t, rest, out)?;
    cache.learn(rest, &out[start..], &a, learnt);
    Some((a, taken))
}

/// The reading of [`bulk_action_fast_at`], plus what [`HeadCache::learn`] needs.
fn read_at<'l>(
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
    let learnt = Learnt::of(rest, end, &cursor, &read);
    let a = write_line(t, &rest[..end], &cursor, read, out)?;
    Some((a, taken, learnt))
}

/// Where a taken line's head ends, when it has one: the line is compact and ASCII, and its
/// last value is a string of a key other than `_index`, followed by nothing but `}}`.
struct Learnt {
    /// The head: the line's bytes before that string's first byte.
    head: usize,
    /// The line without its end.
    end: usize,
    auto_create: Option<(usize, usize)>,
}

impl Learnt {
    fn of(rest: &[u8], end: usize, cursor: &Cursor<'_>, read: &Read<'_>) -> Option<Learnt> {
        if cursor.spaced || cursor.non_ascii {
            return None;
        }
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

/// Longest head kept: longer action lines are rare and are read whole.
const MAX_HEAD: usize = 256;

/// The head of the last action line of a body that the reader took whole (module docs).
#[derive(Debug, Default)]
pub struct HeadCache {
    /// The line's bytes up to its last value's first byte; empty: nothing cached.
    head: Vec<u8>,
    /// What the reader wrote for them (`_index` rewritten).
    written: Vec<u8>,
    action: Option<BulkAction>,
    /// Where the auto-created index name lies in the head.
    auto_create: Option<(usize, usize)>,
    /// Tests only: never learn a head (the reader without the cache, for the body-level
    /// differential tests in `ndjson_head_cache_tests.rs`).
    #[cfg(test)]
    pub(crate) off: bool,
    /// Tests only: lines answered from the cache.
    #[cfg(test)]
    pub(crate) hits: usize,
}

impl HeadCache {
    /// The line at the start of `rest` when it is the cached head, a string of bytes
    /// without `STOPS` (no quote, escape, control or non-ASCII byte), its closing quote,
    /// `}}` and `\n` or `\r\n`: written as the reader would write it (the head's written
    /// bytes, then the rest as sent). `None`, with `out` as it was, otherwise.
    ///
    /// Why this is the reader's reading: at the end of the head the reader is inside the
    /// string value of the metadata's last key, having read every earlier key and value
    /// (the head's bytes are the cached line's, so the keys are distinct and `_index`, if
    /// any, is checked and rewritten the same way). A string without `STOPS` bytes is
    /// one it reads whole, up to the quote; then `}` ends the metadata, `}` the action,
    /// and the line must end there, as both check. The line being compact and ASCII (the
    /// head's, by `Learnt::of`; the rest's, by the checks here), its written form is its
    /// bytes with `_index` rewritten: the head's written bytes and the rest unchanged.
    fn read<'l>(&self, rest: &'l [u8], out: &mut Vec<u8>) -> Option<(ActionLine<'l>, usize)> {
        let action = self.action?;
        let h = self.head.len();
        if !rest.starts_with(&self.head) {
            return None;
        }
        let mut e = h;
        while e < rest.len() && !STOPS[usize::from(rest[e])] {
            e += 1;
        }
        let taken = match &rest[e..] {
            [b'"', b'}', b'}', b'\n', ..] => e + 4,
            [b'"', b'}', b'}', b'\r', b'\n', ..] => e + 5,
            _ => return None,
        };
        let auto_create = match self.auto_create {
            // Inside the head, which is ASCII.
            Some((s, e)) => Some(Cow::Borrowed(std::str::from_utf8(&rest[s..e]).ok()?)),
            None => None,
        };
        out.extend_from_slice(&self.written);
        out.extend_from_slice(&rest[h..e + 3]);
        Some((
            ActionLine {
                action,
                auto_create,
            },
            taken,
        ))
    }

    #[cfg(test)]
    fn is_off(&self) -> bool {
        self.off
    }

    #[cfg(not(test))]
    fn is_off(&self) -> bool {
        false
    }

    /// Caches the head of a line the reader took (`rest`, from the line's start) and wrote
    /// (`written`), or forgets the cached one when the line has no head.
    fn learn(&mut self, rest: &[u8], written: &[u8], a: &ActionLine<'_>, learnt: Option<Learnt>) {
        let Some(l) = learnt.filter(|l| l.head <= MAX_HEAD && !self.is_off()) else {
            self.action = None;
            self.head.clear();
            return;
        };
        // The written line ends with the rest of the line as sent (compact, after any
        // `_index`): the head's written bytes are what comes before it.
        let tail = l.end - l.head;
        self.head.clear();
        self.head.extend_from_slice(&rest[..l.head]);
        self.written.clear();
        self.written
            .extend_from_slice(&written[..written.len() - tail]);
        self.action = Some(a.action);
        self.auto_create = l.auto_create;
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
static STOPS: [bool; 256] = {
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
                if !is_one_name(name) {
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
mod tests;

#[cfg(test)]
#[path = "bulk_head_cache_tests.rs"]
pub(crate) mod head_cache_tests;
