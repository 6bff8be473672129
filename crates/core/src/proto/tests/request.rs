//! Request heads: methods, target forms, versions, keep-alive, Expect, pipelining.

use super::*;

#[test]
fn simple_get_at_every_split() {
    // RFC 9112 3: request-line, then field lines, then an empty line.
    let msg = b"GET /idx/_search?q=a HTTP/1.1\r\nHost: acme.us-east-1.localhost:9243\r\nUser-Agent: curl/8\r\n\r\n";
    let h = req(msg).unwrap();
    assert_eq!(h.method, Method::Get);
    assert_eq!(text(msg, h.method_span), "GET");
    assert_eq!(text(msg, h.target), "/idx/_search?q=a");
    assert_eq!(h.path(msg), b"/idx/_search");
    assert_eq!(h.query(msg), Some(&b"q=a"[..]));
    assert_eq!(h.version, Version::Http11);
    assert_eq!(text(msg, h.host.unwrap()), "acme.us-east-1.localhost:9243");
    assert_eq!(h.len, msg.len());
    assert_eq!(h.counted_len, msg.len());
    assert_eq!(h.framing, Framing::None);
    assert!(h.keep_alive);
    assert!(!h.expect_continue);
    assert!(!h.is_absolute_form());
    assert_eq!(h.authorization, None);
    let names: Vec<&str> = h.headers.iter().map(|f| text(msg, f.name)).collect();
    let values: Vec<&str> = h.headers.iter().map(|f| text(msg, f.value)).collect();
    assert_eq!(names, ["Host", "User-Agent"]);
    assert_eq!(values, ["acme.us-east-1.localhost:9243", "curl/8"]);
}

#[test]
fn known_methods_and_extension_methods() {
    // RFC 9110 9.1: methods are case-sensitive tokens.
    let cases = [
        ("GET", Method::Get),
        ("HEAD", Method::Head),
        ("POST", Method::Post),
        ("PUT", Method::Put),
        ("DELETE", Method::Delete),
        ("OPTIONS", Method::Options),
        ("PATCH", Method::Patch),
        ("PROPFIND", Method::Other),
        ("get", Method::Other),
    ];
    for (name, method) in cases {
        let msg = head_of(&format!("{name} / HTTP/1.1"), &["Host: a"]);
        let h = req(&msg).unwrap();
        assert_eq!(h.method, method, "{name}");
        assert_eq!(text(&msg, h.method_span), name);
    }
}

#[test]
fn body_framing_from_content_length_and_chunked() {
    // RFC 9112 6.3 rules 4-6.
    let msg = head_of(
        "POST /i/_doc HTTP/1.1",
        &[
            "Host: a",
            "Content-Type: application/json",
            "Content-Length: 5",
        ],
    );
    let h = req(&msg).unwrap();
    assert_eq!(h.framing, Framing::Length(5));
    assert_eq!(text(&msg, h.content_type.unwrap()), "application/json");
    let msg = head_of(
        "POST / HTTP/1.1",
        &["Host: a", "Transfer-Encoding: chunked"],
    );
    assert_eq!(req(&msg).unwrap().framing, Framing::Chunked);
    let msg = head_of("POST / HTTP/1.1", &["Host: a", "Content-Length: 0"]);
    assert_eq!(req(&msg).unwrap().framing, Framing::Length(0));
    // The largest Content-Length that fits is a valid head (the body limit refuses it).
    let msg = head_of(
        "POST / HTTP/1.1",
        &["Host: a", "Content-Length: 18446744073709551615"],
    );
    assert_eq!(req(&msg).unwrap().framing, Framing::Length(u64::MAX));
}

#[test]
fn head_followed_by_body_bytes() {
    let msg = b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
    let h = req(msg).unwrap();
    assert_eq!(h.len, msg.len() - 5);
    assert_eq!(&msg[h.len..], b"hello");
}

#[test]
fn absolute_form_target() {
    // RFC 9112 3.2.2: the authority of an absolute-form target replaces Host.
    let msg = b"GET http://Acme.example:9200/a/b?c=d HTTP/1.1\r\nHost: other\r\n\r\n";
    let h = req(msg).unwrap();
    assert!(h.is_absolute_form());
    assert_eq!(text(msg, h.target), "http://Acme.example:9200/a/b?c=d");
    assert_eq!(text(msg, h.host.unwrap()), "Acme.example:9200");
    assert_eq!(text(msg, h.path_and_query), "/a/b?c=d");
    assert_eq!(h.path(msg), b"/a/b");
    assert_eq!(h.query(msg), Some(&b"c=d"[..]));
    assert_eq!(h.header(msg, b"host"), Some(&b"other"[..]));
}

