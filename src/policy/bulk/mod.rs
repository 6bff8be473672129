//! Counting the actions of a `_bulk` body while it streams through (spec 7: "too many
//! documents in one bulk call" is 413), so the edge can refuse it before the chunk holding
//! the action over the limit is forwarded.
//!
//! An action line is `{"index"|"create"|"update"|"delete": ...}`; every action but `delete`
//! is followed by one source line. Blank lines are skipped, as Elasticsearch does. A line
//! that is not a recognisable action still counts as one (Elasticsearch rejects the whole
//! request for it anyway), so the count never under-states.
//!
//! Must not touch: I/O, the rest of the body (newlines are found with SIMD bit masks; only
//! the first bytes of action lines are looked at).

/// What the next non-blank line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Action,
    Source,
}

/// The line being scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    Between,
    Action,
    Source,
}

/// Bytes of an action line kept to recognise its key.
const PREFIX: usize = 64;

/// Streaming action counter for `_bulk` bodies.
#[derive(Debug, Clone)]
pub struct BulkCounter {
    actions: u64,
    expect: Expect,
    line: Line,
    /// The current action line's key is known; `after` is what follows it.
    recognised: bool,
    after: Expect,
    prefix: [u8; PREFIX],
    prefix_len: usize,
}

impl Default for BulkCounter {
    fn default() -> Self {
        Self::new()
    }
}

impl BulkCounter {
    /// A counter at the start of a body.
    pub fn new() -> Self {
        BulkCounter {
            actions: 0,
            expect: Expect::Action,
            line: Line::Between,
            recognised: false,
            after: Expect::Source,
            prefix: [0; PREFIX],
            prefix_len: 0,
        }
    }

    /// Actions seen so far (an action counts from its first byte).
    pub fn actions(&self) -> u64 {
        self.actions
    }

    /// Feeds the next bytes of the body; returns the running action count.
    pub fn feed(&mut self, data: &[u8]) -> u64 {
        let mut newlines = Newlines::new(data);
        let mut start = 0;
        if self.line != Line::Between {
            // The rest of a line begun in an earlier piece.
            let next = if self.line == Line::Source {
                newlines.next_far()
            } else {
                newlines.next()
            };
            let Some(nl) = next else {
                self.segment(data);
                return self.actions;
            };
            self.segment(&data[..nl]);
            self.end_line();
            start = nl + 1;
        }
        start = self.whole_lines(data, start, &mut newlines);
        self.segment(&data[start..]);
        self.actions
    }

    /// Every whole line from `start` on (the counter is between lines there), in a loop
    /// that keeps its state in locals and decides nearly every line from its first bytes
    /// ([`quick_key`]); lines starting with blank space take the general path. Returns
    /// where the unfinished last line starts.
    #[inline]
    fn whole_lines(&mut self, data: &[u8], mut start: usize, newlines: &mut Newlines) -> usize {
        let mut expect = self.expect;
        let mut actions = self.actions;
        loop {
            // A source line (usually the long one) past the current block is searched
            // with memchr, which is faster than block masks over long runs.
            let next = if expect == Expect::Source {
                newlines.next_far()
            } else {
                newlines.next()
            };
            let Some(nl) = next else { break };
            let line = &data[start..nl];
            start = nl + 1;
            match line.first() {
                None => {} // an empty line is skipped
                Some(b'\r' | b' ' | b'\t') => {
                    (self.expect, self.actions) = (expect, actions);
                    self.segment(line);
                    if self.line != Line::Between {
                        self.end_line();
                    }
                    (expect, actions) = (self.expect, self.actions);
                }
                Some(_) if expect == Expect::Source => expect = Expect::Action,
                Some(_) => {
                    actions += 1;
                    let is_delete = match quick_key(line) {
                        Some(d) => Some(d),
                        None => action_is_delete(&line[..line.len().min(PREFIX)]),
                    };
                    // An unrecognisable action line is assumed to carry a source line, as
                    // in `end_line`.
                    expect = if is_delete == Some(true) {
                        Expect::Action
                    } else {
                        Expect::Source
                    };
                }
            }
        }
        (self.expect, self.actions) = (expect, actions);
        start
    }

    /// Bytes of the current line (no newline among them).
    fn segment(&mut self, mut bytes: &[u8]) {
        if self.line == Line::Between {
            // Blank space before a line (blank lines are skipped).
            match bytes
                .iter()
                .position(|b| !matches!(b, b'\r' | b' ' | b'\t'))
            {
                None => return,
                Some(i) => bytes = &bytes[i..],
            }
            self.start_line();
        }
        if self.line != Line::Action || self.recognised || self.prefix_len == PREFIX {
            return;
        }
        if self.prefix_len == 0 {
            // Most action lines are decided right here, without copying them.
            if let Some(is_delete) = action_is_delete(&bytes[..bytes.len().min(PREFIX)]) {
                self.recognised_as(is_delete);
                return;
            }
        }
        let take = bytes.len().min(PREFIX - self.prefix_len);
        self.prefix[self.prefix_len..self.prefix_len + take].copy_from_slice(&bytes[..take]);
        self.prefix_len += take;
        self.recognise();
    }

    fn start_line(&mut self) {
        if self.expect == Expect::Action {
            self.actions += 1;
            self.line = Line::Action;
            self.recognised = false;
            self.prefix_len = 0;
        } else {
            self.line = Line::Source;
        }
    }

    fn recognise(&mut self) {
        if let Some(is_delete) = action_is_delete(&self.prefix[..self.prefix_len]) {
            self.recognised_as(is_delete);
        }
    }

    /// The current action line's key is known: a `delete` has no source line.
    fn recognised_as(&mut self, is_delete: bool) {
        self.recognised = true;
        self.after = if is_delete {
            Expect::Action
        } else {
            Expect::Source
        };
    }

