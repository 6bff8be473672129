//! Request classification: read, update, index deletion or not implemented, from the method
//! and the path, in one table ([`ROUTES`]) that also says how the multitenant class handles
//! each endpoint (rewrite which segments, which body and response transform, or 501).
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

/// How the multitenant class handles an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tenancy {
    /// Cannot be made safe: 501.
    Block,
    /// Rewrite the index and alias segments of the path. `all_at`: when the path names no
    /// index, insert the tenant's all-indices expression as a segment at this position.
    Rewrite {
        all_at: Option<u8>,
        body: BodyKind,
        response: ResponseKind,
    },
}

/// Request-body transform for the multitenant class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// The body names no index (or is not rewritten: search bodies).
    None,
    /// `_bulk`: `_index` of action lines.
    Bulk,
    /// `_msearch`: `index` of header lines.
    Msearch,
    /// `_mget`: `_index` of `docs`.
    Mget,
    /// `PUT /<index>`: alias names in `aliases` (buffered, small).
    CreateIndex,
}

/// Response transform for the multitenant class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseKind {
    /// Remove the tenant's prefix wherever it occurs.
    Strip,
    /// A `_cat` table whose every row names an index: strip, and drop rows that do not
    /// carry the tenant's prefix (text and `format=json`).
    CatRows,
}

/// One segment pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seg {
    /// This exact segment.
    Lit(&'static str),
    /// An index expression: does not start with `_`, or is `_all` (alone or first in a list).
    Index,
    /// An alias expression (same syntax as an index expression).
    Alias,
    /// A name that does not start with `_` (a mapping type).
    Name,
    /// Any segment (ids, metrics, field lists).
    Any,
    /// Zero or more segments of any kind (last only).
    Rest,
}

/// Methods a row applies to (bit set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Methods(u8);

impl Methods {
    pub const ANY: Methods = Methods(0xff);
    pub const GET_HEAD: Methods = Methods(0b11);
    pub const PUT: Methods = Methods(0b1000);
    pub const DELETE: Methods = Methods(0b1_0000);

    fn has(self, m: Method) -> bool {
        let bit = match m {
            Method::Get => 1,
            Method::Head => 2,
            Method::Post => 4,
            Method::Put => 8,
            Method::Delete => 16,
            Method::Options | Method::Patch | Method::Other => 32,
        };
        self.0 & bit != 0
    }
}

/// One row of the endpoint table.
#[derive(Debug)]
pub struct Route {
    /// Endpoint name, for logs and 501 bodies.
    pub name: &'static str,
    pub pattern: &'static [Seg],
    pub methods: Methods,
    /// A read with any method (not only GET/HEAD).
    pub reads: bool,
    pub tenancy: Tenancy,
}

impl Route {
    /// What the body of a request to this endpoint is, whatever the cluster's class (the
    /// edge counts `_bulk` actions on every class; a blocked row has no body to read).
    pub fn body_kind(&self) -> BodyKind {
        match self.tenancy {
            Tenancy::Rewrite { body, .. } => body,
            Tenancy::Block => BodyKind::None,
        }
    }
}

use Seg::{Alias as Al, Any as A, Index as I, Lit as L, Name as N, Rest};

const fn rw(all_at: Option<u8>, body: BodyKind, response: ResponseKind) -> Tenancy {
    Tenancy::Rewrite {
        all_at,
        body,
        response,
    }
}
const PATH: Tenancy = rw(None, BodyKind::None, ResponseKind::Strip);
const ALL0: Tenancy = rw(Some(0), BodyKind::None, ResponseKind::Strip);
const ALL2: Tenancy = rw(Some(2), BodyKind::None, ResponseKind::Strip);
const CAT_ROWS: Tenancy = rw(Some(2), BodyKind::None, ResponseKind::CatRows);
const BLOCK: Tenancy = Tenancy::Block;

const fn r(name: &'static str, pattern: &'static [Seg], reads: bool, t: Tenancy) -> Route {
    Route {
        name,
        pattern,
        methods: Methods::ANY,
        reads,
        tenancy: t,
    }
}

const fn m(name: &'static str, methods: Methods, pattern: &'static [Seg], t: Tenancy) -> Route {
    Route {
        name,
        pattern,
        methods,
        reads: false,
        tenancy: t,
    }
}

