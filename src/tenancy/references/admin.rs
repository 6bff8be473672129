//! The index-administration rows of the table: index creation (`aliases`, `settings`,
//! `mappings`), settings and mapping updates, `_aliases` actions, `PUT /<i>/_alias/<n>`
//! bodies, legacy and composable templates and component templates, and the by-query
//! jobs (`_reindex`, `_update_by_query`, `_delete_by_query`).
//!
//! Must not touch: paths (the request planner rewrites them), the query DSL (`query`).

use super::super::json::{Object, Value};
use super::super::lucene::could_name_index;
use super::super::names::is_concrete;
use super::super::painless::check_script;
use super::query::{hits, query};
use super::{
    at, check_field_list, check_field_list_setting, illegal, known_keys, object_mut, parsing,
    resolve_date_math, rewrite_expression, rewrite_name, unsupported, Tenant,
};
use crate::errors::EdgeError;

/// Where settings are read: in a template, shard counts would bypass the plan's shard
/// check at creation, so they are refused there; in a settings update, replicas are not
/// counted against the plan (only index creation reserves shards), so they are refused
/// there (attacks-10 r2 #2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsAt {
    Index,
    Template,
    Update,
}

/// Settings refused everywhere (ingest pipelines are shared by every cluster upstream).
const PIPELINE_SETTINGS: &[&str] = &["default_pipeline", "final_pipeline"];
/// Settings refused in templates.
const SHARD_SETTINGS: &[&str] = &[
    "number_of_shards",
    "number_of_replicas",
    "auto_expand_replicas",
];
/// Settings refused in settings updates (the shards they add are not counted).
const REPLICA_SETTINGS: &[&str] = &["number_of_replicas", "auto_expand_replicas"];

/// Whether `key` (without `index.`) is one of the upstream's per-index guards of the shared
/// JVM, disk and cluster state (attacks-10 r2 #3: `max_rescore_window` raised, then a
/// rescore window of 5·10⁸ makes Elasticsearch allocate a priority queue that size and die;
/// mapping limits grow every node's cluster state; translog thresholds and slow logs use
/// disk outside the plan's metering).
fn is_upstream_guard(key: &str) -> bool {
    key.starts_with("max_")
        || key == "highlight.max_analyzed_offset"
        || (key.starts_with("mapping.") && key.ends_with(".limit"))
        || key.starts_with("translog.flush_threshold")
        || key.starts_with("translog.generation_threshold")
        || key.starts_with("translog.retention")
        || key.starts_with("search.slowlog")
        || key.starts_with("indexing.slowlog")
}

/// `PUT /<index>` body: `settings`, `mappings`, `aliases`.
pub fn create_index_body(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    if let Some(k) = o
        .keys()
        .find(|k| !["settings", "mappings", "aliases"].contains(k))
    {
        return Err(EdgeError::Refused {
            status: 400,
            kind: "parse_exception",
            reason: format!("unknown key [{k}] for create index"),
        });
    }
    index_parts(t, o, SettingsAt::Index, "")
}

fn index_parts(t: &Tenant, o: &mut Object, s: SettingsAt, where_: &str) -> Result<(), EdgeError> {
    if let Some(v) = o.get("settings") {
        settings(v, s, &at(where_, "settings"))?;
    }
    if let Some(v) = o.get("mappings") {
        mappings(v, &at(where_, "mappings"))?;
    }
    if let Some(v) = o.get_mut("aliases") {
        aliases_of_index(t, v, &at(where_, "aliases"))?;
    }
    Ok(())
}

/// Settings, flat (`"index.x.y"`) or nested, with or without the `index.` prefix.
pub fn settings(v: &Value, s: SettingsAt, where_: &str) -> Result<(), EdgeError> {
    let mut flat = Vec::new();
    flatten("", v, &mut flat);
    for (key, value) in flat {
        let k = key.strip_prefix("index.").unwrap_or(&key);
        let k = k.strip_prefix("settings.").unwrap_or(k);
        let k = k.strip_prefix("index.").unwrap_or(k);
        if PIPELINE_SETTINGS.contains(&k) {
            return Err(unsupported(&format!("the setting [index.{k}]"), where_));
        }
        if s == SettingsAt::Template && SHARD_SETTINGS.contains(&k) {
            return Err(illegal(format!(
                "the setting [index.{k}] is not supported in templates on this cluster: shards are counted against the plan when an index is created; set it in the index creation request instead"
            )));
        }
        if s == SettingsAt::Update && REPLICA_SETTINGS.contains(&k) {
            return Err(illegal(format!(
                "changing [index.{k}] is not supported on this cluster: shards are counted against the plan when an index is created; set the replicas in the index creation request instead"
            )));
        }
        if is_upstream_guard(k) {
            return Err(unsupported(
                &format!("the setting [index.{k}] (a limit of the shared upstream)"),
                where_,
            ));
        }
        if k == "query.default_field" || k.starts_with("query.default_field.") {
            check_field_list_setting(value, &at(where_, &key))?;
        }
    }
    Ok(())
}