    fn end_line(&mut self) {
        self.expect = match self.line {
            // An unrecognisable action line is assumed to carry a source line.
            Line::Action if self.recognised => self.after,
            Line::Action => Expect::Source,
            Line::Source | Line::Between => Expect::Action,
        };
        self.line = Line::Between;
    }
}

/// The four action keys as clients write them, compact and unescaped: `Some(true)` for
/// `delete`, `Some(false)` for the others, `None` for anything else (then
/// [`action_is_delete`] reads the line). One 8-byte load and compare.
#[inline]
fn quick_key(line: &[u8]) -> Option<bool> {
    const DELETE: u64 = u64::from_le_bytes(*b"{\"delete");
    const INDEX: u64 = u64::from_le_bytes(*b"{\"index\"");
    const CREATE: u64 = u64::from_le_bytes(*b"{\"create");
    const UPDATE: u64 = u64::from_le_bytes(*b"{\"update");
    let (head, rest) = line.split_first_chunk::<8>()?;
    let quote = rest.first() == Some(&b'"');
    match u64::from_le_bytes(*head) {
        INDEX => Some(false),
        DELETE if quote => Some(true),
        CREATE | UPDATE if quote => Some(false),
        _ => None,
    }
}

/// Whether the action line starting `line` is a `delete` (which has no source line), once
/// its first key is complete in `line`. Keys written with JSON escapes (`"\u0064elete"`)
/// are decoded, as the upstream decodes them.
fn action_is_delete(line: &[u8]) -> Option<bool> {
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < line.len() && matches!(line[*i], b' ' | b'\t' | b'\r') {
            *i += 1;
        }
    };
    skip_ws(&mut i);
    if line.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    skip_ws(&mut i);
    if line.get(i) != Some(&b'"') {
        return None;
    }
    let start = i;
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        match line.get(j)? {
            b'\\' => {
                escaped = true;
                j += 2;
            }
            b'"' => break,
            _ => j += 1,
        }
    }
    if !escaped {
        return Some(&line[start + 1..j] == b"delete");
    }
    let key: String = serde_json::from_slice(&line[start..=j]).ok()?;
    Some(key == "delete")
}

/// The positions of `\n` in a slice, in order, found 64 bytes at a time: one bit mask per
/// block, so a body of short lines costs a few instructions per line instead of a search
/// call per line (`benches/policy.rs`, `bulk_count_5mb`).
struct Newlines<'a> {
    data: &'a [u8],
    /// Start of the block `mask` describes.
    base: usize,
    mask: u64,
}

impl<'a> Newlines<'a> {
    fn new(data: &'a [u8]) -> Self {
        Newlines {
            data,
            base: 0,
            mask: block_mask(data),
        }
    }

    /// Moves to the next block; false past the end.
    #[inline]
    fn advance(&mut self) -> bool {
        self.base += 64;
        if self.base >= self.data.len() {
            return false;
        }
        self.mask = block_mask(&self.data[self.base..]);
        true
    }

    /// The next newline; past the current and the following block, found with one
    /// memchr call.
    fn next_far(&mut self) -> Option<usize> {
        if self.mask == 0 && !self.advance() {
            return None;
        }
        if self.mask != 0 {
            return self.next();
        }
        let from = self.base + 64;
        let found = self
            .data
            .get(from..)
            .and_then(|rest| memchr::memchr(b'\n', rest));
        match found {
            Some(k) => {
                let at = from + k;
                self.base = at + 1;
                self.mask = self.data.get(at + 1..).map_or(0, block_mask);
                Some(at)
            }
            None => {
                (self.base, self.mask) = (self.data.len(), 0);
                None
            }
        }
    }
}

impl Iterator for Newlines<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while self.mask == 0 {
            if !self.advance() {
                return None;
            }
        }
        let bit = self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        Some(self.base + bit)
    }
}

/// Bit i set when byte i of the first 64 bytes of `block` is `\n`.
fn block_mask(block: &[u8]) -> u64 {
    match block.first_chunk::<64>() {
        Some(full) => full_block_mask(full),
        None => scalar_mask(block),
    }
}

/// The mask of a whole block: compare and move-mask, 16 bytes at a time.
#[cfg(target_arch = "x86_64")]
#[inline]
fn full_block_mask(block: &[u8; 64]) -> u64 {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_movemask_epi8, _mm_set1_epi8, _mm_set_epi64x};
    let mut mask = 0u64;
    for (i, lane) in block.chunks_exact(16).enumerate() {
        let lo = i64::from_le_bytes(lane[..8].try_into().expect("8 bytes"));
        let hi = i64::from_le_bytes(lane[8..].try_into().expect("8 bytes"));
        // SAFETY: SSE2 is part of the x86_64 baseline (every x86_64 CPU has it, and the
        // target enables it), so these intrinsics are always available; they only operate
        // on values (the lane is built from two words, no pointer is read).
        let bits = unsafe {
            let eq = _mm_cmpeq_epi8(_mm_set_epi64x(hi, lo), _mm_set1_epi8(b'\n' as i8));
            _mm_movemask_epi8(eq)
        };
        mask |= u64::from(bits as u16) << (16 * i);
    }
    mask
}

#[cfg(not(target_arch = "x86_64"))]
fn full_block_mask(block: &[u8; 64]) -> u64 {
    scalar_mask(block)
}

/// Bit i set when byte i of `block` (at most 64 bytes) is `\n`.
fn scalar_mask(block: &[u8]) -> u64 {
    block
        .iter()
        .enumerate()
        .fold(0, |m, (i, &b)| m | (u64::from(b == b'\n') << i))
}

#[cfg(test)]
mod tests;
