//! Request planning for the multitenant class: the upstream target (path rewritten into the
//! tenant's namespace, query checked), which body transform, which response transform;
//! plus the checks on headers, the auto-creation target, create-index bodies and the
//! metering request.
//!
//! Must not touch: I/O, modes, the classification table (read from `policy::classify`).

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::body::{BodyRewriter, BulkRewriter, MgetRewriter, MsearchRewriter};
use super::names::{is_auto_create, is_concrete, rewrite_expr};
use super::prefix::Prefix;
use super::response::{ResponsePlan, ResponseRewriter};
use crate::errors::EdgeError;
use crate::policy::classify::{BodyKind, Classified, Route, Seg, Tenancy};
use crate::policy::path::{decode_into, encode_segment, is_literal};
use crate::proto::Method;

/// What the edge does with one multitenant request (see the module docs of `tenancy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestPlan {
    /// The body transform; [`BodyKind::CreateIndex`]: buffer the body, then
    /// [`rewrite_create_index_body`].
    pub body: BodyKind,
    /// The response transform.
    pub response: ResponsePlan,
}

impl RequestPlan {
    /// The streaming body rewriter for this request, if its body names indices.
    pub fn body_rewriter(&self, prefix: Prefix, max_bulk_actions: u64) -> Option<BodyRewriter> {
        match self.body {
            BodyKind::Bulk => Some(BodyRewriter::Bulk(BulkRewriter::new(
                prefix,
                max_bulk_actions,
            ))),
            BodyKind::Msearch => Some(BodyRewriter::Msearch(MsearchRewriter::new(prefix))),
            BodyKind::Mget => Some(BodyRewriter::Mget(MgetRewriter::new(prefix))),
            BodyKind::None | BodyKind::CreateIndex => None,
        }
    }

    /// The response transform for an upstream response of `status` and `content_type`.
    pub fn response_rewriter(
        &self,
        prefix: Prefix,
        status: u16,
        content_type: Option<&[u8]>,
    ) -> ResponseRewriter {
        ResponseRewriter::new(prefix, self.response, status, content_type)
    }
}

const BODY_IN_QUERY: &str = "the [source] query parameter is not supported on this cluster: send the body as the request body";
const BAD_FORMAT: &str = "only the text and json formats are supported on this cluster";

/// Appends the upstream target (canonical path with the tenant's names, then `?query`) to
/// `target` and returns the plan. `req` must come from `classify_request` for a multitenant
/// cluster and have passed `mode::decide`.
pub fn plan_request(
    prefix: &Prefix,
    req: &Classified,
    query: Option<&[u8]>,
    target: &mut Vec<u8>,
) -> Result<RequestPlan, EdgeError> {
    let route = req.route.ok_or_else(|| {
        EdgeError::NotImplemented(crate::policy::classify::endpoint_name(&req.path))
    })?;
    let Tenancy::Rewrite {
        all_at,
        body,
        response,
    } = route.tenancy
    else {
        return Err(EdgeError::NotImplemented(route.name.to_string()));
    };
    let q = QueryFacts::check(query)?;
    write_path(prefix, route, req, all_at, target)?;
    if let Some(q) = query {
        target.push(b'?');
        target.extend_from_slice(q);
    }
    Ok(RequestPlan {
        body,
        response: ResponsePlan {
            kind: response,
            verbose: q.verbose,
            help: q.help,
        },
    })
}

fn write_path(
    prefix: &Prefix,
    route: &Route,
    req: &Classified,
    all_at: Option<u8>,
    target: &mut Vec<u8>,
) -> Result<(), EdgeError> {
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
            target.extend_from_slice(prefix.as_bytes());
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
                rewrite_expr(prefix, seg, target)?;
                if !target[start..].iter().all(|&b| is_literal(b)) {
                    let raw = target.split_off(start);
                    encode_segment(&raw, target);
                }
            }
            _ => encode_segment(seg, target),
        }
    }
    if n == 0 && insert.is_none() {
        target.push(b'/');
    }
    Ok(())
}

/// What the query string says that matters here.
#[derive(Debug, Default, Clone, Copy)]
struct QueryFacts {
    verbose: bool,
    help: bool,
}

