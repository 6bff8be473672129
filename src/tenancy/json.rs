//! A streaming JSON scanner that rewrites the string values of index keys in place, for the
//! `_bulk` action lines, `_msearch` header lines and `_mget` bodies of a multitenant cluster.
//!
//! It tracks structure (objects, arrays, strings with escapes, literals) byte by byte across
//! chunks, copies everything through in runs, and holds back only the value of an index key
//! (at most [`MAX_VALUE`] bytes) until it can write the rewritten string. Keys are compared
//! after JSON unescaping, so `"\u005findex"` is `_index`. Index values must be strings
//! (`_msearch` also takes arrays of strings; an empty one becomes the tenant's `*`): numbers,
//! `null`, objects are refused, since the upstream would read them as unprefixed names.
//! Comments (which the upstream's parser accepts) are refused: they could hide keys from a
//! scanner that skipped them differently.
//!
//! Must not touch: line framing (see `body`), paths, I/O.

use memchr::memchr2;

use super::names::{is_auto_create, is_concrete, rewrite_expr};
use super::prefix::Prefix;
use crate::errors::EdgeError;

/// Longest raw index value held back (a name is at most 255 bytes; lists are longer).
pub const MAX_VALUE: usize = 8 * 1024;
/// Deepest nesting accepted.
const MAX_DEPTH: u8 = 64;
/// Raw key bytes kept for comparison ("indices" fully escaped is 42 bytes).
const KEY_CAP: usize = 64;
/// Distinct auto-creation candidates remembered per body.
const MAX_CANDIDATES: usize = 64;

/// Which body the scanner is reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `_bulk` action line: `_index` (and `index` below the action) are names.
    Bulk,
    /// `_msearch` header line: top-level `index`/`indices`, string or array.
    Msearch,
    /// `_mget` body: `_index` anywhere.
    Mget,
}

/// The action of a bulk action line (its first key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// No key seen yet, or not a known action.
    Unknown,
    /// `delete`: no source line follows.
    Delete,
    /// `index`, `create`, `update`: a source line follows.
    WithSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Value,
    ValueOrEnd,
    KeyOrEnd,
    Key,
    Colon,
    After,
    InStr,
    InKey,
    InCapture,
    Literal,
}

fn err(reason: &'static str) -> EdgeError {
    EdgeError::BadRequest(reason)
}

/// See the module documentation.
#[derive(Debug)]
pub struct JsonRewriter {
    dialect: Dialect,
    prefix: Option<Prefix>,
    st: St,
    esc: bool,
    depth: u8,
    /// Bit `d` set: the container at depth `d + 1` is an object.
    objects: u64,
    key: [u8; KEY_CAP],
    key_len: usize,
    /// The next value belongs to an index key.
    pending: bool,
    /// Depth of an `_msearch` index array being read, and its element count.
    array: Option<(u8, u32)>,
    capture: Vec<u8>,
    scratch: Vec<u8>,
    rewritten: Vec<u8>,
    started: bool,
    first_key_seen: bool,
    action: Action,
    candidates: Vec<Vec<u8>>,
}

impl JsonRewriter {
    /// A scanner for `dialect`; without a prefix it only tracks structure and actions.
    pub fn new(dialect: Dialect, prefix: Option<Prefix>) -> Self {
        JsonRewriter {
            dialect,
            prefix,
            st: St::Value,
            esc: false,
            depth: 0,
            objects: 0,
            key: [0; KEY_CAP],
            key_len: 0,
            pending: false,
            array: None,
            capture: Vec::new(),
            scratch: Vec::new(),
            rewritten: Vec::new(),
            started: false,
            first_key_seen: false,
            action: Action::Unknown,
            candidates: Vec::new(),
        }
    }

    /// Ready for the next document (next line), keeping buffers and candidates.
    pub fn reset(&mut self) {
        self.st = St::Value;
        self.esc = false;
        self.depth = 0;
        self.objects = 0;
        self.key_len = 0;
        self.pending = false;
        self.array = None;
        self.capture.clear();
        self.started = false;
        self.first_key_seen = false;
        self.action = Action::Unknown;
    }

