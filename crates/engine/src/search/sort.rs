//! `sort`: resolving each requested key (parsed by `sort_spec`) against an index's mapping,
//! and a tantivy collector that keeps the top `from + size` documents by several keys
//! (fields from fast columns, `_score`, `_doc`), with `missing` first or last and the value
//! of a multi-valued field chosen by the key's `mode`. Keyword keys are compared by segment
//! ordinal inside a segment and by string across segments.

use std::cmp::Ordering;

use serde_json::{json, Value};
use std::sync::Arc;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Column, DynamicColumn, NumericalType, StrColumn};
use tantivy::schema::Field;
use tantivy::{DocId, InvertedIndexReader, Score, Searcher, SegmentOrdinal, SegmentReader};

use crate::error::{EngineError, EngineResult};
use crate::mapping::{LeafKind, Mapping};
use crate::store::schema::F_KW;

pub use super::sort_spec::{is_score_order, parse_sort, parse_sort_param, SortMode, SortSpec};

/// A sort key resolved against one index.
#[derive(Debug, Clone)]
pub enum KeyKind {
    Score,
    Doc,
    /// `_shard_doc`.
    ShardDoc,
    /// `_id`, through the `_id` field's term ordinals.
    Id(Field),
    /// `_index`: the index name.
    Const(String),
    Num {
        column: String,
        integer: bool,
        mode: Option<SortMode>,
    },
    Str {
        column: String,
        mode: Option<SortMode>,
    },
    /// Unmapped with `unmapped_type`: every document is missing.
    Missing,
}

/// A resolved key with its order.
#[derive(Debug, Clone)]
pub struct Key {
    pub kind: KeyKind,
    pub desc: bool,
    pub missing_first: bool,
}

/// Resolves `specs` for an index (`id_field`: the schema's `_id`).
pub fn resolve(
    specs: &[SortSpec],
    mapping: &Mapping,
    index: &str,
    id_field: Field,
) -> EngineResult<Vec<Key>> {
    specs
        .iter()
        .map(|s| {
            let kind = match s.field.as_str() {
                "_score" => KeyKind::Score,
                "_doc" => KeyKind::Doc,
                "_shard_doc" => KeyKind::ShardDoc,
                "_id" => KeyKind::Id(id_field),
                "_index" => KeyKind::Const(index.to_string()),
                f => match mapping.field(f) {
                    Some(info) => {
                        crate::aggs::check_not_text(mapping, f)?;
                        // text with fielddata sorts by its tokens, as a keyword would
                        let kind = match info.kind {
                            LeafKind::Text => LeafKind::Keyword,
                            k => k,
                        };
                        field_key(s, kind, index)?
                    }
                    None if s.unmapped_type.is_some() => KeyKind::Missing,
                    None => {
                        return Err(EngineError::QueryShard {
                            reason: format!("No mapping found for [{f}] in order to sort on"),
                            index: index.to_string(),
                        })
                    }
                },
            };
            Ok(Key {
                kind,
                desc: s.desc,
                missing_first: s.missing_first,
            })
        })
        .collect()
}

/// The key of a mapped field, its `mode` and `numeric_type` checked as Elasticsearch does.
fn field_key(s: &SortSpec, kind: LeafKind, index: &str) -> EngineResult<KeyKind> {
    let shard_err = |reason: String| EngineError::QueryShard {
        reason,
        index: index.to_string(),
    };
    let column = format!("{F_KW}.{}", s.field);
    let numeric = !matches!(kind, LeafKind::Text | LeafKind::Keyword | LeafKind::Ip);
    if !numeric && s.mode.is_some_and(SortMode::numeric_only) {
        return Err(shard_err(
            "we only support AVG, MEDIAN and SUM on number based fields".into(),
        ));
    }
    if let (false, Some(_)) = (numeric, &s.numeric_type) {
        return Err(shard_err(format!(
            "[numeric_type] option cannot be set on a non-numeric field, got {}",
            kind.name()
        )));
    }
    let mut integer = kind.int_bounds().is_some() || kind == LeafKind::Date;
    match (s.numeric_type.as_deref(), integer) {
        (None, _) | (Some("long" | "date"), true) => {}
        // integers sort the same as doubles; only their `sort` values print as doubles
        (Some("double"), _) => integer = false,
        (Some(t), _) => {
            return Err(EngineError::IllegalArgument(format!(
                "[numeric_type={t}] on a field of type [{}] is not supported by this engine",
                kind.name()
            )))
        }
    }
    Ok(match kind {
        LeafKind::Text => return Err(EngineError::SearchPhase {
            kind: "illegal_argument_exception".into(),
            reason: format!("Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [{}] in order to load field data by uninverting the inverted index. Note that this can use significant memory.", s.field),
        }),
        LeafKind::Keyword | LeafKind::Ip => KeyKind::Str { column, mode: s.mode },
        _ => KeyKind::Num { column, integer, mode: s.mode },
    })
}

