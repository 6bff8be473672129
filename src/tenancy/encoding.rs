//! Compressed bodies of the multitenant class: which request `Content-Encoding` the edge
//! reads (`gzip`, `x-gzip`, `deflate`; `identity` is none; anything else 400), inflating a
//! request body with a bound (the body limit applies to the inflated size: a small bomb
//! is 413, not memory), whether a client accepts a gzip response, and a gzip stream for
//! rewritten responses. The edge forwards only inflated bodies and asks the shared upstream
//! for uncompressed answers (it must read both to rewrite them).
//!
//! Must not touch: I/O, framing, the rewriting itself.

use std::io::{Read, Write};

use flate2::read::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};
use flate2::write::GzEncoder;
use flate2::Compression;

use crate::errors::EdgeError;

/// A request body's compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// `gzip` (or `x-gzip`): one or more gzip members, as `GZIPInputStream` reads them.
    Gzip,
    /// `deflate`: zlib-wrapped (RFC 9110); raw deflate streams, which some clients send, too.
    Deflate,
}

/// The request's `Content-Encoding`: `None` for none or `identity`; 400 naming any other
/// (a list of codings included: no client compresses twice).
pub fn request_coding(value: Option<&[u8]>) -> Result<Option<Coding>, EdgeError> {
    let Some(v) = value.map(<[u8]>::trim_ascii) else {
        return Ok(None);
    };
    if v.eq_ignore_ascii_case(b"identity") {
        Ok(None)
    } else if v.eq_ignore_ascii_case(b"gzip") || v.eq_ignore_ascii_case(b"x-gzip") {
        Ok(Some(Coding::Gzip))
    } else if v.eq_ignore_ascii_case(b"deflate") {
        Ok(Some(Coding::Deflate))
    } else {
        Err(EdgeError::BadRequest(
            "unsupported Content-Encoding: this cluster reads gzip and deflate request bodies",
        ))
    }
}

/// Why a body could not be inflated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InflateError {
    /// More than the limit once inflated (413).
    TooLarge,
    /// Not a stream of its coding, or cut short (400).
    Malformed,
}

impl InflateError {
    /// The answer: 413 naming the limit, or 400.
    pub fn error(self, limit: u64) -> EdgeError {
        match self {
            InflateError::TooLarge => EdgeError::BodyTooLarge(limit),
            InflateError::Malformed => EdgeError::BadRequest(
                "the request body is not a valid stream of its Content-Encoding",
            ),
        }
    }
}

/// Inflates `input` into `out` (cleared first), reading at most `limit + 1` inflated bytes:
/// never more memory than the limit, whatever the ratio.
pub fn inflate(
    coding: Coding,
    input: &[u8],
    limit: u64,
    out: &mut Vec<u8>,
) -> Result<(), InflateError> {
    out.clear();
    let cap = limit.saturating_add(1);
    let read = match coding {
        Coding::Gzip => MultiGzDecoder::new(input).take(cap).read_to_end(out),
        Coding::Deflate if zlib_header(input) => ZlibDecoder::new(input).take(cap).read_to_end(out),
        Coding::Deflate => DeflateDecoder::new(input).take(cap).read_to_end(out),
    };
    match read {
        Ok(_) if out.len() as u64 > limit => Err(InflateError::TooLarge),
        Ok(_) => Ok(()),
        Err(_) => Err(InflateError::Malformed),
    }
}

/// Whether `b` starts with a zlib header (RFC 1950: method 8, check bits).
fn zlib_header(b: &[u8]) -> bool {
    match b {
        [cmf, flg, ..] => cmf & 0x0f == 8 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0,
        _ => false,
    }
}

/// Whether an `Accept-Encoding` value accepts `gzip` (or `x-gzip`, or `*`) with a
/// non-zero quality.
pub fn accepts_gzip(value: Option<&[u8]>) -> bool {
    let Some(v) = value else { return false };
    let Ok(v) = std::str::from_utf8(v) else {
        return false;
    };
    v.split(',').any(|item| {
        let mut parts = item.split(';');
        let name = parts.next().unwrap_or("").trim();
        let named = ["gzip", "x-gzip", "*"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n));
        named && parts.all(|p| !zero_quality(p))
    })
}

fn zero_quality(param: &str) -> bool {
    let Some((k, v)) = param.split_once('=') else {
        return false;
    };
    k.trim().eq_ignore_ascii_case("q") && v.trim().parse::<f32>().is_ok_and(|q| q <= 0.0)
}

/// A gzip stream of a response body whose pieces come one at a time.
pub struct GzipStream(GzEncoder<Vec<u8>>);

impl std::fmt::Debug for GzipStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GzipStream")
    }
}

