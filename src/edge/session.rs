//! A client connection's life, one request after another: read a request head, decide
//! (`policy::decide`: route, credentials, limits, classification, mode), carry the
//! decision out (`exchange`) or answer the refusal, record one access-log line and one
//! metrics sample, then read the next request (keep-alive, pipelining in order) or close.
//!
//! A panic while one request is carried out is contained here (`faults::contain`): what
//! the request held is released, it is answered 500 when no byte of its response went out
//! yet (else the connection is closed), logged and counted, and the connection ends.
//!
//! Must not touch: the wire format (`proto`), the decisions themselves (`policy`), how a
//! request is carried out (`exchange` and its stages).

use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::time::{Instant, SystemTime};

use super::accesslog::{push_target, Entry};
use super::client::{Client, HeadEnd};
use super::core::Core;
use super::exchange::{self, Scratch};
use super::faults::{self, Point};
use super::io::Transport;
use super::outcome::{Next, Outcome};
use crate::cidr::client_address;
use crate::errors::EdgeError;
use crate::metrics::faults::PanicSite;
use crate::metrics::Sample;
use crate::policy::decide::{decide, preflight, Listener, Targets};
use crate::registry::requestlog::RequestEntry;
use crate::registry::Cluster;

/// Serves one client connection to its end; `early` are its first bytes, when something
/// read them before (`preamble`).
pub async fn serve<T: Transport>(core: Rc<Core>, io: T, peer: SocketAddr, early: Vec<u8>) {
    let _counted = Counted::new(&core);
    let mut s = Session {
        client: Client::new(core.clone(), io, peer, &early),
        scratch: Scratch::default(),
        targets: Targets::default(),
        line: RequestLine::default(),
    };
    let next = s.run().await;
    let (io, buf) = s.client.into_parts();
    if next == Next::Linger {
        io.close(buf, core.shared.limits.linger).await;
    } else {
        core.give_buffer(buf);
    }
}

/// The connection counted among the core's open ones while it lives, also when its task
/// ends by a panic.
struct Counted(Rc<Core>);

impl Counted {
    fn new(core: &Rc<Core>) -> Counted {
        core.connections.set(core.connections.get() + 1);
        Counted(core.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.connections.set(self.0.connections.get() - 1);
    }
}

/// Logs and counts a panic contained on this worker (`what`: the connection, its request).
pub fn panicked(core: &Core, what: &str, message: &str) {
    core.shared.metrics.faults.panicked(PanicSite::Edge);
    eprintln!("searchgate: a panic ended {what}: {message} (the worker goes on)");
}

/// The request line as the access log shows it, copied out of the read buffer (which the
/// next request reuses).
#[derive(Debug, Default)]
struct RequestLine {
    method: Vec<u8>,
    target: Vec<u8>,
    /// The client's address as decided (the socket's, or a trusted proxy's
    /// `X-Forwarded-For`), once known.
    client: Option<IpAddr>,
}

/// One connection's state between requests: the client, and buffers every request reuses.
struct Session<T> {
    client: Client<T>,
    scratch: Scratch,
    targets: Targets,
    line: RequestLine,
}

impl<T: Transport> Session<T> {
    async fn run(&mut self) -> Next {
        loop {
            let arrival = match self.client.read_head().await {
                Ok(t) => t,
                Err(HeadEnd::Quiet) => return Next::Close,
                Err(HeadEnd::Refuse(e, arrival)) => {
                    self.refuse_head(e, arrival).await;
                    return Next::Linger;
                }
            };
            self.remember_request_line();
            let outcome = match faults::contain(self.one_request(arrival)).await {
                Ok(o) => o,
                Err(message) => return self.after_panic(arrival, &message).await,
            };
            let c = &mut self.client;
            if outcome.next != Next::KeepAlive || c.core.shutdown.is_fired() {
                return if outcome.next == Next::KeepAlive {
                    Next::Linger
                } else {
                    outcome.next
                };
            }
            c.next_request();
        }
    }

    /// A panic ended the request being carried out (what it held was released): answer
    /// 500 if nothing of its response went out yet, log, count, and end the connection.
    async fn after_panic(&mut self, arrival: Instant, message: &str) -> Next {
        let target = String::from_utf8_lossy(&self.line.target).into_owned();
        let method = String::from_utf8_lossy(&self.line.method).into_owned();
        let what = format!("a request ({method} {target} from {})", self.client.peer);
        panicked(&self.client.core, &what, message);
        let c = &mut self.client;
        c.break_off();
        let o = if c.wrote {
            Outcome {
                status: 500,
                ..Outcome::gone()
            }
        } else {
            c.fail(EdgeError::Internal).await
        };
        // Logged without its cluster (the decision went with the request's state); the
        // panic is counted apart.
        self.record(None, None, arrival, &o);
        if o.next == Next::Linger {
            Next::Linger
        } else {
            Next::Close
        }
    }

