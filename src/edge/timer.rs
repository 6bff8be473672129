//! A connection's one deadline timer, reused by every read and write of its requests
//! (client and upstream alike) instead of a new timer per operation.
//!
//! Why not `monoio::time::timeout_at` per operation: each call built a `Sleep` (640 bytes,
//! aligned to 128: its timer state is cache-padded), cloned the runtime's timer handle,
//! put the entry into the timer wheel on the first pending poll and took it out again on
//! drop, three times per small request (the client's head, the upstream write, the
//! upstream read); and every future that held one grew by about 1KB,
//! which the compiler copies each time such a future is built and moved (`memmove` was the
//! largest user-space item of a TLS profile, tuning/small-requests.md). Here the `Sleep` is
//! boxed once per connection; moving the deadline later only bumps the entry's tick (the
//! wheel looks again when the old tick comes), moving it earlier re-inserts it.
//!
//! An entry left armed after its operation finished fires at the latest deadline set and
//! wakes the connection's task once, which then finds nothing to do: the same as a
//! spurious wake-up, which every future must already tolerate.
//!
//! Must not touch: what a deadline means (callers decide and map `None`), sockets.

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::task::Poll;
use std::time::Instant;

use monoio::time::Sleep;

/// One connection's deadline timer (created on first use, inside the runtime).
#[derive(Default)]
pub(crate) struct Timer {
    sleep: Option<Pin<Box<Sleep>>>,
    /// The deadline the entry is set to.
    at: Option<Instant>,
}

impl Timer {
    pub fn new() -> Self {
        Timer::default()
    }

    /// Runs `fut` until `until`; `None` when time ran out. `fut` is polled before the
    /// timer each time, so a deadline already past still polls it once and a result that
    /// is ready wins over a deadline reached in the same turn.
    pub async fn run<F: Future>(&mut self, until: Instant, fut: F) -> Option<F::Output> {
        let mut sleep = self.arm(until);
        let mut fut = pin!(fut);
        poll_fn(|cx| {
            if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                return Poll::Ready(Some(v));
            }
            sleep.as_mut().poll(cx).map(|()| None)
        })
        .await
    }

    /// The timer set to `until`.
    fn arm(&mut self, until: Instant) -> Pin<&mut Sleep> {
        let reset = self.at != Some(until);
        self.at = Some(until);
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(monoio::time::sleep_until(until.into())));
        if reset {
            sleep.as_mut().reset(until.into());
        }
        sleep.as_mut()
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::Timer;

    /// On each driver, one timer reused: a ready future wins even past its deadline; a
    /// pending one ends at its deadline, not before, also after the deadline moved earlier
    /// or later, and after the timer already fired once.
    #[test]
    fn one_timer_serves_deadlines_in_any_order() {
        async fn check() {
            let mut t = Timer::new();
            let past = Instant::now() - Duration::from_secs(1);
            assert_eq!(t.run(past, async { 7 }).await, Some(7));
            assert_eq!(t.run(past, std::future::pending::<()>()).await, None);
            let far = Instant::now() + Duration::from_secs(60);
            let soon = monoio::time::sleep(Duration::from_millis(1));
            assert_eq!(t.run(far, soon).await, Some(()));
            for ms in [40u64, 10, 25] {
                // Later than the last deadline, then earlier, then later again.
                let deadline = Instant::now() + Duration::from_millis(ms);
                assert_eq!(t.run(deadline, std::future::pending::<()>()).await, None);
                assert!(
                    Instant::now() >= deadline,
                    "ended before its deadline ({ms} ms)"
                );
            }
            // The same deadline twice: the entry stays armed for it.
            let deadline = Instant::now() + Duration::from_millis(20);
            let quick = monoio::time::sleep(Duration::from_millis(1));
            assert_eq!(t.run(deadline, quick).await, Some(()));
            assert_eq!(t.run(deadline, std::future::pending::<()>()).await, None);
            assert!(Instant::now() >= deadline);
        }
        monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .expect("epoll runtime")
            .block_on(check());
        monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
            .enable_timer()
            .build()
            .expect("io_uring runtime")
            .block_on(check());
    }

    /// A deadline moved later by a long way while an earlier one is still in the wheel:
    /// the earlier tick passes without ending the operation.
    #[test]
    fn a_deadline_moved_later_does_not_fire_at_the_old_one() {
        async fn check() {
            let mut t = Timer::new();
            let early = Instant::now() + Duration::from_millis(5);
            assert_eq!(t.run(early, async { 1 }).await, Some(1));
            let late = Instant::now() + Duration::from_millis(60);
            let done_at_30 = monoio::time::sleep(Duration::from_millis(30));
            assert_eq!(t.run(late, done_at_30).await, Some(()));
        }
        monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
            .enable_timer()
            .build()
            .expect("io_uring runtime")
            .block_on(check());
    }
}
