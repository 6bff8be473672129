//! A client connection's life: read a request head, run the policy chain (route,
//! authenticate, limits), hand admitted requests to the exchange (see `exchange`), answer
//! refusals with the spec's errors, then the next request (keep-alive, pipelining in order)
//! or a polite close. Records one access-log line and one metrics sample per request.
//!
//! Must not touch: the wire format (that is `proto`), the decisions themselves (`policy`).

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::accesslog::Entry;
use super::core::Core;
use super::io::ClientIo;
use crate::errors::EdgeError;
use crate::metrics::Sample;
use crate::policy::auth::{parse_basic, MAX_CREDENTIALS};
use crate::policy::classify::{classify_request, Seg};
use crate::policy::mode;
use crate::policy::route::{normalize_host, route};
use crate::proto::{
    write_response_head, Framing, Method, ProtoError, RequestHead, ResponseHead, Version,
};
use crate::registry::{Cluster, Snapshot};
use crate::tenancy::{self, Prefix, RequestPlan, Tenant};

/// What happens to the connection after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Read the next request.
    KeepAlive,
    /// Close at once (the client is gone, or a response was cut).
    Close,
    /// Close politely: shut down writing, drain what the client still sends.
    Linger,
}

/// The result of one request, for the log, the metrics and the connection.
#[derive(Debug, Clone, Copy)]
pub(super) struct Outcome {
    pub status: u16,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub queue_us: Option<u64>,
    pub next: Next,
}

/// A request the policy chain let through.
pub(super) struct Admitted<'s> {
    pub cluster: &'s Arc<Cluster>,
    /// `max_bulk_actions` when this is a `_bulk` request.
    pub bulk_limit: Option<u64>,
    /// `PUT /<index>`: checked against the plan's shard capacity first.
    pub create_index: bool,
    /// A single-tenant `_reindex`: its body is read (a remote source is refused).
    pub reindex: bool,
    /// Multitenant class: the tenant's namespace and what to rewrite.
    pub tenant: Option<TenantPlan>,
}

/// How a multitenant request is rewritten.
#[derive(Debug, Clone, Copy)]
pub(super) struct TenantPlan {
    pub prefix: Prefix,
    pub plan: RequestPlan,
}

/// One client connection.
pub(super) struct Session {
    pub core: Rc<Core>,
    pub io: ClientIo,
    pub peer: SocketAddr,
    /// Bytes from the client; `buf[pos..]` not consumed yet.
    pub buf: Vec<u8>,
    pub pos: usize,
    pub head: RequestHead,
    /// The upstream's response head (reused across requests).
    pub rhead: ResponseHead,
    /// Scratch for what goes to the client.
    pub out: Vec<u8>,
    /// Scratch for what goes to the upstream.
    pub up_out: Vec<u8>,
    /// Copies of the request line kept past the head's buffer (log, HEAD handling).
    pub method: Method,
    pub version: Version,
    pub keep_alive: bool,
    pub target: Vec<u8>,
    /// The target sent upstream: the classified path in canonical form, then the query.
    pub fwd_target: Vec<u8>,
    /// A whitelisted index (tenant's name) the request's write may auto-create.
    pub auto_create: Vec<u8>,
    /// Bulk auto-create candidates already made sure of, this request.
    pub candidates_done: usize,
    /// Scratch for rewritten bytes (multitenant bodies and responses).
    pub rewritten: Vec<u8>,
    pub method_text: Vec<u8>,
    /// The client socket's SO_RCVLOWAT (1 but while a large body streams in).
    pub recv_lowat: usize,
    /// This request's body came too slowly to wait for whole buffers (see `send`).
    pub slow_body: bool,
}

/// Serves one client connection to its end.
pub async fn serve(core: Rc<Core>, io: ClientIo, peer: SocketAddr) {
    core.connections.set(core.connections.get() + 1);
    let mut s = Session {
        buf: core.take_buffer(),
        core: core.clone(),
        io,
        peer,
        pos: 0,
        head: RequestHead::new(),
        rhead: ResponseHead::default(),
        out: Vec::with_capacity(4096),
        up_out: Vec::with_capacity(4096),
        method: Method::Get,
        version: Version::Http11,
        keep_alive: true,
        target: Vec::with_capacity(256),
        fwd_target: Vec::with_capacity(256),
        auto_create: Vec::new(),
        candidates_done: 0,
        rewritten: Vec::new(),
        method_text: Vec::with_capacity(16),
        recv_lowat: 1,
        slow_body: false,
    };
    let next = s.run().await;
    let Session { io, buf, .. } = s;
    if next == Next::Linger {
        io.close(buf, core.shared.limits.linger).await;
    } else {
        core.give_buffer(buf);
    }
    core.connections.set(core.connections.get() - 1);
}

/// Why no request head could be read.
enum HeadEnd {
    /// The client closed or idled out between requests, or shutdown began: close quietly.
    Quiet,
    /// A refusal to answer, then close.
    Refuse(EdgeError, Instant),
}

