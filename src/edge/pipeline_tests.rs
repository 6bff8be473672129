//! The request path in one process: a connection (`session::serve`) over an in-memory
//! duplex, a core built from a configuration text, and a scripted upstream on loopback.
//! No `searchgate` process, no fixed sleep: each step waits for bytes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::core::{Core, Limits, Shared};
use super::duplex::{duplex, Peer};
use super::session;
use crate::config::Config;
use crate::metrics::MetricsHub;
use crate::registry::{Registry, Snapshot};
use crate::tenancy::{Prefix, TenancyKey};

const HOST: &str = "acme-7f3k.us-east-1.example.test";

/// An upstream that answers the requests it gets, in order over all its connections, with
/// the scripted answers, and records their heads (request line and headers).
struct Upstream {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
}

fn upstream(answers: Vec<Vec<u8>>) -> Upstream {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let answers = Arc::new(Mutex::new(answers.into_iter()));
    let seen = heads.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut conn) = conn else { return };
            let (seen, answers) = (seen.clone(), answers.clone());
            std::thread::spawn(move || {
                while let Some(head) = read_request(&mut conn) {
                    seen.lock().unwrap().push(head);
                    let Some(answer) = answers.lock().unwrap().next() else {
                        return;
                    };
                    if conn.write_all(&answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    Upstream { addr, heads }
}

/// One request's head as text (its Content-Length body read and dropped); `None` at the
/// end of the connection.
fn read_request(conn: &mut std::net::TcpStream) -> Option<String> {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        if conn.read(&mut byte).ok()? == 0 {
            return None;
        }
        got.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&got).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .map_or(0, |v| v.trim().parse().unwrap());
    let mut body = vec![0u8; len];
    conn.read_exact(&mut body).ok()?;
    Some(head)
}

/// A core whose one cluster `acme` (of `class`) forwards to `up`, with a 3 s deadline.
fn core(up: SocketAddr, class: &str) -> Rc<Core> {
    core_with(up, class, MetricsHub::default())
}

/// [`core`] recording into `hub`.
fn core_with(up: SocketAddr, class: &str, hub: MetricsHub) -> Rc<Core> {
    let text = format!(
        r#"
[edge]
domain = "example.test"
http = "127.0.0.1:0"
deadline = "3s"
access_log = "off"
[[plans]]
name = "p"
concurrency = 4
queue_size = 4
queue_timeout = "1s"
shards = 100
disk = "1gb"
memory = "1gb"
max_bulk_actions = 100
max_open_contexts = 2
[[clusters]]
id = "acme"
hostname = "acme-7f3k"
region = "us-east-1"
class = "{class}"
plan = "p"
username = "acmeuser"
password = "acmepass"
upstream = ["{up}"]
"#
    );
    let config = Config::parse(&text, "test").unwrap();
    let key = TenancyKey::from_bytes([3; 32]);
    let snap = Snapshot::build(&config, None, 1, Instant::now(), &key).unwrap();
    snap.by_id("acme").unwrap().state.set_ready(true); // as the readiness probe would
    let shared = Shared {
        registry: Arc::new(Registry::new(snap)),
        limits: Limits::from_config(&config.edge),
        tls: None,
        metrics: Arc::new(hub),
        access_log: None,
        draining: AtomicBool::new(false),
        sealer: Arc::new(crate::tenancy::IdSealer::new(&key)),
        debug_hooks: true,
        nodes: Arc::new(crate::nodes::NodeBook::new(Default::default())),
        fleet: None,
    };
    Rc::new(Core::new(Arc::new(shared)).unwrap())
}

fn request(line: &str, body: &str) -> Vec<u8> {
    format!(
        "{line}\r\nHost: {HOST}\r\nAuthorization: Basic {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        STANDARD.encode("acmeuser:acmepass"),
        body.len()
    )
    .into_bytes()
}

/// Runs `test` with a connection of `core` over a duplex, on a fresh runtime.
fn over_duplex<F, Fut>(core: Rc<Core>, test: F)
where
    F: FnOnce(Peer) -> Fut,
    Fut: std::future::Future<Output = Peer>,
{
    monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
        .enable_timer()
        .build()
        .unwrap()
        .block_on(async move {
            let (edge, peer) = duplex();
            let conn = monoio::spawn(session::serve(
                core,
                edge,
                "192.0.2.7:5555".parse().unwrap(),
                Vec::new(),
            ));
            let peer = test(peer).await;
            peer.close();
            conn.await;
        });
}

// issue 15: the edge's own request (creating a whitelisted index before the write) reads
// its answer like the main request does, so an interim `100 Continue` head is skipped
// (the old copy of the exchange parsed it again until the deadline, then answered 502).
#[test]
fn an_interim_head_before_the_answer_to_an_index_creation_is_skipped() {
    let up = upstream(vec![
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}".to_vec(),
        b"HTTP/1.1 201 Created\r\nContent-Length: 11\r\n\r\n{\"ok\":true}".to_vec(),
    ]);
    let started = Instant::now();
    over_duplex(core(up.addr, "single-tenant"), |mut peer| async move {
        peer.send(&request("PUT /logstash-1/_doc/1 HTTP/1.1", "{}"));
        let (head, body) = peer.response().await;
        assert!(head.starts_with("HTTP/1.1 201"), "{head}");
        assert_eq!(body, b"{\"ok\":true}");
        peer
    });
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "no wait for the deadline"
    );
    let heads = up.heads.lock().unwrap().clone();
    let lines: Vec<&str> = heads.iter().map(|h| h.lines().next().unwrap()).collect();
    assert_eq!(
        lines,
        [
            "PUT /logstash-1 HTTP/1.1",
            "PUT /logstash-1/_doc/1 HTTP/1.1"
        ]
    );
}

