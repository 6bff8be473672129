//! End-to-end: the concurrency allowance (spec 1.7, 7, 8; issue 2): at most `concurrency`
//! requests of a cluster in flight at its upstream whatever core they arrived on, others
//! queued in FIFO order; queue full: immediate 429; waited past `queue_timeout`: 429; a
//! client that disconnects while queued frees its place. Every 429 is Elasticsearch-shaped
//! and says what to do.

use crate::support::edge;

use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use std::net::{Shutdown, TcpStream};

use edge::{start_with, Conn, Response, Server};

fn assert_429(r: &Response) {
    assert_eq!(r.assert_es_error(429), "too_many_requests_exception");
    let reason = r.json()["error"]["reason"].as_str().unwrap().to_lowercase();
    assert!(
        reason.contains("retry") && reason.contains("upgrade"),
        "a 429 says what to do: {reason}"
    );
    assert!(r.header("retry-after").is_some());
}

type Answers = mpsc::Sender<(&'static str, Option<Response>)>;

/// A request sent from its own thread; its answer (None when the connection ended without
/// one) comes on the channel given to [`spawn_request`].
struct Client {
    tcp: TcpStream,
    handle: std::thread::JoinHandle<()>,
}

impl Client {
    /// Closes the client's socket: the client goes away.
    fn leave(&self) {
        let _ = self.tcp.shutdown(Shutdown::Both);
    }
    /// Sends `bytes` (that the edge will not read while the request waits), then goes away.
    fn leave_after(&self, bytes: &[u8]) {
        use std::io::Write;
        (&self.tcp).write_all(bytes).unwrap();
        self.leave();
    }
    fn join(self) {
        self.handle.join().unwrap();
    }
}

/// Sends a request to the default cluster from a new thread.
fn spawn_request(server: &Server, mock_plan: &str, tag: &'static str, tx: &Answers) -> Client {
    let bytes = server
        .req("GET", &format!("/{tag}/_search"))
        .mock(mock_plan)
        .bytes();
    let mut c = Conn::plain(server.http);
    let tcp = c.tcp().try_clone().unwrap();
    let tx = tx.clone();
    let handle = std::thread::spawn(move || {
        let answer = c
            .try_send(&bytes)
            .ok()
            .and_then(|_| c.try_response(false).ok());
        let _ = tx.send((tag, answer));
    });
    Client { tcp, handle }
}

fn status_of(answer: &(&'static str, Option<Response>)) -> (&'static str, u16) {
    (answer.0, answer.1.as_ref().map_or(0, |r| r.status))
}

/// Runs `clients` concurrent clients (released together) against the default cluster,
/// over TLS when `tls`; returns their statuses.
fn burst(server: &Server, clients: usize, tls: bool) -> Vec<Response> {
    let barrier = Arc::new(Barrier::new(clients));
    let ca = server.ca();
    let handles: Vec<_> = (0..clients)
        .map(|i| {
            let bytes = server
                .req("GET", &format!("/c{i}/_search"))
                .mock("delay=15")
                .bytes();
            let (http, https, ca, barrier) =
                (server.http, server.https, ca.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut c = if tls {
                    Conn::tls(https, &ca, edge::HOST)
                } else {
                    Conn::plain(http)
                };
                barrier.wait();
                c.send(&bytes);
                c.response()
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

// spec 1.7, 8; issue 2: 200 concurrent clients against an allowance of 3 across two
// cores: the upstream never sees more than 3 at once (and does see 3), every request
// either succeeds or gets an Elasticsearch-shaped 429.
#[test]
fn allowance_is_never_exceeded_under_200_concurrent_clients() {
    let (mock, server) = start_with(|s| {
        // Room for a starved CPU: queue timers may fire late (a deadline far past the queue
        // timeout), and connecting every client (TLS handshakes: head_timeout) before the
        // burst may take a while.
        s.plan(3, 60, "1s")
            .threads(2)
            .edge("deadline", "\"30s\"")
            .edge("idle_timeout", "\"60s\"")
            .edge("head_timeout", "\"30s\"")
    });
    let mut statuses = (0, 0);
    for (clients, tls) in [(200, false), (40, true)] {
        for r in burst(&server, clients, tls) {
            match r.status {
                200 => statuses.0 += 1,
                429 => {
                    assert_429(&r);
                    statuses.1 += 1;
                }
                other => panic!("unexpected status {other}: {}", r.text()),
            }
        }
    }
    assert!(
        mock.max_in_flight() <= 3,
        "the upstream had {} requests in flight at once; the allowance is 3",
        mock.max_in_flight()
    );
    assert_eq!(mock.max_in_flight(), 3, "the allowance was used in full");
    assert_eq!(
        statuses.0,
        mock.requests().len(),
        "each 200 is one upstream request"
    );
    assert!(
        statuses.0 >= 60,
        "at least the queue's worth succeeded: {statuses:?}"
    );
    assert!(statuses.1 > 0, "some were refused: {statuses:?}");
}

// issue 2: when the allowance is in use and the queue is full, the answer is an
// immediate 429 (here queue_size 0: nothing may wait).
#[test]
fn full_queue_is_an_immediate_429() {
    let (mock, server) = start_with(|s| s.plan(1, 0, "30s").edge("deadline", "\"30s\""));
    let (tx, rx) = mpsc::channel();
    let a = spawn_request(&server, "hold", "a", &tx);
    mock.wait_in_flight(1);
    let started = Instant::now();
    let r = server.send(&server.req("GET", "/b/_search"));
    assert_429(&r);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "not immediate: {:?}",
        started.elapsed()
    );
    mock.release();
    assert_eq!(status_of(&rx.recv().unwrap()).1, 200);
    a.join();
    assert_eq!(mock.requests().len(), 1);
}

// issue 2: with an allowance of 1 and a queue of 1, of two requests sent while the slot is
// taken one waits and the other is refused at once; the waiting one is served once the
// slot frees.
#[test]
fn queue_of_one_holds_one_request() {
    let (mock, server) = start_with(|s| s.plan(1, 1, "30s").edge("deadline", "\"30s\""));
    let (tx, rx) = mpsc::channel();
    let a = spawn_request(&server, "hold", "a", &tx);
    mock.wait_in_flight(1);
    let b = spawn_request(&server, "", "b", &tx);
    let c = spawn_request(&server, "", "c", &tx);
    let (first, r) = rx.recv().unwrap();
    assert_ne!(first, "a", "the held request cannot finish first");
    assert_429(r.as_ref().expect("an answer"));
    // The edge's own figures: one request at the upstream, the other waiting.
    server.wait_gauge(
        "searchgate_queue_depth",
        "acme",
        "one request queued",
        |n| n == 1,
    );
    let in_flight = server.wait_gauge("searchgate_requests_in_flight", "acme", "", |_| true);
    assert_eq!(in_flight, 1);
    mock.release();
    let mut rest: Vec<(&str, u16)> = (0..2).map(|_| status_of(&rx.recv().unwrap())).collect();
    rest.sort();
    let waiter = if first == "b" { "c" } else { "b" };
    let mut want = vec![("a", 200), (waiter, 200)];
    want.sort();
    assert_eq!(rest, want);
    for h in [a, b, c] {
        h.join();
    }
    assert_eq!(mock.requests().len(), 2);
    assert!(mock.max_in_flight() <= 1);
}

// spec 1.7, 7: a request that waited longer than queue_timeout gets 429 (and never
// reaches the upstream).
#[test]
fn waiting_past_queue_timeout_is_429() {
    let (mock, server) = start_with(|s| s.plan(1, 5, "300ms").edge("deadline", "\"30s\""));
    let (tx, rx) = mpsc::channel();
    let a = spawn_request(&server, "hold", "a", &tx);
    mock.wait_in_flight(1);
    let started = Instant::now();
    let r = server.send(&server.req("GET", "/b/_search"));
    let waited = started.elapsed();
    assert_429(&r);
    assert!(r.text().contains("waited"), "{}", r.text());
    assert!(
        waited >= Duration::from_millis(300),
        "answered before the timeout: {waited:?}"
    );
    mock.release();
    assert_eq!(status_of(&rx.recv().unwrap()).1, 200);
    a.join();
    assert_eq!(
        mock.requests().len(),
        1,
        "the timed-out request never reached the upstream"
    );
}

// issue 2: a client that disconnects while queued frees its place. Allowance 1, queue 1,
// the slot held: of two contenders one is refused, the other queues and then goes away.
// Two new contenders then find one free place again: one queues (and is served once the
// slot frees), one is refused; were the place still taken, both would be refused.
#[test]
fn client_gone_while_queued_frees_its_place() {
    let (mock, server) = start_with(|s| s.plan(1, 1, "30s").edge("deadline", "\"30s\""));
    let (tx, rx) = mpsc::channel();
    let a = spawn_request(&server, "hold", "a", &tx);
    mock.wait_in_flight(1);
    let b = spawn_request(&server, "", "b", &tx);
    let c = spawn_request(&server, "", "c", &tx);
    let refused = rx.recv().unwrap();
    assert_429(refused.1.as_ref().expect("an answer"));
    let queued = if refused.0 == "b" { &c } else { &b };
    queued.leave();
    let left = rx.recv().unwrap();
    assert!(left.1.is_none(), "the client that left got no answer");
    server.wait_log_line("the queued client that left", |l| l.contains("\" 499 "));
    server.wait_gauge("searchgate_queue_depth", "acme", "the place freed", |n| {
        n == 0
    });

    let d = spawn_request(&server, "", "d", &tx);
    let e = spawn_request(&server, "", "e", &tx);
    let first = rx.recv().unwrap();
    assert_429(first.1.as_ref().expect("an answer"));
    mock.release();
    let mut got: Vec<(&str, u16)> = (0..2).map(|_| status_of(&rx.recv().unwrap())).collect();
    got.sort();
    let other = if first.0 == "d" { "e" } else { "d" };
    let mut want = vec![("a", 200), (other, 200)];
    want.sort();
    assert_eq!(got, want, "the freed place was taken by a new client");
    for h in [a, b, c, d, e] {
        h.join();
    }
    let mut targets: Vec<String> = mock.requests().iter().map(|r| r.target.clone()).collect();
    targets.sort();
    assert_eq!(
        targets,
        vec!["/a/_search".to_string(), format!("/{other}/_search")]
    );
}

// issue 2: a client that goes away while queued is noticed also when it sent more bytes
// before closing (a TLS close_notify alert, or a pipelined request): those bytes stay
// unread in the socket, ahead of the end of stream.
#[test]
fn client_gone_while_queued_is_noticed_behind_unread_bytes() {
    let (mock, server) = start_with(|s| s.plan(1, 1, "30s").edge("deadline", "\"30s\""));
    let (tx, rx) = mpsc::channel();
    let a = spawn_request(&server, "hold", "a", &tx);
    mock.wait_in_flight(1);
    let b = spawn_request(&server, "", "b", &tx);
    let c = spawn_request(&server, "", "c", &tx);
    let refused = rx.recv().unwrap();
    assert_429(refused.1.as_ref().expect("an answer"));
    let queued = if refused.0 == "b" { &c } else { &b };
    queued.leave_after(&server.req("GET", "/pipelined").bytes());
    assert!(rx.recv().unwrap().1.is_none());
    server.wait_log_line("the queued client that left", |l| l.contains("\" 499 "));
    server.wait_gauge("searchgate_queue_depth", "acme", "the place freed", |n| {
        n == 0
    });
    mock.release();
    assert_eq!(status_of(&rx.recv().unwrap()), ("a", 200));
    for h in [a, b, c] {
        h.join();
    }
    assert_eq!(
        mock.requests().len(),
        1,
        "the client that left never reached the upstream"
    );
}
