//! End-to-end: the size limits of spec 8 and 7 (413 Request Too Large) at N and N+1: the
//! 16KB head not counting Authorization, the body limit known from Content-Length (refused
//! before any byte is forwarded) or from a chunked body's running count, and `_bulk` with
//! more than `max_bulk_actions` actions. A refused body never reaches the upstream as a
//! complete request: the mock sees no request at all, or a cut one.

use crate::support::edge;

use edge::{basic, start, start_with, Conn, Mock, Req, Server, HOST, PASS, USER};

/// A GET whose head, not counting the Authorization line, is exactly `counted` bytes;
/// `auth_value` is the Authorization value sent.
fn head_of(counted: usize, auth_value: &str) -> Vec<u8> {
    let start = format!("GET /idx/_search HTTP/1.1\r\nHost: {HOST}\r\n");
    let auth = format!("Authorization: {auth_value}\r\n");
    let fill_prefix = "X-Fill: ";
    let fixed = start.len() + fill_prefix.len() + 2 + 2; // fill line CRLF, final CRLF
    let fill = "f".repeat(counted - fixed);
    let head = format!("{start}{auth}{fill_prefix}{fill}\r\n\r\n");
    assert_eq!(head.len() - auth.len(), counted);
    head.into_bytes()
}

fn assert_413(r: &edge::Response) {
    assert_eq!(r.status, 413, "{}", r.text());
    r.assert_es_error(413);
}

/// Asserts that nothing complete reached the upstream once the edge let go of its
/// connections: no request recorded, at most cut ones.
fn assert_nothing_complete(mock: &Mock, what: &str) {
    mock.wait_all_closed();
    let reqs = mock.requests();
    assert!(
        reqs.is_empty(),
        "{what}: the upstream received a complete request: {:?}",
        reqs.iter()
            .map(|r| (&r.target, r.body.len()))
            .collect::<Vec<_>>()
    );
}

// spec 8: request headers over 16KB (authentication headers not counted): 413. A head of
// exactly 16384 counted bytes passes even with an Authorization line on top; 16385 does
// not; a long Authorization header is not what makes a head too large.
#[test]
fn head_limit_is_16kb_not_counting_authorization() {
    let (mock, server) = start();
    let good = basic(USER, PASS);
    for tls in [false, true] {
        let conn = || if tls { server.tls(HOST) } else { server.conn() };
        let mut c = conn();
        c.send(&head_of(16 * 1024, &good));
        let r = c.response();
        assert_eq!(r.status, 200, "16384 counted bytes pass (tls={tls})");

        let mut c = conn();
        c.send(&head_of(16 * 1024 + 1, &good));
        assert_413(&c.response());
        assert!(c.is_closed());

        // 6KB of Authorization on a 16KB head: not 413 (the credentials are wrong: 401).
        let long = format!("Basic {}", "QUFB".repeat(1536));
        let mut c = conn();
        c.send(&head_of(16 * 1024, &long));
        let r = c.response();
        r.assert_es_error(401);
    }
    assert_eq!(mock.requests().len(), 2);
}

// spec 8: the body limit at N and N+1, from Content-Length: N passes whole; N+1 is refused
// from the head alone, before any body byte is sent and with no upstream connection.
#[test]
fn content_length_body_limit_at_n_and_n_plus_one() {
    let (mock, server) = start_with(|s| s.edge("max_body", "\"64kb\""));
    let n = 64 * 1024;
    let mut c = server.conn();
    let over = server.req("PUT", "/idx/_doc/1").body(vec![b'b'; n + 1]);
    c.send(&over.head_bytes()); // the body is never sent
    assert_413(&c.response());
    assert!(c.is_closed());
    assert_eq!(
        mock.connections(),
        0,
        "refused before anything was forwarded"
    );

    // With Expect: 100-continue the 413 comes instead of the 100.
    let mut c = server.conn();
    c.send(&over.clone().header("Expect", "100-continue").head_bytes());
    assert_413(&c.response());

    let at = server.req("PUT", "/idx/_doc/1").body(vec![b'b'; n]);
    let r = server.send(&at);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(mock.requests()[0].body.len(), n);
    assert_eq!(mock.requests().len(), 1);
}

// spec 8, 7: with the real default of 40MB, Content-Length 41,943,041 is refused before any
// byte is forwarded; 41,943,040 is let through (its body is not sent: the upstream then
// sees a cut request, never a complete one).
#[test]
fn default_40mb_limit_from_content_length() {
    let (mock, server) = start();
    let head = |len: u64| {
        format!(
            "PUT /idx/_doc/1 HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: {}\r\nContent-Length: {len}\r\n\r\n",
            basic(USER, PASS)
        )
        .into_bytes()
    };
    let mut c = server.conn();
    c.send(&head(41_943_041));
    let r = c.response();
    assert_413(&r);
    assert!(
        r.text().contains("41943040"),
        "the limit is named: {}",
        r.text()
    );
    assert_eq!(mock.connections(), 0);

    // At the limit the request is admitted: the edge starts forwarding it.
    let mut c = server.conn();
    c.send(&head(41_943_040));
    c.send(&[b'z'; 1000]);
    assert!(mock.wait_until(std::time::Duration::from_secs(10), |v| v.connections() == 1));
    drop(c);
    assert_nothing_complete(&mock, "a cut 40MB body");
}

