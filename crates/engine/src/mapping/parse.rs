//! Mapping JSON -> [`Mapping`]: typed and typeless `mappings` bodies, per-type parameter
//! validation with Elasticsearch's messages, and merging an update into a mapping.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::options::as_bool;
use super::{join, Analysis, Dynamic, LeafKind, LeafMapping, Mapping, ObjectMapping, Property};
use crate::error::{EngineError, EngineResult};

const ROOT_PARAMS: &[&str] = &[
    "properties",
    "dynamic",
    "_source",
    "_meta",
    "date_detection",
    "numeric_detection",
    "dynamic_templates",
    "dynamic_date_formats",
    "_routing",
    "_field_names",
    "_all",
    "enabled",
    "runtime",
];

const COMMON: &[&str] = &[
    "type",
    "fields",
    "index",
    "store",
    "boost",
    "copy_to",
    "meta",
    "doc_values",
];

fn allowed(kind: LeafKind) -> &'static [&'static str] {
    use LeafKind::*;
    match kind {
        Text => &[
            "analyzer",
            "search_analyzer",
            "search_quote_analyzer",
            "norms",
            "fielddata",
            "fielddata_frequency_filter",
            "position_increment_gap",
            "similarity",
            "term_vector",
            "index_options",
            "eager_global_ordinals",
            "index_prefixes",
            "index_phrases",
        ],
        Keyword => &[
            "ignore_above",
            "null_value",
            "normalizer",
            "eager_global_ordinals",
            "similarity",
            "index_options",
            "norms",
            "split_queries_on_whitespace",
        ],
        Long | Integer | Short | Byte | Double | Float | HalfFloat | ScaledFloat => {
            &["coerce", "ignore_malformed", "null_value", "scaling_factor"]
        }
        Boolean => &["null_value"],
        Date => &["format", "locale", "ignore_malformed", "null_value"],
        Ip => &["ignore_malformed", "null_value"],
        Binary | Unindexed => &[],
    }
}

/// The result of parsing a create-index `mappings` object.
#[derive(Debug)]
pub struct ParsedMappings {
    /// The type level, when the mappings were typed (`{"doc": {"properties": ...}}`).
    pub type_name: Option<String>,
    pub mapping: Mapping,
}

/// Parses the `mappings` of a create-index request, typed or typeless (Elasticsearch's
/// `isMappingSourceTyped`: one key that is not a root parameter, holding an object).
pub fn parse_mappings(v: &Value, an: &Arc<Analysis>) -> EngineResult<ParsedMappings> {
    let obj = v.as_object().ok_or_else(|| {
        EngineError::mapper("Failed to parse mapping: mappings must be an object")
    })?;
    if obj.is_empty() {
        return Ok(ParsedMappings {
            type_name: None,
            mapping: Mapping {
                analysis: an.clone(),
                ..Mapping::default()
            },
        });
    }
    if obj.len() == 1 {
        let (k, inner) = obj.iter().next().expect("one entry");
        if !ROOT_PARAMS.contains(&k.as_str()) && inner.is_object() {
            return Ok(ParsedMappings {
                type_name: Some(k.clone()),
                mapping: parse_root(inner, an)?,
            });
        }
    }
    Ok(ParsedMappings {
        type_name: None,
        mapping: parse_root(v, an)?,
    })
}

/// Parses the body of `PUT /<index>/_mapping` (typeless, or typed under `type_hint`).
pub fn parse_mapping_body(
    v: &Value,
    type_hint: Option<&str>,
    an: &Arc<Analysis>,
) -> EngineResult<Mapping> {
    if let (Some(t), Some(inner)) = (type_hint, v.get(type_hint.unwrap_or_default())) {
        if v.as_object().is_some_and(|o| o.len() == 1) && !ROOT_PARAMS.contains(&t) {
            return parse_root(inner, an);
        }
    }
    parse_root(v, an)
}

