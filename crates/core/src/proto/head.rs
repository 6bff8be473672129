//! Request heads: parse with httparse into a reusable span table, derive framing,
//! keep-alive and `Expect: 100-continue`, apply the size limits and refuse smuggling.
//! Response heads live in `response.rs` and share the helpers at the bottom of this file.

use std::mem::MaybeUninit;

use super::scan::{self, FramingHeaders, Name};
use super::{Framing, HeaderSpan, Method, ProtoError, Span, Version};

/// httparse header slots on the stack (uninitialised, so they cost nothing to set up);
/// `HeadLimits::max_headers` is clamped to this.
pub(super) const HEADER_SLOTS: usize = 256;

/// Size limits applied while parsing a head.
#[derive(Debug, Clone, Copy)]
pub struct HeadLimits {
    /// Maximum head size not counting Authorization header lines (spec 8: 16KB).
    pub max_head: usize,
    /// Extra room allowed for Authorization header lines on top of `max_head`: a head is
    /// never longer than `max_head + max_auth` bytes in all.
    pub max_auth: usize,
    /// Maximum number of header fields (at most 256 are ever accepted).
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

impl HeadLimits {
    /// The most bytes a head may take, Authorization lines included.
    pub fn window(&self) -> usize {
        self.max_head.saturating_add(self.max_auth)
    }
}

/// A parsed request head. Reuse one per connection: `parse` clears and refills it.
#[derive(Debug, Default)]
pub struct RequestHead {
    pub method: Method,
    pub method_span: Span,
    /// The request-target as sent (origin-form, absolute-form or `*`).
    pub target: Span,
    /// The origin-form part of the target: the target itself, or for an absolute-form
    /// target the path and query after the authority (possibly empty, meaning `/`).
    pub path_and_query: Span,
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
    /// `Expect: 100-continue` was sent (HTTP/1.1 only; RFC 9110 10.1.1 ignores it in 1.0).
    pub expect_continue: bool,
    /// The host to route by: the Host header (only one allowed), or the authority of an
    /// absolute-form target (RFC 9112 3.2.2: it wins over Host).
    pub host: Option<Span>,
    /// Value of the Authorization header (only one allowed).
    pub authorization: Option<Span>,
    /// Value of the Content-Type header.
    pub content_type: Option<Span>,
}

impl RequestHead {
    /// An empty head with header storage preallocated.
    pub fn new() -> Self {
        RequestHead {
            headers: Vec::with_capacity(64),
            ..RequestHead::default()
        }
    }

