//! Request planning for the multitenant class: the upstream target (path rewritten into the
//! tenant's namespace, sealed scroll ids in it opened, the query string read and written
//! again by `references::params`), which body filter, which response transform; plus the
//! auto-creation target, create-index bodies and the metering request.
//!
//! Must not touch: I/O, modes, the classification table (read from `request::classify`).

use std::sync::Arc;

use super::body::rewrite_json_body;
use super::contexts::ContextUse;
use super::ids::{IdFields, IdKind, IdSealer};
use super::names::{is_auto_create, is_concrete, rewrite_expr};
use super::ndjson::{BodyRewriter, BulkRewriter, MsearchRewriter};
use super::prefix::Prefix;
use super::references::params::read_query;
use super::references::{illegal, Tenant};
use super::response::{ResponsePlan, ResponseRewriter};
use crate::errors::EdgeError;
use crate::proto::Method;
use crate::request::classify::{
    endpoint_name_in_value, BodyKind, Classified, Methods, ResponseKind, Route, Seg, Tenancy,
};
use crate::request::path::{encode_segment, is_literal};

/// What the edge does with one multitenant request (see the module docs of `tenancy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestPlan {
    /// How the body is read: streamed ([`BodyKind::is_streamed`]: [`RequestPlan::body_rewriter`]),
    /// read whole as JSON ([`BodyKind::is_json`]: [`super::rewrite_json_body`]), a document
    /// passed as it is, or none.
    pub body: BodyKind,
    /// The response transform.
    pub response: ResponsePlan,
    /// The path named no index and the tenant's `<P>*` was inserted first.
    pub inserted_all: bool,
    /// What the request does to the cluster's open search contexts (counted against the
    /// plan's `max_open_contexts`: `contexts`).
    pub contexts: ContextUse,
    /// The request's wall clock (the tenant's `now_ms`): date math in its body is resolved
    /// at it.
    pub now_ms: i64,
}

impl RequestPlan {
    /// The streaming body rewriter for this request, if its body is NDJSON.
    pub fn body_rewriter(&self, prefix: Prefix, max_bulk_actions: u64) -> Option<BodyRewriter> {
        match self.body {
            BodyKind::Bulk => Some(BodyRewriter::Bulk(
                BulkRewriter::new(prefix, max_bulk_actions).at(self.now_ms),
            )),
            BodyKind::Msearch => Some(BodyRewriter::Msearch(
                MsearchRewriter::new(prefix).at(self.now_ms),
            )),
            _ => None,
        }
    }

    /// The response transform for an upstream response of `status` and `content_type`;
    /// `ids`: the node's sealer and the cluster id, for responses carrying scroll or
    /// point-in-time ids.
    pub fn response_rewriter(
        &self,
        prefix: Prefix,
        status: u16,
        content_type: Option<&[u8]>,
        ids: Option<(Arc<IdSealer>, Arc<str>)>,
    ) -> ResponseRewriter {
        ResponseRewriter::new(prefix, self.response, status, content_type, ids)
    }
}

/// Appends the upstream target (canonical path with the tenant's names, then the query
/// string read and written again) to `target` and returns the plan. `req` must come from
/// `classify_request` for a multitenant cluster and have passed `mode::decide`.
pub fn plan_request(
    t: &Tenant,
    req: &Classified,
    query: Option<&[u8]>,
    target: &mut Vec<u8>,
) -> Result<RequestPlan, EdgeError> {
    let route = req.route.ok_or_else(|| {
        EdgeError::NotImplemented(crate::request::classify::endpoint_name(&req.path))
    })?;
    let Tenancy::Rewrite {
        all_at,
        body,
        response,
    } = route.tenancy
    else {
        return Err(EdgeError::NotImplemented(route.name.to_string()));
    };
    if let Some(i) = endpoint_name_in_value(route, &req.path) {
        return Err(illegal(format!(
            "request [{}]: the path segment [{}] starts with '_' where [{}] takes a name or an id; Elasticsearch could route it as an endpoint of its own, so this cluster refuses it (documents with such ids are reachable through _bulk, _mget and searches)",
            tenant_path(req),
            String::from_utf8_lossy(req.path.seg(i)),
            route.name
        )));
    }
    let inserted_all = write_path(t, route, req, all_at, target)?;
    let facts = read_query(t, query, &tenant_path(req), target)?;
    let ids = match response {
        ResponseKind::Search if facts.scroll || body == BodyKind::Scroll => Some(IdFields::Search),
        ResponseKind::PitOpen => Some(IdFields::PitOpen),
        ResponseKind::PitList => Some(IdFields::PitList),
        _ => None,
    };
    let closes_by_path = route.name == "_search/scroll" && route.methods == Methods::DELETE;
    let contexts = match (body, response) {
        (_, ResponseKind::PitOpen) => ContextUse::Open(IdKind::Pit),
        (BodyKind::Scroll, _) => ContextUse::Continue,
        (BodyKind::ClearScroll | BodyKind::ClosePit | BodyKind::ClosePitIds, _) => {
            ContextUse::Close
        }
        _ if closes_by_path => ContextUse::Close,
        (_, ResponseKind::Search) if facts.scroll => ContextUse::Open(IdKind::Scroll),
        _ => ContextUse::None,
    };
    Ok(RequestPlan {
        body,
        response: ResponsePlan {
            kind: response,
            verbose: facts.verbose,
            help: facts.help,
            ids,
        },
        inserted_all,
        contexts,
        now_ms: t.now_ms,
    })
}