/// Parses a typeless mapping root.
pub(super) fn parse_root(v: &Value, an: &Arc<Analysis>) -> EngineResult<Mapping> {
    let obj = v
        .as_object()
        .ok_or_else(|| EngineError::mapper("Failed to parse mapping: mapping must be an object"))?;
    let mut m = Mapping {
        analysis: an.clone(),
        ..Mapping::default()
    };
    let unknown: Vec<String> = obj
        .iter()
        .filter(|(k, _)| !ROOT_PARAMS.contains(&k.as_str()))
        .map(|(k, v)| format!("{k} : {v}"))
        .collect();
    if !unknown.is_empty() {
        return Err(EngineError::mapper(format!(
            "Root mapping definition has unsupported parameters:  [{}]",
            unknown.join("] [")
        )));
    }
    for (k, val) in obj {
        check_root_param(k, val)?;
    }
    for (k, val) in obj {
        match k.as_str() {
            "properties" => m.root.properties = parse_properties(val, "", an)?,
            "dynamic" => m.root.dynamic = Some(parse_dynamic(val)?),
            "date_detection" => m.date_detection = as_bool(val, k)?,
            "numeric_detection" => m.numeric_detection = as_bool(val, k)?,
            _ => {
                m.root_params.insert(k.clone(), val.clone());
            }
        }
    }
    check_nested(&m.root, "", false)?;
    m.reindex();
    Ok(m)
}

/// Without a copy of its fields in the root document, Elasticsearch answers queries on a
/// nested object's fields only through `nested` queries, which this engine does not have:
/// answering them as object fields would differ silently, so such a mapping is refused. A
/// nested object is flat enough with `include_in_root`, or with `include_in_parent` when no
/// other nested object encloses it.
fn check_nested(o: &ObjectMapping, path: &str, in_nested: bool) -> EngineResult<()> {
    let mut inside = in_nested;
    if o.nested {
        if !(o.include_in_root || (o.include_in_parent && !in_nested)) {
            return Err(EngineError::mapper(format!(
                "[nested] field [{path}] without [include_in_root] (or [include_in_parent] at the first nested level) true is not supported by this engine: it has no nested queries"
            )));
        }
        inside = true;
    }
    for (name, p) in &o.properties {
        if let Property::Object(child) = p {
            check_nested(child, &join(path, name), inside)?;
        }
    }
    Ok(())
}

/// Elasticsearch 7.10's `dynamic_date_formats` default (the only value the engine's date
/// detection implements).
const DEFAULT_DYNAMIC_DATE_FORMATS: [&str; 2] = [
    "strict_date_optional_time",
    "yyyy/MM/dd HH:mm:ss Z||yyyy/MM/dd Z",
];

fn root_unsupported(what: &str) -> EngineError {
    EngineError::mapper(format!("{what} is not supported by this engine"))
}

/// Root parameters are kept (and returned) only in the forms whose effect the engine has:
/// `_source` enabled without filters (`_routing.required` is honoured by the writes and
/// reads), the root enabled, no
/// dynamic templates, runtime fields or `_all`, the default dynamic date formats.
fn check_root_param(k: &str, v: &Value) -> EngineResult<()> {
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    };
    let flag = |v: &Value, key: &str| v.get(key).map(|f| as_bool(f, key)).transpose();
    match k {
        "_source" => {
            if flag(v, "enabled")? == Some(false) {
                return Err(root_unsupported("[_source] [enabled] false"));
            }
            for key in ["includes", "excludes"] {
                if v.get(key).is_some_and(|f| !empty(f)) {
                    return Err(root_unsupported(&format!("[_source] [{key}]")));
                }
            }
        }
        "_routing" => {
            flag(v, "required")?;
        }
        "_all" if flag(v, "enabled")? == Some(true) => {
            return Err(root_unsupported("[_all] [enabled] true"))
        }
        "enabled" if !as_bool(v, k)? => {
            return Err(root_unsupported("[enabled] false on the root"))
        }
        "dynamic_templates" | "runtime" if !empty(v) => {
            return Err(root_unsupported(&format!("[{k}]")))
        }
        "dynamic_date_formats" => {
            let given: Vec<&str> = match v {
                Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                Value::String(s) => vec![s.as_str()],
                _ => vec![],
            };
            if given != DEFAULT_DYNAMIC_DATE_FORMATS {
                return Err(root_unsupported(&format!("[dynamic_date_formats] {v}")));
            }
        }
        _ => {}
    }
    Ok(())
}