    /// Parses a request head at the start of `buf`.
    ///
    /// `Ok(true)`: complete, fields filled, `len` set. `Ok(false)`: need more bytes (but
    /// `HeadTooLarge` once `buf` holds more than `max_head + max_auth` bytes without a
    /// complete head). Leading empty lines (CRLF) before the request line are skipped as
    /// RFC 9112 allows, and counted in `len`.
    pub fn parse(&mut self, buf: &[u8], limits: &HeadLimits) -> Result<bool, ProtoError> {
        let window = limits.window();
        let hay = &buf[..buf.len().min(window)];
        let skip = scan::skip_empty_lines(hay);
        let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; HEADER_SLOTS];
        let slots = &mut slots[..limits.max_headers.min(HEADER_SLOTS)];
        let mut req = httparse::Request::new(&mut []);
        let parsed = httparse::ParserConfig::default().parse_request_with_uninit_headers(
            &mut req,
            &hay[skip..],
            slots,
        );
        let Some(end) = head_end(parsed, buf, window, skip)? else {
            return Ok(false);
        };
        let head = &buf[..end];
        let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
            return Err(ProtoError::Malformed("incomplete request line"));
        };
        let method = method.as_bytes();
        self.method = method_of(method);
        self.method_span = scan::span_of(buf, method);
        self.target = scan::span_of(buf, target.as_bytes());
        self.version = if minor == 0 {
            Version::Http10
        } else {
            Version::Http11
        };
        let authority = self.read_target(buf)?;
        self.read_headers(head, req.headers, authority)?;
        self.len = end;
        if self.counted_len > limits.max_head {
            return Err(ProtoError::HeadTooLarge);
        }
        Ok(true)
    }

    /// Works out the target's form (RFC 9112 3.2): sets `path_and_query` and returns the
    /// authority of an absolute-form target.
    fn read_target(&mut self, buf: &[u8]) -> Result<Option<Span>, ProtoError> {
        let target = self.target.of(buf);
        let start = self.target.start as usize;
        if target.first() == Some(&b'/') {
            self.path_and_query = self.target;
            return Ok(None);
        }
        if target == b"*" {
            if self.method != Method::Options {
                return Err(ProtoError::Malformed(
                    "asterisk-form target outside OPTIONS",
                ));
            }
            self.path_and_query = self.target;
            return Ok(None);
        }
        let (scheme_len, authority, rest) = split_absolute(target)?;
        let auth_start = start + scheme_len + 3;
        let auth = Span::new(auth_start, auth_start + authority.len());
        self.path_and_query = Span::new(auth.end as usize, auth.end as usize + rest.len());
        Ok(Some(auth))
    }

    /// Fills the header table and the fields derived from it.
    fn read_headers(
        &mut self,
        head: &[u8],
        fields: &[httparse::Header<'_>],
        authority: Option<Span>,
    ) -> Result<(), ProtoError> {
        self.headers.clear();
        self.host = None;
        self.authorization = None;
        self.content_type = None;
        self.expect_continue = false;
        let mut framing = FramingHeaders::default();
        let mut auth_bytes = 0;
        for field in fields {
            let h = header_span(head, field);
            if !scan::crlf_before(head, h.name.start as usize) {
                return Err(ProtoError::Smuggling("bare LF in head"));
            }
            self.headers.push(h);
            let name = scan::classify(field.name.as_bytes());
            match name {
                Name::Host => {
                    if self.host.replace(h.value).is_some() {
                        return Err(ProtoError::Malformed("more than one Host"));
                    }
                    if !valid_host(field.value) {
                        return Err(ProtoError::Malformed("invalid Host"));
                    }
                }
                Name::Authorization => {
                    if self.authorization.replace(h.value).is_some() {
                        return Err(ProtoError::Malformed("more than one Authorization"));
                    }
                    auth_bytes += scan::line_len(head, h.name.start as usize, h.value.end as usize);
                }
                Name::ContentType if self.content_type.is_none() => {
                    self.content_type = Some(h.value);
                }
                Name::Expect => {
                    self.expect_continue |= field.value.eq_ignore_ascii_case(b"100-continue");
                }
                _ => framing.see(name, field.value)?,
            }
        }
        if self.host.is_none() && self.version == Version::Http11 {
            return Err(ProtoError::Malformed("missing Host"));
        }
        self.expect_continue &= self.version == Version::Http11;
        if authority.is_some() {
            self.host = authority;
        }
        self.framing = framing.framing(self.version)?.unwrap_or(Framing::None);
        self.keep_alive = framing.persistent(self.version);
        self.counted_len = head.len() - auth_bytes;
        Ok(())
    }

    /// The first value of header `name` (ASCII case-insensitive).
    pub fn header<'a>(&self, buf: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
        scan::find_header(&self.headers, buf, name)
    }

    /// The path part of the target (before `?`); `/` for an absolute-form target without a
    /// path, `*` for the asterisk form.
    pub fn path<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        let pq = self.path_and_query.of(buf);
        let path = match memchr::memchr(b'?', pq) {
            Some(q) => &pq[..q],
            None => pq,
        };
        if path.is_empty() {
            b"/"
        } else {
            path
        }
    }

    /// The query part of the target (after `?`, without it), if any.
    pub fn query<'a>(&self, buf: &'a [u8]) -> Option<&'a [u8]> {
        let pq = self.path_and_query.of(buf);
        memchr::memchr(b'?', pq).map(|q| &pq[q + 1..])
    }

    /// Whether the target was in absolute form (`http://host/path`).
    pub fn is_absolute_form(&self) -> bool {
        self.path_and_query != self.target
    }
}

/// Maps a method token to [`Method`] (methods are case-sensitive, RFC 9110 9.1).
fn method_of(m: &[u8]) -> Method {
    match m {
        b"GET" => Method::Get,
        b"HEAD" => Method::Head,
        b"POST" => Method::Post,
        b"PUT" => Method::Put,
        b"DELETE" => Method::Delete,
        b"OPTIONS" => Method::Options,
        b"PATCH" => Method::Patch,
        _ => Method::Other,
    }
}

