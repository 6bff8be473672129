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
//! Must not touch: the rules (`tenancy::context_shares`), I/O, the decision.

use std::sync::Arc;
use std::time::Instant;

use crate::errors::EdgeError;
use crate::policy::decide::Decision;
use crate::registry::{Cluster, UpstreamContexts};
use crate::request::classify::ResponseKind;
use crate::tenancy::contexts::{read_context_request, ContextRequest, DEFAULT_KEEP_ALIVE};
use crate::tenancy::response::PitOwner;
use crate::tenancy::{ContextUse, IdKind};

/// One request's contexts, as forwarded.
#[derive(Debug)]
pub(super) struct Counted {
    cluster: Arc<Cluster>,
    ledger: Arc<UpstreamContexts>,
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

/// The most shard contexts an open by `cluster` can make the upstream hold: one per
/// primary shard of the cluster (a search of all its indices), within its plan.
fn open_weight(cluster: &Cluster) -> u64 {
    let primaries = cluster.state.usage().primaries;
    primaries.clamp(1, cluster.plan.shards.max(1))
}

impl Counted {
    /// The contexts the request planned by `d` uses, forwarded as `target` with `body`;
    /// `None` when it uses none. An open reserves its place here (`Err`: 429).
    pub fn reserve(
        d: &Decision<'_, Arc<Cluster>>,
        target: &[u8],
        body: &[u8],
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
            let weight = open_weight(&cluster);
            let now = Instant::now();
            ledger.with(|l| l.reserve(&cluster.id, weight, now))?;
            reserved = weight;
        }
        Ok(Some(Counted {
            cluster,
            ledger,
            use_,
            req: read_context_request(target, body),
            reserved,
        }))
    }

    /// The upstream's response head came with `status`.
    pub fn on_head(&self, status: u16) {
        if self.use_ == ContextUse::Close && matches!(status, 200 | 404) {
            let id = &self.cluster.id;
            self.ledger.with(|l| l.closed(id, &self.req.ids));
        }
    }

    /// The exchange ended with `status` (the upstream's, or the edge's own refusal), the
    /// response having said `answered`.
    pub fn settle(mut self, status: u16, answered: &Answered<'_>) {
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
        self.ledger.with(|l| match use_ {
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
        if self.reserved > 0 {
            let (id, reserved, now) = (&self.cluster.id, self.reserved, Instant::now());
            self.ledger
                .with(|l| l.opened(id, reserved, None, DEFAULT_KEEP_ALIVE, now));
        }
    }
}
