//! A byte-at-a-time view of where JSON strings are in a stream, for the response filters
//! that pass bytes through and only need to know whether a byte is inside a string (the
//! id sealer, the `_cat` and JSON strippers). It validates nothing: the upstream's JSON is
//! trusted to be well formed, and the full parser (`json::parse`) reads what the edge
//! rewrites.
//!
//! Must not touch: values, keys, allocation.

/// Whether the bytes of a JSON stream are inside a string, escapes followed (the response
/// scanners only need to know where strings are).
#[derive(Debug, Default, Clone, Copy)]
pub(in crate::tenancy) struct StringState {
    in_str: bool,
    esc: bool,
}

impl StringState {
    /// Follows `b`; true when it belongs to a string (its quotes included).
    pub(in crate::tenancy) fn step(&mut self, b: u8) -> bool {
        if self.in_str {
            if self.esc {
                self.esc = false;
            } else if b == b'\\' {
                self.esc = true;
            } else if b == b'"' {
                self.in_str = false;
            }
            true
        } else {
            self.in_str = b == b'"';
            self.in_str
        }
    }
}
