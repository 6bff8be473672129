//! Index mappings: the Elasticsearch field types the engine supports, the mapping tree as
//! given at creation or grown dynamically, its flat per-path view used by queries, text
//! slot assignment, and its rendering back to Elasticsearch JSON.
//!
//! Owns: `Mapping` and its invariants (one type per path, slots never reassigned).
//! Must not touch: tantivy writers or searchers (see `store::schema` for how paths become
//! tantivy fields), HTTP.

mod coerce;
pub mod date;
mod mapper;
mod metadata;
mod options;
mod parse;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{json, Map, Value};

pub use coerce::KwValue;
pub use mapper::{map_document, IndexedDoc};
pub use parse::{parse_mapping_body, parse_mappings, ParsedMappings};

use date::DateFormat;
pub use metadata::{under_metadata, METADATA_FIELDS};

/// Number of dedicated tantivy text fields per shard (`t0`..`t15`). Text fields beyond these
/// share the JSON text field, whose length norms are per document rather than per field.
pub const TEXT_SLOTS: u8 = 16;

/// `dynamic` setting of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dynamic {
    True,
    False,
    Strict,
}

impl Dynamic {
    fn to_value(self) -> Value {
        match self {
            Dynamic::True => json!(true),
            Dynamic::False => json!(false),
            Dynamic::Strict => json!("strict"),
        }
    }
}

/// Leaf field types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeafKind {
    Text,
    Keyword,
    Long,
    Integer,
    Short,
    Byte,
    Double,
    Float,
    HalfFloat,
    ScaledFloat,
    Boolean,
    Date,
    Ip,
    Binary,
    /// Accepted and echoed, kept in `_source`, not indexed (geo_point, flattened, ...).
    Unindexed,
}

impl LeafKind {
    /// From the `type` parameter.
    pub fn from_name(name: &str) -> Option<Self> {
        use LeafKind::*;
        Some(match name {
            "text" => Text,
            "keyword" => Keyword,
            "long" => Long,
            "integer" => Integer,
            "short" => Short,
            "byte" => Byte,
            "double" => Double,
            "float" => Float,
            "half_float" => HalfFloat,
            "scaled_float" => ScaledFloat,
            "boolean" => Boolean,
            "date" => Date,
            "ip" => Ip,
            "binary" => Binary,
            // close relatives, indexed as their cousin
            "date_nanos" => Date,
            "unsigned_long" => Long,
            "wildcard" | "constant_keyword" | "version" => Keyword,
            "match_only_text" | "search_as_you_type" | "annotated_text" => Text,
            // accepted, not indexed
            "geo_point"
            | "geo_shape"
            | "shape"
            | "point"
            | "flattened"
            | "alias"
            | "token_count"
            | "rank_feature"
            | "rank_features"
            | "dense_vector"
            | "sparse_vector"
            | "completion"
            | "percolator"
            | "join"
            | "histogram"
            | "integer_range"
            | "long_range"
            | "float_range"
            | "double_range"
            | "date_range"
            | "ip_range"
            | "aggregate_metric_double"
            | "murmur3" => Unindexed,
            _ => return None,
        })
    }

    /// The `type` name.
    pub fn name(self) -> &'static str {
        use LeafKind::*;
        match self {
            Text => "text",
            Keyword => "keyword",
            Long => "long",
            Integer => "integer",
            Short => "short",
            Byte => "byte",
            Double => "double",
            Float => "float",
            HalfFloat => "half_float",
            ScaledFloat => "scaled_float",
            Boolean => "boolean",
            Date => "date",
            Ip => "ip",
            Binary => "binary",
            Unindexed => "unindexed",
        }
    }

    /// Integer types and their bounds.
    pub fn int_bounds(self) -> Option<(i64, i64)> {
        match self {
            LeafKind::Long => Some((i64::MIN, i64::MAX)),
            LeafKind::Integer => Some((i32::MIN as i64, i32::MAX as i64)),
            LeafKind::Short => Some((i16::MIN as i64, i16::MAX as i64)),
            LeafKind::Byte => Some((i8::MIN as i64, i8::MAX as i64)),
            _ => None,
        }
    }

    /// Floating point types.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            LeafKind::Double | LeafKind::Float | LeafKind::HalfFloat | LeafKind::ScaledFloat
        )
    }

    /// Values stored as numbers in the keyword JSON field (numbers and dates).
    pub fn is_numeric(self) -> bool {
        self.int_bounds().is_some() || self.is_float() || self == LeafKind::Date
    }
}