fn parse_dynamic(v: &Value) -> EngineResult<Dynamic> {
    match v {
        Value::Bool(true) => Ok(Dynamic::True),
        Value::Bool(false) => Ok(Dynamic::False),
        Value::String(s) if s == "true" => Ok(Dynamic::True),
        Value::String(s) if s == "false" => Ok(Dynamic::False),
        Value::String(s) if s == "strict" => Ok(Dynamic::Strict),
        other => Err(EngineError::mapper(format!(
            "Could not convert [dynamic] to boolean: {other}"
        ))),
    }
}

fn parse_properties(
    v: &Value,
    prefix: &str,
    an: &Analysis,
) -> EngineResult<BTreeMap<String, Property>> {
    let obj = v.as_object().ok_or_else(|| {
        EngineError::mapper(format!(
            "Expected map for property [properties] on [{prefix}]"
        ))
    })?;
    let mut out = BTreeMap::new();
    for (name, def) in obj {
        if name.is_empty() {
            return Err(EngineError::mapper("name cannot be empty string"));
        }
        let parts: Vec<&str> = name.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(EngineError::IllegalArgument(format!(
                "field name cannot contain only whitespace or empty segments: ['{name}']"
            )));
        }
        if prefix.is_empty() && super::under_metadata(name) {
            let object = parts.len() > 1
                || def.get("properties").is_some()
                || matches!(
                    def.get("type").and_then(Value::as_str),
                    Some("object" | "nested")
                );
            return Err(EngineError::mapper(if object {
                format!(
                    "Field [{}] is defined both as an object and a field",
                    parts[0]
                )
            } else {
                format!("Field [{name}] is defined more than once")
            }));
        }
        let prop = parse_property(def, &join(prefix, name), an)?;
        insert_dotted(&mut out, &parts, prop)?;
    }
    Ok(out)
}

/// Inserts `prop` at a dotted name, creating intermediate objects (`a.b` == `{a:{b}}`).
fn insert_dotted(
    out: &mut BTreeMap<String, Property>,
    parts: &[&str],
    prop: Property,
) -> EngineResult<()> {
    if parts.len() == 1 {
        out.insert(parts[0].to_string(), prop);
        return Ok(());
    }
    let entry = out
        .entry(parts[0].to_string())
        .or_insert_with(|| Property::Object(ObjectMapping::dynamic_object()));
    match entry {
        Property::Object(o) => insert_dotted(&mut o.properties, &parts[1..], prop),
        Property::Leaf(_) => Err(EngineError::mapper(format!(
            "Field [{}] is defined both as an object and a field",
            parts[0]
        ))),
    }
}

fn parse_property(def: &Value, path: &str, an: &Analysis) -> EngineResult<Property> {
    let obj = def.as_object().ok_or_else(|| {
        EngineError::mapper(format!(
            "Expected map for property [{path}] but got a class java.lang.String"
        ))
    })?;
    let ty = match obj.get("type") {
        None => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(other) => {
            return Err(EngineError::mapper(format!(
                "No handler for type [{other}] declared on field [{path}]"
            )))
        }
    };
    match ty {
        None | Some("object") | Some("nested") => parse_object(obj, path, ty == Some("nested"), an),
        Some(t) => {
            let kind = LeafKind::from_name(t).ok_or_else(|| {
                EngineError::mapper(format!(
                    "No handler for type [{t}] declared on field [{path}]"
                ))
            })?;
            Ok(Property::Leaf(parse_leaf(kind, obj, path, an)?))
        }
    }
}

fn parse_object(
    obj: &Map<String, Value>,
    path: &str,
    nested: bool,
    an: &Analysis,
) -> EngineResult<Property> {
    let mut o = ObjectMapping::dynamic_object();
    o.nested = nested;
    for (k, v) in obj {
        match k.as_str() {
            "type" => {}
            "properties" => o.properties = parse_properties(v, path, an)?,
            "dynamic" => o.dynamic = Some(parse_dynamic(v)?),
            "enabled" => o.enabled = as_bool(v, "enabled")?,
            "include_in_parent" if nested => o.include_in_parent = as_bool(v, k)?,
            "include_in_root" if nested => o.include_in_root = as_bool(v, k)?,
            other => {
                return Err(EngineError::mapper(format!(
                    "Mapping definition for [{path}] has unsupported parameters:  [{other} : {v}]"
                )))
            }
        }
    }
    Ok(Property::Object(o))
}

