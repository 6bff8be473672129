//! The filters an exchange passes bodies through, chosen from its decision: one for the
//! request body on its way upstream ([`RequestFilter`]: pass, count `_bulk` actions, or
//! the multitenant NDJSON rewriting), the "whole body first" transform of bodies read
//! before anything is sent ([`whole_body`]: the multitenant class's JSON bodies, a
//! single-tenant `_reindex`), and one for the response body on its way back
//! ([`ResponseFilter`]: pass, or the multitenant un-rewriting with its id sealing).
//!
//! Every filter is pure (`policy::bulk`, `tenancy`): `feed(chunk, out)` then
//! `finish(out)`, output into a caller-owned buffer. A filter that changes the length makes
//! the stage using it re-frame the body (chunked). The multitenant rules plug in here and
//! nowhere else in the pipeline.
//!
//! Must not touch: I/O, the rules themselves (`tenancy`, `policy`).

use std::sync::Arc;

use crate::errors::EdgeError;
use crate::policy::bulk::BulkCounter;
use crate::policy::decide::{BodyPlan, Decision, TenantPlan};
use crate::proto::{Framing, ResponseHead};
use crate::registry::Cluster;
use crate::request::classify::BodyKind;
use crate::tenancy::encoding::GzipStream;
use crate::tenancy::{self, BodyFacts, BodyRewriter, IdSealer, Prefix, ResponseRewriter, Tenant};

/// What the request body's bytes go through on their way upstream.
#[derive(Debug)]
pub(super) enum RequestFilter {
    /// Forwarded as they are.
    Pass,
    /// Forwarded as they are; `_bulk` actions counted (413 over the plan's limit).
    Count(BulkCounter, u64),
    /// Rewritten into the tenant's namespace (sent chunked). `created`: how many of the
    /// whitelisted indices the body named were already handed out by [`Self::new_index`].
    Rewrite { rw: BodyRewriter, created: usize },
}

impl RequestFilter {
    /// The filter the decision asks for.
    pub fn for_decision(d: &Decision<'_, Arc<Cluster>>) -> RequestFilter {
        match (d.body, d.tenant) {
            (BodyPlan::CountBulk { max_actions }, _) => {
                RequestFilter::Count(BulkCounter::new(), max_actions)
            }
            (BodyPlan::Rewrite { max_actions, .. }, Some(t)) => t
                .plan
                .body_rewriter(t.prefix, max_actions)
                .map_or(RequestFilter::Pass, |rw| RequestFilter::Rewrite {
                    rw,
                    created: 0,
                }),
            _ => RequestFilter::Pass,
        }
    }

    /// The body's length changes on the way (so it goes upstream chunked).
    pub fn rewrites(&self) -> bool {
        matches!(self, RequestFilter::Rewrite { .. })
    }

    /// Passes one chunk of the decoded body. A filter that [`Self::rewrites`] appends what
    /// to forward instead to `out`; the others append nothing (the chunk goes as it is).
    /// `Err`: refuse the request, and leave the upstream request unterminated so none of
    /// it is applied.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
        match self {
            RequestFilter::Pass => Ok(()),
            RequestFilter::Count(counter, limit) => {
                if counter.feed(chunk) > *limit {
                    return Err(EdgeError::TooManyBulkActions(*limit));
                }
                Ok(())
            }
            RequestFilter::Rewrite { rw, .. } => rw.feed(chunk, out),
        }
    }

    /// Ends the body: what is left to forward is appended to `out`.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), EdgeError> {
        match self {
            RequestFilter::Rewrite { rw, .. } => rw.finish(out),
            _ => Ok(()),
        }
    }

    /// A whitelisted index (the tenant's name) that the body named since the last call:
    /// the edge creates it before forwarding the chunk that names it.
    pub fn new_index(&mut self) -> Option<Vec<u8>> {
        let RequestFilter::Rewrite {
            rw: BodyRewriter::Bulk(bulk),
            created,
        } = self
        else {
            return None;
        };
        let name = bulk.auto_create_candidates().get(*created)?.clone();
        *created += 1;
        Some(name)
    }
}

/// What the "whole body first" transform made of a body.
#[derive(Debug, Default)]
pub(super) struct Whole {
    /// The body to forward instead (`None`: forward it unchanged).
    pub body: Option<Vec<u8>>,
    /// What reading it found that changes the rest of the request (a point in time).
    pub facts: BodyFacts,
}

