//! Byte-level helpers shared by the head parsers and the writers: locating a head and
//! checking its line structure (bare CR/LF, obs-fold), classifying header names, reading
//! comma-separated token lists, and the framing headers (Content-Length, Transfer-Encoding,
//! Connection). No allocation, no I/O.

use memchr::{memchr, memchr2_iter};

use super::{HeaderSpan, ProtoError, Span, Version};

/// The length of the empty lines (CRLF pairs) at the start of `hay`, which RFC 9112 2.2
/// lets a server skip before the request-line.
pub(super) fn skip_empty_lines(hay: &[u8]) -> usize {
    let mut skip = 0;
    while hay.len() >= skip + 2 && hay[skip] == b'\r' && hay[skip + 1] == b'\n' {
        skip += 2;
    }
    skip
}

/// Finds a complete head within the first `window` bytes of `buf` by scanning its CR and
/// LF bytes: the slow path, for heads that httparse found incomplete or refused.
///
/// Checks the line structure on what is there, complete or not, so bare CR/LF and
/// obs-fold fail as soon as they arrive: every CR must be followed by LF and every LF
/// preceded by CR (RFC 9112 2.2 refuses bare CR; a bare LF is refused here too, as
/// parsers disagree on it), and no line may start with SP/HT (RFC 9112 5.2 obs-fold, and
/// 2.2 whitespace before the first header). A CR as the last byte is fine: its LF may
/// still arrive. Returns the end of the head (after its empty line), `None` when it has
/// not ended yet, `HeadTooLarge` once `buf` is longer than `window` and no head ended
/// within it.
pub(super) fn locate_head(
    buf: &[u8],
    window: usize,
    skip: usize,
) -> Result<Option<usize>, ProtoError> {
    let hay = &buf[..buf.len().min(window)];
    let mut line_start = skip;
    for p in memchr2_iter(b'\r', b'\n', &hay[skip..]) {
        let p = p + skip;
        if hay[p] == b'\r' {
            match hay.get(p + 1) {
                Some(b'\n') | None => continue,
                Some(_) => return Err(ProtoError::Smuggling("bare CR in head")),
            }
        }
        if p == 0 || hay[p - 1] != b'\r' {
            return Err(ProtoError::Smuggling("bare LF in head"));
        }
        if p - 1 == line_start {
            return Ok(Some(p + 1));
        }
        if matches!(hay.get(p + 1), Some(b' ' | b'\t')) {
            return Err(ProtoError::Smuggling(
                "obs-fold (line starting with whitespace)",
            ));
        }
        line_start = p + 1;
    }
    if buf.len() > window {
        Err(ProtoError::HeadTooLarge)
    } else {
        Ok(None)
    }
}

/// Whether the line before the one starting at `line_start` ended with CRLF (httparse
/// accepts a bare LF there).
#[inline]
pub(super) fn crlf_before(head: &[u8], line_start: usize) -> bool {
    line_start >= 2 && head[line_start - 2] == b'\r'
}

/// Offset of `part` (a subslice of `buf`) in `buf`.
#[inline]
pub(super) fn offset(buf: &[u8], part: &[u8]) -> usize {
    part.as_ptr() as usize - buf.as_ptr() as usize
}

/// The span of `part` (a subslice of `buf`).
#[inline]
pub(super) fn span_of(buf: &[u8], part: &[u8]) -> Span {
    let start = offset(buf, part);
    Span::new(start, start + part.len())
}

/// The header names the parsers and writers care about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Name {
    Host,
    Authorization,
    ContentType,
    ContentLength,
    TransferEncoding,
    Connection,
    Expect,
    KeepAlive,
    ProxyConnection,
    ProxyAuthorization,
    ProxyAuthenticate,
    Te,
    Trailer,
    Upgrade,
    XForwardedFor,
    XForwardedProto,
    Other,
}

/// Classifies a header name (ASCII case-insensitive), dispatching on length first.
pub(super) fn classify(name: &[u8]) -> Name {
    let is = |known: &[u8]| name.eq_ignore_ascii_case(known);
    match name.len() {
        2 if is(b"te") => Name::Te,
        4 if is(b"host") => Name::Host,
        6 if is(b"expect") => Name::Expect,
        7 if is(b"trailer") => Name::Trailer,
        7 if is(b"upgrade") => Name::Upgrade,
        10 if is(b"connection") => Name::Connection,
        10 if is(b"keep-alive") => Name::KeepAlive,
        12 if is(b"content-type") => Name::ContentType,
        13 if is(b"authorization") => Name::Authorization,
        14 if is(b"content-length") => Name::ContentLength,
        15 if is(b"x-forwarded-for") => Name::XForwardedFor,
        16 if is(b"proxy-connection") => Name::ProxyConnection,
        17 if is(b"transfer-encoding") => Name::TransferEncoding,
        17 if is(b"x-forwarded-proto") => Name::XForwardedProto,
        18 if is(b"proxy-authenticate") => Name::ProxyAuthenticate,
        19 if is(b"proxy-authorization") => Name::ProxyAuthorization,
        _ => Name::Other,
    }
}