/// Parses one leaf field definition.
pub(super) fn parse_leaf(
    kind: LeafKind,
    obj: &Map<String, Value>,
    path: &str,
    an: &Analysis,
) -> EngineResult<LeafMapping> {
    let mut params = Map::new();
    let mut fields = BTreeMap::new();
    for (k, v) in obj {
        let key = k.as_str();
        let open = kind == LeafKind::Unindexed;
        if !open && !COMMON.contains(&key) && !allowed(kind).contains(&key) {
            return Err(EngineError::mapper(format!(
                "unknown parameter [{key}] on mapper [{path}] of type [{}]",
                kind.name()
            )));
        }
        match key {
            "type" => {}
            "fields" => fields = parse_multi_fields(v, path, an)?,
            _ => {
                params.insert(k.clone(), v.clone());
            }
        }
    }
    let opts = super::options::leaf_options(kind, &params, path, an)?;
    let type_name = obj
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or(kind.name())
        .to_string();
    Ok(LeafMapping {
        kind,
        type_name,
        params,
        fields,
        opts,
    })
}

fn parse_multi_fields(
    v: &Value,
    path: &str,
    an: &Analysis,
) -> EngineResult<BTreeMap<String, LeafMapping>> {
    let obj = v.as_object().ok_or_else(|| {
        EngineError::mapper(format!(
            "Expected map for property [fields] on field [{path}] but got a {v}"
        ))
    })?;
    let mut out = BTreeMap::new();
    for (name, def) in obj {
        let sub = join(path, name);
        match parse_property(def, &sub, an)? {
            Property::Leaf(l) if !l.opts.copy_to.is_empty() => {
                return Err(EngineError::mapper(format!(
                    "[copy_to] in multi-field [{sub}] is not supported by this engine"
                )))
            }
            Property::Leaf(l) => {
                out.insert(name.clone(), l);
            }
            Property::Object(_) => {
                return Err(EngineError::mapper(format!(
                    "Type [object] cannot be used in multi field [{sub}]"
                )))
            }
        }
    }
    Ok(out)
}

impl Mapping {
    /// Merges `incoming` into a copy of `self` (new fields added, types never changed).
    pub fn merged(&self, incoming: &Mapping) -> EngineResult<Mapping> {
        let mut out = self.clone();
        merge_object(&mut out.root, &incoming.root, "")?;
        if incoming.root.dynamic.is_some() {
            out.root.dynamic = incoming.root.dynamic;
        }
        for (k, v) in &incoming.root_params {
            out.root_params.insert(k.clone(), v.clone());
        }
        if incoming.date_detection != Mapping::default().date_detection {
            out.date_detection = incoming.date_detection;
        }
        if incoming.numeric_detection {
            out.numeric_detection = true;
        }
        out.reindex();
        Ok(out)
    }
}

fn merge_object(target: &mut ObjectMapping, inc: &ObjectMapping, prefix: &str) -> EngineResult<()> {
    for (name, prop) in &inc.properties {
        let path = join(prefix, name);
        match (target.properties.get_mut(name), prop) {
            (None, p) => {
                target.properties.insert(name.clone(), p.clone());
            }
            (Some(Property::Object(t)), Property::Object(i)) => {
                if i.dynamic.is_some() {
                    t.dynamic = i.dynamic;
                }
                merge_object(t, i, &path)?;
            }
            (Some(Property::Leaf(t)), Property::Leaf(i)) => merge_leaf(t, i, &path)?,
            (Some(Property::Leaf(_)), Property::Object(_)) => {
                return Err(EngineError::IllegalArgument(format!(
                    "can't merge a non object mapping [{path}] with an object mapping"
                )))
            }
            (Some(Property::Object(_)), Property::Leaf(_)) => {
                return Err(EngineError::IllegalArgument(format!(
                    "can't merge a non object mapping [{path}] with an object mapping"
                )))
            }
        }
    }
    Ok(())
}

