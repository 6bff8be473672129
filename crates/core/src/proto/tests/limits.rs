//! Head size and header count limits at N and N+1 (spec 8: request headers over 16KB,
//! authentication headers not counted: 413).

use super::*;

/// A request head of exactly `counted` bytes without Authorization lines, plus `auth`
/// (a complete Authorization line with CRLF, or empty).
fn head_sized(counted: usize, auth: &str) -> Vec<u8> {
    let fixed = head_of("GET /i/_search HTTP/1.1", &["Host: a", "X-Pad: "]).len();
    let pad = "p".repeat(counted - fixed);
    let mut msg =
        format!("GET /i/_search HTTP/1.1\r\nHost: a\r\n{auth}X-Pad: {pad}\r\n\r\n").into_bytes();
    msg.shrink_to_fit();
    assert_eq!(msg.len(), counted + auth.len());
    msg
}

fn auth_line(len: usize) -> String {
    let fixed = "Authorization: Basic \r\n".len();
    format!("Authorization: Basic {}\r\n", "Q".repeat(len - fixed))
}

#[test]
fn head_of_exactly_16kb_is_accepted() {
    // spec 8: 16KB headers; N = 16384 passes.
    let msg = head_sized(16 * 1024, "");
    let h = req(&msg).unwrap();
    assert_eq!(h.len, 16 * 1024);
    assert_eq!(h.counted_len, 16 * 1024);
}

#[test]
fn head_of_16kb_plus_one_is_too_large() {
    // spec 8: N + 1 = 16385 is refused (413), once the head is complete.
    let msg = head_sized(16 * 1024 + 1, "");
    assert_eq!(req(&msg).unwrap_err(), ProtoError::HeadTooLarge);
}

#[test]
fn authorization_lines_are_not_counted() {
    // spec 8: authentication headers are not counted in the 16KB.
    let auth = auth_line(6000);
    let msg = head_sized(16 * 1024, &auth);
    let h = req(&msg).unwrap();
    assert_eq!(h.len, 16 * 1024 + 6000);
    assert_eq!(h.counted_len, 16 * 1024);
    assert_eq!(
        h.authorization.unwrap().len(),
        6000 - "Authorization: Basic \r\n".len() + 6
    );
    let msg = head_sized(16 * 1024 + 1, &auth);
    assert_eq!(req(&msg).unwrap_err(), ProtoError::HeadTooLarge);
}

#[test]
fn counted_len_is_exact_with_odd_authorization_lines() {
    // The whole line counts: name, colon, OWS, value, trailing OWS, CRLF; any case.
    let auth = "authorization:\t Basic eDp5 \t\r\n";
    let msg = format!("GET / HTTP/1.1\r\nHost: a\r\n{auth}Accept: */*\r\n\r\n");
    let h = req(msg.as_bytes()).unwrap();
    assert_eq!(h.len, msg.len());
    assert_eq!(h.counted_len, msg.len() - auth.len());
    assert_eq!(text(msg.as_bytes(), h.authorization.unwrap()), "Basic eDp5");
    // An empty Authorization line is counted out too.
    let auth = "Authorization:\r\n";
    let msg = format!("GET / HTTP/1.1\r\nHost: a\r\n{auth}\r\n");
    let h = req(msg.as_bytes()).unwrap();
    assert_eq!(h.counted_len, msg.len() - auth.len());
}

#[test]
fn whole_head_at_max_head_plus_max_auth() {
    // The Authorization room is max_auth: counted 16384 + 8192 of Authorization = N.
    let limits = HeadLimits::default();
    let msg = head_sized(limits.max_head, &auth_line(limits.max_auth));
    assert_eq!(msg.len(), limits.window());
    assert!(req(&msg).is_ok());
    // N + 1.
    let msg = head_sized(limits.max_head, &auth_line(limits.max_auth + 1));
    assert_eq!(req(&msg).unwrap_err(), ProtoError::HeadTooLarge);
}

