//! Document -> indexed values: walks a JSON source against a mapping, coerces each value to
//! its field's type (refusing what does not fit, as Elasticsearch's mappers do), and adds
//! dynamic mappings for new fields (long, double, boolean, date, text + keyword, object).
//!
//! Pure: returns the values to index and, when fields were added, the grown mapping. The
//! caller installs that mapping (durably) before the document is acknowledged.

use serde_json::{json, Map, Value};

use super::coerce::{convert, Converted, KwValue};
use super::date::detect_date;
use super::{
    join, parse, Dynamic, LeafKind, LeafMapping, Mapping, ObjectMapping, Property, MAX_DEPTH,
    MAX_TOTAL_FIELDS,
};
use crate::error::{EngineError, EngineResult};

/// What one document contributes to the index.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct IndexedDoc {
    /// Keyword, numeric, date (epoch ms) and boolean values by path.
    pub keywords: Vec<(String, KwValue)>,
    /// Text of fields without a dedicated slot, by path.
    pub texts: Vec<(String, String)>,
    /// Text of fields with a dedicated slot.
    pub slot_texts: Vec<(u8, String)>,
    /// Text paths holding at least one value (for `exists`; other paths have fast-field
    /// columns), sorted, without duplicates.
    pub field_names: Vec<String>,
    /// The `_routing` value the document was written with (stored with it; set by the
    /// write path, not by mapping).
    pub routing: Option<String>,
}

/// Maps `source` (a JSON object) for document `id` of `index`. Returns the values to index
/// and the grown mapping when dynamic fields were added: at most [`MAX_TOTAL_FIELDS`]
/// fields, objects at most [`MAX_DEPTH`] deep (Elasticsearch's defaults of
/// `index.mapping.total_fields.limit` and `index.mapping.depth.limit`; a hundred thousand
/// new fields in one document took the engine minutes, issue 25).
pub fn map_document(
    index: &str,
    mapping: &Mapping,
    source: &Map<String, Value>,
    id: &str,
) -> EngineResult<(IndexedDoc, Option<Mapping>)> {
    let mut mapper = Mapper {
        base: mapping,
        updated: None,
        index,
        id,
        copying: false,
    };
    let mut out = IndexedDoc::default();
    mapper.object(&mut out, "", source)?;
    out.field_names.sort_unstable();
    out.field_names.dedup();
    Ok((out, mapper.updated))
}

struct Mapper<'a> {
    base: &'a Mapping,
    updated: Option<Mapping>,
    index: &'a str,
    id: &'a str,
    /// Inside a `copy_to`: the target's own `copy_to` is not followed (not transitive).
    copying: bool,
}

enum Found {
    Leaf,
    Object { enabled: bool },
    Missing,
}

