//! The admin listener's I/O: blocking sockets, a thread per connection (admin traffic is
//! small; at most [`MAX_CONNECTIONS`] at once, beyond that 503 with `Retry-After`),
//! optional TLS (rustls), and the project's own sans-IO HTTP/1.1 codec: heads parsed by
//! `proto::RequestHead` (httparse; ambiguous framing refused), bodies decoded by
//! `proto::BodyCursor` with a limit of [`MAX_BODY`], responses written by
//! `proto::write_response_head`. Keep-alive and pipelining work as on the edge.
//!
//! A panic while a request is handled is answered 500 and ends that connection only; it
//! is logged and counted (`searchgate_panics_total{component="admin"}`), and the
//! connection's place is given back whatever happened. With the test-only hooks on
//! (`[debug] panic_hooks`), `x-searchgate-debug-panic: admin` makes a request panic.
//!
//! Must not touch: what a request means (see `api::handle`).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use super::{handle, Api, ApiError, Request, Response};
use crate::metrics::faults::{panic_message, PanicSite};
use crate::proto::{
    write_response_head, BodyCursor, Framing, HeadLimits, ProtoError, RequestHead, Step, Version,
};
use searchgate_core::blocking::read_request_head;
use searchgate_core::errors::{EdgeError, ProtoLimits};
use searchgate_core::percent::decode_query;

/// Largest request body (admin requests are small JSON objects).
pub const MAX_BODY: u64 = 1 << 20;
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// A connection idle (or a request stalled) this long is closed.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Starts the admin listener's accept loop on `listener`; it stops when `stop` is set (and
/// a connection wakes it). `debug_hooks`: the test-only fault injection is on.
pub fn spawn(
    listener: TcpListener,
    api: Arc<Api>,
    tls: Option<Arc<ServerConfig>>,
    stop: Arc<AtomicBool>,
    debug_hooks: bool,
) -> io::Result<JoinHandle<()>> {
    let open = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("admin".into())
        .spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::Acquire) {
                    return;
                }
                let Ok(stream) = conn else { continue };
                if open.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
                    open.fetch_sub(1, Ordering::AcqRel);
                    busy(stream);
                    continue;
                }
                let place = Place(open.clone());
                let (api, tls) = (api.clone(), tls.clone());
                // A failed spawn drops the closure, and the place with it.
                let _ = std::thread::Builder::new()
                    .name("admin-conn".into())
                    .spawn(move || {
                        let _place = place;
                        let served = catch_unwind(AssertUnwindSafe(|| {
                            serve(stream, &api, tls, debug_hooks)
                        }));
                        if let Err(payload) = served {
                            panicked(&api, "an admin connection", panic_message(&*payload));
                        }
                    });
            }
        })
}

/// A connection's place among the open ones, given back when dropped (also when its thread
/// unwinds).
struct Place(Arc<AtomicUsize>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Logs and counts a panic caught while serving `what`.
fn panicked(api: &Api, what: &str, message: &str) {
    api.observe.hub.faults.panicked(PanicSite::Admin);
    eprintln!("searchgate: a panic ended {what} of the admin API: {message} (the API goes on)");
}

/// Handles `req`; a panic is answered 500 (logged, counted). The flag: whether the
/// handler ended normally (else the connection closes after the answer).
fn handle_contained(api: &Api, req: &Request, inject: bool) -> (Response, bool) {
    let handled = catch_unwind(AssertUnwindSafe(|| {
        if inject {
            panic!("injected panic in the admin API (test hook, [debug] panic_hooks)");
        }
        handle(api, req)
    }));
    match handled {
        Ok(resp) => (resp, true),
        Err(payload) => {
            let method = format!("{:?}", req.method).to_uppercase();
            let what = format!("a request ({method} {})", req.path);
            panicked(api, &what, panic_message(&*payload));
            let reason = "the request failed inside the admin API; retry";
            (
                ApiError::new(500, "internal", reason).into_response(),
                false,
            )
        }
    }
}

/// Wakes the accept loop (after `stop` was set).
pub fn wake(addr: SocketAddr) {
    let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
}

fn busy(mut stream: TcpStream) {
    let e = ApiError::unavailable("the admin API is serving too many connections", 1);
    let _ = write(&mut stream, Version::Http11, &e.into_response(), false);
}

fn serve(stream: TcpStream, api: &Api, tls: Option<Arc<ServerConfig>>, debug_hooks: bool) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(TIMEOUT));
    let _ = stream.set_write_timeout(Some(TIMEOUT));
    match tls {
        None => session(stream, api, debug_hooks),
        Some(cfg) => {
            let Ok(conn) = ServerConnection::new(cfg) else {
                return;
            };
            session(StreamOwned::new(conn, stream), api, debug_hooks)
        }
    }
}

