//! Search execution: the search request (body and URI forms), fan-out to every shard of the
//! target indices (their current searchers, or a point in time's), exact hit counts
//! (reported as `track_total_hits` asks), top hits by score (tantivy's pruning top-k
//! collector) or by sort keys, `search_after`, `collapse`, merge across shards, fetch of
//! sources, highlighting, aggregations, and the response shape.
//!
//! Must not touch: HTTP, the write path.

mod agg_run;
mod collapse;
pub mod highlight;
pub mod pit;
mod render;
pub mod request;
mod scroll;
mod scroll_page;
pub mod snapshot;
pub mod sort;
mod sort_spec;
pub mod source;

use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};
use tantivy::aggregation::intermediate_agg_result::IntermediateAggregationResults;
use tantivy::collector::{Collector, TopDocs};
use tantivy::query::{EnableScoring, Query as TQuery, Weight};
use tantivy::{DocAddress, Searcher};

pub use pit::Pits;
use render::{render_page, Page};
pub use request::SearchRequest;
pub use scroll::{ScrollParams, Scrolls, MAX_OPEN_SCROLL_CONTEXT};
use scroll_page::{After, AfterCollector};
use sort::{cmp_keys, is_score_order, Key, KeyKind, SortCollector, SortValue};

use super::aggs;
use super::error::{EngineError, EngineResult};
use super::query::{compile, Ctx, Query};
use super::store::index::IndexHandle;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

struct Candidate {
    index: usize,
    shard: usize,
    searcher: Searcher,
    addr: DocAddress,
    score: f32,
    values: Vec<SortValue>,
    /// The `collapse` field's value of this hit.
    group: Option<SortValue>,
}

/// The searchers of a search: one per shard of each target index.
pub type Views = Vec<Vec<Searcher>>;

/// The current searchers of `indices`.
pub fn current_views(indices: &[Arc<IndexHandle>]) -> Views {
    indices
        .iter()
        .map(|h| h.shards.iter().map(|s| s.searcher()).collect())
        .collect()
}

/// Whether `req`'s routing selects shard `shard` of `handle` (every shard of an index
/// without routing values).
fn routed(handle: &IndexHandle, req: &SearchRequest, shard: usize) -> bool {
    match req.routing.get(&handle.name) {
        None => true,
        Some(values) => values
            .iter()
            .any(|v| handle.shard_num_for(v) as usize == shard),
    }
}

/// `views` of `indices` restricted to the shards `req`'s routing selects.
pub fn routed_views(
    indices: &[Arc<IndexHandle>],
    views: &[Vec<Searcher>],
    req: &SearchRequest,
) -> Views {
    indices
        .iter()
        .zip(views)
        .map(|(h, shards)| {
            shards
                .iter()
                .enumerate()
                .filter(|(si, _)| routed(h, req, *si))
                .map(|(_, s)| s.clone())
                .collect()
        })
        .collect()
}

/// One index's compiled request.
struct Plan {
    handle: Arc<IndexHandle>,
    hits_query: Box<dyn TQuery>,
    agg_query: Option<Box<dyn TQuery>>,
    keys: Vec<Key>,
    /// The named queries (`_name`) of the query and the post filter, for `matched_queries`.
    named: Vec<(String, Box<dyn TQuery>)>,
}

fn plan(handle: &Arc<IndexHandle>, req: &SearchRequest, now: i64) -> EngineResult<Plan> {
    let mapping = handle.mapping();
    let fields = &handle.shards[0].fields;
    let ctx = Ctx {
        mapping: &mapping,
        fields,
        index_name: &handle.name,
        now_ms: now,
    };
    let mut filter: Vec<Query> = req.post_filter.iter().cloned().collect();
    let alias_filter = req.alias_filters.get(&handle.name);
    let base = match alias_filter {
        Some(af) => compile(&with_filters(&req.query, vec![af.clone()]), &ctx)?,
        None => compile(&req.query, &ctx)?,
    };
    filter.extend(alias_filter.cloned());
    let hits_query = if filter.is_empty() {
        base.box_clone()
    } else {
        compile(&with_filters(&req.query, filter), &ctx)?
    };
    let keys = sort::resolve(&req.sort, &mapping, &handle.name, fields.id)?;
    let named = req
        .query
        .named()
        .into_iter()
        .chain(req.post_filter.iter().flat_map(|q| q.named()))
        .map(|(name, q)| Ok((name.to_string(), compile(q, &ctx)?)))
        .collect::<EngineResult<_>>()?;
    Ok(Plan {
        handle: handle.clone(),
        hits_query,
        agg_query: Some(base),
        keys,
        named,
    })
}

