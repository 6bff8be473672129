//! One page of a scroll over a fixed set of searchers (the context's point-in-time view).
//!
//! The context keeps a cursor, never the hits, so a page costs memory for one page only:
//! - `_doc` order walks the matches in index order (index, shard, segment, document) from
//!   the cursor and stops after `size` live documents; nothing is scored or sorted;
//! - any other order (scores, fields, several keys) runs the query on every shard again and
//!   keeps the `size` best documents strictly after the last one returned, in the total
//!   order (sort keys, then index, shard, segment, document).
//!
//! Must not touch: the scroll registry (ids, expiry, limits), HTTP, the write path.

use std::cmp::Ordering;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::StrColumn;
use tantivy::query::EnableScoring;
use tantivy::{
    DocAddress, DocId, DocSet, Score, Searcher, SegmentOrdinal, SegmentReader, TERMINATED,
};

use super::sort::{
    cmp_keys, Key, KeyKind, SortCollector, SortSegmentCollector, SortValue, SortedHit,
};
use super::{collect_with, Candidate, Plan};
use crate::error::EngineResult;

/// Where a document sits in the total order's tie-break: index, shard, segment, document.
pub(super) type Pos = (usize, usize, SegmentOrdinal, DocId);

/// Where the next page starts.
#[derive(Debug, Clone)]
pub(super) enum Cursor {
    /// `_doc` order: the next position to read (nothing read yet: all zero).
    Doc(Pos),
    /// Sorted: the last hit returned (none yet: `None`).
    After(Option<After>),
}

/// Where a sorted page starts: strictly after these key values; on a tie, after `pos` when
/// given (a scroll's own cursor), else no tied document passes (`search_after`).
#[derive(Debug, Clone)]
pub(super) struct After {
    pub values: Vec<SortValue>,
    pub pos: Option<Pos>,
}

/// The searchers and compiled queries a page runs on.
pub(super) struct View<'a> {
    pub plans: &'a [Plan],
    pub searchers: &'a [Vec<Searcher>],
    /// Merge order of hits (unused in `_doc` order).
    pub keys: &'a [Key],
}

/// The next `size` hits after `cursor`, in order; advances `cursor`.
pub(super) fn next_page(
    view: &View<'_>,
    cursor: &mut Cursor,
    size: usize,
) -> EngineResult<Vec<Candidate>> {
    match cursor {
        Cursor::Doc(pos) => doc_page(view, pos, size),
        Cursor::After(after) => sorted_page(view, after, size),
    }
}

/// `_doc` order: matching live documents from `pos` on, index by index, shard by shard.
fn doc_page(view: &View<'_>, pos: &mut Pos, size: usize) -> EngineResult<Vec<Candidate>> {
    let mut out = Vec::with_capacity(size.min(10_000));
    while out.len() < size && pos.0 < view.plans.len() {
        let Some(searcher) = view.searchers[pos.0].get(pos.1) else {
            *pos = (pos.0 + 1, 0, 0, 0);
            continue;
        };
        let plan = &view.plans[pos.0];
        let weight = plan
            .hits_query
            .weight(EnableScoring::disabled_from_searcher(searcher))?;
        let readers = searcher.segment_readers();
        while out.len() < size && (pos.2 as usize) < readers.len() {
            let reader = &readers[pos.2 as usize];
            let alive = reader.alive_bitset();
            let mut scorer = weight.scorer(reader, 1.0)?;
            let mut doc = scorer.doc();
            if doc < pos.3 {
                doc = scorer.seek(pos.3);
            }
            while doc != TERMINATED && out.len() < size {
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    out.push(Candidate {
                        index: pos.0,
                        shard: pos.1,
                        searcher: searcher.clone(),
                        addr: DocAddress::new(pos.2, doc),
                        score: 0.0,
                        values: vec![SortValue::Num(doc as f64)],
                        group: None,
                    });
                }
                doc = scorer.advance();
            }
            if doc == TERMINATED {
                (pos.2, pos.3) = (pos.2 + 1, 0);
            } else {
                pos.3 = doc;
            }
        }
        if out.len() < size {
            *pos = (pos.0, pos.1 + 1, 0, 0);
        }
    }
    Ok(out)
}

fn pos_of(c: &Candidate) -> Pos {
    (c.index, c.shard, c.addr.segment_ord, c.addr.doc_id)
}

/// Sorted order: the best `size` documents after `after` over every shard.
fn sorted_page(
    view: &View<'_>,
    after: &mut Option<After>,
    size: usize,
) -> EngineResult<Vec<Candidate>> {
    let mut shard_pos = 0;
    let mut cands = Vec::new();
    for (ii, plan) in view.plans.iter().enumerate() {
        let keys = if plan.keys.is_empty() {
            view.keys.to_vec()
        } else {
            plan.keys.clone()
        };
        let scoring = keys.iter().any(|k| matches!(k.kind, KeyKind::Score));
        for (si, searcher) in view.searchers[ii].iter().enumerate() {
            shard_pos += 1;
            let enable = if scoring {
                EnableScoring::enabled_from_searcher(searcher)
            } else {
                EnableScoring::disabled_from_searcher(searcher)
            };
            let weight = plan.hits_query.weight(enable)?;
            let collector = AfterCollector {
                inner: SortCollector::new(keys.clone(), size, searcher, shard_pos - 1),
                after: after.clone(),
                shard: (ii, si),
            };
            for h in collect_with(searcher, &*weight, &collector)? {
                cands.push(Candidate {
                    index: ii,
                    shard: si,
                    searcher: searcher.clone(),
                    addr: DocAddress::new(h.segment, h.doc),
                    score: h.score,
                    values: h.values,
                    group: None,
                });
            }
        }
    }
    cands.sort_by(|a, b| cmp_keys(&a.values, &b.values, view.keys).then(pos_of(a).cmp(&pos_of(b))));
    cands.truncate(size);
    if let Some(last) = cands.last() {
        *after = Some(After {
            values: last.values.clone(),
            pos: Some(pos_of(last)),
        });
    }
    Ok(cands)
}

