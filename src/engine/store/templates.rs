//! Index templates: legacy (`_template`, merged by `order`) and composable
//! (`_index_template`, the highest `priority` wins and legacy ones are then ignored), kept in
//! `templates.json`, and the create-index request they produce for a new index (template
//! settings and mappings first, the request's over them), as Elasticsearch 7.10 applies them.
//! Logstash and Beats install one before writing to `logstash-*` / `filebeat-*`.
//! Component templates (`_component_template`) hold settings, mappings and aliases that
//! composable templates name in `composed_of`: they apply in that order, then the
//! composable template's own. A composable template naming a missing component, and the
//! deletion of a component still named, are refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};

use serde_json::{json, Map, Value};

use super::index::{write_atomic, CreateIndex};
use super::settings::{flatten, IndexSettings};
use crate::engine::error::{EngineError, EngineResult};
use crate::engine::mapping::{parse_mappings, Mapping};
use crate::engine::names::wildcard_match;

/// Which API a template belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Legacy,
    Composable,
    Component,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Legacy => "legacy",
            Kind::Composable => "composable",
            Kind::Component => "component",
        }
    }
}

/// A stored template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub name: String,
    pub kind: Kind,
    pub patterns: Vec<String>,
    /// `order` (legacy) or `priority` (composable).
    pub rank: i64,
    /// The body as given (what GET shows).
    pub body: Value,
}

impl Template {
    /// Parses a template body.
    pub fn parse(kind: Kind, name: &str, body: &Value) -> EngineResult<Template> {
        let obj = body
            .as_object()
            .ok_or_else(|| EngineError::Parsing("template body must be an object".into()))?;
        let pats = obj.get("index_patterns").or_else(|| obj.get("template"));
        let patterns: Vec<String> = match pats {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            _ => vec![],
        };
        if patterns.is_empty() && kind != Kind::Component {
            return Err(EngineError::Validation(vec![
                "index patterns are missing".into()
            ]));
        }
        if kind == Kind::Component && obj.get("template").is_none_or(|t| !t.is_object()) {
            return Err(EngineError::Validation(vec!["template is missing".into()]));
        }
        let rank_key = if kind == Kind::Legacy {
            "order"
        } else {
            "priority"
        };
        let t = Template {
            name: name.to_string(),
            kind,
            patterns,
            rank: obj.get(rank_key).and_then(Value::as_i64).unwrap_or(0),
            body: body.clone(),
        };
        build(&[&t], None)?; // refuse a template whose settings or mappings are invalid
        Ok(t)
    }

    fn part(&self, key: &str) -> Option<&Value> {
        match self.kind {
            Kind::Legacy => self.body.get(key),
            Kind::Composable | Kind::Component => {
                self.body.get("template").and_then(|t| t.get(key))
            }
        }
    }

    /// The component templates a composable template is composed of.
    pub fn composed_of(&self) -> Vec<String> {
        self.body
            .get("composed_of")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    }

    fn matches(&self, index: &str) -> bool {
        self.patterns.iter().any(|p| wildcard_match(p, index))
    }
}

/// Builds the create request of an index from matching templates (in application order)
/// and the request body.
pub fn build(templates: &[&Template], body: Option<&Value>) -> EngineResult<CreateIndex> {
    let mut flat: BTreeMap<String, Value> = BTreeMap::new();
    let mut mapping = Mapping::default();
    let mut type_name = None;
    let mut aliases = Map::new();
    let parts: Vec<(Option<&Value>, Option<&Value>, Option<&Value>)> = templates
        .iter()
        .map(|t| (t.part("settings"), t.part("mappings"), t.part("aliases")))
        .chain(body.map(|b| (b.get("settings"), b.get("mappings"), b.get("aliases"))))
        .collect();
    if let Some(b) = body {
        let obj = b.as_object().ok_or_else(|| {
            EngineError::Parsing("Failed to parse the create index body: expected an object".into())
        })?;
        if let Some(k) = obj
            .keys()
            .find(|k| !matches!(k.as_str(), "settings" | "mappings" | "aliases"))
        {
            return Err(EngineError::Parsing(format!(
                "unknown key [{k}] for create index"
            )));
        }
    }
    for (settings, mappings, al) in parts {
        if let Some(s) = settings {
            flat.extend(flatten(s)?);
        }
        if let Some(m) = mappings {
            let pm = parse_mappings(m)?;
            mapping = mapping.merged(&pm.mapping)?;
            type_name = pm.type_name.or(type_name);
        }
        if let Some(a) = al {
            let a = a
                .as_object()
                .ok_or_else(|| EngineError::Parsing("[aliases] must be an object".into()))?;
            aliases.extend(a.clone());
        }
    }
    let settings = IndexSettings::from_create(Some(&Value::Object(flat.into_iter().collect())))?;
    if let Some(t) = &type_name {
        if t.starts_with('_') && t != "_doc" {
            return Err(EngineError::IllegalArgument(format!(
                "mapping type name [{t}] can't start with '_' unless it is called [_doc]"
            )));
        }
    }
    Ok(CreateIndex {
        settings,
        mapping,
        type_name,
        aliases,
    })
}

