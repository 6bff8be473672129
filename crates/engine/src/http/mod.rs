//! The engine's HTTP/1.1 server: blocking sockets, one thread per connection (keep-alive,
//! pipelining), built on the sans-IO codec in `searchgate_core::proto`. Tantivy work runs on these
//! threads, in the engine's own process, never on the edge's.
//!
//! Must not touch: request semantics (see `api`).

mod body;
mod conn;
mod encoding;

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use body::BodyReader;

use super::api::Engine;
use searchgate_core::errors::ErrorBody;

/// Stack of a connection thread (queries recurse; JSON nesting is capped by serde_json).
const STACK: usize = 2 << 20;

/// Accepts connections until the listener fails for good; at most `max_conns` at once
/// (beyond: 503 and close).
pub fn serve(engine: Arc<Engine>, listener: TcpListener, max_conns: usize) {
    let active = Arc::new(AtomicUsize::new(0));
    loop {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) => {
                eprintln!("searchgate engine: accept failed: {e}");
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        if active.load(Ordering::Relaxed) >= max_conns {
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
        let (engine, active2) = (engine.clone(), active.clone());
        let spawned = std::thread::Builder::new()
            .name("engine-conn".into())
            .stack_size(STACK)
            .spawn(move || {
                conn::serve(&engine, stream);
                active2.fetch_sub(1, Ordering::Relaxed);
            });
        if let Err(e) = spawned {
            active.fetch_sub(1, Ordering::Relaxed);
            eprintln!("searchgate engine: cannot start a connection thread: {e}");
        }
    }
}
