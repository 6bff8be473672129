//! Request classification: read, update, index deletion or not implemented, from the method
//! and the path, in one table ([`ROUTES`], in `endpoints.rs`) that also says how the
//! multitenant class handles each endpoint (rewrite which segments, which body and response
//! transform, or 501).
//!
//! Order of decisions in [`classify`]:
//! 1. the loose view of the path against the blocked list (`blocked.rs`, spec 1.4): 501;
//! 2. the strict view against [`ROUTES`] (first match wins; literal segments match exactly
//!    and case-sensitively, as the upstream routes them);
//! 3. GET and HEAD are reads whatever the endpoint; rows marked `reads` are reads with any
//!    method (`_search`, `_msearch`, `_count`, `_mget`, `_field_caps`, `_validate`,
//!    `_explain`, `_cat`, ...); `DELETE /<index>` is [`Class::DeleteIndex`]; everything else,
//!    unknown endpoints included, is an update;
//! 4. on multitenant clusters, an endpoint without a row or with [`Tenancy::Block`] is 501.
//!
//! Deviation from the letter of the issue: `_mapping` is a read for GET/HEAD only, because
//! `PUT`/`POST /<index>/_mapping` change the mapping (they are updates in read-only mode).
//!
//! Must not touch: modes, plans, I/O, the rewriting itself (see `tenancy`).

use std::borrow::Cow;

use super::blocked::blocked;
use super::path::{NormPath, PathError};
use crate::proto::Method;

pub use super::endpoints::ROUTES;
pub use super::routes::{is_index_expr, BodyKind, Methods, ResponseKind, Route, Seg, Tenancy};
pub use crate::config::ClusterClass;

/// What a request is, for the mode policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// Searches and other requests that change no data.
    Read,
    /// Anything that can change data (unknown endpoints included).
    Update,
    /// `DELETE /<index>` without wildcards: an update that read-only-by-overage still allows.
    DeleteIndex,
    /// Not exposed (spec 1.4): 501 naming the endpoint.
    NotImplemented(Cow<'static, str>),
}

impl Class {
    /// True for requests refused in read-only and maintenance modes.
    pub fn is_update(&self) -> bool {
        matches!(self, Class::Update | Class::DeleteIndex)
    }
}

fn seg_matches(p: Seg, s: &[u8]) -> bool {
    match p {
        Seg::Lit(l) => s == l.as_bytes(),
        Seg::Index | Seg::Alias => is_index_expr(s),
        Seg::Name => !s.starts_with(b"_"),
        Seg::ScrollIds => s != b"_all",
        Seg::Any | Seg::Rest | Seg::Fields => true,
    }
}

/// Multitenant: the position of the first segment that sits where this row reads a value
/// (an id, a type, a setting name, a metric: [`Seg::Any`], [`Seg::Name`], [`Seg::Rest`])
/// and starts with `_`. `None` when the upstream routes the path as this row says.
///
/// Why (attacks-10 #1 and #8): Elasticsearch 7.10 (and OpenSearch 1.x) route with a
/// `PathTrie` tried in four modes (explicit nodes only, wildcard root, wildcard leaf, any
/// wildcard). Explicit children are preferred, and when an explicit subtree finds no
/// handler the trie backs up and tries the wildcard child at the same depth. So
/// `/<i>/_doc/_msearch` is not the document `_msearch` for the upstream: `_doc` is tried
/// explicitly, `_msearch` is no child of it, the trie backs up to the `{type}` wildcard and
/// finds the typed `/{index}/{type}/_msearch` (a multi-search whose body the edge never
/// read). The same backtracking turns `/<i>/_settings/_search`, `/<i>/_mapping/_mget`,
/// `/<i>/_settings/x/_update`, `/<i>/_create/_bulk`... into typed searches, gets and bulk
/// writes. Every name that an Elasticsearch (or plugin) route lists after `{index}`,
/// `{index}/{type}` or `{index}/{type}/{id}` starts with `_`, and the edge forwards every
/// index segment as `<P>...`, so a path whose value segments do not start with `_` can
/// only be routed as the row says (the few explicit names without `_`, like `field` in
/// `_mapping/field`, lead to reads of the tenant's own mapping). Documents whose id starts
/// with `_` exist in Elasticsearch (ids are not restricted), but which handler a path
/// with one reaches depends on the method, the version and the plugins installed
/// (`POST /<i>/_doc/_search` is a search, `PUT` of the same path a write): on multitenant
/// clusters such ids are reachable through bodies only (`_bulk`, `_mget`, searches).
pub fn endpoint_name_in_value(route: &Route, path: &NormPath) -> Option<usize> {
    (0..path.len()).find(|&i| {
        let seg = route.pattern.get(i).or(route.pattern.last());
        path.seg(i).starts_with(b"_") && matches!(seg, Some(Seg::Any | Seg::Name | Seg::Rest))
    })
}

