//! Delivery of overage notices to `[billing] webhook`: its own thread, so a slow or dead
//! receiver never holds the request path, metering or the admin API. Notices are queued in
//! the store with the ladder's step (same transaction) and sent in order, one at a time, as
//! a JSON POST; any 2xx is delivered. A failure (refused connection, timeout, another
//! status) is recorded and retried after a backoff that doubles from half a second up to
//! five minutes; the queue survives restarts, so delivery is at least once (the body's
//! `notice_id` lets a receiver drop a repeat). In a fleet only the leader delivers (see
//! `control::lease`), and an idle thread looks at the queue every second, since the lead
//! can move to its node. On its own, the thread never polls: it waits on a
//! [`Bell`] (`control::bell`, a condition variable) that the control plane rings after committing a notice,
//! and that a stop rings too, so a stop ends an idle wait or a backoff at once; a stop
//! waits at most a second for a delivery in flight.
//!
//! Must not touch: the request path, the catalog (it reads and marks notices only).

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::bell::{Bell, Woke};
use super::clock::system_ms;
use super::plane::{lock, SharedPlane};

/// First retry after this long; each failure doubles it.
const BACKOFF_FIRST: Duration = Duration::from_millis(500);
/// Longest wait between attempts.
const BACKOFF_MAX: Duration = Duration::from_secs(300);
/// Longest a stop waits for the thread: a delivery still in flight then (a slow receiver,
/// up to `webhook_timeout`) is left behind, its notice queued for the next start.
const STOP_WAIT: Duration = Duration::from_secs(1);

/// How long an idle delivery thread waits for a bell before it looks again (a node that
/// does not lead the fleet rings no bell of its own, and may become the leader).
const FOLLOWER_WAIT: Duration = Duration::from_secs(1);

/// The wait before attempt `n + 1` after `n` failures in a row.
pub fn backoff(failures: u32) -> Duration {
    BACKOFF_FIRST
        .saturating_mul(1u32 << failures.saturating_sub(1).min(20))
        .min(BACKOFF_MAX)
}

/// POSTs `body` with its `notice_id` to `url`; `Err` says why it was not delivered.
fn post(agent: &ureq::Agent, url: &str, id: u64, body: &Value) -> Result<(), String> {
    let mut body = body.clone();
    if let Some(o) = body.as_object_mut() {
        o.insert("notice_id".into(), id.into());
    }
    let resp = agent
        .post(url)
        .header("Content-Type", "application/json")
        .header("X-Searchgate-Notice", id.to_string())
        .send(body.to_string())
        .map_err(|e| e.to_string())?;
    match resp.status().as_u16() {
        200..=299 => Ok(()),
        s => Err(format!("the receiver answered {s}")),
    }
}

/// The running delivery thread.
#[derive(Debug)]
pub struct Delivery {
    handle: JoinHandle<()>,
    bell: Arc<Bell>,
}

/// Starts the delivery thread, woken by the plane's notice bell; [`Delivery::stop`] ends it.
pub fn spawn(plane: SharedPlane, url: String, timeout: Duration) -> std::io::Result<Delivery> {
    let bell = lock(&plane).notice_bell();
    let b = bell.clone();
    let handle = std::thread::Builder::new()
        .name("webhook".into())
        .spawn(move || {
            let agent = crate::outbound::agent("webhook", timeout, Default::default());
            deliver(&plane, &agent, &url, &b);
            b.finish();
        })?;
    Ok(Delivery { handle, bell })
}

/// The delivery loop: the queue's head notice, one at a time, until stopped.
fn deliver(plane: &SharedPlane, agent: &ureq::Agent, url: &str, bell: &Bell) {
    let mut failures = 0u32;
    let fleet = lock(plane).in_fleet();
    loop {
        let next = {
            let mut p = lock(plane);
            match p.leads() {
                true => p.store().next_notice(),
                // Another node of the fleet delivers; look again in a while.
                false => Ok(None),
            }
        };
        let woke = match next {
            Ok(Some((id, _, notice))) => {
                let result = post(agent, url, id, &notice.body);
                let mut p = lock(plane);
                let recorded = match &result {
                    Ok(()) => p.store().notice_attempt(id, Some(system_ms()), None),
                    Err(e) => p.store().notice_attempt(id, None, Some(e)),
                };
                drop(p);
                if let Err(e) = recorded {
                    eprintln!("searchgate: webhook: recording notice {id}: {e}");
                }
                match result {
                    Ok(()) => {
                        failures = 0;
                        continue_unless_stopped(bell)
                    }
                    Err(e) => {
                        failures = failures.saturating_add(1);
                        let wait = backoff(failures);
                        eprintln!(
                            "searchgate: webhook: notice {id} for cluster {} not delivered ({e}); retrying in {wait:?}",
                            notice.cluster_id
                        );
                        bell.wait(Some(Instant::now() + wait), false)
                    }
                }
            }
            Ok(None) if fleet => bell.wait(Some(Instant::now() + FOLLOWER_WAIT), true),
            Ok(None) => bell.wait(None, true),
            Err(e) => {
                eprintln!("searchgate: webhook: reading the queue: {e}");
                bell.wait(Some(Instant::now() + BACKOFF_FIRST), false)
            }
        };
        if woke == Woke::Stopped {
            return;
        }
    }
}

/// [`Woke::Stopped`] when a stop came, else go on at once.
fn continue_unless_stopped(bell: &Bell) -> Woke {
    match bell.stopped() {
        true => Woke::Stopped,
        false => Woke::Queued,
    }
}

impl Delivery {
    /// Stops the thread and waits for it, at most [`STOP_WAIT`], so that a slow receiver
    /// never holds a shutdown either (a stop during a backoff or an idle wait is at once).
    pub fn stop(self) {
        self.bell.stop();
        if self.bell.wait_finished(Instant::now() + STOP_WAIT) {
            let _ = self.handle.join();
        } else {
            eprintln!(
                "searchgate: webhook: a delivery is still in flight; its notice is sent again after the next start"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_five_minutes() {
        assert_eq!(backoff(1), Duration::from_millis(500));
        assert_eq!(backoff(2), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(2));
        assert_eq!(backoff(10), Duration::from_secs(256));
        assert_eq!(backoff(11), Duration::from_secs(300));
        assert_eq!(backoff(u32::MAX), Duration::from_secs(300));
    }
}
