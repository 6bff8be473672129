//! One client connection: read a head (`proto::RequestHead`), hand the request with a
//! streaming body to the API, write the response (Content-Length, or chunked for streamed
//! bodies; none for HEAD), and loop while the connection is kept alive.
//!
//! A panic in the API while it handles a request is caught here: the request is answered
//! 500 (nothing of its response was written yet) and the connection closes; the caller
//! (`http::serve`) catches any other panic of the connection's thread. The API can ask
//! whether the client is still there ([`client_gone`]) to stop waiting for no one, and the
//! request's work stops when it is not (`cancel`: the connection then closes unanswered).

use std::io::{self, Write};
use std::net::TcpStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use super::body::BodyReader;
use super::encoding::{with_decoded, Coding};
use super::idle::IdleSet;
use crate::api::params::{segments, Params};
use crate::api::{Body, Engine, Request, Response};
use crate::cancel::{self, Cancelled};
use crate::error::EngineError;
use searchgate_core::blocking::read_request_head;
use searchgate_core::errors::{EdgeError, ErrorBody, ProtoLimits};
use searchgate_core::proto::{
    chunk_size_line, write_response_head, BodyCursor, Framing, HeadLimits, Method, ProtoError,
    RequestHead, Version, LAST_CHUNK,
};

/// An idle keep-alive connection is closed after this long.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Body bytes a handler may leave unread and still keep the connection.
const DRAIN_LIMIT: u64 = 1 << 20;

/// What the head said about the request, copied out of the read buffer.
struct Head {
    method: Method,
    version: Version,
    keep_alive: bool,
    path: String,
    query: Option<Vec<u8>>,
    content_type: Option<String>,
    accept: Option<String>,
    content_encoding: Option<String>,
    framing: Framing,
    expect_continue: bool,
    /// The test-only fault injection's header (`x-searchgate-debug-panic`), when on.
    debug_panic: Option<String>,
}

/// How the connections are served.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnOptions {
    /// The test-only fault injection is on (`--debug-panic-hooks`): a request with
    /// `x-searchgate-debug-panic: engine` panics in its handler, one with `engine-exit`
    /// ends the process (for the supervisor to start it again), one with `engine-busy`
    /// works until its client goes away.
    pub debug_hooks: bool,
}

fn header_string(head: &RequestHead, buf: &[u8], name: &[u8]) -> Option<String> {
    head.header(buf, name)
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

fn copy_head(head: &RequestHead, buf: &[u8], opts: ConnOptions) -> Head {
    let pq = head.path_and_query.of(buf);
    let (path, query) = match pq.iter().position(|&b| b == b'?') {
        Some(i) => (&pq[..i], Some(pq[i + 1..].to_vec())),
        None => (pq, None),
    };
    Head {
        method: head.method,
        version: head.version,
        keep_alive: head.keep_alive,
        path: if path.is_empty() {
            "/".into()
        } else {
            String::from_utf8_lossy(path).into_owned()
        },
        query,
        content_type: head
            .content_type
            .map(|s| String::from_utf8_lossy(s.of(buf)).into_owned()),
        accept: header_string(head, buf, b"accept"),
        content_encoding: header_string(head, buf, b"content-encoding"),
        framing: head.framing,
        expect_continue: head.expect_continue,
        debug_panic: opts
            .debug_hooks
            .then(|| header_string(head, buf, b"x-searchgate-debug-panic"))
            .flatten(),
    }
}

/// Whether the peer of `s` closed its connection (an orderly close or a reset), asked
/// without blocking and without consuming anything it sent.
pub fn client_gone(s: &TcpStream) -> bool {
    if s.set_nonblocking(true).is_err() {
        return false;
    }
    let mut byte = [0u8; 1];
    let peeked = s.peek(&mut byte);
    let _ = s.set_nonblocking(false);
    match peeked {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
        ),
    }
}

/// A malformed request head: the answer the edge gives to the same error (`errors.rs`).
fn proto_error(e: ProtoError, max_body: u64) -> ErrorBody {
    let limits = ProtoLimits {
        max_head: HeadLimits::default().max_head,
        max_body,
    };
    EdgeError::from_proto(e, limits).body()
}

