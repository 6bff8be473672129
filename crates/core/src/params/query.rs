//! Query strings as Elasticsearch 7.10's `RestUtils.decodeQueryString` reads them: a
//! parameter ends at `&` or `;`, the first `=` splits its name from its value, a name
//! without `=` has an empty value, an empty part is skipped; each component is decoded
//! once (`+` is a space, `%XX` a byte, `%%` a `%`; a malformed escape is a 400).
//!
//! Must not touch: what a parameter means (the readers of the sibling modules do that).

use super::ParamError;

/// One `name[=value]` part of a query string, as raw bytes (not decoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawPair<'a> {
    pub name: &'a [u8],
    pub value: &'a [u8],
    /// The part had an `=`.
    pub has_value: bool,
}

/// The parts of `query` (without the `?`), in order, empty ones skipped.
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

/// `RestUtils.decodeComponent` of a query component: `+` is a space, `%XX` the byte
/// `XX`, `%%` a `%`; bytes that are not UTF-8 become U+FFFD (Java's `new String`).
pub fn decode_component(s: &[u8]) -> Result<String, ParamError> {
    if !s.iter().any(|&b| b == b'%' || b == b'+') {
        return Ok(String::from_utf8_lossy(s).into_owned());
    }
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    let shown = || String::from_utf8_lossy(s).into_owned();
    while i < s.len() {
        match s[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let Some(&c) = s.get(i + 1) else {
                    return Err(ParamError::illegal(format!(
                        "unterminated escape sequence at end of string: {}",
                        shown()
                    )));
                };
                i += 1;
                if c == b'%' {
                    out.push(b'%');
                    i += 1;
                    continue;
                }
                let Some(&c2) = s.get(i + 1) else {
                    return Err(ParamError::illegal(format!(
                        "partial escape sequence at end of string: {}",
                        shown()
                    )));
                };
                i += 1;
                match (hex(c), hex(c2)) {
                    (Some(h), Some(l)) => out.push(h << 4 | l),
                    _ => {
                        return Err(ParamError::illegal(format!(
                            "invalid escape sequence `%{}{}' at index {} of: {}",
                            c as char,
                            c2 as char,
                            i - 2,
                            shown()
                        )))
                    }
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Percent-encodes `s` for a query component: everything but unreserved characters and a
/// few safe delimiters; never `&`, `;`, `=`, `+`, `#` or `%`, which are structure.
pub fn encode_component(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$'()*,:@/".contains(&b) {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}