/// A [`SortCollector`] that only keeps documents after a cursor.
pub(super) struct AfterCollector {
    pub inner: SortCollector,
    pub after: Option<After>,
    pub shard: (usize, usize),
}

/// The cursor as one segment sees it: keyword values turned into that segment's ordinal
/// space, and which documents pass when every key ties.
struct SegmentAfter {
    values: Vec<SortValue>,
    /// On a tie, documents from this one on pass (`None`: none pass).
    tie_from: Option<DocId>,
}

/// Per-segment part of [`AfterCollector`].
pub(super) struct AfterSegment {
    inner: SortSegmentCollector,
    keys: Vec<Key>,
    after: Option<SegmentAfter>,
}

/// `s` as a number comparable with the ordinals of a term dictionary: its ordinal when the
/// dictionary has it, else halfway below the first larger term. (A macro: the fast-field
/// and inverted-index dictionaries are different types with the same streaming methods.)
macro_rules! virtual_ord {
    ($dict:expr, $s:expr) => {{
        let dict = $dict;
        let mut stream = dict.range().ge($s.as_bytes()).into_stream()?;
        if !stream.advance() {
            dict.num_terms() as f64 - 0.5
        } else if stream.key() == $s.as_bytes() {
            stream.term_ord() as f64
        } else {
            stream.term_ord() as f64 - 0.5
        }
    }};
}

/// [`virtual_ord!`] in a keyword column's dictionary.
fn virtual_ord(col: &StrColumn, s: &str) -> std::io::Result<f64> {
    Ok(virtual_ord!(col.dictionary(), s))
}

/// [`virtual_ord!`] in an inverted index's term dictionary.
fn virtual_ord_in(dict: &tantivy::termdict::TermDictionary, s: &str) -> std::io::Result<f64> {
    Ok(virtual_ord!(dict, s))
}

impl AfterCollector {
    fn segment_after(
        &self,
        seg: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<Option<SegmentAfter>> {
        let Some(After { values, pos }) = &self.after else {
            return Ok(None);
        };
        let mut local = Vec::with_capacity(values.len());
        for (v, k) in values.iter().zip(&self.inner.keys) {
            local.push(match (v, &k.kind) {
                (SortValue::Str(s), KeyKind::Str { column, .. }) => {
                    match reader.fast_fields().str(column)? {
                        Some(col) => SortValue::Num(virtual_ord(&col, s)?),
                        // no value in this segment: every document is missing
                        None => SortValue::Num(0.0),
                    }
                }
                (SortValue::Str(s), KeyKind::Id(field)) => {
                    let inv = reader.inverted_index(*field)?;
                    SortValue::Num(virtual_ord_in(inv.terms(), s)?)
                }
                _ => v.clone(),
            });
        }
        let here = (self.shard.0, self.shard.1, seg);
        let tie_from = match pos {
            None => None,
            Some(pos) => match here.cmp(&(pos.0, pos.1, pos.2)) {
                Ordering::Less => None,
                Ordering::Equal => pos.3.checked_add(1),
                Ordering::Greater => Some(0),
            },
        };
        Ok(Some(SegmentAfter {
            values: local,
            tie_from,
        }))
    }
}

impl Collector for AfterCollector {
    type Fruit = Vec<SortedHit>;
    type Child = AfterSegment;

    fn for_segment(
        &self,
        seg: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<AfterSegment> {
        Ok(AfterSegment {
            inner: self.inner.for_segment(seg, reader)?,
            keys: self.inner.keys.clone(),
            after: self.segment_after(seg, reader)?,
        })
    }

    fn requires_scoring(&self) -> bool {
        self.inner.requires_scoring()
    }

    fn merge_fruits(&self, fruits: Vec<Vec<SortedHit>>) -> tantivy::Result<Vec<SortedHit>> {
        self.inner.merge_fruits(fruits)
    }
}

impl SegmentCollector for AfterSegment {
    type Fruit = Vec<SortedHit>;

    fn collect(&mut self, doc: DocId, score: Score) {
        let values = self.inner.values(doc, score);
        if let Some(a) = &self.after {
            let passes = match cmp_keys(&values, &a.values, &self.keys) {
                Ordering::Greater => true,
                Ordering::Equal => a.tie_from.is_some_and(|from| doc >= from),
                Ordering::Less => false,
            };
            if !passes {
                return;
            }
        }
        self.inner.push(values, doc, score);
    }

    fn harvest(self) -> Vec<SortedHit> {
        self.inner.harvest()
    }
}
