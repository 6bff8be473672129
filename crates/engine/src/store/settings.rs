//! Index settings: normalising the forms Elasticsearch accepts (`{"number_of_shards": 1}`,
//! `{"index": {...}}`, `{"index.number_of_shards": "1"}`), validating them, dynamic updates,
//! and rendering them back as strings under `index`.
//!
//! Pure functions; must not touch I/O.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::error::{EngineError, EngineResult};

/// Settings the engine honours, plus every other accepted setting as given.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexSettings {
    pub shards: u32,
    pub replicas: u32,
    /// Refresh interval in ms; -1 disables periodic refresh.
    pub refresh_ms: i64,
    pub max_result_window: usize,
    /// Other `index.*` settings, flattened, values as strings.
    pub extra: BTreeMap<String, Value>,
}

impl Default for IndexSettings {
    fn default() -> Self {
        IndexSettings {
            shards: 1,
            replicas: 1,
            refresh_ms: 1000,
            max_result_window: 10_000,
            extra: BTreeMap::new(),
        }
    }
}

const PRIVATE: &[&str] = &["uuid", "creation_date", "version.created", "provided_name"];

const KNOWN_PREFIXES: &[&str] = &[
    "analysis.",
    "routing.",
    "mapping.",
    "blocks.",
    "sort.",
    "translog.",
    "merge.",
    "query.",
    "similarity.",
    "lifecycle.",
    "highlight.",
    "write.",
    "shard.",
    "store.",
    "unassigned.",
    "search.",
    "indexing.",
    "allocation.",
    "routing_partition_size",
    "soft_deletes.",
];

const KNOWN: &[&str] = &[
    "codec",
    "auto_expand_replicas",
    "hidden",
    "max_ngram_diff",
    "max_shingle_diff",
    "number_of_routing_shards",
    "priority",
    "default_pipeline",
    "final_pipeline",
    "max_inner_result_window",
    "max_terms_count",
    "max_regex_length",
    "max_docvalue_fields_search",
    "max_script_fields",
    "max_rescore_window",
    "max_adjacency_matrix_filters",
    "gc_deletes",
    "load_fixed_bitset_filters_eagerly",
    "check_on_startup",
    "format",
    "max_slices_per_scroll",
    "max_refresh_listeners",
    "default_field",
];

/// Flattens settings to `index.`-prefixed dotted keys.
pub fn flatten(v: &Value) -> EngineResult<BTreeMap<String, Value>> {
    let obj = v.as_object().ok_or_else(|| {
        EngineError::Parsing("Failed to parse settings: settings must be an object".into())
    })?;
    let mut out = BTreeMap::new();
    flatten_into(obj, "", &mut out);
    let mut prefixed = BTreeMap::new();
    for (k, v) in out {
        let key = if k.starts_with("index.") {
            k
        } else {
            format!("index.{k}")
        };
        prefixed.insert(key, v);
    }
    Ok(prefixed)
}

/// Flattens nested settings to dotted keys, as given (no prefix added).
pub fn flatten_plain(v: &Value) -> EngineResult<BTreeMap<String, Value>> {
    let obj = v.as_object().ok_or_else(|| {
        EngineError::Parsing("Failed to parse settings: settings must be an object".into())
    })?;
    let mut out = BTreeMap::new();
    flatten_into(obj, "", &mut out);
    Ok(out)
}

fn flatten_into(obj: &Map<String, Value>, prefix: &str, out: &mut BTreeMap<String, Value>) {
    for (k, v) in obj {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Object(inner) => flatten_into(inner, &key, out),
            other => {
                out.insert(key, other.clone());
            }
        }
    }
}

fn as_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn parse_count(key: &str, v: &Value, min: u64, max: u64) -> EngineResult<u64> {
    let s = as_string(v);
    let n: u64 = s.parse().map_err(|_| {
        EngineError::IllegalArgument(format!("Failed to parse value [{s}] for setting [{key}]"))
    })?;
    if n < min {
        return Err(EngineError::IllegalArgument(format!(
            "Failed to parse value [{s}] for setting [{key}] must be >= {min}"
        )));
    }
    if n > max {
        return Err(EngineError::IllegalArgument(format!(
            "Failed to parse value [{s}] for setting [{key}] must be <= {max}"
        )));
    }
    Ok(n)
}

/// A time value (`1s`, `500ms`, `2m`, `-1`) in milliseconds, read by the one reader the
/// edge uses too (`searchgate_core::params::parse_time`, Elasticsearch's grammar;
/// saturating conversions, never a wrapped product).
pub fn parse_time_ms(key: &str, s: &str) -> EngineResult<i64> {
    Ok(searchgate_core::params::parse_time(s, key)?.millis())
}