// issue 31: whether a connection is kept is derived from facts (the body was read to its
// end): a request answered before its buffered body was sent (no node reachable) skips
// that body, so the body, even when it looks like a request, is never read as the next one.
#[test]
fn a_body_not_sent_is_never_read_as_the_next_request() {
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    over_duplex(core(closed, "single-tenant"), |mut peer| async move {
        let inner = format!("GET /books/_doc/9 HTTP/1.1\r\nHost: {HOST}\r\n\r\n");
        let mut both = request("POST /books/_doc HTTP/1.1", &inner);
        both.extend(request("GET /books/_search HTTP/1.1", ""));
        peer.send(&both);
        for _ in 0..2 {
            let (head, body) = peer.response().await;
            assert!(head.starts_with("HTTP/1.1 503"), "{head}");
            assert!(
                !head.to_ascii_lowercase().contains("connection: close"),
                "{head}"
            );
            assert!(String::from_utf8_lossy(&body).contains("cannot be reached"));
        }
        peer
    });
}

// spec 4, 5: an exchange over the duplex: credentials removed upstream, the answer relayed,
// the connection kept for the next (pipelined) request, and a refusal answered in order.
#[test]
fn pipelined_requests_are_answered_in_order_over_one_connection() {
    let up = upstream(vec![
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst".to_vec(),
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond".to_vec(),
    ]);
    over_duplex(core(up.addr, "single-tenant"), |mut peer| async move {
        let mut both = request("GET /books/_search HTTP/1.1", "");
        both.extend(request("POST /books/_search HTTP/1.1", "{\"query\":{}}"));
        both.extend(b"GET /_snapshot HTTP/1.1\r\nHost: x.y.example.test\r\n\r\n");
        peer.send(&both);
        let (h1, b1) = peer.response().await;
        let (h2, b2) = peer.response().await;
        let (h3, _) = peer.response().await;
        assert!(h1.starts_with("HTTP/1.1 200") && b1 == b"first", "{h1}");
        assert!(h2.starts_with("HTTP/1.1 200") && b2 == b"second", "{h2}");
        assert!(h3.starts_with("HTTP/1.1 404"), "an unknown host: {h3}");
        peer
    });
    let heads = up.heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 2);
    for h in &heads {
        assert!(!h.contains("Authorization"), "{h}");
        assert!(h.contains("X-Forwarded-For: 192.0.2.7"), "{h}");
    }
}