/// Splits an absolute-form target into (scheme length, authority, path-and-query).
/// Only `http` and `https` are accepted; userinfo is refused (RFC 9110 4.2.4).
fn split_absolute(target: &[u8]) -> Result<(usize, &[u8], &[u8]), ProtoError> {
    let sep = memchr::memmem::find(target, b"://")
        .ok_or(ProtoError::Malformed("unsupported request-target form"))?;
    let scheme = &target[..sep];
    if !scheme.eq_ignore_ascii_case(b"http") && !scheme.eq_ignore_ascii_case(b"https") {
        return Err(ProtoError::Malformed(
            "unsupported scheme in request-target",
        ));
    }
    let after = &target[sep + 3..];
    let auth_len = after
        .iter()
        .position(|&b| b == b'/' || b == b'?')
        .unwrap_or(after.len());
    let authority = &after[..auth_len];
    if authority.is_empty() || !valid_host(authority) || authority.contains(&b'@') {
        return Err(ProtoError::Malformed("invalid authority in request-target"));
    }
    Ok((sep, authority, &after[auth_len..]))
}

/// A Host value (or authority) is `uri-host [ ":" port ]`: reg-name, IP-literal and
/// port characters only (RFC 9110 7.2, RFC 3986 3.2.2). Empty is allowed for Host.
fn valid_host(v: &[u8]) -> bool {
    v.iter().all(|&b| HOST_BYTES[b as usize])
}

static HOST_BYTES: [bool; 256] = {
    let mut map = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        map[b] = c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'%');
        b += 1;
    }
    let extra = b"!$&'()*+,;=:[]";
    let mut i = 0;
    while i < extra.len() {
        map[extra[i] as usize] = true;
        i += 1;
    }
    map
};

/// Spans of one httparse header (its slices point into `buf`).
pub(super) fn header_span(buf: &[u8], h: &httparse::Header<'_>) -> HeaderSpan {
    HeaderSpan {
        name: scan::span_of(buf, h.name.as_bytes()),
        value: scan::span_of(buf, h.value),
    }
}

/// Turns httparse's answer into the end of the head (`Some`), a need for more bytes
/// (`None`), or an error.
///
/// Fast path: httparse found a complete head; httparse refuses bare CR and obs-fold
/// itself but accepts bare LF, so the first line must not start with LF and the last
/// line and the empty line must end with CRLF (each header line's end is checked by the
/// caller). Otherwise the head is scanned ([`scan::locate_head`]) so that the answer for a
/// head received in pieces does not depend on where it was cut: an incomplete head waits
/// (or is too large), a structural fault is `Smuggling`, and httparse's error is reported
/// only for a complete head.
pub(super) fn head_end(
    parsed: httparse::Result<usize>,
    buf: &[u8],
    window: usize,
    skip: usize,
) -> Result<Option<usize>, ProtoError> {
    let error = match parsed {
        Ok(httparse::Status::Complete(n)) => {
            let end = skip + n;
            if buf[skip] == b'\n' || !buf[..end].ends_with(b"\r\n\r\n") {
                return Err(ProtoError::Smuggling("bare LF in head"));
            }
            return Ok(Some(end));
        }
        Ok(httparse::Status::Partial) => ProtoError::Malformed("head ends before httparse saw it"),
        Err(e) => map_httparse_error(e, &buf[skip..]),
    };
    match scan::locate_head(buf, window, skip)? {
        None => Ok(None),
        Some(_) => Err(error),
    }
}

/// Turns an httparse error into ours. A version error is 505 only when the version is
/// well-formed (`HTTP/d.d`); anything else there is a syntax error.
fn map_httparse_error(e: httparse::Error, head: &[u8]) -> ProtoError {
    match e {
        httparse::Error::TooManyHeaders => ProtoError::TooManyHeaders,
        httparse::Error::HeaderName => ProtoError::Malformed("invalid header name"),
        httparse::Error::HeaderValue => ProtoError::Malformed("invalid header value"),
        httparse::Error::NewLine => ProtoError::Malformed("invalid line ending"),
        httparse::Error::Status => ProtoError::Malformed("invalid status line"),
        httparse::Error::Token => ProtoError::Malformed("invalid method or request-target"),
        httparse::Error::Version => {
            let line = &head[..memchr::memchr(b'\r', head).unwrap_or(head.len())];
            // The version is the last token of a request line, the first of a status line.
            let first = line.split(|&c| c == b' ').next();
            let last = line.rsplit(|&c| c == b' ').next();
            if first.is_some_and(well_formed_version) || last.is_some_and(well_formed_version) {
                ProtoError::UnsupportedVersion
            } else {
                ProtoError::Malformed("invalid HTTP version")
            }
        }
    }
}

fn well_formed_version(v: &[u8]) -> bool {
    matches!(v, [b'H', b'T', b'T', b'P', b'/', a, b'.', c] if a.is_ascii_digit() && c.is_ascii_digit())
}
