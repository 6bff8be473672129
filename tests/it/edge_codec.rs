//! End-to-end: the edge's HTTP/1.1 codec between real sockets (issue 2): keep-alive and
//! upstream connection reuse, pipelining answered in order, HTTP/1.0, `Expect:
//! 100-continue`, chunked request bodies re-framed upstream, chunked and close-delimited
//! responses to HTTP/1.1 and HTTP/1.0 clients, and every request-smuggling shape refused with
//! 400 and a close, nothing of it reaching the upstream.

use crate::support::edge;

use edge::{start, Conn, Req, Response, HOST, PASS, USER};

fn json_target(r: &Response) -> String {
    r.json()["target"].as_str().expect("mock echo").to_string()
}

// issue 2: keep-alive on the client side; the edge reuses its upstream connection too.
#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let (mock, server) = start();
    for tls in [false, true] {
        let mut c = if tls { server.tls(HOST) } else { server.conn() };
        for i in 0..5 {
            c.send(&server.req("GET", &format!("/k{i}")).bytes());
            let r = c.response();
            assert_eq!(r.status, 200);
            assert!(!r.closes());
            assert_eq!(json_target(&r), format!("/k{i}"));
        }
    }
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 10);
    assert!(
        mock.connections() <= 2,
        "upstream connections are pooled per core: {} for 10 sequential requests",
        mock.connections()
    );
}

// issue 2: several requests in one write are answered in order, even when an earlier one
// is the slowest; bodies of pipelined requests stay with their request.
#[test]
fn pipelined_requests_are_answered_in_order() {
    let (mock, server) = start();
    for tls in [false, true] {
        let mut c = if tls { server.tls(HOST) } else { server.conn() };
        let mut all = Vec::new();
        for i in 0..6 {
            let mut req = server.req("POST", &format!("/p{i}/_search"));
            req = req.mock(&format!("delay={}", (6 - i) * 15));
            if i % 2 == 1 {
                req = req.body(format!("{{\"n\":{i}}}"));
            }
            all.extend(req.bytes());
        }
        c.send(&all);
        for i in 0..6 {
            let r = c.response();
            assert_eq!(r.status, 200);
            let v = r.json();
            assert_eq!(v["target"], format!("/p{i}/_search"), "tls={tls}");
            let want = if i % 2 == 1 {
                format!("{{\"n\":{i}}}").len()
            } else {
                0
            };
            assert_eq!(v["body_len"], want);
        }
    }
    assert_eq!(mock.requests().len(), 12);
}

// RFC 9112 9.3: an HTTP/1.0 client gets an HTTP/1.0 answer and a close, unless it asked
// for keep-alive; a 1.0 request without Host routes by username on the anonymous host.
#[test]
fn http10_clients() {
    let (mock, server) = start();
    let mut c = server.conn();
    c.send(&Req::new("GET", "/old").http10().auth(USER, PASS).bytes());
    let r = c.response();
    assert_eq!((r.status, r.version), (200, 0));
    assert!(c.is_closed(), "HTTP/1.0 without keep-alive closes");

    let mut c = server.conn();
    let ka = server
        .req("GET", "/ka")
        .http10()
        .header("Connection", "keep-alive");
    for _ in 0..2 {
        c.send(&ka.bytes());
        let r = c.response();
        assert_eq!((r.status, r.version), (200, 0));
        assert!(r
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("keep-alive")));
    }
    // The upstream always gets HTTP/1.1.
    assert!(mock.requests().iter().all(|r| r.version == 1));
    assert_eq!(mock.requests().len(), 3);
}

// RFC 9110 10.1.1, issue 2: `Expect: 100-continue` gets an interim 100 once the request is
// admitted, then the body flows; the Expect header itself is not forwarded. A refused
// request gets its error at once instead of a 100 (the body is never needed).
#[test]
fn expect_100_continue() {
    let (mock, server) = start();
    let body = vec![b'x'; 5000];
    let req = server
        .req("PUT", "/idx/_doc/1")
        .header("Expect", "100-continue")
        .body(body.clone());
    let mut c = server.conn();
    c.send(&req.head_bytes());
    let interim = c.response();
    assert_eq!(interim.status, 100);
    c.send(&req.body_bytes());
    let r = c.response();
    assert_eq!(r.status, 200, "{}", r.text());
    let got = &mock.requests()[0];
    assert_eq!(got.body, body);
    assert_eq!(got.count("expect"), 0);

    let bad = req.clone().auth(USER, "wrongpass1");
    let mut c = server.conn();
    c.send(&bad.head_bytes());
    let r = c.response();
    r.assert_es_error(401);
    assert_eq!(mock.requests().len(), 1);
}

