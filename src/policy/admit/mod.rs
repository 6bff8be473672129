//! Admission: a cluster's concurrency allowance, exact across cores, with a FIFO queue.
//!
//! Owns: the [`Allowance`] (at most `limit` permits out at any instant, whatever core asks),
//! its bounded FIFO queue of waiters, and the [`Permit`]/[`Ticket`] handles. Under the
//! allowance and with nobody queued, acquiring is one compare-and-swap and releasing one
//! atomic subtraction; the queue's mutex is taken only when someone waits. A freed permit
//! is handed straight to the head waiter (FIFO); a ticket dropped while queued (client gone,
//! timeout) gives its place back, and gives back a permit it was granted but never took.
//!
//! Must not touch: sockets, timers or the runtime. The ticket is a plain `Future` woken
//! through `std::task::Waker` (monoio's `sync` feature makes cross-core wakes work);
//! timeouts are the caller's business.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

const WAITING: u8 = 0;
const GRANTED: u8 = 1;
const CANCELLED: u8 = 2;

/// One cluster's allowance: permits in flight and a FIFO queue of waiters.
#[derive(Debug)]
pub struct Allowance {
    limit: AtomicU32,
    queue_cap: AtomicU32,
    in_flight: AtomicU32,
    /// Waiters announced or queued; read on the fast paths to keep FIFO order.
    waiting: AtomicU32,
    /// Requests refused (429: queue full, or waited past the queue timeout).
    refused: AtomicU64,
    queue: Mutex<VecDeque<Arc<Waiter>>>,
}

#[derive(Debug)]
struct Waiter {
    state: AtomicU8,
    waker: Mutex<Option<Waker>>,
}

/// What [`Allowance::acquire`] decided.
#[derive(Debug)]
pub enum Admission {
    /// A permit at once.
    Granted(Permit),
    /// Queued: await the ticket (drop it to leave the queue).
    Queued(Ticket),
    /// The queue is full: answer 429 at once.
    Full,
}

/// A permit to have one request in flight at the upstream; released on drop.
#[derive(Debug)]
pub struct Permit {
    allowance: Arc<Allowance>,
}

/// A place in the queue; resolves to a [`Permit`] when one is handed over.
#[derive(Debug)]
pub struct Ticket {
    allowance: Arc<Allowance>,
    waiter: Arc<Waiter>,
    taken: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Allowance {
    /// An allowance of `limit` permits with room for `queue_cap` waiters.
    pub fn new(limit: u32, queue_cap: u32) -> Self {
        Allowance {
            limit: AtomicU32::new(limit),
            queue_cap: AtomicU32::new(queue_cap),
            in_flight: AtomicU32::new(0),
            waiting: AtomicU32::new(0),
            refused: AtomicU64::new(0),
            queue: Mutex::new(VecDeque::with_capacity(queue_cap.min(1024) as usize)),
        }
    }

    /// Permits currently out.
    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(SeqCst)
    }

    /// Requests currently queued.
    pub fn queued(&self) -> u32 {
        self.waiting.load(SeqCst)
    }

    /// Requests this allowance refused so far (429s: a full queue, a queue timeout).
    pub fn refusals(&self) -> u64 {
        self.refused.load(SeqCst)
    }

    /// Counts a refusal the caller decided (a queue timeout; a full queue counts itself).
    pub fn note_refusal(&self) {
        self.refused.fetch_add(1, SeqCst);
    }

    /// The current limit.
    pub fn limit(&self) -> u32 {
        self.limit.load(SeqCst)
    }

    /// Changes the limit and queue size at once (a plan change); waiters that now fit are
    /// granted immediately. Permits already out above a lowered limit drain normally.
    pub fn resize(&self, limit: u32, queue_cap: u32) {
        self.limit.store(limit, SeqCst);
        self.queue_cap.store(queue_cap, SeqCst);
        let mut q = lock(&self.queue);
        self.dispatch(&mut q);
    }