pub use crate::analysis::{Analysis, Analyzer, Normalizer};

/// Parsed options of a leaf field.
#[derive(Debug, Clone, PartialEq)]
pub struct LeafOptions {
    pub index: bool,
    pub ignore_above: Option<usize>,
    pub null_value: Option<Value>,
    pub coerce: bool,
    pub ignore_malformed: bool,
    pub analyzer: Analyzer,
    pub search_analyzer: Analyzer,
    /// A keyword field's `normalizer`.
    pub normalizer: Option<Normalizer>,
    /// A text field's `fielddata`: its tokens are also kept per document (aggregations, sorting).
    pub fielddata: bool,
    /// `doc_values` (aggregations and sorting need them).
    pub doc_values: bool,
    /// `store`: the values are returned by `stored_fields`.
    pub store: bool,
    pub formats: Vec<DateFormat>,
    pub scaling_factor: Option<f64>,
    /// `copy_to`: the paths this field's values are also indexed into (not transitive).
    pub copy_to: Vec<String>,
}

/// A leaf field: its type, the parameters as given (echoed by `GET _mapping`), multi-fields.
#[derive(Debug, Clone, PartialEq)]
pub struct LeafMapping {
    pub kind: LeafKind,
    /// The `type` as given (`date_nanos`, `geo_point`, ...).
    pub type_name: String,
    pub params: Map<String, Value>,
    pub fields: BTreeMap<String, LeafMapping>,
    pub opts: LeafOptions,
}

impl LeafMapping {
    /// The `format` of a date field as mapped (the default when it names none), as errors
    /// name it.
    pub fn date_format(&self) -> &str {
        self.params
            .get("format")
            .and_then(Value::as_str)
            .unwrap_or(date::DEFAULT_FORMAT)
    }
}

/// An object field (or the root).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ObjectMapping {
    pub dynamic: Option<Dynamic>,
    pub enabled: bool,
    pub nested: bool,
    /// `include_in_parent`, `include_in_root` of a nested object (kept and returned).
    pub include_in_parent: bool,
    pub include_in_root: bool,
    pub properties: BTreeMap<String, Property>,
}

/// The most fields a mapping may grow to by dynamic mapping (Elasticsearch's default
/// `index.mapping.total_fields.limit`).
pub const MAX_TOTAL_FIELDS: usize = 1000;
/// The deepest a dynamic field may lie, in path segments (Elasticsearch's default
/// `index.mapping.depth.limit`).
pub const MAX_DEPTH: usize = 20;

/// A mapped property (a small tree: the size difference of the variants does not matter).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Property {
    Object(ObjectMapping),
    Leaf(LeafMapping),
}

/// What queries need to know about one indexed path.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldInfo {
    pub kind: LeafKind,
    pub indexed: bool,
    /// Dedicated text field, for text paths that got one.
    pub slot: Option<u8>,
    pub analyzer: Analyzer,
    pub search_analyzer: Analyzer,
    pub normalizer: Option<Normalizer>,
    pub fielddata: bool,
    pub doc_values: bool,
    pub store: bool,
    pub formats: Vec<DateFormat>,
}

/// The mapping of one index.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    pub root: ObjectMapping,
    /// Root parameters other than `properties`/`dynamic` (`_source`, `_meta`, ...), echoed.
    pub root_params: Map<String, Value>,
    pub date_detection: bool,
    pub numeric_detection: bool,
    /// Text path -> dedicated text field number. Never reassigned.
    pub slots: BTreeMap<String, u8>,
    /// The analyzers and normalizers of the index (from its settings).
    pub analysis: Arc<Analysis>,
    flat: HashMap<String, FieldInfo>,
}

