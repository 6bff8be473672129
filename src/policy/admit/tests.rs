//! Allowance tests: exactness across threads, FIFO order, queue bounds, cancellation,
//! resizing. No timing: threads and a parking executor only.

use super::*;
use std::sync::atomic::AtomicU32;
use std::task::Wake;
use std::thread;

struct ThreadWaker(thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = Box::pin(fut);
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    Pin::new(fut).poll(&mut Context::from_waker(&waker))
}

fn granted(a: Admission) -> Permit {
    match a {
        Admission::Granted(p) => p,
        other => panic!("expected a permit, got {other:?}"),
    }
}

fn queued(a: Admission) -> Ticket {
    match a {
        Admission::Queued(t) => t,
        other => panic!("expected a ticket, got {other:?}"),
    }
}

// spec 1.7, 8: at most `concurrency` in flight; the rest queue
#[test]
fn grants_up_to_the_limit_then_queues_then_refuses() {
    let a = Arc::new(Allowance::new(2, 1));
    let p1 = granted(a.acquire());
    let _p2 = granted(a.acquire());
    assert_eq!(a.in_flight(), 2);
    let mut t = queued(a.acquire());
    assert!(matches!(a.acquire(), Admission::Full), "queue of 1 is full");
    assert!(poll_once(&mut t).is_pending());
    drop(p1);
    assert_eq!(a.in_flight(), 2, "the permit was handed over, not freed");
    assert!(poll_once(&mut t).is_ready());
    assert_eq!(a.queued(), 0);
}

#[test]
fn limit_n_and_n_plus_one() {
    for n in [1u32, 2, 7] {
        let a = Arc::new(Allowance::new(n, 0));
        let permits: Vec<_> = (0..n).map(|_| granted(a.acquire())).collect();
        assert!(
            matches!(a.acquire(), Admission::Full),
            "request n+1 with no queue"
        );
        drop(permits);
        assert_eq!(a.in_flight(), 0);
    }
}

#[test]
fn waiters_are_served_in_fifo_order() {
    let a = Arc::new(Allowance::new(1, 10));
    let mut held = granted(a.acquire());
    let mut tickets: Vec<Ticket> = (0..5).map(|_| queued(a.acquire())).collect();
    for turn in 0..5 {
        drop(held);
        let mut served = Vec::new();
        for (i, ticket) in tickets.iter_mut().enumerate().skip(turn) {
            if let Poll::Ready(permit) = poll_once(ticket) {
                served.push((i, permit));
            }
        }
        assert_eq!(
            served.len(),
            1,
            "exactly one waiter is served per freed permit"
        );
        assert_eq!(served[0].0, turn, "and it is the head of the queue");
        held = served.pop().unwrap().1;
    }
}

// A client that disconnects while queued frees its place (issue 2).
#[test]
fn dropped_ticket_gives_its_place_back() {
    let a = Arc::new(Allowance::new(1, 1));
    let p = granted(a.acquire());
    let t = queued(a.acquire());
    assert!(matches!(a.acquire(), Admission::Full));
    drop(t);
    assert_eq!(a.queued(), 0);
    let t2 = queued(a.acquire());
    drop(p);
    let p2 = block_on(t2);
    assert_eq!(a.in_flight(), 1);
    drop(p2);
    assert_eq!(a.in_flight(), 0);
}

#[test]
fn ticket_granted_but_never_taken_returns_its_permit() {
    let a = Arc::new(Allowance::new(1, 4));
    let p = granted(a.acquire());
    let t = queued(a.acquire());
    drop(p); // handed to `t`
    assert_eq!(a.in_flight(), 1);
    drop(t); // never polled: the permit goes back
    assert_eq!(a.in_flight(), 0);
    let _again = granted(a.acquire());
}

// spec 1.8: a plan change moves the allowance at once, queued requests too
#[test]
fn growing_the_limit_grants_waiters_at_once() {
    let a = Arc::new(Allowance::new(1, 10));
    let _p = granted(a.acquire());
    let mut t1 = queued(a.acquire());
    let mut t2 = queued(a.acquire());
    a.resize(3, 10);
    assert!(poll_once(&mut t1).is_ready());
    assert!(poll_once(&mut t2).is_ready());
}

#[test]
fn shrinking_the_limit_drains_before_handing_over() {
    let a = Arc::new(Allowance::new(3, 10));
    let p: Vec<_> = (0..3).map(|_| granted(a.acquire())).collect();
    a.resize(1, 10);
    let mut t = queued(a.acquire());
    let mut p = p.into_iter();
    drop(p.next());
    drop(p.next());
    assert!(poll_once(&mut t).is_pending(), "still at the lowered limit");
    drop(p.next());
    assert!(poll_once(&mut t).is_ready());
}

// The allowance is never exceeded, whatever thread asks (DESIGN: exact across cores).
#[test]
fn exact_under_contention_from_many_threads() {
    let a = Arc::new(Allowance::new(3, 10_000));
    let holding = Arc::new(AtomicU32::new(0));
    let max = Arc::new(AtomicU32::new(0));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (a, holding, max) = (a.clone(), holding.clone(), max.clone());
            thread::spawn(move || {
                for i in 0..2_000 {
                    let permit = match a.acquire() {
                        Admission::Granted(p) => p,
                        Admission::Queued(t) => {
                            if i % 7 == 0 {
                                drop(t); // a client that gives up
                                continue;
                            }
                            block_on(t)
                        }
                        Admission::Full => panic!("queue is large enough"),
                    };
                    let now = holding.fetch_add(1, SeqCst) + 1;
                    max.fetch_max(now, SeqCst);
                    thread::yield_now();
                    holding.fetch_sub(1, SeqCst);
                    drop(permit);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(max.load(SeqCst) <= 3, "max in flight {}", max.load(SeqCst));
    assert_eq!(max.load(SeqCst), 3, "contention reached the limit");
    assert_eq!(a.in_flight(), 0);
    assert_eq!(a.queued(), 0);
}

// Issue 27: charged permits (a new home holding the old home's requests' places) count
// like any other: the allowance is full while they are out, and each one given back lets
// the head of the queue in, FIFO.
#[test]
fn charged_permits_hold_places_until_given_back() {
    let a = Arc::new(Allowance::new(2, 4));
    let charges = vec![a.charge(), a.charge()];
    assert_eq!(a.in_flight(), 2);
    let mut first = match a.acquire() {
        Admission::Queued(t) => t,
        other => panic!("queued behind the charges: {other:?}"),
    };
    assert!(poll_once(&mut first).is_pending());
    let mut iter = charges.into_iter();
    drop(iter.next());
    let p = match poll_once(&mut first) {
        Poll::Ready(p) => p,
        Poll::Pending => panic!("the freed place went to the head of the queue"),
    };
    assert_eq!(a.in_flight(), 2);
    drop(iter);
    drop(p);
    assert_eq!(a.in_flight(), 0);
}