/// The first row of [`ROUTES`] matching `method` and the strict path.
pub fn route(method: Method, path: &NormPath) -> Option<&'static Route> {
    ROUTES
        .iter()
        .find(|r| r.methods.has(method) && matches(r.pattern, path))
}

/// True when `pattern` matches the segments of `path`.
pub fn matches(pattern: &[Seg], path: &NormPath) -> bool {
    let rest = pattern.last() == Some(&Seg::Rest);
    let fixed = pattern.len() - usize::from(rest);
    let n = path.len();
    if n < fixed || (!rest && n != fixed) {
        return false;
    }
    pattern[..fixed]
        .iter()
        .enumerate()
        .all(|(i, &p)| seg_matches(p, path.seg(i)))
}

/// A classified request: the class, the strict path (forward its canonical form) and the
/// matching row of [`ROUTES`] (what tenancy rewrites).
#[derive(Debug)]
pub struct Classified<'a> {
    pub class: Class,
    pub path: NormPath<'a>,
    pub route: Option<&'static Route>,
}

/// Classifies a request from its method and raw path (the target before `?`).
/// A path that cannot be decoded is a 400 ([`PathError`]).
pub fn classify_request(
    method: Method,
    raw_path: &[u8],
    cluster: ClusterClass,
) -> Result<Classified<'_>, PathError> {
    let path = NormPath::strict(raw_path)?;
    // Without '%' both views are the same segments.
    let loose = match memchr::memchr(b'%', raw_path) {
        None => path.clone(),
        Some(_) => NormPath::loose(raw_path)?,
    };
    let route = route(method, &path);
    let class = match blocked(method, &loose, cluster) {
        Some(name) => Class::NotImplemented(name),
        None => class_of(method, &path, route, cluster),
    };
    Ok(Classified { class, path, route })
}

/// Only the class of [`classify_request`].
pub fn classify(
    method: Method,
    raw_path: &[u8],
    cluster: ClusterClass,
) -> Result<Class, PathError> {
    classify_request(method, raw_path, cluster).map(|c| c.class)
}

fn class_of(
    method: Method,
    path: &NormPath,
    route: Option<&'static Route>,
    cluster: ClusterClass,
) -> Class {
    if cluster == ClusterClass::Multitenant {
        match route {
            None => return Class::NotImplemented(Cow::Owned(endpoint_name(path))),
            // `_cat/<table>` named whole: the refusal says which table, and what to use.
            Some(r) if r.tenancy == Tenancy::Block && r.name == "_cat" => {
                return Class::NotImplemented(Cow::Owned(endpoint_name(path)))
            }
            Some(r) if r.tenancy == Tenancy::Block => {
                return Class::NotImplemented(Cow::Borrowed(r.name))
            }
            Some(r) if r.pattern.is_empty() && !Methods::GET_HEAD.has(method) => {
                return Class::NotImplemented(Cow::Borrowed("/"))
            }
            Some(_) => {}
        }
    }
    if matches!(method, Method::Get | Method::Head) || route.is_some_and(|r| r.reads) {
        return Class::Read;
    }
    match route {
        Some(r) if method == Method::Delete && r.pattern == [Seg::Index] => Class::DeleteIndex,
        _ => Class::Update,
    }
}

/// The endpoint as the client named it, for the 501 body: the segments from the first one
/// that starts with `_` (at most two), or `/<first>` when none does. Capped at 100 bytes.
pub fn endpoint_name(path: &NormPath) -> String {
    let start = path.segments().position(|s| s.starts_with(b"_"));
    let mut out = Vec::new();
    match start {
        Some(i) => {
            for (k, s) in path.segments().skip(i).take(2).enumerate() {
                if k > 0 {
                    out.push(b'/');
                }
                out.extend_from_slice(s);
            }
        }
        None => {
            out.push(b'/');
            out.extend_from_slice(path.get(0).unwrap_or_default());
        }
    }
    out.truncate(100);
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
