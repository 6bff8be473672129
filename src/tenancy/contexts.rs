//! The per-cluster count of open search contexts (scrolls and points in time), a plan
//! limit (`max_open_contexts`), so that one tenant cannot use up the shared upstream's own
//! limit (Elasticsearch's `search.max_open_scroll_context`, 500 by default) for the others.
//!
//! Pure parts, the clock passed in:
//! - [`ContextUse`]: what a request does to contexts (open one, continue, close), from its
//!   route and plan (`request::plan_request`, `RequestPlan::apply_body_facts`);
//! - [`read_context_request`]: the upstream ids and the keep-alive a request carries, read
//!   from what the edge forwards (its own canonical target and re-serialised body: the ids
//!   the upstream will act on, already opened from their sealed tokens);
//! - [`OpenContexts`]: the ledger one cluster's runtime state holds (behind a lock): open
//!   contexts by upstream id with the time they expire, plus reservations of opens still in
//!   flight, so that concurrent opens cannot pass the limit together;
//! - [`ContextBudget`]: the decision, refused at `limit + 1` with the numbers.
//!
//! How the edge counts (`edge::exchange`): an open reserves a place before it is
//! forwarded (429 when none is left) and turns it into an entry when the response carried
//! a sealed id, or gives it back; a close removes its ids once the upstream answered 200
//! or 404 (either way the context is gone); a continuation renews its id's expiry with the
//! keep-alive it sent, and follows a point-in-time id the response changed; an entry whose
//! keep-alive passed is dropped at the next count, as the upstream drops the context.
//! One unit is one scroll or point in time (the upstream keeps one context per shard it
//! searched; a tenant's shards are bounded by its plan).
//!
//! Must not touch: I/O, locks, the registry (the runtime state owns the ledger).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ring::digest::{digest, SHA256};

use super::ids::IdKind;
use super::json::{self, Value};
use super::references::params::decode;
use crate::errors::EdgeError;
use crate::params;

/// Keep-alive assumed for an open that names none the edge can read (Elasticsearch's
/// `search.default_keep_alive`; the upstream refuses a scroll or point in time without
/// one anyway).
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(5 * 60);

/// What a request does to the cluster's open search contexts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextUse {
    None,
    /// A search with `?scroll=` (a scroll), or `POST /<index>/_pit` (a point in time).
    Open(IdKind),
    /// `_search/scroll`, or a search of a point in time: the context lives on.
    Continue,
    /// Clearing scrolls, closing a point in time.
    Close,
}

/// The contexts one request names, as forwarded.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ContextRequest {
    /// Upstream ids (scroll ids, point-in-time ids) the request continues or closes.
    pub ids: Vec<String>,
    /// The keep-alive it asks for (`?scroll=`, `?keep_alive=`, a scroll body's `scroll`, a
    /// search body's `pit.keep_alive`), when it names one.
    pub keep_alive: Option<Duration>,
}

/// Reads the ids and keep-alive of a request the edge forwards as `target` (origin form,
/// canonical) with `body` (JSON the edge wrote, or empty).
pub fn read_context_request(target: &[u8], body: &[u8]) -> ContextRequest {
    let mut req = ContextRequest::default();
    let (path, query) = match memchr::memchr(b'?', target) {
        Some(q) => (&target[..q], &target[q + 1..]),
        None => (target, &b""[..]),
    };
    if let Some(ids) = path.strip_prefix(b"/_search/scroll/") {
        let ids = decode(ids).unwrap_or_default();
        req.ids
            .extend(ids.split(',').filter(|s| !s.is_empty()).map(String::from));
    }
    for pair in query.split(|&b| b == b'&') {
        let (k, v) = match memchr::memchr(b'=', pair) {
            Some(e) => (&pair[..e], &pair[e + 1..]),
            None => (pair, &b""[..]),
        };
        let value = decode(v).unwrap_or_default();
        match k {
            b"scroll" | b"keep_alive" => req.keep_alive = parse_time(&value),
            b"scroll_id" => req.ids.push(value),
            _ => {}
        }
    }
    if let Ok(Some(Value::Object(o))) = json::parse_opt(body) {
        for key in ["scroll_id", "id", "pit_id"] {
            match o.get(key) {
                Some(Value::String(s)) => req.ids.push(s.clone()),
                Some(Value::Array(list)) => {
                    req.ids
                        .extend(list.iter().filter_map(Value::as_str).map(String::from));
                }
                _ => {}
            }
        }
        if let Some(s) = o.get("scroll").and_then(Value::as_str) {
            req.keep_alive = parse_time(s);
        }
        if let Some(pit) = o.get("pit").and_then(Value::as_object) {
            if let Some(id) = pit.get("id").and_then(Value::as_str) {
                req.ids.push(id.to_string());
            }
            if let Some(k) = pit.get("keep_alive").and_then(Value::as_str) {
                req.keep_alive = parse_time(k);
            }
        }
    }
    req
}

