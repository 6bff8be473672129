//! Request-path normalisation for classification and tenancy rewriting.
//!
//! Owns: turning the raw path of a request target (before `?`) into segments, in two views:
//! - **strict** ([`NormPath::strict`]): each segment percent-decoded exactly once (what an
//!   Elasticsearch node sees after its own single decode), empty segments (`//`, trailing
//!   slash) dropped, `.` and `..` segments resolved (also when sent as `%2E`). Reads are
//!   recognised on this view, case-sensitively, and the tenancy rewriter works on it. The
//!   edge forwards [`NormPath::write_canonical`] of this view, so the upstream sees exactly
//!   the segments that were classified.
//! - **loose** ([`NormPath::loose`]): the whole path decoded until stable (double encoding
//!   `%255F`), then split on `/` (so `%2F` separates too) with the same dot rules. Blocked
//!   endpoints are matched on this view case-insensitively, so no encoding or case variant
//!   of a blocked endpoint slips through; it only ever errs towards blocking.
//!
//! Allocation: none when the path has no `%`; otherwise one buffer for the decoded bytes.
//! Must not touch: methods, clusters, tenants, I/O.

use std::borrow::Cow;

use searchgate_core::percent::{self, Plus};

/// Most segments a path may have (after dot resolution). No endpoint has more than 7.
pub const MAX_SEGMENTS: usize = 16;
/// Rounds of decoding the loose view applies before calling a path over-encoded.
const MAX_DECODE_ROUNDS: usize = 4;

/// Why a path cannot be normalised (each is a 400 for the client).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathError {
    /// `%` not followed by two hex digits.
    BadEncoding,
    /// Still changing after several rounds of decoding (`%25252525...`).
    OverEncoded,
    /// More than [`MAX_SEGMENTS`] segments.
    TooManySegments,
}

impl PathError {
    /// The client-facing reason.
    pub fn reason(self) -> &'static str {
        match self {
            PathError::BadEncoding => "invalid percent-encoding in the request path",
            PathError::OverEncoded => "the request path is percent-encoded too many times",
            PathError::TooManySegments => "the request path has too many segments",
        }
    }
}

impl From<percent::PercentError> for PathError {
    fn from(_: percent::PercentError) -> Self {
        PathError::BadEncoding
    }
}

impl From<PathError> for crate::errors::EdgeError {
    fn from(e: PathError) -> Self {
        crate::errors::EdgeError::BadRequest(e.reason())
    }
}

/// A normalised path: a list of segments (ranges into a borrowed or decoded buffer).
#[derive(Debug, Clone)]
pub struct NormPath<'a> {
    buf: Cow<'a, [u8]>,
    segs: [(u32, u32); MAX_SEGMENTS],
    len: usize,
}

impl<'a> NormPath<'a> {
    /// The strict view: each segment decoded once.
    pub fn strict(raw: &'a [u8]) -> Result<Self, PathError> {
        if memchr::memchr(b'%', raw).is_none() {
            return Self::from_plain(Cow::Borrowed(raw));
        }
        let mut buf = Vec::with_capacity(raw.len());
        let mut p = NormPath {
            buf: Cow::Borrowed(&[]),
            segs: [(0, 0); MAX_SEGMENTS],
            len: 0,
        };
        for seg in raw.split(|&b| b == b'/') {
            let start = buf.len();
            percent::decode_into(seg, Plus::Literal, &mut buf)?;
            let end = buf.len();
            p.push_in(&buf, start, end)?;
            // Popped or dropped segments leave no bytes behind.
            let keep = p.segs[..p.len].last().map_or(0, |s| s.1 as usize);
            buf.truncate(keep);
        }
        p.buf = Cow::Owned(buf);
        Ok(p)
    }

    /// The loose view: the whole path decoded until stable, then split on `/`.
    pub fn loose(raw: &'a [u8]) -> Result<Self, PathError> {
        if memchr::memchr(b'%', raw).is_none() {
            return Self::from_plain(Cow::Borrowed(raw));
        }
        let mut cur = Vec::with_capacity(raw.len());
        percent::decode_into(raw, Plus::Literal, &mut cur)?;
        let mut rounds = 1;
        while memchr::memchr(b'%', &cur).is_some() {
            let mut next = Vec::with_capacity(cur.len());
            // Later rounds keep a '%' that is not an escape as a literal.
            percent::decode_lenient_into(&cur, &mut next);
            if next == cur {
                break;
            }
            rounds += 1;
            if rounds > MAX_DECODE_ROUNDS {
                return Err(PathError::OverEncoded);
            }
            cur = next;
        }
        Self::from_plain(Cow::Owned(cur))
    }

    fn from_plain(buf: Cow<'a, [u8]>) -> Result<Self, PathError> {
        let mut p = NormPath {
            buf: Cow::Borrowed(&[]),
            segs: [(0, 0); MAX_SEGMENTS],
            len: 0,
        };
        let mut start = 0usize;
        let bytes: &[u8] = &buf;
        for seg in bytes.split(|&b| b == b'/') {
            p.push_in(bytes, start, start + seg.len())?;
            start += seg.len() + 1;
        }
        p.buf = buf;
        Ok(p)
    }