/// The endpoint table. First match wins: literal rows come before rows with names and ids.
pub static ROUTES: &[Route] = &[
    r("/", &[], false, PATH),
    // searches: reads with any method
    r("_search", &[L("_search")], true, ALL0),
    r("_search", &[I, L("_search")], true, PATH),
    r("_search", &[I, N, L("_search")], true, PATH),
    r("_count", &[L("_count")], true, ALL0),
    r("_count", &[I, L("_count")], true, PATH),
    r("_count", &[I, N, L("_count")], true, PATH),
    r(
        "_msearch",
        &[L("_msearch")],
        true,
        rw(Some(0), BodyKind::Msearch, ResponseKind::Strip),
    ),
    r(
        "_msearch",
        &[I, L("_msearch")],
        true,
        rw(None, BodyKind::Msearch, ResponseKind::Strip),
    ),
    r(
        "_msearch",
        &[I, N, L("_msearch")],
        true,
        rw(None, BodyKind::Msearch, ResponseKind::Strip),
    ),
    r(
        "_mget",
        &[L("_mget")],
        true,
        rw(None, BodyKind::Mget, ResponseKind::Strip),
    ),
    r(
        "_mget",
        &[I, L("_mget")],
        true,
        rw(None, BodyKind::Mget, ResponseKind::Strip),
    ),
    r(
        "_mget",
        &[I, N, L("_mget")],
        true,
        rw(None, BodyKind::Mget, ResponseKind::Strip),
    ),
    r("_field_caps", &[L("_field_caps")], true, ALL0),
    r("_field_caps", &[I, L("_field_caps")], true, PATH),
    r("_validate", &[L("_validate"), L("query")], true, ALL0),
    r("_validate", &[I, L("_validate"), L("query")], true, PATH),
    r("_validate", &[I, N, L("_validate"), L("query")], true, PATH),
    r("_explain", &[I, L("_explain"), A], true, PATH),
    r("_explain", &[I, N, A, L("_explain")], true, PATH),
    r("_analyze", &[L("_analyze")], true, PATH),
    r("_analyze", &[I, L("_analyze")], true, PATH),
    r("_termvectors", &[I, L("_termvectors"), Rest], true, PATH),
    r("_termvectors", &[I, N, L("_termvectors")], true, PATH),
    r("_termvectors", &[I, N, A, L("_termvectors")], true, PATH),
    r("_mtermvectors", &[L("_mtermvectors")], true, BLOCK),
    r("_mtermvectors", &[I, L("_mtermvectors")], true, BLOCK),
    r("_mtermvectors", &[I, N, L("_mtermvectors")], true, BLOCK),
    // scroll and point-in-time ids are guessable across tenants: not on multitenant
    r(
        "_search/scroll",
        &[L("_search"), L("scroll"), Rest],
        true,
        BLOCK,
    ),
    r("_pit", &[L("_pit")], true, BLOCK),
    r("_pit", &[I, L("_pit")], true, BLOCK),
    r("_search_shards", &[L("_search_shards")], true, BLOCK),
    r("_search_shards", &[I, L("_search_shards")], true, BLOCK),
    r("_rank_eval", &[L("_rank_eval")], true, BLOCK),
    r("_rank_eval", &[I, L("_rank_eval")], true, BLOCK),
    // _cat: reads; only tables of index rows can be confined to one tenant
    r("_cat", &[L("_cat")], true, PATH),
    r("_cat/indices", &[L("_cat"), L("indices")], true, CAT_ROWS),
    r(
        "_cat/indices",
        &[L("_cat"), L("indices"), I],
        true,
        CAT_ROWS,
    ),
    r("_cat/count", &[L("_cat"), L("count")], true, ALL2),
    r("_cat/count", &[L("_cat"), L("count"), I], true, ALL2),
    r("_cat/aliases", &[L("_cat"), L("aliases")], true, CAT_ROWS),
    r(
        "_cat/aliases",
        &[L("_cat"), L("aliases"), Al],
        true,
        CAT_ROWS,
    ),
    r("_cat/shards", &[L("_cat"), L("shards")], true, CAT_ROWS),
    r("_cat/shards", &[L("_cat"), L("shards"), I], true, CAT_ROWS),
    r("_cat/segments", &[L("_cat"), L("segments")], true, CAT_ROWS),
    r(
        "_cat/segments",
        &[L("_cat"), L("segments"), I],
        true,
        CAT_ROWS,
    ),
    r("_cat/recovery", &[L("_cat"), L("recovery")], true, CAT_ROWS),
    r(
        "_cat/recovery",
        &[L("_cat"), L("recovery"), I],
        true,
        CAT_ROWS,
    ),
    r("_cat", &[L("_cat"), Rest], true, BLOCK),
    // cluster: health can be confined to the tenant's indices; the rest is shared state
    r(
        "_cluster/health",
        &[L("_cluster"), L("health")],
        false,
        ALL2,
    ),
    r(
        "_cluster/health",
        &[L("_cluster"), L("health"), I],
        false,
        ALL2,
    ),
    // index metadata
    r("_mapping", &[L("_mapping"), Rest], false, ALL0),
    r("_mapping", &[L("_mappings"), Rest], false, ALL0),
    r("_mapping", &[I, L("_mapping"), Rest], false, PATH),
    r("_mapping", &[I, L("_mappings"), Rest], false, PATH),
    r("_mapping", &[I, N, L("_mapping")], false, PATH),
    r("_mapping", &[I, N, L("_mappings")], false, PATH),
    r("_settings", &[L("_settings"), Rest], false, ALL0),
    r("_settings", &[I, L("_settings"), Rest], false, PATH),
    r("_stats", &[L("_stats"), Rest], false, ALL0),
    r("_stats", &[I, L("_stats"), Rest], false, PATH),
    r("_segments", &[L("_segments")], false, ALL0),
    r("_segments", &[I, L("_segments")], false, PATH),
    r("_recovery", &[L("_recovery")], false, ALL0),
    r("_recovery", &[I, L("_recovery")], false, PATH),
    // index maintenance (updates unless sent with GET)
    r("_refresh", &[L("_refresh")], false, ALL0),
    r("_refresh", &[I, L("_refresh")], false, PATH),
    r("_flush", &[L("_flush"), Rest], false, ALL0),
    r("_flush", &[I, L("_flush"), Rest], false, PATH),
    r("_forcemerge", &[L("_forcemerge")], false, ALL0),
    r("_forcemerge", &[I, L("_forcemerge")], false, PATH),
    r("_cache/clear", &[L("_cache"), L("clear")], false, ALL0),
    r("_cache/clear", &[I, L("_cache"), L("clear")], false, PATH),
    r("_open", &[I, L("_open")], false, PATH),
    r("_close", &[I, L("_close")], false, PATH),
    // aliases: the bulk `_aliases` body names indices freely: not on multitenant
    m("_aliases", Methods::GET_HEAD, &[L("_aliases")], ALL0),
    r("_aliases", &[L("_aliases")], false, BLOCK),
    r("_alias", &[L("_alias")], false, ALL0),
    r("_alias", &[L("_alias"), Al], false, ALL0),
    r("_alias", &[I, L("_alias")], false, PATH),
    r("_alias", &[I, L("_alias"), Al], false, PATH),
    r("_alias", &[I, L("_aliases")], false, PATH),
    r("_alias", &[I, L("_aliases"), Al], false, PATH),
    // bulk
    r(
        "_bulk",
        &[L("_bulk")],
        false,
        rw(None, BodyKind::Bulk, ResponseKind::Strip),
    ),
    r(
        "_bulk",
        &[I, L("_bulk")],
        false,
        rw(None, BodyKind::Bulk, ResponseKind::Strip),
    ),
    r(
        "_bulk",
        &[I, N, L("_bulk")],
        false,
        rw(None, BodyKind::Bulk, ResponseKind::Strip),
    ),
    // documents
    r("_doc", &[I, L("_doc")], false, PATH),
    r("_doc", &[I, L("_doc"), A], false, PATH),
    r("_create", &[I, L("_create"), A], false, PATH),
    r("_update", &[I, L("_update"), A], false, PATH),
    r("_source", &[I, L("_source"), A], false, PATH),
    r("_create", &[I, N, A, L("_create")], false, PATH),
    r("_update", &[I, N, A, L("_update")], false, PATH),
    r("_source", &[I, N, A, L("_source")], false, PATH),
    // indices
    m(
        "index",
        Methods::PUT,
        &[I],
        rw(None, BodyKind::CreateIndex, ResponseKind::Strip),
    ),
    r("index", &[I], false, PATH),
    r("document", &[I, N], false, PATH),
    r("document", &[I, N, A], false, PATH),
];

/// True when `seg` is an index (or alias) expression as the upstream routes it.
pub fn is_index_expr(seg: &[u8]) -> bool {
    match seg.first() {
        None => false,
        Some(b'_') => seg.starts_with(b"_all") && matches!(seg.get(4), None | Some(b',')),
        Some(_) => true,
    }
}

fn seg_matches(p: Seg, s: &[u8]) -> bool {
    match p {
        Seg::Lit(l) => s == l.as_bytes(),
        Seg::Index | Seg::Alias => is_index_expr(s),
        Seg::Name => !s.starts_with(b"_"),
        Seg::Any | Seg::Rest => true,
    }
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
