//! Containing faults on a worker: a panic while a connection's task is polled ends that
//! connection only ([`contain`]: the task's future is dropped there and then, so every
//! guard it held runs: allowance permits, reserved search contexts, the connection count),
//! and the worker goes on polling its other tasks. The session answers such a request 500
//! when no byte of its response was sent yet; the caller logs and counts it.
//!
//! Also the test-only fault injection (`[debug] panic_hooks`, see `config::DebugConfig`):
//! with the hooks on, a request carrying `x-searchgate-debug-panic: <point>` panics at that
//! point of its way. Off, the header is never looked at.
//!
//! Must not touch: what a request means; how the worker restarts (see `crew`).

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::metrics::faults::panic_message;
use crate::proto::RequestHead;

/// The header naming where an injected panic happens.
pub(super) const HOOK_HEADER: &[u8] = b"x-searchgate-debug-panic";

/// Where a request asks the edge to panic (the header's values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Point {
    /// `head`: once the head is read, before any decision.
    Head,
    /// `slot`: holding an allowance slot (and any search context reserved), before the
    /// upstream is asked.
    Slot,
    /// `relay`: after the response was relayed to the client (no 500 possible any more).
    Relay,
    /// `worker`: the worker thread itself, outside any connection's task, at its next
    /// housekeeping (the request is answered 200 first).
    Worker,
}

impl Point {
    fn parse(v: &[u8]) -> Option<Point> {
        match v {
            b"head" => Some(Point::Head),
            b"slot" => Some(Point::Slot),
            b"relay" => Some(Point::Relay),
            b"worker" => Some(Point::Worker),
            _ => None,
        }
    }
}

/// The point the request whose head is `head` (in `buf`) asks for; `None` unless the hooks
/// are `enabled`.
pub(super) fn requested(enabled: bool, head: &RequestHead, buf: &[u8]) -> Option<Point> {
    if !enabled {
        return None;
    }
    head.header(buf, HOOK_HEADER).and_then(Point::parse)
}

/// Panics when the request asked for a panic `at` this point.
pub(super) fn inject(asked: Option<Point>, at: Point) {
    if asked == Some(at) {
        panic!("injected panic at {at:?} (test hook, [debug] panic_hooks)");
    }
}

/// `f`, whose panics end it with `Err(message)` instead of unwinding through the worker.
pub(super) fn contain<F: Future>(f: F) -> Contained<F> {
    Contained {
        inner: Some(Box::pin(f)),
    }
}

/// Future of [`contain`].
pub(super) struct Contained<F> {
    inner: Option<Pin<Box<F>>>,
}

impl<F: Future> Future for Contained<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(Err("polled again after it panicked".into()));
        };
        match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => {
                self.inner = None;
                Poll::Ready(Ok(v))
            }
            Err(payload) => {
                let message = panic_message(&*payload).to_string();
                // Dropping the task's state runs its guards now; a panic in one of them is
                // contained as well (it would otherwise abort the process).
                let inner = self.inner.take();
                let _ = catch_unwind(AssertUnwindSafe(move || drop(inner)));
                let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
                Poll::Ready(Err(message))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use super::*;

    /// Counts itself out when dropped, as a permit or the connection count does.
    struct Guard(Rc<Cell<u32>>);

    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.set(self.0.get() - 1);
        }
    }

    fn run<F: Future>(f: F) -> F::Output {
        let mut rt = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .unwrap();
        rt.block_on(f)
    }

    #[test]
    fn a_panicking_task_ends_alone_and_its_guards_run() {
        let held = Rc::new(Cell::new(0));
        let (out, survivor) = run({
            let held = held.clone();
            async move {
                let survivor = monoio::spawn(async {
                    monoio::time::sleep(std::time::Duration::from_millis(20)).await;
                    "still here"
                });
                held.set(2);
                let g1 = Guard(held.clone());
                let out = contain(async move {
                    let _g2 = Guard(held.clone());
                    monoio::time::sleep(std::time::Duration::from_millis(1)).await;
                    let _keep = &g1;
                    if held.get() == 2 {
                        panic!("boom {}", 7);
                    }
                    1
                })
                .await;
                (out, survivor.await)
            }
        });
        assert_eq!(out, Err("boom 7".to_string()));
        assert_eq!(held.get(), 0, "both guards ran when the task was dropped");
        assert_eq!(survivor, "still here");
    }

    #[test]
    fn a_task_that_does_not_panic_gives_its_value() {
        assert_eq!(run(contain(async { 5 })), Ok(5));
    }

    #[test]
    fn the_hook_header_is_read_only_when_the_hooks_are_on() {
        let buf = b"GET / HTTP/1.1\r\nHost: x\r\nX-Searchgate-Debug-Panic: slot\r\n\r\n";
        let mut head = RequestHead::new();
        assert!(head
            .parse(buf, &crate::proto::HeadLimits::default())
            .unwrap());
        assert_eq!(requested(true, &head, buf), Some(Point::Slot));
        assert_eq!(requested(false, &head, buf), None);
        for (v, want) in [
            (&b"head"[..], Some(Point::Head)),
            (b"relay", Some(Point::Relay)),
            (b"worker", Some(Point::Worker)),
            (b"Slot", None),
            (b"", None),
        ] {
            assert_eq!(Point::parse(v), want);
        }
        inject(Some(Point::Head), Point::Slot); // another point: no panic
        let caught = catch_unwind(|| inject(Some(Point::Slot), Point::Slot));
        assert!(caught.is_err());
    }
}
