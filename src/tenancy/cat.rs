//! The `_cat` row filters of the multitenant responses: in tables of index rows, rows that
//! do not carry the tenant's prefix are dropped and the prefix removed from the others
//! (text with or without `?v`, and `format=json`).
//!
//! The upstream only ever sees expressions confined to the tenant's prefix, so rows of other
//! tenants should never arrive; the row filter is the second line of defence. Text tables
//! keep their alignment: the header's padding after a prefixed column shrinks by the
//! prefix length, as every row's cell does.
//!
//! Must not touch: requests, other responses (`response` picks the filter), I/O.

use memchr::memchr;

use super::json::StringState;
use super::prefix::{Prefix, Stripper};

/// Longest `_cat` row or JSON element kept (longer ones are dropped).
const MAX_ROW: usize = 1 << 20;

/// A text `_cat` table. Rows are buffered (up to [`MAX_TABLE`] bytes; one tenant's table
/// is small) so the columns that held prefixed names can be re-padded exactly as the
/// upstream pads a table of the unprefixed names: each column is as wide as its longest
/// cell (header included), left-aligned, one space apart, the last column unpadded.
#[derive(Debug)]
pub struct CatText {
    prefix: Prefix,
    strip: Stripper,
    verbose: bool,
    line: Vec<u8>,
    too_long: bool,
    lines: Vec<Vec<u8>>,
    buffered: usize,
    /// Past [`MAX_TABLE`]: rows are filtered and stripped one by one, without re-padding.
    streaming: bool,
}

/// Most bytes of a text table buffered for re-padding.
pub(super) const MAX_TABLE: usize = 4 << 20;

impl CatText {
    pub(super) fn new(prefix: Prefix, verbose: bool) -> Self {
        CatText {
            prefix,
            strip: Stripper::new(prefix),
            verbose,
            line: Vec::new(),
            too_long: false,
            lines: Vec::new(),
            buffered: 0,
            streaming: false,
        }
    }

    pub(super) fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut i = 0;
        while i < input.len() {
            let nl = memchr(b'\n', &input[i..]).map(|k| i + k);
            let end = nl.unwrap_or(input.len());
            if self.line.len() + (end - i) > MAX_ROW {
                self.too_long = true;
                self.line.clear();
            }
            if !self.too_long {
                self.line.extend_from_slice(&input[i..end]);
            }
            let Some(nl) = nl else { break };
            self.line_done(true, out);
            i = nl + 1;
        }
    }

    pub(super) fn finish(&mut self, out: &mut Vec<u8>) {
        if !self.line.is_empty() || self.too_long {
            self.line_done(false, out);
        }
        self.render(out);
    }

    fn line_done(&mut self, newline: bool, out: &mut Vec<u8>) {
        let mut line = std::mem::take(&mut self.line);
        if std::mem::replace(&mut self.too_long, false) {
            line.clear(); // an over-long row is dropped (it cannot be checked whole)
        }
        if self.streaming {
            let is_header = std::mem::replace(&mut self.verbose, false);
            if is_header || self.strip.contains(&line) {
                self.prefix.strip_into(&line, out);
                if newline {
                    out.push(b'\n');
                }
            }
            return;
        }
        self.buffered += line.len() + 1;
        if newline {
            line.push(b'\n');
        }
        self.lines.push(line);
        if self.buffered > MAX_TABLE {
            self.render(out);
            self.streaming = true;
        }
    }

    /// Writes the buffered lines: other tenants' rows dropped, prefixed columns re-padded.
    fn render(&mut self, out: &mut Vec<u8>) {
        let lines = std::mem::take(&mut self.lines);
        let header = std::mem::replace(&mut self.verbose, false);
        let (head, rows) = lines.split_at(usize::from(header && !lines.is_empty()));
        let p = self.prefix.as_bytes();
        let first = rows.iter().find(|r| self.strip.contains(r));
        let columns: Vec<usize> = first.map_or(Vec::new(), |r| {
            memchr::memmem::find_iter(r, p)
                .filter(|&s| s == 0 || r[s - 1] == b' ')
                .collect()
        });
        let kept: Vec<&Vec<u8>> = head
            .iter()
            .chain(rows.iter().filter(|r| self.strip.contains(r)))
            .collect();
        let mut fixed: Vec<Vec<u8>> = kept.iter().map(|l| l.to_vec()).collect();
        for &col in columns.iter().rev() {
            let orig = lines.iter().map(|l| cell(l, col).len()).max().unwrap_or(0);
            let new = kept
                .iter()
                .map(|l| cell(l, col).strip_prefix(p).unwrap_or(cell(l, col)).len())
                .max()
                .unwrap_or(0);
            for line in &mut fixed {
                repad(line, col, orig, new, p);
            }
        }
        for line in &fixed {
            self.prefix.strip_into(line, out);
        }
    }
}