impl IndexSettings {
    /// Settings of a create-index request.
    pub fn from_create(v: Option<&Value>) -> EngineResult<IndexSettings> {
        let mut s = IndexSettings::default();
        if let Some(v) = v {
            s.apply(&flatten(v)?, true)?;
        }
        Ok(s)
    }

    /// Applies flattened settings; `creating` allows the static ones.
    pub fn apply(&mut self, flat: &BTreeMap<String, Value>, creating: bool) -> EngineResult<()> {
        for (key, v) in flat {
            let short = &key["index.".len()..];
            match short {
                "number_of_shards" if creating => {
                    self.shards = parse_count(key, v, 1, 1024)? as u32;
                }
                s if !creating && s.starts_with("analysis.") => {
                    // analyzers are fixed when the shards register them
                    return Err(EngineError::IllegalArgument(format!(
                        "Can't update non dynamic settings [[{key}]] for open indices (analysis of an existing index is not changed by this engine)"
                    )));
                }
                "number_of_shards" | "number_of_routing_shards" | "codec" if !creating => {
                    return Err(EngineError::IllegalArgument(format!(
                        "Can't update non dynamic settings [[{key}]] for open indices"
                    )));
                }
                "number_of_replicas" => self.replicas = parse_count(key, v, 0, 1024)? as u32,
                "refresh_interval" => self.refresh_ms = parse_time_ms(key, &as_string(v))?,
                "max_result_window" => {
                    self.max_result_window = parse_count(key, v, 1, i32::MAX as u64)? as usize
                }
                "blocks.read" | "blocks.metadata" if as_string(v) == "true" => {
                    return Err(EngineError::IllegalArgument(format!(
                        "[{key}] is not supported by this engine (write blocks are)"
                    )))
                }
                s if PRIVATE.contains(&s) => {
                    return Err(EngineError::IllegalArgument(format!(
                        "private index setting [{key}] can not be set explicitly"
                    )))
                }
                s if KNOWN.contains(&s) || KNOWN_PREFIXES.iter().any(|p| s.starts_with(p)) => {
                    if v.is_null() {
                        self.extra.remove(key); // `null` resets a setting
                    } else if let Value::Array(items) = v {
                        // lists (analysis filters, stop words) stay lists of strings
                        let items = items.iter().map(|i| Value::String(as_string(i))).collect();
                        self.extra.insert(key.clone(), Value::Array(items));
                    } else {
                        self.extra.insert(key.clone(), Value::String(as_string(v)));
                    }
                }
                _ => {
                    return Err(EngineError::IllegalArgument(format!(
                        "unknown setting [{key}] please check that any required plugins are installed, or check the breaking changes documentation for removed settings"
                    )))
                }
            }
        }
        Ok(())
    }

    /// The block that refuses document writes (`index.blocks.write`, `read_only`,
    /// `read_only_allow_delete`), as Elasticsearch names it.
    pub fn write_block(&self) -> Option<&'static str> {
        let on = |k: &str| {
            self.extra
                .get(k)
                .is_some_and(|v| v == &Value::Bool(true) || v.as_str() == Some("true"))
        };
        if on("index.blocks.read_only") {
            Some("FORBIDDEN/5/index read-only (api)")
        } else if on("index.blocks.read_only_allow_delete") {
            Some("FORBIDDEN/12/index read-only / allow delete (api)")
        } else if on("index.blocks.write") {
            Some("FORBIDDEN/8/index write (api)")
        } else {
            None
        }
    }

    /// `index.hidden`: wildcards skip the index unless they ask for hidden ones.
    pub fn hidden(&self) -> bool {
        self.extra
            .get("index.hidden")
            .is_some_and(|v| v == &Value::Bool(true) || v.as_str() == Some("true"))
    }

    /// The persisted form.
    pub fn to_persisted(&self) -> Value {
        json!({"shards": self.shards, "replicas": self.replicas, "refresh_ms": self.refresh_ms,
            "max_result_window": self.max_result_window, "extra": self.extra})
    }

    /// Reads the persisted form.
    pub fn from_persisted(v: &Value) -> IndexSettings {
        let d = IndexSettings::default();
        IndexSettings {
            shards: v["shards"].as_u64().map_or(d.shards, |n| n as u32),
            replicas: v["replicas"].as_u64().map_or(d.replicas, |n| n as u32),
            refresh_ms: v["refresh_ms"].as_i64().unwrap_or(d.refresh_ms),
            max_result_window: v["max_result_window"]
                .as_u64()
                .map_or(d.max_result_window, |n| n as usize),
            extra: v["extra"]
                .as_object()
                .map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default(),
        }
    }

    /// `{"index": {...}}` as `GET /<index>/_settings` shows it (values as strings).
    pub fn to_json(&self, name: &str, uuid: &str, created_ms: i64) -> Value {
        let mut root = Map::new();
        for (k, v) in self.flat(name, uuid, created_ms) {
            insert_dotted(&mut root, &k, v);
        }
        Value::Object(root)
    }

    /// The settings as `flat_settings=true` shows them (`index.`-dotted keys).
    pub fn to_flat_json(&self, name: &str, uuid: &str, created_ms: i64) -> Value {
        Value::Object(self.flat(name, uuid, created_ms).into_iter().collect())
    }

    fn flat(&self, name: &str, uuid: &str, created_ms: i64) -> BTreeMap<String, Value> {
        let mut flat: BTreeMap<String, Value> = self.extra.clone();
        let mut put = |k: &str, v: String| {
            flat.insert(format!("index.{k}"), Value::String(v));
        };
        put("number_of_shards", self.shards.to_string());
        put("number_of_replicas", self.replicas.to_string());
        put("uuid", uuid.to_string());
        put("provided_name", name.to_string());
        put("creation_date", created_ms.to_string());
        put("version.created", "7100299".to_string());
        if self.refresh_ms != 1000 {
            put(
                "refresh_interval",
                if self.refresh_ms < 0 {
                    "-1".into()
                } else {
                    format!("{}ms", self.refresh_ms)
                },
            );
        }
        if self.max_result_window != 10_000 {
            put("max_result_window", self.max_result_window.to_string());
        }
        flat
    }
}