/// `query` restricted by filters that do not score.
fn with_filters(query: &Query, filter: Vec<Query>) -> Query {
    Query::Bool {
        must: vec![query.clone()],
        filter,
        should: vec![],
        must_not: vec![],
        msm: None,
        boost: 1.0,
    }
}

fn check_window(indices: &[Arc<IndexHandle>], req: &SearchRequest) -> EngineResult<()> {
    let limit = req.from.saturating_add(req.size);
    for h in indices {
        let max = h.settings().max_result_window;
        if limit > max {
            return Err(EngineError::SearchPhase {
                kind: "illegal_argument_exception".into(),
                reason: format!("Result window is too large, from + size must be less than or equal to: [{max}] but was [{limit}]. See the scroll api for a more efficient way to request large data sets. This limit can be set by changing the [index.max_result_window] index level setting."),
            });
        }
    }
    Ok(())
}

/// Top documents of one shard: address, score, sort values.
type ShardHits = Vec<(DocAddress, f32, Vec<SortValue>)>;

/// Runs `collector` over every segment with one prebuilt weight.
fn collect_with<C: Collector>(
    searcher: &Searcher,
    weight: &dyn Weight,
    collector: &C,
) -> EngineResult<C::Fruit> {
    let mut fruits = Vec::with_capacity(searcher.segment_readers().len());
    for (ord, seg) in searcher.segment_readers().iter().enumerate() {
        fruits.push(collector.collect_segment(weight, ord as u32, seg)?);
    }
    Ok(collector.merge_fruits(fruits)?)
}

/// Where a shard sits in the search: (index, shard) and its position among all shards.
#[derive(Debug, Clone, Copy)]
struct ShardAt {
    index: usize,
    shard: usize,
    pos: usize,
}

/// What a shard search needs besides the plan.
struct ShardJob<'a> {
    limit: usize,
    score_order: bool,
    after: Option<&'a After>,
    keys: &'a [Key],
}

/// The weight of a plan's query on one shard (scoring when asked) and its match count.
fn weight_and_total(
    p: &Plan,
    searcher: &Searcher,
    scoring: bool,
) -> EngineResult<(Box<dyn Weight>, u64)> {
    let enable = if scoring {
        EnableScoring::enabled_from_searcher(searcher)
    } else {
        EnableScoring::disabled_from_searcher(searcher)
    };
    let weight = p.hits_query.weight(enable)?;
    let mut total = 0u64;
    for seg in searcher.segment_readers() {
        total += weight.count(seg)? as u64;
    }
    Ok((weight, total))
}

/// Total hits and top candidates of one shard. One weight serves the count and the top
/// documents, so term statistics and dictionary lookups are done once.
fn search_shard(
    p: &Plan,
    searcher: &Searcher,
    at: ShardAt,
    job: &ShardJob<'_>,
) -> EngineResult<(u64, ShardHits)> {
    let scoring = job.score_order || job.keys.iter().any(|k| matches!(k.kind, KeyKind::Score));
    let (weight, total) = weight_and_total(p, searcher, scoring)?;
    if job.limit == 0 || total == 0 {
        return Ok((total, vec![]));
    }
    if job.score_order && job.after.is_none() {
        let top = collect_with(
            searcher,
            &*weight,
            &TopDocs::with_limit(job.limit).order_by_score(),
        )?;
        let hits = top
            .into_iter()
            .map(|(s, a)| (a, s, vec![SortValue::Num(s as f64)]));
        return Ok((total, hits.collect()));
    }
    let inner = SortCollector::new(job.keys.to_vec(), job.limit, searcher, at.pos);
    let hits = match job.after {
        None => collect_with(searcher, &*weight, &inner)?,
        Some(a) => {
            let c = AfterCollector {
                inner,
                after: Some(a.clone()),
                shard: (at.index, at.shard),
            };
            collect_with(searcher, &*weight, &c)?
        }
    };
    Ok((
        total,
        hits.into_iter()
            .map(|h| (DocAddress::new(h.segment, h.doc), h.score, h.values))
            .collect(),
    ))
}

