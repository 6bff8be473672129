//! Thread per core: one monoio runtime per worker thread, pinned to its core, with its own
//! SO_REUSEPORT listeners; the accept loops, TLS handshakes and the core's housekeeping.
//! On shutdown each worker stops accepting, lets its connections finish (bounded by the
//! grace period) and returns.
//!
//! Must not touch: request handling (see `session`).

use std::future::Future;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use monoio::net::TcpListener;

use super::core::{Core, Shared};
use super::faults;
use super::io::ClientIo;
use super::preamble;
use super::session;
use super::tls::TlsStream;
use crate::metrics::faults::panic_message;

/// Which I/O driver the workers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    Uring,
    Epoll,
}

impl Driver {
    /// Resolves `auto|uring|epoll`: auto takes io_uring when the kernel allows it.
    pub fn choose(name: &str) -> Result<Driver, String> {
        match name {
            "auto" => Ok(if monoio::utils::detect_uring() {
                Driver::Uring
            } else {
                Driver::Epoll
            }),
            "uring" | "io_uring" | "iouring" => {
                if monoio::utils::detect_uring() {
                    Ok(Driver::Uring)
                } else {
                    Err("io_uring is not available here (the kernel refused it); use --driver epoll or auto".into())
                }
            }
            "epoll" | "legacy" => Ok(Driver::Epoll),
            other => Err(format!(
                "unknown driver `{other}` (use auto, uring or epoll)"
            )),
        }
    }

    /// Its name, as printed at start.
    pub fn name(self) -> &'static str {
        match self {
            Driver::Uring => "io_uring",
            Driver::Epoll => "epoll",
        }
    }
}

/// A worker's listeners: plain and TLS.
#[derive(Debug, Default)]
pub struct WorkerListeners {
    pub http: Option<StdListener>,
    pub https: Option<StdListener>,
}

impl WorkerListeners {
    /// The same sockets under new descriptors (`dup(2)`), for a worker to own.
    pub fn duplicate(&self) -> std::io::Result<WorkerListeners> {
        let dup = |l: &Option<StdListener>| l.as_ref().map(StdListener::try_clone).transpose();
        Ok(WorkerListeners {
            http: dup(&self.http)?,
            https: dup(&self.https)?,
        })
    }
}

/// How long the connections of a worker that failed get to finish before it ends.
const RETIRE_GRACE: Duration = Duration::from_secs(5);

/// Where a worker reports that it failed (the panic's message), so that the crew starts
/// its replacement at once while it retires.
pub type Fault = Arc<std::sync::Mutex<Option<String>>>;

/// Runs one worker thread's runtime until shutdown completes. A panic that escapes every
/// connection's containment (the worker's own code) is reported to `fault`; the worker
/// then stops accepting, gives its connections [`RETIRE_GRACE`] to finish, and ends with
/// the panic. Driving the runtime to that end matters: its pending operations (an accept
/// armed in the ring) are cancelled, so no connection is taken by a worker that is gone.
pub fn run_worker(
    index: usize,
    core_id: Option<core_affinity::CoreId>,
    driver: Driver,
    shared: Arc<Shared>,
    listeners: WorkerListeners,
    fault: Fault,
) {
    if let Some(id) = core_id {
        core_affinity::set_for_current(id);
    }
    let core = match Core::new(shared) {
        Ok(c) => Rc::new(c),
        Err(e) => {
            eprintln!("searchgate: cannot open the access log: {e}");
            std::process::exit(1);
        }
    };
    let result = match driver {
        Driver::Uring => uring_runtime()
            .map(|mut rt| contained(index, core, listeners, &fault, |f| rt.block_on(f))),
        Driver::Epoll => monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .map(|mut rt| contained(index, core, listeners, &fault, |f| rt.block_on(f))),
    };
    if let Err(e) = result {
        eprintln!(
            "searchgate: worker {index}: cannot start the {} runtime: {e}",
            driver.name()
        );
        std::process::exit(1);
    }
}

/// The io_uring runtime of one worker. Its ring is set up for a single thread first: task
/// work deferred until the worker asks for completions (SINGLE_ISSUER + DEFER_TASKRUN,
/// Linux 6.1), else cooperative task work (COOP_TASKRUN, 5.19), else plain. Without either,
/// each completion from another core (on loopback, the peer's core runs our receive path)
/// interrupts the worker with an IPI: measured, that cost TLS a third of its request rate.
fn uring_runtime(
) -> std::io::Result<monoio::Runtime<monoio::time::TimeDriver<monoio::IoUringDriver>>> {
    let build = |urb: io_uring::Builder| {
        monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
            .with_entries(4096)
            .uring_builder(urb)
            .enable_timer()
            .build()
    };
    let mut defer = io_uring::IoUring::builder();
    defer.setup_single_issuer().setup_defer_taskrun();
    let mut coop = io_uring::IoUring::builder();
    coop.setup_coop_taskrun();
    build(defer)
        .or_else(|_| build(coop))
        .or_else(|_| build(io_uring::IoUring::builder()))
}