    fn try_take(&self) -> bool {
        let limit = self.limit.load(SeqCst);
        let mut cur = self.in_flight.load(SeqCst);
        while cur < limit {
            match self
                .in_flight
                .compare_exchange_weak(cur, cur + 1, SeqCst, SeqCst)
            {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
        false
    }

    /// Asks for a permit: granted at once under the allowance with nobody queued, queued in
    /// FIFO order otherwise, or refused when the queue is full.
    pub fn acquire(self: &Arc<Self>) -> Admission {
        if self.waiting.load(SeqCst) == 0 && self.try_take() {
            return Admission::Granted(Permit {
                allowance: self.clone(),
            });
        }
        let mut q = lock(&self.queue);
        self.dispatch(&mut q);
        if q.is_empty() && self.try_take() {
            return Admission::Granted(Permit {
                allowance: self.clone(),
            });
        }
        if q.len() >= self.queue_cap.load(SeqCst) as usize {
            self.note_refusal();
            return Admission::Full;
        }
        let waiter = Arc::new(Waiter {
            state: AtomicU8::new(WAITING),
            waker: Mutex::new(None),
        });
        // Announce before the last check of `in_flight`: a release that misses this
        // waiter's CAS then sees `waiting > 0` and dispatches (see `release`).
        self.waiting.fetch_add(1, SeqCst);
        q.push_back(waiter.clone());
        self.dispatch(&mut q);
        Admission::Queued(Ticket {
            allowance: self.clone(),
            waiter,
            taken: false,
        })
    }

    /// Takes a permit whatever the count (it may go over the limit; permits then drain as
    /// after a lowered limit): how a new home of a cluster in a fleet holds the places of
    /// the requests the old home still has in flight, until they end (`fleet::handover`).
    pub fn charge(self: &Arc<Self>) -> Permit {
        self.in_flight.fetch_add(1, SeqCst);
        Permit {
            allowance: self.clone(),
        }
    }

    /// Grants permits to waiters from the head while the allowance has room.
    fn dispatch(&self, q: &mut VecDeque<Arc<Waiter>>) {
        while !q.is_empty() && self.try_take() {
            let w = q.pop_front().expect("queue is not empty");
            self.waiting.fetch_sub(1, SeqCst);
            w.grant();
        }
    }

    fn release(&self) {
        if self.waiting.load(SeqCst) > 0 {
            let mut q = lock(&self.queue);
            // Handing the permit over keeps the count; only allowed while within the limit
            // (a lowered limit drains first).
            if self.in_flight.load(SeqCst) <= self.limit.load(SeqCst) {
                if let Some(w) = q.pop_front() {
                    self.waiting.fetch_sub(1, SeqCst);
                    w.grant();
                    return;
                }
            }
        }
        self.in_flight.fetch_sub(1, SeqCst);
        if self.waiting.load(SeqCst) > 0 {
            let mut q = lock(&self.queue);
            self.dispatch(&mut q);
        }
        bell::ring();
    }

    /// Removes a waiter that gives up. Returns true when it had been granted a permit
    /// (which the caller then owns and must release).
    fn cancel(&self, waiter: &Arc<Waiter>) -> bool {
        let mut q = lock(&self.queue);
        if waiter.state.load(SeqCst) == GRANTED {
            return true;
        }
        waiter.state.store(CANCELLED, SeqCst);
        if let Some(pos) = q.iter().position(|w| Arc::ptr_eq(w, waiter)) {
            q.remove(pos);
            self.waiting.fetch_sub(1, SeqCst);
        }
        false
    }
}

impl Waiter {
    /// Marks granted and wakes the task; called with the queue locked.
    fn grant(&self) {
        self.state.store(GRANTED, SeqCst);
        if let Some(w) = lock(&self.waker).take() {
            w.wake();
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.allowance.release();
    }
}

impl Future for Ticket {
    type Output = Permit;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Permit> {
        if self.waiter.state.load(SeqCst) != GRANTED {
            *lock(&self.waiter.waker) = Some(cx.waker().clone());
            // Re-check after registering: a grant between the two loads would be lost.
            if self.waiter.state.load(SeqCst) != GRANTED {
                return Poll::Pending;
            }
        }
        self.taken = true;
        Poll::Ready(Permit {
            allowance: self.allowance.clone(),
        })
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.taken && self.allowance.cancel(&self.waiter) {
            self.allowance.release();
        }
    }
}

pub mod bell;
pub mod lanes;
pub use lanes::{limit_for, Lane, Lanes, Limit, Split};

#[cfg(test)]
mod tests;
