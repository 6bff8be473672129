//! What compiling a query for one index needs ([`Ctx`]: the mapping, the shard's fields, the
//! index's name, the request's now) and the smallest tantivy builders every compiler uses:
//! boost, empty, constant score, one term, `_index` matching.
//!
//! Must not touch: the query DSL's meaning (`compile`, `field`), the schema's layout
//! (`target`). A leaf: imports nothing else of `query`.

use tantivy::query::{
    AllQuery, BoostQuery, ConstScoreQuery, EmptyQuery, Query as TQuery, TermQuery,
};
use tantivy::schema::IndexRecordOption;
use tantivy::Term;

use crate::mapping::Mapping;
use crate::names::wildcard_match;
use crate::store::schema::Fields;

pub(super) type Q = Box<dyn TQuery>;

/// What compilation needs to know about the index searched.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    pub mapping: &'a Mapping,
    pub fields: &'a Fields,
    pub index_name: &'a str,
    pub now_ms: i64,
}

pub(super) fn boosted(q: Q, boost: f32) -> Q {
    if boost == 1.0 {
        q
    } else {
        Box::new(BoostQuery::new(q, boost))
    }
}

pub(super) fn empty() -> Q {
    Box::new(EmptyQuery)
}

pub(super) fn konst(q: Q, score: f32) -> Q {
    Box::new(ConstScoreQuery::new(q, score))
}

pub(super) fn term_q(t: Term) -> Q {
    Box::new(TermQuery::new(t, IndexRecordOption::WithFreqs))
}

pub(super) fn index_matches(ctx: &Ctx<'_>, pattern: &str) -> Q {
    if wildcard_match(pattern, ctx.index_name) {
        Box::new(AllQuery)
    } else {
        empty()
    }
}