/// Sends `req` and reads the answer, ignoring a send failing because the edge closed early.
fn send_tolerant(server: &Server, req: &Req) -> edge::Response {
    let mut c: Conn = server.conn();
    let _ = c.try_send(&req.bytes());
    c.response()
}

// spec 8, issue 2: a chunked body is counted while it streams: N bytes pass, N+1 get 413
// and the upstream request is abandoned unterminated (never complete at the upstream).
#[test]
fn chunked_body_limit_at_n_and_n_plus_one() {
    let (mock, server) = start_with(|s| s.edge("max_body", "\"64kb\""));
    let n = 64 * 1024;
    for piece in [1000, n + 1] {
        let over = server
            .req("POST", "/idx/_doc")
            .body(vec![b'c'; n + 1])
            .chunked(piece);
        assert_413(&send_tolerant(&server, &over));
    }
    // A large body over the limit: most of it streams upstream before the count passes N.
    let big = server
        .req("POST", "/idx/_doc")
        .body(vec![b'c'; 300_000])
        .chunked(8192);
    assert_413(&send_tolerant(&server, &big));
    assert_nothing_complete(&mock, "chunked bodies over the limit");
    for cut in mock.cuts() {
        assert!(
            cut.body_received <= n,
            "more than the limit went upstream: {cut:?}"
        );
    }

    let at = server
        .req("POST", "/idx/_doc")
        .body(vec![b'c'; n])
        .chunked(1000);
    assert_eq!(server.send(&at).status, 200);
    assert_eq!(mock.requests().len(), 1);
    assert_eq!(mock.requests()[0].body.len(), n);
}

/// A `_bulk` body of `actions` index actions (each with a source line of `source` bytes),
/// plus `deletes` delete actions (no source line).
fn bulk_body(actions: usize, deletes: usize, source: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..actions {
        out.extend_from_slice(
            format!("{{\"index\":{{\"_index\":\"idx\",\"_type\":\"doc\",\"_id\":\"{i}\"}}}}\n")
                .as_bytes(),
        );
        out.extend_from_slice(format!("{{\"f\":\"{}\"}}\n", "v".repeat(source)).as_bytes());
    }
    for i in 0..deletes {
        out.extend_from_slice(
            format!("{{\"delete\":{{\"_index\":\"idx\",\"_id\":\"d{i}\"}}}}\n").as_bytes(),
        );
    }
    out
}

fn bulk(server: &Server, body: Vec<u8>, chunked: Option<usize>) -> Req {
    let r = server
        .req("POST", "/_bulk")
        .header("Content-Type", "application/x-ndjson")
        .body(body);
    match chunked {
        Some(p) => r.chunked(p),
        None => r,
    }
}

// spec 7 (too many documents in one bulk call: 413), issue 2: with max_bulk_actions = 5,
// six actions are refused, whether the body is small, large (partly streamed before the
// sixth action is seen) or chunked, and nothing complete reaches the upstream; exactly
// five pass (delete actions, without a source line, count too).
#[test]
fn bulk_action_limit_at_n_and_n_plus_one() {
    let (mock, server) = start_with(|s| s.bulk_actions(5));
    let cases = [
        ("small", bulk_body(6, 0, 10), None),
        ("large", bulk_body(6, 0, 20_000), None),
        ("chunked", bulk_body(6, 0, 20_000), Some(5000)),
        ("deletes", bulk_body(3, 3, 10), None),
        ("index path", bulk_body(6, 0, 10), None),
    ];
    for (name, body, chunked) in cases {
        let mut req = bulk(&server, body, chunked);
        if name == "index path" {
            req.target = "/idx/doc/_bulk?refresh=true".into();
        }
        let r = send_tolerant(&server, &req);
        assert_413(&r);
        assert!(r.text().contains("5 actions"), "{name}: {}", r.text());
    }
    assert_nothing_complete(&mock, "bulk requests over the action limit");

    for (body, chunked) in [
        (bulk_body(5, 0, 20_000), None),
        (bulk_body(5, 0, 10), Some(7)),
        (bulk_body(2, 3, 10), None),
    ] {
        let len = body.len();
        let r = server.send(&bulk(&server, body, chunked));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(mock.requests().last().unwrap().body.len(), len);
    }
    assert_eq!(mock.requests().len(), 3);
}