/// The keep-alive a forwarded value names, read by the one reader the engine uses too
/// (`params::parse_time`); the edge refused unreadable and too long values before
/// forwarding (`references::params`, the body rewriters), so `None` here is only for what
/// the edge did not write itself. A negative keep-alive (Elasticsearch reads it, and the
/// context expires at once) is zero.
pub fn parse_time(s: &str) -> Option<Duration> {
    params::parse_time(s, "keep_alive")
        .ok()
        .map(|t| t.to_duration())
}

/// When a context kept alive `keep_alive` from `now` expires: checked arithmetic (a
/// keep-alive is at most `search.max_keep_alive` once the edge checked it; anything
/// longer is held at that maximum rather than overflowing the clock).
fn expiry(now: Instant, keep_alive: Duration) -> Instant {
    let max = params::MAX_KEEP_ALIVE.to_duration();
    now.checked_add(keep_alive.min(max)).unwrap_or(now)
}

/// The per-cluster limit of open search contexts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextBudget {
    /// Contexts the cluster's plan may hold open at once.
    pub limit: u64,
}

impl ContextBudget {
    /// Whether a request that opens one more context may go ahead, given the cluster's
    /// `open` contexts now (reservations included): refused at `limit + 1` with the numbers,
    /// as Elasticsearch 8 refuses past its own limit (429
    /// `too_many_scroll_contexts_exception`).
    pub fn decide(&self, open: u64) -> Result<(), EdgeError> {
        if open < self.limit {
            return Ok(());
        }
        Err(EdgeError::Refused {
            status: 429,
            kind: "too_many_scroll_contexts_exception",
            reason: format!(
                "Trying to create too many scroll contexts. Must be less than or equal to: [{}]. \
                 Open now: [{open}] (scrolls and points in time of this cluster). This limit \
                 can be raised by upgrading the plan; clear scrolls and close points in time \
                 you no longer need.",
                self.limit
            ),
        })
    }
}

/// An upstream id as the ledger keys it (ids can be kilobytes long).
type Key = [u8; 16];

fn key(id: &str) -> Key {
    let d = digest(&SHA256, id.as_bytes());
    let mut k = [0; 16];
    k.copy_from_slice(&d.as_ref()[..16]);
    k
}

/// One open context: when it expires unless used again, and its keep-alive (each use
/// restarts it, as the upstream's reaper counts from the last access).
#[derive(Debug, Clone, Copy)]
struct Entry {
    until: Instant,
    keep_alive: Duration,
}

/// One cluster's open contexts.
#[derive(Debug, Default)]
pub struct OpenContexts {
    /// Open contexts by upstream id.
    open: HashMap<Key, Entry>,
    /// Opens forwarded and not answered yet.
    reserved: u64,
}

impl OpenContexts {
    /// Contexts open at `now` (expired ones dropped), reservations included.
    pub fn count(&mut self, now: Instant) -> u64 {
        self.open.retain(|_, e| e.until > now);
        self.open.len() as u64 + self.reserved
    }

    /// Reserves a place for an open about to be forwarded, or refuses it (429).
    pub fn reserve(&mut self, budget: ContextBudget, now: Instant) -> Result<(), EdgeError> {
        let n = self.count(now);
        budget.decide(n)?;
        self.reserved += 1;
        Ok(())
    }

    /// The reserved open was answered: with the upstream `id` it opened (kept until `now +
    /// keep_alive`), or none (the place is given back).
    pub fn opened(&mut self, id: Option<&str>, keep_alive: Duration, now: Instant) {
        self.reserved = self.reserved.saturating_sub(1);
        if let Some(id) = id {
            let e = Entry {
                until: expiry(now, keep_alive),
                keep_alive,
            };
            self.open.insert(key(id), e);
        }
    }

    /// The upstream answered a continuation of `sent` (the ids the request named) with
    /// `got` (the id its response carries, if any): a changed id replaces the one sent, and
    /// its keep-alive restarts (the one asked for, else the one it had). Ids the ledger does
    /// not hold stay out (another node opened them, or they expired).
    pub fn continued(
        &mut self,
        sent: &[String],
        got: Option<&str>,
        keep_alive: Option<Duration>,
        now: Instant,
    ) {
        let mut had = None;
        for id in sent {
            if let Some(e) = self.open.remove(&key(id)) {
                had = Some(e);
            }
        }
        let (Some(had), Some(id)) = (had, got.or(sent.first().map(String::as_str))) else {
            return;
        };
        let keep_alive = keep_alive.unwrap_or(had.keep_alive);
        let e = Entry {
            until: expiry(now, keep_alive),
            keep_alive,
        };
        self.open.insert(key(id), e);
    }

    /// The contexts of `ids` are gone (closed, or missing upstream).
    pub fn closed(&mut self, ids: &[String]) {
        for id in ids {
            self.open.remove(&key(id));
        }
    }
}

#[cfg(test)]
#[path = "contexts_tests.rs"]
mod tests;
