//! The peer listener: where a cluster's home grants permits of the cluster's allowance to
//! the other nodes. One thread per peer connection (blocking std I/O: a connection is one
//! request's permit at a time, and away-from-home requests are the exception a balancer
//! in front keeps rare).
//!
//! After the handshake ([`super::wire`]) each acquire is decided the way the edge decides
//! its own requests, on the same [`Allowance`] and its FIFO queue (`policy::admit`, the
//! one queue: local and remote requests wait in it together): granted, queued until the
//! plan's queue timeout or the request's deadline (the budget the requester sent: time
//! already spent counts), or refused when the queue is full. Only a home admits: an
//! acquire for a cluster this node is not home of now (by its own view, its registration
//! valid) is answered `NotHome`.
//!
//! A granted permit is held until the requester sends a release. Its connection ending
//! (the requester's process killed, its client gone) or staying silent past the edge's
//! deadline ends the permit at once; a requester that closes while queued leaves the
//! queue.
//!
//! Must not touch: the request path, the store, what a permit means (the allowance's).

use std::future::Future;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use super::membership::{Home, Member, Membership};
use super::wire::{self, Acquire, Counts, PeerSecret, Request, Verdict, MAC, NONCE, RELEASE};
use crate::metrics::MetricsHub;
use crate::policy::admit::{Admission, Limit, Permit, Ticket};
use crate::registry::Registry;

/// How long a handshake may take.
const HANDSHAKE: Duration = Duration::from_secs(2);
/// How long an idle peer connection is kept (requesters drop theirs sooner).
const IDLE: Duration = Duration::from_secs(300);
/// How often a queued acquire looks whether its requester went away.
const SLICE: Duration = Duration::from_millis(50);

/// What the listener needs.
#[derive(Debug)]
pub struct HomeSettings {
    pub secret: PeerSecret,
    pub registry: Arc<Registry>,
    pub membership: Arc<Membership>,
    pub hub: Arc<MetricsHub>,
    /// The longest a requester may hold a permit without a word: the edge's deadline
    /// (and a little for the release to arrive).
    pub max_hold: Duration,
    /// How long a cluster handed to a new home stays handed before this node's own view
    /// must show the new home (the registrations' lease).
    pub lease: Duration,
}

/// The running peer listener.
#[derive(Debug)]
pub struct PeerListener {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl PeerListener {
    /// Stops accepting (connections already in flight end on their own).
    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        let _ = self.handle.join();
    }
}

/// Starts serving peers on `listener`.
pub fn spawn(listener: TcpListener, s: Arc<HomeSettings>) -> io::Result<PeerListener> {
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let halt = stop.clone();
    let handle = std::thread::Builder::new()
        .name("fleet-peers".into())
        .spawn(move || {
            for conn in listener.incoming() {
                if halt.load(Ordering::Acquire) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let s = s.clone();
                let _ = std::thread::Builder::new()
                    .name("fleet-peer".into())
                    .spawn(move || {
                        let _ = serve(conn, &s);
                    });
            }
        })?;
    Ok(PeerListener { addr, stop, handle })
}

/// One peer connection: the handshake, then acquires one after the other.
fn serve(mut conn: TcpStream, s: &HomeSettings) -> io::Result<()> {
    conn.set_nodelay(true)?;
    conn.set_read_timeout(Some(HANDSHAKE))?;
    conn.set_write_timeout(Some(HANDSHAKE))?;
    let Some(name) = handshake(&mut conn, &s.secret)? else {
        let _ = conn.shutdown(Shutdown::Both);
        return Ok(());
    };
    loop {
        conn.set_read_timeout(Some(IDLE))?;
        let a = match read_request(&mut conn)? {
            None => return Ok(()),
            Some(Request::Acquire(a)) => a,
            Some(Request::Handover { cluster, peer }) => {
                return hand_over(&mut conn, s, &cluster, name, &peer)
            }
        };
        let Some(permit) = decide(&mut conn, s, &a)? else {
            continue;
        };
        s.hub
            .fleet
            .peers
            .peer_grants
            .fetch_add(1, Ordering::Relaxed);
        conn.write_all(&Verdict::Granted.encode())?;
        // Held until the release; a connection that ends or stays silent gives it back.
        conn.set_read_timeout(Some(s.max_hold))?;
        let mut b = [0u8; 1];
        let released = matches!(conn.read(&mut b), Ok(1) if b[0] == RELEASE);
        drop(permit);
        if !released {
            return Ok(());
        }
    }
}

/// The home's side of the handshake: the requester's name once it proved the secret.
fn handshake(conn: &mut TcpStream, secret: &PeerSecret) -> io::Result<Option<String>> {
    let mut buf = Vec::with_capacity(64);
    let (theirs, name) = loop {
        let mut chunk = [0u8; 300];
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        match wire::parse_hello(&buf) {
            Ok(Some((nonce, name, used))) if used == buf.len() => break (nonce, name),
            Ok(None) if buf.len() < 8 + NONCE + 1 + 255 => {}
            _ => return Ok(None), // not a peer (an HTTP request, say): nothing is answered
        }
    };
    let mine: [u8; NONCE] = rand::random();
    conn.write_all(&wire::challenge(&mine, &secret.home_mac(&theirs, &mine)))?;
    let mut proof = [0u8; MAC];
    conn.read_exact(&mut proof)?;
    if !PeerSecret::check(&secret.peer_mac(&mine, &theirs), &proof) {
        return Ok(None);
    }
    conn.write_all(&[wire::WELCOME])?;
    Ok(Some(name))
}

