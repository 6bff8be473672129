//! The work of a request whose client went away stops (issue 25: nothing upstream outlives
//! the request). While a connection's thread serves a request ([`watching`]), the loops of
//! the work ask [`tick`] (the inner loops of searches and aggregations, through
//! `query::watched`) or [`check`] (coarse loops: `_msearch` items, `_mget` documents,
//! by-query documents) whether the client is still there; every 20 ms of work at most they
//! look (a non-blocking peek at the connection, `http::client_gone`). When it closed (a
//! client that gave up, or the edge that answered 504 at its deadline and closed its
//! upstream connection), the work unwinds with [`Cancelled`], without the panic hook; the
//! connection (`http::conn`) catches it, counts it ([`cancelled`]) and closes without
//! answering. A thread serving no request never stops.
//!
//! Callers of `tick`/`check` hold no lock of the engine's state: an unwinding thread would
//! poison it (every lock is taken with `unwrap_or_else(into_inner)` anyway).
//!
//! Must not touch: what the work computes.

use std::cell::RefCell;
use std::panic::resume_unwind;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The payload of the unwinding that stops a request's work.
#[derive(Debug)]
pub struct Cancelled;

/// How often the client is looked at, at most.
const PAUSE: Duration = Duration::from_millis(20);
/// Ticks between two readings of the clock.
const TICKS: u32 = 64;

/// Requests stopped because their client went away, since the engine started.
static CANCELLED: AtomicU64 = AtomicU64::new(0);

/// Requests stopped because their client went away, since the engine started.
pub fn cancelled() -> u64 {
    CANCELLED.load(Ordering::Relaxed)
}

/// Counts one stopped request (by the connection that caught [`Cancelled`]).
pub fn count_cancelled() -> u64 {
    CANCELLED.fetch_add(1, Ordering::Relaxed) + 1
}

/// How the current request's client is watched.
struct Watch {
    /// True when the client is gone (looked at now).
    look: Box<dyn Fn() -> bool>,
    ticks: u32,
    next: Instant,
    gone: bool,
}

thread_local! {
    static WATCH: RefCell<Option<Watch>> = const { RefCell::new(None) };
}

/// Runs `work` for a request whose client `look` tells gone; [`tick`] and [`check`] in it
/// stop the work once it is.
pub fn watching<R>(look: Box<dyn Fn() -> bool>, work: impl FnOnce() -> R) -> R {
    struct Unset;
    impl Drop for Unset {
        fn drop(&mut self) {
            WATCH.with(|w| *w.borrow_mut() = None);
        }
    }
    WATCH.with(|w| {
        *w.borrow_mut() = Some(Watch {
            look,
            ticks: 0,
            next: Instant::now() + PAUSE,
            gone: false,
        })
    });
    let _unset = Unset;
    work()
}

/// Whether the watched client is gone: the clock is read every `every` calls, the client
/// looked at when `PAUSE` passed since the last look.
fn gone(every: u32) -> bool {
    WATCH.with(|w| {
        let Ok(mut w) = w.try_borrow_mut() else {
            return false;
        };
        let Some(w) = w.as_mut() else { return false };
        if w.gone {
            return true;
        }
        w.ticks += 1;
        if w.ticks < every {
            return false;
        }
        w.ticks = 0;
        let now = Instant::now();
        if now < w.next {
            return false;
        }
        w.gone = (w.look)();
        w.next = now + PAUSE;
        w.gone
    })
}

/// For inner loops (once per document or block of documents): stops the work when the
/// client is gone.
pub fn tick() {
    if gone(TICKS) {
        resume_unwind(Box::new(Cancelled));
    }
}

/// For coarse loops (once per item of real work): stops the work when the client is gone.
pub fn check() {
    if gone(1) {
        resume_unwind(Box::new(Cancelled));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::rc::Rc;

    #[test]
    fn work_stops_once_the_client_is_gone_and_only_then() {
        let gone_now = Rc::new(Cell::new(false));
        let looks = Rc::new(Cell::new(0u32));
        let (g, l) = (gone_now.clone(), looks.clone());
        let look = Box::new(move || {
            l.set(l.get() + 1);
            g.get()
        });
        let mut done = 0u64;
        let out = catch_unwind(AssertUnwindSafe(|| {
            watching(look, || loop {
                tick();
                done += 1;
                if done == 1000 {
                    std::thread::sleep(PAUSE);
                }
                if done == 2000 {
                    gone_now.set(true);
                    std::thread::sleep(PAUSE);
                }
            })
        }));
        let payload = out.unwrap_err();
        assert!(payload.is::<Cancelled>());
        assert!(
            (2000..2000 + 2 * u64::from(TICKS)).contains(&done),
            "{done}"
        );
        assert!(
            looks.get() >= 2,
            "looked at once PAUSE passed, not at each tick"
        );
        // the watch ended with the request: nothing stops outside one
        for _ in 0..10_000 {
            tick();
            check();
        }
    }
}
