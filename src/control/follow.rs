//! Every node of a fleet follows the shared store's change feed: a thread applies what
//! other nodes committed to this node's registry and publishes it (`Plane::catch_up`).
//!
//! The store's notifications (LISTEN/NOTIFY, [`Doorbell`]) are only a doorbell: after each
//! one, after each reconnection and at least every `[fleet] poll_interval` the follower
//! reads every batch after the last one it applied, so a lost notification costs latency,
//! never a change. A node a page behind reloads the whole catalog. While the store cannot
//! be reached, the node keeps serving its last snapshot and says so once.
//!
//! Must not touch: the request path (it publishes snapshots through the plane only).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::pg::{Doorbell, Rang};
use super::plane::{lock, SharedPlane};
use crate::metrics::hub::MetricsHub;

/// The longest the thread waits for the doorbell before looking at the clock and at a
/// stop (a stop never waits longer).
const SLICE: Duration = Duration::from_millis(250);

/// The running follower.
#[derive(Debug)]
pub struct Follower {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl Follower {
    /// Stops the thread and waits for it (at most a slice and one read of the feed).
    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        self.handle.thread().unpark();
        let _ = self.handle.join();
    }
}

/// What the follower last told the operator about the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    Up,
    Down,
}

/// Starts the follower of `plane`, rung by `bell`, reading at least every `poll`, and
/// recording each read in `hub`'s fleet gauges (`/metrics`).
pub fn spawn(
    plane: SharedPlane,
    mut bell: Doorbell,
    poll: Duration,
    hub: Arc<MetricsHub>,
) -> std::io::Result<Follower> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let handle = std::thread::Builder::new()
        .name("follower".into())
        .spawn(move || {
            let mut reach = Reach::Up;
            let mut next_poll = Instant::now() + poll;
            while !s.load(Ordering::Acquire) {
                let rang = bell.wait(SLICE);
                let due = Instant::now() >= next_poll;
                if rang == Rang::Down {
                    hub.fleet.read(None, std::time::SystemTime::now());
                    reach = report(reach, Reach::Down, &plane);
                    // Nothing to wait on: try again after a slice (a stop unparks).
                    std::thread::park_timeout(SLICE);
                    if !due {
                        continue;
                    }
                }
                if rang == Rang::Quiet && !due {
                    continue;
                }
                next_poll = Instant::now() + poll;
                let read = {
                    let mut p = lock(&plane);
                    p.catch_up().map(|_| p.seq())
                };
                hub.fleet
                    .read(read.as_ref().ok().copied(), std::time::SystemTime::now());
                reach = report(
                    reach,
                    if read.is_ok() { Reach::Up } else { Reach::Down },
                    &plane,
                );
            }
        })?;
    Ok(Follower { stop, handle })
}

/// Prints a line when the store becomes unreachable or reachable again.
fn report(was: Reach, now: Reach, plane: &SharedPlane) -> Reach {
    if was != now {
        let seq = lock(plane).seq();
        match now {
            Reach::Down => eprintln!(
                "searchgate: fleet: the store is unreachable; serving the last catalog (change {seq})"
            ),
            Reach::Up => println!("searchgate: fleet: the store is back; following from change {seq}"),
        }
    }
    now
}