/// The non-empty elements of a comma-separated list, OWS trimmed (RFC 9110 5.6.1).
pub(super) fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim_ows)
        .filter(|t| !t.is_empty())
}

/// `value` without leading and trailing SP/HT.
pub(super) fn trim_ows(value: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !is_ows(b)).unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !is_ows(b))
        .map_or(start, |e| e + 1);
    &value[start..end]
}

/// Content-Length: one or more digits, nothing else (RFC 9112 6.3: a list, a sign or an
/// overflow is unrecoverable framing).
pub(super) fn parse_content_length(value: &[u8]) -> Result<u64, ProtoError> {
    if value.is_empty() {
        return Err(ProtoError::Smuggling("empty Content-Length"));
    }
    let mut n: u64 = 0;
    for &b in value {
        if !b.is_ascii_digit() {
            return Err(ProtoError::Smuggling("invalid Content-Length"));
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or(ProtoError::Smuggling("Content-Length overflow"))?;
    }
    Ok(n)
}

/// The framing-related headers of one message, gathered in one pass.
#[derive(Debug, Default)]
pub(super) struct FramingHeaders {
    pub content_length: Option<u64>,
    pub te_lines: u32,
    pub te_chunked: bool,
    pub close: bool,
    pub keep_alive: bool,
}

impl FramingHeaders {
    /// Records a header if it is Content-Length, Transfer-Encoding or Connection.
    pub fn see(&mut self, name: Name, value: &[u8]) -> Result<(), ProtoError> {
        match name {
            Name::ContentLength => {
                if self.content_length.is_some() {
                    return Err(ProtoError::Smuggling("more than one Content-Length"));
                }
                self.content_length = Some(parse_content_length(value)?);
            }
            Name::TransferEncoding => {
                self.te_lines += 1;
                self.te_chunked = self.te_lines == 1 && value.eq_ignore_ascii_case(b"chunked");
            }
            Name::Connection => {
                for t in tokens(value) {
                    if t.eq_ignore_ascii_case(b"close") {
                        self.close = true;
                    } else if t.eq_ignore_ascii_case(b"keep-alive") {
                        self.keep_alive = true;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Whether the connection persists after this message (RFC 9112 9.3): HTTP/1.1 unless
    /// `close`; HTTP/1.0 only with `keep-alive` (and no `close`).
    pub fn persistent(&self, version: Version) -> bool {
        match version {
            Version::Http11 => !self.close,
            Version::Http10 => self.keep_alive && !self.close,
        }
    }

    /// Body length from the headers (RFC 9112 6.1, 6.3): CL with TE refused, TE in HTTP/1.0
    /// refused, a transfer coding other than exactly one `chunked` refused. `None` when
    /// neither header is present.
    pub fn framing(&self, version: Version) -> Result<Option<super::Framing>, ProtoError> {
        if self.te_lines > 0 {
            if self.content_length.is_some() {
                return Err(ProtoError::Smuggling(
                    "both Content-Length and Transfer-Encoding",
                ));
            }
            if version == Version::Http10 {
                return Err(ProtoError::Smuggling("Transfer-Encoding in HTTP/1.0"));
            }
            if !self.te_chunked {
                return Err(ProtoError::UnsupportedTransferCoding);
            }
            return Ok(Some(super::Framing::Chunked));
        }
        Ok(self.content_length.map(super::Framing::Length))
    }
}

/// The first header named `name` (ASCII case-insensitive).
pub(super) fn find_header<'a>(
    headers: &[HeaderSpan],
    buf: &'a [u8],
    name: &[u8],
) -> Option<&'a [u8]> {
    headers
        .iter()
        .find(|h| h.name.of(buf).eq_ignore_ascii_case(name))
        .map(|h| h.value.of(buf))
}

/// Length of the header line that starts at `name_start` and whose value ends at
/// `value_end` (up to and including its CRLF), within a checked head.
pub(super) fn line_len(head: &[u8], name_start: usize, value_end: usize) -> usize {
    // A checked head ends every line with CRLF; the fallback only keeps this total.
    let lf = memchr(b'\n', &head[value_end..]).unwrap_or(head.len() - value_end - 1);
    value_end + lf + 1 - name_start
}