/// What the shards of every target index returned.
#[derive(Default)]
struct Gathered {
    total: u64,
    shards: usize,
    cands: Vec<Candidate>,
    agg_parts: Vec<IntermediateAggregationResults>,
}

fn gather(
    plans: &[Plan],
    views: &[Vec<Searcher>],
    req: &SearchRequest,
    score_order: bool,
    prepared: Option<&[aggs::Prepared]>,
) -> EngineResult<Gathered> {
    let after = search_after(plans, req, score_order)?;
    let mut g = Gathered::default();
    for (ii, (p, searchers)) in plans.iter().zip(views).enumerate() {
        let per_index_aggs = prepared.and_then(|a| a.get(ii)).map(|a| &a.aggs);
        let keys = if after.is_some() && score_order {
            merge_keys(plans, true)
        } else {
            p.keys.clone()
        };
        let job = ShardJob {
            limit: req.from.saturating_add(req.size),
            score_order,
            after: after.as_ref(),
            keys: &keys,
        };
        for (si, searcher) in searchers.iter().enumerate() {
            let at = ShardAt {
                index: ii,
                shard: si,
                pos: g.shards,
            };
            g.shards += 1;
            if let Some(field) = &req.collapse {
                let (t, top) = collapse::search_shard(p, searcher, at, &job, field)?;
                g.total += t;
                g.cands.extend(top);
            } else {
                let (t, top) = search_shard(p, searcher, at, &job)?;
                g.total += t;
                for (addr, score, values) in top {
                    g.cands.push(Candidate {
                        index: ii,
                        shard: si,
                        searcher: searcher.clone(),
                        addr,
                        score,
                        values,
                        group: None,
                    });
                }
            }
            if let (Some(a), Some(q)) = (per_index_aggs, &p.agg_query) {
                g.agg_parts.push(aggs::collect(searcher, &**q, a)?);
            }
        }
    }
    Ok(g)
}

/// `search_after`'s values as a cursor for the merge keys of `plans`.
fn search_after(
    plans: &[Plan],
    req: &SearchRequest,
    score_order: bool,
) -> EngineResult<Option<After>> {
    let Some(values) = &req.search_after else {
        return Ok(None);
    };
    let keys = merge_keys(plans, score_order);
    if req.sort.is_empty() {
        return Err(EngineError::IllegalArgument(
            "Sort must contain at least one field.".into(),
        ));
    }
    if values.len() != keys.len() {
        return Err(EngineError::IllegalArgument(format!(
            "search_after has {} value(s) but sort has {}.",
            values.len(),
            keys.len()
        )));
    }
    let values = values
        .iter()
        .zip(&keys)
        .map(|(v, k)| after_value(v, k))
        .collect::<EngineResult<Vec<_>>>()?;
    Ok(Some(After { values, pos: None }))
}

fn after_value(v: &Value, k: &Key) -> EngineResult<SortValue> {
    let bad = || {
        EngineError::IllegalArgument(format!(
            "Failed to parse search_after value [{v}] for this sort field"
        ))
    };
    if v.is_null() {
        return Ok(SortValue::Missing);
    }
    Ok(match &k.kind {
        KeyKind::Str { .. } | KeyKind::Id(_) | KeyKind::Const(_) => {
            SortValue::Str(v.as_str().map_or_else(|| v.to_string(), String::from))
        }
        KeyKind::Missing => SortValue::Missing,
        _ => SortValue::Num(match v {
            Value::Number(n) => n.as_f64().ok_or_else(bad)?,
            Value::String(s) => s.parse().map_err(|_| bad())?,
            Value::Bool(b) => *b as u8 as f64,
            _ => return Err(bad()),
        }),
    })
}

/// The merge order of hits from all shards.
fn merge_keys(plans: &[Plan], score_order: bool) -> Vec<Key> {
    if score_order {
        return vec![Key {
            kind: KeyKind::Score,
            desc: true,
            missing_first: false,
        }];
    }
    plans.first().map(|p| p.keys.clone()).unwrap_or_default()
}

