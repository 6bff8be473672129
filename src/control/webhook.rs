//! Delivery of overage notices to `[billing] webhook`: its own thread, so a slow or dead
//! receiver never holds the request path, metering or the admin API. Notices are queued in
//! the store with the ladder's step (same transaction) and sent in order, one at a time, as
//! a JSON POST; any 2xx is delivered. A failure (refused connection, timeout, another
//! status) is recorded and retried after a backoff that doubles from half a second up to
//! five minutes; the queue survives restarts, so delivery is at least once (the body's
//! `notice_id` lets a receiver drop a repeat). A stop waits at most a second for a delivery
//! in flight.
//!
//! Must not touch: the request path, the catalog (it reads and marks notices only).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::boot::{lock, SharedPlane};
use super::clock::system_ms;

/// First retry after this long; each failure doubles it.
const BACKOFF_FIRST: Duration = Duration::from_millis(500);
/// Longest wait between attempts.
const BACKOFF_MAX: Duration = Duration::from_secs(300);
/// How often the queue is looked at when it is empty.
const POLL: Duration = Duration::from_millis(200);
/// Longest a stop waits for the thread: a delivery still in flight then (a slow receiver,
/// up to `webhook_timeout`) is left behind, its notice queued for the next start.
const STOP_WAIT: Duration = Duration::from_secs(1);

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

/// Starts the delivery thread; it stops when `stop` is set.
pub fn spawn(
    plane: SharedPlane,
    url: String,
    timeout: Duration,
    stop: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("webhook".into())
        .spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .timeout_global(Some(timeout))
                .http_status_as_error(false)
                .build()
                .into();
            let mut failures = 0u32;
            let mut retry_at: Option<Instant> = None;
            while !stop.load(Ordering::Acquire) {
                if retry_at.is_some_and(|t| Instant::now() < t) {
                    std::thread::sleep(POLL.min(BACKOFF_FIRST));
                    continue;
                }
                let next = lock(&plane).store().next_notice();
                let (id, _, notice) = match next {
                    Ok(Some(n)) => n,
                    Ok(None) => {
                        std::thread::sleep(POLL);
                        continue;
                    }
                    Err(e) => {
                        eprintln!("searchgate: webhook: reading the queue: {e}");
                        std::thread::sleep(BACKOFF_FIRST);
                        continue;
                    }
                };
                let result = post(&agent, &url, id, &notice.body);
                let mut p = lock(&plane);
                let recorded = match &result {
                    Ok(()) => p.store().notice_attempt(id, Some(system_ms()), None),
                    Err(e) => p.store().notice_attempt(id, None, Some(e)),
                };
                drop(p);
                if let Err(e) = recorded {
                    eprintln!("searchgate: webhook: recording notice {id}: {e}");
                }
                match result {
                    Ok(()) => (failures, retry_at) = (0, None),
                    Err(e) => {
                        failures = failures.saturating_add(1);
                        let wait = backoff(failures);
                        eprintln!(
                            "searchgate: webhook: notice {id} for cluster {} not delivered ({e}); retrying in {wait:?}",
                            notice.cluster_id
                        );
                        retry_at = Some(Instant::now() + wait);
                    }
                }
            }
        })
}

/// Waits for the delivery thread after `stop` was set, at most [`STOP_WAIT`], so that a
/// slow receiver never holds a shutdown either.
pub fn join(handle: JoinHandle<()>) {
    let end = Instant::now() + STOP_WAIT;
    while !handle.is_finished() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    if handle.is_finished() {
        let _ = handle.join();
    } else {
        eprintln!(
            "searchgate: webhook: a delivery is still in flight; its notice is sent again after the next start"
        );
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