// issue 5, 15: the multitenant rewriting is the exchange's filters: the path goes up in the
// tenant's namespace, the answer comes back without the prefix, re-framed chunked.
#[test]
fn the_multitenant_filters_rewrite_both_ways() {
    let prefix = Prefix::derive(&TenancyKey::from_bytes([3; 32]), "acme");
    let p = prefix.as_str().to_string();
    let answer = format!("{{\"_index\":\"{p}books\"}}");
    let up = upstream(vec![format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
        answer.len()
    )
    .into_bytes()]);
    over_duplex(core(up.addr, "multitenant"), |mut peer| async move {
        peer.send(&request("GET /books/_search HTTP/1.1", ""));
        let got = peer.read_until(|b| b.ends_with(b"0\r\n\r\n")).await;
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(text.contains("Transfer-Encoding: chunked"), "{text}");
        assert!(text.contains("{\"_index\":\"books\"}"), "{text}");
        peer
    });
    let heads = up.heads.lock().unwrap().clone();
    assert!(
        heads[0].starts_with(&format!("GET /{p}books/_search HTTP/1.1")),
        "{}",
        heads[0]
    );
}

/// A chunked response (the multitenant filters re-frame bodies): its head, and its body
/// de-chunked.
async fn chunked_response(peer: &mut Peer) -> (String, Vec<u8>) {
    let got = peer.read_until(|b| b.ends_with(b"0\r\n\r\n")).await;
    let text = String::from_utf8_lossy(&got).into_owned();
    let (head, mut rest) = text.split_once("\r\n\r\n").expect("a head");
    let mut body = Vec::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size, 16).expect("a chunk size");
        body.extend_from_slice(&after.as_bytes()[..n]);
        rest = &after[n + 2..];
        if n == 0 {
            break;
        }
    }
    (head.to_string(), body)
}

