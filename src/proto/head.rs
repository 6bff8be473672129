//! Request and response heads: parse with httparse into reusable span tables, derive framing,
//! keep-alive and `Expect: 100-continue`, and refuse smuggling.

use super::{Framing, HeaderSpan, Method, ProtoError, Span, Version};

/// Size limits applied while parsing a head.
#[derive(Debug, Clone, Copy)]
pub struct HeadLimits {
    /// Maximum head size not counting Authorization header lines (spec 8: 16KB).
    pub max_head: usize,
    /// Extra room allowed for Authorization header lines on top of `max_head`.
    pub max_auth: usize,
    /// Maximum number of header fields.
    pub max_headers: usize,
}

impl Default for HeadLimits {
    fn default() -> Self {
        HeadLimits {
            max_head: 16 * 1024,
            max_auth: 8 * 1024,
            max_headers: 128,
        }
    }
}

/// A parsed request head. Reuse one per connection: `parse` clears and refills it.
#[derive(Debug, Default)]
pub struct RequestHead {
    pub method: Method,
    pub method_span: Span,
    /// The request-target as sent (path and query).
    pub target: Span,
    pub version: Version,
    /// All header fields in order, as sent.
    pub headers: Vec<HeaderSpan>,
    /// Bytes of the head, request line to the final empty line included.
    pub len: usize,
    /// Bytes of the head not counting Authorization header lines (the 16KB rule).
    pub counted_len: usize,
    /// Body framing (Length(0) and None are both "no body").
    pub framing: Framing,
    /// Whether the connection may carry another request after this one.
    pub keep_alive: bool,
    /// `Expect: 100-continue` was sent.
    pub expect_continue: bool,
    /// Value of the Host header (only one allowed).
    pub host: Option<Span>,
    /// Value of the Authorization header (only one allowed).
    pub authorization: Option<Span>,
    /// Value of the Content-Type header.
    pub content_type: Option<Span>,
}

impl Default for Method {
    fn default() -> Self {
        Method::Get
    }
}

impl Default for Version {
    fn default() -> Self {
        Version::Http11
    }
}

impl Default for Framing {
    fn default() -> Self {
        Framing::None
    }
}

impl RequestHead {
    /// An empty head with header storage preallocated.
    pub fn new() -> Self {
        todo!()
    }

    /// Parses a request head at the start of `buf`.
    ///
    /// `Ok(true)`: complete, fields filled, `len` set. `Ok(false)`: need more bytes (but
    /// `HeadTooLarge` once `buf` holds more than `max_head + max_auth` bytes without a
    /// complete head). Leading empty lines (CRLF) before the request line are skipped as
    /// RFC 9112 allows, and counted in `len`.
    pub fn parse(&mut self, buf: &[u8], limits: &HeadLimits) -> Result<bool, ProtoError> {
        let _ = (buf, limits);
        todo!()
    }

    /// The first value of header `name` (ASCII case-insensitive).
    pub fn header<'a>(&self, buf: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
        let _ = (buf, name);
        todo!()
    }

    /// The path part of the target (before `?`).
    pub fn path<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        let _ = buf;
        todo!()
    }

    /// The query part of the target (after `?`, without it), if any.
    pub fn query<'a>(&self, buf: &'a [u8]) -> Option<&'a [u8]> {
        let _ = buf;
        todo!()
    }
}

/// A parsed response head (from an upstream). Reuse one per upstream connection.
#[derive(Debug, Default)]
pub struct ResponseHead {
    pub status: u16,
    pub reason: Span,
    pub version: Version,
    pub headers: Vec<HeaderSpan>,
    pub len: usize,
    /// Body framing; `None` for HEAD requests, 1xx, 204 and 304.
    pub framing: Framing,
    pub keep_alive: bool,
}

impl ResponseHead {
    /// An empty head with header storage preallocated.
    pub fn new() -> Self {
        todo!()
    }

    /// Parses a response head at the start of `buf`; `request_method` decides whether a
    /// body follows (HEAD: never). Interim 1xx heads are returned like any other (status
    /// < 200, framing None): the caller skips them.
    pub fn parse(
        &mut self,
        buf: &[u8],
        request_method: Method,
        limits: &HeadLimits,
    ) -> Result<bool, ProtoError> {
        let _ = (buf, request_method, limits);
        todo!()
    }

    /// The first value of header `name` (ASCII case-insensitive).
    pub fn header<'a>(&self, buf: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
        let _ = (buf, name);
        todo!()
    }
}
