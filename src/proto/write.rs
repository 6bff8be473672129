//! Writers: forwarded request heads (to an upstream), forwarded response heads (to a
//! client), and simple response heads. All append into a caller-owned buffer.
//!
//! Hop-by-hop headers are never forwarded: Connection and every header it names,
//! Keep-Alive, Proxy-Connection, Proxy-Authorization, TE, Trailer, Transfer-Encoding,
//! Upgrade, and Content-Length (framing is re-serialised from the `Framing` given).

use super::{Framing, RequestHead, ResponseHead, Version};

/// What the edge changes when forwarding a request head.
#[derive(Debug, Clone, Copy)]
pub struct ForwardRequest<'a> {
    /// Request-target to send (the client's, or a rewritten one).
    pub target: &'a [u8],
    /// Framing of the body as it will be sent upstream.
    pub framing: Framing,
    /// Client address for `X-Forwarded-For` (replaces any the client sent).
    pub forwarded_for: &'a [u8],
    /// `http` or `https` for `X-Forwarded-Proto` (replaces any the client sent).
    pub forwarded_proto: &'a [u8],
    /// Drop the Authorization header (the customer's credentials never reach the upstream).
    pub strip_authorization: bool,
    /// Drop Expect (the edge answers 100-continue itself).
    pub strip_expect: bool,
}

/// Appends the head to send upstream: `METHOD target HTTP/1.1`, the client's end-to-end
/// headers in order and case, framing headers from `fwd.framing`, `X-Forwarded-For`,
/// `X-Forwarded-Proto`, and `Connection: keep-alive`. `buf` is the buffer `head` was parsed
/// from.
pub fn write_forward_request(
    out: &mut Vec<u8>,
    head: &RequestHead,
    buf: &[u8],
    fwd: &ForwardRequest<'_>,
) {
    let _ = (out, head, buf, fwd);
    todo!()
}

/// Appends the head to send to the client for an upstream response: status line in
/// `version` (the client's), end-to-end headers in order and case, framing headers from
/// `framing` (`Length`, `Chunked`, or `UntilClose`/`None` with no framing header), and
/// `Connection: close` when `!keep_alive` (`Connection: keep-alive` for HTTP/1.0 clients
/// that keep the connection). `extra` headers are appended as given.
pub fn write_forward_response(
    out: &mut Vec<u8>,
    head: &ResponseHead,
    buf: &[u8],
    version: Version,
    framing: Framing,
    keep_alive: bool,
    extra: &[(&str, &[u8])],
) {
    let _ = (out, head, buf, version, framing, keep_alive, extra);
    todo!()
}

/// Appends a complete response head: status line with the standard reason phrase, the given
/// headers, `Content-Length`/`Transfer-Encoding` from `framing`, and the connection header
/// as in [`write_forward_response`].
pub fn write_response_head(
    out: &mut Vec<u8>,
    version: Version,
    status: u16,
    headers: &[(&str, &[u8])],
    framing: Framing,
    keep_alive: bool,
) {
    let _ = (out, version, status, headers, framing, keep_alive);
    todo!()
}

/// The standard reason phrase of `status` ("Unknown" for unregistered codes).
pub fn reason_phrase(status: u16) -> &'static str {
    let _ = status;
    todo!()
}