impl Default for Mapping {
    fn default() -> Self {
        Mapping {
            root: ObjectMapping {
                enabled: true,
                ..Default::default()
            },
            root_params: Map::new(),
            date_detection: true,
            numeric_detection: false,
            slots: BTreeMap::new(),
            analysis: Arc::new(Analysis::default()),
            flat: HashMap::new(),
        }
    }
}

impl Mapping {
    /// `_routing.required`: writes and reads of a document must name its routing.
    pub fn routing_required(&self) -> bool {
        self.root_params
            .get("_routing")
            .and_then(|r| r.get("required"))
            .is_some_and(|v| v.as_bool() == Some(true) || v.as_str() == Some("true"))
    }

    /// The indexed leaf at `path` (dotted, multi-fields included), if mapped.
    pub fn field(&self, path: &str) -> Option<&FieldInfo> {
        self.flat.get(path)
    }

    /// All mapped leaf paths with their info, sorted by path.
    pub fn fields(&self) -> Vec<(&str, &FieldInfo)> {
        let mut v: Vec<_> = self.flat.iter().map(|(k, f)| (k.as_str(), f)).collect();
        v.sort_by(|a, b| a.0.cmp(b.0));
        v
    }

    /// The leaf at `path`, multi-fields included (`title.raw`), as `copy_to` targets name them.
    pub fn leaf_at(&self, path: &str) -> Option<&LeafMapping> {
        if let Some(Property::Leaf(l)) = self.property(path) {
            return Some(l);
        }
        let (parent, sub) = path.rsplit_once('.')?;
        self.leaf_at(parent)?.fields.get(sub)
    }

    /// Whether `path` names a mapped object.
    pub fn is_object(&self, path: &str) -> bool {
        matches!(self.property(path), Some(Property::Object(_)))
    }

    /// The property at a dotted `path` (not descending into multi-fields).
    pub fn property(&self, path: &str) -> Option<&Property> {
        let mut obj = &self.root;
        let mut parts = path.split('.').peekable();
        while let Some(part) = parts.next() {
            let prop = obj.properties.get(part)?;
            if parts.peek().is_none() {
                return Some(prop);
            }
            match prop {
                Property::Object(o) => obj = o,
                Property::Leaf(_) => return None,
            }
        }
        None
    }

    /// The object at `path` ("" is the root), created (dynamic object) if absent.
    pub(crate) fn object_mut(&mut self, path: &str) -> Option<&mut ObjectMapping> {
        let mut obj = &mut self.root;
        if path.is_empty() {
            return Some(obj);
        }
        for part in path.split('.') {
            let prop = obj
                .properties
                .entry(part.to_string())
                .or_insert_with(|| Property::Object(ObjectMapping::dynamic_object()));
            match prop {
                Property::Object(o) => obj = o,
                Property::Leaf(_) => return None,
            }
        }
        Some(obj)
    }

    /// The effective `dynamic` setting for new fields inside the object at `path`.
    pub fn dynamic_at(&self, path: &str) -> Dynamic {
        let mut current = self.root.dynamic.unwrap_or(Dynamic::True);
        if path.is_empty() {
            return current;
        }
        let mut obj = &self.root;
        for part in path.split('.') {
            match obj.properties.get(part) {
                Some(Property::Object(o)) => {
                    if let Some(d) = o.dynamic {
                        current = d;
                    }
                    obj = o;
                }
                _ => break,
            }
        }
        current
    }

    /// Rebuilds the flat view and assigns slots to new text paths. Call after any change.
    pub fn reindex(&mut self) {
        let mut flat = HashMap::new();
        collect_leaves(&self.root, "", &mut flat);
        let mut next = self.slots.values().map(|s| s + 1).max().unwrap_or(0);
        let mut text_paths: Vec<&String> = flat
            .iter()
            .filter(|(_, f)| f.kind == LeafKind::Text)
            .map(|(p, _)| p)
            .collect();
        text_paths.sort();
        for p in text_paths {
            if !self.slots.contains_key(p) && next < TEXT_SLOTS {
                self.slots.insert(p.clone(), next);
                next += 1;
            }
        }
        for (p, f) in flat.iter_mut() {
            f.slot = self.slots.get(p).copied();
        }
        self.flat = flat;
    }