#[test]
fn absolute_form_without_path() {
    // RFC 9112 3.2.2 / RFC 9110 4.2.3: an empty path means "/".
    let msg = head_of("GET https://h.example?x=1 HTTP/1.1", &["Host: h.example"]);
    let h = req(&msg).unwrap();
    assert_eq!(h.path(&msg), b"/");
    assert_eq!(h.query(&msg), Some(&b"x=1"[..]));
    let msg = head_of("GET HTTP://h.example HTTP/1.1", &["Host: h.example"]);
    let h = req(&msg).unwrap();
    assert_eq!(h.path(&msg), b"/");
    assert_eq!(h.query(&msg), None);
    assert_eq!(text(&msg, h.host.unwrap()), "h.example");
}

#[test]
fn absolute_form_refused_shapes() {
    let bad = [
        "GET ftp://h/x HTTP/1.1",          // scheme other than http(s)
        "GET http:///x HTTP/1.1",          // empty authority
        "GET http://user:pw@h/x HTTP/1.1", // userinfo (RFC 9110 4.2.4)
        "GET h.example:80 HTTP/1.1",       // authority-form is for CONNECT only
        "CONNECT h.example:443 HTTP/1.1",  // not supported by this codec
        "GET x/y HTTP/1.1",                // relative reference
    ];
    for line in bad {
        let msg = head_of(line, &["Host: h"]);
        assert!(matches!(req(&msg), Err(ProtoError::Malformed(_))), "{line}");
    }
}

#[test]
fn asterisk_form_only_for_options() {
    // RFC 9112 3.2.4.
    let msg = head_of("OPTIONS * HTTP/1.1", &["Host: a"]);
    let h = req(&msg).unwrap();
    assert_eq!(h.path(&msg), b"*");
    assert_eq!(h.query(&msg), None);
    let msg = head_of("GET * HTTP/1.1", &["Host: a"]);
    assert!(matches!(req(&msg), Err(ProtoError::Malformed(_))));
}

#[test]
fn http10_keep_alive_only_when_asked() {
    // RFC 9112 9.3: HTTP/1.0 persists only with "keep-alive"; Host is optional in 1.0.
    let msg = head_of("GET / HTTP/1.0", &[]);
    let h = req(&msg).unwrap();
    assert_eq!(h.version, Version::Http10);
    assert!(!h.keep_alive);
    assert_eq!(h.host, None);
    let msg = head_of("GET / HTTP/1.0", &["Connection: Keep-Alive"]);
    assert!(req(&msg).unwrap().keep_alive);
    let msg = head_of("GET / HTTP/1.0", &["Connection: foo ,\tKEEP-ALIVE"]);
    assert!(req(&msg).unwrap().keep_alive);
    let msg = head_of("GET / HTTP/1.0", &["Connection: keep-alive, close"]);
    assert!(!req(&msg).unwrap().keep_alive);
    let msg = head_of("GET / HTTP/1.0", &["Connection: keep-alived"]);
    assert!(!req(&msg).unwrap().keep_alive);
}

#[test]
fn http11_persistent_unless_close() {
    // RFC 9112 9.3: the "close" option, in any Connection line, any case.
    let msg = head_of("GET / HTTP/1.1", &["Host: a", "Connection: keep-alive"]);
    assert!(req(&msg).unwrap().keep_alive);
    let msg = head_of("GET / HTTP/1.1", &["Host: a", "Connection: foo, CLOSE"]);
    assert!(!req(&msg).unwrap().keep_alive);
    let msg = head_of(
        "GET / HTTP/1.1",
        &["Host: a", "Connection: foo", "Connection: Close"],
    );
    assert!(!req(&msg).unwrap().keep_alive);
    let msg = head_of("GET / HTTP/1.1", &["Host: a", "Connection: closed"]);
    assert!(req(&msg).unwrap().keep_alive);
}

#[test]
fn expect_100_continue() {
    // RFC 9110 10.1.1: case-insensitive; ignored in HTTP/1.0 requests.
    let msg = head_of(
        "PUT /i HTTP/1.1",
        &["Host: a", "Expect: 100-Continue", "Content-Length: 3"],
    );
    assert!(req(&msg).unwrap().expect_continue);
    let msg = head_of(
        "PUT /i HTTP/1.0",
        &["Expect: 100-continue", "Content-Length: 3"],
    );
    assert!(!req(&msg).unwrap().expect_continue);
    let msg = head_of("PUT /i HTTP/1.1", &["Host: a", "Expect: something-else"]);
    assert!(!req(&msg).unwrap().expect_continue);
}