impl Default for GzipStream {
    fn default() -> Self {
        GzipStream(GzEncoder::new(Vec::new(), Compression::fast()))
    }
}

impl GzipStream {
    /// Compresses `piece`; returns the compressed bytes ready so far (valid until the
    /// next call).
    pub fn feed(&mut self, piece: &[u8]) -> &[u8] {
        self.0.get_mut().clear();
        // Writing to a Vec cannot fail.
        let _ = self.0.write_all(piece);
        self.0.get_ref()
    }

    /// Ends the stream; returns the rest, the gzip trailer included.
    pub fn finish(&mut self) -> &[u8] {
        self.0.get_mut().clear();
        let _ = self.0.try_finish();
        self.0.get_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::{DeflateEncoder, ZlibEncoder};

    fn gzip(b: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }

    // issue 29: the codings the multitenant class reads; anything else is 400
    #[test]
    fn request_codings() {
        type Want = Result<Option<Coding>, ()>;
        let table: [(Option<&[u8]>, Want); 8] = [
            (None, Ok(None)),
            (Some(b"identity"), Ok(None)),
            (Some(b" GZIP "), Ok(Some(Coding::Gzip))),
            (Some(b"x-gzip"), Ok(Some(Coding::Gzip))),
            (Some(b"deflate"), Ok(Some(Coding::Deflate))),
            (Some(b"br"), Err(())),
            (Some(b"gzip, gzip"), Err(())),
            (Some(b""), Err(())),
        ];
        for (value, want) in table {
            assert_eq!(request_coding(value).map_err(|_| ()), want, "{value:?}");
        }
    }

    // issue 29: the limit applies to the inflated size, at N and N+1; a bomb costs no more
    #[test]
    fn inflating_is_bounded_by_the_limit() {
        let body = vec![b'a'; 1000];
        let mut out = Vec::new();
        assert_eq!(inflate(Coding::Gzip, &gzip(&body), 1000, &mut out), Ok(()));
        assert_eq!(out, body);
        assert_eq!(
            inflate(Coding::Gzip, &gzip(&body), 999, &mut out),
            Err(InflateError::TooLarge)
        );
        let bomb = gzip(&vec![0u8; 50_000_000]);
        assert!(bomb.len() < 100_000, "{}", bomb.len());
        assert_eq!(
            inflate(Coding::Gzip, &bomb, 1 << 20, &mut out),
            Err(InflateError::TooLarge)
        );
        assert!(out.len() <= (1 << 20) + 1, "no more than the limit kept");
    }

    #[test]
    fn gzip_members_zlib_and_raw_deflate_inflate_malformed_is_refused() {
        let mut two = gzip(b"{\"a\":");
        two.extend(gzip(b"1}"));
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(b"{\"a\":1}").unwrap();
        let mut d = DeflateEncoder::new(Vec::new(), Compression::default());
        d.write_all(b"{\"a\":1}").unwrap();
        let cases = [
            (Coding::Gzip, two),
            (Coding::Deflate, z.finish().unwrap()),
            (Coding::Deflate, d.finish().unwrap()),
        ];
        let mut out = Vec::new();
        for (coding, input) in cases {
            assert_eq!(inflate(coding, &input, 100, &mut out), Ok(()), "{coding:?}");
            assert_eq!(out, b"{\"a\":1}");
        }
        let cut = &gzip(b"{\"a\":1}")[..10];
        for bad in [&b"{\"a\":1}"[..], cut] {
            let got = inflate(Coding::Gzip, bad, 100, &mut out);
            assert_eq!(got, Err(InflateError::Malformed));
        }
    }

    #[test]
    fn accept_encoding() {
        let table: [(&[u8], bool); 8] = [
            (b"gzip", true),
            (b"gzip, deflate", true),
            (b"deflate, GZIP;q=0.5", true),
            (b"*", true),
            (b"gzip;q=0", false),
            (b"deflate", false),
            (b"br, identity", false),
            (b"", false),
        ];
        for (v, want) in table {
            assert_eq!(
                accepts_gzip(Some(v)),
                want,
                "{}",
                String::from_utf8_lossy(v)
            );
        }
        assert!(!accepts_gzip(None));
    }

    #[test]
    fn the_gzip_stream_inflates_to_its_pieces() {
        let mut g = GzipStream::default();
        let mut out = Vec::new();
        out.extend_from_slice(g.feed(b"{\"took\":"));
        out.extend_from_slice(g.feed(b"1}"));
        out.extend_from_slice(g.finish());
        let mut back = Vec::new();
        inflate(Coding::Gzip, &out, 100, &mut back).unwrap();
        assert_eq!(back, b"{\"took\":1}");
    }
}
