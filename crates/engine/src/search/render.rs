//! The search response: `took`, `timed_out`, `_shards`, `hits` (`total` as
//! `track_total_hits` and `rest_total_hits_as_int` ask, `max_score`, the hits with their
//! `_source`, `fields` of a collapse, `highlight` and `sort` values) and `aggregations`.
//!
//! Must not touch: searching (the page is given), HTTP.

use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Value};
use tantivy::query::EnableScoring;
use tantivy::schema::Value as _;
use tantivy::{DocSet, TantivyDocument};

use super::highlight::highlight_hit;
use super::sort::{is_score_order, Key, KeyKind};
use super::{source, Candidate, Plan, SearchRequest};
use crate::error::{EngineError, EngineResult};
use crate::store::schema::{F_SEQ_NO, F_VERSION};

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
    _routing: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    _source: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fields: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    highlight: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sort: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    matched_queries: Vec<String>,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<Value>,
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

/// One page of hits and what the response says about the whole search.
pub(super) struct Page<'a> {
    pub started: Instant,
    pub shards: usize,
    pub total: u64,
    pub max_score: Option<f32>,
    pub hits: &'a [Candidate],
    pub aggregations: Option<Value>,
}

/// The response body of a page.
pub(super) fn render_page(
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
            total: req.total_json(page.total),
            max_score: page.max_score,
            hits,
        },
        // no shard searched (a pattern that matches no index): Elasticsearch's empty
        // response, without `aggregations`
        aggregations: page.aggregations.filter(|_| page.shards > 0),
    };
    serde_json::to_value(out).map_err(EngineError::internal)
}

/// The `_source` of a hit as the request asks for it. (The page becomes a `Value`, so the
/// source is read into one here; serde_json's `raw_value` feature stays off, see the
/// `reads_serde_json_magic_keys_as_plain_keys` test in `engine::api`.)
fn render_source(raw: &[u8], filter: &source::SourceFilter) -> EngineResult<Option<Value>> {
    match filter {
        source::SourceFilter::None => Ok(None),
        source::SourceFilter::All => serde_json::from_str(&String::from_utf8_lossy(raw))
            .map(Some)
            .map_err(EngineError::internal),
        f => {
            let parsed: serde_json::Map<String, Value> =
                serde_json::from_slice(raw).unwrap_or_default();
            Ok(Some(Value::Object(f.apply(&parsed))))
        }
    }
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
    let integer = |k: &Key| {
        matches!(
            k.kind,
            KeyKind::Num { integer: true, .. } | KeyKind::Doc | KeyKind::ShardDoc
        )
    };
    let sort = (!req.sort.is_empty()).then(|| {
        c.values
            .iter()
            .zip(keys)
            .map(|(v, k)| v.to_json(integer(k)))
            .collect()
    });
    let highlight = match &req.highlight {
        Some(hl) => {
            let src: serde_json::Map<String, Value> =
                serde_json::from_slice(raw).unwrap_or_default();
            highlight_hit(hl, &req.query, &h.mapping(), &src)
        }
        None => None,
    };
    let fields_out = match (&req.collapse, &c.group) {
        (Some(f), Some(g)) => Some(json!({ f.as_str(): [g.to_json(false)] })),
        _ => None,
    };
    let seq = req.seq_no_primary_term;
    let filter = if req.stored_fields_none {
        &source::SourceFilter::None
    } else {
        &req.source
    };
    Ok(HitOut {
        _index: h.name.clone(),
        _type: h.type_name(),
        _id: id.to_string(),
        _version: if req.version { ff(F_VERSION) } else { None },
        _seq_no: if seq { ff(F_SEQ_NO) } else { None },
        _primary_term: seq.then_some(1),
        _score: track.then_some(c.score),
        _routing: crate::store::lookup::routing_in(&doc, fields),
        _source: render_source(raw, filter)?,
        fields: fields_out,
        highlight,
        sort,
        matched_queries: matched_queries(c, &plans[c.index])?,
    })
}

/// `matched_queries`: the names of the request's named queries that match the hit, each
/// once, sorted (Elasticsearch lists the names of its named-query map).
fn matched_queries(c: &Candidate, plan: &Plan) -> EngineResult<Vec<String>> {
    let mut out = Vec::new();
    let segment = c.searcher.segment_reader(c.addr.segment_ord);
    for (name, q) in &plan.named {
        if out.contains(name) {
            continue;
        }
        let weight = q.weight(EnableScoring::disabled_from_searcher(&c.searcher))?;
        let mut scorer = weight.scorer(segment, 1.0)?;
        let doc = c.addr.doc_id;
        if scorer.doc() == doc || (scorer.doc() < doc && scorer.seek(doc) == doc) {
            out.push(name.clone());
        }
    }
    out.sort();
    Ok(out)
}