#[test]
fn partial_head_limit_at_n_and_n_plus_one() {
    // Without the end of the head: wait up to max_head + max_auth bytes, refuse beyond.
    let limits = HeadLimits::default();
    let mut buf = b"GET / HTTP/1.1\r\nHost: a\r\nX-Pad: ".to_vec();
    buf.resize(limits.window(), b'p');
    assert_eq!(RequestHead::new().parse(&buf, &limits), Ok(false));
    buf.push(b'p');
    assert_eq!(
        RequestHead::new().parse(&buf, &limits),
        Err(ProtoError::HeadTooLarge)
    );
    // Leading empty lines count too.
    let buf = b"\r\n".repeat(limits.window() / 2 + 1);
    assert_eq!(
        RequestHead::new().parse(&buf, &limits),
        Err(ProtoError::HeadTooLarge)
    );
}

#[test]
fn small_limits_at_n_and_n_plus_one() {
    let limits = HeadLimits {
        max_head: 100,
        max_auth: 40,
        max_headers: 8,
    };
    let msg = head_sized(100, "");
    assert!(parse_request_split(&msg, &limits).is_ok());
    let msg = head_sized(101, "");
    assert_eq!(
        parse_request_split(&msg, &limits).unwrap_err(),
        ProtoError::HeadTooLarge
    );
    let msg = head_sized(100, &auth_line(40));
    assert_eq!(parse_request_split(&msg, &limits).unwrap().counted_len, 100);
    let msg = head_sized(100, &auth_line(41));
    assert_eq!(
        parse_request_split(&msg, &limits).unwrap_err(),
        ProtoError::HeadTooLarge
    );
}

fn with_headers(n: usize) -> Vec<u8> {
    let mut lines = vec!["Host: a".to_string()];
    lines.extend((1..n).map(|i| format!("X-H{i}: v")));
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    head_of("GET / HTTP/1.1", &refs)
}

#[test]
fn header_count_at_n_and_n_plus_one() {
    let limits = HeadLimits::default();
    let h = req(&with_headers(limits.max_headers)).unwrap();
    assert_eq!(h.headers.len(), limits.max_headers);
    assert_eq!(
        req(&with_headers(limits.max_headers + 1)).unwrap_err(),
        ProtoError::TooManyHeaders
    );
    let limits = HeadLimits {
        max_headers: 3,
        ..HeadLimits::default()
    };
    assert!(parse_request_split(&with_headers(3), &limits).is_ok());
    assert_eq!(
        parse_request_split(&with_headers(4), &limits).unwrap_err(),
        ProtoError::TooManyHeaders
    );
}

#[test]
fn header_count_is_capped_at_256() {
    let limits = HeadLimits {
        max_head: 64 * 1024,
        max_auth: 0,
        max_headers: 10_000,
    };
    let mut h = RequestHead::new();
    assert!(h.parse(&with_headers(256), &limits).unwrap());
    assert_eq!(
        h.parse(&with_headers(257), &limits),
        Err(ProtoError::TooManyHeaders)
    );
}

#[test]
fn response_head_limit_at_n_and_n_plus_one() {
    let limits = HeadLimits {
        max_head: 60,
        max_auth: 4,
        max_headers: 8,
    };
    let fixed = "HTTP/1.1 200 OK\r\nX-Pad: \r\n\r\n".len();
    let msg = format!(
        "HTTP/1.1 200 OK\r\nX-Pad: {}\r\n\r\n",
        "p".repeat(64 - fixed)
    );
    assert_eq!(msg.len(), 64);
    assert_eq!(
        ResponseHead::new().parse(msg.as_bytes(), Method::Get, &limits),
        Ok(true)
    );
    let msg = format!(
        "HTTP/1.1 200 OK\r\nX-Pad: {}\r\n\r\n",
        "p".repeat(65 - fixed)
    );
    assert_eq!(
        ResponseHead::new().parse(msg.as_bytes(), Method::Get, &limits),
        Err(ProtoError::HeadTooLarge)
    );
}