/// How one multi-valued field gives a document its sort value.
#[derive(Debug, Clone, Copy)]
struct Pick {
    mode: SortMode,
    /// Integer fields round `avg` and `median` half up, as Elasticsearch does for longs.
    integer: bool,
}

impl Pick {
    fn new(mode: Option<SortMode>, desc: bool, integer: bool) -> Pick {
        let mode = mode.unwrap_or(if desc { SortMode::Max } else { SortMode::Min });
        Pick { mode, integer }
    }

    /// The value of `vals` (one document's, any order), `None` when there are none.
    fn of(self, vals: impl Iterator<Item = f64>) -> Option<f64> {
        let mut v: Vec<f64> = vals.collect();
        if v.is_empty() {
            return None;
        }
        let round = |x: f64| if self.integer { (x + 0.5).floor() } else { x };
        let n = v.len();
        Some(match self.mode {
            SortMode::Min => v.iter().copied().fold(f64::INFINITY, f64::min),
            SortMode::Max => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            SortMode::Sum => v.iter().sum(),
            SortMode::Avg => round(v.iter().sum::<f64>() / n as f64),
            SortMode::Median => {
                v.sort_by(f64::total_cmp);
                if n % 2 == 1 {
                    v[n / 2]
                } else {
                    round((v[n / 2 - 1] + v[n / 2]) / 2.0)
                }
            }
        })
    }
}

/// A key value of one hit.
#[derive(Debug, Clone, PartialEq)]
pub enum SortValue {
    Num(f64),
    Str(String),
    Missing,
}

impl SortValue {
    /// The value as the hit's `sort` array shows it.
    pub fn to_json(&self, integer: bool) -> Value {
        match self {
            SortValue::Num(n) if integer => json!(*n as i64),
            SortValue::Num(n) => json!(n),
            SortValue::Str(s) => json!(s),
            SortValue::Missing => Value::Null,
        }
    }
}

