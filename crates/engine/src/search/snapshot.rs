//! The documents a by-query request works on (`_delete_by_query`, `_update_by_query`,
//! `_reindex`): every live match of the query, in index order, read from one point-in-time
//! view of the shards, with the `_seq_no` and `_version` each had then (so a concurrent
//! change shows as a version conflict, as in Elasticsearch).
//!
//! Must not touch: writes (the caller applies them), HTTP.

use std::sync::Arc;

use tantivy::query::EnableScoring;
use tantivy::schema::Value as _;
use tantivy::{DocAddress, DocSet, TantivyDocument, TERMINATED};

use super::{current_views, now_ms, plan, routed_views, SearchRequest, Views};
use crate::error::EngineResult;
use crate::store::index::IndexHandle;
use crate::store::schema::{F_SEQ_NO, F_VERSION};

/// The matches of a query over a fixed view.
pub struct Snapshot {
    pub indices: Vec<Arc<IndexHandle>>,
    views: Views,
    /// (index, shard, address) of each match, in index order.
    pub docs: Vec<(usize, usize, DocAddress)>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("docs", &self.docs.len())
            .finish()
    }
}

/// A matching document read back.
#[derive(Debug, Clone)]
pub struct SnapDoc {
    pub index: Arc<IndexHandle>,
    pub id: String,
    pub seq_no: i64,
    pub version: u64,
    pub source: Vec<u8>,
    /// The `_routing` it was written with (its writes go to the same shard).
    pub routing: Option<String>,
}

/// Takes the view and lists the matches of `req.query` (at most `max_docs`).
pub fn snapshot(
    indices: &[Arc<IndexHandle>],
    req: &SearchRequest,
    max_docs: Option<usize>,
) -> EngineResult<Snapshot> {
    let views = routed_views(indices, &current_views(indices), req);
    let now = now_ms();
    let limit = max_docs.unwrap_or(usize::MAX);
    let mut docs = Vec::new();
    'outer: for (ii, h) in indices.iter().enumerate() {
        let p = plan(h, req, now)?;
        for (si, searcher) in views[ii].iter().enumerate() {
            let weight = p
                .hits_query
                .weight(EnableScoring::disabled_from_searcher(searcher))?;
            for (so, reader) in searcher.segment_readers().iter().enumerate() {
                let alive = reader.alive_bitset();
                let mut scorer = weight.scorer(reader, 1.0)?;
                let mut doc = scorer.doc();
                while doc != TERMINATED {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        if docs.len() >= limit {
                            break 'outer;
                        }
                        docs.push((ii, si, DocAddress::new(so as u32, doc)));
                    }
                    doc = scorer.advance();
                }
            }
        }
    }
    Ok(Snapshot {
        indices: indices.to_vec(),
        views,
        docs,
    })
}

impl Snapshot {
    /// The `n`th match: id, `_seq_no`, `_version` and source as of the view.
    pub fn doc(&self, n: usize) -> EngineResult<SnapDoc> {
        let (ii, si, addr) = self.docs[n];
        let h = &self.indices[ii];
        let searcher = &self.views[ii][si];
        let fields = &h.shards[si].fields;
        let doc: TantivyDocument = searcher.doc(addr)?;
        let id = doc
            .get_first(fields.id)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string();
        let source = doc
            .get_first(fields.source)
            .and_then(|v| v.as_bytes())
            .unwrap_or(b"{}")
            .to_vec();
        let routing = crate::store::lookup::routing_in(&doc, fields);
        let seg = searcher.segment_reader(addr.segment_ord);
        let ff = |name: &str| -> u64 {
            seg.fast_fields()
                .u64(name)
                .ok()
                .and_then(|c| c.first(addr.doc_id))
                .unwrap_or(0)
        };
        Ok(SnapDoc {
            index: h.clone(),
            id,
            seq_no: ff(F_SEQ_NO) as i64,
            version: ff(F_VERSION),
            source,
            routing,
        })
    }
}