// spec 8 (request headers over the limit: 413): a head with more header fields than the
// edge keeps (128) is refused like an oversized one; 100 fields pass.
#[test]
fn too_many_header_fields_is_413() {
    let (mock, server) = start();
    let with = |n: usize| {
        (0..n).fold(server.req("GET", "/idx/_search"), |r, i| {
            r.header(&format!("X-H{i}"), "v")
        })
    };
    assert_eq!(server.send(&with(100)).status, 200);
    let mut c = server.conn();
    c.send(&with(200).bytes());
    assert_413(&c.response());
    assert!(c.is_closed());
    assert_eq!(mock.requests().len(), 1);
}

// spec 8, issue 2: bodies under the limit are streamed through whole however they arrive.
// A multi-MB body (a plain one and a counted `_bulk` one) sent in pieces, each sent once
// the upstream has the one before (so the edge waits for more in the middle of the body),
// ending in a 1-byte piece with the next request pipelined right behind it: both are
// answered at once and the upstream gets every byte. (While a large body streams in, the
// edge asks the kernel to wake it only when its buffer can be filled or the body is all
// there; that must never hold a short piece, a short last piece or the next head.)
#[test]
fn large_bodies_in_pieces_arrive_whole_and_the_next_request_is_not_held() {
    let (mock, server) = start_with(|s| s.edge("body_timeout", "\"10s\""));
    let big: Vec<u8> = (0..3_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let cases = [
        server.req("PUT", "/idx/_doc/1").body(big),
        bulk(&server, bulk_body(2_000, 0, 1_400), None),
    ];
    for req in cases {
        let body = req.body_bytes();
        let n = body.len();
        let mut c = server.conn();
        let started = std::time::Instant::now();
        let base = mock.body_bytes();
        c.send(&req.head_bytes());
        let mut sent = 0;
        for piece in [
            &body[..n / 2],
            &body[n / 2..n - 1000],
            &body[n - 1000..n - 1],
        ] {
            c.send(piece);
            sent += piece.len();
            let arrived = mock.wait_until(std::time::Duration::from_secs(10), |v| {
                v.body_bytes() >= base + sent
            });
            assert!(arrived, "the edge forwarded the first {sent} body bytes");
        }
        let mut last = vec![body[n - 1]];
        last.extend_from_slice(&server.req("GET", "/after").bytes());
        c.send(&last);
        let r = c.response();
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(c.response().status, 200, "the pipelined request");
        let took = started.elapsed();
        assert!(
            took < std::time::Duration::from_secs(5),
            "waited for a timeout: {took:?}"
        );
        let reqs = mock.requests();
        let got = &reqs[reqs.len() - 2];
        assert_eq!(got.target, req.target);
        assert!(
            got.body == body,
            "the body arrived whole ({} of {n} bytes)",
            got.body.len()
        );
        assert_eq!(reqs.last().unwrap().target, "/after");

        // All at once, then (after the answer) a small request on the same connection.
        c.send(&req.bytes());
        assert_eq!(c.response().status, 200);
        let started = std::time::Instant::now();
        c.send(&server.req("GET", "/later").bytes());
        assert_eq!(c.response().status, 200, "the next request");
        let took = started.elapsed();
        // Held, it would wait for the 10s body timeout; half of that is room for a slow
        // machine.
        assert!(took < std::time::Duration::from_secs(5), "held: {took:?}");
        let reqs = mock.requests();
        assert!(reqs[reqs.len() - 2].body == body);
    }
}

// issue 2 (slow clients are cut by the body read timeout, 408): a client that keeps
// sending a large body, only slowly, is not one of them. Here 1.2MB at about 400KB/s
// with a 1s body timeout: every read finds new bytes well within the timeout (a piece
// every 30ms; a stalled test thread has a second before it counts as a slow client), so
// the request passes whole, though a whole 1MB buffer takes the client 2.5 seconds.
#[test]
fn a_slow_but_steady_large_body_is_not_timed_out() {
    let (mock, server) = start_with(|s| s.edge("body_timeout", "\"1s\""));
    let body: Vec<u8> = (0..1_200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let req = server.req("PUT", "/idx/_doc/slow").body(body.clone());
    let mut c = server.conn();
    c.send(&req.head_bytes());
    for piece in body.chunks(12_000) {
        c.send(piece);
        std::thread::sleep(std::time::Duration::from_millis(30));
    }
    let r = c.response();
    assert_eq!(r.status, 200, "{}", r.text());
    let got = mock.requests();
    assert!(got.last().unwrap().body == body, "the body arrived whole");
    // The next request on the connection reads as usual.
    c.send(&server.req("GET", "/next").bytes());
    assert_eq!(c.response().status, 200);
}