/// The templates of a data directory.
#[derive(Debug)]
pub struct Templates {
    path: PathBuf,
    map: RwLock<BTreeMap<(Kind, String), Template>>,
    write: Mutex<()>,
}

impl Templates {
    /// Loads `templates.json` in `dir` (absent: none).
    pub fn open(dir: &Path) -> EngineResult<Templates> {
        let path = dir.join("templates.json");
        let mut map = BTreeMap::new();
        if let Ok(bytes) = std::fs::read(&path) {
            let v: Value = serde_json::from_slice(&bytes).map_err(EngineError::internal)?;
            for t in v.as_array().into_iter().flatten() {
                let kind = match t["kind"].as_str() {
                    Some("composable") => Kind::Composable,
                    Some("component") => Kind::Component,
                    _ => Kind::Legacy,
                };
                let name = t["name"].as_str().unwrap_or_default();
                let tpl = Template::parse(kind, name, &t["body"])?;
                map.insert((kind, name.to_string()), tpl);
            }
        }
        Ok(Templates {
            path,
            map: RwLock::new(map),
            write: Mutex::new(()),
        })
    }

    fn save(&self, map: &BTreeMap<(Kind, String), Template>) -> EngineResult<()> {
        let arr: Vec<Value> = map
            .values()
            .map(|t| json!({"kind": t.kind.as_str(), "name": t.name, "body": t.body}))
            .collect();
        write_atomic(
            &self.path,
            &serde_json::to_vec_pretty(&arr).map_err(EngineError::internal)?,
        )?;
        Ok(())
    }

    /// Stores (or replaces) a template; `create` refuses to replace.
    pub fn put(&self, t: Template, create: bool) -> EngineResult<()> {
        let _g = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let mut map = self.map.read().unwrap_or_else(|p| p.into_inner()).clone();
        let key = (t.kind, t.name.clone());
        if create && map.contains_key(&key) {
            return Err(EngineError::IllegalArgument(format!(
                "index template [{}] already exists",
                t.name
            )));
        }
        let missing: Vec<String> = t
            .composed_of()
            .into_iter()
            .filter(|c| !map.contains_key(&(Kind::Component, c.clone())))
            .collect();
        if !missing.is_empty() {
            return Err(EngineError::IllegalArgument(format!(
                "index template [{}] specifies component templates {missing:?} that do not exist",
                t.name
            )));
        }
        map.insert(key, t);
        self.save(&map)?;
        *self.map.write().unwrap_or_else(|p| p.into_inner()) = map;
        Ok(())
    }

    /// Deletes a template; false when there was none.
    pub fn delete(&self, kind: Kind, name: &str) -> EngineResult<bool> {
        let _g = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let mut map = self.map.read().unwrap_or_else(|p| p.into_inner()).clone();
        if kind == Kind::Component {
            let users: Vec<&str> = map
                .values()
                .filter(|t| t.composed_of().iter().any(|c| c == name))
                .map(|t| t.name.as_str())
                .collect();
            if !users.is_empty() {
                return Err(EngineError::IllegalArgument(format!(
                    "component templates [{name}] cannot be removed as they are still in use by index templates [{}]",
                    users.join(", ")
                )));
            }
        }
        let found = map.remove(&(kind, name.to_string())).is_some();
        if found {
            self.save(&map)?;
            *self.map.write().unwrap_or_else(|p| p.into_inner()) = map;
        }
        Ok(found)
    }

    /// Templates of `kind` whose name matches `pattern` (comma list with wildcards).
    pub fn list(&self, kind: Kind, pattern: Option<&str>) -> Vec<Template> {
        let map = self.map.read().unwrap_or_else(|p| p.into_inner());
        map.values()
            .filter(|t| t.kind == kind)
            .filter(|t| {
                pattern.is_none_or(|p| p.split(',').any(|q| wildcard_match(q.trim(), &t.name)))
            })
            .cloned()
            .collect()
    }

