//! A per-body cache of action-line heads for the fast `_bulk` reader (`bulk_fast`).
//!
//! The action lines of a body usually differ only in their last value
//! (`{"index":{"_index":"site","_type":"doc","_id":"page-000124"}}`). The "head" of a line
//! the fast reader took is its bytes up to the opening quote of that value, when the value
//! is a string of a key other than `_index` followed by nothing but `}}`. [`HeadCache`]
//! keeps the heads of the last few such lines ([`SLOTS`]) with what the reader wrote for
//! them (`_index` rewritten); a line that starts with a kept head and continues with a
//! plain string, `"}}` and the line end is answered from it: the head's written bytes, then
//! the rest of the line as sent.
//!
//! That is the reader's own reading, byte for byte ([`HeadCache::read`] says why), so the
//! upstream reads what it would read without the cache; `bulk_heads_tests.rs` compares the
//! two along generated bodies, line by line, and `ndjson_head_cache_tests.rs` whole bodies
//! fed to the rewriter in random chunks. A head is only ever kept from a line the reader
//! took whole, and a line that does not fit a kept head exactly is read whole.
//!
//! Why by hand: the reader takes about 50 ns per action line, the cache about 10 (the
//! load test's 1MB body: 70 -> 33 µs, tuning/multitenant-bulk.md); no crate caches a
//! validating reader's state by input prefix.
//!
//! Must not touch: what the reader accepts (`bulk_fast`), the framing (`ndjson`), I/O.

use std::borrow::Cow;

use super::bulk_fast::{read_at, Learnt, STOPS};
use super::docs::{ActionLine, BulkAction};
use super::Tenant;

/// Heads kept per body: bodies that cycle through a few indices (`books-0`, `books-1`,
/// ...) or mix `index` and `delete` lines stay in the cache.
pub const SLOTS: usize = 4;

/// Longest head kept: longer action lines are rare and are read whole.
const MAX_HEAD: usize = 256;

/// [`bulk_action_fast_at`](super::bulk_fast::bulk_action_fast_at) with the body's
/// [`HeadCache`]: a line with a kept head is read from the head on; a line read whole
/// leaves its head in the cache when it has one.
pub fn bulk_action_fast_cached<'l>(
    t: &Tenant,
    rest: &'l [u8],
    out: &mut Vec<u8>,
    cache: &mut HeadCache,
) -> Option<(ActionLine<'l>, usize)> {
    if let Some(fit) = cache.find(rest) {
        return Some(cache.write(fit, rest, out));
    }
    bulk_action_fast_learnt(t, rest, out, cache)
}

/// [`bulk_action_fast_at`](super::bulk_fast::bulk_action_fast_at), leaving the line's head
/// in `cache` when it has one (for a line no kept head fits: [`HeadCache::find`]).
pub fn bulk_action_fast_learnt<'l>(
    t: &Tenant,
    rest: &'l [u8],
    out: &mut Vec<u8>,
    cache: &mut HeadCache,
) -> Option<(ActionLine<'l>, usize)> {
    let start = out.len();
    let (a, taken, learnt) = read_at(t, rest, out)?;
    if let Some(l) = learnt {
        cache.learn(rest, &out[start..], a.action, l);
    }
    Some((a, taken))
}

/// A line at the start of `rest` that a kept head fits ([`HeadCache::find`]).
#[derive(Debug)]
pub struct Fit<'l> {
    slot: usize,
    pub line: ActionLine<'l>,
    /// The bytes the line takes, its end (`\n` or `\r\n`) included.
    pub taken: usize,
    /// The line's bytes up to its last `}` (what is written of it, `\n` aside).
    pub end: usize,
}

/// What is written for a line read from a kept head, as the line's own bytes with
/// `insert` put in at `at` (`_index`'s name given its prefix): a rewriter that forwards
/// the bytes around the line can leave them where they lie ([`HeadCache::in_place`]).
#[derive(Debug)]
pub struct InPlace<'c> {
    pub at: usize,
    pub insert: &'c [u8],
}

/// One kept head.
#[derive(Debug, Default)]
struct Slot {
    /// The line's bytes up to its last value's first byte.
    head: Vec<u8>,
    /// What the reader wrote for them (blank space dropped, `_index` rewritten).
    written: Vec<u8>,
    /// `None`: the slot is empty.
    action: Option<BulkAction>,
    /// Where the auto-created index name lies in the head.
    auto_create: Option<(usize, usize)>,
    /// `written` is `head` with `written[at..at + len]` put in at `at` (`insertion`).
    insert: Option<(usize, usize)>,
}

/// The heads of a body's last action lines that had one (module docs).
#[derive(Debug, Default)]
pub struct HeadCache {
    /// At most [`SLOTS`], made as heads are kept (a body without one allocates nothing).
    slots: Vec<Slot>,
    /// The slot the next new head replaces once all are made.
    next: usize,
    /// Tests only: never keep a head (the reader without the cache, for the body-level
    /// differential tests in `ndjson_head_cache_tests.rs`).
    #[cfg(test)]
    pub(crate) off: bool,
    /// Tests only: lines answered from the cache.
    #[cfg(test)]
    pub(crate) hits: usize,
}