    /// Whether any value has started in this document (false: only whitespace).
    pub fn started(&self) -> bool {
        self.started
    }

    /// The bulk action of this line.
    pub fn action(&self) -> Action {
        self.action
    }

    /// Whitelisted concrete index names (as the tenant wrote them) of index/create/update
    /// actions seen so far.
    pub fn candidates(&self) -> &[Vec<u8>] {
        &self.candidates
    }

    /// Checks that the document ended at the top level (not inside a string or container).
    pub fn end(&self) -> Result<(), EdgeError> {
        match self.st {
            _ if self.depth > 0 => Err(err("incomplete JSON in request body")),
            St::InStr | St::InKey | St::InCapture | St::Colon => {
                Err(err("incomplete JSON in request body"))
            }
            _ => Ok(()),
        }
    }

    /// Scans `input`, appending the (rewritten) bytes to `out` when `emit`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>, emit: bool) -> Result<(), EdgeError> {
        let mut i = 0;
        // Start of bytes not yet copied; `None` while a value is held back.
        let mut run = if self.st == St::InCapture {
            None
        } else {
            Some(0)
        };
        while i < input.len() {
            match self.st {
                St::InStr | St::InKey | St::InCapture => {
                    i = self.string_bytes(input, i, &mut run, out, emit)?;
                }
                St::Literal => {
                    let n = input[i..]
                        .iter()
                        .position(|b| !is_literal_byte(*b))
                        .unwrap_or(input.len() - i);
                    i += n;
                    if i < input.len() {
                        self.value_done();
                    }
                }
                _ => {
                    self.structural(input, i, &mut run, out, emit)?;
                    i += 1;
                }
            }
        }
        if let (Some(r), true) = (run, emit) {
            out.extend_from_slice(&input[r..]);
        }
        Ok(())
    }

    /// Bytes inside a string from `i`; returns the next position.
    fn string_bytes(
        &mut self,
        input: &[u8],
        mut i: usize,
        run: &mut Option<usize>,
        out: &mut Vec<u8>,
        emit: bool,
    ) -> Result<usize, EdgeError> {
        if self.esc {
            self.esc = false;
            self.take(&input[i..i + 1])?;
            return Ok(i + 1);
        }
        match memchr2(b'"', b'\\', &input[i..]) {
            None => {
                self.take(&input[i..])?;
                Ok(input.len())
            }
            Some(k) => {
                self.take(&input[i..i + k])?;
                i += k;
                if input[i] == b'\\' {
                    self.esc = true;
                    self.take(b"\\")?;
                    return Ok(i + 1);
                }
                match self.st {
                    St::InKey => self.key_done()?,
                    St::InCapture => {
                        self.capture_done(out, emit)?;
                        *run = Some(i + 1);
                    }
                    _ => self.value_done(),
                }
                Ok(i + 1)
            }
        }
    }

    fn take(&mut self, bytes: &[u8]) -> Result<(), EdgeError> {
        match self.st {
            St::InKey => {
                let room = KEY_CAP.saturating_sub(self.key_len);
                let n = bytes.len().min(room);
                self.key[self.key_len..self.key_len + n].copy_from_slice(&bytes[..n]);
                // Overflow marks the key as longer than any index key.
                self.key_len = self.key_len.saturating_add(bytes.len()).min(KEY_CAP + 1);
            }
            St::InCapture => {
                if self.capture.len() + bytes.len() > MAX_VALUE {
                    return Err(err("index name in request body is too long"));
                }
                self.capture.extend_from_slice(bytes);
            }
            _ => {}
        }
        Ok(())
    }

    fn structural(
        &mut self,
        input: &[u8],
        i: usize,
        run: &mut Option<usize>,
        out: &mut Vec<u8>,
        emit: bool,
    ) -> Result<(), EdgeError> {
        let b = input[i];
        if matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
            return Ok(());
        }
        if b == b'/' {
            return Err(err("comments are not supported in request bodies"));
        }
        // After a complete top-level value, another may follow (the upstream reads the
        // first; the scanner still rewrites them all).
        let st = if self.st == St::After && self.depth == 0 {
            St::Value
        } else {
            self.st
        };
        match (st, b) {
            (St::ValueOrEnd, b']') => self.close(input, i, run, out, emit),
            (St::Value | St::ValueOrEnd, _) => self.value_start(input, i, run, out, emit),
            (St::KeyOrEnd, b'}') => self.close(input, i, run, out, emit),
            (St::KeyOrEnd | St::Key, b'"') => {
                self.st = St::InKey;
                self.key_len = 0;
                Ok(())
            }
            (St::Colon, b':') => {
                self.st = St::Value;
                Ok(())
            }
            (St::After, b',') if self.in_object() => {
                self.st = St::Key;
                Ok(())
            }
            (St::After, b',') => {
                self.st = St::Value;
                Ok(())
            }
            (St::After, b'}') if self.in_object() => self.close(input, i, run, out, emit),
            (St::After, b']') if !self.in_object() => self.close(input, i, run, out, emit),
            _ => Err(err("malformed JSON in request body")),
        }
    }

    fn in_object(&self) -> bool {
        self.depth > 0 && self.objects >> (self.depth - 1) & 1 == 1
    }

    /// Whether the value starting now must be an index value (and of which form).
    fn target(&mut self) -> Option<bool> {
        if std::mem::take(&mut self.pending) {
            return Some(true); // value of an index key
        }
        match self.array {
            Some((d, _)) if d == self.depth => Some(false), // element of an index array
            _ => None,
        }
    }

    fn value_start(
        &mut self,
        input: &[u8],
        i: usize,
        run: &mut Option<usize>,
        out: &mut Vec<u8>,
        emit: bool,
    ) -> Result<(), EdgeError> {
        let b = input[i];
        self.started = true;
        let target = self.target();
        if let Some((d, n)) = &mut self.array {
            if *d == self.depth {
                *n += 1;
            }
        }
        match (b, target) {
            (b'"', Some(_)) => {
                if let (Some(r), true) = (*run, emit) {
                    out.extend_from_slice(&input[r..i]);
                }
                *run = None;
                self.capture.clear();
                self.st = St::InCapture;
                Ok(())
            }
            (b'"', None) => {
                self.st = St::InStr;
                Ok(())
            }
            (b'[', Some(true)) if self.dialect == Dialect::Msearch => {
                self.open(false)?;
                self.array = Some((self.depth, 0));
                Ok(())
            }
            (_, Some(_)) => Err(err("index names in request bodies must be strings")),
            (b'{', None) => self.open(true),
            (b'[', None) => self.open(false),
            (b, None) if is_literal_byte(b) && b != b'+' && b != b'.' => {
                self.st = St::Literal;
                Ok(())
            }
            _ => Err(err("malformed JSON in request body")),
        }
    }

    fn open(&mut self, object: bool) -> Result<(), EdgeError> {
        if self.depth == MAX_DEPTH {
            return Err(err("request body is nested too deeply"));
        }
        let bit = 1u64 << self.depth;
        self.objects = if object {
            self.objects | bit
        } else {
            self.objects & !bit
        };
        self.depth += 1;
        self.st = if object { St::KeyOrEnd } else { St::ValueOrEnd };
        Ok(())
    }

    fn close(
        &mut self,
        input: &[u8],
        i: usize,
        run: &mut Option<usize>,
        out: &mut Vec<u8>,
        emit: bool,
    ) -> Result<(), EdgeError> {
        if let Some((d, n)) = self.array {
            if d == self.depth {
                self.array = None;
                if n == 0 {
                    // `"index": []` means every index upstream: make it the tenant's `*`.
                    let p = self
                        .prefix
                        .expect("index arrays are tracked only when rewriting");
                    if emit {
                        if let Some(r) = *run {
                            out.extend_from_slice(&input[r..i]);
                        }
                        out.push(b'"');
                        out.extend_from_slice(p.as_bytes());
                        out.extend_from_slice(b"*\"");
                    }
                    *run = Some(i);
                }
            }
        }
        self.depth -= 1;
        self.value_done();
        Ok(())
    }

    fn capture_done(&mut self, out: &mut Vec<u8>, emit: bool) -> Result<(), EdgeError> {
        let p = self.prefix.expect("values are held only when rewriting");
        self.scratch.clear();
        unescape(&self.capture, &mut self.scratch)?;
        let name = &self.scratch;
        if name.is_empty() && self.dialect != Dialect::Msearch {
            return Err(err("[_index] in a request body must not be empty"));
        }
        self.rewritten.clear();
        rewrite_expr(&p, name, &mut self.rewritten)?;
        if emit {
            write_json_string(&self.rewritten, out);
        }
        let candidate = self.dialect == Dialect::Bulk
            && self.action != Action::Delete
            && is_concrete(name)
            && is_auto_create(name);
        if candidate && self.candidates.len() < MAX_CANDIDATES && !self.candidates.contains(name) {
            self.candidates.push(name.clone());
        }
        self.value_done();
        Ok(())
    }

    fn value_done(&mut self) {
        self.st = St::After;
    }

    fn key_done(&mut self) -> Result<(), EdgeError> {
        self.st = St::Colon;
        if self.key_len > KEY_CAP {
            return Ok(());
        }
        let raw = &self.key[..self.key_len];
        let key: &[u8] = if raw.contains(&b'\\') {
            self.scratch.clear();
            unescape(raw, &mut self.scratch)?;
            &self.scratch
        } else {
            raw
        };
        let d = self.depth;
        if self.dialect == Dialect::Bulk && d == 1 && !self.first_key_seen {
            self.action = match key {
                b"delete" => Action::Delete,
                b"index" | b"create" | b"update" => Action::WithSource,
                _ => Action::Unknown,
            };
        }
        let index_key = match self.dialect {
            Dialect::Bulk => key == b"_index" || (d >= 2 && key == b"index"),
            Dialect::Msearch => d == 1 && (key == b"index" || key == b"indices"),
            Dialect::Mget => key == b"_index",
        };
        self.pending = index_key && self.prefix.is_some();
        self.first_key_seen = true;
        Ok(())
    }
}