/// Validation shared by searches (Elasticsearch's `SearchRequest.validate` and the search
/// service's checks).
fn validate(req: &SearchRequest) -> EngineResult<()> {
    if req.search_after.is_some() && req.from > 0 {
        return Err(EngineError::SearchPhase {
            kind: "search_context_exception".into(),
            reason: "`from` parameter must be set to 0 when `search_after` is used.".into(),
        });
    }
    if req.collapse.is_some() && req.search_after.is_some() {
        return Err(EngineError::SearchPhase {
            kind: "search_context_exception".into(),
            reason: "cannot use `collapse` in conjunction with `search_after`".into(),
        });
    }
    if req.pit.is_none() && req.sort.iter().any(|s| s.field == "_shard_doc") {
        return Err(EngineError::Validation(vec![
            "[_shard_doc] sort field cannot be used without [point in time]".into(),
        ]));
    }
    Ok(())
}

/// Runs `req` over `indices` (their current searchers); returns the response body.
pub fn search(indices: &[Arc<IndexHandle>], req: &SearchRequest) -> EngineResult<Value> {
    search_views(
        indices,
        &routed_views(indices, &current_views(indices), req),
        req,
    )
}

/// Runs `req` over `indices` read through `views` (a point in time's searchers or the
/// current ones, restricted to the shards the routing selects: [`routed_views`]).
pub fn search_views(
    indices: &[Arc<IndexHandle>],
    views: &[Vec<Searcher>],
    req: &SearchRequest,
) -> EngineResult<Value> {
    let started = Instant::now();
    validate(req)?;
    check_window(indices, req)?;
    let now = now_ms();
    let plans = indices
        .iter()
        .map(|h| plan(h, req, now))
        .collect::<EngineResult<Vec<_>>>()?;
    if let Some(f) = &req.collapse {
        for p in &plans {
            collapse::check_field(&p.handle, f)?;
        }
    }
    let score_order = is_score_order(&req.sort);
    let prepared = agg_run::prepare_all(&plans, views, req.aggs.as_ref())?;
    let mut g = gather(&plans, views, req, score_order, prepared.as_deref())?;
    let keys = merge_keys(&plans, score_order);
    g.cands.sort_by(|a, b| {
        let pos = |c: &Candidate| (c.index, c.shard, c.addr.segment_ord, c.addr.doc_id);
        cmp_keys(&a.values, &b.values, &keys).then(pos(a).cmp(&pos(b)))
    });
    if req.collapse.is_some() {
        collapse::dedupe(&mut g.cands);
    }
    let track = score_order || req.track_scores;
    let max_score = g
        .cands
        .iter()
        .map(|c| c.score)
        .reduce(f32::max)
        .filter(|_| track);
    let aggregations = match &prepared {
        Some(p) => Some(agg_run::finish(
            std::mem::take(&mut g.agg_parts),
            p,
            &plans,
            views,
            req,
        )?),
        None => None,
    };
    let end = g.cands.len().min(req.from.saturating_add(req.size));
    let page = Page {
        started,
        shards: g.shards,
        total: g.total,
        max_score,
        hits: g.cands.get(req.from..end).unwrap_or_default(),
        aggregations,
    };
    render_page(&plans, req, &keys, page)
}

/// `_count`: exact number of matches of `req.query` over `indices` (filtered aliases'
/// filters applied).
pub fn count(indices: &[Arc<IndexHandle>], req: &SearchRequest) -> EngineResult<Value> {
    let now = now_ms();
    let (mut total, mut shards) = (0u64, 0usize);
    for h in indices {
        let mapping = h.mapping();
        let ctx = Ctx {
            mapping: &mapping,
            fields: &h.shards[0].fields,
            index_name: &h.name,
            now_ms: now,
        };
        let q = match req.alias_filters.get(&h.name) {
            Some(f) => compile(&with_filters(&req.query, vec![f.clone()]), &ctx)?,
            None => compile(&req.query, &ctx)?,
        };
        for s in h.shards.iter().filter(|s| routed(h, req, s.num as usize)) {
            shards += 1;
            total += q.count(&s.searcher())? as u64;
        }
    }
    Ok(
        json!({"count": total, "_shards": {"total": shards, "successful": shards, "skipped": 0, "failed": 0}}),
    )
}

#[cfg(test)]
mod tests;
