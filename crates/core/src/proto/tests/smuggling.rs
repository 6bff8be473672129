//! Request smuggling and malformed heads: each refused case is its own test (issue 2:
//! "400 and close"). Every message is also fed at every split point.

use super::*;

fn smuggling(headers: &[&str]) -> ProtoError {
    req(&head_of("POST /i/_bulk HTTP/1.1", headers)).unwrap_err()
}

fn assert_smuggling(e: ProtoError) {
    assert!(matches!(e, ProtoError::Smuggling(_)), "{e:?}");
}

fn assert_malformed(e: ProtoError) {
    assert!(matches!(e, ProtoError::Malformed(_)), "{e:?}");
}

// RFC 9112 6.1 / 6.3 rule 3: Content-Length with Transfer-Encoding is refused.
#[test]
fn content_length_with_transfer_encoding() {
    assert_smuggling(smuggling(&[
        "Host: a",
        "Content-Length: 5",
        "Transfer-Encoding: chunked",
    ]));
}

#[test]
fn transfer_encoding_before_content_length() {
    assert_smuggling(smuggling(&[
        "Host: a",
        "Transfer-Encoding: chunked",
        "Content-Length: 5",
    ]));
}

#[test]
fn content_length_zero_with_transfer_encoding() {
    assert_smuggling(smuggling(&[
        "Host: a",
        "Content-Length: 0",
        "Transfer-Encoding: chunked",
    ]));
}

// RFC 9112 6.3 rule 5: duplicate or invalid Content-Length is unrecoverable.
#[test]
fn duplicate_content_length_equal() {
    assert_smuggling(smuggling(&[
        "Host: a",
        "Content-Length: 5",
        "Content-Length: 5",
    ]));
}

#[test]
fn duplicate_content_length_different() {
    assert_smuggling(smuggling(&[
        "Host: a",
        "Content-Length: 5",
        "content-length: 6",
    ]));
}

#[test]
fn content_length_list_value() {
    assert_smuggling(smuggling(&["Host: a", "Content-Length: 5, 5"]));
}

#[test]
fn content_length_non_digits() {
    assert_smuggling(smuggling(&["Host: a", "Content-Length: 5a"]));
    assert_smuggling(smuggling(&["Host: a", "Content-Length: abc"]));
    assert_smuggling(smuggling(&["Host: a", "Content-Length: 0x10"]));
    assert_smuggling(smuggling(&["Host: a", "Content-Length: 5 5"]));
    assert_smuggling(smuggling(&["Host: a", "Content-Length: 1.0"]));
}

#[test]
fn content_length_with_sign() {
    assert_smuggling(smuggling(&["Host: a", "Content-Length: +5"]));
    assert_smuggling(smuggling(&["Host: a", "Content-Length: -5"]));
}

#[test]
fn content_length_empty() {
    assert_smuggling(smuggling(&["Host: a", "Content-Length:"]));
    assert_smuggling(smuggling(&["Host: a", "Content-Length:   "]));
}

#[test]
fn content_length_overflow() {
    // u64::MAX + 1.
    assert_smuggling(smuggling(&[
        "Host: a",
        "Content-Length: 18446744073709551616",
    ]));
    assert_smuggling(smuggling(&[
        "Host: a",
        "Content-Length: 99999999999999999999999",
    ]));
}

// RFC 9112 6.3 rule 4 / 7: only a single, final "chunked" is accepted.
#[test]
fn transfer_encoding_gzip_chunked() {
    assert_eq!(
        smuggling(&["Host: a", "Transfer-Encoding: gzip, chunked"]),
        ProtoError::UnsupportedTransferCoding
    );
}

#[test]
fn transfer_encoding_chunked_twice_in_one_line() {
    assert_eq!(
        smuggling(&["Host: a", "Transfer-Encoding: chunked, chunked"]),
        ProtoError::UnsupportedTransferCoding
    );
}

#[test]
fn transfer_encoding_chunked_in_two_lines() {
    assert_eq!(
        smuggling(&[
            "Host: a",
            "Transfer-Encoding: chunked",
            "Transfer-Encoding: chunked"
        ]),
        ProtoError::UnsupportedTransferCoding
    );
}

#[test]
fn transfer_encoding_identity() {
    assert_eq!(
        smuggling(&["Host: a", "Transfer-Encoding: identity"]),
        ProtoError::UnsupportedTransferCoding
    );
}

#[test]
fn transfer_encoding_chunked_not_exact() {
    for v in [
        "chunked,",
        "xchunked",
        "chunked;q=1",
        "chunk",
        "\"chunked\"",
    ] {
        assert_eq!(
            smuggling(&["Host: a", &format!("Transfer-Encoding: {v}")]),
            ProtoError::UnsupportedTransferCoding,
            "{v}"
        );
    }
}

#[test]
fn transfer_encoding_chunked_any_case_with_ows() {
    let msg = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \t ChUnKeD \t\r\n\r\n";
    assert_eq!(req(msg).unwrap().framing, Framing::Chunked);
}

// RFC 9112 6.1: Transfer-Encoding in an HTTP/1.0 message means faulty framing.
#[test]
fn transfer_encoding_in_http10() {
    let msg = head_of("POST / HTTP/1.0", &["Transfer-Encoding: chunked"]);
    assert_smuggling(req(&msg).unwrap_err());
}

// RFC 9112 5.2: obs-fold is refused in requests.
#[test]
fn obs_fold_with_space() {
    let msg = b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n";
    assert_smuggling(req(msg).unwrap_err());
}

