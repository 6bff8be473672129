//! Search execution: the search request (body and URI forms), fan-out to every shard of the
//! target indices, exact hit counts, top hits by score (tantivy's pruning top-k collector)
//! or by sort keys, merge across shards, fetch of sources, aggregations, and the response
//! shape of spec section 4 (integer `hits.total`).
//!
//! Must not touch: HTTP, the write path.

pub mod request;
pub mod sort;
pub mod source;

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tantivy::collector::TopDocs;
use tantivy::query::Query as TQuery;
use tantivy::schema::Value as _;
use tantivy::{DocAddress, Searcher, TantivyDocument};

pub use request::SearchRequest;
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
struct Plan<'a> {
    handle: &'a Arc<IndexHandle>,
    hits_query: Box<dyn TQuery>,
    agg_query: Option<Box<dyn TQuery>>,
    keys: Vec<Key>,
}

fn plan<'a>(handle: &'a Arc<IndexHandle>, req: &SearchRequest, now: i64) -> EngineResult<Plan<'a>> {
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
        handle,
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

fn search_shard(
    p: &Plan<'_>,
    searcher: &Searcher,
    limit: usize,
    score_order: bool,
) -> EngineResult<(u64, ShardHits)> {
    let total = p.hits_query.count(searcher)? as u64;
    if limit == 0 || total == 0 {
        return Ok((total, vec![]));
    }
    if score_order {
        let top = searcher.search(&*p.hits_query, &TopDocs::with_limit(limit).order_by_score())?;
        return Ok((
            total,
            top.into_iter()
                .map(|(s, a)| (a, s, vec![SortValue::Num(s as f64)]))
                .collect(),
        ));
    }
    let hits = searcher.search(
        &*p.hits_query,
        &SortCollector {
            keys: p.keys.clone(),
            limit,
        },
    )?;
    Ok((
        total,
        hits.into_iter()
            .map(|h| (DocAddress::new(h.segment, h.doc), h.score, h.values))
            .collect(),
    ))
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
    let limit = req.from + req.size;
    let (mut total, mut shards) = (0u64, 0usize);
    let mut cands: Vec<Candidate> = Vec::new();
    let mut agg_parts = Vec::new();
    let first_mapping = plans
        .first()
        .map(|p| p.handle.mapping())
        .unwrap_or_default();
    let agg_req = req
        .aggs
        .as_ref()
        .map(|raw| aggs::prepare(raw, &first_mapping))
        .transpose()?;
    for (ii, p) in plans.iter().enumerate() {
        let per_index_aggs = match &req.aggs {
            Some(raw) => Some(aggs::prepare(raw, &p.handle.mapping())?),
            None => None,
        };
        for (si, shard) in p.handle.shards.iter().enumerate() {
            shards += 1;
            let searcher = shard.searcher();
            let (t, top) = search_shard(p, &searcher, limit, score_order)?;
            total += t;
            for (addr, score, values) in top {
                cands.push(Candidate {
                    index: ii,
                    shard: si,
                    searcher: searcher.clone(),
                    addr,
                    score,
                    values,
                });
            }
            if let (Some(a), Some(q)) = (&per_index_aggs, &p.agg_query) {
                agg_parts.push(aggs::collect(&searcher, &**q, a)?);
            }
        }
    }
    let keys: Vec<Key> = if score_order {
        vec![Key {
            kind: KeyKind::Score,
            desc: true,
            missing_first: false,
        }]
    } else {
        plans.first().map(|p| p.keys.clone()).unwrap_or_default()
    };
    cands.sort_by(|a, b| {
        cmp_keys(&a.values, &b.values, &keys).then(
            (a.index, a.shard, a.addr.segment_ord, a.addr.doc_id).cmp(&(
                b.index,
                b.shard,
                b.addr.segment_ord,
                b.addr.doc_id,
            )),
        )
    });
    let track = score_order || req.track_scores;
    let max_score = if track {
        cands
            .iter()
            .map(|c| c.score)
            .fold(None, |m: Option<f32>, s| Some(m.map_or(s, |m| m.max(s))))
    } else {
        None
    };
    let page: Vec<&Candidate> = cands.iter().skip(req.from).take(req.size).collect();
    let hits = page
        .iter()
        .map(|c| render_hit(c, &plans, req, track, &keys))
        .collect::<EngineResult<Vec<_>>>()?;
    let aggregations = match (&agg_req, &req.aggs) {
        (Some(a), Some(raw)) => Some(aggs::finish(agg_parts, a, raw, &first_mapping)?),
        _ => None,
    };
    let out = SearchOut {
        took: started.elapsed().as_millis() as u64,
        timed_out: false,
        _shards: Shards {
            total: shards,
            successful: shards,
            skipped: 0,
            failed: 0,
        },
        hits: HitsOut {
            total,
            max_score: if cands.is_empty() { None } else { max_score },
            hits,
        },
        aggregations,
    };
    serde_json::to_value(out).map_err(EngineError::internal)
}

fn render_hit(
    c: &Candidate,
    plans: &[Plan<'_>],
    req: &SearchRequest,
    track: bool,
    keys: &[Key],
) -> EngineResult<HitOut> {
    let h = plans[c.index].handle;
    let fields = &h.shards[c.shard].fields;
    let doc: TantivyDocument = c.searcher.doc(c.addr)?;
    let id = doc
        .get_first(fields.id)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    let raw = doc
        .get_first(fields.source)
        .and_then(|v| v.as_bytes())
        .unwrap_or(b"{}");
    let source = match &req.source {
        source::SourceFilter::All => Some(
            RawValue::from_string(String::from_utf8_lossy(raw).into_owned())
                .map_err(EngineError::internal)?,
        ),
        source::SourceFilter::None => None,
        f => {
            let parsed: serde_json::Map<String, Value> =
                serde_json::from_slice(raw).unwrap_or_default();
            let filtered =
                serde_json::to_string(&f.apply(&parsed)).map_err(EngineError::internal)?;
            Some(RawValue::from_string(filtered).map_err(EngineError::internal)?)
        }
    };
    let ff = |name: &str| -> Option<u64> {
        let seg = c.searcher.segment_reader(c.addr.segment_ord);
        seg.fast_fields().u64(name).ok()?.first(c.addr.doc_id)
    };
    let sort = (!is_score_order(&req.sort)).then(|| {
        c.values
            .iter()
            .zip(keys)
            .map(|(v, k)| {
                v.to_json(matches!(
                    k.kind,
                    KeyKind::Num { integer: true, .. } | KeyKind::Doc
                ))
            })
            .collect()
    });
    Ok(HitOut {
        _index: h.name.clone(),
        _type: h.type_name(),
        _id: id,
        _version: if req.version { ff(F_VERSION) } else { None },
        _seq_no: if req.seq_no_primary_term {
            ff(F_SEQ_NO)
        } else {
            None
        },
        _primary_term: if req.seq_no_primary_term {
            Some(1)
        } else {
            None
        },
        _score: track.then_some(c.score),
        _source: source,
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