#[test]
fn versions_other_than_1x_are_505() {
    // RFC 9110 15.6.6: 505 for a major version the server does not support.
    for v in ["HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "HTTP/3.0"] {
        let msg = head_of(&format!("GET / {v}"), &["Host: a"]);
        assert_eq!(
            req(&msg).unwrap_err(),
            ProtoError::UnsupportedVersion,
            "{v}"
        );
    }
    for v in ["HTTX/1.1", "HTTP/1.1x", "http/1.1", "HTTP/11"] {
        let msg = head_of(&format!("GET / {v}"), &["Host: a"]);
        assert!(matches!(req(&msg), Err(ProtoError::Malformed(_))), "{v}");
    }
}

#[test]
fn leading_empty_lines_are_skipped_and_counted() {
    // RFC 9112 2.2: a server SHOULD ignore empty lines before the request-line.
    let msg = b"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n";
    let h = req(msg).unwrap();
    assert_eq!(h.len, msg.len());
    assert_eq!(h.counted_len, msg.len());
    assert_eq!(text(msg, h.method_span), "GET");
    // Only empty lines so far: wait for more.
    assert_eq!(
        RequestHead::new().parse(b"\r\n\r\n\r\n", &HeadLimits::default()),
        Ok(false)
    );
}

#[test]
fn pipelined_requests_in_one_buffer() {
    // RFC 9112 9.3.2: a client may send several requests without waiting.
    let buf = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloDELETE /c?z HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let limits = HeadLimits::default();
    let mut head = RequestHead::new();
    let mut at = 0;
    let mut seen = Vec::new();
    while at < buf.len() {
        let rest = &buf[at..];
        assert!(head.parse(rest, &limits).unwrap());
        let body = match head.framing {
            Framing::Length(n) => n as usize,
            _ => 0,
        };
        seen.push((
            head.method,
            head.target.of(rest).to_vec(),
            body,
            head.keep_alive,
        ));
        at += head.len + body;
    }
    assert_eq!(
        seen,
        [
            (Method::Get, b"/a".to_vec(), 0, true),
            (Method::Post, b"/b".to_vec(), 5, true),
            (Method::Delete, b"/c?z".to_vec(), 0, false),
        ]
    );
}

#[test]
fn head_is_reset_between_messages() {
    let limits = HeadLimits::default();
    let mut h = RequestHead::new();
    let first = head_of(
        "PUT /a HTTP/1.1",
        &[
            "Host: a",
            "Authorization: Basic eDp5",
            "Content-Type: x",
            "Expect: 100-continue",
            "Content-Length: 1",
        ],
    );
    assert!(h.parse(&first, &limits).unwrap());
    assert!(h.authorization.is_some() && h.content_type.is_some() && h.expect_continue);
    let second = head_of("GET /b HTTP/1.1", &["Host: b"]);
    assert!(h.parse(&second, &limits).unwrap());
    assert_eq!(h.headers.len(), 1);
    assert_eq!(h.authorization, None);
    assert_eq!(h.content_type, None);
    assert!(!h.expect_continue);
    assert_eq!(h.framing, Framing::None);
    assert_eq!(h.counted_len, second.len());
}

#[test]
fn header_lookup_is_case_insensitive_and_first_wins() {
    let msg = head_of(
        "GET / HTTP/1.1",
        &["Host: a", "X-Thing: one", "x-thing: two", "Empty:"],
    );
    let h = req(&msg).unwrap();
    assert_eq!(h.header(&msg, b"X-THING"), Some(&b"one"[..]));
    assert_eq!(h.header(&msg, b"empty"), Some(&b""[..]));
    assert_eq!(h.header(&msg, b"missing"), None);
}

#[test]
fn header_values_are_trimmed_and_keep_case() {
    // RFC 9112 5.1: OWS around the value is not part of it.
    let msg = b"GET / HTTP/1.1\r\nHost:\t a \t\r\nX-Mixed-Case:  Some Value  \r\n\r\n";
    let h = req(msg).unwrap();
    assert_eq!(text(msg, h.headers[0].value), "a");
    assert_eq!(text(msg, h.headers[1].name), "X-Mixed-Case");
    assert_eq!(text(msg, h.headers[1].value), "Some Value");
}

#[test]
fn empty_host_is_allowed() {
    // RFC 9112 3.2: a client sends an empty Host when the URI has no authority.
    let msg = head_of("GET / HTTP/1.1", &["Host:"]);
    let h = req(&msg).unwrap();
    assert_eq!(h.host.map(|s| s.len()), Some(0));
}
