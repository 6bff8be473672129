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
//! An acquire can carry the places the request counts besides its permit (an index's
//! shards, an open's search contexts): they are reserved here before it queues, and what
//! the request did with them arrives while the permit is held ([`super::counted`]), so
//! the plan's shard capacity and open contexts are counted once for the fleet too.
//!
//! A granted permit is held until the requester sends a release. Its connection ending
//! (the requester's process killed, its client gone) or staying silent past the edge's
//! deadline ends the permit at once, and gives back what it reserved and did not settle;
//! a requester that closes while queued leaves the queue.
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

use super::counted::{Answer, Places};
use super::membership::{Home, Member, Membership};
use super::outstanding::Outstanding;
use super::places::{Held, ACK, MAX_HELD};
use super::wire::{self, Acquire, Counts, PeerSecret, Report, Request, Verdict, MAC, NONCE};
use crate::metrics::MetricsHub;
use crate::policy::admit::{bell, Admission, Limit, Permit, Ticket};
use crate::registry::{Cluster, Registry};

/// How long a handshake may take.
const HANDSHAKE: Duration = Duration::from_secs(2);
/// How long an idle peer connection is kept (requesters drop theirs sooner).
const IDLE: Duration = Duration::from_secs(300);
/// How often a queued acquire looks whether its requester went away (a queued acquire
/// is woken by its grant; this is only for the requester's end).
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
    /// The remote permits this node's requests hold (what a new home asks about).
    pub outstanding: Arc<Outstanding>,
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
            Some(Request::Outstanding { except, clusters }) => {
                return report_outstanding(&mut conn, s, &except, &clusters)
            }
        };
        let snap = s.registry.load();
        let Some(cluster) = snap.by_id(&a.cluster).cloned() else {
            refuse::<()>(&mut conn, Verdict::NotHome)?;
            continue;
        };
        let Some((permit, places)) = decide(&mut conn, s, &cluster, &a)? else {
            continue;
        };
        s.hub
            .fleet
            .peers
            .peer_grants
            .fetch_add(1, Ordering::Relaxed);
        conn.write_all(&Verdict::Granted.encode())?;
        let released = hold(&mut conn, s, places)?;
        drop(permit);
        if !released {
            return Ok(());
        }
    }
}

/// Holds a granted permit: applies what the requester says about its places until its
/// release (`true`). A connection that ends or stays silent past the longest hold ends
/// it (`false`); what it reserved and did not settle goes back.
fn hold(conn: &mut TcpStream, s: &HomeSettings, mut places: Places<'_>) -> io::Result<bool> {
    let end = Instant::now() + s.max_hold;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        conn.set_read_timeout(Some(left))?;
        let held = match read_held(conn) {
            Ok(Some(h)) => h,
            Ok(None) | Err(_) => return Ok(false),
        };
        match places.apply(held, Instant::now()) {
            Answer::None => return Ok(true),
            Answer::Ack => conn.write_all(&[ACK])?,
            Answer::Verdict(v) => conn.write_all(&v.encode())?,
        }
    }
}