fn proto_refusal(e: ProtoError, limits: &super::core::Limits) -> EdgeError {
    match e {
        ProtoError::HeadTooLarge | ProtoError::TooManyHeaders => {
            EdgeError::HeadTooLarge(limits.head.max_head)
        }
        ProtoError::UnsupportedVersion => EdgeError::VersionNotSupported,
        ProtoError::BodyTooLarge => EdgeError::BodyTooLarge(limits.max_body),
        ProtoError::Malformed(why) | ProtoError::Smuggling(why) | ProtoError::BadChunk(why) => {
            EdgeError::BadRequest(why)
        }
        ProtoError::UnsupportedTransferCoding => {
            EdgeError::BadRequest("unsupported transfer coding")
        }
    }
}

impl Session {
    async fn run(&mut self) -> Next {
        loop {
            let arrival = match self.read_head().await {
                Ok(t) => t,
                Err(HeadEnd::Quiet) => return Next::Close,
                Err(HeadEnd::Refuse(e, arrival)) => {
                    self.keep_alive = false;
                    // No request line to trust: log `-`, not the previous request's.
                    self.target.clear();
                    self.method_text.clear();
                    self.head.len = 0;
                    self.method = Method::Get;
                    self.version = Version::Http11;
                    let mut o = self.refuse(&e).await;
                    o.bytes_in = self.buf.len() as u64;
                    self.record(None, arrival, &o);
                    return Next::Linger;
                }
            };
            self.remember_request_line();
            self.pos = self.head.len;
            let snap = self.core.snapshot();
            let outcome = match self.admit(&snap) {
                Ok(mut adm) => {
                    let o = self.exchange(&mut adm, arrival).await;
                    self.record(Some(&adm.cluster.id), arrival, &o);
                    o
                }
                Err(e) => {
                    let has_body = !matches!(self.head.framing, Framing::None | Framing::Length(0));
                    if has_body {
                        self.keep_alive = false; // the unread body makes the stream unusable
                    }
                    let o = self.refuse(&e).await;
                    self.record(None, arrival, &o);
                    o
                }
            };
            if outcome.next != Next::KeepAlive || self.core.shutdown.is_fired() {
                return if outcome.next == Next::KeepAlive {
                    Next::Linger
                } else {
                    outcome.next
                };
            }
            // Keep what follows (pipelined requests) at the front of the buffer.
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
    }

    /// Reads until a complete head is in `buf[pos..]`; returns when its first byte came.
    async fn read_head(&mut self) -> Result<Instant, HeadEnd> {
        debug_assert_eq!(
            self.pos, 0,
            "each request starts at the front of the buffer"
        );
        let limits = self.core.shared.limits.clone();
        let mut first_byte = (!self.buf.is_empty()).then(Instant::now);
        loop {
            if let Some(arrival) = first_byte {
                match self.head.parse(&self.buf, &limits.head) {
                    Ok(true) => return Ok(arrival),
                    Ok(false) => {}
                    Err(e) => return Err(HeadEnd::Refuse(proto_refusal(e, &limits), arrival)),
                }
            }
            let wait = match first_byte {
                None => limits.idle_timeout,
                Some(t) => limits.head_timeout.saturating_sub(t.elapsed()),
            };
            let buf = std::mem::take(&mut self.buf);
            let (io, shutdown) = (&mut self.io, &self.core.shutdown);
            let idle = first_byte.is_none();
            let read = async {
                monoio::select! {
                    r = monoio::time::timeout(wait, io.read(buf)) => Some(r),
                    _ = shutdown.wait(), if idle => None,
                }
            };
            match read.await {
                Some(Ok((Ok(n), b))) if n > 0 => {
                    self.buf = b;
                    first_byte.get_or_insert_with(Instant::now);
                }
                Some(Ok((_, b))) => {
                    self.buf = b; // closed or failed
                    return Err(HeadEnd::Quiet);
                }
                Some(Err(_)) if first_byte.is_some() => {
                    self.buf = self.core.take_buffer();
                    return Err(HeadEnd::Refuse(
                        EdgeError::RequestTimeout,
                        first_byte.unwrap_or_else(Instant::now),
                    ));
                }
                Some(Err(_)) | None => {
                    self.buf = self.core.take_buffer(); // idle timeout / shutdown: the read took it
                    return Err(HeadEnd::Quiet);
                }
            }
        }
    }

    fn remember_request_line(&mut self) {
        let h = &self.head;
        let b = &self.buf;
        self.method = h.method;
        self.version = h.version;
        self.keep_alive = h.keep_alive;
        self.target.clear();
        self.target.extend_from_slice(h.target.of(b));
        self.method_text.clear();
        self.method_text.extend_from_slice(h.method_span.of(b));
    }

    /// The policy chain (pure decisions): Host vs SNI, route, credentials, limits.
    fn admit<'s>(&mut self, snap: &'s Snapshot) -> Result<Admitted<'s>, EdgeError> {
        let b = &self.buf;
        let h = &self.head;
        let mut host_buf = [0u8; 253];
        let host = match h.host {
            Some(span) => normalize_host(span.of(b), &mut host_buf)
                .ok_or(EdgeError::BadRequest("invalid Host header"))?,
            None => "localhost", // HTTP/1.0 without Host
        };
        if let Some(sni) = self.io.sni() {
            if !sni.eq_ignore_ascii_case(host) && h.host.is_some() {
                return Err(EdgeError::Misdirected);
            }
        }
        let mut cred_buf = [0u8; MAX_CREDENTIALS];
        let creds = h
            .authorization
            .and_then(|s| parse_basic(s.of(b), &mut cred_buf));
        let cluster = route(snap, host, creds.map(|c| c.0))?;
        let (user, pass) = creds.ok_or(EdgeError::AuthRequired)?;
        if !cluster.accepts(user, pass, Instant::now()) {
            return Err(EdgeError::AuthRequired);
        }
        if let Framing::Length(n) = h.framing {
            if n > self.core.shared.limits.max_body {
                return Err(EdgeError::BodyTooLarge(self.core.shared.limits.max_body));
            }
        }
        // Classify on the decoded path, apply the mode, and forward exactly what was classified
        // (for the multitenant class: with every index name in the tenant's namespace).
        let classified = classify_request(h.method, h.path(b), cluster.class)?;
        mode::decide(cluster.effective_mode(), &classified.class)?;
        self.fwd_target.clear();
        self.auto_create.clear();
        self.candidates_done = 0;
        let tenant = match cluster.prefix {
            None => {
                classified.path.write_canonical(&mut self.fwd_target);
                if let Some(q) = h.query(b) {
                    self.fwd_target.push(b'?');
                    self.fwd_target.extend_from_slice(q);
                }
                None
            }
            Some(prefix) => {
                let header = |name: &[u8]| h.header(b, name);
                let has_body = !matches!(h.framing, Framing::None | Framing::Length(0));
                tenancy::check_headers(
                    header(b"content-type"),
                    header(b"content-encoding"),
                    header(b"accept"),
                    has_body,
                )?;
                let t = Tenant {
                    prefix: &prefix,
                    ids: Some((&self.core.shared.sealer, &cluster.id)),
                };
                let plan =
                    tenancy::plan_request(&t, &classified, h.query(b), &mut self.fwd_target)?;
                Some(TenantPlan { prefix, plan })
            }
        };
        // A write that auto-creates a whitelisted index: the edge creates it first, after the
        // plan's shard check (for either class).
        if let Some(name) = tenancy::auto_create_target(h.method, &classified) {
            self.auto_create.extend_from_slice(name);
        }
        let last = classified
            .path
            .len()
            .checked_sub(1)
            .map(|i| classified.path.seg(i));
        let bulk_limit = (last == Some(&b"_bulk"[..])).then_some(cluster.plan.max_bulk_actions);
        let create_index =
            h.method == Method::Put && classified.route.is_some_and(|r| r.pattern == [Seg::Index]);
        let reindex = tenant.is_none() && classified.route.is_some_and(|r| r.name == "_reindex");
        Ok(Admitted {
            cluster,
            bulk_limit,
            create_index,
            reindex,
            tenant,
        })
    }

    /// Sends an error of the edge's own; the connection is kept only when the request had
    /// no unread body and the client wants keep-alive.
    pub(super) async fn refuse(&mut self, e: &EdgeError) -> Outcome {
        let body = e.body().to_bytes();
        let keep = self.keep_alive && !self.core.shutdown.is_fired();
        self.out.clear();
        let mut headers: Vec<(&str, &[u8])> =
            vec![("Content-Type", b"application/json; charset=UTF-8")];
        headers.extend(e.headers().iter().map(|(k, v)| (*k, v.as_bytes())));
        write_response_head(
            &mut self.out,
            self.version,
            e.status(),
            &headers,
            Framing::Length(body.len() as u64),
            keep,
        );
        if self.method != Method::Head {
            self.out.extend_from_slice(&body);
        }
        let out = std::mem::take(&mut self.out);
        let len = out.len() as u64;
        let (res, out) = self.io.write_all(out).await;
        self.out = out;
        let next = match (res.is_ok(), keep) {
            (true, true) => Next::KeepAlive,
            (true, false) => Next::Linger,
            (false, _) => Next::Close,
        };
        Outcome {
            status: e.status(),
            bytes_in: 0,
            bytes_out: len,
            queue_us: None,
            next,
        }
    }

    fn record(&self, cluster: Option<&str>, arrival: Instant, o: &Outcome) {
        let total_us = arrival.elapsed().as_micros() as u64;
        let bytes_in = o.bytes_in + self.head.len as u64;
        let cluster = cluster.unwrap_or("-");
        if cluster != "-" {
            let sample = Sample {
                status: o.status,
                bytes_in,
                bytes_out: o.bytes_out,
                queued_us: o.queue_us,
                total_us,
            };
            self.core.metrics.borrow_mut().record(cluster, &sample);
        }
        let entry = Entry {
            cluster,
            client: self.peer,
            method: &self.method_text,
            target: &self.target,
            status: o.status,
            bytes_in,
            bytes_out: o.bytes_out,
            queue_us: o.queue_us.unwrap_or(0),
            total_us,
        };
        self.core.log.borrow_mut().record(&entry, SystemTime::now());
    }
}
