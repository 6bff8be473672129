//! Authentication: HTTP Basic credentials checked in constant time (spec 5).
//!
//! Must not touch: logging of any kind (credentials never leave this module's callers'
//! stack buffers), sockets, the registry's storage.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use subtle::ConstantTimeEq;

/// Room for decoded `username:password`; longer credentials are refused.
pub const MAX_CREDENTIALS: usize = 384;

/// Decodes an `Authorization: Basic <base64>` value into `scratch`, returning
/// `(username, password)`. `None` when the scheme is not Basic or the value is malformed.
pub fn parse_basic<'a>(
    value: &[u8],
    scratch: &'a mut [u8; MAX_CREDENTIALS],
) -> Option<(&'a [u8], &'a [u8])> {
    let value = trim(value);
    if value.len() < 6 || !value[..6].eq_ignore_ascii_case(b"basic ") {
        return None;
    }
    let encoded = trim(&value[6..]);
    if encoded.len() > MAX_CREDENTIALS / 3 * 4 {
        return None;
    }
    let n = STANDARD.decode_slice(encoded, &mut scratch[..]).ok()?;
    let decoded = &scratch[..n];
    let colon = memchr::memchr(b':', decoded)?;
    Some((&decoded[..colon], &decoded[colon + 1..]))
}

/// True when both parts match, compared in constant time (for equal lengths).
pub fn credentials_match(user: &[u8], pass: &[u8], want_user: &[u8], want_pass: &[u8]) -> bool {
    let u = user.ct_eq(want_user);
    let p = pass.ct_eq(want_pass);
    bool::from(u & p)
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(s: &str) -> Vec<u8> {
        format!("Basic {}", STANDARD.encode(s)).into_bytes()
    }

    // spec 5.1: username:password carried as Basic credentials
    #[test]
    fn decodes_basic_credentials() {
        let mut buf = [0; MAX_CREDENTIALS];
        let v = basic("alice:s3cret");
        assert_eq!(
            parse_basic(&v, &mut buf),
            Some((&b"alice"[..], &b"s3cret"[..]))
        );
        let mut buf = [0; MAX_CREDENTIALS];
        assert_eq!(
            parse_basic(b"bAsIc   YTpi  ", &mut buf),
            Some((&b"a"[..], &b"b"[..]))
        );
    }

    #[test]
    fn password_may_contain_colons() {
        let mut buf = [0; MAX_CREDENTIALS];
        let v = basic("u:p:q");
        assert_eq!(parse_basic(&v, &mut buf), Some((&b"u"[..], &b"p:q"[..])));
    }

    // spec 5.3: missing or malformed credentials are refused
    #[test]
    fn refuses_other_schemes_and_garbage() {
        let mut buf = [0; MAX_CREDENTIALS];
        for v in [
            &b"Bearer abc"[..],
            b"Basic",
            b"Basic !!!",
            b"Basic dXNlcg==",
            b"",
            b"Basi YTpi",
        ] {
            assert_eq!(
                parse_basic(v, &mut buf),
                None,
                "{:?}",
                String::from_utf8_lossy(v)
            );
        }
    }

    #[test]
    fn oversized_credentials_are_refused_at_n_plus_one() {
        let at_limit = format!("u:{}", "p".repeat(MAX_CREDENTIALS - 2));
        let mut buf = [0; MAX_CREDENTIALS];
        assert!(parse_basic(&basic(&at_limit), &mut buf).is_some());
        let over = format!("u:{}", "p".repeat(MAX_CREDENTIALS - 1));
        let mut buf = [0; MAX_CREDENTIALS];
        assert!(parse_basic(&basic(&over), &mut buf).is_none());
    }

    #[test]
    fn both_parts_must_match() {
        assert!(credentials_match(b"u", b"p", b"u", b"p"));
        assert!(!credentials_match(b"u", b"x", b"u", b"p"));
        assert!(!credentials_match(b"x", b"p", b"u", b"p"));
        assert!(!credentials_match(b"u", b"pp", b"u", b"p"));
        assert!(!credentials_match(b"", b"", b"u", b"p"));
    }
}
