//! Search execution: the search request (body and URI forms), fan-out to every shard of the
//! target indices, exact hit counts, top hits by score (tantivy's pruning top-k collector)
//! or by sort keys, merge across shards, fetch of sources, aggregations, and the response
//! shape of spec section 4 (integer `hits.total`).
//!
//! Must not touch: HTTP, the write path.

pub mod request;
mod scroll;
mod scroll_page;
pub mod sort;
pub mod source;

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tantivy::aggregation::intermediate_agg_result::IntermediateAggregationResults;
use tantivy::collector::{Collector, TopDocs};
use tantivy::query::{EnableScoring, Query as TQuery, Weight};
use tantivy::schema::Value as _;
use tantivy::{DocAddress, Searcher, TantivyDocument};

pub use request::SearchRequest;
pub use scroll::{ScrollParams, Scrolls, MAX_OPEN_SCROLL_CONTEXT};
use sort::{cmp_keys, is_score_order, Key, KeyKind, SortCollector, SortValue};

use super::aggs;
use super::error::{EngineError, EngineResult};
use super::query::{compile, Ctx, Query};
use super::store::index::IndexHandle;
use super::store::schema::{F_SEQ_NO, F_VERSION};

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
}

#[derive(Serialize)]
struct HitOut {
    _index: String,
    _type: String,
    _id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    _version: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    _seq_no: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    _primary_term: Option<u64>,
    _score: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    _source: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sort: Option<Vec<Value>>,
}

#[derive(Serialize)]
struct Shards {
    total: usize,
    successful: usize,
    skipped: usize,
    failed: usize,
}

#[derive(Serialize)]
struct HitsOut {
    total: u64,
    max_score: Option<f32>,
    hits: Vec<HitOut>,
}

#[derive(Serialize)]
struct SearchOut {
    took: u64,
    timed_out: bool,
    _shards: Shards,
    hits: HitsOut,
    #[serde(skip_serializing_if = "Option::is_none")]
    aggregations: Option<Value>,
}

/// One index's compiled request.
struct Plan {
    handle: Arc<IndexHandle>,
    hits_query: Box<dyn TQuery>,
    agg_query: Option<Box<dyn TQuery>>,
    keys: Vec<Key>,
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
    let base = compile(&req.query, &ctx)?;
    let hits_query = match &req.post_filter {
        Some(pf) => compile(
            &Query::Bool {
                must: vec![req.query.clone()],
                filter: vec![pf.clone()],
                should: vec![],
                must_not: vec![],
                msm: None,
                boost: 1.0,
            },
            &ctx,
        )?,
        None => base.box_clone(),
    };
    let keys = sort::resolve(&req.sort, &mapping, &handle.name)?;
    Ok(Plan {
        handle: handle.clone(),
        hits_query,
        agg_query: Some(base),
        keys,
    })
}

