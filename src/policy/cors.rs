//! CORS at the edge (issue 29): which browser origins may call a cluster, and the headers
//! that tell the browser so. A key lists its `allowed_origins`; a browser's pre-check (an
//! `OPTIONS` with `Origin` and `Access-Control-Request-Method`, never with credentials) is
//! answered by the edge itself, 204 with [`preflight_headers`], when any live key of the
//! cluster lists the origin; a real response to a request made with a key that lists the
//! request's `Origin` carries [`response_headers`] (that origin echoed, never `*`, and
//! `Vary: Origin`). Any other origin gets no CORS header, so the browser keeps the answer
//! from the page.
//!
//! Pure: data in, headers out.
//!
//! Must not touch: sockets, credentials.

use crate::proto::Method;

/// Methods a page may use (a key's role still decides what each request may do).
pub const ALLOW_METHODS: &str = "GET, HEAD, POST, PUT, DELETE";
/// Request headers a page may send: credentials and the body's type.
pub const ALLOW_HEADERS: &str = "Authorization, Content-Type";
/// How long a browser may keep a pre-check's answer (seconds).
pub const MAX_AGE: &str = "600";

/// Whether `origin` (as the browser sent it) is one of `origins`: compared whole, the
/// scheme and host without regard to case (browsers send them lowercase).
pub fn listed(origins: &[String], origin: &[u8]) -> bool {
    !origin.is_empty()
        && origins
            .iter()
            .any(|o| o.as_bytes().eq_ignore_ascii_case(origin))
}

/// Whether a request is a browser's CORS pre-check: `OPTIONS` with `Origin` and
/// `Access-Control-Request-Method`, and no credentials.
pub fn is_preflight(method: Method, origin: bool, request_method: bool, auth: bool) -> bool {
    method == Method::Options && origin && request_method && !auth
}

/// The headers of the edge's 204 to an allowed pre-check from `origin`.
pub fn preflight_headers(origin: &[u8]) -> [(&'static str, &[u8]); 6] {
    [
        ("Access-Control-Allow-Origin", origin),
        ("Access-Control-Allow-Methods", ALLOW_METHODS.as_bytes()),
        ("Access-Control-Allow-Headers", ALLOW_HEADERS.as_bytes()),
        ("Access-Control-Allow-Credentials", b"true"),
        ("Access-Control-Max-Age", MAX_AGE.as_bytes()),
        ("Vary", b"Origin"),
    ]
}

/// The headers added to a response (the upstream's, or the edge's own error) to a request
/// from allowed `origin`.
pub fn response_headers(origin: &[u8]) -> [(&'static str, &[u8]); 3] {
    [
        ("Access-Control-Allow-Origin", origin),
        ("Access-Control-Allow-Credentials", b"true"),
        ("Vary", b"Origin"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_compared_whole() {
        let list = vec![
            "https://blog.example".to_string(),
            "http://localhost:1313".into(),
        ];
        for (origin, want) in [
            ("https://blog.example", true),
            ("HTTPS://Blog.Example", true),
            ("http://localhost:1313", true),
            ("http://blog.example", false),
            ("https://blog.example:443", false),
            ("https://blog.example.evil", false),
            ("https://evil.blog.example", false),
            ("null", false),
            ("", false),
            ("*", false),
        ] {
            assert_eq!(listed(&list, origin.as_bytes()), want, "{origin}");
        }
        assert!(!listed(&[], b"https://blog.example"));
    }

    #[test]
    fn preflights_from_a_table() {
        use Method::*;
        for (m, o, rm, auth, want) in [
            (Options, true, true, false, true),
            (Options, true, true, true, false),
            (Options, false, true, false, false),
            (Options, true, false, false, false),
            (Get, true, true, false, false),
        ] {
            assert_eq!(is_preflight(m, o, rm, auth), want, "{m:?} {o} {rm} {auth}");
        }
        let h = preflight_headers(b"https://a.example");
        assert_eq!(
            h[0],
            ("Access-Control-Allow-Origin", &b"https://a.example"[..])
        );
        assert!(h.iter().all(|(_, v)| *v != b"*"), "never `*`");
    }
}
