//! A bell rung when an allowance's count falls, for the few threads that wait for counts
//! to fall (a node that stops cleanly draining its permits, an old home counting down a
//! cluster it hands over: `fleet`) instead of polling them.
//!
//! The request path pays one atomic load per released permit: the bell is only rung (a
//! mutex and a notify) while some thread watches ([`wait_until`]). A watcher announces
//! itself before it looks at the counts, and a release lowers its count before it looks
//! for watchers (both sequentially consistent), so either the watcher sees the lower count
//! or the release sees the watcher and rings; the watcher looks and waits under the bell's
//! mutex, so a ring cannot slip between the two.
//!
//! Must not touch: sockets, timers or the runtime (waiting is a blocking thread's).

use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

/// Threads watching now.
static WATCHERS: AtomicU32 = AtomicU32::new(0);
/// Rings so far (the bell's mutex guards the watchers' looks).
static RUNG: Mutex<u64> = Mutex::new(0);
static BELL: Condvar = Condvar::new();

/// Called after a count fell (`Allowance::release`).
pub(super) fn ring() {
    if WATCHERS.load(SeqCst) > 0 {
        *RUNG.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        BELL.notify_all();
    }
}

/// Counts the calling thread as a watcher while it lives.
struct Watching;

impl Watching {
    fn new() -> Watching {
        WATCHERS.fetch_add(1, SeqCst);
        Watching
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        WATCHERS.fetch_sub(1, SeqCst);
    }
}

/// Waits until `done` (which looks at allowances' counts) says so or `until` passes,
/// looking again each time a count falls. Whether `done` said so.
pub fn wait_until(until: Instant, mut done: impl FnMut() -> bool) -> bool {
    let _watching = Watching::new();
    let mut rung = RUNG.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if done() {
            return true;
        }
        let now = Instant::now();
        if now >= until {
            return false;
        }
        rung = match BELL.wait_timeout(rung, until - now) {
            Ok((g, _)) => g,
            Err(p) => p.into_inner().0,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::admit::{Admission, Allowance};
    use std::sync::Arc;
    use std::time::Duration;

    // A watcher sees a release made by another thread while it waits (and a watcher
    // whose condition holds, or whose limit passed, returns at once).
    #[test]
    fn a_release_wakes_a_watcher() {
        let a = Arc::new(Allowance::new(1, 0));
        let Admission::Granted(p) = a.acquire() else {
            panic!("a permit");
        };
        let started = Arc::new(std::sync::Barrier::new(2));
        let s2 = started.clone();
        let releaser = std::thread::spawn(move || {
            s2.wait();
            drop(p);
        });
        started.wait();
        let far = Instant::now() + Duration::from_secs(60);
        assert!(wait_until(far, || a.in_flight() == 0));
        releaser.join().unwrap();
        // Nothing to wait for: at once; a limit in the past: false at once.
        assert!(wait_until(far, || true));
        assert!(!wait_until(Instant::now(), || false));
    }
}
