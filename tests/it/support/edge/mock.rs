//! A mock upstream for the edge's tests: a std::net server on 127.0.0.1:0, one thread per
//! connection, that records every request (head, decoded body, connection, whether it was
//! answered), requests cut before their end, open connections and the most requests it ever
//! had in flight at once.
//!
//! Each request chooses how it is answered with an `X-Mock` header (it passes through the
//! edge untouched to a single-tenant cluster; for the multitenant class, whose edge forwards
//! only its own table of headers, [`Mock::answer_all`] sets the plan), a `;`-separated
//! list of:
//! - `delay=<ms>`: wait before answering; `hold`: wait until [`Mock::release`];
//! - `status=<n>`; `size=<n>`: a body of `n` filler bytes instead of the JSON echo;
//! - `echo`: the JSON answer also carries the request body it received, as a string
//!   (`"echo"`), as an upstream that quotes a request in its answer would;
//! - `resp=length|chunked|close|malformed|clte|twocl|cut|none`: Content-Length (default),
//!   chunked, close-delimited, a malformed head, ambiguous framing (Content-Length with
//!   chunked, two Content-Lengths), a head cut in the middle, or no answer at all (the
//!   connection is closed);
//! - `then=close|stale|stale-close`: after the answer, on the idle connection, its end, an
//!   unsolicited `408`, or both, as servers do when they time out idle keep-alive
//!   connections; done once the test calls [`Mock::go_stale`] (after it has read the
//!   answer, so the edge has read it whole and the 408 comes apart).
//!
//! Requests without `X-Forwarded-For` come from the edge's own control thread (readiness
//! probes, metering), not from a client: they are answered (`GET /`: `{}`, anything else:
//! `[]`) and recorded apart ([`Mock::control_requests`]), outside every client count.
//!
//! With [`Mock::drop_reused`] set, a request arriving on a connection that already served
//! one is not answered: the connection closes, as when an idle keep-alive connection is
//! closed by the upstream just as the edge reuses it.

#[path = "mock_answer.rs"]
mod answer;
#[path = "mock_wire.rs"]
mod wire;

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use answer::{answer, plan_of, wait_plan};
use wire::{read_request, Head, Reader};

/// One request the mock received in full.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Connection number (1, 2, ...) and the request's place on it (1, 2, ...).
    pub conn: usize,
    pub seq_on_conn: usize,
    pub method: String,
    pub target: String,
    /// `1` for HTTP/1.1, `0` for HTTP/1.0.
    pub version: u8,
    /// Header names and values as received, in order.
    pub headers: Vec<(String, String)>,
    /// The decoded body.
    pub body: Vec<u8>,
    /// The body came with `Transfer-Encoding: chunked`.
    pub chunked: bool,
    /// A response was written (false for `resp=none` and dropped reused connections).
    pub answered: bool,
}

impl Recorded {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// How many times header `name` appears.
    pub fn count(&self, name: &str) -> usize {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .count()
    }
}

/// A request whose connection ended before the request was complete.
#[derive(Debug, Clone)]
pub struct Cut {
    pub target: String,
    /// Body bytes (decoded) received before the end.
    pub body_received: usize,
}

#[derive(Debug, Default)]
struct Inner {
    requests: Vec<Recorded>,
    control: Vec<String>,
    cuts: Vec<Cut>,
    connections: usize,
    open: usize,
    in_flight: usize,
    max_in_flight: usize,
    released: bool,
    stale_sent: usize,
    /// `then=` actions the test let happen ([`Mock::go_stale`]).
    stale_allowed: usize,
    drop_reused: bool,
    /// Body bytes of Content-Length requests read so far (complete or not).
    body_bytes: usize,
    /// The plan of requests without an `X-Mock` header ([`Mock::answer_all`]).
    default_plan: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    inner: Mutex<Inner>,
    changed: Condvar,
}

impl State {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut Inner)) {
        f(&mut self.lock());
        self.changed.notify_all();
    }
}

/// The mock upstream; stops accepting when dropped.
pub struct Mock {
    pub addr: SocketAddr,
    state: Arc<State>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

/// A port on 127.0.0.1 kept for an upstream that starts later: bound, not listening, so
/// connecting to it is refused (an upstream that is down) while no other socket on the
/// machine can take it. (A port found free by binding and closing a listener can be handed
/// to another test's listener or outgoing connection before the late upstream binds it.)
pub struct HeldPort(socket2::Socket);

impl HeldPort {
    pub fn new() -> HeldPort {
        use socket2::{Domain, Socket, Type};
        let s = Socket::new(Domain::IPV4, Type::STREAM, None).expect("a socket");
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        s.bind(&any.into()).expect("bind 127.0.0.1:0");
        HeldPort(s)
    }