    /// Applies one raw segment `buf[start..end]`: drop empty and `.`, pop on `..`, else push.
    fn push_in(&mut self, buf: &[u8], start: usize, end: usize) -> Result<(), PathError> {
        match &buf[start..end] {
            b"" | b"." => Ok(()),
            b".." => {
                self.len = self.len.saturating_sub(1);
                Ok(())
            }
            _ if self.len == MAX_SEGMENTS => Err(PathError::TooManySegments),
            _ => {
                self.segs[self.len] = (start as u32, end as u32);
                self.len += 1;
                Ok(())
            }
        }
    }

    /// Number of segments.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for the root path `/`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Segment `i` (decoded bytes). Panics when `i >= len()`.
    pub fn seg(&self, i: usize) -> &[u8] {
        assert!(i < self.len, "segment {i} of {}", self.len);
        let (s, e) = self.segs[i];
        &self.buf[s as usize..e as usize]
    }

    /// Segment `i`, or `None` past the end.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        (i < self.len).then(|| self.seg(i))
    }

    /// All segments in order.
    pub fn segments(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len).map(move |i| self.seg(i))
    }

    /// Writes the canonical form: `/seg/seg`, each segment percent-encoded minimally
    /// ([`encode_segment`]); `/` for the root.
    pub fn write_canonical(&self, out: &mut Vec<u8>) {
        if self.len == 0 {
            out.push(b'/');
        }
        for seg in self.segments() {
            out.push(b'/');
            encode_segment(seg, out);
        }
    }

    /// Writes the origin-form target the edge forwards for this path: the canonical form,
    /// then `?` and the query as the client sent it (when it sent one, even empty). It
    /// always starts with `/`, whatever form the client's target had (an absolute-form
    /// target without a path, `http://h?q`, included: RFC 9112 3.2.1).
    pub fn write_target(&self, query: Option<&[u8]>, out: &mut Vec<u8>) {
        self.write_canonical(out);
        if let Some(q) = query {
            out.push(b'?');
            out.extend_from_slice(q);
        }
    }
}

/// Bytes that stay literal in a canonical segment: unreserved characters plus `,` and `*`
/// (index expressions). Everything else, `/`, `%`, `+` and non-ASCII included, is encoded,
/// so an upstream that decodes once gets back exactly the segment.
#[inline]
pub fn is_literal(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b',' | b'*')
}