    /// The create request of `index`: matching templates, then `body`.
    pub fn create_request(&self, index: &str, body: Option<&Value>) -> EngineResult<CreateIndex> {
        let map = self.map.read().unwrap_or_else(|p| p.into_inner());
        let composable = map
            .values()
            .filter(|t| t.kind == Kind::Composable && t.matches(index))
            .max_by_key(|t| t.rank);
        let chosen: Vec<&Template> = match composable {
            Some(c) => c
                .composed_of()
                .iter()
                .filter_map(|n| map.get(&(Kind::Component, n.clone())))
                .chain(std::iter::once(c))
                .collect(),
            None => {
                let mut legacy: Vec<&Template> = map
                    .values()
                    .filter(|t| t.kind == Kind::Legacy && t.matches(index))
                    .collect();
                legacy.sort_by_key(|t| t.rank);
                legacy
            }
        };
        build(&chosen, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::mapping::LeafKind;

    #[test]
    fn legacy_templates_merge_by_order_and_the_request_wins() {
        let dir = tempfile::tempdir().unwrap();
        let t = Templates::open(dir.path()).unwrap();
        let a = json!({"index_patterns": ["logs-*"], "order": 0, "settings": {"number_of_shards": 2, "number_of_replicas": 0},
            "mappings": {"_doc": {"properties": {"@timestamp": {"type": "date"}, "geo": {"type": "geo_point"}}}}});
        let b = json!({"index_patterns": "logs-x*", "order": 5, "settings": {"index": {"number_of_shards": 3}}});
        t.put(Template::parse(Kind::Legacy, "a", &a).unwrap(), false)
            .unwrap();
        t.put(Template::parse(Kind::Legacy, "b", &b).unwrap(), false)
            .unwrap();
        let r = t.create_request("logs-x1", None).unwrap();
        assert_eq!((r.settings.shards, r.settings.replicas), (3, 0));
        assert_eq!(r.mapping.field("@timestamp").unwrap().kind, LeafKind::Date);
        assert_eq!(r.mapping.field("geo").unwrap().kind, LeafKind::Unindexed);
        assert_eq!(r.type_name.as_deref(), Some("_doc"));
        let r = t
            .create_request(
                "logs-y",
                Some(&json!({"settings": {"number_of_shards": 5}})),
            )
            .unwrap();
        assert_eq!(r.settings.shards, 5);
        let r = t.create_request("other", None).unwrap();
        assert_eq!(r.settings.shards, 1);
        // persisted
        let again = Templates::open(dir.path()).unwrap();
        assert_eq!(again.list(Kind::Legacy, None).len(), 2);
        assert!(again.delete(Kind::Legacy, "a").unwrap());
        assert!(!again.delete(Kind::Legacy, "a").unwrap());
    }

    #[test]
    fn composable_template_wins_by_priority() {
        let dir = tempfile::tempdir().unwrap();
        let t = Templates::open(dir.path()).unwrap();
        let legacy = json!({"index_patterns": ["*"], "settings": {"number_of_shards": 4}});
        let low = json!({"index_patterns": ["m*"], "priority": 1, "template": {"settings": {"number_of_shards": 2}}});
        let high = json!({"index_patterns": ["metrics-*"], "priority": 9, "template": {"settings": {"number_of_shards": 3}}});
        t.put(Template::parse(Kind::Legacy, "l", &legacy).unwrap(), false)
            .unwrap();
        t.put(
            Template::parse(Kind::Composable, "low", &low).unwrap(),
            false,
        )
        .unwrap();
        t.put(
            Template::parse(Kind::Composable, "high", &high).unwrap(),
            false,
        )
        .unwrap();
        assert_eq!(
            t.create_request("metrics-1", None).unwrap().settings.shards,
            3
        );
        assert_eq!(t.create_request("m1", None).unwrap().settings.shards, 2);
        assert_eq!(t.create_request("z", None).unwrap().settings.shards, 4);
        assert!(t
            .put(
                Template::parse(Kind::Composable, "low", &low).unwrap(),
                true
            )
            .is_err());
    }

    #[test]
    fn component_templates_compose() {
        let dir = tempfile::tempdir().unwrap();
        let t = Templates::open(dir.path()).unwrap();
        let comp = json!({"template": {"settings": {"number_of_shards": 2}, "mappings": {"properties": {"a": {"type": "keyword"}}}}});
        let idx = json!({"index_patterns": ["c-*"], "composed_of": ["base"], "template": {"settings": {"number_of_replicas": 0}}});
        let parsed = Template::parse(Kind::Composable, "i", &idx).unwrap();
        assert_eq!(t.put(parsed.clone(), false).unwrap_err().status(), 400);
        t.put(
            Template::parse(Kind::Component, "base", &comp).unwrap(),
            false,
        )
        .unwrap();
        t.put(parsed, false).unwrap();
        let r = t.create_request("c-1", None).unwrap();
        assert_eq!((r.settings.shards, r.settings.replicas), (2, 0));
        assert_eq!(r.mapping.field("a").unwrap().kind, LeafKind::Keyword);
        assert_eq!(t.delete(Kind::Component, "base").unwrap_err().status(), 400);
        assert!(t.delete(Kind::Composable, "i").unwrap());
        assert!(t.delete(Kind::Component, "base").unwrap());
        assert!(Template::parse(Kind::Component, "x", &json!({})).is_err());
    }

    #[test]
    fn invalid_templates_are_refused() {
        assert!(Template::parse(Kind::Legacy, "x", &json!({"settings": {}})).is_err());
        let bad =
            json!({"index_patterns": ["a"], "mappings": {"properties": {"f": {"type": "nope"}}}});
        assert_eq!(
            Template::parse(Kind::Legacy, "x", &bad)
                .unwrap_err()
                .status(),
            400
        );
        let bad = json!({"index_patterns": ["a"], "settings": {"number_of_shards": 0}});
        assert!(Template::parse(Kind::Legacy, "x", &bad).is_err());
    }
}
