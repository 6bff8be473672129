//! The requester's side of a remote permit (issue 27): a request whose cluster's home is
//! another node asks that home for a permit over the peer protocol (`fleet::wire`), holds
//! it while its exchange runs, and gives it back when the exchange ends ([`Slot`]'s drop).
//! Peer connections are kept per core and per home, one permit at a time on each, reused
//! from one request to the next (the handshake is paid once per connection).
//!
//! A request whose client goes away while its acquire waits closes the peer connection:
//! the home takes it out of the queue (or takes back the permit it just granted).
//!
//! Must not touch: the decision (the home's), the allowance (`policy::admit`), the exchange
//! (`exchange` calls [`acquire`] in place of the local allowance).

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use monoio::io::{AsyncReadRentExt, AsyncWriteRentExt};
use monoio::net::TcpStream;

use super::timer::Timer;
use crate::fleet::membership::Membership;
use crate::fleet::outstanding::{Counted, Outstanding};
use crate::fleet::places::{Held, ACK};
use crate::fleet::wire::{self, Acquire, PeerSecret, Verdict, CHALLENGE, NONCE, RELEASE, VERDICT};
use crate::metrics::MetricsHub;
use crate::policy::admit::{Limit, Permit};

/// How often a waiting acquire looks whether the client went away.
const SLICE: Duration = Duration::from_millis(50);
/// Idle peer connections older than this are not reused (the home keeps them longer).
const IDLE: Duration = Duration::from_secs(60);
/// Idle peer connections kept per core and home.
const MAX_IDLE: usize = 64;

/// What the edge needs to admit at a fleet's homes (`Shared::fleet`).
#[derive(Debug)]
pub struct FleetHook {
    pub membership: Arc<Membership>,
    pub secret: PeerSecret,
    pub me: String,
    /// The remote permits this node's requests hold (`fleet::outstanding`).
    pub outstanding: Arc<Outstanding>,
}

/// A core's idle peer connections, by home.
#[derive(Debug, Default)]
pub struct PeerPool {
    idle: RefCell<HashMap<SocketAddr, Vec<(TcpStream, Instant)>>>,
}

impl PeerPool {
    fn take(&self, addr: SocketAddr, now: Instant) -> Option<TcpStream> {
        let mut idle = self.idle.borrow_mut();
        let list = idle.get_mut(&addr)?;
        while let Some((tcp, since)) = list.pop() {
            if now.saturating_duration_since(since) < IDLE && !super::sock::idle_unusable(&tcp) {
                return Some(tcp);
            }
        }
        None
    }

    fn put(&self, addr: SocketAddr, tcp: TcpStream) {
        let mut idle = self.idle.borrow_mut();
        let list = idle.entry(addr).or_default();
        if list.len() < MAX_IDLE {
            list.push((tcp, Instant::now()));
        }
    }
}

/// A permit of a request's allowance: this node's own, or one a home granted. Held for
/// its drop only: the permit goes back when the slot does.
#[derive(Debug)]
#[allow(dead_code)]
pub enum Slot {
    Local(Permit),
    Remote(RemotePermit),
}

/// A permit granted by another node; given back on drop.
#[derive(Debug)]
pub struct RemotePermit {
    tcp: Option<TcpStream>,
    home: SocketAddr,
    pool: Rc<PeerPool>,
    /// Counted among the node's remote permits until the exchange ends (a new home that
    /// takes the cluster over from a departed home counts it, `fleet::orphans`).
    _counted: Counted,
}

impl RemotePermit {
    /// Tells the home what the request did with the places it counts (`fleet::places`) and
    /// waits, until `until`, for the home's answer: an ack, or a reservation's verdict.
    /// `None` when the connection failed: the permit and what it held at the home are
    /// gone (the home gave them back).
    pub async fn tell(
        &mut self,
        timer: &mut Timer,
        held: &Held,
        until: Instant,
    ) -> Option<Verdict> {
        let mut tcp = self.tcp.take()?;
        let reserve = matches!(held, Held::ReserveIndex(_));
        let (res, _) = timer.run(until, tcp.write_all(held.encode())).await?;
        res.ok()?;
        let len = if reserve { VERDICT } else { 1 };
        let (res, buf) = timer.run(until, tcp.read_exact(vec![0u8; len])).await?;
        res.ok()?;
        let answer = if reserve {
            let mut b = [0u8; VERDICT];
            b.copy_from_slice(&buf);
            Verdict::parse(&b).ok()?
        } else if buf[0] == ACK {
            Verdict::Granted
        } else {
            return None;
        };
        self.tcp = Some(tcp);
        Some(answer)
    }
}

impl Drop for RemotePermit {
    fn drop(&mut self) {
        let Some(mut tcp) = self.tcp.take() else {
            return;
        };
        // The release goes out on a task of its own (a drop cannot wait); the connection
        // goes back to the pool once it is written, or is dropped, which gives the permit
        // back too.
        let (pool, home) = (self.pool.clone(), self.home);
        monoio::spawn(async move {
            let (res, _) = tcp.write_all(vec![RELEASE]).await;
            if res.is_ok() {
                pool.put(home, tcp);
            }
        });
    }
}