/// Appends `seg` percent-encoded (uppercase hex) to `out`.
pub fn encode_segment(seg: &[u8], out: &mut Vec<u8>) {
    percent::encode_into(seg, is_literal, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict(p: &str) -> Vec<String> {
        let n = NormPath::strict(p.as_bytes()).unwrap();
        n.segments()
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect()
    }

    fn loose(p: &str) -> Vec<String> {
        let n = NormPath::loose(p.as_bytes()).unwrap();
        n.segments()
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect()
    }

    #[test]
    fn strict_drops_empty_and_dot_segments() {
        let table: &[(&str, &[&str])] = &[
            ("/", &[]),
            ("", &[]),
            ("//", &[]),
            ("/_search", &["_search"]),
            ("/_search/", &["_search"]),
            ("//_search//", &["_search"]),
            ("/./_search/.", &["_search"]),
            ("/a/../_search", &["_search"]),
            ("/../../_search", &["_search"]),
            ("/a/b/../../c", &["c"]),
            ("/a/%2E%2E/b", &["b"]),
            ("/a/%2e/b", &["a", "b"]),
            ("/%5Fsearch", &["_search"]),
            ("/%255Fsearch", &["%5Fsearch"]),
            ("/a%2Fb/c", &["a/b", "c"]),
            ("/a%2C%2Ab", &["a,*b"]),
            ("/a/%2E%2E%2F_snapshot", &["a", "../_snapshot"]),
        ];
        for (raw, want) in table {
            assert_eq!(strict(raw), *want, "{raw}");
        }
    }

    #[test]
    fn loose_decodes_until_stable_and_splits_encoded_slashes() {
        let table: &[(&str, &[&str])] = &[
            ("/%255Fsearch", &["_search"]),
            ("/%25255Fsnapshot", &["_snapshot"]),
            ("/a%2Fb/c", &["a", "b", "c"]),
            ("/a/%2E%2E%2F_snapshot", &["_snapshot"]),
            ("/a/%252E%252E/_snapshot", &["_snapshot"]),
            ("/100%25/x", &["100%", "x"]),
            ("/%255Fsnapshot%25zz", &["_snapshot%zz"]),
            ("/_SNAPSHOT", &["_SNAPSHOT"]),
        ];
        for (raw, want) in table {
            assert_eq!(loose(raw), *want, "{raw}");
        }
    }

    #[test]
    fn errors() {
        assert_eq!(
            NormPath::strict(b"/%zz").unwrap_err(),
            PathError::BadEncoding
        );
        assert_eq!(
            NormPath::strict(b"/%4").unwrap_err(),
            PathError::BadEncoding
        );
        assert_eq!(NormPath::loose(b"/%4").unwrap_err(), PathError::BadEncoding);
        let deep = "/%25252525255F";
        assert_eq!(
            NormPath::loose(deep.as_bytes()).unwrap_err(),
            PathError::OverEncoded
        );
        let sixteen = "/a".repeat(MAX_SEGMENTS);
        assert_eq!(NormPath::strict(sixteen.as_bytes()).unwrap().len(), 16);
        let seventeen = "/a".repeat(MAX_SEGMENTS + 1);
        assert_eq!(
            NormPath::strict(seventeen.as_bytes()).unwrap_err(),
            PathError::TooManySegments
        );
        // Dot segments do not count against the limit once resolved.
        let dots = format!("{}{}", "/a/..".repeat(20), "/b");
        assert_eq!(strict(&dots), ["b"]);
        assert_eq!(strict(&dots.replace("/a/", "/%61/")), ["b"]);
    }

    /// The head the edge forwards for `raw` (a complete request head): its target built by
    /// [`NormPath::write_target`], as `fuzz/fuzz_targets/request_head.rs` checks it.
    fn forwarded(raw: &[u8]) -> (Vec<u8>, Vec<u8>) {
        use crate::proto::{write_forward_request, ForwardRequest, HeadLimits, RequestHead};
        let mut head = RequestHead::new();
        assert_eq!(head.parse(raw, &HeadLimits::default()), Ok(true));
        let path = NormPath::strict(head.path(raw)).unwrap();
        let mut target = Vec::new();
        path.write_target(head.query(raw), &mut target);
        let mut out = Vec::new();
        let fwd = ForwardRequest {
            target: &target,
            framing: head.framing,
            forwarded_for: b"192.0.2.1",
            forwarded_proto: b"https",
            strip_authorization: true,
            strip_expect: true,
            headers: crate::proto::ForwardHeaders::All,
        };
        write_forward_request(&mut out, &head, raw, &fwd);
        (target, out)
    }

    // Found by `cargo fuzz run request_head` (issue 15): an absolute-form target with an
    // empty path and a query was forwarded as `?`, which no parser takes for a target.
    // Forwarded now as `/?`: origin form always starts with `/` (RFC 9112 3.2.1).
    #[test]
    fn fuzz_findings_forward_and_parse_again() {
        use crate::proto::{HeadLimits, ProtoError, RequestHead};
        let cases: &[(&[u8], &str)] = &[
            (b"c!e`B0 hTTP://*=? HTTP/1.0\r\n\r\n", "/?"),
            (b"GET http://h?q=1 HTTP/1.1\r\nHost: x\r\n\r\n", "/?q=1"),
            (b"GET http://h HTTP/1.1\r\nHost: x\r\n\r\n", "/"),
            (
                b"GET http://h/a//b/?x HTTP/1.1\r\nHost: x\r\n\r\n",
                "/a/b?x",
            ),
        ];
        for (raw, want) in cases {
            let (target, out) = forwarded(raw);
            assert_eq!(String::from_utf8_lossy(&target), *want);
            let mut again = RequestHead::new();
            match again.parse(&out, &HeadLimits::default()) {
                Ok(true) => assert_eq!(again.target.of(&out), target.as_slice()),
                // HTTP/1.0 without Host is forwarded without one (the harness allows it);
                // the target itself parsed, or the error would have been about it.
                Err(ProtoError::Malformed("missing Host")) => {
                    assert!(raw.ends_with(b"HTTP/1.0\r\n\r\n"))
                }
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(raw)),
            }
        }
    }

    #[test]
    fn canonical_form_round_trips_through_one_decode() {
        let table: &[(&str, &str)] = &[
            ("/", "/"),
            ("/_search/", "/_search"),
            ("/%5Fsearch", "/_search"),
            ("/a%2Fb//c/", "/a%2Fb/c"),
            ("/a+b", "/a%2Bb"),
            ("/a,b*/_search", "/a,b*/_search"),
            ("/%3Clogs-%7Bnow%2Fd%7D%3E", "/%3Clogs-%7Bnow%2Fd%7D%3E"),
            ("/%255F", "/%255F"),
            ("/caf%C3%A9", "/caf%C3%A9"),
        ];
        for (raw, want) in table {
            let mut out = Vec::new();
            NormPath::strict(raw.as_bytes())
                .unwrap()
                .write_canonical(&mut out);
            assert_eq!(String::from_utf8(out.clone()).unwrap(), *want, "{raw}");
            // The upstream decodes once: it must see the same segments we classified.
            let again = NormPath::strict(&out).unwrap();
            let first = NormPath::strict(raw.as_bytes()).unwrap();
            assert!(again.segments().eq(first.segments()), "{raw}");
        }
    }
}
