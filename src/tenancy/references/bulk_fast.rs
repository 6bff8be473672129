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
//! Why by hand: a `_bulk` body of 1KB documents has about 900 action lines per MB, and
//! the tree of the slow reader (a `String` per key and value, a `Vec` per object) cost
//! about 300ns a line, half of the edge's CPU on such a body (tuning/multitenant-bulk.md).
//! No JSON crate validates a subset and rewrites one value in one pass without a tree.
//!
//! Must not touch: line framing (`ndjson`), what a key means (`docs`), I/O.

use std::borrow::Cow;

use super::super::names::{is_auto_create, is_concrete, rewrite_expr};
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
    let start = out.len();
    let read = Cursor { b: line, pos: 0 }.action(t, out);
    if read.is_none() {
        out.truncate(start);
    }
    read
}

struct Cursor<'l> {
    b: &'l [u8],
    pos: usize,
}

impl<'l> Cursor<'l> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t') = self.b.get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next token is the byte `c`.
    fn eat(&mut self, c: u8) -> Option<()> {
        self.skip_ws();
        (self.b.get(self.pos) == Some(&c)).then(|| self.pos += 1)
    }

    /// A string without escapes or control characters: the bytes between its quotes.
    fn string(&mut self) -> Option<&'l [u8]> {
        self.eat(b'"')?;
        let rest = &self.b[self.pos..];
        let len = rest
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
        if rest[len] != b'"' {
            return None;
        }
        self.pos += len + 1;
        Some(&rest[..len])
    }

    /// A value of a key other than `_index`: its bytes as sent. A value running into what
    /// follows (`12a`, `truex`, `01`) is caught by the caller, which expects `,` or `}`.
    fn scalar(&mut self) -> Option<&'l [u8]> {
        self.skip_ws();
        let start = self.pos;
        match *self.b.get(start)? {
            b'"' => {
                self.string()?;
            }
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                self.pos += 1;
                while self.b.get(self.pos).is_some_and(u8::is_ascii_digit) {
                    self.pos += 1;
                }
            }
            b't' if self.b[start..].starts_with(b"true") => self.pos += 4,
            b'f' if self.b[start..].starts_with(b"false") => self.pos += 5,
            _ => return None,
        }
        Some(&self.b[start..self.pos])
    }

    fn action(mut self, t: &Tenant, out: &mut Vec<u8>) -> Option<ActionLine<'l>> {
        if !self.b.is_ascii() {
            std::str::from_utf8(self.b).ok()?;
        }
        self.eat(b'{')?;
        let name = self.string()?;
        let action = match name {
            b"index" => BulkAction::Index,
            b"create" => BulkAction::Create,
            b"update" => BulkAction::Update,
            b"delete" => BulkAction::Delete,
            _ => return None,
        };
        self.eat(b':')?;
        self.eat(b'{')?;
        out.extend_from_slice(b"{\"");
        out.extend_from_slice(name);
        out.extend_from_slice(b"\":{");
        let auto_create = self.metadata(t, action, out)?;
        self.eat(b'}')?;
        self.skip_ws();
        if self.pos != self.b.len() {
            return None;
        }
        out.extend_from_slice(b"}}");
        let auto_create = match auto_create {
            Some(name) => Some(Cow::Borrowed(std::str::from_utf8(name).ok()?)),
            None => None,
        };
        Some(ActionLine {
            action,
            auto_create,
        })
    }

    /// The metadata object after its `{`, through its `}`: each key written with its value
    /// (`_index` rewritten). Returns the whitelisted index to create, if any.
    fn metadata(
        &mut self,
        t: &Tenant,
        action: BulkAction,
        out: &mut Vec<u8>,
    ) -> Option<Option<&'l [u8]>> {
        let mut auto_create = None;
        self.skip_ws();
        if self.b.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Some(None);
        }
        let mut seen = 0u32;
        loop {
            let key = self.string()?;
            let k = BULK_ACTION_KEYS.iter().position(|k| k.as_bytes() == key)?;
            if seen & (1 << k) != 0 {
                return None;
            }
            if seen != 0 {
                out.push(b',');
            }
            seen |= 1 << k;
            self.eat(b':')?;
            out.push(b'"');
            out.extend_from_slice(key);
            out.extend_from_slice(b"\":");
            if key == b"_index" {
                let name = self.string()?;
                if !is_one_name(name) {
                    return None;
                }
                if action != BulkAction::Delete && is_concrete(name) && is_auto_create(name) {
                    auto_create = Some(name);
                }
                out.push(b'"');
                rewrite_expr(t.prefix, name, out).ok()?;
                out.push(b'"');
            } else {
                out.extend_from_slice(self.scalar()?);
            }
            self.skip_ws();
            match self.b.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Some(auto_create);
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
#[path = "bulk_fast_tests.rs"]
mod tests;
