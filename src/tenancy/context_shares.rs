//! The open search contexts (scrolls, points in time) of one shared upstream, for every
//! multitenant cluster placed on it, counted in the upstream's own unit: one context per
//! shard searched (Elasticsearch's `search.max_open_scroll_context` counts shard contexts,
//! 500 by default, and so does the embedded engine: one scroll over a 5-shard index is 5).
//!
//! The upstream's limit is shared out so that no cluster can make another's open fail:
//! each cluster is allotted a share, its plan's `max_open_contexts` when the plans of the
//! clusters on the upstream fit within the limit together, else the limit divided in
//! proportion to the plans' budgets (rounded down: the shares never add up to more than
//! the limit). An open that does not fit the cluster's share is refused by the edge (429)
//! before anything reaches the upstream, so the upstream never runs out while each
//! cluster stays within its share.
//!
//! An open reserves a weight before it is forwarded: at most the shards it can touch (the
//! cluster's primary shards in use, see `edge::contexts`). Answered, the place becomes an
//! entry weighing what the upstream reported (`_shards.total` of a scroll's first page),
//! or the reserved weight when the answer does not say (a point in time's opening). A
//! close removes its ids once the upstream answered 200 or 404; a continuation renews its
//! id's expiry and follows a changed id; an entry whose keep-alive passed is dropped at
//! the next count, as the upstream drops the context.
//!
//! Metering readings of the upstream's own count (`open_contexts` of the cluster's
//! indices) bring in what this ledger did not see: the contexts a previous home of the
//! cluster opened (issue 27), or this process before a restart. A cluster's first
//! reading, and the reading that settles a takeover, set its *unread* part (the count
//! less the entries opened before the reading began; a takeover's drops those entries,
//! which another home may have closed since); later readings can only lower it, so a
//! context opened or closed while a reading was on the wire is never counted twice for
//! longer than one reading.
//!
//! Pure: the clock is passed in. Must not touch: I/O, locks (the registry holds the
//! ledger behind its lock).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ring::digest::{digest, SHA256};

use crate::errors::EdgeError;

/// An upstream id as the ledger keys it (ids can be kilobytes long).
type Key = [u8; 16];

fn key(id: &str) -> Key {
    let d = digest(&SHA256, id.as_bytes());
    let mut k = [0; 16];
    k.copy_from_slice(&d.as_ref()[..16]);
    k
}

/// One open context: its weight in shard contexts, when it expires unless used again, and
/// its keep-alive (each use restarts it, as the upstream's reaper counts from the last).
#[derive(Debug, Clone, Copy)]
struct Entry {
    weight: u64,
    until: Instant,
    keep_alive: Duration,
    /// The ledger's readings begun when it opened (a reading begun later counts it).
    since: u64,
}

/// One cluster's part of the ledger.
#[derive(Debug, Default)]
struct Member {
    /// Its plan's `max_open_contexts` (0: no longer placed here; kept while it holds any).
    budget: u64,
    open: HashMap<Key, Entry>,
    /// Weight reserved by opens forwarded and not answered yet.
    reserved: u64,
    /// Shard contexts the upstream counted that no entry explains (see the module's docs).
    unread: u64,
    /// Whether a reading was recorded for it.
    read: bool,
}

impl Member {
    fn sweep(&mut self, now: Instant) {
        self.open.retain(|_, e| e.until > now);
    }

    fn used(&self) -> u64 {
        self.open
            .values()
            .fold(self.reserved.saturating_add(self.unread), |n, e| {
                n.saturating_add(e.weight)
            })
    }

    fn holds_any(&self) -> bool {
        self.reserved > 0 || self.unread > 0 || !self.open.is_empty()
    }
}

/// The ledger of one shared upstream.
#[derive(Debug)]
pub struct SharedContexts {
    /// The upstream's own limit, in shard contexts.
    limit: u64,
    members: HashMap<String, Member>,
    /// The members' budgets added up.
    total: u128,
    /// Members no longer placed here (budget 0) that still hold contexts.
    departed: std::collections::HashSet<String>,
    /// What those hold, taken from the limit before it is shared out.
    departed_used: u64,
    /// Readings begun so far.
    readings: u64,
}

impl SharedContexts {
    /// A ledger for an upstream allowing `limit` shard contexts at once.
    pub fn new(limit: u64) -> SharedContexts {
        SharedContexts {
            limit,
            members: HashMap::new(),
            total: 0,
            departed: std::collections::HashSet::new(),
            departed_used: 0,
            readings: 0,
        }
    }

