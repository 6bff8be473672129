//! Body framing: a decoder for Content-Length and chunked bodies with a running byte count
//! and a limit, and the chunk encoding helpers. Never copies payload bytes.

use super::{Framing, ProtoError};

/// The last chunk and empty trailer section of a chunked body.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Writes the chunk-size line for a chunk of `len` bytes (`<hex>\r\n`) into `out`, returning
/// the bytes written. The chunk data and then `\r\n` follow it.
pub fn chunk_size_line(len: usize, out: &mut [u8; 18]) -> &[u8] {
    let _ = (len, out);
    todo!()
}

/// What one call of [`BodyDecoder::decode`] found at the front of its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Input bytes consumed (framing and payload).
    pub consumed: usize,
    /// Payload bytes found, as a range of the input (empty when none).
    pub data: std::ops::Range<usize>,
    /// The body is complete (the last chunk and trailers, or the last byte of the length).
    pub done: bool,
}

/// Incremental body decoder with a payload limit.
#[derive(Debug, Clone)]
pub struct BodyDecoder {
    // implementation-defined
}

impl BodyDecoder {
    /// A decoder for `framing` that refuses more than `limit` payload bytes.
    /// A Content-Length above `limit` is refused at once with `BodyTooLarge`.
    /// `Framing::None` and `Length(0)` are done at once.
    pub fn new(framing: Framing, limit: u64) -> Result<Self, ProtoError> {
        let _ = (framing, limit);
        todo!()
    }

    /// Decodes from the front of `input`. Call again with the unconsumed rest (plus more
    /// bytes read) until `done`. Returns at most one payload range per call. When `input`
    /// holds only part of a chunk-size line, consumes nothing and returns no data: the caller
    /// reads more. A chunk-size line or trailer section longer than 4KB is `BadChunk`.
    pub fn decode(&mut self, input: &[u8]) -> Result<Decoded, ProtoError> {
        let _ = input;
        todo!()
    }

    /// True once the whole body has been decoded.
    pub fn is_done(&self) -> bool {
        todo!()
    }

    /// Payload bytes decoded so far.
    pub fn total(&self) -> u64 {
        todo!()
    }

    /// For `Length` framing, the payload bytes still to come.
    pub fn remaining(&self) -> Option<u64> {
        todo!()
    }
}