fn json_answer(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

// issue 10 §3 (attacks-10 #9): open scrolls and points in time count against the plan's
// `max_open_contexts` (2 here): the third open is refused with 429 and the numbers before
// it reaches the upstream; a failed open gives its place back; clearing a scroll frees its
// place for the next open on the same connection at once.
#[test]
fn open_search_contexts_are_counted_against_the_plan() {
    let up = upstream(vec![
        json_answer("200 OK", r#"{"_scroll_id":"UP1","hits":{"hits":[]}}"#),
        json_answer(
            "400 Bad Request",
            r#"{"error":"bad keep-alive","status":400}"#,
        ),
        json_answer("200 OK", r#"{"id":"PIT1"}"#),
        json_answer("200 OK", r#"{"succeeded":true,"num_freed":1}"#),
        json_answer("200 OK", r#"{"_scroll_id":"UP2","hits":{"hits":[]}}"#),
    ]);
    over_duplex(core(up.addr, "multitenant"), |mut peer| async move {
        peer.send(&request("GET /books/_search?scroll=1m HTTP/1.1", ""));
        let (h, b) = chunked_response(&mut peer).await;
        assert!(h.starts_with("HTTP/1.1 200"), "{h}");
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        let token = v["_scroll_id"].as_str().unwrap().to_string();
        assert!(token.starts_with("sg1."), "sealed: {token}");
        // an open the upstream refuses takes no place
        peer.send(&request("GET /books/_search?scroll=2m HTTP/1.1", ""));
        let (h, _) = chunked_response(&mut peer).await;
        assert!(h.starts_with("HTTP/1.1 400"), "{h}");
        // issue 25: one the edge cannot read never reaches the upstream, nor takes a place
        for keep in ["x", "150000000000000d", "1.5h"] {
            peer.send(&request(
                &format!("GET /books/_search?scroll={keep} HTTP/1.1"),
                "",
            ));
            let (h, _) = peer.response().await;
            assert!(h.starts_with("HTTP/1.1 400"), "{keep}: {h}");
        }
        peer.send(&request("POST /books/_pit?keep_alive=1m HTTP/1.1", ""));
        let (h, _) = chunked_response(&mut peer).await;
        assert!(h.starts_with("HTTP/1.1 200"), "{h}");
        // 2 of 2 open: the next open is refused by the edge (N + 1)
        peer.send(&request("GET /books/_search?scroll=1m HTTP/1.1", ""));
        let (h, b) = peer.response().await;
        assert!(h.starts_with("HTTP/1.1 429"), "{h}");
        let e: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(e["error"]["type"], "too_many_scroll_contexts_exception");
        let reason = e["error"]["reason"].as_str().unwrap();
        assert!(
            reason.contains("[2]") && reason.contains("Open now: [2]"),
            "{reason}"
        );
        // clearing the scroll frees a place
        let clear = format!(r#"{{"scroll_id":"{token}"}}"#);
        peer.send(&request("DELETE /_search/scroll HTTP/1.1", &clear));
        let (h, _) = chunked_response(&mut peer).await;
        assert!(h.starts_with("HTTP/1.1 200"), "{h}");
        peer.send(&request("GET /books/_search?scroll=1m HTTP/1.1", ""));
        let (h, _) = chunked_response(&mut peer).await;
        assert!(h.starts_with("HTTP/1.1 200"), "{h}");
        peer
    });
    let heads = up.heads.lock().unwrap().clone();
    let lines: Vec<&str> = heads.iter().map(|h| h.lines().next().unwrap()).collect();
    assert_eq!(
        lines.len(),
        5,
        "the refused open never reached the upstream: {lines:?}"
    );
    assert!(lines[3].starts_with("DELETE /_search/scroll "), "{lines:?}");
}

// issue 13: `[edge] record_metrics = false` (the load test's baseline for what recording
// costs) records nothing; the default records each request once, routed or not.
#[test]
fn requests_are_recorded_unless_recording_is_off() {
    for recording in [true, false] {
        let up = upstream(vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}".to_vec()
        ]);
        let core = core_with(
            up.addr,
            "single-tenant",
            MetricsHub::default().recording(recording),
        );
        over_duplex(core.clone(), |mut peer| async move {
            let mut both = request("GET /books/_search HTTP/1.1", "");
            both.extend(b"GET / HTTP/1.1\r\nHost: nobody.example.test\r\n\r\n");
            peer.send(&both);
            let (h1, _) = peer.response().await;
            let (h2, _) = peer.response().await;
            assert!(h1.starts_with("HTTP/1.1 200"), "{h1}");
            assert!(h2.starts_with("HTTP/1.1 404"), "{h2}");
            peer
        });
        let metrics = core.metrics.borrow();
        let expected = if recording { (1, 1) } else { (0, 0) };
        assert_eq!(
            (metrics.buffered(), metrics.unrouted()),
            expected,
            "recording {recording}"
        );
    }
}

// issue 25 (defence in depth), spec 7 (500): a panic while a request holds its allowance
// slot is contained to its connection: the request is answered 500 in Elasticsearch's
// shape, the connection closes, the slot is free again, the panic is counted, and the
// worker (this runtime) serves the next connection.
#[test]
fn a_panic_holding_a_slot_answers_500_and_releases_the_slot() {
    let up = upstream(vec![
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec()
    ]);
    let core = core(up.addr, "single-tenant");
    let cluster = core.snapshot().by_id("acme").unwrap().clone();
    let mut panicking = request("GET /books/_search HTTP/1.1", "");
    let at = panicking.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    panicking.splice(
        at..at,
        b"\r\nX-Searchgate-Debug-Panic: slot".iter().copied(),
    );
    over_duplex(core.clone(), |mut peer| async move {
        peer.send(&panicking);
        let (head, body) = peer.response().await;
        assert!(head.starts_with("HTTP/1.1 500"), "{head}");
        assert!(head.contains("Connection: close"), "{head}");
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["status"], 500);
        assert_eq!(v["error"]["type"], "exception", "{v}");
        peer
    });
    assert_eq!(cluster.allowance.in_flight(), 0, "the slot was given back");
    assert_eq!(
        core.connections.get(),
        0,
        "the connection is no longer counted"
    );
    let faults = core.shared.metrics.faults.counts();
    assert_eq!(faults.panics(crate::metrics::faults::PanicSite::Edge), 1);
    // the same core serves the next connection, through to the upstream
    over_duplex(core, |mut peer| async move {
        peer.send(&request("GET /books/_search HTTP/1.1", ""));
        let (head, body) = peer.response().await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(body, b"ok");
        peer
    });
}

// issue 25: once a byte of the response went out, a panic can only close the connection
// (no second answer is written after it).
#[test]
fn a_panic_after_the_response_closes_the_connection() {
    let up = upstream(vec![
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec()
    ]);
    let core = core(up.addr, "single-tenant");
    let mut panicking = request("GET /books/_search HTTP/1.1", "");
    let at = panicking.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    panicking.splice(
        at..at,
        b"\r\nX-Searchgate-Debug-Panic: relay".iter().copied(),
    );
    over_duplex(core.clone(), |mut peer| async move {
        peer.send(&panicking);
        let (head, body) = peer.response().await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(body, b"ok");
        let rest = peer.read_until(|_| false).await;
        assert!(rest.is_empty(), "nothing after the response: {rest:?}");
        peer
    });
    assert_eq!(core.connections.get(), 0);
}
