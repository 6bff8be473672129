//! Counting one request's use of the open search contexts (multitenant scrolls and points
//! in time) of the shared upstream its cluster is placed on, in the upstream's own unit
//! (shard contexts), against the cluster's share of that upstream's limit
//! (`tenancy::context_shares`, the ledger the registry keeps per upstream):
//!
//! - before the request waits for a slot, an open reserves the most shard contexts it can
//!   open: the cluster's primary shards in use (at least one, at most its plan's shard
//!   capacity); 429 when they do not fit its share, before anything reaches the upstream;
//! - once the response head says a close succeeded (200) or found nothing (404), its ids
//!   leave the ledger: before the answer reaches the client, so a client that opens again
//!   right after finds the place free;
//! - once the response was relayed, the reservation becomes the id the response carried
//!   (sealed by the response filter), weighing the shards the upstream reported
//!   (`_shards.total`), or is given back; a continuation restarts its id's keep-alive (or
//!   follows the new id a point in time got), a 404 drops it.
//!
//! In a fleet admitting at homes (issue 27), a request away from its cluster's home counts
//! nothing here: its reservation travels with its permit request and the rest is told to
//! the home as [`Held`] messages (`fleet::places`), which the home applies to its ledger
//! the same way.
//!
//! Must not touch: the rules (`tenancy::context_shares`), I/O, the decision.

use std::sync::Arc;
use std::time::Instant;

use crate::errors::EdgeError;
use crate::fleet::places::Held;
use crate::policy::decide::Decision;
use crate::registry::{Cluster, UpstreamContexts};
use crate::request::classify::ResponseKind;
use crate::tenancy::context_shares::too_many_contexts;
use crate::tenancy::contexts::{read_context_request, ContextRequest, DEFAULT_KEEP_ALIVE};
use crate::tenancy::response::PitOwner;
use crate::tenancy::{ContextUse, IdKind};

/// One request's contexts, as forwarded.
#[derive(Debug)]
pub(super) struct Counted {
    cluster: Arc<Cluster>,
    /// Where the contexts are counted: here, or at the cluster's home (`None`).
    ledger: Option<Arc<UpstreamContexts>>,
    use_: ContextUse,
    req: ContextRequest,
    /// Shard contexts reserved for an open (to be settled exactly once; 0: none).
    reserved: u64,
}

/// What the response of an exchange said about contexts.
#[derive(Debug, Default)]
pub(super) struct Answered<'a> {
    /// The upstream ids the response filter sealed.
    pub sealed: &'a [(IdKind, String)],
    /// The shards the upstream reported searching (`_shards.total`), if it said.
    pub shards: Option<u64>,
}

impl Counted {
    /// The contexts the request planned by `d` uses, forwarded as `target` with `body`;
    /// `None` when it uses none. An open reserves its place here (`Err`: 429), or, `at_home`
    /// another node, only weighs it (the home reserves it: [`Counted::home_weight`]).
    pub fn reserve(
        d: &Decision<'_, Arc<Cluster>>,
        target: &[u8],
        body: &[u8],
        at_home: bool,
    ) -> Result<Option<Counted>, EdgeError> {
        let Some(use_) = d.tenant.map(|t| t.plan.contexts) else {
            return Ok(None);
        };
        let Some(ledger) = d.cluster.contexts.clone() else {
            return Ok(None);
        };
        if use_ == ContextUse::None {
            return Ok(None);
        }
        let cluster = d.cluster.clone();
        let mut reserved = 0;
        if matches!(use_, ContextUse::Open(_)) {
            let weight = cluster.open_weight();
            if !at_home {
                if cluster.state.is_moving() {
                    return Err(EdgeError::ServiceUnavailable(super::precreate::MOVING));
                }
                let now = Instant::now();
                ledger.with(|l| l.reserve(&cluster.id, weight, now))?;
            }
            reserved = weight;
        }
        Ok(Some(Counted {
            cluster,
            ledger: (!at_home).then_some(ledger),
            use_,
            req: read_context_request(target, body),
            reserved,
        }))
    }

    /// The shard contexts the home reserves for this open (0: none, or counted here).
    pub fn home_weight(&self) -> u32 {
        match self.ledger {
            None => u32::try_from(self.reserved).unwrap_or(u32::MAX),
            Some(_) => 0,
        }
    }

    /// The 429 of an open the home found beyond the cluster's share (`share`, `used`).
    pub fn refused_at_home(&self, share: u32, used: u32) -> EdgeError {
        too_many_contexts(u64::from(share), u64::from(used), self.reserved)
    }

