//! Sans-IO HTTP/1.1 for the edge and the embedded engine.
//!
//! Owns: parsing request and response heads (httparse, zero-copy: every field is a
//! [`Span`] into the caller's buffer), choosing and checking body framing (refusing
//! request smuggling), decoding bodies (Content-Length, chunked) with a running byte count
//! and a limit, chunk encoding, and writing heads (forwarded requests and responses with
//! hop-by-hop headers removed, simple responses).
//!
//! Must not touch: sockets, monoio, time, tenants, clusters or credentials. It never
//! allocates per request on the hot path: [`RequestHead`]/[`ResponseHead`] are reused
//! across messages and writers append into caller-owned `Vec<u8>`s.

mod body;
mod head;
mod response;
mod scan;
#[cfg(test)]
mod tests;
mod write;

pub use body::{
    chunk_size_line, push_chunk, push_chunk_with, BodyCursor, Step, LAST_CHUNK, MAX_CHUNK_LINE,
    MAX_TRAILERS,
};
// The decoder behind the cursor: every reader goes through `BodyCursor`.
#[cfg(test)]
pub(crate) use body::{BodyDecoder, Decoded};
pub use head::{HeadLimits, RequestHead};
pub use response::ResponseHead;
pub use write::{
    reason_phrase, write_forward_request, write_forward_response, write_response_head,
    ForwardHeaders, ForwardRequest, Pass,
};

/// HTTP version of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Version {
    Http10,
    #[default]
    Http11,
}

/// Request method; `Other` for any extension method (its bytes are in `method_span`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Method {
    #[default]
    Get,
    Head,
    Post,
    Put,
    Delete,
    Options,
    Patch,
    Other,
}

/// A byte range into the buffer a head was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    /// The span `start..end` (offsets into the parsed buffer; heads are far below 4GB).
    #[inline]
    pub(crate) fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// The bytes of this span in `buf` (the buffer the head was parsed from).
    #[inline]
    pub fn of<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        &buf[self.start as usize..self.end as usize]
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        (self.end - self.start) as usize
    }

    /// True when empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

/// One header as spans of its name and value (value without surrounding whitespace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeaderSpan {
    pub name: Span,
    pub value: Span,
}

/// How a message body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Framing {
    /// No body (requests without Content-Length/Transfer-Encoding; HEAD/204/304 responses).
    #[default]
    None,
    /// Exactly this many bytes.
    Length(u64),
    /// Transfer-Encoding: chunked.
    Chunked,
    /// Response body delimited by the connection closing.
    UntilClose,
}

/// Errors of the HTTP layer. Every one ends the connection after the error response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// Head over the limit (16KB not counting Authorization): 413.
    #[error("request head too large")]
    HeadTooLarge,
    /// More header fields than the limit: 413 (431 in spirit; the spec says 413).
    #[error("too many header fields")]
    TooManyHeaders,
    /// Syntax error in the head: 400.
    #[error("malformed message head: {0}")]
    Malformed(&'static str),
    /// Ambiguous framing (CL+TE, duplicate/invalid CL, obs-fold, bare CR/LF, NUL): 400.
    #[error("ambiguous or forbidden framing: {0}")]
    Smuggling(&'static str),
    /// A transfer coding other than chunked: 400 (request) / 502 (response).
    #[error("unsupported transfer coding")]
    UnsupportedTransferCoding,
    /// HTTP version other than 1.0/1.1: 505.
    #[error("unsupported HTTP version")]
    UnsupportedVersion,
    /// Body over the decoder's limit: 413.
    #[error("body too large")]
    BodyTooLarge,
    /// Malformed chunked encoding: 400.
    #[error("malformed chunked body: {0}")]
    BadChunk(&'static str),
}
