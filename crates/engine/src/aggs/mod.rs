//! Aggregations: Elasticsearch aggregation requests are checked against the mapping,
//! rewritten for tantivy's aggregation engine (field names -> the keyword JSON field's
//! columns; `date_histogram` -> `range` over epoch milliseconds with boundaries computed
//! in the requested time zone; `range`/`date_range`, `filter`/`filters` -> filter
//! aggregations over queries compiled by the engine (one per range, so ranges may overlap);
//! `terms` on `_index` -> one filter per index), run per shard, merged across shards and
//! indices, and rendered back in Elasticsearch's shapes and types (`rewrite`, `ranges`,
//! `render`).
//!
//! Supported: terms, min, max, avg, sum, value_count, stats, extended_stats, cardinality,
//! percentiles, histogram, date_histogram (`calendar_interval`, `fixed_interval`,
//! `time_zone`, `offset`, `format`, `min_doc_count`, `extended_bounds`), range, date_range,
//! filter, filters, composite (terms and histogram sources, `after`), top_hits (filled by
//! the search after the buckets are known), with sub-aggregations. Anything else is refused
//! naming it.

mod buckets;
pub(crate) mod dates;
mod exact;
mod filter;
mod ranges;
pub mod render;
mod rewrite;
mod rewrite_dates;

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use tantivy::aggregation::agg_req::Aggregations;
use tantivy::aggregation::intermediate_agg_result::IntermediateAggregationResults;
use tantivy::aggregation::{
    AggContextParams, AggregationLimitsGuard, DistributedAggregationCollector,
};
use tantivy::query::Query as TQuery;
use tantivy::Searcher;

pub use buckets::{bucket_query, BucketRef};
pub use dates::MAX_BUCKETS;
pub use rewrite::{Note, TopHitsJob};

use crate::error::{EngineError, EngineResult};
use crate::mapping::{LeafKind, Mapping};
use crate::query::Ctx;
use crate::store::schema::F_KW;

/// What rewriting needs besides the request: the index (its mapping, and the context to
/// compile filter queries), every index of the search (for `terms` on `_index`), and the
/// smallest and largest value of each date field a `date_histogram` buckets.
#[derive(Debug, Clone, Copy)]
pub struct Env<'a> {
    pub ctx: Ctx<'a>,
    pub indices: &'a [String],
    pub bounds: &'a BTreeMap<String, (i64, i64)>,
}

/// A request ready for tantivy, with what rendering and the top hits need to know.
#[derive(Debug)]
pub struct Prepared {
    pub aggs: Aggregations,
    pub notes: BTreeMap<String, Note>,
    pub top_hits: Vec<TopHitsJob>,
}

fn perr(msg: String) -> EngineError {
    EngineError::Parsing(msg)
}