/// Requests on one connection until it closes.
fn session<S: Read + Write>(mut stream: S, api: &Api, debug_hooks: bool) {
    let mut buf: Vec<u8> = Vec::with_capacity(8 << 10);
    let mut head = RequestHead::new();
    loop {
        match read_request_head(&mut stream, &mut buf, &mut head, &HeadLimits::default()) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                let _ = write(
                    &mut stream,
                    Version::Http11,
                    &proto_error(e).into_response(),
                    false,
                );
                return;
            }
        }
        let version = head.version;
        let inject =
            debug_hooks && head.header(&buf, b"x-searchgate-debug-panic") == Some(&b"admin"[..]);
        let (req, keep) = match read_request(&mut stream, &mut buf, &head) {
            Ok(r) => r,
            Err(e) => {
                let _ = write(&mut stream, version, &e.into_response(), false);
                return;
            }
        };
        let (resp, ended_well) = handle_contained(api, &req, inject);
        let keep = keep && ended_well;
        if write(&mut stream, version, &resp, keep).is_err() || !keep {
            return;
        }
    }
}

/// A protocol error in a request: the status and reason the edge gives the same error
/// (`errors::EdgeError::from_proto`, the one mapping), in the admin API's shape.
fn proto_error(e: ProtoError) -> ApiError {
    let limits = ProtoLimits {
        max_head: HeadLimits::default().max_head,
        max_body: MAX_BODY,
    };
    let e = EdgeError::from_proto(e, limits);
    let kind = match e.status() {
        413 => "payload_too_large",
        505 => "http_version_not_supported",
        _ => "bad_request",
    };
    ApiError::new(e.status(), kind, e.body().reason)
}

/// The request whose head is parsed, its body read and decoded; `buf` keeps what follows
/// it. Returns whether the connection may carry another request.
fn read_request<S: Read + Write>(
    s: &mut S,
    buf: &mut Vec<u8>,
    head: &RequestHead,
) -> Result<(Request, bool), ApiError> {
    let text = |name: &[u8]| {
        head.header(buf, name)
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let mut req = Request {
        method: head.method,
        path: String::from_utf8_lossy(head.path(buf)).into_owned(),
        params: decode_query(head.query(buf).unwrap_or_default())
            .map_err(|e| ApiError::bad_request(format!("the query string: {e}")))?,
        authorization: head.authorization.map(|a| a.of(buf).to_vec()),
        idempotency_key: text(b"idempotency-key"),
        if_match: text(b"if-match"),
        content_type: text(b"content-type"),
        body: Vec::new(),
    };
    let framing = head.framing;
    let keep = head.keep_alive;
    buf.drain(..head.len);
    let mut cur = BodyCursor::new(framing, MAX_BODY, 0).map_err(proto_error)?;
    if head.expect_continue && !cur.is_done() {
        s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .map_err(|_| ApiError::bad_request("the client went away"))?;
    }
    let mut chunk = [0u8; 16 << 10];
    loop {
        let step = cur.step(buf).map_err(proto_error)?;
        match step {
            Step::Piece(r) => req.body.extend_from_slice(&buf[r]),
            Step::Done => break,
            Step::NeedMore => {
                buf.drain(..cur.pos());
                cur.dropped(cur.pos());
                match s.read(&mut chunk) {
                    Ok(0) | Err(_) => return Err(ApiError::bad_request("the body ended early")),
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
        }
    }
    buf.drain(..cur.pos());
    Ok((req, keep))
}

fn write<S: Write>(s: &mut S, version: Version, resp: &Response, keep: bool) -> io::Result<()> {
    let (content_type, body): (&str, Vec<u8>) = match &resp.text {
        Some((ct, text)) => (ct, text.as_bytes().to_vec()),
        None => {
            let mut json = serde_json::to_vec_pretty(&resp.body).expect("JSON values serialise");
            json.push(b'\n');
            ("application/json", json)
        }
    };
    let mut out = Vec::with_capacity(256 + body.len());
    let etag = resp.etag.map(|v| format!("\"{v}\""));
    let retry = resp.retry_after.map(|s| s.to_string());
    let mut headers: Vec<(&str, &[u8])> = vec![("Content-Type", content_type.as_bytes())];
    if let Some(e) = &etag {
        headers.push(("ETag", e.as_bytes()));
    }
    if let Some(r) = &retry {
        headers.push(("Retry-After", r.as_bytes()));
    }
    if resp.status == 401 {
        headers.push(("WWW-Authenticate", b"Bearer realm=\"searchgate-admin\""));
    }
    if resp.replayed {
        headers.push(("Idempotent-Replayed", b"true"));
    }
    write_response_head(
        &mut out,
        version,
        resp.status,
        &headers,
        Framing::Length(body.len() as u64),
        keep,
    );
    out.extend_from_slice(&body);
    s.write_all(&out)?;
    s.flush()
}