    /// The fields mapped, as `index.mapping.total_fields.limit` counts them: objects,
    /// leaves and multi-fields.
    pub fn total_fields(&self) -> usize {
        fn objects(o: &ObjectMapping) -> usize {
            o.properties
                .values()
                .map(|p| match p {
                    Property::Object(o) => 1 + objects(o),
                    Property::Leaf(_) => 0,
                })
                .sum()
        }
        objects(&self.root) + self.flat.len()
    }

    /// True when no field is mapped.
    pub fn is_empty(&self) -> bool {
        self.root.properties.is_empty()
    }

    /// The mapping as Elasticsearch renders it (`{"properties": {...}, ...}`).
    pub fn to_json(&self) -> Value {
        let mut m = self.root_params.clone();
        if let Some(d) = self.root.dynamic {
            m.insert("dynamic".into(), d.to_value());
        }
        if !self.root.properties.is_empty() {
            m.insert("properties".into(), properties_json(&self.root.properties));
        }
        Value::Object(m)
    }

    /// Persistent form: the Elasticsearch JSON plus the slot table.
    pub fn to_persisted(&self) -> Value {
        json!({"mapping": self.to_json(), "slots": self.slots})
    }

    /// Reads the persistent form back, with the analysis of the index's settings. A name
    /// that does not resolve (a mapping written when custom analyzers were kept without
    /// effect) reads as `standard`, as that mapping was indexed.
    pub fn from_persisted(v: &Value, analysis: &Arc<Analysis>) -> Result<Self, String> {
        let mapping = v.get("mapping").cloned().unwrap_or_else(|| json!({}));
        let mut m = match parse::parse_root(&mapping, analysis) {
            Ok(m) => m,
            Err(_) => {
                let lenient = Arc::new(Analysis {
                    lenient: true,
                    ..(**analysis).clone()
                });
                let mut m = parse::parse_root(&mapping, &lenient).map_err(|e| e.to_string())?;
                m.analysis = analysis.clone();
                m
            }
        };
        if let Some(slots) = v.get("slots").and_then(Value::as_object) {
            for (k, s) in slots {
                let s = s.as_u64().ok_or("bad slot")? as u8;
                m.slots.insert(k.clone(), s);
            }
        }
        m.reindex();
        Ok(m)
    }
}

impl ObjectMapping {
    /// A dynamically added object (`dynamic` inherited).
    pub fn dynamic_object() -> Self {
        ObjectMapping {
            enabled: true,
            ..Default::default()
        }
    }
}

fn collect_leaves(obj: &ObjectMapping, prefix: &str, out: &mut HashMap<String, FieldInfo>) {
    for (name, prop) in &obj.properties {
        let path = join(prefix, name);
        match prop {
            Property::Object(o) => collect_leaves(o, &path, out),
            Property::Leaf(l) => add_leaf(l, &path, out),
        }
    }
}

fn add_leaf(l: &LeafMapping, path: &str, out: &mut HashMap<String, FieldInfo>) {
    out.insert(
        path.to_string(),
        FieldInfo {
            kind: l.kind,
            indexed: l.opts.index,
            slot: None,
            analyzer: l.opts.analyzer.clone(),
            search_analyzer: l.opts.search_analyzer.clone(),
            normalizer: l.opts.normalizer.clone(),
            fielddata: l.opts.fielddata,
            doc_values: l.opts.doc_values,
            store: l.opts.store,
            formats: l.opts.formats.clone(),
        },
    );
    for (sub, sl) in &l.fields {
        add_leaf(sl, &join(path, sub), out);
    }
}

/// `prefix.name`, or `name` at the root.
pub fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        let mut s = String::with_capacity(prefix.len() + 1 + name.len());
        s.push_str(prefix);
        s.push('.');
        s.push_str(name);
        s
    }
}

