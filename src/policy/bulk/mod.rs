//! Counting the actions of a `_bulk` body while it streams through (spec 7: "too many
//! documents in one bulk call" is 413), so the edge can refuse it before the chunk holding
//! the action over the limit is forwarded.
//!
//! The counting is the one NDJSON framing's (`searchgate_core::ndjson::Framer`): an action
//! counts from its first byte, blank lines where an action may start are skipped, every
//! action but `delete` is followed by one source line whatever it holds, and a line that is
//! not a recognisable action still counts as one (Elasticsearch rejects the whole request
//! for it anyway). This type only names that use of the framer for the policy layer.
//!
//! Must not touch: I/O, the framing rules themselves (`ndjson` in the core).

use searchgate_core::ndjson::{Format, Framer};

/// Streaming action counter for `_bulk` bodies.
#[derive(Debug, Clone)]
pub struct BulkCounter(Framer);

impl Default for BulkCounter {
    fn default() -> Self {
        Self::new()
    }
}

impl BulkCounter {
    /// A counter at the start of a body.
    pub fn new() -> Self {
        BulkCounter(Framer::new(Format::Bulk))
    }

    /// Actions seen so far (an action counts from its first byte).
    pub fn actions(&self) -> u64 {
        self.0.actions()
    }

    /// Feeds the next bytes of the body; returns the running action count.
    #[inline]
    pub fn feed(&mut self, data: &[u8]) -> u64 {
        self.0.count(data)
    }
}

#[cfg(test)]
mod tests;