/// The path as the tenant sent it (decoded), for error messages.
fn tenant_path(req: &Classified) -> String {
    let mut out = String::new();
    for s in req.path.segments() {
        out.push('/');
        out.push_str(&String::from_utf8_lossy(s));
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// Writes the rewritten path; returns whether the tenant's `<P>*` was inserted.
fn write_path(
    t: &Tenant,
    route: &Route,
    req: &Classified,
    all_at: Option<u8>,
    target: &mut Vec<u8>,
) -> Result<bool, EdgeError> {
    let names_index = route
        .pattern
        .iter()
        .any(|s| matches!(s, Seg::Index | Seg::Alias));
    let insert = if names_index {
        None
    } else {
        all_at.map(usize::from)
    };
    let n = req.path.len();
    for i in 0..=n {
        if insert == Some(i) {
            target.push(b'/');
            target.extend_from_slice(t.prefix.as_bytes());
            target.push(b'*');
        }
        if i == n {
            break;
        }
        let seg = req.path.seg(i);
        target.push(b'/');
        match route.pattern.get(i) {
            Some(Seg::Index | Seg::Alias) => {
                // Rewrite in place; re-encode only when a byte needs it (rare).
                let start = target.len();
                rewrite_expr(t.prefix, seg, target)?;
                if !target[start..].iter().all(|&b| is_literal(b)) {
                    let raw = target.split_off(start);
                    encode_segment(&raw, target);
                }
            }
            Some(Seg::ScrollIds) => {
                let mut opened = Vec::new();
                for (k, token) in seg.split(|&b| b == b',').enumerate() {
                    if k > 0 {
                        opened.push(b',');
                    }
                    let token = String::from_utf8_lossy(token);
                    opened.extend_from_slice(t.open(IdKind::Scroll, &token)?.as_bytes());
                }
                encode_segment(&opened, target);
            }
            _ => encode_segment(seg, target),
        }
    }
    if n == 0 && insert.is_none() {
        target.push(b'/');
    }
    Ok(insert.is_some())
}

/// The index a document write would auto-create (spec 1.5): the tenant's name when the
/// request writes documents (PUT/POST of `_doc`, `_create`, `_update`, typed documents, or a
/// `_bulk` with a default index) to one concrete, whitelisted index. The edge then creates
/// it first (`PUT` [`write_index_path`], after the shard check with the upstream's
/// defaults), ignoring `resource_already_exists_exception`. Bulk bodies name more: see
/// [`BulkRewriter::auto_create_candidates`].
pub fn auto_create_target<'a>(method: Method, req: &'a Classified) -> Option<&'a [u8]> {
    let route = req.route?;
    let writes = matches!(method, Method::Put | Method::Post)
        && matches!(
            route.name,
            "_doc" | "_create" | "_update" | "document" | "_bulk"
        )
        && route.pattern.first() == Some(&Seg::Index);
    let name = req.path.get(0)?;
    (writes && is_concrete(name) && is_auto_create(name)).then_some(name)
}

/// Writes `/<prefix><name>` (canonical) for creating or naming one tenant index upstream.
pub fn write_index_path(prefix: &Prefix, name: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
    let mut full = Vec::with_capacity(prefix.as_bytes().len() + name.len());
    rewrite_expr(prefix, name, &mut full)?;
    out.push(b'/');
    encode_segment(&full, out);
    Ok(())
}

/// The metering request target: the cluster's own indices from `_cat/indices`, in bytes,
/// as JSON (parse with `policy::shards::usage_from_cat_indices`).
pub fn write_metering_target(prefix: Option<&Prefix>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"/_cat/indices");
    if let Some(p) = prefix {
        out.push(b'/');
        out.extend_from_slice(p.as_bytes());
        out.push(b'*');
    }
    out.extend_from_slice(
        b"?format=json&bytes=b&h=index,pri,rep,docs.count,store.size&expand_wildcards=all",
    );
}

/// The target of a reading of the open search contexts of the indices under `prefix`
/// (all the upstream's without one): `_stats/search` of open and hidden indices (closed
/// ones hold no context), totals only.
pub fn write_contexts_reading_target(prefix: Option<&Prefix>, out: &mut Vec<u8>) {
    if let Some(p) = prefix {
        out.push(b'/');
        out.extend_from_slice(p.as_bytes());
        out.push(b'*');
    }
    out.extend_from_slice(b"/_stats/search?level=cluster&expand_wildcards=open,hidden");
}

/// Reads a `PUT /<index>` body (aliases, settings, mappings: see `references::admin`);
/// `None` when it is empty (forward nothing).
pub fn rewrite_create_index_body(
    prefix: &Prefix,
    body: &[u8],
) -> Result<Option<Vec<u8>>, EdgeError> {
    // an index creation's body holds no date math the edge resolves
    let t = Tenant {
        prefix,
        ids: None,
        now_ms: 0,
    };
    let mut out = Vec::with_capacity(body.len() + 64);
    rewrite_json_body(&t, BodyKind::CreateIndex, body, &mut out)?;
    Ok((!out.is_empty()).then_some(out))
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
