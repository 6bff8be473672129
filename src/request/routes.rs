//! The row types of the endpoint table (`endpoints.rs`): path patterns (`Seg`), methods,
//! and how the multitenant class handles an endpoint (which body and response transform,
//! or 501). `classify` matches requests against rows of these types.
//!
//! Must not touch: the table itself, classification, the rewriting (`tenancy`), I/O.

use crate::proto::Method;

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
    /// OpenSearch's `DELETE /_search/point_in_time`: `pit_id` (one or a list) opened.
    ClosePitIds,
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
    /// Opening a point in time: strip, and seal the top-level `id` (Elasticsearch) or
    /// `pit_id` (OpenSearch).
    PitOpen,
    /// OpenSearch's lists of points in time (`{"pits": [{"pit_id", ...}]}` of
    /// `GET /_search/point_in_time/_all` and of a close): only the cluster's own entries
    /// kept, their ids sealed.
    PitList,
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
