//! The positions of `\n` in a piece of a body, in order, found 64 bytes at a time: one
//! bit mask per block, so a body of short lines costs a few instructions per line instead
//! of a search started again for each line; past a block without one (inside a long
//! document line) the search goes on with memchr ([`Newlines::next_far`]).
//!
//! Why by hand: `memchr::memchr_iter` starts a vectorised search again at every match,
//! which on a body of 60-byte documents took twice the time of these masks
//! (`benches/ndjson.rs`: the old counter, that is these masks, against `memchr_iter_each`).
//! No crate hands out the match mask of a block.
//!
//! Must not touch: what a line is (`super`).

/// The `\n`s of a slice (module docs).
pub(super) struct Newlines<'a> {
    data: &'a [u8],
    /// Start of the block `mask` describes.
    base: usize,
    mask: u64,
}

impl<'a> Newlines<'a> {
    /// The `\n`s of `data` from `from` on (positions are into `data`).
    pub(super) fn new(data: &'a [u8], from: usize) -> Self {
        let mut n = Newlines {
            data,
            base: from,
            mask: 0,
        };
        if from < data.len() {
            n.mask = block_mask(&data[from..]);
        }
        n
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

    /// The next `\n`; past the current and the following block, found with one memchr
    /// call (a long line's end).
    #[inline]
    pub(super) fn next_far(&mut self) -> Option<usize> {
        if self.mask == 0 && !self.advance() {
            return None;
        }
        if self.mask != 0 {
            return self.next();
        }
        let from = self.base + 64;
        match self
            .data
            .get(from..)
            .and_then(|rest| memchr::memchr(b'\n', rest))
        {
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

    #[inline]
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
#[inline]
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
        // on values (the lane is built from two words, no pointer is read). Tested against
        // a plain scan in `tests::newline_masks_match_a_plain_scan`.
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