// issue 2: a chunked request body is decoded (extensions, trailers) and re-framed upstream.
#[test]
fn chunked_request_bodies_are_reframed() {
    let (mock, server) = start();
    let body: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    // One-byte chunks on a shorter body (debug builds decode ~100k chunks slowly).
    let cases = [
        (&body[..5000], 1usize),
        (&body[..], 7),
        (&body[..], 4096),
        (&body[..], 70_000),
    ];
    for (body, piece) in cases {
        let r = server.send(&server.req("POST", "/idx/_bulk").body(body).chunked(piece));
        assert_eq!(r.status, 200, "piece {piece}: {}", r.text());
    }
    // Extensions and trailers by hand.
    let mut raw = server
        .req("POST", "/idx/_doc")
        .header("Transfer-Encoding", "chunked")
        .head_bytes();
    raw.extend_from_slice(
        b"5;ext=1\r\nhello\r\n6 ; q=\"x\"\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
    );
    let mut c = server.conn();
    c.send(&raw);
    assert_eq!(c.response().status, 200);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 5);
    for (r, (sent, _)) in reqs[..4].iter().zip(cases) {
        assert!(r.chunked, "re-framed as chunked");
        assert_eq!(r.count("content-length"), 0);
        assert_eq!(r.body, sent);
    }
    assert_eq!(reqs[4].body, b"hello world");
}

// issue 2: responses: Content-Length passes, chunked passes to 1.1 and is de-chunked for
// 1.0 (close-delimited), a close-delimited upstream body is chunked for 1.1 (connection
// kept) and close-delimited for 1.0.
#[test]
fn chunked_and_close_delimited_responses() {
    let (_mock, server) = start();
    for tls in [false, true] {
        for resp in ["chunked", "close"] {
            let mut c = if tls { server.tls(HOST) } else { server.conn() };
            let req = server
                .req("GET", "/r")
                .mock(&format!("resp={resp};size=100000"));
            c.send(&req.bytes());
            let r = c.response();
            assert_eq!(r.status, 200);
            assert!(r.chunked, "{resp} to HTTP/1.1 is chunked (tls={tls})");
            assert_eq!(r.body.len(), 100_000);
            assert!(r
                .body
                .iter()
                .enumerate()
                .all(|(i, &b)| b == b'a' + (i % 26) as u8));
            // The client connection is still usable.
            c.send(&server.req("GET", "/after").bytes());
            assert_eq!(c.response().status, 200);

            let mut c = if tls { server.tls(HOST) } else { server.conn() };
            c.send(&req.clone().http10().bytes());
            let r = c.response();
            assert_eq!((r.status, r.version), (200, 0));
            assert!(r.until_close, "{resp} to HTTP/1.0 is close-delimited");
            assert_eq!(r.header("transfer-encoding"), None);
            assert_eq!(r.body.len(), 100_000);
        }
    }
}