    /// The upstream's response head came with `status`; what to tell the home first when
    /// it counts the contexts.
    pub fn on_head(&self, status: u16) -> Option<Held> {
        if self.use_ == ContextUse::Close && matches!(status, 200 | 404) {
            let id = &self.cluster.id;
            match &self.ledger {
                Some(l) => l.with(|l| l.closed(id, &self.req.ids)),
                None => {
                    let ids = self.req.ids.clone();
                    return Some(Held::Closed { ids });
                }
            }
        }
        None
    }

    /// The exchange ended with `status` (the upstream's, or the edge's own refusal), the
    /// response having said `answered`; what to tell the home when it counts the contexts.
    pub fn settle(mut self, status: u16, answered: &Answered<'_>) -> Option<Held> {
        let Some(ledger) = self.ledger.take() else {
            return self.told(status, answered);
        };
        let now = Instant::now();
        let (req, use_, id) = (&self.req, self.use_, self.cluster.id.as_str());
        let first = |kind: Option<IdKind>| {
            answered
                .sealed
                .iter()
                .find(|(k, _)| kind.is_none_or(|want| *k == want))
                .map(|(_, id)| id.as_str())
        };
        let reserved = std::mem::take(&mut self.reserved);
        ledger.with(|l| match use_ {
            ContextUse::Open(kind) => {
                let opened = (200..300)
                    .contains(&status)
                    .then(|| first(Some(kind)))
                    .flatten()
                    .map(|upstream_id| (upstream_id, answered.shards));
                let keep_alive = req.keep_alive.unwrap_or(DEFAULT_KEEP_ALIVE);
                l.opened(id, reserved, opened, keep_alive, now);
            }
            ContextUse::Continue if status == 200 => {
                l.continued(id, &req.ids, first(None), req.keep_alive, now)
            }
            ContextUse::Continue if status == 404 => l.closed(id, &req.ids),
            _ => {}
        });
        None
    }

    /// What the home is told of the exchange [`Counted::settle`] ends.
    fn told(&self, status: u16, answered: &Answered<'_>) -> Option<Held> {
        let ok = (200..300).contains(&status);
        let first = |kind: Option<IdKind>| {
            answered
                .sealed
                .iter()
                .find(|(k, _)| kind.is_none_or(|want| *k == want))
                .map(|(_, id)| id.clone())
        };
        let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        match self.use_ {
            ContextUse::Open(kind) => Some(Held::Opened {
                id: ok.then(|| first(Some(kind))).flatten(),
                shards: answered.shards,
                keep_alive_ms: ms(self.req.keep_alive.unwrap_or(DEFAULT_KEEP_ALIVE)),
            }),
            ContextUse::Continue if status == 200 => Some(Held::Continued {
                sent: self.req.ids.clone(),
                got: first(None),
                keep_alive_ms: self.req.keep_alive.map(ms),
            }),
            ContextUse::Continue if status == 404 => Some(Held::Closed {
                ids: self.req.ids.clone(),
            }),
            _ => None,
        }
    }
}

/// Which upstream point-in-time ids the request's cluster owns, for an OpenSearch list of
/// points in time (`tenancy::response::PitList`): the ids the request itself closed (its
/// own, opened from its sealed tokens; the ledger forgot them when the head came) and
/// those the ledger holds for the cluster.
pub(super) fn pit_owner(
    d: &Decision<'_, Arc<Cluster>>,
    counted: Option<&Counted>,
) -> Option<PitOwner> {
    let plan = &d.tenant.as_ref()?.plan;
    if plan.response.kind != ResponseKind::PitList {
        return None;
    }
    let ledger = d.cluster.contexts.clone();
    let cluster: Arc<str> = Arc::from(d.cluster.id.as_str());
    let asked: Vec<String> = counted.map(|c| c.req.ids.clone()).unwrap_or_default();
    Some(Arc::new(move |id: &str| {
        asked.iter().any(|a| a == id)
            || ledger
                .as_ref()
                .is_some_and(|l| l.with(|x| x.holds(&cluster, id, Instant::now())))
    }))
}

impl Drop for Counted {
    /// An exchange dropped before it settled (its task ended, or panicked) gives its
    /// reservation back.
    fn drop(&mut self) {
        // Away from home the home gives it back when the permit ends.
        if let (true, Some(ledger)) = (self.reserved > 0, &self.ledger) {
            let (id, reserved, now) = (&self.cluster.id, self.reserved, Instant::now());
            ledger.with(|l| l.opened(id, reserved, None, DEFAULT_KEEP_ALIVE, now));
        }
    }
}
