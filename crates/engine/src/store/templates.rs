//! Index templates: legacy (`_template`, merged by `order`) and composable
//! (`_index_template`, the highest `priority` wins and legacy ones are then ignored), kept in
//! `templates.json`, and the create-index request they produce for a new index (template
//! settings and mappings first, the request's over them), as Elasticsearch 7.10 applies them.
//! Logstash and Beats install one before writing to `logstash-*` / `filebeat-*`.
//! Component templates (`_component_template`) hold settings, mappings and aliases that
//! composable templates name in `composed_of`: they apply in that order, then the
//! composable template's own. A composable template naming a missing component, the
//! deletion of a component still named, two composable templates of one priority whose
//! patterns overlap, keys a template API does not have, and `data_stream` are refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::{Mutex, RwLock};

use serde_json::{json, Map, Value};

use super::index::{write_atomic, CreateIndex};
use super::settings::{flatten, IndexSettings};
use crate::error::{EngineError, EngineResult};
use crate::mapping::{parse_mappings, Mapping};
use crate::names::wildcard_match;

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

/// The keys of each template API's body, as Elasticsearch 7.10 parses them.
fn check_keys(kind: Kind, obj: &Map<String, Value>) -> EngineResult<()> {
    let keys: &[&str] = match kind {
        Kind::Legacy => &[
            "index_patterns",
            "template",
            "order",
            "version",
            "settings",
            "mappings",
            "aliases",
        ],
        Kind::Composable => &[
            "index_patterns",
            "template",
            "composed_of",
            "priority",
            "version",
            "_meta",
            "data_stream",
        ],
        Kind::Component => &["template", "version", "_meta"],
    };
    if let Some(k) = obj.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err(match kind {
            Kind::Legacy => EngineError::Parse(format!("unknown key [{k}] in the template ")),
            Kind::Composable => {
                EngineError::XContent(format!("[index_template] unknown field [{k}]"))
            }
            Kind::Component => {
                EngineError::XContent(format!("[component_template] unknown field [{k}]"))
            }
        });
    }
    if kind == Kind::Composable && obj.contains_key("data_stream") {
        return Err(EngineError::IllegalArgument(
            "[data_stream] templates are not supported by this engine (no data streams)".into(),
        ));
    }
    if kind != Kind::Legacy {
        if let Some(t) = obj.get("template").and_then(Value::as_object) {
            if let Some(k) = t
                .keys()
                .find(|k| !matches!(k.as_str(), "settings" | "mappings" | "aliases"))
            {
                return Err(EngineError::XContent(format!(
                    "[template] unknown field [{k}]"
                )));
            }
        }
    }
    Ok(())
}

/// Whether some index name matches both `*`-patterns.
pub fn patterns_overlap(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // reach[i][j]: a[i..] and b[j..] can match one common suffix
    let mut reach = vec![vec![false; b.len() + 1]; a.len() + 1];
    for i in (0..=a.len()).rev() {
        for j in (0..=b.len()).rev() {
            reach[i][j] = if i == a.len() && j == b.len() {
                true
            } else if i < a.len() && a[i] == '*' {
                reach[i + 1][j] || (j < b.len() && reach[i][j + 1])
            } else if j < b.len() && b[j] == '*' {
                reach[i][j + 1] || (i < a.len() && reach[i + 1][j])
            } else {
                i < a.len() && j < b.len() && a[i] == b[j] && reach[i + 1][j + 1]
            };
        }
    }
    reach[0][0]
}

impl Template {
    /// Parses a template body.
    pub fn parse(kind: Kind, name: &str, body: &Value) -> EngineResult<Template> {
        let obj = body
            .as_object()
            .ok_or_else(|| EngineError::Parsing("template body must be an object".into()))?;
        check_keys(kind, obj)?;
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
    for (settings, _, al) in &parts {
        if let Some(s) = settings {
            flat.extend(flatten(s)?);
        }
        if let Some(a) = al {
            let a = a
                .as_object()
                .ok_or_else(|| EngineError::Parsing("[aliases] must be an object".into()))?;
            let mut a = a.clone();
            crate::alias_routing::normalise_aliases(&mut a)?;
            aliases.extend(a);
        }
    }
    let settings = IndexSettings::from_create(Some(&Value::Object(flat.into_iter().collect())))?;
    // mappings name the analyzers of the settings, whichever part defined them
    let analysis = Arc::new(crate::analysis::from_settings(&settings.extra)?);
    mapping.analysis = analysis.clone();
    for (_, mappings, _) in &parts {
        if let Some(m) = mappings {
            let pm = parse_mappings(m, &analysis)?;
            mapping = mapping.merged(&pm.mapping)?;
            type_name = pm.type_name.or(type_name);
        }
    }
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

/// Refuses a composable template whose patterns overlap those of another of the same
/// priority (Elasticsearch could not choose between them when an index is created).
fn same_priority_overlap(
    map: &BTreeMap<(Kind, String), Template>,
    t: &Template,
) -> EngineResult<()> {
    let conflicts: Vec<&Template> = map
        .values()
        .filter(|o| o.kind == Kind::Composable && o.name != t.name && o.rank == t.rank)
        .filter(|o| {
            t.patterns
                .iter()
                .any(|p| o.patterns.iter().any(|q| patterns_overlap(p, q)))
        })
        .collect();
    if conflicts.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = conflicts.iter().map(|o| o.name.as_str()).collect();
    let pats: Vec<String> = conflicts
        .iter()
        .map(|o| format!("{} => [{}]", o.name, o.patterns.join(", ")))
        .collect();
    Err(EngineError::IllegalArgument(format!(
        "index template [{}] has index patterns [{}] matching patterns from existing templates [{}] with patterns ({}) that have the same priority [{}], multiple index templates may not match during index creation, please use a different priority",
        t.name,
        t.patterns.join(", "),
        names.join(","),
        pats.join(","),
        t.rank
    )))
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
        if t.kind == Kind::Composable {
            same_priority_overlap(&map, &t)?;
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
#[path = "templates_tests.rs"]
mod tests;