impl Mapper<'_> {
    fn current(&self) -> &Mapping {
        self.updated.as_ref().unwrap_or(self.base)
    }

    fn object(
        &mut self,
        out: &mut IndexedDoc,
        prefix: &str,
        obj: &Map<String, Value>,
    ) -> EngineResult<()> {
        for (key, val) in obj {
            if key.trim().is_empty() || key.split('.').any(str::is_empty) {
                return Err(EngineError::mapper(format!(
                    "field name cannot be an empty string or contain empty path segments: [{key}]"
                )));
            }
            if prefix.is_empty() {
                refuse_metadata(key)?;
            }
            self.value(out, &join(prefix, key), val)?;
        }
        Ok(())
    }

    fn value(&mut self, out: &mut IndexedDoc, path: &str, val: &Value) -> EngineResult<()> {
        let found = match self.current().property(path) {
            Some(Property::Leaf(_)) => Found::Leaf,
            Some(Property::Object(o)) => Found::Object { enabled: o.enabled },
            None => Found::Missing,
        };
        match found {
            Found::Leaf => {
                let m = self.current();
                let Some(Property::Leaf(l)) = m.property(path) else {
                    unreachable!("checked above")
                };
                index_leaf(out, m, l, path, val, self.id)?;
                if self.copying || l.opts.copy_to.is_empty() {
                    return Ok(());
                }
                let targets = l.opts.copy_to.clone();
                self.copy_to(out, &targets, val)
            }
            Found::Object { enabled } => self.descend(out, path, val, enabled),
            Found::Missing => self.dynamic(out, path, val),
        }
    }

    /// `copy_to`: the value as the document gave it is parsed again by each target (a mapped
    /// leaf or multi-field, or a field added as dynamic mapping would add it); `_source` is
    /// untouched, as in Elasticsearch's `DocumentParser.parseCopy`.
    fn copy_to(
        &mut self,
        out: &mut IndexedDoc,
        targets: &[String],
        val: &Value,
    ) -> EngineResult<()> {
        self.copying = true;
        let result = targets.iter().try_for_each(|t| {
            let m = self.current();
            match m.leaf_at(t) {
                Some(l) => index_leaf(out, m, l, t, val, self.id),
                None => self.value(out, t, val),
            }
        });
        self.copying = false;
        result
    }

    fn descend(
        &mut self,
        out: &mut IndexedDoc,
        path: &str,
        val: &Value,
        enabled: bool,
    ) -> EngineResult<()> {
        if !enabled {
            return Ok(());
        }
        match val {
            Value::Object(o) => self.object(out, path, o),
            Value::Array(items) => {
                for v in items {
                    self.descend(out, path, v, enabled)?;
                }
                Ok(())
            }
            Value::Null => Ok(()),
            _ => Err(EngineError::mapper(format!(
                "object mapping for [{path}] tried to parse field [{}] as object, but found a concrete value",
                last_segment(path)
            ))),
        }
    }

    fn dynamic(&mut self, out: &mut IndexedDoc, path: &str, val: &Value) -> EngineResult<()> {
        let parent = parent_path(path);
        match self.current().dynamic_at(parent) {
            Dynamic::False => return Ok(()),
            Dynamic::Strict => {
                return Err(EngineError::StrictDynamic {
                    field: last_segment(path).to_string(),
                    object: if parent.is_empty() {
                        "_doc".into()
                    } else {
                        parent.to_string()
                    },
                })
            }
            Dynamic::True => {}
        }
        let Some(prop) = infer(self.current(), val) else {
            return Ok(()); // null or empty array: nothing to map yet
        };
        if path.split('.').count() > MAX_DEPTH {
            return Err(EngineError::IllegalArgument(format!(
                "Limit of mapping depth [{MAX_DEPTH}] in index [{}] has been exceeded due to object field [{parent}]",
                self.index
            )));
        }
        if self.current().total_fields() >= MAX_TOTAL_FIELDS {
            return Err(EngineError::IllegalArgument(format!(
                "Limit of total fields [{MAX_TOTAL_FIELDS}] in index [{}] has been exceeded",
                self.index
            )));
        }
        let m = self.updated.get_or_insert_with(|| self.base.clone());
        let obj = m.object_mut(parent).ok_or_else(|| {
            EngineError::mapper(format!(
                "Could not dynamically add mapping for field [{path}]. Existing mapping for [{parent}] must be of type object but found a concrete field type."
            ))
        })?;
        obj.properties.insert(last_segment(path).to_string(), prop);
        m.reindex();
        self.value(out, path, val)
    }
}

/// A root key of a document naming a metadata field is refused as Elasticsearch 7.10's
/// `DocumentParser` refuses it; a dotted key under one (`_index.x`) would make the metadata
/// name an object, which its `MappingLookup` refuses.
fn refuse_metadata(key: &str) -> EngineResult<()> {
    if super::METADATA_FIELDS.contains(&key) {
        return Err(EngineError::mapper(format!(
            "Field [{key}] is a metadata field and cannot be added inside a document. Use the index API request parameters."
        )));
    }
    if super::under_metadata(key) {
        let root = key.split('.').next().unwrap_or(key);
        return Err(EngineError::mapper(format!(
            "Field [{root}] is defined both as an object and a field"
        )));
    }
    Ok(())
}

fn parent_path(path: &str) -> &str {
    path.rfind('.').map_or("", |i| &path[..i])
}

fn last_segment(path: &str) -> &str {
    path.rfind('.').map_or(path, |i| &path[i + 1..])
}