/// The next request, or `None` at the end of the connection. A requester sends one and
/// waits for its answer, so nothing follows it in the stream.
fn read_request(conn: &mut TcpStream) -> io::Result<Option<Request>> {
    let mut buf = Vec::with_capacity(64);
    loop {
        let mut chunk = [0u8; 600];
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            return match buf.is_empty() {
                true => Ok(None),
                false => Err(io::ErrorKind::UnexpectedEof.into()),
            };
        }
        buf.extend_from_slice(&chunk[..n]);
        match wire::parse_request(&buf) {
            Ok(Some((r, used))) if used == buf.len() => return Ok(Some(r)),
            Ok(None) => {}
            _ => return Err(io::ErrorKind::InvalidData.into()),
        }
    }
}

/// Hands `cluster` to node `name` (peer listener `peer`), its new home: admits it no more
/// from now on (whatever this node's view says until it shows the new home), then counts
/// down its requests in flight, each time they fall, until none is left or the deadline
/// passed.
fn hand_over(
    conn: &mut TcpStream,
    s: &HomeSettings,
    cluster: &str,
    name: String,
    peer: &str,
) -> io::Result<()> {
    let Ok(peer) = peer.parse() else {
        return Err(io::ErrorKind::InvalidData.into());
    };
    let start = Instant::now();
    s.membership
        .hand(cluster, Member { node: name, peer }, start + s.lease);
    let end = start + s.max_hold;
    let mut last = None;
    loop {
        let counts = match s.registry.load().by_id(cluster) {
            Some(c) => Counts(Limit::ALL.map(|l| c.lanes.get(l, &c.allowance).in_flight())),
            None => Counts::default(),
        };
        let counts = if Instant::now() >= end {
            Counts::default()
        } else {
            counts
        };
        if last != Some(counts) {
            conn.write_all(&counts.encode())?;
            last = Some(counts);
        }
        if counts.is_zero() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Decides acquire `a` as the home: a permit, or the verdict already written (`None`).
fn decide(conn: &mut TcpStream, s: &HomeSettings, a: &Acquire) -> io::Result<Option<Permit>> {
    let start = Instant::now();
    let snap = s.registry.load();
    let view = s.membership.view();
    let cluster = match snap.by_id(&a.cluster) {
        Some(c) if view.home(&c.id, start) == Home::Here => c,
        _ => return refuse(conn, Verdict::NotHome),
    };
    let plan = &cluster.plan;
    let (allowance, limit) = cluster.allowance_for(a.read);
    let deadline = start + Duration::from_millis(u64::from(a.budget_ms));
    let mut ticket = match allowance.acquire() {
        Admission::Granted(p) => return still_home(conn, s, &a.cluster, p),
        Admission::Full => {
            let v = Verdict::Full {
                concurrency: allowance.limit(),
                queue_size: plan.queue_size_of(limit),
            };
            return refuse(conn, v);
        }
        Admission::Queued(t) => t,
    };
    let queue_end = (start + plan.queue_timeout).min(deadline);
    match wait(&mut ticket, queue_end, conn) {
        Waited::Granted(p) => still_home(conn, s, &a.cluster, p),
        Waited::Gone => Err(io::ErrorKind::ConnectionAborted.into()),
        Waited::Timeout if Instant::now() >= deadline => refuse(conn, Verdict::Deadline),
        Waited::Timeout => {
            allowance.note_refusal();
            let waited = start.elapsed().as_millis();
            let v = Verdict::QueueTimeout {
                concurrency: allowance.limit(),
                waited_ms: u32::try_from(waited).unwrap_or(u32::MAX),
            };
            refuse(conn, v)
        }
    }
}

/// A permit granted while the cluster was being handed over goes back unused (the
/// handover counts what is in flight after it marked the cluster).
fn still_home(
    conn: &mut TcpStream,
    s: &HomeSettings,
    cluster: &str,
    p: Permit,
) -> io::Result<Option<Permit>> {
    if s.membership.view().home(cluster, Instant::now()) == Home::Here {
        return Ok(Some(p));
    }
    drop(p);
    refuse(conn, Verdict::NotHome)
}

fn refuse(conn: &mut TcpStream, v: Verdict) -> io::Result<Option<Permit>> {
    conn.write_all(&v.encode())?;
    Ok(None)
}

enum Waited {
    Granted(Permit),
    Timeout,
    /// The requester closed its connection (its client went away).
    Gone,
}

/// Wakes a thread parked on a ticket.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Waits for `ticket` until `until`, looking every [`SLICE`] whether `conn` ended.
fn wait(ticket: &mut Ticket, until: Instant, conn: &TcpStream) -> Waited {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(p) = std::pin::Pin::new(&mut *ticket).poll(&mut cx) {
            return Waited::Granted(p);
        }
        let now = Instant::now();
        if now >= until {
            return Waited::Timeout;
        }
        if closed(conn) {
            return Waited::Gone;
        }
        std::thread::park_timeout((until - now).min(SLICE));
    }
}

/// Whether the peer closed `conn` (or sent something it may not send while queued).
fn closed(conn: &TcpStream) -> bool {
    if conn.set_nonblocking(true).is_err() {
        return true;
    }
    let mut b = [0u8; 1];
    let gone = !matches!(conn.peek(&mut b), Err(ref e) if e.kind() == io::ErrorKind::WouldBlock);
    gone | conn.set_nonblocking(false).is_err()
}
