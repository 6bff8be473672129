//! The notice bell: what the control plane rings after committing an overage notice and
//! what the webhook's delivery thread (`control::webhook`) waits on, a condition variable,
//! so that thread never polls. It lives below both: the plane owns one, the webhook waits.
//!
//! Must not touch: the store, notices themselves, I/O.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// What wakes the delivery thread: a notice queued (the control plane rings after the
/// commit that queued it), a stop, and its own end (for [`Delivery::stop`]). The thread
/// never polls: it waits on the condition variable, with a timeout only for a backoff.
#[derive(Debug, Default)]
pub struct Bell {
    state: Mutex<Rung>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct Rung {
    /// A notice was queued since the thread last waited for one.
    queued: bool,
    stopped: bool,
    finished: bool,
}

/// Why [`Bell::wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woke {
    /// A notice was queued (only when the wait asked for it).
    Queued,
    /// The wait's time ran out.
    Timeout,
    Stopped,
}

impl Bell {
    fn lock(&self) -> MutexGuard<'_, Rung> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut Rung)) {
        f(&mut self.lock());
        self.changed.notify_all();
    }

    /// A notice was queued (committed to the store).
    pub fn ring(&self) {
        self.update(|r| r.queued = true);
    }

    /// The thread is to stop.
    pub fn stop(&self) {
        self.update(|r| r.stopped = true);
    }

    /// A stop came.
    pub fn stopped(&self) -> bool {
        self.lock().stopped
    }

    /// The thread has ended (it rings this last).
    pub fn finish(&self) {
        self.update(|r| r.finished = true);
    }

    /// Waits for a stop, a queued notice (when `on_queued`; a ring that came before the
    /// wait counts, so none is lost between reading the queue and waiting) or `until`.
    pub fn wait(&self, until: Option<Instant>, on_queued: bool) -> Woke {
        let mut g = self.lock();
        loop {
            if g.stopped {
                return Woke::Stopped;
            }
            if on_queued && g.queued {
                g.queued = false;
                return Woke::Queued;
            }
            g = match until {
                None => self.changed.wait(g).unwrap_or_else(|p| p.into_inner()),
                Some(t) => {
                    let left = t.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Woke::Timeout;
                    }
                    let woke = self.changed.wait_timeout(g, left);
                    woke.unwrap_or_else(|p| p.into_inner()).0
                }
            };
        }
    }

    /// Waits until the thread has ended, at most until `until`; true when it has.
    pub fn wait_finished(&self, until: Instant) -> bool {
        let mut g = self.lock();
        while !g.finished {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            g = self
                .changed
                .wait_timeout(g, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    // A ring that comes before the wait is not lost; a stop ends a backoff (here an hour)
    // and an idle wait at once. No sleep: the waiters are threads woken by the bell.
    #[test]
    fn the_bell_wakes_on_a_queued_notice_and_on_stop() {
        let bell = Arc::new(Bell::default());
        bell.ring();
        assert_eq!(bell.wait(None, true), Woke::Queued);
        let in_an_hour = Instant::now() + Duration::from_secs(3600);
        assert_eq!(bell.wait(Some(Instant::now()), true), Woke::Timeout);
        let b = bell.clone();
        let idle = std::thread::spawn(move || b.wait(None, true));
        bell.ring();
        assert_eq!(idle.join().unwrap(), Woke::Queued);
        let b = bell.clone();
        let backoff = std::thread::spawn(move || b.wait(Some(in_an_hour), false));
        bell.ring(); // a notice queued during a backoff does not end it
        let b = bell.clone();
        let idle = std::thread::spawn(move || b.wait(None, true));
        assert_eq!(idle.join().unwrap(), Woke::Queued);
        bell.stop();
        assert_eq!(backoff.join().unwrap(), Woke::Stopped);
        assert_eq!(bell.wait(None, true), Woke::Stopped);
        assert!(!bell.wait_finished(Instant::now()));
        bell.finish();
        assert!(bell.wait_finished(in_an_hour));
    }
}