/// Runs the worker on `block_on` (its runtime); see [`run_worker`] for a panic.
fn contained(
    index: usize,
    core: Rc<Core>,
    listeners: WorkerListeners,
    fault: &Fault,
    mut block_on: impl FnMut(Pin<Box<dyn Future<Output = ()>>>),
) {
    let main = Box::pin(worker_main(core.clone(), listeners));
    let Err(payload) = catch_unwind(AssertUnwindSafe(|| block_on(main))) else {
        return;
    };
    let message = panic_message(&*payload).to_string();
    eprintln!("searchgate: worker {index} panicked: {message}; it stops accepting and retires");
    *fault.lock().unwrap_or_else(|p| p.into_inner()) = Some(message);
    let retire = Box::pin(async move {
        core.shutdown.fire();
        let end = Instant::now() + RETIRE_GRACE;
        while core.connections.get() > 0 && Instant::now() < end {
            monoio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let _ = catch_unwind(AssertUnwindSafe(|| block_on(retire)));
    resume_unwind(payload);
}

async fn worker_main(core: Rc<Core>, listeners: WorkerListeners) {
    for (std, tls) in [(listeners.http, false), (listeners.https, true)] {
        if let Some(std) = std {
            std.set_nonblocking(true)
                .expect("listener can be made non-blocking");
            let l = TcpListener::from_std(std).expect("monoio adopts the listener");
            monoio::spawn(accept_loop(core.clone(), l, tls));
        }
    }
    while !core.shutdown.is_fired() {
        monoio::time::sleep(Duration::from_millis(100)).await;
        core.housekeeping(Instant::now());
    }
    // Draining: the accept loops stopped; wait for open connections, bounded.
    let grace_end = Instant::now() + core.shared.limits.shutdown_grace;
    while core.connections.get() > 0 && Instant::now() < grace_end {
        monoio::time::sleep(Duration::from_millis(20)).await;
    }
    core.housekeeping(Instant::now());
}

async fn accept_loop(core: Rc<Core>, listener: TcpListener, tls: bool) {
    loop {
        let accepted = monoio::select! {
            a = listener.accept() => Some(a),
            _ = core.shutdown.wait() => None,
        };
        let (tcp, peer) = match accepted {
            None => return,
            Some(Ok(pair)) => pair,
            Some(Err(e)) => {
                // Out of file descriptors and the like: back off instead of spinning.
                eprintln!("searchgate: accept: {e}");
                monoio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let core = core.clone();
        monoio::spawn(async move {
            // A panic anywhere in the connection's task (the TLS handshake, reading a
            // head) ends this connection only; a request's own is answered in `session`.
            let served = faults::contain(connection(core.clone(), tcp, peer, tls)).await;
            if let Err(message) = served {
                session::panicked(&core, &format!("the connection from {peer}"), &message);
            }
        });
    }
}

/// One accepted connection: a trusted proxy's PROXY header, its TLS handshake when `tls`,
/// then its session.
async fn connection(core: Rc<Core>, mut tcp: monoio::net::TcpStream, peer: SocketAddr, tls: bool) {
    let handshake = core.shared.limits.head_timeout;
    let trusted = &core.shared.limits.trusted_proxies;
    let opened = if trusted.iter().any(|c| c.contains(peer.ip())) {
        match monoio::time::timeout(handshake, preamble::read(&mut tcp, peer)).await {
            Ok(Ok(o)) => o,
            _ => return,
        }
    } else {
        preamble::Opened {
            peer,
            early: Vec::new(),
        }
    };
    let preamble::Opened { peer, early } = opened;
    let (io, early) = if tls {
        let config = core
            .shared
            .tls
            .clone()
            .expect("TLS listener has a TLS config");
        let accept = TlsStream::accept(tcp, config, early);
        match monoio::time::timeout(handshake, accept).await {
            Ok(Ok(s)) => (ClientIo::Tls(Box::new(s)), Vec::new()),
            _ => return,
        }
    } else {
        (ClientIo::Plain(tcp), early)
    };
    session::serve(core, io, peer, early).await;
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;
    use std::task::{Poll, Waker};

    use super::*;
    use crate::edge::tcp::{read_tcp, write_tcp};

    /// Set by another thread, which then wakes the task waiting for it.
    #[derive(Default)]
    struct Flag {
        set: AtomicBool,
        waker: Mutex<Option<Waker>>,
    }

    // The worker's ring with deferred task work still does all a worker needs: accept,
    // read and write TCP, sleep on timers, and wake for another thread (shutdown does).
    #[test]
    fn uring_runtime_runs_io_timers_and_wakes_from_other_threads() {
        let mut rt = uring_runtime().expect("io_uring runtime (this test needs io_uring)");
        rt.block_on(async {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let peer = std::thread::spawn(move || {
                let mut s = std::net::TcpStream::connect(addr).unwrap();
                s.write_all(b"ping").unwrap();
                let mut got = [0u8; 4];
                s.read_exact(&mut got).unwrap();
                got
            });
            let (mut tcp, _) = l.accept().await.unwrap();
            let mut buf = Vec::with_capacity(16);
            while buf.len() < 4 {
                let (res, b) = read_tcp(&mut tcp, buf).await;
                buf = b;
                assert!(res.unwrap() > 0, "the peer sent 4 bytes");
            }
            assert_eq!(buf, b"ping");
            let (res, _) = write_tcp(&mut tcp, b"pong".to_vec(), 0..4).await;
            res.unwrap();
            assert_eq!(&peer.join().unwrap(), b"pong");

            let t = Instant::now();
            monoio::time::sleep(Duration::from_millis(20)).await;
            assert!(t.elapsed() >= Duration::from_millis(20));

            let flag = Arc::new(Flag::default());
            let other = flag.clone();
            let waker = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                other.set.store(true, Ordering::Release);
                if let Some(w) = other.waker.lock().unwrap().take() {
                    w.wake();
                }
            });
            std::future::poll_fn(|cx| {
                *flag.waker.lock().unwrap() = Some(cx.waker().clone());
                if flag.set.load(Ordering::Acquire) {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
            waker.join().unwrap();
        });
    }
}