/// One smuggling attempt: its head (credentials and Host already in) and a body.
fn smuggling_cases() -> Vec<(&'static str, Vec<u8>)> {
    let auth = edge::basic(USER, PASS);
    let pre = format!("POST /idx/_doc HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: {auth}\r\n");
    let get = format!("GET /smuggled HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: {auth}\r\n\r\n");
    let case = |extra: &str, body: &str| format!("{pre}{extra}\r\n{body}{get}").into_bytes();
    vec![
        ("CL+TE", case("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n")),
        ("TE+CL", case("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "0\r\n\r\n")),
        ("double CL", case("Content-Length: 5\r\nContent-Length: 6\r\n", "hello")),
        ("double equal CL", case("Content-Length: 5\r\nContent-Length: 5\r\n", "hello")),
        ("CL list", case("Content-Length: 5, 5\r\n", "hello")),
        ("CL sign", case("Content-Length: +5\r\n", "hello")),
        ("CL hex", case("Content-Length: 0x5\r\n", "hello")),
        ("TE gzip", case("Transfer-Encoding: gzip\r\n", "hello")),
        ("TE gzip, chunked", case("Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n")),
        ("TE xchunked", case("Transfer-Encoding: xchunked\r\n", "0\r\n\r\n")),
        ("TE twice", case("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n")),
        ("TE in 1.0", format!("POST /idx/_doc HTTP/1.0\r\nHost: {HOST}\r\nAuthorization: {auth}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{get}").into_bytes()),
        ("obs-fold", case("X-A: 1\r\n continued\r\nContent-Length: 5\r\n", "hello")),
        ("obs-fold TE", case("Transfer-Encoding:\r\n chunked\r\n", "0\r\n\r\n")),
        ("bare LF", case("X-A: 1\nContent-Length: 5\r\n", "hello")),
        ("bare CR", case("X-A: 1\rContent-Length: 5\r\n", "hello")),
        ("NUL in value", case("X-A: a\0b\r\nContent-Length: 5\r\n", "hello")),
        ("space before colon", case("Content-Length : 5\r\n", "hello")),
        ("bad chunk size", case("Transfer-Encoding: chunked\r\n", "zz\r\nhello\r\n0\r\n\r\n")),
    ]
}

// issue 2 (request smuggling): ambiguous or forbidden framing is answered 400 and the
// connection is closed; neither the request nor what follows it reaches the upstream.
#[test]
fn smuggling_is_refused_with_400_and_close() {
    let (mock, server) = start();
    for (name, bytes) in smuggling_cases() {
        for tls in [false, true] {
            let mut c: Conn = if tls { server.tls(HOST) } else { server.conn() };
            c.send(&bytes);
            let r = c.response();
            assert_eq!(r.status, 400, "{name} (tls={tls}): {}", r.text());
            r.assert_es_error(400);
            assert!(r.closes(), "{name}: Connection: close");
            assert!(c.is_closed(), "{name}: the edge closes the connection");
        }
    }
    let reached: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| r.target.clone())
        .chain(mock.cuts().iter().map(|c| format!("cut {}", c.target)))
        .collect();
    // A bad chunk is found after the head went upstream: that request must stay cut.
    assert!(
        reached.iter().all(|t| t == "cut /idx/_doc"),
        "reached the upstream: {reached:?}"
    );
}

// issue 31 (one body reader): a bad chunk gets the same answer whether the edge reads the
// body whole before forwarding (an index creation: its shards are counted first) or
// streams it (a document write): 400 with the same error, the connection closed, nothing
// complete upstream. The rows are the codec's own bad-chunk cases (crates/core
// proto/tests/body.rs, where each is also decoded whole and split at every byte).
#[test]
fn a_bad_chunk_gets_one_answer_read_whole_or_streamed() {
    let (mock, server) = start();
    let table: [(&str, &[u8]); 6] = [
        ("size not hex", b"zz\r\nhello\r\n0\r\n\r\n"),
        ("space after size", b"5 \r\nhello\r\n0\r\n\r\n"),
        ("data longer than its size", b"5\r\nhelloX\r\n0\r\n\r\n"),
        ("bare LF after size", b"5\nhello\r\n0\r\n\r\n"),
        (
            "trailer without colon",
            b"5\r\nhello\r\n0\r\nno colon\r\n\r\n",
        ),
        ("size overflow", b"10000000000000000\r\n"),
    ];
    for (name, body) in table {
        let mut answers = Vec::new();
        for (method, target) in [("PUT", "/fresh-idx"), ("POST", "/idx/_doc")] {
            let mut raw = server
                .req(method, target)
                .header("Transfer-Encoding", "chunked")
                .head_bytes();
            raw.extend_from_slice(body);
            let mut c: Conn = server.conn();
            c.send(&raw);
            let r = c.response();
            r.assert_es_error(400);
            assert!(r.closes(), "{name} ({method} {target}): Connection: close");
            assert!(c.is_closed(), "{name} ({method} {target}): closed");
            answers.push(r.json()["error"].clone());
        }
        assert_eq!(answers[0], answers[1], "{name}: whole and streamed agree");
    }
    mock.wait_all_closed();
    let complete: Vec<String> = mock.requests().iter().map(|r| r.target.clone()).collect();
    assert!(
        complete.is_empty(),
        "reached the upstream whole: {complete:?}"
    );
    // Read whole, the body is refused before anything is forwarded; streamed, the head may
    // have gone upstream, and that request stays cut.
    let cut: Vec<String> = mock.cuts().iter().map(|c| c.target.clone()).collect();
    assert!(
        cut.iter().all(|t| t == "/idx/_doc"),
        "cut upstream: {cut:?}"
    );
}

// A pipelined request after a chunked body is parsed from the right place.
#[test]
fn pipelined_request_after_chunked_body() {
    let (mock, server) = start();
    let mut c = server.conn();
    let a = server.req("POST", "/a").body(&b"0123456789"[..]).chunked(3);
    let b = server.req("GET", "/b");
    c.send(&[a.bytes(), b.bytes()].concat());
    assert_eq!(json_target(&c.response()), "/a");
    assert_eq!(json_target(&c.response()), "/b");
    let reqs = mock.requests();
    assert_eq!(reqs[0].body, b"0123456789");
    assert_eq!(reqs.len(), 2);
}

// A refused head after a HEAD request on the same connection is answered in full (with its
// error body), not as if it were the HEAD request.
#[test]
fn refused_head_after_a_head_request_gets_a_body() {
    let (_mock, server) = start();
    let mut c = server.conn();
    c.send(&server.req("HEAD", "/").bytes());
    assert_eq!(c.head_response().status, 200);
    c.send(
        format!("GET / HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
            .as_bytes(),
    );
    let r = c.response();
    r.assert_es_error(400);
}

// RFC 9112 9.6: a client may half-close after sending its request; it still gets the
// answer (when it is not waiting in a queue: see edge_allowance).
#[test]
fn half_closed_client_gets_its_answer() {
    let (_mock, server) = start();
    let mut c = server.conn();
    c.send(&server.req("GET", "/half").bytes());
    c.tcp().shutdown(std::net::Shutdown::Write).unwrap();
    let r = c.response();
    assert_eq!(r.status, 200);
    assert_eq!(json_target(&r), "/half");
}