/// The next message on a held permit's connection (`None`: the connection ended). A
/// release is one byte and the next acquire may follow it at once: it is read alone.
/// Any other message is answered before the requester sends more, so nothing follows it.
fn read_held(conn: &mut TcpStream) -> io::Result<Option<Held>> {
    let mut first = [0u8; 1];
    if conn.read(&mut first)? == 0 {
        return Ok(None);
    }
    let mut buf = first.to_vec();
    loop {
        match Held::parse(&buf) {
            Ok(Some((h, used))) if used == buf.len() => return Ok(Some(h)),
            Ok(None) if buf.len() <= MAX_HELD => {}
            _ => return Err(io::ErrorKind::InvalidData.into()),
        }
        let mut chunk = [0u8; 4096];
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
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
        let mut chunk = [0u8; 4096];
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
    let counts = || match s.registry.load().by_id(cluster) {
        Some(c) if Instant::now() < end => {
            Counts(Limit::ALL.map(|l| c.lanes.get(l, &c.allowance).in_flight()))
        }
        _ => Counts::default(),
    };
    // Each count as it falls (woken by the releases, `policy::admit::bell`), the last
    // zero (at the latest when the deadline passed).
    let mut last = counts();
    loop {
        conn.write_all(&last.encode())?;
        if last.is_zero() {
            return Ok(());
        }
        bell::wait_until(end, || counts() != last);
        last = counts();
    }
}

/// Answers a new home that took `clusters` over from a home that left the fleet (its
/// peer listener at `except`): the remote permits this node's requests hold for them from
/// other homes, again each time they fall, until none is left (or the deadline passed:
/// they ended by then).
fn report_outstanding(
    conn: &mut TcpStream,
    s: &HomeSettings,
    except: &str,
    clusters: &[String],
) -> io::Result<()> {
    let Ok(except) = except.parse() else {
        return Err(io::ErrorKind::InvalidData.into());
    };
    let end = Instant::now() + s.max_hold;
    let mut last = s.outstanding.report(clusters, except);
    loop {
        conn.write_all(&last.encode())?;
        if last.0.is_empty() {
            return Ok(());
        }
        last = s.outstanding.wait_report(clusters, except, &last, end);
        if Instant::now() >= end {
            last = Report::default();
        }
    }
}

/// Decides acquire `a` of `cluster` as the home: a permit and the places it reserved, or
/// the verdict already written (`None`). The places are reserved before the acquire
/// queues, as on one node.
fn decide<'c>(
    conn: &mut TcpStream,
    s: &HomeSettings,
    cluster: &'c Cluster,
    a: &Acquire,
) -> io::Result<Option<(Permit, Places<'c>)>> {
    let start = Instant::now();
    if s.membership.view().home(&cluster.id, start) != Home::Here {
        return refuse(conn, Verdict::NotHome);
    }
    let places = match Places::reserve(cluster, a, start) {
        Ok(p) => p,
        Err(v) => return refuse(conn, v),
    };
    let plan = &cluster.plan;
    let (allowance, limit) = cluster.allowance_for(a.read);
    let deadline = start + Duration::from_millis(u64::from(a.budget_ms));
    let mut ticket = match allowance.acquire() {
        Admission::Granted(p) => return still_home(conn, s, &a.cluster, p, places),
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
        Waited::Granted(p) => still_home(conn, s, &a.cluster, p, places),
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
fn still_home<'c>(
    conn: &mut TcpStream,
    s: &HomeSettings,
    cluster: &str,
    p: Permit,
    places: Places<'c>,
) -> io::Result<Option<(Permit, Places<'c>)>> {
    if s.membership.view().home(cluster, Instant::now()) == Home::Here {
        return Ok(Some((p, places)));
    }
    drop(p);
    refuse(conn, Verdict::NotHome)
}

fn refuse<T>(conn: &mut TcpStream, v: Verdict) -> io::Result<Option<T>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::fleet::handover;
    use crate::fleet::membership::View;
    use crate::registry::Snapshot;
    use crate::tenancy::TenancyKey;

    const CONFIG: &str = r#"
[edge]
domain = "example.test"
http = "127.0.0.1:0"
access_log = "off"
[[plans]]
name = "p"
concurrency = 1
queue_size = 1
queue_timeout = "1s"
shards = 10
disk = "1gb"
memory = "1gb"
max_bulk_actions = 10
[[clusters]]
id = "acme"
hostname = "acme"
region = "r1"
class = "single-tenant"
plan = "p"
username = "acmeuser"
password = "acmepass"
upstream = ["127.0.0.1:9"]
"#;

    /// A home of cluster `acme` on 127.0.0.1, and a connection to it through the handshake.
    fn home() -> TcpStream {
        let config = Config::parse(CONFIG, "test").unwrap();
        let key = TenancyKey::from_bytes([3; 32]);
        let snap = Snapshot::build(&config, None, 1, Instant::now(), &key).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let membership = Arc::new(Membership::new("h".into()));
        let view = View {
            me: "h".into(),
            members: vec![Member {
                node: "h".into(),
                peer: addr,
            }],
            valid_until: Some(Instant::now() + Duration::from_secs(3600)),
            handed: Vec::new(),
        };
        membership.publish(view, Instant::now());
        let secret = PeerSecret::of([9; 32]);
        let s = HomeSettings {
            secret: secret.clone(),
            registry: Arc::new(Registry::new(snap)),
            membership,
            hub: Arc::new(MetricsHub::default()),
            max_hold: Duration::from_secs(60),
            lease: Duration::from_secs(5),
            outstanding: Arc::default(),
        };
        std::mem::forget(spawn(listener, Arc::new(s)).unwrap());
        handover::connect(addr, &secret, "t").unwrap()
    }

    fn verdict(conn: &mut TcpStream) -> Verdict {
        let mut v = [0u8; wire::VERDICT];
        conn.read_exact(&mut v).unwrap();
        Verdict::parse(&v).unwrap()
    }

    // A release and the next acquire that arrive in one read are two messages: the
    // permit goes back and the next one is granted on the same connection (the plan
    // allows one at a time, so the second grant proves the first permit was released).
    #[test]
    fn a_release_and_the_next_acquire_together_are_both_served() {
        let mut conn = home();
        let mut acquire = Vec::new();
        Acquire {
            cluster: "acme".into(),
            read: true,
            budget_ms: 10_000,
            index: None,
            contexts: 0,
        }
        .encode(&mut acquire);
        conn.write_all(&acquire).unwrap();
        assert_eq!(verdict(&mut conn), Verdict::Granted);
        for _ in 0..3 {
            let mut both = vec![wire::RELEASE];
            both.extend_from_slice(&acquire);
            conn.write_all(&both).unwrap();
            assert_eq!(verdict(&mut conn), Verdict::Granted);
        }
        // A held message is answered, and the permit is still held after it.
        conn.write_all(
            &Held::Closed {
                ids: vec!["x".into()],
            }
            .encode(),
        )
        .unwrap();
        let mut ack = [0u8; 1];
        conn.read_exact(&mut ack).unwrap();
        assert_eq!(ack[0], ACK);
    }
}