/// The cell starting at `col` (up to the next space or end of line).
fn cell(line: &[u8], col: usize) -> &[u8] {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    let Some(rest) = body.get(col..) else {
        return &[];
    };
    let end = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
    &rest[..end]
}

/// Re-pads the column at `col`, `orig` wide, to `new` wide, its cell without the prefix.
fn repad(line: &mut Vec<u8>, col: usize, orig: usize, new: usize, p: &[u8]) {
    let c = cell(line, col);
    if c.is_empty() && line.len() <= col {
        return;
    }
    let (clen, stripped_len) = (c.len(), c.strip_prefix(p).map_or(c.len(), <[u8]>::len));
    let start = if c.starts_with(p) { col + p.len() } else { col };
    let nl = line.ends_with(b"\n");
    let body_end = line.len() - usize::from(nl);
    let rest = (col + orig).min(body_end);
    let last = line[col + clen..body_end].iter().all(|&b| b == b' ');
    let mut out = Vec::with_capacity(line.len());
    out.extend_from_slice(&line[..col]);
    out.extend_from_slice(&line[start..col + clen]);
    if !last {
        out.resize(out.len() + new - stripped_len, b' ');
        out.extend_from_slice(&line[rest..body_end]);
    }
    if nl {
        out.push(b'\n');
    }
    *line = out;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JsonSt {
    Start,
    Between,
    Elem,
    Done,
    Pass,
}

/// A `format=json` `_cat` table: an array of row objects.
#[derive(Debug)]
pub struct CatJson {
    prefix: Prefix,
    strip: Stripper,
    st: JsonSt,
    elem: Vec<u8>,
    too_long: bool,
    depth: u32,
    scalar: bool,
    strings: StringState,
    written: bool,
}

impl CatJson {
    pub(super) fn new(prefix: Prefix) -> Self {
        CatJson {
            prefix,
            strip: Stripper::new(prefix),
            st: JsonSt::Start,
            elem: Vec::new(),
            too_long: false,
            depth: 0,
            scalar: false,
            strings: StringState::default(),
            written: false,
        }
    }

    pub(super) fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut i = 0;
        while i < input.len() {
            let b = input[i];
            match self.st {
                JsonSt::Pass | JsonSt::Done => {
                    self.strip.feed(&input[i..], out);
                    return;
                }
                JsonSt::Start if b.is_ascii_whitespace() => {}
                JsonSt::Start if b == b'[' => {
                    out.push(b'[');
                    self.st = JsonSt::Between;
                }
                JsonSt::Start => {
                    self.st = JsonSt::Pass; // not a table (e.g. an error object)
                    continue;
                }
                JsonSt::Between if b.is_ascii_whitespace() || b == b',' => {}
                JsonSt::Between if b == b']' => {
                    out.push(b']');
                    self.st = JsonSt::Done;
                }
                JsonSt::Between => {
                    self.st = JsonSt::Elem;
                    self.elem.clear();
                    self.too_long = false;
                    self.depth = 0;
                    self.scalar = !matches!(b, b'{' | b'[');
                    continue;
                }
                JsonSt::Elem => {
                    if self.elem_byte(b, out) {
                        continue; // the terminator of a scalar is read again
                    }
                }
            }
            i += 1;
        }
    }

    /// One byte of an element; true when it ended a scalar element without consuming it.
    fn elem_byte(&mut self, b: u8, out: &mut Vec<u8>) -> bool {
        let mut done = false;
        if !self.strings.step(b) {
            match b {
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' | b',' if self.scalar && self.depth == 0 => {
                    self.elem_done(out);
                    return true;
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    done = self.depth == 0;
                }
                _ => {}
            }
        }
        if self.elem.len() < MAX_ROW {
            self.elem.push(b);
        } else {
            self.too_long = true;
        }
        if done {
            self.elem_done(out);
        }
        false
    }

    fn elem_done(&mut self, out: &mut Vec<u8>) {
        self.st = JsonSt::Between;
        if self.too_long || !self.strip.contains(&self.elem) {
            return; // not this tenant's row
        }
        if self.written {
            out.push(b',');
        }
        self.written = true;
        self.prefix.strip_into(&self.elem, out);
    }

    pub(super) fn finish(&mut self, out: &mut Vec<u8>) {
        if matches!(self.st, JsonSt::Pass | JsonSt::Done) {
            self.strip.finish(out);
        }
    }
}