impl HeadCache {
    /// The line at the start of `rest` when it starts with a kept head and continues with
    /// bytes without `STOPS` (no quote, backslash, control or non-ASCII byte), a quote,
    /// `}}` and `\n` or `\r\n`: written as the reader writes it. `None`, with `out` as it
    /// was, otherwise.
    ///
    /// Why this is the reader's reading. The reader is deterministic and reads a line from
    /// its first byte, so on the head's bytes it does what it did on the line the head
    /// came from, which it took: the same keys (distinct), the same values, `_index` (if
    /// any) accepted and rewritten alike, the same written bytes, and at the head's end it
    /// is inside the string value of the metadata's last key. It reads a string without
    /// `STOPS` bytes whole, up to its quote; then `}` must close the metadata, `}` the
    /// action, and `\n` or `\r\n` must end the line, which is what is checked here. What
    /// it writes for the value and `"}}` is those bytes as they are (inside a string blank
    /// space is kept; `"}}` has none). UTF-8: the head came from a valid line and ends at an
    /// ASCII quote, and the rest is ASCII.
    pub fn read<'l>(
        &mut self,
        rest: &'l [u8],
        out: &mut Vec<u8>,
    ) -> Option<(ActionLine<'l>, usize)> {
        let fit = self.find(rest)?;
        Some(self.write(fit, rest, out))
    }

    /// [`Self::read`] without writing: the first kept head that fits the line at the start
    /// of `rest` (one kept head may start another, `{"index":{"_id":"` and
    /// `{"index":{"_id":"1","routing":"`: each is tried).
    pub fn find<'l>(&mut self, rest: &'l [u8]) -> Option<Fit<'l>> {
        let fit = (self.slots.iter().enumerate()).find_map(|(i, slot)| slot.fit(i, rest))?;
        #[cfg(test)]
        {
            self.hits += 1;
        }
        Some(fit)
    }

    /// Writes a line that `fit` was found for, as the reader writes it: the head's written
    /// bytes, then the rest of the line as sent (without its end).
    pub fn write<'l>(
        &self,
        fit: Fit<'l>,
        rest: &'l [u8],
        out: &mut Vec<u8>,
    ) -> (ActionLine<'l>, usize) {
        let slot = &self.slots[fit.slot];
        out.extend_from_slice(&slot.written);
        out.extend_from_slice(&rest[slot.head.len()..fit.end]);
        (fit.line, fit.taken)
    }

    /// What is written for a line that `fit` was found for, as its bytes as sent with some
    /// put in; `None` when the head's written bytes are not of that shape (blank space
    /// dropped): then [`Self::write`].
    pub fn in_place(&self, fit: &Fit<'_>) -> Option<InPlace<'_>> {
        let slot = &self.slots[fit.slot];
        let (at, len) = slot.insert?;
        Some(InPlace {
            at,
            insert: &slot.written[at..at + len],
        })
    }

    /// Keeps the head of a line the reader took (`rest`, from the line's start) and wrote
    /// (`written`), in place of the oldest kept head, unless it is kept already.
    fn learn(&mut self, rest: &[u8], written: &[u8], action: BulkAction, l: Learnt) {
        let head = &rest[..l.head];
        if l.head > MAX_HEAD || self.is_off() {
            return;
        }
        if self
            .slots
            .iter()
            .any(|s| s.action.is_some() && s.head == head)
        {
            return;
        }
        // The written line ends with the value and `"}}` as sent: the head's written bytes
        // are what comes before them.
        let tail = l.end - l.head;
        if self.slots.len() < SLOTS {
            self.slots.push(Slot::default());
        }
        let slot = &mut self.slots[self.next];
        self.next = (self.next + 1) % SLOTS;
        slot.head.clear();
        slot.head.extend_from_slice(head);
        slot.written.clear();
        slot.written
            .extend_from_slice(&written[..written.len() - tail]);
        slot.action = Some(action);
        slot.auto_create = l.auto_create;
        slot.insert = insertion(&slot.head, &slot.written);
    }

    #[cfg(test)]
    fn is_off(&self) -> bool {
        self.off
    }

    #[cfg(not(test))]
    fn is_off(&self) -> bool {
        false
    }
}

/// Where `written` is `head` with some bytes put in at one place: `(at, len)` with
/// `written == head[..at] ++ written[at..at + len] ++ head[at..]`.
fn insertion(head: &[u8], written: &[u8]) -> Option<(usize, usize)> {
    let len = written.len().checked_sub(head.len())?;
    let at = (head.iter().zip(written))
        .position(|(h, w)| h != w)
        .unwrap_or(head.len());
    (written[at + len..] == head[at..]).then_some((at, len))
}

impl Slot {
    /// [`HeadCache::find`] with this slot's head (slot number `i`).
    fn fit<'l>(&self, i: usize, rest: &'l [u8]) -> Option<Fit<'l>> {
        let action = self.action?;
        if !rest.starts_with(&self.head) {
            return None;
        }
        let h = self.head.len();
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
            // Between ASCII quotes of a valid UTF-8 head.
            Some((s, e)) => Some(Cow::Borrowed(std::str::from_utf8(&rest[s..e]).ok()?)),
            None => None,
        };
        Some(Fit {
            slot: i,
            line: ActionLine {
                action,
                auto_create,
            },
            taken,
            end: e + 3,
        })
    }
}

#[cfg(test)]
#[path = "bulk_heads_tests.rs"]
pub(crate) mod tests;
