//! Writers: forwarded request heads (to an upstream), forwarded response heads (to a
//! client), and simple response heads. All append into a caller-owned buffer.
//!
//! Hop-by-hop headers are never forwarded: Connection and every header it names,
//! Keep-Alive, Proxy-Connection, Proxy-Authorization, Proxy-Authenticate, TE, Trailer,
//! Transfer-Encoding, Upgrade, and Content-Length (framing is re-serialised from the
//! `Framing` given). Which end-to-end headers go upstream is data the caller passes
//! ([`ForwardHeaders`]): all of them, or only an allow-list (the edge passes the
//! multitenant class's table; this module knows nothing of tenants). Must not touch:
//! sockets, tenants, credentials (it only drops them).

use super::scan::{self, Name};
use super::{Framing, HeaderSpan, RequestHead, ResponseHead, Version};

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
    /// Which of the client's end-to-end headers go upstream.
    pub headers: ForwardHeaders<'a>,
}

/// Which of the client's end-to-end headers a forwarded request keeps. Framing,
/// `Connection`, `X-Forwarded-*`, `Authorization` and `Expect` are decided apart (above):
/// this only narrows what would otherwise be forwarded.
#[derive(Debug, Clone, Copy)]
pub enum ForwardHeaders<'a> {
    /// Every end-to-end header, as sent.
    All,
    /// Every end-to-end header but those named (lowercase, compared case-insensitively):
    /// a body the edge inflated goes without its `Content-Encoding`.
    AllBut(&'a [&'a [u8]]),
    /// Only the headers named in `allow` (lowercase names, compared case-insensitively),
    /// each as its entry says; every other header is left out.
    Only {
        allow: &'a [(&'a [u8], Pass)],
        /// What [`Pass::Tagged`] puts before the value.
        tag: &'a [u8],
    },
}

/// How a header of an allow-list is forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// Its value as sent.
    AsSent,
    /// The allow-list's `tag`, then its value as sent.
    Tagged,
}

impl ForwardHeaders<'_> {
    /// How header `name` is forwarded (`None`: it is not).
    fn pass(&self, name: &[u8]) -> Option<(Pass, &[u8])> {
        match self {
            ForwardHeaders::All => Some((Pass::AsSent, b"")),
            ForwardHeaders::AllBut(drop) => (!drop.iter().any(|d| name.eq_ignore_ascii_case(d)))
                .then_some((Pass::AsSent, &b""[..])),
            ForwardHeaders::Only { allow, tag } => allow
                .iter()
                .find(|(n, _)| name.eq_ignore_ascii_case(n))
                .map(|&(_, pass)| (pass, *tag)),
        }
    }
}

/// Appends the head to send upstream: `METHOD target HTTP/1.1`, the client's end-to-end
/// headers in order and case (those `fwd.headers` lets through), framing headers from
/// `fwd.framing`, `X-Forwarded-For`, `X-Forwarded-Proto`, and `Connection: keep-alive`. `buf` is the buffer `head` was parsed
/// from. For an absolute-form target the Host header carries the target's authority
/// (RFC 9112 3.2.2).
pub fn write_forward_request(
    out: &mut Vec<u8>,
    head: &RequestHead,
    buf: &[u8],
    fwd: &ForwardRequest<'_>,
) {
    out.reserve(head.len + fwd.target.len() + 128);
    out.extend_from_slice(head.method_span.of(buf));
    out.push(b' ');
    out.extend_from_slice(fwd.target);
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let nominates = has_nominations(&head.headers, buf);
    for h in &head.headers {
        let name = h.name.of(buf);
        let class = scan::classify(name);
        let end_to_end = match class {
            Name::Authorization => !fwd.strip_authorization,
            Name::Expect => !fwd.strip_expect,
            Name::XForwardedFor | Name::XForwardedProto => false,
            other => !is_hop_by_hop(other),
        };
        if !end_to_end || (nominates && nominated(&head.headers, buf, name)) {
            continue;
        }
        let Some((pass, tag)) = fwd.headers.pass(name) else {
            continue;
        };
        let value = match (class, head.host) {
            (Name::Host, Some(host)) if head.is_absolute_form() => host.of(buf),
            _ => h.value.of(buf),
        };
        match pass {
            Pass::AsSent => push_header(out, name, value),
            Pass::Tagged => push_tagged(out, name, tag, value),
        }
    }
    push_framing(out, fwd.framing);
    push_header(out, b"X-Forwarded-For", fwd.forwarded_for);
    push_header(out, b"X-Forwarded-Proto", fwd.forwarded_proto);
    out.extend_from_slice(b"Connection: keep-alive\r\n\r\n");
}