    /// Decides on the request whose head is in the buffer and carries the decision out.
    async fn one_request(&mut self, arrival: Instant) -> Outcome {
        let c = &mut self.client;
        c.hook = faults::requested(c.core.shared.debug_hooks, c.head(), c.buf());
        faults::inject(c.hook, Point::Head);
        if c.hook == Some(Point::Worker) {
            c.core.crash_requested.set(true);
        }
        let snap = c.core.snapshot();
        let (head, buf) = (c.head(), c.buf());
        let forwarded = head
            .headers
            .iter()
            .filter(|h| h.name.of(buf).eq_ignore_ascii_case(b"x-forwarded-for"))
            .map(|h| h.value.of(buf));
        let trusted = &c.core.shared.limits.trusted_proxies;
        let client = match client_address(c.peer.ip(), forwarded, trusted) {
            Ok(ip) => {
                self.line.client = Some(ip);
                ip
            }
            Err(_) => {
                let e = EdgeError::BadRequest(
                    "X-Forwarded-For from a trusted proxy must be a list of IP addresses",
                );
                let o = c.fail(e).await;
                self.record(None, None, arrival, &o);
                return o;
            }
        };
        let listener = Listener {
            client,
            sni: c.io.sni(),
            max_body: c.core.shared.limits.max_body,
            ids: Some(&c.core.shared.sealer),
            wall_ms: crate::calendar::millis_of(std::time::SystemTime::now()),
        };
        c.cors_origin.clear();
        if let Some(cluster) = preflight(&**snap, c.head(), c.buf(), Instant::now()) {
            c.cors_for_origin();
            let o = c.answer_preflight().await;
            self.record(Some(&**cluster), None, arrival, &o);
            return o;
        }
        let decided = decide(
            &**snap,
            c.head(),
            c.buf(),
            &listener,
            Instant::now(),
            &mut self.targets,
        );
        match decided {
            Ok(mut d) => {
                if d.cors {
                    c.cors_for_origin();
                }
                let targets = &mut self.targets;
                let o = exchange::run(c, &mut self.scratch, &mut d, targets, arrival).await;
                let key = d.key.map(|k| k.name.as_str());
                self.record(Some(&**d.cluster), key, arrival, &o);
                o
            }
            Err(refused) => {
                if refused.cors {
                    c.cors_for_origin();
                }
                let o = c.fail(refused.error).await;
                // Counted for the cluster when its credentials opened one (413 on the
                // Content-Length, a blocked endpoint, a mode refusal).
                let key = refused.key.map(|k| k.name.as_str());
                self.record(refused.cluster.map(|c| &**c), key, arrival, &o);
                o
            }
        }
    }

    /// Answers a head that could not be read (400, 408, 413, 505) and logs it.
    async fn refuse_head(&mut self, e: EdgeError, arrival: Instant) {
        let c = &mut self.client;
        // No request line to trust: log `-`, not the previous request's.
        self.line.target.clear();
        self.line.method.clear();
        c.begin_unreadable();
        let mut o = c.fail(e).await;
        o.bytes_in = c.buf().len() as u64;
        self.record(None, None, arrival, &o);
    }

    /// The request whose head was read begins; its request line is kept for the log.
    fn remember_request_line(&mut self) {
        let c = &mut self.client;
        c.begin_request();
        let (h, buf) = (c.head(), c.buf());
        self.line.target.clear();
        self.line.target.extend_from_slice(h.target.of(buf));
        self.line.method.clear();
        self.line.method.extend_from_slice(h.method_span.of(buf));
        self.line.client = None;
    }

    fn record(&self, cluster: Option<&Cluster>, key: Option<&str>, arrival: Instant, o: &Outcome) {
        let c = &self.client;
        let total_us = arrival.elapsed().as_micros() as u64;
        let bytes_in = o.bytes_in + c.head_len() as u64;
        let id = cluster.map_or("-", |c| c.id.as_str());
        if c.core.shared.metrics.is_recording() {
            let sample = Sample {
                status: o.status,
                bytes_in,
                bytes_out: o.bytes_out,
                queued_us: o.queue_us,
                upstream_us: o.upstream_us,
                total_us,
            };
            let mut metrics = c.core.metrics.borrow_mut();
            match id {
                "-" => metrics.record_unrouted(),
                id => metrics.record(id, &sample),
            }
        }
        let entry = Entry {
            cluster: id,
            key,
            client: c.peer,
            method: &self.line.method,
            target: &self.line.target,
            status: o.status,
            bytes_in,
            bytes_out: o.bytes_out,
            queue_us: o.queue_us.unwrap_or(0),
            total_us,
        };
        let now = SystemTime::now();
        if let Some(cluster) = cluster {
            self.log_for_customer(cluster, &entry, o, now);
        }
        c.core.log.borrow_mut().record(&entry, now);
    }

    /// The cluster's own request log (`registry::requestlog`): the path as the client sent
    /// it (the tenant's own index names, query names only), never what the upstream got.
    fn log_for_customer(&self, cluster: &Cluster, e: &Entry<'_>, o: &Outcome, now: SystemTime) {
        let mut path = String::new();
        push_target(&mut path, e.target);
        let now_ms = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let entry = RequestEntry {
            at_ms: now_ms - (e.total_us / 1000) as i64,
            key: e.key.map(str::to_string),
            client: self.line.client.unwrap_or(e.client.ip()),
            method: String::from_utf8_lossy(e.method).into_owned(),
            path,
            status: e.status,
            queue_us: o.queue_us,
            upstream_us: o.upstream_us,
            total_us: e.total_us,
            bytes_in: e.bytes_in,
            bytes_out: e.bytes_out,
        };
        cluster
            .state
            .requests
            .push(entry, cluster.slow_request_ms());
    }
}