fn cmp_value(a: &SortValue, b: &SortValue, key: &Key) -> Ordering {
    let ord = match (a, b) {
        (SortValue::Missing, SortValue::Missing) => return Ordering::Equal,
        (SortValue::Missing, _) => {
            return if key.missing_first {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (_, SortValue::Missing) => {
            return if key.missing_first {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (SortValue::Num(x), SortValue::Num(y)) => x.total_cmp(y),
        (SortValue::Str(x), SortValue::Str(y)) => x.cmp(y),
        (SortValue::Num(_), SortValue::Str(_)) => Ordering::Less,
        (SortValue::Str(_), SortValue::Num(_)) => Ordering::Greater,
    };
    if key.desc {
        ord.reverse()
    } else {
        ord
    }
}

/// Compares two key vectors (ties broken by the caller).
pub fn cmp_keys(a: &[SortValue], b: &[SortValue], keys: &[Key]) -> Ordering {
    for ((x, y), k) in a.iter().zip(b).zip(keys) {
        let o = cmp_value(x, y, k);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// A hit kept by [`SortCollector`].
#[derive(Debug, Clone)]
pub struct SortedHit {
    pub segment: SegmentOrdinal,
    pub doc: DocId,
    pub score: Score,
    pub values: Vec<SortValue>,
}

/// Collects the top `limit` documents by `keys`.
#[derive(Debug)]
pub struct SortCollector {
    pub keys: Vec<Key>,
    pub limit: usize,
    /// The first document number of each segment in its shard (for `_doc`).
    pub doc_bases: Vec<u32>,
    /// `_shard_doc`'s high half: the shard's position in the search.
    pub shard_pos: u64,
}

impl SortCollector {
    /// A collector over `searcher`'s segments, for the shard at `shard_pos` of the search.
    pub fn new(keys: Vec<Key>, limit: usize, searcher: &Searcher, shard_pos: usize) -> Self {
        SortCollector {
            keys,
            limit,
            doc_bases: doc_bases(searcher),
            shard_pos: shard_pos as u64,
        }
    }
}

/// The first document number of each segment of `searcher`.
pub fn doc_bases(searcher: &Searcher) -> Vec<u32> {
    let mut base = 0u32;
    searcher
        .segment_readers()
        .iter()
        .map(|r| {
            let b = base;
            base += r.max_doc();
            b
        })
        .collect()
}

/// Per-segment `_id` ordinals (document -> ordinal of its `_id` term), built once per
/// segment and kept for the segments most recently sorted on.
fn id_ordinals(reader: &SegmentReader, field: Field) -> tantivy::Result<Arc<Vec<u32>>> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    type Cache = Mutex<HashMap<tantivy::index::SegmentId, Arc<Vec<u32>>>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = reader.segment_id();
    if let Some(v) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(v.clone());
    }
    let inv = reader.inverted_index(field)?;
    let mut ords = vec![u32::MAX; reader.max_doc() as usize];
    let mut stream = inv.terms().stream()?;
    while stream.advance() {
        let ord = stream.term_ord() as u32;
        let mut postings = inv.read_postings_from_terminfo(
            stream.value(),
            tantivy::schema::IndexRecordOption::Basic,
        )?;
        let mut doc = tantivy::DocSet::doc(&postings);
        while doc != tantivy::TERMINATED {
            ords[doc as usize] = ord;
            doc = tantivy::DocSet::advance(&mut postings);
        }
    }
    let ords = Arc::new(ords);
    let mut c = cache.lock().unwrap_or_else(|p| p.into_inner());
    if c.len() >= 256 {
        c.clear();
    }
    c.insert(key, ords.clone());
    Ok(ords)
}

enum Col {
    Score,
    Doc(u32),
    ShardDoc(u64),
    Id(Arc<Vec<u32>>, Arc<InvertedIndexReader>),
    Const(String),
    Num(Option<Column<f64>>, Pick),
    Bool(Column<bool>, Pick),
    Str(Option<StrColumn>, Pick),
    Missing,
}

/// Per-segment part of [`SortCollector`].
#[allow(missing_debug_implementations)]
pub struct SortSegmentCollector {
    segment: SegmentOrdinal,
    keys: Vec<Key>,
    cols: Vec<Col>,
    limit: usize,
    hits: Vec<(Vec<SortValue>, DocId, Score)>,
}

fn open_num(reader: &SegmentReader, column: &str, pick: Pick) -> tantivy::Result<Col> {
    for h in reader.fast_fields().dynamic_column_handles(column)? {
        match h.open()? {
            DynamicColumn::Bool(c) => return Ok(Col::Bool(c, pick)),
            dc if dc.is_numerical() => {
                if let Some(DynamicColumn::F64(c)) = dc.coerce_numerical(NumericalType::F64) {
                    return Ok(Col::Num(Some(c), pick));
                }
            }
            _ => {}
        }
    }
    Ok(Col::Num(None, pick))
}

/// The value of `doc` in `col` as `pick` chooses it (the first is the only one unless the
/// column is multi-valued).
fn picked<T: PartialOrd + Copy + Send + Sync + std::fmt::Debug + 'static>(
    col: &Column<T>,
    doc: DocId,
    pick: Pick,
    as_f64: impl Fn(T) -> f64,
) -> Option<f64> {
    if col.get_cardinality().is_multivalue() {
        pick.of(col.values_for_doc(doc).map(as_f64))
    } else {
        col.first(doc).map(as_f64)
    }
}

impl Collector for SortCollector {
    type Fruit = Vec<SortedHit>;
    type Child = SortSegmentCollector;

    fn for_segment(
        &self,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<Self::Child> {
        let mut cols = Vec::with_capacity(self.keys.len());
        let base = self.doc_bases.get(segment as usize).copied().unwrap_or(0);
        for k in &self.keys {
            cols.push(match &k.kind {
                KeyKind::Score => Col::Score,
                KeyKind::Doc => Col::Doc(base),
                KeyKind::ShardDoc => Col::ShardDoc((self.shard_pos << 32) + base as u64),
                KeyKind::Id(f) => Col::Id(id_ordinals(reader, *f)?, reader.inverted_index(*f)?),
                KeyKind::Const(s) => Col::Const(s.clone()),
                KeyKind::Missing => Col::Missing,
                KeyKind::Num {
                    column,
                    integer,
                    mode,
                } => open_num(reader, column, Pick::new(*mode, k.desc, *integer))?,
                KeyKind::Str { column, mode } => Col::Str(
                    reader.fast_fields().str(column)?,
                    Pick::new(*mode, k.desc, false),
                ),
            });
        }
        Ok(SortSegmentCollector {
            segment,
            keys: self.keys.clone(),
            cols,
            limit: self.limit,
            hits: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        self.keys.iter().any(|k| matches!(k.kind, KeyKind::Score))
    }

    fn merge_fruits(&self, fruits: Vec<Vec<SortedHit>>) -> tantivy::Result<Vec<SortedHit>> {
        let mut all: Vec<SortedHit> = fruits.into_iter().flatten().collect();
        all.sort_by(|a, b| {
            cmp_keys(&a.values, &b.values, &self.keys)
                .then((a.segment, a.doc).cmp(&(b.segment, b.doc)))
        });
        all.truncate(self.limit);
        Ok(all)
    }
}

impl SortSegmentCollector {
    fn compact(&mut self) {
        // within a segment, keyword ordinals compare like the strings they stand for
        let keys = &self.keys;
        self.hits
            .sort_by(|a, b| cmp_keys(&a.0, &b.0, keys).then(a.1.cmp(&b.1)));
        self.hits.truncate(self.limit);
    }
}

impl SortSegmentCollector {
    /// The key values of `doc` (keyword keys as this segment's ordinals).
    pub fn values(&self, doc: DocId, score: Score) -> Vec<SortValue> {
        self.cols
            .iter()
            .map(|c| match c {
                Col::Score => SortValue::Num(score as f64),
                Col::Doc(base) => SortValue::Num((base + doc) as f64),
                Col::ShardDoc(base) => SortValue::Num((base + doc as u64) as f64),
                Col::Id(ords, _) => match ords.get(doc as usize) {
                    Some(&o) if o != u32::MAX => SortValue::Num(o as f64),
                    _ => SortValue::Missing,
                },
                Col::Const(s) => SortValue::Str(s.clone()),
                Col::Num(Some(col), pick) => {
                    picked(col, doc, *pick, |x| x).map_or(SortValue::Missing, SortValue::Num)
                }
                Col::Bool(col, pick) => picked(col, doc, *pick, |b| b as u8 as f64)
                    .map_or(SortValue::Missing, SortValue::Num),
                // ordinals compare as their strings: the least or greatest of a document's
                Col::Str(Some(col), pick) => picked(col.ords(), doc, *pick, |o| o as f64)
                    .map_or(SortValue::Missing, SortValue::Num),
                Col::Num(None, _) | Col::Str(None, _) | Col::Missing => SortValue::Missing,
            })
            .collect()
    }

    /// Key values with this segment's keyword and `_id` ordinals turned into strings.
    pub fn resolve(&self, mut values: Vec<SortValue>) -> Vec<SortValue> {
        let mut buf = String::new();
        let mut bytes = Vec::new();
        for (v, c) in values.iter_mut().zip(&self.cols) {
            match (c, &v) {
                (Col::Str(Some(col), _), SortValue::Num(o)) => {
                    buf.clear();
                    let found = col.ord_to_str(*o as u64, &mut buf).unwrap_or(false);
                    *v = if found {
                        SortValue::Str(buf.clone())
                    } else {
                        SortValue::Missing
                    };
                }
                (Col::Id(_, inv), SortValue::Num(o)) => {
                    bytes.clear();
                    let found = inv
                        .terms()
                        .ord_to_term(*o as u64, &mut bytes)
                        .unwrap_or(false);
                    *v = if found {
                        SortValue::Str(String::from_utf8_lossy(&bytes).into_owned())
                    } else {
                        SortValue::Missing
                    };
                }
                _ => {}
            }
        }
        values
    }

    /// Keeps `doc` with its key values (from [`Self::values`]) as a candidate.
    pub fn push(&mut self, values: Vec<SortValue>, doc: DocId, score: Score) {
        self.hits.push((values, doc, score));
        if self.hits.len() >= 2 * self.limit + 64 {
            self.compact();
        }
    }
}

impl SegmentCollector for SortSegmentCollector {
    type Fruit = Vec<SortedHit>;

    fn collect(&mut self, doc: DocId, score: Score) {
        let values = self.values(doc, score);
        self.push(values, doc, score);
    }

    fn harvest(mut self) -> Vec<SortedHit> {
        self.compact();
        let hits = std::mem::take(&mut self.hits);
        hits.into_iter()
            .map(|(values, doc, score)| {
                let values = self.resolve(values);
                SortedHit {
                    segment: self.segment,
                    doc,
                    score,
                    values,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_forms() {
        let s = parse_sort(
            &json!(["a", {"b": "desc"}, {"c": {"order": "asc", "missing": "_first"}}, "_score"]),
        )
        .unwrap();
        assert_eq!(s.len(), 4);
        assert!(!s[0].desc && s[1].desc && s[2].missing_first && s[3].desc);
        let p = parse_sort_param("n:desc,_score").unwrap();
        assert!(p[0].desc && p[1].desc);
        assert!(parse_sort(&json!({"a": "sideways"})).is_err());
        assert!(is_score_order(&[]));
    }

    #[test]
    fn missing_goes_last_unless_asked() {
        let k = Key {
            kind: KeyKind::Doc,
            desc: true,
            missing_first: false,
        };
        assert_eq!(
            cmp_value(&SortValue::Missing, &SortValue::Num(1.0), &k),
            Ordering::Greater
        );
        assert_eq!(
            cmp_value(&SortValue::Num(2.0), &SortValue::Num(1.0), &k),
            Ordering::Less
        );
        let k = Key {
            kind: KeyKind::Doc,
            desc: false,
            missing_first: true,
        };
        assert_eq!(
            cmp_value(&SortValue::Missing, &SortValue::Num(1.0), &k),
            Ordering::Less
        );
    }
}