    /// The upstream's limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The clusters placed on the upstream, each with its plan's budget (`max_open_contexts`);
    /// the shares follow. A cluster no longer listed keeps what it holds counted (the
    /// upstream keeps those contexts until they expire) with no share for new ones.
    pub fn set_members<'a>(&mut self, members: impl IntoIterator<Item = (&'a str, u64)>) {
        for m in self.members.values_mut() {
            m.budget = 0;
        }
        for (id, budget) in members {
            self.members.entry(id.to_string()).or_default().budget = budget;
        }
        for m in self.members.values_mut().filter(|m| m.budget == 0) {
            m.unread = 0; // no longer read: what it held expires unseen
        }
        self.members.retain(|_, m| m.budget > 0 || m.holds_any());
        self.total = self.members.values().map(|m| m.budget as u128).sum();
        self.departed = self
            .members
            .iter()
            .filter(|(_, m)| m.budget == 0)
            .map(|(id, _)| id.clone())
            .collect();
        self.count_departed();
    }

    /// Places `cluster` here with `budget` (0: no longer placed here; what it holds stays
    /// counted until it expires). The shares follow; costs one member, not all of them.
    pub fn set_member(&mut self, cluster: &str, budget: u64) {
        let m = self.members.entry(cluster.to_string()).or_default();
        self.total = self.total - m.budget as u128 + budget as u128;
        m.budget = budget;
        if budget == 0 {
            m.unread = 0; // no longer read: what it held expires unseen
        }
        let holds = m.holds_any();
        if budget > 0 {
            self.departed.remove(cluster);
        } else if holds {
            self.departed.insert(cluster.to_string());
        } else {
            self.members.remove(cluster);
            self.departed.remove(cluster);
        }
        self.count_departed();
    }

    /// Adds up what the members no longer placed here hold.
    fn count_departed(&mut self) {
        let members = &self.members;
        self.departed_used = self
            .departed
            .iter()
            .filter_map(|id| members.get(id))
            .fold(0, |n, m| n.saturating_add(m.used()));
    }

    /// A member's share: its budget when all budgets fit the limit, else its part of the
    /// limit in proportion to its budget, rounded down. What clusters no longer placed here
    /// still hold is taken from the limit first.
    fn share_of(&self, m: &Member) -> u64 {
        let limit = self.limit.saturating_sub(self.departed_used) as u128;
        if self.total <= limit {
            m.budget
        } else {
            (limit * m.budget as u128 / self.total) as u64
        }
    }

    /// Drops what expired; when a cluster no longer placed here held some, its members
    /// are forgotten once they hold nothing and the shares grow back.
    fn sweep(&mut self, now: Instant) {
        for m in self.members.values_mut() {
            m.sweep(now);
        }
        if !self.departed.is_empty() {
            let members = &mut self.members;
            self.departed.retain(|id| {
                let gone = members.get(id).is_none_or(|m| !m.holds_any());
                if gone {
                    members.remove(id);
                }
                !gone
            });
            self.count_departed();
        }
    }

    /// The shard contexts `cluster` may hold at once here (as of the last change or open).
    pub fn share(&self, cluster: &str) -> u64 {
        self.members.get(cluster).map_or(0, |m| self.share_of(m))
    }

    /// The shard contexts `cluster` holds at `now` (expired ones dropped), reservations
    /// included.
    pub fn used(&mut self, cluster: &str, now: Instant) -> u64 {
        self.members.get_mut(cluster).map_or(0, |m| {
            m.sweep(now);
            m.used()
        })
    }

    /// The shard contexts every cluster holds here at `now`, reservations included.
    pub fn total(&mut self, now: Instant) -> u64 {
        self.sweep(now);
        self.members
            .values()
            .fold(0, |n, m| n.saturating_add(m.used()))
    }

    /// Reserves `weight` shard contexts for an open of `cluster` about to be forwarded, or
    /// refuses it (429) when they do not fit its share.
    pub fn reserve(&mut self, cluster: &str, weight: u64, now: Instant) -> Result<(), EdgeError> {
        self.sweep(now);
        let share = self.share(cluster);
        let Some(m) = self.members.get_mut(cluster) else {
            return Err(too_many_contexts(0, 0, weight));
        };
        let used = m.used();
        match used.checked_add(weight) {
            Some(after) if after <= share => {
                m.reserved += weight;
                Ok(())
            }
            _ => Err(too_many_contexts(share, used, weight)),
        }
    }

    /// The open that reserved `reserved` was answered: with the upstream `id` it opened,
    /// weighing `weight` (what the upstream reported, else the reservation), kept until
    /// `now + keep_alive`; or with none (the place is given back).
    pub fn opened(
        &mut self,
        cluster: &str,
        reserved: u64,
        opened: Option<(&str, Option<u64>)>,
        keep_alive: Duration,
        now: Instant,
    ) {
        let m = self.members.entry(cluster.to_string()).or_default();
        m.reserved = m.reserved.saturating_sub(reserved);
        if let Some((id, weight)) = opened {
            let e = Entry {
                weight: weight.unwrap_or(reserved).max(1),
                until: now.checked_add(keep_alive).unwrap_or(now),
                keep_alive,
                since: self.readings,
            };
            m.open.insert(key(id), e);
        }
    }

    /// The upstream answered a continuation of `sent` (the ids the request named) with
    /// `got` (the id its response carries, if any): a changed id replaces the one sent, and
    /// its keep-alive restarts (the one asked for, else the one it had). Ids the ledger does
    /// not hold stay out.
    pub fn continued(
        &mut self,
        cluster: &str,
        sent: &[String],
        got: Option<&str>,
        keep_alive: Option<Duration>,
        now: Instant,
    ) {
        let Some(m) = self.members.get_mut(cluster) else {
            return;
        };
        let mut had = None;
        for id in sent {
            if let Some(e) = m.open.remove(&key(id)) {
                had = Some(e);
            }
        }
        let (Some(had), Some(id)) = (had, got.or(sent.first().map(String::as_str))) else {
            return;
        };
        let keep_alive = keep_alive.unwrap_or(had.keep_alive);
        let e = Entry {
            until: now.checked_add(keep_alive).unwrap_or(now),
            keep_alive,
            ..had
        };
        m.open.insert(key(id), e);
    }

    /// Begins a reading of the upstream's count: its number, for [`Self::record_reading`].
    pub fn begin_reading(&mut self) -> u64 {
        self.readings += 1;
        self.readings
    }

    /// Whether a reading of `cluster`'s count can change anything here: its first, or
    /// while it has an unread part to lower (a takeover's reading is asked for anyway).
    pub fn wants_reading(&self, cluster: &str) -> bool {
        self.members
            .get(cluster)
            .is_some_and(|m| !m.read || m.unread > 0)
    }

    /// Records reading `reading` of `cluster`: the upstream counted `counted` shard
    /// contexts of its indices. `settles`: the reading settles a takeover of the cluster
    /// (see the module's docs).
    pub fn record_reading(
        &mut self,
        cluster: &str,
        reading: u64,
        counted: u64,
        settles: bool,
        now: Instant,
    ) {
        let Some(m) = self.members.get_mut(cluster) else {
            return;
        };
        m.sweep(now);
        if settles {
            m.open.retain(|_, e| e.since >= reading);
            m.unread = counted;
        } else {
            let known = m
                .open
                .values()
                .filter(|e| e.since < reading)
                .fold(0u64, |n, e| n.saturating_add(e.weight));
            let unexplained = counted.saturating_sub(known);
            m.unread = if m.read {
                m.unread.min(unexplained)
            } else {
                unexplained
            };
        }
        m.read = true;
        self.count_departed();
    }

    /// Whether `cluster` holds the open context `id` (unexpired at `now`): what confines
    /// OpenSearch's list of points in time to the cluster's own.
    pub fn holds(&self, cluster: &str, id: &str, now: Instant) -> bool {
        self.members
            .get(cluster)
            .and_then(|m| m.open.get(&key(id)))
            .is_some_and(|e| e.until > now)
    }

    /// The contexts of `ids` are gone (closed, or missing upstream).
    pub fn closed(&mut self, cluster: &str, ids: &[String]) {
        if let Some(m) = self.members.get_mut(cluster) {
            for id in ids {
                m.open.remove(&key(id));
            }
        }
    }
}

/// The 429 of an open that does not fit: the cluster's share, what it holds, what the open
/// needs (Elasticsearch 8's `too_many_scroll_contexts_exception`, with the numbers).
pub fn too_many_contexts(share: u64, used: u64, weight: u64) -> EdgeError {
    EdgeError::Refused {
        status: 429,
        kind: "too_many_scroll_contexts_exception",
        reason: format!(
            "Trying to create too many scroll contexts. Must be less than or equal to: [{share}]. \
             Open now: [{used}] (shard contexts of this cluster's scrolls and points in time; \
             this one needs up to [{weight}]). This limit can be raised by upgrading the plan; \
             clear scrolls and close points in time you no longer need."
        ),
    }
}

#[cfg(test)]
#[path = "context_shares_tests.rs"]
mod tests;