    pub fn addr(&self) -> SocketAddr {
        self.0
            .local_addr()
            .unwrap()
            .as_socket()
            .expect("an IP address")
    }

    /// The port, listening.
    pub fn listen(self) -> TcpListener {
        self.0.listen(128).expect("listen on the held port");
        self.0.into()
    }

    /// Frees the port for a server in another process that binds it next (the moment
    /// between is as short as that process takes to start).
    pub fn release(self) -> SocketAddr {
        self.addr()
    }
}

impl Mock {
    /// Starts a mock on 127.0.0.1:0.
    pub fn start() -> Mock {
        Mock::start_at("127.0.0.1:0".parse().unwrap())
    }

    /// Starts a mock on `addr` (e.g. a port an upstream was configured with before it ran).
    pub fn start_at(addr: SocketAddr) -> Mock {
        Mock::start_on(TcpListener::bind(addr).expect("bind the mock upstream"))
    }

    /// Starts a mock listening on the port `held` kept for it: no moment in which another
    /// socket could take the port.
    pub fn start_in(held: HeldPort) -> Mock {
        Mock::start_on(held.listen())
    }

    fn start_on(listener: TcpListener) -> Mock {
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if sp.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let st = st.clone();
                let n = {
                    let mut g = st.lock();
                    g.connections += 1;
                    g.open += 1;
                    g.connections
                };
                st.changed.notify_all();
                std::thread::spawn(move || {
                    if !serve_conn(&st, conn, n) {
                        st.update(|g| g.open -= 1);
                    }
                });
            }
        });
        Mock {
            addr,
            state,
            stop,
            accept: Some(accept),
        }
    }

    /// Requests received in full, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().requests.clone()
    }

    /// Requests cut before their end.
    pub fn cuts(&self) -> Vec<Cut> {
        self.state.lock().cuts.clone()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.state.lock().connections
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.state.lock().open
    }

    /// The most requests it had in flight at once: from a request received in full until its
    /// answer is about to be written.
    pub fn max_in_flight(&self) -> usize {
        self.state.lock().max_in_flight
    }

    /// Body bytes of Content-Length requests read so far, requests in progress included.
    pub fn body_bytes(&self) -> usize {
        self.state.lock().body_bytes
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.state.lock().in_flight
    }

    /// Answers every request that has no `X-Mock` header as if it had `X-Mock: plan` (the
    /// multitenant class forwards only its own table of headers, so `X-Mock` never reaches
    /// the mock through a tenant's cluster).
    pub fn answer_all(&self, plan: &str) {
        self.state
            .update(|g| g.default_plan = Some(plan.to_string()));
    }

    /// Lets every `hold` request (waiting or to come) be answered.
    pub fn release(&self) {
        self.state.update(|g| g.released = true);
    }

    /// After a [`Mock::release`], makes `hold` requests to come wait again, until the
    /// next release.
    pub fn hold_again(&self) {
        self.state.update(|g| g.released = false);
    }

    /// Lets the next `then=` action (idle close, unsolicited 408) happen.
    pub fn go_stale(&self) {
        self.state.update(|g| g.stale_allowed += 1);
    }

    /// Sets whether requests on reused connections go unanswered (connection closed).
    pub fn drop_reused(&self, on: bool) {
        self.state.update(|g| g.drop_reused = on);
    }

    /// Waits until `pred` holds (checked on every change); false after `timeout`.
    pub fn wait_until(&self, timeout: Duration, pred: impl Fn(&MockView<'_>) -> bool) -> bool {
        let end = Instant::now() + timeout;
        let mut g = self.state.lock();
        loop {
            if pred(&MockView(&g)) {
                return true;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            g = self
                .state
                .changed
                .wait_timeout(g, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Waits until `n` requests are in flight; panics after 10 s.
    pub fn wait_in_flight(&self, n: usize) {
        assert!(
            self.wait_until(Duration::from_secs(10), |v| v.in_flight() >= n),
            "the mock never had {n} request(s) in flight (has {})",
            self.in_flight()
        );
    }

    /// Waits until no connection is open; panics after 10 s.
    pub fn wait_all_closed(&self) {
        assert!(
            self.wait_until(Duration::from_secs(10), |v| v.open() == 0),
            "the edge kept {} upstream connection(s) open",
            self.open_connections()
        );
    }
}

/// A read-only view of the mock's records for [`Mock::wait_until`].
pub struct MockView<'a>(&'a Inner);

impl MockView<'_> {
    pub fn open(&self) -> usize {
        self.0.open
    }
    pub fn in_flight(&self) -> usize {
        self.0.in_flight
    }
    pub fn connections(&self) -> usize {
        self.0.connections
    }
    /// `then=` actions done after an answer (idle close, unsolicited 408).
    pub fn stale_sent(&self) -> usize {
        self.0.stale_sent
    }
    /// Body bytes of Content-Length requests read so far, requests in progress included.
    pub fn body_bytes(&self) -> usize {
        self.0.body_bytes
    }
    /// Metering requests (`_cat/indices`) of the control thread answered so far.
    pub fn metered(&self) -> usize {
        self.0
            .control
            .iter()
            .filter(|t| t.starts_with("/_cat/indices"))
            .count()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.release();
        self.state.update(|g| g.stale_allowed = usize::MAX);
        let _ = TcpStream::connect(self.addr); // wake the accept loop
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// Serves one connection; returns true when it turned out to be the control thread's.
fn serve_conn(st: &State, conn: TcpStream, n: usize) -> bool {
    let _ = conn.set_nodelay(true);
    let mut r = Reader {
        conn: conn.try_clone().expect("clone the mock's socket"),
        buf: Vec::new(),
        st,
    };
    let mut w = conn;
    let mut seq = 0;
    let mut control = false;
    loop {
        let Some((head, body, chunked)) = read_request(st, &mut r) else {
            return control;
        };
        seq += 1;
        if head.header("x-forwarded-for").is_none() {
            if seq == 1 {
                // Not a connection of the edge's request path: out of the counts.
                control = true;
                st.update(|g| {
                    g.connections -= 1;
                    g.open -= 1;
                });
            }
            if !answer_control(st, &mut w, &head) {
                return control;
            }
            continue;
        }
        if !serve_request(st, &mut w, n, seq, head, body, chunked) {
            return control;
        }
    }
}

/// Answers a request of the edge's control thread; false when the connection failed.
fn answer_control(st: &State, w: &mut TcpStream, head: &Head) -> bool {
    let body: &[u8] = if head.target == "/" { b"{}" } else { b"[]" };
    let answer = [
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
        body,
    ]
    .concat();
    let ok = w.write_all(&answer).is_ok();
    st.update(|g| g.control.push(head.target.clone()));
    ok
}

/// Records and answers a client request; false when the connection ends.
fn serve_request(
    st: &State,
    w: &mut TcpStream,
    n: usize,
    seq: usize,
    head: Head,
    body: Vec<u8>,
    chunked: bool,
) -> bool {
    st.update(|g| {
        g.in_flight += 1;
        g.max_in_flight = g.max_in_flight.max(g.in_flight);
    });
    let default = st.lock().default_plan.clone();
    let plan = plan_of(head.header("x-mock").or(default.as_deref()));
    let drop_it = seq > 1 && st.lock().drop_reused;
    let answered = !drop_it && plan.resp != "none";
    let body_len = body.len();
    let echo = plan
        .echo
        .then(|| String::from_utf8_lossy(&body).into_owned());
    st.update(|g| {
        g.requests.push(Recorded {
            conn: n,
            seq_on_conn: seq,
            method: head.method.clone(),
            target: head.target.clone(),
            version: head.version,
            headers: head.headers.clone(),
            body,
            chunked,
            answered,
        })
    });
    if !answered {
        st.update(|g| g.in_flight -= 1);
        return false;
    }
    wait_plan(st, &plan);
    // Out of flight before the answer leaves: the edge may start the next request as soon
    // as it has read this answer, before this thread runs again after the write.
    st.update(|g| g.in_flight -= 1);
    let keep = answer(w, &head, &plan, (n, seq), body_len, echo);
    match plan.then.as_deref() {
        None => keep,
        Some(then) => {
            // What servers do to idle keep-alive connections: close them, or send a 408
            // nobody asked for (then maybe close). Only once the test has read the answer
            // (`go_stale`): the edge has then read it whole and this comes apart (had it
            // come with the answer, the edge would drop the connection and the test would
            // pass anyway).
            let mut g = st.lock();
            while g.stale_allowed <= g.stale_sent {
                g = st.changed.wait(g).unwrap_or_else(|p| p.into_inner());
            }
            drop(g);
            if then.starts_with("stale") {
                let stale = b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n";
                let _ = w.write_all(stale);
            }
            let close = then.ends_with("close");
            if close {
                let _ = w.shutdown(std::net::Shutdown::Write);
            }
            st.update(|g| g.stale_sent += 1);
            keep && !close
        }
    }
}