#[test]
fn obs_fold_with_tab() {
    let msg = b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\t5\r\n\r\n";
    assert_smuggling(req(msg).unwrap_err());
}

// RFC 9112 2.2: whitespace between the start-line and the first field line.
#[test]
fn whitespace_before_first_header() {
    let msg = b"GET / HTTP/1.1\r\n Host: a\r\n\r\n";
    assert_smuggling(req(msg).unwrap_err());
}

// RFC 9112 2.2: bare CR and (here) bare LF line endings are refused.
#[test]
fn bare_lf_after_request_line() {
    assert_smuggling(req(b"GET / HTTP/1.1\nHost: a\r\n\r\n").unwrap_err());
}

#[test]
fn bare_lf_after_header() {
    assert_smuggling(req(b"GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n").unwrap_err());
}

#[test]
fn bare_lf_head_end() {
    // A head that httparse alone would accept; refused as soon as the LF arrives.
    let msg = b"GET / HTTP/1.1\nHost: a\n\n";
    assert_smuggling(req(msg).unwrap_err());
    let e = RequestHead::new().parse(b"GET / HTTP/1.1\n", &HeadLimits::default());
    assert!(matches!(e, Err(ProtoError::Smuggling(_))));
}

#[test]
fn bare_lf_leading_empty_line() {
    assert_smuggling(req(b"\nGET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap_err());
}

#[test]
fn bare_cr_in_header_value() {
    assert_smuggling(req(b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n").unwrap_err());
}

#[test]
fn bare_cr_in_request_line() {
    assert_smuggling(req(b"GET /a\rb HTTP/1.1\r\nHost: a\r\n\r\n").unwrap_err());
}

#[test]
fn bare_cr_as_line_end() {
    assert_smuggling(req(b"GET / HTTP/1.1\rHost: a\r\n\r\n").unwrap_err());
}

// RFC 9110 5.5: NUL and other control bytes are invalid in field values, names and targets.
#[test]
fn nul_in_header_value() {
    assert_malformed(req(b"GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n").unwrap_err());
}

#[test]
fn nul_in_header_name() {
    assert_malformed(req(b"GET / HTTP/1.1\r\nHost: a\r\nX\0Y: b\r\n\r\n").unwrap_err());
}

#[test]
fn nul_in_target() {
    assert_malformed(req(b"GET /a\0b HTTP/1.1\r\nHost: a\r\n\r\n").unwrap_err());
}

#[test]
fn nul_in_method() {
    assert_malformed(req(b"G\0T / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap_err());
}

#[test]
fn control_bytes_in_head() {
    for c in [0x01u8, 0x08, 0x0b, 0x0c, 0x1b, 0x1f, 0x7f] {
        let mut value = b"GET / HTTP/1.1\r\nHost: a\r\nX: a_b\r\n\r\n".to_vec();
        value[29] = c;
        assert_malformed(req(&value).unwrap_err());
        let mut target = b"GET /a_b HTTP/1.1\r\nHost: a\r\n\r\n".to_vec();
        target[6] = c;
        assert_malformed(req(&target).unwrap_err());
    }
}

// RFC 9112 5.1: no whitespace between the field name and the colon.
#[test]
fn space_before_colon() {
    assert_malformed(req(b"GET / HTTP/1.1\r\nHost : a\r\n\r\n").unwrap_err());
}

#[test]
fn tab_before_colon() {
    assert_malformed(req(b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length\t: 5\r\n\r\n").unwrap_err());
}

#[test]
fn empty_header_name() {
    assert_malformed(req(b"GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n").unwrap_err());
}

// RFC 9112 3.2: more than one Host, or none in HTTP/1.1, is a 400.
#[test]
fn duplicate_host() {
    let msg = head_of("GET / HTTP/1.1", &["Host: a.example", "Host: b.example"]);
    assert_malformed(req(&msg).unwrap_err());
}

#[test]
fn duplicate_host_equal() {
    let msg = head_of("GET / HTTP/1.1", &["Host: a.example", "host: a.example"]);
    assert_malformed(req(&msg).unwrap_err());
}

#[test]
fn missing_host_http11() {
    assert_malformed(req(&head_of("GET / HTTP/1.1", &["X: y"])).unwrap_err());
}

#[test]
fn missing_host_http11_absolute_form() {
    // RFC 9112 3.2: the Host line is required even with an absolute-form target.
    assert_malformed(req(&head_of("GET http://a.example/ HTTP/1.1", &[])).unwrap_err());
}

#[test]
fn invalid_host_value() {
    for v in ["a/b", "a@b", "a b", "a\\b", "a?b", "a#b", "\u{e9}.example"] {
        let msg = head_of("GET / HTTP/1.1", &[&format!("Host: {v}")]);
        assert_malformed(req(&msg).unwrap_err());
    }
}

// Credentials must be unambiguous: the edge authenticates one Authorization only.
#[test]
fn duplicate_authorization() {
    let msg = head_of(
        "GET / HTTP/1.1",
        &[
            "Host: a",
            "Authorization: Basic YTpi",
            "authorization: Basic Yzpk",
        ],
    );
    assert_malformed(req(&msg).unwrap_err());
}

#[test]
fn garbage_request_line() {
    assert_malformed(req(b"GET/ HTTP/1.1\r\nHost: a\r\n\r\n").unwrap_err());
    assert_malformed(req(b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap_err());
    assert_malformed(req(b" GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap_err());
    assert_malformed(req(b"GET / HTTP/1.1 \r\nHost: a\r\n\r\n").unwrap_err());
}