/// The dynamic mapping for a new field holding `val` (Elasticsearch 7.10 rules, with
/// floating point numbers mapped as `double`).
fn infer(m: &Mapping, val: &Value) -> Option<Property> {
    let leaf = |v: Value| -> Property {
        let obj = v.as_object().expect("literal object");
        let kind = LeafKind::from_name(obj["type"].as_str().expect("type")).expect("known type");
        Property::Leaf(
            parse::parse_leaf(kind, obj, "", &m.analysis).expect("valid dynamic mapping"),
        )
    };
    match val {
        Value::Null => None,
        Value::Array(items) => items
            .iter()
            .find(|v| !v.is_null())
            .and_then(|v| infer(m, v)),
        Value::Object(_) => Some(Property::Object(ObjectMapping::dynamic_object())),
        Value::Bool(_) => Some(leaf(json!({"type": "boolean"}))),
        Value::Number(n) if n.is_i64() => Some(leaf(json!({"type": "long"}))),
        Value::Number(_) => Some(leaf(json!({"type": "double"}))),
        Value::String(s) => {
            if m.date_detection && detect_date(s).is_some() {
                return Some(leaf(json!({"type": "date"})));
            }
            if m.numeric_detection {
                if s.parse::<i64>().is_ok() {
                    return Some(leaf(json!({"type": "long"})));
                }
                if s.parse::<f64>().is_ok() {
                    return Some(leaf(json!({"type": "double"})));
                }
            }
            Some(leaf(json!({"type": "text",
                "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}})))
        }
    }
}

fn index_leaf(
    out: &mut IndexedDoc,
    m: &Mapping,
    l: &LeafMapping,
    path: &str,
    val: &Value,
    id: &str,
) -> EngineResult<()> {
    if l.kind == LeafKind::Unindexed {
        return Ok(()); // kept in _source only
    }
    match val {
        Value::Array(items) => {
            for v in items {
                index_leaf(out, m, l, path, v, id)?;
            }
            Ok(())
        }
        Value::Null => match &l.opts.null_value {
            Some(nv) => index_scalar(out, m, l, path, nv, id),
            None => Ok(()),
        },
        Value::Object(_) => Err(EngineError::MapperParsing {
            reason: format!(
                "failed to parse field [{path}] of type [{}] in document with id '{id}'. Preview of field's value: '{val}'",
                l.kind.name()
            ),
            cause: Some((
                "illegal_state_exception".into(),
                "Can't get text on a START_OBJECT".into(),
            )),
        }),
        _ => index_scalar(out, m, l, path, val, id),
    }
}

fn index_scalar(
    out: &mut IndexedDoc,
    m: &Mapping,
    l: &LeafMapping,
    path: &str,
    val: &Value,
    id: &str,
) -> EngineResult<()> {
    let converted = match convert(l, path, val, id) {
        Ok(c) => c,
        Err(_) if l.opts.ignore_malformed => Converted::Skip,
        Err(e) => return Err(e),
    };
    match converted {
        Converted::Text(s) => {
            out.field_names.push(path.to_string());
            if l.opts.fielddata {
                fielddata(out, l, path, &s);
            }
            if l.opts.index {
                match m.field(path).and_then(|f| f.slot) {
                    Some(slot) => out.slot_texts.push((slot, s)),
                    None => out.texts.push((path.to_string(), s)),
                }
            }
        }
        Converted::Kw(KwValue::Str(s)) if l.opts.normalizer.is_some() => {
            let n = l.opts.normalizer.as_ref().expect("checked");
            out.keywords
                .push((path.to_string(), KwValue::Str(n.normalize(&s))));
        }
        Converted::Kw(v) => {
            out.keywords.push((path.to_string(), v));
        }
        Converted::Skip => {}
    }
    for (sub, sl) in &l.fields {
        index_scalar(out, m, sl, &join(path, sub), val, id)?;
    }
    Ok(())
}

/// `fielddata: true`: the tokens of a text value also go to the text path's column (once per
/// document), where aggregations and sorting read them, as Elasticsearch un-inverts them.
fn fielddata(out: &mut IndexedDoc, l: &LeafMapping, path: &str, text: &str) {
    for t in l.opts.analyzer.token_texts(text) {
        let v = (path.to_string(), KwValue::Str(t));
        if !out.keywords.contains(&v) {
            out.keywords.push(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn mapping(v: Value) -> Mapping {
        super::super::parse::parse_root(&v, &Default::default()).unwrap()
    }

    #[test]
    fn dynamic_types_follow_elasticsearch() {
        let m = Mapping::default();
        let doc = src(json!({"n": 1, "f": 1.5, "b": true, "d": "2015-01-01",
            "s": "hello", "o": {"x": 1}, "a": [1, 2], "nil": null, "e": []}));
        let (_, grown) = map_document("i", &m, &doc, "1").unwrap();
        let g = grown.unwrap();
        assert_eq!(g.field("n").unwrap().kind, LeafKind::Long);
        assert_eq!(g.field("f").unwrap().kind, LeafKind::Double);
        assert_eq!(g.field("b").unwrap().kind, LeafKind::Boolean);
        assert_eq!(g.field("d").unwrap().kind, LeafKind::Date);
        assert_eq!(g.field("s").unwrap().kind, LeafKind::Text);
        assert_eq!(g.field("s.keyword").unwrap().kind, LeafKind::Keyword);
        assert_eq!(g.field("o.x").unwrap().kind, LeafKind::Long);
        assert_eq!(g.field("a").unwrap().kind, LeafKind::Long);
        assert!(g.property("nil").is_none());
        assert!(g.property("e").is_none());
    }

    #[test]
    fn values_are_converted() {
        let m = mapping(json!({"properties": {
            "n": {"type": "long"}, "t": {"type": "text", "fields": {"k": {"type": "keyword"}}},
            "d": {"type": "date"}, "b": {"type": "boolean"}}}));
        let (doc, grown) = map_document(
            "i",
            &m,
            &src(json!({"n": "42", "t": "Hi there",
            "d": "1970-01-01T00:00:01Z", "b": "true"})),
            "1",
        )
        .unwrap();
        assert!(grown.is_none());
        assert!(doc.keywords.contains(&("n".into(), KwValue::I64(42))));
        assert!(doc
            .keywords
            .contains(&("t.k".into(), KwValue::Str("Hi there".into()))));
        assert!(doc.keywords.contains(&("d".into(), KwValue::I64(1000))));
        assert!(doc.keywords.contains(&("b".into(), KwValue::Bool(true))));
        assert_eq!(doc.slot_texts, vec![(0, "Hi there".to_string())]);
        assert_eq!(doc.field_names, vec!["t"]);
    }

    // spec 2.2 / 7: a string in a long field is refused with mapper_parsing_exception
    // caused by number_format_exception
    #[test]
    fn string_in_long_field_is_refused() {
        let m = mapping(json!({"properties": {"n": {"type": "long"}}}));
        let e = map_document("i", &m, &src(json!({"n": "abc"})), "7").unwrap_err();
        let b = e.body();
        assert_eq!(b.status, 400);
        assert_eq!(b.kind, "mapper_parsing_exception");
        assert_eq!(b.caused_by.as_ref().unwrap().0, "number_format_exception");
        assert!(b
            .reason
            .contains("failed to parse field [n] of type [long] in document with id '7'"));
    }

    #[test]
    fn other_type_mismatches() {
        let m = mapping(
            json!({"properties": {"n": {"type": "byte"}, "b": {"type": "boolean"},
            "d": {"type": "date"}, "o": {"properties": {"x": {"type": "long"}}},
            "i": {"type": "integer", "coerce": false}}}),
        );
        let err = |v: Value| map_document("i", &m, &src(v), "1").unwrap_err().body();
        assert!(err(json!({"n": 300}))
            .caused_by
            .unwrap()
            .1
            .contains("out of range for a byte"));
        assert_eq!(err(json!({"n": true})).kind, "mapper_parsing_exception");
        assert!(err(json!({"b": "yes"}))
            .caused_by
            .unwrap()
            .1
            .contains("only [true] or [false]"));
        assert!(err(json!({"d": "nope"}))
            .caused_by
            .unwrap()
            .1
            .contains("failed to parse date field"));
        assert!(err(json!({"o": 5}))
            .reason
            .contains("tried to parse field [o] as object"));
        assert_eq!(
            err(json!({"n": {"a": 1}})).caused_by.unwrap().0,
            "illegal_state_exception"
        );
        assert!(err(json!({"i": 1.5}))
            .caused_by
            .unwrap()
            .1
            .contains("decimal part"));
        assert!(err(json!({"i": "1"}))
            .caused_by
            .unwrap()
            .1
            .contains("coercion"));
    }

    #[test]
    fn coercion_and_limits() {
        let m = mapping(json!({"properties": {"n": {"type": "integer"},
            "k": {"type": "keyword", "ignore_above": 3}, "s": {"type": "scaled_float", "scaling_factor": 10},
            "m": {"type": "long", "ignore_malformed": true}, "z": {"type": "keyword", "null_value": "NULL"}}}));
        let (doc, _) = map_document(
            "i",
            &m,
            &src(json!({"n": 4.7, "k": ["abc", "abcd"], "s": 1.26,
            "m": "x", "z": null})),
            "1",
        )
        .unwrap();
        assert!(doc.keywords.contains(&("n".into(), KwValue::I64(4))));
        assert!(doc
            .keywords
            .contains(&("k".into(), KwValue::Str("abc".into()))));
        assert!(!doc
            .keywords
            .contains(&("k".into(), KwValue::Str("abcd".into()))));
        assert!(doc.keywords.contains(&("s".into(), KwValue::F64(1.3))));
        assert!(doc
            .keywords
            .contains(&("z".into(), KwValue::Str("NULL".into()))));
        assert!(!doc.field_names.contains(&"m".to_string()));
    }

    #[test]
    fn strict_and_false_dynamic() {
        let strict = mapping(json!({"dynamic": "strict", "properties": {"a": {"type": "long"}}}));
        let e = map_document("i", &strict, &src(json!({"b": 1})), "1").unwrap_err();
        assert_eq!(e.body().kind, "strict_dynamic_mapping_exception");
        let off = mapping(json!({"dynamic": false}));
        let (doc, grown) = map_document("i", &off, &src(json!({"b": 1})), "1").unwrap();
        assert!(grown.is_none());
        assert!(doc.keywords.is_empty());
    }

    #[test]
    fn dotted_keys_and_arrays_of_objects() {
        let m = Mapping::default();
        let (doc, grown) = map_document(
            "i",
            &m,
            &src(json!({"a.b": "x", "list": [{"k": 1}, {"k": 2, "j": true}]})),
            "1",
        )
        .unwrap();
        let g = grown.unwrap();
        assert!(g.is_object("a"));
        assert_eq!(g.field("a.b").unwrap().kind, LeafKind::Text);
        assert_eq!(g.field("list.j").unwrap().kind, LeafKind::Boolean);
        assert_eq!(
            doc.keywords.iter().filter(|(p, _)| p == "list.k").count(),
            2
        );
    }

    #[test]
    fn subfield_under_a_leaf_is_refused() {
        let m = mapping(json!({"properties": {"t": {"type": "long"}}}));
        let e = map_document("i", &m, &src(json!({"t.x": 1})), "1").unwrap_err();
        assert_eq!(e.body().kind, "mapper_parsing_exception");
    }

    // issue 30: copy_to indexes the value into the targets as they parse it (a mapped
    // field, a multi-field, a dynamic one), never transitively; `_source` is not touched
    #[test]
    fn copy_to_indexes_into_the_targets() {
        let m = mapping(json!({"properties": {
            "first": {"type": "text", "copy_to": ["all", "names.raw"]},
            "n": {"type": "long", "copy_to": "all"},
            "all": {"type": "text", "copy_to": "never"},
            "names": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
            "k": {"type": "keyword", "copy_to": "dyn"}
        }}));
        let (doc, grown) = map_document(
            "i",
            &m,
            &src(json!({"first": ["Ann", "Bo"], "n": 42, "k": "x"})),
            "1",
        )
        .unwrap();
        let all = m.field("all").unwrap().slot.unwrap();
        let texts: Vec<&str> = doc
            .slot_texts
            .iter()
            .filter(|(s, _)| *s == all)
            .map(|(_, t)| t.as_str())
            .collect();
        assert_eq!(texts, vec!["Ann", "Bo", "42"]);
        assert!(doc
            .keywords
            .contains(&("names.raw".into(), KwValue::Str("Bo".into()))));
        assert!(doc.field_names.contains(&"all".to_string()));
        let g = grown.unwrap();
        assert!(g.field("never").is_none(), "copy_to is not transitive");
        assert_eq!(g.field("dyn").unwrap().kind, LeafKind::Text);
        assert_eq!(g.field("dyn.keyword").unwrap().kind, LeafKind::Keyword);
    }

    #[test]
    fn copy_to_follows_the_target_rules() {
        let m = mapping(json!({"dynamic": "strict", "properties": {
            "s": {"type": "keyword", "copy_to": "n"},
            "t": {"type": "keyword", "copy_to": "missing"},
            "o": {"type": "keyword", "copy_to": "obj"},
            "obj": {"properties": {"x": {"type": "long"}}},
            "n": {"type": "long"}
        }}));
        let err = |v: Value| map_document("i", &m, &src(v), "1").unwrap_err().body();
        let e = err(json!({"s": "abc"}));
        assert_eq!(e.caused_by.unwrap().0, "number_format_exception");
        assert_eq!(
            err(json!({"t": "a"})).kind,
            "strict_dynamic_mapping_exception"
        );
        assert!(err(json!({"o": "a"}))
            .reason
            .contains("tried to parse field [obj] as object"));
        let (doc, _) = map_document("i", &m, &src(json!({"s": "7"})), "1").unwrap();
        assert!(doc.keywords.contains(&("n".into(), KwValue::I64(7))));
        let bad = |v: Value| {
            super::super::parse::parse_root(&v, &Default::default())
                .unwrap_err()
                .body()
        };
        let e = bad(json!({"properties": {"t": {"type": "text",
            "fields": {"k": {"type": "keyword", "copy_to": "x"}}}}}));
        assert!(
            e.reason.contains("[copy_to] in multi-field [t.k]"),
            "{}",
            e.reason
        );
        let e = bad(json!({"properties": {"g": {"type": "geo_point", "copy_to": "x"}}}));
        assert!(e.reason.contains("[copy_to]"), "{}", e.reason);
        assert_eq!(e.kind, "mapper_parsing_exception");
    }

    /// Issue 25: dynamic mapping stops at 1000 fields (N; N+1 is refused, naming the
    /// index) and at paths 20 segments deep (N; N+1 refused), as Elasticsearch's default
    /// limits do; a hundred thousand fields took the engine minutes.
    #[test]
    fn dynamic_mapping_is_bounded() {
        let m = Mapping::default();
        let wide = |n: usize| {
            src(Value::Object(
                (0..n).map(|i| (format!("f{i}"), json!(i))).collect(),
            ))
        };
        let (_, grown) = map_document("i", &m, &wide(MAX_TOTAL_FIELDS), "1").unwrap();
        assert_eq!(grown.unwrap().total_fields(), MAX_TOTAL_FIELDS);
        for n in [MAX_TOTAL_FIELDS + 1, 100_000] {
            let e = map_document("i", &m, &wide(n), "1").unwrap_err().body();
            assert_eq!(
                (e.status, e.kind.as_str()),
                (400, "illegal_argument_exception")
            );
            assert_eq!(
                e.reason,
                "Limit of total fields [1000] in index [i] has been exceeded"
            );
        }
        let deep = |n: usize| {
            let mut v = json!(1);
            for _ in 0..n {
                v = json!({ "a": v });
            }
            src(v)
        };
        assert!(map_document("i", &m, &deep(MAX_DEPTH), "1").is_ok());
        let e = map_document("i", &m, &deep(MAX_DEPTH + 1), "1")
            .unwrap_err()
            .body();
        assert_eq!(e.status, 400);
        assert!(
            e.reason
                .starts_with("Limit of mapping depth [20] in index [i]"),
            "{}",
            e.reason
        );
    }
}