/// Appends the head to send to the client for an upstream response: status line in
/// `version` (the client's) with the upstream's reason phrase (the standard one when it
/// sent none), end-to-end headers in order and case, framing headers from `framing`
/// (`Length`, `Chunked`, or `UntilClose`/`None` with no framing header), and
/// `Connection: close` when `!keep_alive` (`Connection: keep-alive` for HTTP/1.0 clients
/// that keep the connection). `extra` headers are appended as given.
///
/// The upstream's Content-Length is never copied: for a response to HEAD (or a 304) whose
/// length the client should see, pass it in `extra` (e.g. from
/// [`ResponseHead::content_length`]).
pub fn write_forward_response(
    out: &mut Vec<u8>,
    head: &ResponseHead,
    buf: &[u8],
    version: Version,
    framing: Framing,
    keep_alive: bool,
    extra: &[(&str, &[u8])],
) {
    out.reserve(head.len + 64);
    let reason = head.reason.of(buf);
    let reason = if reason.is_empty() {
        reason_phrase(head.status).as_bytes()
    } else {
        reason
    };
    push_status_line(out, version, head.status, reason);
    let nominates = has_nominations(&head.headers, buf);
    for h in &head.headers {
        let name = h.name.of(buf);
        let hop = is_hop_by_hop(scan::classify(name))
            || (nominates && nominated(&head.headers, buf, name));
        if !hop {
            push_header(out, name, h.value.of(buf));
        }
    }
    push_framing(out, framing);
    push_connection(out, version, keep_alive);
    for (name, value) in extra {
        push_header(out, name.as_bytes(), value);
    }
    out.extend_from_slice(b"\r\n");
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
    push_status_line(out, version, status, reason_phrase(status).as_bytes());
    for (name, value) in headers {
        push_header(out, name.as_bytes(), value);
    }
    push_framing(out, framing);
    push_connection(out, version, keep_alive);
    out.extend_from_slice(b"\r\n");
}

/// Headers that describe one connection only (RFC 9110 7.6.1) or the framing.
fn is_hop_by_hop(name: Name) -> bool {
    matches!(
        name,
        Name::Connection
            | Name::KeepAlive
            | Name::ProxyConnection
            | Name::ProxyAuthorization
            | Name::ProxyAuthenticate
            | Name::Te
            | Name::Trailer
            | Name::TransferEncoding
            | Name::Upgrade
            | Name::ContentLength
    )
}

/// Whether any Connection header names something other than `close`/`keep-alive`.
fn has_nominations(headers: &[HeaderSpan], buf: &[u8]) -> bool {
    connection_tokens(headers, buf)
        .any(|t| !t.eq_ignore_ascii_case(b"close") && !t.eq_ignore_ascii_case(b"keep-alive"))
}

/// Whether a Connection header names `name` (RFC 9110 7.6.1: such headers are hop-by-hop).
fn nominated(headers: &[HeaderSpan], buf: &[u8], name: &[u8]) -> bool {
    connection_tokens(headers, buf).any(|t| t.eq_ignore_ascii_case(name))
}

fn connection_tokens<'a>(
    headers: &'a [HeaderSpan],
    buf: &'a [u8],
) -> impl Iterator<Item = &'a [u8]> + 'a {
    headers
        .iter()
        .filter(|h| h.name.of(buf).eq_ignore_ascii_case(b"connection"))
        .flat_map(move |h| scan::tokens(h.value.of(buf)))
}

fn push_status_line(out: &mut Vec<u8>, version: Version, status: u16, reason: &[u8]) {
    out.extend_from_slice(match version {
        Version::Http10 => b"HTTP/1.0 ",
        Version::Http11 => b"HTTP/1.1 ",
    });
    push_u64(out, u64::from(status));
    out.push(b' ');
    out.extend_from_slice(reason);
    out.extend_from_slice(b"\r\n");
}

fn push_header(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// `name: tag value`, the tag right before the value's first byte.
fn push_tagged(out: &mut Vec<u8>, name: &[u8], tag: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(tag);
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

fn push_framing(out: &mut Vec<u8>, framing: Framing) {
    match framing {
        Framing::Length(n) => {
            out.extend_from_slice(b"Content-Length: ");
            push_u64(out, n);
            out.extend_from_slice(b"\r\n");
        }
        Framing::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        Framing::None | Framing::UntilClose => {}
    }
}

fn push_connection(out: &mut Vec<u8>, version: Version, keep_alive: bool) {
    if !keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if version == Version::Http10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
}

/// Decimal digits of `n`, without going through `fmt`.
fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// The standard reason phrase of `status` ("Unknown" for unregistered codes), from the
/// IANA HTTP Status Code Registry (RFC 9110 15 and the RFCs it lists).
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        103 => "Early Hints",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        208 => "Already Reported",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        510 => "Not Extended",
        511 => "Network Authentication Required",
        _ => "Unknown",
    }
}
