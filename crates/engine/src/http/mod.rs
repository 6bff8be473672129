//! The engine's HTTP/1.1 server: blocking sockets, one thread per connection (keep-alive,
//! pipelining), built on the sans-IO codec in `searchgate_core::proto`. Tantivy work runs on these
//! threads, in the engine's own process, never on the edge's.
//!
//! At `max_conns`, a new connection takes the place of the one idle the longest (see
//! `idle`); only when every connection is busy is it refused 503.
//!
//! A panic on a connection's thread ends that connection only (its request answered 500
//! when nothing was written yet, see `conn`); it is logged, counted ([`panics`]), and the
//! connection's place among the `max_conns` is given back whatever happened.
//!
//! Must not touch: request semantics (see `api`).

mod body;
mod conn;
mod encoding;
mod idle;

use std::net::TcpListener;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use body::BodyReader;
pub use conn::{client_gone, ConnOptions};

/// Panics caught on connection threads since the engine started.
static PANICS: AtomicU64 = AtomicU64::new(0);

/// Panics caught on connection threads since the engine started.
pub fn panics() -> u64 {
    PANICS.load(Ordering::Relaxed)
}

/// Logs and counts a panic caught while serving `what`.
fn count_panic(what: &str, message: &str) {
    let n = PANICS.fetch_add(1, Ordering::Relaxed) + 1;
    eprintln!("searchgate engine: a panic ended {what}: {message} (panics so far: {n}; the engine goes on)");
}

/// A connection's place among the open ones, given back when dropped (also when its thread
/// unwinds).
struct Place(Arc<AtomicUsize>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

use super::api::Engine;
use searchgate_core::errors::ErrorBody;

/// Stack of a connection thread (queries recurse; JSON nesting is capped by serde_json).
const STACK: usize = 2 << 20;

/// Accepts connections until the listener fails for good; at most `max_conns` at once
/// (beyond: 503 and close).
pub fn serve(engine: Arc<Engine>, listener: TcpListener, max_conns: usize, opts: ConnOptions) {
    let active = Arc::new(AtomicUsize::new(0));
    let idle = Arc::new(idle::IdleSet::default());
    loop {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) => {
                eprintln!("searchgate engine: accept failed: {e}");
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        if active.load(Ordering::Relaxed) >= max_conns && !idle.close_oldest() {
            let mut s = stream;
            let e = ErrorBody::new(
                503,
                "service_unavailable_exception",
                "too many connections to the engine; retry",
            );
            let body = e.to_bytes();
            let head = format!(
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=UTF-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            use std::io::Write;
            let _ = s
                .write_all(head.as_bytes())
                .and_then(|_| s.write_all(&body));
            continue;
        }
        active.fetch_add(1, Ordering::Relaxed);
        let place = Place(active.clone());
        let (engine, idle) = (engine.clone(), idle.clone());
        let spawned = std::thread::Builder::new()
            .name("engine-conn".into())
            .stack_size(STACK)
            .spawn(move || {
                let _place = place;
                let peer = stream.peer_addr().ok();
                let served = catch_unwind(AssertUnwindSafe(|| {
                    conn::serve(&engine, stream, opts, &idle)
                }));
                if let Err(payload) = served {
                    let message = payload
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    count_panic(&format!("the connection from {peer:?}"), &message);
                }
            });
        if let Err(e) = spawned {
            // The closure, and the place it held, went with the failed spawn.
            eprintln!("searchgate engine: cannot start a connection thread: {e}");
        }
    }
}