/// Bytes that may appear in a JSON number or `true`/`false`/`null`.
fn is_literal_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')
}

/// Decodes the JSON escapes of a raw string body (without quotes) into `out`.
pub fn unescape(raw: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
    let bad = || err("invalid escape in JSON string");
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let e = *raw.get(i + 1).ok_or_else(bad)?;
        i += 2;
        let c = match e {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let hi = hex4(raw.get(i..i + 4)).ok_or_else(bad)?;
                i += 4;
                let cp = if (0xD800..0xDC00).contains(&hi) {
                    if raw.get(i..i + 2) != Some(b"\\u") {
                        return Err(bad());
                    }
                    let lo = hex4(raw.get(i + 2..i + 6)).ok_or_else(bad)?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return Err(bad());
                    }
                    i += 6;
                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                } else {
                    hi
                };
                let ch = char::from_u32(cp).ok_or_else(bad)?;
                out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                continue;
            }
            _ => return Err(bad()),
        };
        out.push(c);
    }
    Ok(())
}

fn hex4(b: Option<&[u8]>) -> Option<u32> {
    let s = std::str::from_utf8(b?).ok()?;
    u32::from_str_radix(s, 16)
        .ok()
        .filter(|_| s.bytes().all(|c| c.is_ascii_hexdigit()))
}

/// Appends `s` as a JSON string (with quotes) to `out`.
pub fn write_json_string(s: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0..=0x1f => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 15) as usize],
            ]),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}
