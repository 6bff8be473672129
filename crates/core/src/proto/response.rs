//! Response heads (from an upstream): parse with httparse into a reusable span table and
//! derive framing (RFC 9112 6.3) and keep-alive. Refuses what the edge must not relay
//! (ambiguous framing, obs-fold, bare CR/LF): the edge answers 502 for those.

use std::mem::MaybeUninit;

use super::head::{head_end, header_span, HeadLimits, HEADER_SLOTS};
use super::scan::{self, FramingHeaders};
use super::{Framing, HeaderSpan, Method, ProtoError, Span, Version};

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
    /// The Content-Length header's value, also when it does not frame a body (a response
    /// to HEAD, a 304, where it describes the representation: RFC 9110 8.6).
    pub content_length: Option<u64>,
}

impl ResponseHead {
    /// An empty head with header storage preallocated.
    pub fn new() -> Self {
        ResponseHead {
            headers: Vec::with_capacity(32),
            ..ResponseHead::default()
        }
    }

    /// Parses a response head at the start of `buf`; `request_method` decides whether a
    /// body follows (HEAD: never). Interim 1xx heads are returned like any other (status
    /// < 200, framing None): the caller skips them. The whole head may take
    /// `limits.max_head + limits.max_auth` bytes.
    pub fn parse(
        &mut self,
        buf: &[u8],
        request_method: Method,
        limits: &HeadLimits,
    ) -> Result<bool, ProtoError> {
        let window = limits.window();
        let hay = &buf[..buf.len().min(window)];
        let skip = scan::skip_empty_lines(hay);
        let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; HEADER_SLOTS];
        let slots = &mut slots[..limits.max_headers.min(HEADER_SLOTS)];
        let mut res = httparse::Response::new(&mut []);
        let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut res,
            &hay[skip..],
            slots,
        );
        let Some(end) = head_end(parsed, buf, window, skip)? else {
            return Ok(false);
        };
        let head = &buf[..end];
        let (Some(minor), Some(code)) = (res.version, res.code) else {
            return Err(ProtoError::Malformed("incomplete status line"));
        };
        if code < 100 {
            return Err(ProtoError::Malformed("invalid status code"));
        }
        self.status = code;
        self.version = if minor == 0 {
            Version::Http10
        } else {
            Version::Http11
        };
        // "HTTP/1.1 200 " is 13 bytes; the reason phrase is the rest of the status line.
        let line_end = skip + memchr::memchr(b'\r', &head[skip..]).unwrap_or(0);
        let reason_start = (skip + 13).min(line_end);
        self.reason = Span::new(reason_start, line_end);
        self.len = end;

        self.headers.clear();
        let mut framing = FramingHeaders::default();
        for field in res.headers.iter() {
            let h = header_span(head, field);
            if !scan::crlf_before(head, h.name.start as usize) {
                return Err(ProtoError::Smuggling("bare LF in head"));
            }
            self.headers.push(h);
            framing.see(scan::classify(field.name.as_bytes()), field.value)?;
        }
        self.content_length = framing.content_length;
        let declared = framing.framing(self.version)?;
        // RFC 9112 6.3 rule 1: no body after HEAD, 1xx, 204, 304, whatever the headers say.
        let bodiless = request_method == Method::Head || code < 200 || code == 204 || code == 304;
        self.framing = match declared {
            _ if bodiless => Framing::None,
            Some(f) => f,
            None => Framing::UntilClose,
        };
        self.keep_alive = framing.persistent(self.version) && self.framing != Framing::UntilClose;
        Ok(true)
    }

    /// The first value of header `name` (ASCII case-insensitive).
    pub fn header<'a>(&self, buf: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
        scan::find_header(&self.headers, buf, name)
    }
}