/// Waits, as one of the `idle` connections, until the next request's first byte comes.
/// False when the connection ended meanwhile (the client closed it, or it was closed to
/// make room for a new one).
fn await_request(stream: &TcpStream, idle: &IdleSet) -> bool {
    let Ok(handle) = stream.try_clone() else {
        return true; // not closable for room: read as before
    };
    let ticket = idle.idle(handle);
    let came = matches!(stream.peek(&mut [0u8; 1]), Ok(n) if n > 0);
    idle.busy(ticket) && came
}

/// Serves one connection until it closes.
pub fn serve(engine: &Engine, mut stream: TcpStream, opts: ConnOptions, idle: &IdleSet) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(IDLE_TIMEOUT));
    let mut buf: Vec<u8> = Vec::with_capacity(16 << 10);
    let mut head = RequestHead::new();
    loop {
        if buf.is_empty() && !await_request(&stream, idle) {
            return;
        }
        match read_request_head(&mut stream, &mut buf, &mut head, &HeadLimits::default()) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                let _ = write_error(
                    &mut stream,
                    Version::Http11,
                    proto_error(e, engine.max_body),
                );
                return;
            }
        }
        let h = copy_head(&head, &buf, opts);
        buf.drain(..head.len);
        match exchange(engine, &mut stream, &mut buf, &h) {
            Ok(true) => {}
            _ => return,
        }
    }
}

fn write_error(stream: &mut TcpStream, version: Version, e: ErrorBody) -> io::Result<()> {
    let body = e.to_bytes();
    let mut out = Vec::with_capacity(256 + body.len());
    let headers: [(&str, &[u8]); 2] = [
        ("Content-Type", b"application/json; charset=UTF-8"),
        ("X-Elastic-Product", b"Elasticsearch"),
    ];
    write_response_head(
        &mut out,
        version,
        e.status,
        &headers,
        Framing::Length(body.len() as u64),
        false,
    );
    out.extend_from_slice(&body);
    stream.write_all(&out)
}

/// One request/response. Ok(true): the connection may carry another request.
fn exchange(
    engine: &Engine,
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    h: &Head,
) -> io::Result<bool> {
    // what the request builds is charged until its answer is written (`budget`)
    let _budget = crate::budget::Scope::enter();
    let cur = match BodyCursor::new(h.framing, engine.max_body, 0) {
        Ok(d) => d,
        Err(_) => {
            write_error(
                stream,
                h.version,
                EngineError::BodyTooLarge(engine.max_body).body(),
            )?;
            return Ok(false);
        }
    };
    let coding = match Coding::parse(h.content_encoding.as_deref()) {
        Ok(c) => c,
        Err(why) => {
            write_error(stream, h.version, EngineError::IllegalArgument(why).body())?;
            return Ok(false);
        }
    };
    let has_body = !matches!(h.framing, Framing::None | Framing::Length(0));
    if h.expect_continue && has_body {
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let mut read_half = stream.try_clone()?;
    let (resp, keep) = {
        let mut reader = BodyReader::new(&mut read_half, buf, cur);
        let watch = &*stream;
        let gone = move || client_gone(watch);
        let watched = stream.try_clone()?;
        let look = Box::new(move || client_gone(&watched));
        let out = catch_unwind(AssertUnwindSafe(|| {
            cancel::watching(look, || {
                handle(engine, h, has_body, coding, &mut reader, &gone)
            })
        }));
        let out = match out {
            Ok(out) => out,
            Err(payload) if payload.is::<Cancelled>() => {
                let n = cancel::count_cancelled();
                let method = format!("{:?}", h.method).to_uppercase();
                eprintln!(
                    "searchgate engine: stopped {method} {}: its client went away (stopped so far: {n})",
                    h.path
                );
                return Ok(false);
            }
            Err(payload) => (panicked(h, &*payload), false),
        };
        let used = reader.consumed();
        buf.drain(..used);
        out
    };
    write_response(stream, h, resp, keep)?;
    Ok(keep)
}

/// The answer to a request whose handler panicked (logged and counted): a 500 of the
/// engine's own shape; the connection then closes.
fn panicked(h: &Head, payload: &(dyn std::any::Any + Send)) -> Response {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a panic without a message)".into());
    let method = format!("{:?}", h.method).to_uppercase();
    super::count_panic(&format!("{method} {}", h.path), &message);
    Response::error(&EngineError::Internal(
        "the request failed inside the engine; retry".into(),
    ))
}

