//! Counting one request's use of its cluster's open search contexts (multitenant scrolls
//! and points in time) against the plan's `max_open_contexts`, in the cluster's ledger
//! (`tenancy::contexts::OpenContexts`, held by the registry's runtime state):
//!
//! - before the request waits for a slot, an open reserves a place (429 when the plan's
//!   contexts are all in use, before anything reaches the upstream);
//! - once the response head says a close succeeded (200) or found nothing (404), its ids
//!   leave the ledger: before the answer reaches the client, so a client that opens again
//!   right after finds the place free;
//! - once the response was relayed, the reserved place becomes the id the response carried
//!   (sealed by the response filter) or is given back; a continuation restarts its id's
//!   keep-alive (or follows the new id a point in time got), a 404 drops it.
//!
//! Must not touch: the rules (`tenancy::contexts`), I/O, the decision.

use std::sync::Arc;
use std::time::Instant;

use crate::errors::EdgeError;
use crate::policy::decide::Decision;
use crate::registry::Cluster;
use crate::tenancy::contexts::{read_context_request, ContextRequest, DEFAULT_KEEP_ALIVE};
use crate::tenancy::{ContextBudget, ContextUse, IdKind};

/// One request's contexts, as forwarded.
#[derive(Debug)]
pub(super) struct Counted {
    cluster: Arc<Cluster>,
    use_: ContextUse,
    req: ContextRequest,
    /// A place was reserved for an open (to be settled exactly once).
    reserved: bool,
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
        if use_ == ContextUse::None {
            return Ok(None);
        }
        let cluster = d.cluster.clone();
        let reserved = matches!(use_, ContextUse::Open(_));
        if reserved {
            let budget = ContextBudget {
                limit: cluster.plan.max_open_contexts,
            };
            let now = Instant::now();
            cluster.state.contexts(|c| c.reserve(budget, now))?;
        }
        Ok(Some(Counted {
            cluster,
            use_,
            req: read_context_request(target, body),
            reserved,
        }))
    }

    /// The upstream's response head came with `status`.
    pub fn on_head(&self, status: u16) {
        if self.use_ == ContextUse::Close && matches!(status, 200 | 404) {
            self.cluster.state.contexts(|c| c.closed(&self.req.ids));
        }
    }

    /// The exchange ended with `status` (the upstream's, or the edge's own refusal), the
    /// response filter having sealed `sealed`.
    pub fn settle(mut self, status: u16, sealed: &[(IdKind, String)]) {
        let now = Instant::now();
        let (req, use_) = (&self.req, self.use_);
        let first = |kind: Option<IdKind>| {
            sealed
                .iter()
                .find(|(k, _)| kind.is_none_or(|want| *k == want))
                .map(|(_, id)| id.as_str())
        };
        self.cluster.state.contexts(|c| match use_ {
            ContextUse::Open(kind) => {
                let id = (200..300)
                    .contains(&status)
                    .then(|| first(Some(kind)))
                    .flatten();
                c.opened(id, req.keep_alive.unwrap_or(DEFAULT_KEEP_ALIVE), now);
            }
            ContextUse::Continue if status == 200 => {
                c.continued(&req.ids, first(None), req.keep_alive, now)
            }
            ContextUse::Continue if status == 404 => c.closed(&req.ids),
            _ => {}
        });
        self.reserved = false;
    }
}

impl Drop for Counted {
    /// An exchange dropped before it settled (its task ended) gives its place back.
    fn drop(&mut self) {
        if self.reserved {
            let now = Instant::now();
            self.cluster
                .state
                .contexts(|c| c.opened(None, DEFAULT_KEEP_ALIVE, now));
        }
    }
}