/// The "whole body first" transform, for a body of `kind` read whole before anything is
/// sent (`BodyPlan::Whole`): on the multitenant class every JSON body is parsed strictly,
/// rewritten into the tenant's namespace (sealed ids opened with `ids`: the node's sealer
/// and the cluster id) and written again; a single-tenant `_reindex` is read strictly (a
/// remote source refused) and written again; an index creation's body otherwise passes.
pub(super) fn whole_body(
    tenant: Option<&TenantPlan>,
    ids: (&IdSealer, &str),
    kind: BodyKind,
    body: &[u8],
) -> Result<Whole, EdgeError> {
    match (tenant, kind) {
        (Some(tp), _) => {
            let t = Tenant {
                prefix: &tp.prefix,
                ids: Some(ids),
                now_ms: tp.plan.now_ms,
            };
            let mut out = Vec::with_capacity(body.len() + 64);
            let facts = tenancy::rewrite_json_body(&t, kind, body, &mut out)?;
            Ok(Whole {
                body: Some(out),
                facts,
            })
        }
        (None, BodyKind::Reindex) => Ok(Whole {
            body: Some(tenancy::single_tenant_reindex(body)?),
            facts: BodyFacts::default(),
        }),
        (None, _) => Ok(Whole::default()),
    }
}

/// What the response body's bytes go through on their way back to the client.
/// (It lives on the stack of one exchange; boxing the large variant would allocate once
/// per multitenant response.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(super) enum ResponseFilter {
    /// Relayed as they are (Content-Length and chunked framing kept).
    Pass,
    /// The tenant's prefix removed everywhere (and other tenants' `_cat` rows dropped):
    /// re-framed, chunked (close-delimited to HTTP/1.0 clients). `prefix` is stripped from
    /// the head's values too. Without a prefix: a single-tenant key's response, its ids
    /// sealed (`tenancy::key_ids`).
    Rewrite {
        prefix: Option<Prefix>,
        un: ResponseRewriter,
        /// The client accepts gzip and the response has a body: it goes out compressed.
        gzip: Option<GzipStream>,
    },
}

impl ResponseFilter {
    /// The upstream scroll and point-in-time ids the filter sealed.
    pub fn sealed(&self) -> &[(tenancy::IdKind, String)] {
        match self {
            ResponseFilter::Rewrite { un, .. } => un.sealed(),
            ResponseFilter::Pass => &[],
        }
    }

    /// Says which point-in-time ids the request's cluster owns (see
    /// `tenancy::response::PitList`).
    pub fn set_pit_owner(&mut self, owner: tenancy::response::PitOwner) {
        if let ResponseFilter::Rewrite { un, .. } = self {
            un.set_pit_owner(owner);
        }
    }

    /// The shards the upstream said it searched (`_shards.total` of a response whose ids
    /// are sealed), once read.
    pub fn shards_total(&self) -> Option<u64> {
        match self {
            ResponseFilter::Rewrite { un, .. } => un.shards_total(),
            ResponseFilter::Pass => None,
        }
    }

    /// The filter for the response whose head `rh` was parsed from `buf`, to a request
    /// decided as `d` (its tenant plan, or a single-tenant key's ids to seal).
    /// `ids`: the node's sealer and the binding of the principal, for responses whose
    /// scroll or point-in-time ids are sealed (asked for only when the plan has some).
    pub fn for_response(
        d: &Decision<'_, Arc<Cluster>>,
        rh: &ResponseHead,
        buf: &[u8],
        ids: impl FnOnce() -> (Arc<IdSealer>, Arc<str>),
    ) -> Self {
        let content_type = rh.header(buf, b"content-type");
        match (d.tenant.as_ref(), d.seal) {
            (Some(t), _) => {
                let ids = t.plan.response.ids.map(|_| ids());
                let body = rh.framing != Framing::None;
                ResponseFilter::Rewrite {
                    prefix: Some(t.prefix),
                    un: t
                        .plan
                        .response_rewriter(t.prefix, rh.status, content_type, ids),
                    gzip: (t.gzip_response && body).then(GzipStream::default),
                }
            }
            (None, Some(fields)) if rh.framing != Framing::None => ResponseFilter::Rewrite {
                prefix: None,
                un: ResponseRewriter::sealing(fields, rh.status, content_type, ids()),
                gzip: None,
            },
            _ => ResponseFilter::Pass,
        }
    }
}