fn merge_leaf(t: &mut LeafMapping, i: &LeafMapping, path: &str) -> EngineResult<()> {
    if t.kind != i.kind {
        return Err(EngineError::IllegalArgument(format!(
            "mapper [{path}] cannot be changed from type [{}] to [{}]",
            t.kind.name(),
            i.kind.name()
        )));
    }
    if t.opts.analyzer != i.opts.analyzer {
        return Err(EngineError::IllegalArgument(format!(
            "Mapper for [{path}] conflicts with existing mapper:\n\tCannot update parameter [analyzer]"
        )));
    }
    // `copy_to` is replaced by the update's, as Elasticsearch merges it
    t.opts.copy_to = i.opts.copy_to.clone();
    match i.params.get("copy_to") {
        Some(v) => t.params.insert("copy_to".into(), v.clone()),
        None => t.params.remove("copy_to"),
    };
    for (name, sub) in &i.fields {
        match t.fields.get_mut(name) {
            None => {
                t.fields.insert(name.clone(), sub.clone());
            }
            Some(existing) => merge_leaf(existing, sub, &join(path, name))?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn root(v: Value) -> EngineResult<Mapping> {
        parse_root(&v, &Default::default())
    }

    fn parse_mappings_t(v: &Value) -> EngineResult<ParsedMappings> {
        parse_mappings(v, &Default::default())
    }

    #[test]
    fn typed_and_typeless_mappings() {
        let typed =
            parse_mappings_t(&json!({"doc": {"properties": {"a": {"type": "long"}}}})).unwrap();
        assert_eq!(typed.type_name.as_deref(), Some("doc"));
        assert_eq!(typed.mapping.field("a").unwrap().kind, LeafKind::Long);
        let typeless = parse_mappings_t(&json!({"properties": {"a": {"type": "long"}}})).unwrap();
        assert_eq!(typeless.type_name, None);
        assert!(typeless.mapping.field("a").is_some());
        let empty = parse_mappings_t(&json!({})).unwrap();
        assert!(empty.mapping.is_empty());
    }

    #[test]
    fn unknown_type_and_params_are_mapper_errors() {
        let e = root(json!({"properties": {"a": {"type": "foo"}}})).unwrap_err();
        assert!(e
            .to_string()
            .contains("No handler for type [foo] declared on field [a]"));
        let e = root(json!({"properties": {"a": {"type": "long", "analyzer": "x"}}})).unwrap_err();
        assert!(e
            .to_string()
            .contains("unknown parameter [analyzer] on mapper [a] of type [long]"));
        let e = root(json!({"foo": 1})).unwrap_err();
        assert!(e
            .to_string()
            .contains("Root mapping definition has unsupported parameters"));
        let e = root(json!({"properties": {"a": "text"}})).unwrap_err();
        assert_eq!(e.status(), 400);
        let e = root(json!({"properties": {"a": {"type": "scaled_float"}}})).unwrap_err();
        assert!(e.to_string().contains("scaling_factor"));
        let e =
            root(json!({"properties": {"a": {"type": "date", "format": "yyyy-qq"}}})).unwrap_err();
        assert!(e.to_string().contains("Invalid format"));
    }

    #[test]
    fn dotted_names_become_objects() {
        let m = root(json!({"properties": {"a.b": {"type": "keyword"}}})).unwrap();
        assert!(m.is_object("a"));
        assert_eq!(m.field("a.b").unwrap().kind, LeafKind::Keyword);
    }

    #[test]
    fn merge_adds_fields_and_refuses_type_changes() {
        let a = root(json!({"properties": {"x": {"type": "long"}}})).unwrap();
        let b = root(json!({"properties": {"y": {"type": "text"}}})).unwrap();
        let m = a.merged(&b).unwrap();
        assert!(m.field("x").is_some() && m.field("y").is_some());
        let c = root(json!({"properties": {"x": {"type": "text"}}})).unwrap();
        let e = a.merged(&c).unwrap_err();
        assert_eq!(
            e.body().reason,
            "mapper [x] cannot be changed from type [long] to [text]"
        );
        let d = root(json!({"properties": {"x": {"properties": {}}}})).unwrap();
        assert!(a.merged(&d).is_err());
    }

    #[test]
    fn mapping_json_round_trips() {
        let src = json!({"properties": {
            "title": {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}},
            "when": {"type": "date", "format": "epoch_second"},
            "o": {"properties": {"n": {"type": "integer"}}}
        }});
        let m = parse_root(&src, &Default::default()).unwrap();
        assert_eq!(m.to_json(), src);
    }
}