/// The test-only fault injection (`ConnOptions::debug_hooks`).
fn inject(h: &Head) {
    match h.debug_panic.as_deref() {
        Some("engine") => panic!("injected panic in the engine (test hook)"),
        Some("engine-busy") => {
            // work that ends only when its client goes away (or after two minutes)
            eprintln!("searchgate engine: busy as asked (test hook)");
            let end = std::time::Instant::now() + Duration::from_secs(120);
            while std::time::Instant::now() < end {
                crate::cancel::check();
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        Some("engine-exit") => {
            eprintln!("searchgate engine: exiting as asked (test hook)");
            std::process::exit(70);
        }
        _ => {}
    }
}

/// Runs the API on one request; returns the response and whether the connection can be
/// kept (the body was read to its end without a framing error).
fn handle(
    engine: &Engine,
    h: &Head,
    has_body: bool,
    coding: Coding,
    reader: &mut BodyReader<'_, TcpStream>,
    gone: &dyn Fn() -> bool,
) -> (Response, bool) {
    inject(h);
    let (mut resp, too_big) = with_decoded(coding, reader, engine.max_body, |body| {
        let target =
            segments(h.path.as_bytes()).and_then(|s| Ok((s, Params::parse(h.query.as_deref())?)));
        let (segments, params) = match target {
            Ok(t) => t,
            Err(e) => return Response::error(&e),
        };
        let mut req = Request {
            method: h.method,
            path: h.path.clone(),
            segments,
            params,
            content_type: h.content_type.clone(),
            accept: h.accept.clone(),
            has_body,
            body,
            gone,
        };
        engine.handle(&mut req)
    });
    let mut keep = h.keep_alive;
    if too_big {
        resp = Response::error(&EngineError::BodyTooLarge(engine.max_body));
        keep = false;
    }
    if let Some(e) = reader.error() {
        resp = Response::error(&match e {
            ProtoError::BodyTooLarge => EngineError::BodyTooLarge(engine.max_body),
            other => EngineError::IllegalArgument(other.to_string()),
        });
        keep = false;
    }
    if keep && !reader.drain(DRAIN_LIMIT) {
        keep = false;
    }
    (resp, keep)
}

fn write_response(stream: &mut TcpStream, h: &Head, resp: Response, keep: bool) -> io::Result<()> {
    let mut headers: Vec<(&str, &[u8])> = vec![
        ("Content-Type", resp.content_type.as_bytes()),
        ("X-Elastic-Product", b"Elasticsearch"),
    ];
    for (k, v) in &resp.headers {
        headers.push((k, v.as_bytes()));
    }
    let head_only = h.method == Method::Head;
    let mut out = Vec::with_capacity(512);
    let body = match resp.body {
        Body::Empty => Vec::new(),
        Body::Bytes(b) => b,
        Body::Stream(f) if head_only || h.version == Version::Http10 => {
            let mut v = Vec::new();
            f(&mut v)?;
            v
        }
        Body::Stream(f) => {
            write_response_head(
                &mut out,
                h.version,
                resp.status,
                &headers,
                Framing::Chunked,
                keep,
            );
            stream.write_all(&out)?;
            let mut w = Chunked {
                out: stream,
                buf: Vec::with_capacity(CHUNK),
            };
            f(&mut w)?;
            return w.finish();
        }
    };
    write_response_head(
        &mut out,
        h.version,
        resp.status,
        &headers,
        Framing::Length(body.len() as u64),
        keep,
    );
    if !head_only {
        out.extend_from_slice(&body);
    }
    stream.write_all(&out)
}

const CHUNK: usize = 64 << 10;

/// Chunked transfer coding over a stream, in chunks of up to 64KB.
struct Chunked<'a> {
    out: &'a mut TcpStream,
    buf: Vec<u8>,
}

impl Chunked<'_> {
    fn emit(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let mut line = [0u8; 18];
        let size = chunk_size_line(self.buf.len(), &mut line).to_vec();
        self.out.write_all(&size)?;
        self.out.write_all(&self.buf)?;
        self.out.write_all(b"\r\n")?;
        self.buf.clear();
        Ok(())
    }

    fn finish(mut self) -> io::Result<()> {
        self.emit()?;
        self.out.write_all(LAST_CHUNK)
    }
}

impl Write for Chunked<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.emit()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
