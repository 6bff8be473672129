//! Percent-encoding (RFC 3986 2.1) of paths and query strings: the one decoder and the one
//! encoder of the workspace, used by the edge's request vocabulary, the admin API, the
//! site loader's URLs and the embedded engine alike, so all of them read an escape the
//! same way.
//!
//! The rule for a bad escape is Elasticsearch's (`RestUtils.decodeComponent`): a `%` that
//! is not followed by two hex digits is an error, never a literal `%`. A reader that let it
//! through while another refused it would read the same bytes two ways. The one exception
//! is [`decode_lenient_into`], which only the edge's classification uses to look under
//! escapes for what a request may hide; it never produces a value that is acted on.
//!
//! Must not touch: what a decoded path or parameter means (index names, parameters).

use std::fmt;

/// How a `+` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plus {
    /// As a space: query strings (`application/x-www-form-urlencoded`).
    Space,
    /// As itself: path segments.
    Literal,
}

/// A `%` without two hex digits after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PercentError {
    /// The input ends within the escape (`a%`, `a%4`).
    Partial,
    /// The two characters after `%` are not hex digits (`%zz`).
    Invalid,
}

impl PercentError {
    /// The reason, in Elasticsearch's words.
    pub fn reason(self) -> &'static str {
        match self {
            PercentError::Partial => "partial escape sequence at end of string",
            PercentError::Invalid => "invalid escape sequence",
        }
    }
}

impl fmt::Display for PercentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

impl std::error::Error for PercentError {}

/// Decodes `src` once, appending to `out`. On error, `out` may hold part of the result.
pub fn decode_into(src: &[u8], plus: Plus, out: &mut Vec<u8>) -> Result<(), PercentError> {
    let mut i = 0;
    while i < src.len() {
        match src[i] {
            b'%' => {
                let (Some(&h), Some(&l)) = (src.get(i + 1), src.get(i + 2)) else {
                    return Err(PercentError::Partial);
                };
                match (hex(h), hex(l)) {
                    (Some(h), Some(l)) => out.push(h << 4 | l),
                    _ => return Err(PercentError::Invalid),
                }
                i += 3;
            }
            b'+' if plus == Plus::Space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(())
}

/// Decodes `src` once into bytes.
pub fn decode(src: &[u8], plus: Plus) -> Result<Vec<u8>, PercentError> {
    let mut out = Vec::with_capacity(src.len());
    decode_into(src, plus, &mut out)?;
    Ok(out)
}

/// Decodes `src` once into text; bytes that are not UTF-8 read as U+FFFD, as Elasticsearch
/// reads them.
pub fn decode_str(src: &[u8], plus: Plus) -> Result<String, PercentError> {
    let bytes = decode(src, plus)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// Decodes every well-formed escape of `src` once and keeps a malformed one as it is
/// (`+` stays `+`). Only for looking under escapes; never for a value that is acted on.
pub fn decode_lenient_into(src: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < src.len() {
        let esc = (src[i] == b'%')
            .then(|| Some(hex(*src.get(i + 1)?)? << 4 | hex(*src.get(i + 2)?)?))
            .flatten();
        match esc {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(src[i]);
                i += 1;
            }
        }
    }
}

/// Appends `src` to `out`, percent-encoding (uppercase hex) every byte for which `literal`
/// is false.
pub fn encode_into(src: &[u8], literal: impl Fn(u8) -> bool, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in src {
        if literal(b) {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

/// One `name[=value]` part of a query string, as raw bytes (not decoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawPair<'a> {
    pub name: &'a [u8],
    pub value: &'a [u8],
    /// The part had an `=`.
    pub has_value: bool,
}

/// The parts of a query string (without the `?`), in order, as Elasticsearch's
/// `RestUtils.decodeQueryString` splits it: a parameter ends at `&` or `;`, the first `=`
/// splits name from value, empty parts are skipped.
pub fn raw_pairs(query: &[u8]) -> impl Iterator<Item = RawPair<'_>> {
    query
        .split(|&b| b == b'&' || b == b';')
        .filter(|p| !p.is_empty())
        .map(|p| match memchr::memchr(b'=', p) {
            Some(e) => RawPair {
                name: &p[..e],
                value: &p[e + 1..],
                has_value: true,
            },
            None => RawPair {
                name: p,
                value: b"",
                has_value: false,
            },
        })
}

/// Decodes a query string (`a=1&b;c=x%20y`) into its pairs, in order ([`raw_pairs`]); a
/// name without `=` has the empty value, as Elasticsearch reads them.
pub fn decode_query(query: &[u8]) -> Result<Vec<(String, String)>, PercentError> {
    raw_pairs(query)
        .map(|p| {
            Ok((
                decode_str(p.name, Plus::Space)?,
                decode_str(p.value, Plus::Space)?,
            ))
        })
        .collect()
}

/// `s` as one URL component: RFC 3986's unreserved characters as they are, every other
/// byte encoded.
pub fn encode_component(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    encode_into(s.as_bytes(), is_unreserved, &mut out);
    out.into_iter().map(char::from).collect()
}

/// RFC 3986's unreserved characters.
pub fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_as_elasticsearch_reads_a_component() {
        let table: &[(&str, Plus, Result<&str, PercentError>)] = &[
            ("a%20b+c", Plus::Space, Ok("a b c")),
            ("a+b", Plus::Literal, Ok("a+b")),
            ("%e2%82%ac", Plus::Space, Ok("€")),
            ("%E2%82%AC", Plus::Literal, Ok("€")),
            ("%2B", Plus::Space, Ok("+")),
            ("", Plus::Space, Ok("")),
            ("100%", Plus::Space, Err(PercentError::Partial)),
            ("100%4", Plus::Space, Err(PercentError::Partial)),
            ("%zz", Plus::Space, Err(PercentError::Invalid)),
            ("%4g", Plus::Literal, Err(PercentError::Invalid)),
            ("%ff", Plus::Literal, Ok("\u{fffd}")),
        ];
        for (src, plus, want) in table {
            let got = decode_str(src.as_bytes(), *plus);
            assert_eq!(got.as_deref().map_err(|e| *e), *want, "{src:?}");
        }
    }

    #[test]
    fn a_query_string_reads_as_pairs() {
        let pairs = decode_query(b"a=1&&b&c=x%20y+z&d=e=f").unwrap();
        let want = [("a", "1"), ("b", ""), ("c", "x y z"), ("d", "e=f")];
        let want: Vec<_> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(pairs, want);
        assert_eq!(decode_query(b"a=%").unwrap_err(), PercentError::Partial);
        assert_eq!(decode_query(b"").unwrap(), vec![]);
    }

    #[test]
    fn lenient_keeps_what_is_not_an_escape() {
        let mut out = Vec::new();
        decode_lenient_into(b"%41%zz%4+%", &mut out);
        assert_eq!(out, b"A%zz%4+%");
    }

    #[test]
    fn encodes_what_is_not_literal_and_decodes_back() {
        let mut out = Vec::new();
        let src = "a/b c%€".as_bytes();
        encode_into(src, |b| b.is_ascii_alphanumeric(), &mut out);
        assert_eq!(out, b"a%2Fb%20c%25%E2%82%AC");
        assert_eq!(decode(&out, Plus::Literal).unwrap(), src);
        assert_eq!(encode_component("a b/é~"), "a%20b%2F%C3%A9~");
    }
}