/// Why a home did not grant a permit.
#[derive(Debug)]
pub enum Refused {
    /// The home's verdict.
    Verdict(Verdict),
    /// The home could not be reached or did not answer (503).
    Unreachable,
    /// The client went away while the acquire waited.
    Gone,
}

/// Where and how a request asks: the core's pool, the connection's timer, whether its
/// client went away.
pub struct Asking<'a> {
    pub pool: &'a Rc<PeerPool>,
    pub hub: &'a MetricsHub,
    pub timer: &'a mut Timer,
    pub gone: &'a dyn Fn() -> bool,
    pub connect_timeout: Duration,
}

/// Asks home `home` for a permit of `acquire`'s allowance (`limit`), until `deadline`
/// (and a moment for the home's own deadline verdict to arrive).
pub async fn acquire(
    a: Asking<'_>,
    hook: &FleetHook,
    home: SocketAddr,
    acquire: &Acquire,
    limit: Limit,
    deadline: Instant,
) -> Result<RemotePermit, Refused> {
    let Asking {
        pool,
        hub,
        timer,
        gone,
        connect_timeout,
    } = a;
    let mut msg = Vec::with_capacity(64);
    acquire.encode(&mut msg);
    // A pooled connection the home closed in the meantime fails before any verdict: then
    // once more on a new one (nothing was granted on the first).
    for fresh in [false, true] {
        let pooled = if fresh {
            None
        } else {
            pool.take(home, Instant::now())
        };
        let was_pooled = pooled.is_some();
        let tcp = match pooled {
            Some(t) => t,
            None => {
                let connect_by = (Instant::now() + connect_timeout).min(deadline);
                match timer.run(connect_by, connect(home, hook)).await {
                    Some(Ok(t)) => t,
                    _ => return Err(Refused::Unreachable),
                }
            }
        };
        match ask(timer, gone, tcp, &msg, deadline).await {
            Ok((tcp, Verdict::Granted)) => {
                hub.fleet
                    .peers
                    .remote_permits
                    .fetch_add(1, Ordering::Relaxed);
                return Ok(RemotePermit {
                    tcp: Some(tcp),
                    home,
                    pool: pool.clone(),
                    _counted: hook.outstanding.hold(&acquire.cluster, home, limit),
                });
            }
            Ok((tcp, v)) => {
                pool.put(home, tcp);
                return Err(Refused::Verdict(v));
            }
            Err(Refused::Unreachable) if was_pooled => continue,
            Err(r) => return Err(r),
        }
    }
    Err(Refused::Unreachable)
}

/// Sends `msg` on `tcp` and waits for the verdict, looking every [`SLICE`] whether the
/// client went away.
async fn ask(
    timer: &mut Timer,
    gone: &dyn Fn() -> bool,
    mut tcp: TcpStream,
    msg: &[u8],
    deadline: Instant,
) -> Result<(TcpStream, Verdict), Refused> {
    let (res, _) = tcp.write_all(msg.to_vec()).await;
    if res.is_err() {
        return Err(Refused::Unreachable);
    }
    let hard_end = deadline + Duration::from_secs(1);
    let verdict = {
        let mut read = pin!(tcp.read_exact(vec![0u8; VERDICT]));
        loop {
            let now = Instant::now();
            if now >= hard_end {
                return Err(Refused::Unreachable);
            }
            match timer.run((now + SLICE).min(hard_end), read.as_mut()).await {
                Some((Ok(_), buf)) => break buf,
                Some((Err(_), _)) => return Err(Refused::Unreachable),
                None if gone() => return Err(Refused::Gone),
                None => {}
            }
        }
    };
    let mut b = [0u8; VERDICT];
    b.copy_from_slice(&verdict);
    match Verdict::parse(&b) {
        Ok(v) => Ok((tcp, v)),
        Err(_) => Err(Refused::Unreachable),
    }
}

/// A new connection to `home`, through the handshake.
async fn connect(home: SocketAddr, hook: &FleetHook) -> io::Result<TcpStream> {
    let mut tcp = TcpStream::connect(home).await?;
    let _ = tcp.set_nodelay(true);
    let mine: [u8; NONCE] = rand::random();
    let (res, _) = tcp.write_all(wire::hello(&mine, &hook.me)).await;
    res?;
    let (res, buf) = tcp.read_exact(vec![0u8; CHALLENGE]).await;
    res?;
    let mut c = [0u8; CHALLENGE];
    c.copy_from_slice(&buf);
    let bad = || io::Error::new(io::ErrorKind::PermissionDenied, "not a peer of this fleet");
    let (theirs, mac) = wire::parse_challenge(&c).map_err(|_| bad())?;
    if !PeerSecret::check(&hook.secret.home_mac(&mine, &theirs), mac) {
        return Err(bad());
    }
    let (res, _) = tcp
        .write_all(hook.secret.peer_mac(&theirs, &mine).to_vec())
        .await;
    res?;
    let (res, buf) = tcp.read_exact(vec![0u8; 1]).await;
    res?;
    if buf[0] != wire::WELCOME {
        return Err(bad());
    }
    Ok(tcp)
}
