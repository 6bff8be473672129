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

/// How a multitenant request's body is read (see `tenancy::references` for each row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// The endpoint takes no body: one is refused (as Elasticsearch refuses it).
    None,
    /// A document (`_doc`, `_create`, typed documents): forwarded as sent.
    Document,
    /// `_bulk`: NDJSON, streamed line by line.
    Bulk,
    /// `_msearch`: NDJSON, streamed line by line.
    Msearch,
    /// A search body (`_search`).
    Search,
    /// A body holding only `query` (`_count`, `_explain`, `_validate/query`).
    QueryOnly,
    /// `_field_caps`: `index_filter`.
    FieldCaps,
    /// `_mget`: `docs[]._index`.
    Mget,
    /// `_termvectors`: `_index` in the body.
    TermVectors,
    /// `_update`: documents and a script.
    Update,
    /// `_analyze`.
    Analyze,
    /// `PUT /<index>`: settings, mappings, aliases (and the plan's shard check).
    CreateIndex,
    /// `PUT /<index>/_settings`.
    Settings,
    /// `PUT /<index>/_mapping`.
    Mapping,
    /// `POST /_aliases`: actions.
    Aliases,
    /// `PUT /<index>/_alias/<name>`: `index`, `alias`, `filter`.
    PutAlias,
    /// `PUT /_template/<name>`.
    Template,
    /// `PUT /_index_template/<name>`.
    IndexTemplate,
    /// `PUT /_component_template/<name>`.
    ComponentTemplate,
    DeleteByQuery,
    UpdateByQuery,
    Reindex,
    /// `_search/scroll`: `scroll_id` opened.
    Scroll,
    /// `DELETE /_search/scroll`: `scroll_id` opened.
    ClearScroll,
    /// `DELETE /_pit`: `id` opened.
    ClosePit,
}

impl BodyKind {
    /// Streamed line by line (NDJSON), rather than read whole.
    pub fn is_streamed(self) -> bool {
        matches!(self, BodyKind::Bulk | BodyKind::Msearch)
    }

    /// Read whole as JSON and written again by the edge.
    pub fn is_json(self) -> bool {
        !matches!(self, BodyKind::None | BodyKind::Document) && !self.is_streamed()
    }
}

/// Response transform for the multitenant class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseKind {
    /// Remove the tenant's prefix wherever it occurs.
    Strip,
    /// A `_cat` table whose every row names an index: strip, and drop rows that do not
    /// carry the tenant's prefix (text and `format=json`).
    CatRows,
    /// A search or scroll response: strip, and seal a top-level `_scroll_id`/`pit_id` when
    /// the request can have opened one.
    Search,
    /// Opening a point in time: strip, and seal the top-level `id`.
    PitOpen,
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
    /// Scroll ids (a comma list of sealed tokens the tenancy layer opens); not `_all`.
    ScrollIds,
    /// Any segment (ids, metrics, names). On multitenant clusters one that starts with `_`
    /// is refused: see [`endpoint_name_in_value`].
    Any,
    /// Zero or more segments of any kind (last only); multitenant: as [`Seg::Any`].
    Rest,
    /// A field-name list in the last position after the literal `field` of
    /// `_mapping/field/{fields}`: any segment, `_` allowed (metadata fields such as `_id`),
    /// because no Elasticsearch route has an explicit child there (see
    /// [`endpoint_name_in_value`]).
    Fields,
}

/// Methods a row applies to (bit set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Methods(u8);

impl Methods {
    pub const ANY: Methods = Methods(0xff);
    pub const GET_HEAD: Methods = Methods(0b11);
    pub const POST: Methods = Methods(0b100);
    pub const PUT: Methods = Methods(0b1000);
    pub const PUT_POST: Methods = Methods(0b1100);
    pub const DELETE: Methods = Methods(0b1_0000);

    pub fn has(self, m: Method) -> bool {
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

pub use super::endpoints::ROUTES;

impl Route {
    /// What the body of a request to this endpoint is, whatever the cluster's class (the
    /// edge counts `_bulk` actions on every class and reads a `_reindex` body on every
    /// class; a blocked row has no body to read).
    pub fn body_kind(&self) -> BodyKind {
        match self.tenancy {
            Tenancy::Rewrite { body, .. } => body,
            Tenancy::Block => BodyKind::None,
        }
    }
}

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