impl QueryFacts {
    /// Refuses a body sent in the query (`source`), binary or YAML formats, and scrolls.
    fn check(query: Option<&[u8]>) -> Result<QueryFacts, EdgeError> {
        let mut facts = QueryFacts::default();
        for pair in query.unwrap_or_default().split(|&b| b == b'&') {
            let (k, v) = match memchr::memchr(b'=', pair) {
                Some(e) => (&pair[..e], &pair[e + 1..]),
                None => (pair, &b""[..]),
            };
            let k = query_decode(k)?;
            let v = query_decode(v)?;
            match &*k {
                b"source" | b"source_content_type" => {
                    return Err(EdgeError::BadRequest(BODY_IN_QUERY))
                }
                b"format" if !matches!(&*v, b"json" | b"JSON" | b"txt" | b"text" | b"") => {
                    return Err(EdgeError::BadRequest(BAD_FORMAT))
                }
                // A scroll opens a search context on the shared upstream that outlives
                // the request (and counts against the upstream's limit of open contexts
                // for every tenant); reading it back is 501 on this class too.
                b"scroll" => return Err(EdgeError::NotImplemented("scroll".into())),
                b"v" => facts.verbose = &*v != b"false",
                b"help" => facts.help = &*v != b"false",
                _ => {}
            }
        }
        Ok(facts)
    }
}

/// A query component decoded once (`+` is a space), as the upstream decodes it.
fn query_decode(s: &[u8]) -> Result<Cow<'_, [u8]>, EdgeError> {
    if !s.contains(&b'%') && !s.contains(&b'+') {
        return Ok(Cow::Borrowed(s));
    }
    let plus: Vec<u8> = s
        .iter()
        .map(|&b| if b == b'+' { b' ' } else { b })
        .collect();
    let mut out = Vec::with_capacity(s.len());
    decode_into(&plus, &mut out).map_err(|e| EdgeError::BadRequest(e.reason()))?;
    Ok(Cow::Owned(out))
}

const BAD_ENCODING: &str = "compressed request bodies are not supported on this cluster";
const BAD_TYPE: &str = "only JSON and NDJSON bodies are supported on this cluster";
const BAD_ACCEPT: &str = "only JSON and text responses are supported on this cluster";

/// Checks the request headers the multitenant rewriting depends on: bodies must be JSON or
/// NDJSON (not CBOR, Smile or YAML) and not compressed, and the response must be asked for
/// as JSON or text. The edge must also drop `Accept-Encoding` before forwarding, so the
/// upstream answers uncompressed.
pub fn check_headers(
    content_type: Option<&[u8]>,
    content_encoding: Option<&[u8]>,
    accept: Option<&[u8]>,
) -> Result<(), EdgeError> {
    let binary = |v: &[u8]| {
        let v = v.to_ascii_lowercase();
        [&b"cbor"[..], b"smile", b"yaml"]
            .iter()
            .any(|t| memchr::memmem::find(&v, t).is_some())
    };
    if content_encoding.is_some_and(|e| !e.trim_ascii().eq_ignore_ascii_case(b"identity")) {
        return Err(EdgeError::BadRequest(BAD_ENCODING));
    }
    if content_type.is_some_and(binary) {
        return Err(EdgeError::BadRequest(BAD_TYPE));
    }
    if accept.is_some_and(binary) {
        return Err(EdgeError::BadRequest(BAD_ACCEPT));
    }
    Ok(())
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

/// Rewrites the alias names of a `PUT /<index>` body into the tenant's namespace. `None`
/// when the body has no aliases (forward it unchanged).
pub fn rewrite_create_index_body(
    prefix: &Prefix,
    body: &[u8],
) -> Result<Option<Vec<u8>>, EdgeError> {
    if body.iter().all(u8::is_ascii_whitespace) || memchr::memmem::find(body, b"aliases").is_none()
    {
        return Ok(None);
    }
    let mut v: Value = serde_json::from_slice(body).map_err(|_| {
        EdgeError::BadRequest("the body of an index creation must be a JSON object")
    })?;
    let Some(Value::Object(aliases)) = v.get_mut("aliases") else {
        return Ok(None);
    };
    let mut renamed = Map::new();
    for (name, def) in std::mem::take(aliases) {
        let mut full = Vec::new();
        if !is_concrete(name.as_bytes()) {
            return Err(EdgeError::InvalidIndexName {
                index: name,
                reason: "an alias name must not be a list, pattern or exclusion",
            });
        }
        rewrite_expr(prefix, name.as_bytes(), &mut full)?;
        renamed.insert(
            String::from_utf8(full).expect("names from JSON keys are UTF-8"),
            def,
        );
    }
    *aliases = renamed;
    Ok(Some(
        serde_json::to_vec(&v).expect("a parsed value serialises"),
    ))
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
