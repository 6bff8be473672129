//! `collapse` on a keyword field: of all hits sharing a value, only the best (in the
//! search's order) is returned, with the value in the hit's `fields`. Each segment keeps its
//! best document per value (by the value's ordinal), the shards' bests are merged by value,
//! and `hits.total` still counts every matching document, as in Elasticsearch.
//! Documents without a value form one group.
//!
//! Must not touch: HTTP, rendering.

use std::cmp::Ordering;
use std::collections::HashMap;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::StrColumn;
use tantivy::{DocAddress, DocId, Score, Searcher, SegmentOrdinal, SegmentReader};

use super::sort::{cmp_keys, Key, KeyKind, SortCollector, SortSegmentCollector, SortValue};
use super::{Candidate, Plan, ShardAt, ShardJob};
use crate::error::{EngineError, EngineResult};
use crate::mapping::LeafKind;
use crate::store::index::IndexHandle;
use crate::store::schema::F_KW;

/// Checks that `field` can be collapsed on in `h`.
pub(super) fn check_field(h: &IndexHandle, field: &str) -> EngineResult<()> {
    match h.mapping().field(field).map(|f| f.kind) {
        Some(LeafKind::Keyword) => Ok(()),
        Some(LeafKind::Text) => Err(EngineError::SearchPhase {
            kind: "illegal_argument_exception".into(),
            reason: format!("cannot collapse on field `{field}` without `doc_values`"),
        }),
        Some(k) => Err(EngineError::IllegalArgument(format!(
            "collapse on a field of type [{}] is not supported by this engine; use a keyword field",
            k.name()
        ))),
        None => Err(EngineError::SearchPhase {
            kind: "illegal_argument_exception".into(),
            reason: format!("no mapping found for `{field}` in order to collapse on"),
        }),
    }
}

struct GroupCollector {
    inner: SortCollector,
    column: String,
}

struct GroupSegment {
    inner: SortSegmentCollector,
    keys: Vec<Key>,
    col: Option<StrColumn>,
    /// Group ordinal (None: no value) -> best (values, doc, score).
    best: HashMap<Option<u64>, (Vec<SortValue>, DocId, Score)>,
}

/// A group's best hit of one segment: (value, segment, doc, score, key values).
type GroupHit = (Option<String>, SegmentOrdinal, DocId, Score, Vec<SortValue>);

impl Collector for GroupCollector {
    type Fruit = Vec<GroupHit>;
    type Child = GroupSegmentWithOrd;

    fn for_segment(
        &self,
        seg: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<GroupSegmentWithOrd> {
        Ok(GroupSegmentWithOrd {
            seg,
            g: GroupSegment {
                inner: self.inner.for_segment(seg, reader)?,
                keys: self.inner.keys.clone(),
                col: reader.fast_fields().str(&self.column)?,
                best: HashMap::new(),
            },
        })
    }

    fn requires_scoring(&self) -> bool {
        self.inner.requires_scoring()
    }

    fn merge_fruits(&self, fruits: Vec<Vec<GroupHit>>) -> tantivy::Result<Vec<GroupHit>> {
        Ok(fruits.into_iter().flatten().collect())
    }
}

/// [`GroupSegment`] with its segment ordinal.
struct GroupSegmentWithOrd {
    seg: SegmentOrdinal,
    g: GroupSegment,
}

impl SegmentCollector for GroupSegmentWithOrd {
    type Fruit = Vec<GroupHit>;

    fn collect(&mut self, doc: DocId, score: Score) {
        let g = &mut self.g;
        let values = g.inner.values(doc, score);
        let ord = g.col.as_ref().and_then(|c| c.ords().first(doc));
        let better = match g.best.get(&ord) {
            None => true,
            Some((v, d, _)) => cmp_keys(&values, v, &g.keys).then(doc.cmp(d)) == Ordering::Less,
        };
        if better {
            g.best.insert(ord, (values, doc, score));
        }
    }

    fn harvest(self) -> Vec<GroupHit> {
        let GroupSegment {
            inner, col, best, ..
        } = self.g;
        let mut buf = String::new();
        let mut out = Vec::with_capacity(best.len());
        for (ord, (values, doc, score)) in best {
            let value = match (ord, &col) {
                (Some(o), Some(c)) => {
                    buf.clear();
                    c.ord_to_str(o, &mut buf)
                        .ok()
                        .filter(|f| *f)
                        .map(|_| buf.clone())
                }
                _ => None,
            };
            // keyword sort keys: this segment's ordinals as strings
            out.push((value, self.seg, doc, score, inner.resolve(values)));
        }
        out
    }
}

/// The best hit of every group of one shard, and the shard's total.
pub(super) fn search_shard(
    p: &Plan,
    searcher: &Searcher,
    at: ShardAt,
    job: &ShardJob<'_>,
    field: &str,
) -> EngineResult<(u64, Vec<Candidate>)> {
    let score_key = [Key {
        kind: KeyKind::Score,
        desc: true,
        missing_first: false,
    }];
    let keys: &[Key] = if job.score_order {
        &score_key
    } else {
        job.keys
    };
    let scoring = keys.iter().any(|k| matches!(k.kind, KeyKind::Score));
    let (weight, total) = super::weight_and_total(p, searcher, scoring)?;
    let collector = GroupCollector {
        inner: SortCollector::new(keys.to_vec(), job.limit, searcher, at.pos),
        column: format!("{F_KW}.{field}"),
    };
    let hits = super::collect_with(searcher, &*weight, &collector)?;
    let searcher = searcher.clone();
    Ok((
        total,
        hits.into_iter()
            .map(|(value, seg, doc, score, values)| Candidate {
                index: at.index,
                shard: at.shard,
                searcher: searcher.clone(),
                addr: DocAddress::new(seg, doc),
                score,
                values,
                group: Some(value.map_or(SortValue::Missing, SortValue::Str)),
            })
            .collect(),
    ))
}

/// Keeps the first (best, the candidates being sorted) hit of each group.
pub(super) fn dedupe(cands: &mut Vec<Candidate>) {
    let mut seen = std::collections::HashSet::new();
    cands.retain(|c| {
        let key = match &c.group {
            Some(SortValue::Str(s)) => Some(s.clone()),
            _ => None,
        };
        seen.insert(key)
    });
}
