//! Response heads from an upstream: framing by RFC 9112 6.3, keep-alive, interim 1xx, and
//! the framing errors the edge turns into 502.

use super::*;

fn res(msg: &[u8]) -> Result<ResponseHead, ProtoError> {
    parse_response_split(msg, Method::Get)
}

#[test]
fn ok_with_content_length_at_every_split() {
    let msg = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\nX-Elastic-Product: Elasticsearch\r\n\r\n";
    let h = res(msg).unwrap();
    assert_eq!(h.status, 200);
    assert_eq!(text(msg, h.reason), "OK");
    assert_eq!(h.version, Version::Http11);
    assert_eq!(h.framing, Framing::Length(17));
    assert_eq!(h.content_length, Some(17));
    assert!(h.keep_alive);
    assert_eq!(h.len, msg.len());
    assert_eq!(h.headers.len(), 3);
    assert_eq!(
        h.header(msg, b"x-elastic-product"),
        Some(&b"Elasticsearch"[..])
    );
}

#[test]
fn reason_phrase_is_kept_whole_or_empty() {
    let msg = b"HTTP/1.1 404 Not Found Here\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(text(msg, res(msg).unwrap().reason), "Not Found Here");
    // RFC 9112 4: the reason phrase may be empty, and httparse allows no space at all.
    let msg = b"HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n";
    assert_eq!(res(msg).unwrap().reason.len(), 0);
    let msg = b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(res(msg).unwrap().reason.len(), 0);
}

#[test]
fn chunked_response() {
    let msg = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    let h = res(msg).unwrap();
    assert_eq!(h.framing, Framing::Chunked);
    assert!(h.keep_alive);
}

#[test]
fn no_length_means_until_close() {
    // RFC 9112 6.3 rule 8: read until the connection closes; it cannot persist.
    let msg = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n";
    let h = res(msg).unwrap();
    assert_eq!(h.framing, Framing::UntilClose);
    assert!(!h.keep_alive);
}

#[test]
fn bodiless_statuses_and_head() {
    // RFC 9112 6.3 rule 1: HEAD responses, 1xx, 204 and 304 never have a body.
    let msg = b"HTTP/1.1 204 No Content\r\n\r\n";
    let h = res(msg).unwrap();
    assert_eq!(h.framing, Framing::None);
    assert!(h.keep_alive);
    let msg = b"HTTP/1.1 304 Not Modified\r\nContent-Length: 120\r\n\r\n";
    let h = res(msg).unwrap();
    assert_eq!((h.framing, h.content_length), (Framing::None, Some(120)));
    let msg = b"HTTP/1.1 200 OK\r\nContent-Length: 120\r\n\r\n";
    let h = parse_response_split(msg, Method::Head).unwrap();
    assert_eq!((h.framing, h.content_length), (Framing::None, Some(120)));
    let msg = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(
        parse_response_split(msg, Method::Head).unwrap().framing,
        Framing::None
    );
}

#[test]
fn interim_100_then_final_in_one_buffer() {
    // RFC 9110 15.2: interim responses precede the final one; the caller skips them.
    let buf = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}";
    let limits = HeadLimits::default();
    let mut h = ResponseHead::new();
    assert!(h.parse(buf, Method::Put, &limits).unwrap());
    assert_eq!((h.status, h.framing), (100, Framing::None));
    let rest = &buf[h.len..];
    assert!(h.parse(rest, Method::Put, &limits).unwrap());
    assert_eq!((h.status, h.framing), (201, Framing::Length(2)));
    assert_eq!(&rest[h.len..], b"{}");
}

#[test]
fn http10_response_keep_alive() {
    let msg = b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n";
    let h = res(msg).unwrap();
    assert_eq!(h.version, Version::Http10);
    assert!(!h.keep_alive);
    let msg = b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n";
    assert!(res(msg).unwrap().keep_alive);
    let msg = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    assert!(!res(msg).unwrap().keep_alive);
}

#[test]
fn content_length_with_transfer_encoding_is_refused() {
    let msg = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert!(matches!(res(msg), Err(ProtoError::Smuggling(_))));
}

#[test]
fn bad_content_length_is_refused() {
    for v in ["3, 3", "-1", "", "x", "18446744073709551616"] {
        let msg = format!("HTTP/1.1 200 OK\r\nContent-Length: {v}\r\n\r\n");
        assert!(
            matches!(res(msg.as_bytes()), Err(ProtoError::Smuggling(_))),
            "{v}"
        );
    }
    let msg = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n";
    assert!(matches!(res(msg), Err(ProtoError::Smuggling(_))));
}

#[test]
fn unsupported_transfer_coding_is_refused() {
    let msg = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";
    assert_eq!(res(msg).unwrap_err(), ProtoError::UnsupportedTransferCoding);
    let msg = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n";
    assert_eq!(res(msg).unwrap_err(), ProtoError::UnsupportedTransferCoding);
}

#[test]
fn transfer_encoding_in_http10_response_is_refused() {
    // RFC 9112 6.1: treat as faulty framing.
    let msg = b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert!(matches!(res(msg), Err(ProtoError::Smuggling(_))));
}

#[test]
fn malformed_status_lines() {
    for msg in [
        &b"HTTP/1.1 20 OK\r\n\r\n"[..],
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 099 Odd\r\n\r\n",
        b"HTTP/1.1 abc OK\r\n\r\n",
        b"HTTX/1.1 200 OK\r\n\r\n",
        b"HTTP/1.1 200 O\x01K\r\n\r\n",
    ] {
        assert!(matches!(res(msg), Err(ProtoError::Malformed(_))), "{msg:?}");
    }
    assert_eq!(
        res(b"HTTP/2.0 200 OK\r\n\r\n").unwrap_err(),
        ProtoError::UnsupportedVersion
    );
}

#[test]
fn obs_fold_and_bare_lf_in_response_are_refused() {
    let msg = b"HTTP/1.1 200 OK\r\nX-A: b\r\n c\r\nContent-Length: 0\r\n\r\n";
    assert!(matches!(res(msg), Err(ProtoError::Smuggling(_))));
    let msg = b"HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n";
    assert!(matches!(res(msg), Err(ProtoError::Smuggling(_))));
}