fn check_window(indices: &[Arc<IndexHandle>], req: &SearchRequest) -> EngineResult<()> {
    let limit = req.from + req.size;
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

/// Total hits and top candidates of one shard.
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

/// Total hits and top candidates of one shard. One weight serves the count and the top
/// documents, so term statistics and dictionary lookups are done once.
fn search_shard(
    p: &Plan,
    searcher: &Searcher,
    limit: usize,
    score_order: bool,
) -> EngineResult<(u64, ShardHits)> {
    let scoring = score_order || p.keys.iter().any(|k| matches!(k.kind, KeyKind::Score));
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
    if limit == 0 || total == 0 {
        return Ok((total, vec![]));
    }
    if score_order {
        let top = collect_with(
            searcher,
            &*weight,
            &TopDocs::with_limit(limit).order_by_score(),
        )?;
        let hits = top
            .into_iter()
            .map(|(s, a)| (a, s, vec![SortValue::Num(s as f64)]));
        return Ok((total, hits.collect()));
    }
    let collector = SortCollector {
        keys: p.keys.clone(),
        limit,
    };
    let hits = collect_with(searcher, &*weight, &collector)?;
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

fn gather(plans: &[Plan], req: &SearchRequest, score_order: bool) -> EngineResult<Gathered> {
    let limit = req.from + req.size;
    let mut g = Gathered::default();
    for (ii, p) in plans.iter().enumerate() {
        let per_index_aggs = match &req.aggs {
            Some(raw) => Some(aggs::prepare(raw, &p.handle.mapping())?),
            None => None,
        };
        for (si, shard) in p.handle.shards.iter().enumerate() {
            g.shards += 1;
            let searcher = shard.searcher();
            let (t, top) = search_shard(p, &searcher, limit, score_order)?;
            g.total += t;
            for (addr, score, values) in top {
                let searcher = searcher.clone();
                g.cands.push(Candidate {
                    index: ii,
                    shard: si,
                    searcher,
                    addr,
                    score,
                    values,
                });
            }
            if let (Some(a), Some(q)) = (&per_index_aggs, &p.agg_query) {
                g.agg_parts.push(aggs::collect(&searcher, &**q, a)?);
            }
        }
    }
    Ok(g)
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

/// Runs `req` over `indices`; returns the response body.
pub fn search(indices: &[Arc<IndexHandle>], req: &SearchRequest) -> EngineResult<Value> {
    let started = Instant::now();
    check_window(indices, req)?;
    let now = now_ms();
    let plans = indices
        .iter()
        .map(|h| plan(h, req, now))
        .collect::<EngineResult<Vec<_>>>()?;
    let score_order = is_score_order(&req.sort);
    let first_mapping = plans
        .first()
        .map(|p| p.handle.mapping())
        .unwrap_or_default();
    let agg_req = req
        .aggs
        .as_ref()
        .map(|raw| aggs::prepare(raw, &first_mapping))
        .transpose()?;
    let mut g = gather(&plans, req, score_order)?;
    let keys = merge_keys(&plans, score_order);
    g.cands.sort_by(|a, b| {
        let pos = |c: &Candidate| (c.index, c.shard, c.addr.segment_ord, c.addr.doc_id);
        cmp_keys(&a.values, &b.values, &keys).then(pos(a).cmp(&pos(b)))
    });
    let track = score_order || req.track_scores;
    let max_score = g
        .cands
        .iter()
        .map(|c| c.score)
        .reduce(f32::max)
        .filter(|_| track);
    let aggregations = match (&agg_req, &req.aggs) {
        (Some(a), Some(raw)) => Some(aggs::finish(g.agg_parts, a, raw, &first_mapping)?),
        _ => None,
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

/// One page of hits and what the response says about the whole search.
struct Page<'a> {
    started: Instant,
    shards: usize,
    total: u64,
    max_score: Option<f32>,
    hits: &'a [Candidate],
    aggregations: Option<Value>,
}

/// The response body of a page (spec 4: integer `hits.total`).
fn render_page(
    plans: &[Plan],
    req: &SearchRequest,
    keys: &[Key],
    page: Page<'_>,
) -> EngineResult<Value> {
    let track = is_score_order(&req.sort) || req.track_scores;
    let hits = page
        .hits
        .iter()
        .map(|c| render_hit(c, plans, req, track, keys))
        .collect::<EngineResult<Vec<_>>>()?;
    let shards = Shards {
        total: page.shards,
        successful: page.shards,
        skipped: 0,
        failed: 0,
    };
    let out = SearchOut {
        took: page.started.elapsed().as_millis() as u64,
        timed_out: false,
        _shards: shards,
        hits: HitsOut {
            total: page.total,
            max_score: page.max_score,
            hits,
        },
        aggregations: page.aggregations,
    };
    serde_json::to_value(out).map_err(EngineError::internal)
}

/// The `_source` of a hit as the request asks for it.
fn render_source(raw: &[u8], filter: &source::SourceFilter) -> EngineResult<Option<Box<RawValue>>> {
    let text = match filter {
        source::SourceFilter::None => return Ok(None),
        source::SourceFilter::All => String::from_utf8_lossy(raw).into_owned(),
        f => {
            let parsed: serde_json::Map<String, Value> =
                serde_json::from_slice(raw).unwrap_or_default();
            serde_json::to_string(&f.apply(&parsed)).map_err(EngineError::internal)?
        }
    };
    RawValue::from_string(text)
        .map(Some)
        .map_err(EngineError::internal)
}

fn render_hit(
    c: &Candidate,
    plans: &[Plan],
    req: &SearchRequest,
    track: bool,
    keys: &[Key],
) -> EngineResult<HitOut> {
    let h = &plans[c.index].handle;
    let fields = &h.shards[c.shard].fields;
    let doc: TantivyDocument = c.searcher.doc(c.addr)?;
    let id = doc
        .get_first(fields.id)
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let raw = doc
        .get_first(fields.source)
        .and_then(|v| v.as_bytes())
        .unwrap_or(b"{}");
    let ff = |name: &str| -> Option<u64> {
        let seg = c.searcher.segment_reader(c.addr.segment_ord);
        seg.fast_fields().u64(name).ok()?.first(c.addr.doc_id)
    };
    let integer = |k: &Key| matches!(k.kind, KeyKind::Num { integer: true, .. } | KeyKind::Doc);
    let sort = (!is_score_order(&req.sort)).then(|| {
        c.values
            .iter()
            .zip(keys)
            .map(|(v, k)| v.to_json(integer(k)))
            .collect()
    });
    let seq = req.seq_no_primary_term;
    Ok(HitOut {
        _index: h.name.clone(),
        _type: h.type_name(),
        _id: id.to_string(),
        _version: if req.version { ff(F_VERSION) } else { None },
        _seq_no: if seq { ff(F_SEQ_NO) } else { None },
        _primary_term: seq.then_some(1),
        _score: track.then_some(c.score),
        _source: render_source(raw, &req.source)?,
        sort,
    })
}

/// `_count`: exact number of matches over `indices`.
pub fn count(indices: &[Arc<IndexHandle>], query: &Query) -> EngineResult<Value> {
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
        let q = compile(query, &ctx)?;
        for s in &h.shards {
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