fn properties_json(props: &BTreeMap<String, Property>) -> Value {
    let mut m = Map::new();
    for (name, prop) in props {
        m.insert(name.clone(), property_json(prop));
    }
    Value::Object(m)
}

fn property_json(prop: &Property) -> Value {
    match prop {
        Property::Object(o) => {
            let mut m = Map::new();
            if o.nested {
                m.insert("type".into(), json!("nested"));
                for (k, on) in [
                    ("include_in_parent", o.include_in_parent),
                    ("include_in_root", o.include_in_root),
                ] {
                    if on {
                        m.insert(k.into(), json!(true));
                    }
                }
            }
            if let Some(d) = o.dynamic {
                m.insert("dynamic".into(), d.to_value());
            }
            if !o.enabled {
                m.insert("enabled".into(), json!(false));
            }
            if !o.properties.is_empty() {
                m.insert("properties".into(), properties_json(&o.properties));
            }
            Value::Object(m)
        }
        Property::Leaf(l) => leaf_json(l),
    }
}

fn leaf_json(l: &LeafMapping) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), json!(l.type_name));
    for (k, v) in &l.params {
        m.insert(k.clone(), v.clone());
    }
    if !l.fields.is_empty() {
        let mut f = Map::new();
        for (k, sub) in &l.fields {
            f.insert(k.clone(), leaf_json(sub));
        }
        m.insert("fields".into(), Value::Object(f));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(v: Value) -> Mapping {
        parse::parse_root(&v, &Default::default()).unwrap()
    }

    #[test]
    fn flat_view_includes_multi_fields_and_objects() {
        let m = mapping(json!({"properties": {
            "title": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
            "user": {"properties": {"age": {"type": "integer"}}}
        }}));
        assert_eq!(m.field("title").unwrap().kind, LeafKind::Text);
        assert_eq!(m.field("title.raw").unwrap().kind, LeafKind::Keyword);
        assert_eq!(m.field("user.age").unwrap().kind, LeafKind::Integer);
        assert!(m.field("user").is_none());
        assert!(m.is_object("user"));
    }

    #[test]
    fn slots_are_assigned_once_and_kept() {
        let mut m = mapping(json!({"properties": {"b": {"type": "text"}, "c": {"type": "text"}}}));
        assert_eq!(m.field("b").unwrap().slot, Some(0));
        assert_eq!(m.field("c").unwrap().slot, Some(1));
        m.object_mut("").unwrap().properties.insert(
            "a".into(),
            mapping(json!({"properties": {"a": {"type": "text"}}}))
                .root
                .properties["a"]
                .clone(),
        );
        m.reindex();
        assert_eq!(m.field("b").unwrap().slot, Some(0));
        assert_eq!(m.field("a").unwrap().slot, Some(2));
    }

    #[test]
    fn slots_run_out_after_sixteen() {
        let mut props = Map::new();
        for i in 0..20 {
            props.insert(format!("f{i:02}"), json!({"type": "text"}));
        }
        let m = mapping(json!({ "properties": props }));
        assert_eq!(m.field("f15").unwrap().slot, Some(15));
        assert_eq!(m.field("f16").unwrap().slot, None);
    }

    #[test]
    fn persisted_round_trip_keeps_slots() {
        let m = mapping(
            json!({"dynamic": "strict", "properties": {"t": {"type": "text"}, "n": {"type": "long"}}}),
        );
        let back = Mapping::from_persisted(&m.to_persisted(), &Default::default()).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.to_json()["dynamic"], "strict");
    }

    #[test]
    fn dynamic_inherits_from_parents() {
        let m = mapping(json!({"dynamic": "strict", "properties": {
            "o": {"dynamic": true, "properties": {"p": {"properties": {}}}}
        }}));
        assert_eq!(m.dynamic_at(""), Dynamic::Strict);
        assert_eq!(m.dynamic_at("o"), Dynamic::True);
        assert_eq!(m.dynamic_at("o.p"), Dynamic::True);
    }
}
