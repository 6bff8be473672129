//! Running a search's aggregations: the bounds of date histograms first (one min/max pass
//! over the matches), then the rewritten request per index, collected per shard, merged,
//! rendered, and `top_hits` filled per bucket by searches of the bucket's documents.
//!
//! Must not touch: HTTP, hits of the main search.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use tantivy::aggregation::intermediate_agg_result::IntermediateAggregationResults;
use tantivy::Searcher;

use super::{now_ms, search_views, with_filters, Plan, SearchRequest};
use crate::aggs::{self, Env, Prepared};
use crate::error::{EngineError, EngineResult};
use crate::mapping::Mapping;
use crate::query::{Ctx, Query};
use crate::store::index::IndexHandle;
use crate::store::schema;

/// The prepared aggregations of every plan (None without `aggs`).
pub(super) fn prepare_all(
    plans: &[Plan],
    views: &[Vec<Searcher>],
    raw: Option<&Value>,
) -> EngineResult<Option<Vec<Prepared>>> {
    let Some(raw) = raw else { return Ok(None) };
    let mut fields = Vec::new();
    aggs::date_fields(raw, &mut fields);
    let mut bounds = BTreeMap::new();
    if !fields.is_empty() {
        let breq = aggs::bounds_request(&fields)?;
        let mut parts = Vec::new();
        for (p, searchers) in plans.iter().zip(views) {
            if let Some(q) = &p.agg_query {
                for s in searchers {
                    parts.push(aggs::collect(s, &**q, &breq)?);
                }
            }
        }
        bounds = aggs::bounds_of(parts, &breq)?;
    }
    let names: Vec<String> = plans.iter().map(|p| p.handle.name.clone()).collect();
    let now = now_ms();
    let mut out = Vec::with_capacity(plans.len().max(1));
    for p in plans {
        let mapping = p.handle.mapping();
        let ctx = Ctx {
            mapping: &mapping,
            fields: &p.handle.shards[0].fields,
            index_name: &p.handle.name,
            now_ms: now,
        };
        out.push(aggs::prepare(
            raw,
            &Env {
                ctx,
                indices: &names,
                bounds: &bounds,
            },
        )?);
    }
    if out.is_empty() {
        let (m, fields) = (Mapping::default(), schema::fields(&schema::build_schema())?);
        let ctx = Ctx {
            mapping: &m,
            fields: &fields,
            index_name: "",
            now_ms: now,
        };
        out.push(aggs::prepare(
            raw,
            &Env {
                ctx,
                indices: &names,
                bounds: &bounds,
            },
        )?);
    }
    Ok(Some(out))
}

/// Merges and renders the aggregations, then fills their `top_hits`.
pub(super) fn finish(
    parts: Vec<IntermediateAggregationResults>,
    prepared: &[Prepared],
    plans: &[Plan],
    views: &[Vec<Searcher>],
    req: &SearchRequest,
) -> EngineResult<Value> {
    let (Some(first), Some(raw)) = (prepared.first(), &req.aggs) else {
        return Ok(Value::Null);
    };
    let mapping = plans
        .first()
        .map(|p| p.handle.mapping())
        .unwrap_or_default();
    let mut v = aggs::finish(parts, first, raw, &mapping)?;
    let indices: Vec<Arc<IndexHandle>> = plans.iter().map(|p| p.handle.clone()).collect();
    for job in &first.top_hits {
        let hits = |extra: Option<Query>| top_hits(&indices, views, req, &job.body, extra);
        if job.parent.is_empty() {
            v[job.name.as_str()] = hits(None)?;
            continue;
        }
        let def = &raw[job.parent.as_str()];
        let Some(buckets) = v
            .get_mut(job.parent.as_str())
            .and_then(|p| p.get_mut("buckets"))
        else {
            continue;
        };
        let each = |at: aggs::BucketRef<'_>, b: &mut Value| -> EngineResult<()> {
            let q = aggs::bucket_query(def, at, b)?;
            b[job.name.as_str()] = hits(Some(q))?;
            Ok(())
        };
        match buckets {
            Value::Array(a) => a
                .iter_mut()
                .enumerate()
                .try_for_each(|(i, b)| each(aggs::BucketRef::At(i), b))?,
            Value::Object(o) => o
                .iter_mut()
                .try_for_each(|(k, b)| each(aggs::BucketRef::Named(k), b))?,
            _ => {}
        }
    }
    Ok(v)
}

/// The `hits` of a `top_hits` over the search's matches (within a bucket when `extra`).
fn top_hits(
    indices: &[Arc<IndexHandle>],
    views: &[Vec<Searcher>],
    req: &SearchRequest,
    body: &Value,
    extra: Option<Query>,
) -> EngineResult<Value> {
    if let Some(k) = body.as_object().and_then(|o| {
        o.keys().find(|k| {
            matches!(
                k.as_str(),
                "query" | "aggs" | "aggregations" | "post_filter"
            )
        })
    }) {
        return Err(EngineError::Parsing(format!(
            "[top_hits] unknown field [{k}]"
        )));
    }
    let mut sub = SearchRequest::from_body(Some(body))?;
    if body.get("size").is_none() {
        sub.size = 3;
    }
    sub.query = match extra {
        Some(q) => with_filters(&req.query, vec![q]),
        None => req.query.clone(),
    };
    sub.alias_filters = req.alias_filters.clone();
    sub.track_total = Some(super::request::TrackTotal::Accurate);
    let mut v = search_views(indices, views, &sub)?;
    Ok(serde_json::json!({ "hits": v["hits"].take() }))
}