/// The fields every `date_histogram` of the request buckets (bounds must be known first).
pub fn date_fields(raw: &Value, out: &mut Vec<String>) {
    let Some(obj) = raw.as_object() else { return };
    for def in obj.values() {
        let Some(d) = def.as_object() else { continue };
        for (k, v) in d {
            match k.as_str() {
                "aggs" | "aggregations" => date_fields(v, out),
                "date_histogram" => {
                    if let Some(f) = v.get("field").and_then(Value::as_str) {
                        if !out.iter().any(|x| x == f) {
                            out.push(f.to_string());
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

/// The min/max request of `fields` (named `min\u{1}f`, `max\u{1}f`).
pub fn bounds_request(fields: &[String]) -> EngineResult<Aggregations> {
    let mut m = Map::new();
    for f in fields {
        m.insert(
            format!("min\u{1}{f}"),
            json!({"min": {"field": format!("{F_KW}.{f}")}}),
        );
        m.insert(
            format!("max\u{1}{f}"),
            json!({"max": {"field": format!("{F_KW}.{f}")}}),
        );
    }
    serde_json::from_value(Value::Object(m))
        .map_err(|e| perr(format!("failed to parse aggregations: {e}")))
}

/// The bounds found by [`bounds_request`] (fields without values are left out).
pub fn bounds_of(
    parts: Vec<IntermediateAggregationResults>,
    req: &Aggregations,
) -> EngineResult<BTreeMap<String, (i64, i64)>> {
    let v = merge_final(parts, req)?;
    let mut out = BTreeMap::new();
    for (k, x) in v.as_object().into_iter().flatten() {
        let Some(f) = k.strip_prefix("min\u{1}") else {
            continue;
        };
        let lo = x.get("value").and_then(Value::as_f64);
        let hi = v
            .get(format!("max\u{1}{f}"))
            .and_then(|m| m.get("value"))
            .and_then(Value::as_f64);
        if let (Some(lo), Some(hi)) = (lo, hi) {
            out.insert(f.to_string(), (lo as i64, hi as i64));
        }
    }
    Ok(out)
}

/// Rewrites an aggregation request for one index.
pub fn prepare(raw: &Value, env: &Env<'_>) -> EngineResult<Prepared> {
    let mut r = rewrite::Rewriter::new(env);
    let rewritten = r.aggs(raw, "")?;
    let mut aggs: Aggregations = serde_json::from_value(rewritten)
        .map_err(|e| perr(format!("failed to parse aggregations: {e}")))?;
    filter::install(&mut aggs, &mut r.queries)?;
    Ok(Prepared {
        aggs,
        notes: r.notes,
        top_hits: r.top_hits,
    })
}

/// Runs the aggregations of one shard.
pub fn collect(
    searcher: &Searcher,
    query: &dyn TQuery,
    aggs: &Aggregations,
) -> EngineResult<IntermediateAggregationResults> {
    // what the shard's collectors hold is bounded by what the request may still take
    let limits = AggregationLimitsGuard::new(
        Some(crate::budget::remaining()),
        Some(dates::MAX_BUCKETS as u32),
    );
    let ctx = AggContextParams::new(limits, Default::default());
    let collector = DistributedAggregationCollector::from_aggs(aggs.clone(), ctx);
    searcher.search(query, &collector).map_err(|e| match e {
        tantivy::TantivyError::AggregationError(a) => agg_error(a, Stage::Collect),
        tantivy::TantivyError::InvalidArgument(a) => EngineError::IllegalArgument(a),
        other => EngineError::internal(other),
    })
}

/// Where an aggregation failed: collecting (memory is the request's) or merging (memory
/// is the empty buckets a histogram adds, and so the count of buckets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Collect,
    Merge,
}

/// Memory a merge may give to the empty buckets histograms add: `search.max_buckets` of them.
const GAP_MEMORY: u64 = dates::MAX_BUCKETS as u64
    * std::mem::size_of::<
        tantivy::aggregation::intermediate_agg_result::IntermediateHistogramBucketEntry,
    >() as u64;

/// Elasticsearch's error for a limit tantivy's aggregations met: too many buckets is 400
/// `too_many_buckets_exception` (counted as Elasticsearch counts, the first bucket over the
/// limit), memory while collecting 429 `circuit_breaking_exception`.
fn agg_error(e: tantivy::aggregation::AggregationError, stage: Stage) -> EngineError {
    use tantivy::aggregation::AggregationError as A;
    match (e, stage) {
        (A::BucketLimitExceeded { current, .. }, _) => {
            EngineError::TooManyBuckets((current as usize).min(dates::MAX_BUCKETS + 1))
        }
        (A::MemoryExceeded { .. }, Stage::Merge) => {
            EngineError::TooManyBuckets(dates::MAX_BUCKETS + 1)
        }
        (A::MemoryExceeded { current, .. }, Stage::Collect) => {
            match crate::budget::charge(current.get_bytes(), "<aggregations>") {
                Err(e) => e,
                Ok(()) => EngineError::internal("aggregation memory over the request's budget"),
            }
        }
        (other, _) => EngineError::IllegalArgument(other.to_string()),
    }
}

fn merge_final(
    parts: Vec<IntermediateAggregationResults>,
    aggs: &Aggregations,
) -> EngineResult<Value> {
    let mut it = parts.into_iter();
    let mut merged = it.next().unwrap_or_default();
    for p in it {
        merged.merge_fruits(p).map_err(EngineError::internal)?;
    }
    let limits = AggregationLimitsGuard::new(Some(GAP_MEMORY), Some(dates::MAX_BUCKETS as u32));
    let res = merged
        .into_final_result(aggs.clone(), limits)
        .map_err(|e| match e {
            tantivy::TantivyError::AggregationError(a) => agg_error(a, Stage::Merge),
            other => EngineError::IllegalArgument(other.to_string()),
        })?;
    serde_json::to_value(res).map_err(EngineError::internal)
}

/// Merges shard results and renders them as Elasticsearch does.
pub fn finish(
    parts: Vec<IntermediateAggregationResults>,
    prepared: &Prepared,
    raw: &Value,
    mapping: &Mapping,
) -> EngineResult<Value> {
    let mut v = merge_final(parts, &prepared.aggs)?;
    render::render(&mut v, raw, mapping, &prepared.notes, "")?;
    Ok(v)
}

/// Refuses a field without per-document values for aggregations and sorting, as
/// Elasticsearch does: text without `fielddata`, other fields with `doc_values: false`.
pub(crate) fn check_not_text(mapping: &Mapping, field: &str) -> EngineResult<()> {
    let Some(info) = mapping.field(field) else {
        return Ok(());
    };
    if info.kind != LeafKind::Text && !info.doc_values {
        return Err(EngineError::SearchPhase {
            kind: "illegal_argument_exception".into(),
            reason: format!("Can't load fielddata on [{field}] because fielddata is unsupported on fields of type [{}]. Use doc values instead.", info.kind.name()),
        });
    }
    if info.kind == LeafKind::Text && !info.fielddata {
        return Err(EngineError::SearchPhase {
            kind: "illegal_argument_exception".into(),
            reason: format!("Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [{field}] in order to load field data by uninverting the inverted index. Note that this can use significant memory."),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