/// Inserts `v` under a dotted key, creating the objects on the way.
pub fn insert_dotted(root: &mut Map<String, Value>, key: &str, v: Value) {
    match key.split_once('.') {
        None => {
            root.insert(key.to_string(), v);
        }
        Some((head, rest)) => {
            let entry = root.entry(head.to_string()).or_insert_with(|| json!({}));
            if !entry.is_object() {
                *entry = json!({});
            }
            if let Value::Object(m) = entry {
                insert_dotted(m, rest, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_three_forms_are_accepted() {
        for v in [
            json!({"number_of_shards": 3, "number_of_replicas": 0}),
            json!({"index": {"number_of_shards": "3", "number_of_replicas": "0"}}),
            json!({"index.number_of_shards": 3, "index.number_of_replicas": 0}),
        ] {
            let s = IndexSettings::from_create(Some(&v)).unwrap();
            assert_eq!((s.shards, s.replicas), (3, 0), "{v}");
        }
    }

    #[test]
    fn bounds_and_unknown_settings() {
        let e = IndexSettings::from_create(Some(&json!({"number_of_shards": 0}))).unwrap_err();
        assert!(e.to_string().contains("must be >= 1"));
        let e = IndexSettings::from_create(Some(&json!({"number_of_shards": 1025}))).unwrap_err();
        assert!(e.to_string().contains("must be <= 1024"));
        assert!(IndexSettings::from_create(Some(&json!({"number_of_shards": 1024}))).is_ok());
        let e = IndexSettings::from_create(Some(&json!({"foo": 1}))).unwrap_err();
        assert!(e.to_string().contains("unknown setting [index.foo]"));
        let e = IndexSettings::from_create(Some(&json!({"index": {"uuid": "x"}}))).unwrap_err();
        assert!(e.to_string().contains("private index setting"));
        let s = IndexSettings::from_create(Some(
            &json!({"analysis": {"analyzer": {"a": {"type": "standard"}}}}),
        ))
        .unwrap();
        assert!(s.extra.contains_key("index.analysis.analyzer.a.type"));
    }

    #[test]
    fn time_values() {
        assert_eq!(parse_time_ms("k", "1s").unwrap(), 1000);
        assert_eq!(parse_time_ms("k", "250ms").unwrap(), 250);
        assert_eq!(parse_time_ms("k", "2m").unwrap(), 120_000);
        assert_eq!(parse_time_ms("k", "-1").unwrap(), -1);
        assert!(parse_time_ms("k", "abc").is_err());
        assert!(parse_time_ms("k", "5").is_err());
    }

    #[test]
    fn static_settings_cannot_change() {
        let mut s = IndexSettings::default();
        let flat = flatten(&json!({"number_of_shards": 2})).unwrap();
        assert!(s.apply(&flat, false).is_err());
        let flat = flatten(&json!({"index": {"number_of_replicas": 0, "refresh_interval": "-1"}}))
            .unwrap();
        s.apply(&flat, false).unwrap();
        assert_eq!((s.replicas, s.refresh_ms), (0, -1));
    }

    #[test]
    fn rendered_as_strings_under_index() {
        let s = IndexSettings::default();
        let v = s.to_json("books", "u", 5);
        assert_eq!(v["index"]["number_of_shards"], "1");
        assert_eq!(v["index"]["uuid"], "u");
        assert_eq!(v["index"]["version"]["created"], "7100299");
        assert_eq!(IndexSettings::from_persisted(&s.to_persisted()), s);
    }
}