fn flatten<'v>(prefix: &str, v: &'v Value, out: &mut Vec<(String, &'v Value)>) {
    match v {
        Value::Object(o) => {
            for (k, v) in o.iter() {
                let key = if prefix.is_empty() {
                    k.to_string()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        other => out.push((prefix.to_string(), other)),
    }
}

/// Mappings: field aliases to metadata fields, `copy_to` into them, runtime fields or
/// scripts (which could read `_index`), and the `percolator` field type are refused.
pub fn mappings(v: &Value, where_: &str) -> Result<(), EdgeError> {
    match v {
        Value::Object(o) => {
            if o.get("type").and_then(Value::as_str) == Some("percolator") {
                // its documents are queries the upstream parses and runs with the index's
                // real name, never read by the edge (attacks-10 #7)
                return Err(unsupported(
                    "the [percolator] field type (its documents are queries the edge does not read)",
                    where_,
                ));
            }
            if o.get("type").and_then(Value::as_str) == Some("alias") {
                if let Some(Value::String(p)) = o.get("path") {
                    if p.starts_with('_') || could_name_index(p) {
                        return Err(unsupported(&format!("a field alias to [{p}]"), where_));
                    }
                }
            }
            for (k, v) in o.iter() {
                let here = at(where_, k);
                match k {
                    "runtime" | "script" => return Err(unsupported(k, &here)),
                    "copy_to" => check_field_list_setting(v, &here)?,
                    _ => mappings(v, &here)?,
                }
            }
            Ok(())
        }
        Value::Array(a) => a.iter().try_for_each(|v| mappings(v, where_)),
        _ => Ok(()),
    }
}

const ALIAS_OPTIONS: &[&str] = &[
    "filter",
    "routing",
    "index_routing",
    "search_routing",
    "is_write_index",
    "is_hidden",
];

/// `aliases` of an index creation or a template: `{name: {filter, routing, ...}}`; each
/// name one concrete name (templates may use `{index}`).
fn aliases_of_index(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let o = object_mut(v, where_)?;
    for (name, def) in o.entries_mut().iter_mut() {
        let here = at(where_, name);
        if !is_concrete(name.as_bytes()) {
            return Err(EdgeError::InvalidIndexName {
                index: name.clone(),
                reason: "an alias name must not be a list, pattern or exclusion".into(),
            });
        }
        let mut n = Value::String(std::mem::take(name));
        rewrite_name(t, &mut n, &here)?;
        *name = match n {
            Value::String(s) => s,
            _ => unreachable!("a string stays a string"),
        };
        alias_options(t, def, &here)?;
    }
    Ok(())
}

fn alias_options(t: &Tenant, def: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let d = object_mut(def, where_)?;
    known_keys(d, ALIAS_OPTIONS, where_)?;
    match d.get_mut("filter") {
        Some(f) => query(t, f, &at(where_, "filter")),
        None => Ok(()),
    }
}

/// `PUT /<index>/_settings`.
pub fn settings_body(v: &Value) -> Result<(), EdgeError> {
    settings(v, SettingsAt::Update, "settings")
}

/// `POST /_aliases`: `{actions: [{add|remove|remove_index: {...}}]}`.
pub fn aliases_actions(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    known_keys(o, &["actions"], "")?;
    let Some(Value::Array(actions)) = o.get_mut("actions") else {
        return Err(parsing("[aliases] requires an [actions] array"));
    };
    for (i, a) in actions.iter_mut().enumerate() {
        let here = format!("actions[{i}]");
        let a = object_mut(a, &here)?;
        if a.len() != 1 {
            return Err(parsing(format!("[{here}] must hold one action")));
        }
        let (kind, body) = a.iter_mut().next().expect("one action");
        let here = at(&here, kind);
        let body = object_mut(body, &here)?;
        alias_action(t, kind, body, &here)?;
    }
    Ok(())
}

fn alias_action(t: &Tenant, kind: &str, b: &mut Object, where_: &str) -> Result<(), EdgeError> {
    let mut known: Vec<&str> = vec!["index", "indices", "must_exist"];
    match kind {
        "add" => known.extend(["alias", "aliases"].iter().chain(ALIAS_OPTIONS)),
        "remove" => known.extend(["alias", "aliases"]),
        "remove_index" => {}
        other => return Err(parsing(format!("Unsupported action [{other}]"))),
    }
    known_keys(b, &known, where_)?;
    for key in ["index", "indices"] {
        for_each_name(b.get_mut(key), &at(where_, key), &mut |v, here| {
            resolve_date_math(t, v)?;
            let wild = v
                .as_str()
                .is_some_and(|s| s.contains('*') || s.split(',').any(|p| p == "_all"));
            if kind == "remove_index" && wild {
                return Err(EdgeError::NotImplemented(format!(
                    "remove_index of [{}] (a wildcard)",
                    v.as_str().unwrap_or_default()
                )));
            }
            rewrite_expression(t, v, here)
        })?;
    }
    for key in ["alias", "aliases"] {
        for_each_name(b.get_mut(key), &at(where_, key), &mut |v, here| {
            resolve_date_math(t, v)?;
            if kind == "add" && !v.as_str().is_some_and(|s| is_concrete(s.as_bytes())) {
                return Err(parsing(format!(
                    "[{here}] must be one alias name (no pattern) to add"
                )));
            }
            rewrite_expression(t, v, here)
        })?;
    }
    if kind != "remove_index" && b.get("index").is_none() && b.get("indices").is_none() {
        return Err(illegal(format!("[{where_}] requires [index] or [indices]")));
    }
    match b.get_mut("filter") {
        Some(f) => query(t, f, &at(where_, "filter")),
        None => Ok(()),
    }
}

/// Applies `f` to a name or to each name of an array.
fn for_each_name(
    v: Option<&mut Value>,
    where_: &str,
    f: &mut dyn FnMut(&mut Value, &str) -> Result<(), EdgeError>,
) -> Result<(), EdgeError> {
    match v {
        None => Ok(()),
        Some(Value::Array(list)) => list.iter_mut().try_for_each(|x| f(x, where_)),
        Some(x) => f(x, where_),
    }
}

/// `PUT /<index>/_alias/<name>` body: `index` and `alias` override the path upstream.
pub fn put_alias_body(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    let mut known = vec!["index", "alias"];
    known.extend_from_slice(ALIAS_OPTIONS);
    known_keys(o, &known, "")?;
    if let Some(i) = o.get_mut("index") {
        resolve_date_math(t, i)?;
        rewrite_expression(t, i, "index")?;
    }
    if let Some(a) = o.get_mut("alias") {
        resolve_date_math(t, a)?;
        if !a.as_str().is_some_and(|s| is_concrete(s.as_bytes())) {
            return Err(parsing("[alias] must be one alias name"));
        }
        rewrite_name(t, a, "alias")?;
    }
    match o.get_mut("filter") {
        Some(f) => query(t, f, "filter"),
        None => Ok(()),
    }
}

/// Which template API a body belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateKind {
    /// `_template`: `index_patterns`, `order`, `version`, `settings`, `mappings`, `aliases`.
    Legacy,
    /// `_index_template`: `index_patterns`, `template`, `composed_of`, `priority`, ...
    Composable,
    /// `_component_template`: `template`, `version`, `_meta`.
    Component,
}

pub fn template_body(t: &Tenant, kind: TemplateKind, v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    let known: &[&str] = match kind {
        TemplateKind::Legacy => &[
            "index_patterns",
            "order",
            "version",
            "settings",
            "mappings",
            "aliases",
        ],
        TemplateKind::Composable => &[
            "index_patterns",
            "template",
            "composed_of",
            "priority",
            "version",
            "_meta",
            "data_stream",
        ],
        TemplateKind::Component => &["template", "version", "_meta"],
    };
    known_keys(o, known, "")?;
    if o.get("data_stream").is_some() {
        return Err(unsupported("data_stream", "data_stream"));
    }
    for_each_name(
        o.get_mut("index_patterns"),
        "index_patterns",
        &mut |v, here| {
            if v.as_str().is_some_and(|s| s.contains(',')) {
                return Err(parsing("[index_patterns] takes one pattern per entry"));
            }
            rewrite_expression(t, v, here)
        },
    )?;
    for_each_name(o.get_mut("composed_of"), "composed_of", &mut |v, here| {
        rewrite_name(t, v, here)
    })?;
    match kind {
        TemplateKind::Legacy => index_parts(t, o, SettingsAt::Template, ""),
        _ => match o.get_mut("template") {
            Some(inner) => {
                let inner = object_mut(inner, "template")?;
                known_keys(inner, &["settings", "mappings", "aliases"], "template")?;
                index_parts(t, inner, SettingsAt::Template, "template")
            }
            None => Ok(()),
        },
    }
}

/// Which by-query job a body belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByQuery {
    Delete,
    Update,
}

/// `_delete_by_query`, `_update_by_query`.
pub fn by_query_body(t: &Tenant, kind: ByQuery, v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    let mut known = vec![
        "query",
        "max_docs",
        "conflicts",
        "slice",
        "size",
        "sort",
        "_source",
    ];
    if kind == ByQuery::Update {
        known.push("script");
    }
    known_keys(o, &known, "")?;
    job_search_parts(t, o, "")?;
    match o.get("script") {
        Some(s) => check_script(s, "script"),
        None => Ok(()),
    }
}

/// The search parts of a by-query job or a `_reindex` source.
fn job_search_parts(t: &Tenant, o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    if let Some(q) = o.get_mut("query") {
        query(t, q, &at(where_, "query"))?;
    }
    if let Some(s) = o.get("slice") {
        let Value::Object(so) = s else {
            return Err(parsing("[slice] must be an object"));
        };
        known_keys(so, &["id", "max", "field"], &at(where_, "slice"))?;
        if let Some(f) = so.get("field") {
            check_field_list(f, &at(where_, "slice.field"))?;
        }
    }
    if let Some(s) = o.get_mut("sort") {
        // read as a search body's sort: options walked, a nested `filter` is a query
        // (attacks-10 #10); no `search_after` follows, so `_index` has no use here
        let here = at(where_, "sort");
        if !hits::sort(t, s, &here)?.is_empty() {
            return Err(unsupported("sort on [_index]", &here));
        }
    }
    Ok(())
}

/// `_reindex` within the tenant: `source.index` (expression) and `dest.index` (one name)
/// rewritten; a remote source, a destination pipeline and other op types refused.
pub fn reindex_body(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    let o = object_mut(v, "")?;
    known_keys(
        o,
        &["source", "dest", "script", "conflicts", "max_docs", "size"],
        "",
    )?;
    let Some(source) = o.get_mut("source") else {
        return Err(illegal("[reindex] requires a [source]"));
    };
    let so = object_mut(source, "source")?;
    if so.get("remote").is_some() {
        return Err(unsupported("source.remote", "source.remote"));
    }
    known_keys(
        so,
        &["index", "query", "size", "sort", "_source", "slice", "type"],
        "source",
    )?;
    for_each_name(so.get_mut("index"), "source.index", &mut |v, here| {
        resolve_date_math(t, v)?;
        rewrite_expression(t, v, here)
    })?;
    if so.get("index").is_none() {
        return Err(illegal("[reindex] requires [source.index]"));
    }
    job_search_parts(t, so, "source")?;
    let Some(dest) = o.get_mut("dest") else {
        return Err(illegal("[reindex] requires a [dest]"));
    };
    let d = object_mut(dest, "dest")?;
    if d.get("pipeline").is_some() {
        return Err(unsupported("dest.pipeline", "dest.pipeline"));
    }
    known_keys(
        d,
        &["index", "op_type", "version_type", "routing", "type"],
        "dest",
    )?;
    if let Some(op) = d.get("op_type") {
        if !matches!(op.as_str(), Some("index" | "create")) {
            return Err(parsing("[dest.op_type] must be [index] or [create]"));
        }
    }
    match d.get_mut("index") {
        Some(i) => {
            resolve_date_math(t, i)?;
            rewrite_name(t, i, "dest.index")?
        }
        None => return Err(illegal("[reindex] requires [dest.index]")),
    }
    match o.get("script") {
        Some(s) => check_script(s, "script"),
        None => Ok(()),
    }
}
