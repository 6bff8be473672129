//! Aliases: `PUT|POST|DELETE /<indices>/_alias/<name>` (also `_aliases`), `GET|HEAD
//! [/<indices>]/_alias[/<names>]`, `GET /_aliases`, the atomic `POST /_aliases` actions
//! (`add`, `remove`, `remove_index`), and `_cat/aliases`. An alias has an optional `filter`
//! (a query, applied to searches through the alias), `is_write_index`, and routing
//! (`routing`, `index_routing`, `search_routing`: `alias_routing`); writes through an alias
//! go to its write index. Every action of a request is validated before any is
//! applied: a refused request changes nothing.

use serde_json::{json, Map, Value};

use super::cluster::cat_response;
use super::json::json_body;
use super::params::Params;
use super::{ApiResult, Engine, Request, Response};
use crate::cat::{self, Cell};
use crate::error::{EngineError, EngineResult};
use crate::names::{validate_index_name, wildcard_match};
use crate::query::parse_query;
use crate::resolve::Options;
use searchgate_core::proto::Method;

/// One alias change.
#[derive(Debug, Clone, PartialEq)]
enum Change {
    Add {
        index: String,
        alias: String,
        def: Map<String, Value>,
    },
    Remove {
        index: String,
        alias: String,
    },
    RemoveIndex(String),
}

fn invalid_alias(name: &str, why: &str) -> EngineError {
    EngineError::IllegalArgument(format!("Invalid alias name [{name}]: {why}"))
}

/// The definition of an alias from an add action or a PUT body (keys checked).
fn definition(
    body: &Map<String, Value>,
    skip: &[&str],
    alias: &str,
) -> EngineResult<Map<String, Value>> {
    let mut def = Map::new();
    crate::alias_routing::read_definition_routing(alias, body, &mut def)?;
    for (k, v) in body {
        match k.as_str() {
            k if skip.contains(&k) => {}
            "filter" => {
                parse_query(v)?;
                def.insert("filter".into(), v.clone());
            }
            "is_write_index" | "is_hidden" => {
                let b = v
                    .as_bool()
                    .ok_or_else(|| EngineError::Parsing(format!("[{k}] must be a boolean")))?;
                def.insert(k.into(), Value::Bool(b));
            }
            "routing" | "index_routing" | "search_routing" => {}
            other => {
                return Err(EngineError::Parsing(format!(
                    "[aliases] unknown field [{other}]"
                )))
            }
        }
    }
    Ok(def)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => vec![],
    }
}

/// The concrete indices an action names (wildcards allowed).
fn indices_of(engine: &Engine, exprs: &[String]) -> EngineResult<Vec<String>> {
    if exprs.is_empty() {
        return Err(EngineError::Validation(vec!["index is missing".into()]));
    }
    let opts = Options {
        forbid_closed: false,
        expand_closed: true,
        ..Options::default()
    };
    let mut out = Vec::new();
    for e in exprs {
        for (h, _) in engine.store.resolve_filtered(e, opts)? {
            if !out.contains(&h.name) {
                out.push(h.name.clone());
            }
        }
    }
    Ok(out)
}

/// Refuses the keys of an action that its kind does not take, as Elasticsearch does
/// (`[filter] is unsupported for [remove]`).
fn only_keys(kind: &str, spec: &Map<String, Value>, keys: &[&str]) -> EngineResult<()> {
    match spec.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(k) => Err(EngineError::IllegalArgument(format!(
            "[{k}] is unsupported for [{kind}]"
        ))),
        None => Ok(()),
    }
}

/// Parses `POST /_aliases` actions into changes.
fn parse_actions(engine: &Engine, body: &Value) -> EngineResult<Vec<Change>> {
    let actions = body
        .get("actions")
        .and_then(Value::as_array)
        .ok_or_else(|| EngineError::Validation(vec!["no actions specified".into()]))?;
    let mut out = Vec::new();
    let now = crate::date_names::wall_ms();
    for a in actions {
        let (kind, spec) = a
            .as_object()
            .filter(|o| o.len() == 1)
            .and_then(|o| o.iter().next())
            .ok_or_else(|| {
                EngineError::Parsing("[aliases] action must be an object of one action".into())
            })?;
        let spec = spec
            .as_object()
            .ok_or_else(|| EngineError::Parsing(format!("[{kind}] must be an object")))?;
        let mut idx = strings(spec.get("index"));
        idx.extend(strings(spec.get("indices")));
        let mut names = strings(spec.get("alias"));
        names.extend(strings(spec.get("aliases")));
        // date math in index and alias names, resolved once for the request
        for n in idx.iter_mut().chain(names.iter_mut()) {
            *n = crate::date_names::resolve_expression(n, now)?;
        }
        match kind.as_str() {
            "add" => {
                let def = definition(
                    spec,
                    &["index", "indices", "alias", "aliases"],
                    &names.join(","),
                )?;
                if names.is_empty() {
                    return Err(EngineError::Validation(vec!["alias is missing".into()]));
                }
                for index in indices_of(engine, &idx)? {
                    for alias in &names {
                        out.push(Change::Add {
                            index: index.clone(),
                            alias: alias.clone(),
                            def: def.clone(),
                        });
                    }
                }
            }
            "remove" => {
                only_keys(kind, spec, &["index", "indices", "alias", "aliases"])?;
                if names.is_empty() {
                    return Err(EngineError::Validation(vec!["alias is missing".into()]));
                }
                for index in indices_of(engine, &idx)? {
                    for alias in &names {
                        out.push(Change::Remove {
                            index: index.clone(),
                            alias: alias.clone(),
                        });
                    }
                }
            }
            "remove_index" => {
                only_keys(kind, spec, &["index", "indices"])?;
                for index in indices_of(engine, &idx)? {
                    out.push(Change::RemoveIndex(index));
                }
            }
            other => {
                return Err(EngineError::Parsing(format!(
                    "[aliases] unknown action [{other}]"
                )))
            }
        }
    }
    Ok(out)
}

/// Checks and applies changes: the new alias maps are computed and validated first.
fn apply(engine: &Engine, changes: Vec<Change>) -> EngineResult<()> {
    let mut maps: std::collections::BTreeMap<String, Map<String, Value>> = engine
        .store
        .all()
        .iter()
        .map(|h| (h.name.clone(), h.aliases()))
        .collect();
    let mut removed = Vec::new();
    for c in &changes {
        match c {
            Change::Add { index, alias, def } => {
                if alias.contains('*') {
                    return Err(invalid_alias(
                        alias,
                        "must not contain the following characters [*]",
                    ));
                }
                validate_index_name(alias).map_err(|e| invalid_alias(alias, &e.body().reason))?;
                if maps.contains_key(alias) && !removed.contains(alias) {
                    return Err(EngineError::InvalidAliasName(alias.clone()));
                }
                if let Some(m) = maps.get_mut(index) {
                    m.insert(alias.clone(), Value::Object(def.clone()));
                }
            }
            Change::Remove { index, alias } => {
                let m = maps
                    .get_mut(index)
                    .ok_or_else(|| EngineError::IndexNotFound(index.clone()))?;
                let hit: Vec<String> = m
                    .keys()
                    .filter(|k| wildcard_match(alias, k))
                    .cloned()
                    .collect();
                if hit.is_empty() {
                    return Err(EngineError::AliasesMissing(vec![alias.clone()]));
                }
                hit.iter().for_each(|k| {
                    m.remove(k);
                });
            }
            Change::RemoveIndex(i) => {
                maps.remove(i);
                removed.push(i.clone());
            }
        }
    }
    check_write_indices(&maps)?;
    for i in &removed {
        engine.store.delete(i)?;
    }
    for h in engine.store.all() {
        if let Some(m) = maps.remove(&h.name) {
            if m != h.aliases() {
                h.set_aliases(m)?;
            }
        }
    }
    Ok(())
}

fn check_write_indices(
    maps: &std::collections::BTreeMap<String, Map<String, Value>>,
) -> EngineResult<()> {
    let mut writers: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for (index, aliases) in maps {
        for (alias, def) in aliases {
            if def.get("is_write_index") == Some(&Value::Bool(true)) {
                writers.entry(alias).or_default().push(index);
            }
        }
    }
    match writers.into_iter().find(|(_, v)| v.len() > 1) {
        Some((alias, v)) => Err(EngineError::IllegalArgument(format!(
            "alias [{alias}] has more than one write index [{}]",
            v.join(",")
        ))),
        None => Ok(()),
    }
}

/// `POST /_aliases` and `GET /_aliases`.
pub fn aliases(engine: &Engine, req: &mut Request<'_>) -> ApiResult {
    if req.method == Method::Get {
        return get(engine, &req.params, None, None);
    }
    let body = json_body(req.body, engine.max_body)?
        .ok_or_else(|| EngineError::Validation(vec!["no actions specified".into()]))?;
    let changes = parse_actions(engine, &body)?;
    apply(engine, changes)?;
    Ok(Response::json(200, &json!({"acknowledged": true})))
}

/// `[/<indices>]/_alias[/<names>]`.
pub fn alias(
    engine: &Engine,
    req: &mut Request<'_>,
    index: Option<&str>,
    name: Option<&str>,
) -> ApiResult {
    match (req.method, index, name) {
        (Method::Put | Method::Post, Some(i), Some(n)) => {
            let body = json_body(req.body, engine.max_body)?.unwrap_or(json!({}));
            let obj = body
                .as_object()
                .ok_or_else(|| EngineError::Parsing("alias body must be an object".into()))?;
            let def = definition(obj, &[], n)?;
            let changes = indices_of(engine, &[i.to_string()])?
                .into_iter()
                .flat_map(|index| n.split(',').map(move |a| (index.clone(), a.to_string())))
                .map(|(index, alias)| Change::Add {
                    index,
                    alias,
                    def: def.clone(),
                })
                .collect();
            apply(engine, changes)?;
            Ok(Response::json(200, &json!({"acknowledged": true})))
        }
        (Method::Delete, Some(i), Some(n)) => {
            let mut changes = Vec::new();
            let indices = indices_of(engine, &[i.to_string()])?;
            let names: Vec<&str> = n.split(',').collect();
            let any = indices.iter().any(|index| {
                engine.store.get(index).is_some_and(|h| {
                    h.aliases()
                        .keys()
                        .any(|k| names.iter().any(|p| *p == "_all" || wildcard_match(p, k)))
                })
            });
            if !any {
                return Err(EngineError::AliasesMissing(
                    names.iter().map(|s| s.to_string()).collect(),
                ));
            }
            for index in indices {
                let h = engine.store.require(&index)?;
                for k in h.aliases().keys() {
                    if names.iter().any(|p| *p == "_all" || wildcard_match(p, k)) {
                        changes.push(Change::Remove {
                            index: index.clone(),
                            alias: k.clone(),
                        });
                    }
                }
            }
            apply(engine, changes)?;
            Ok(Response::json(200, &json!({"acknowledged": true})))
        }
        (Method::Head, i, n) => {
            let r = get(engine, &req.params, i, n)?;
            Ok(Response::status(r.status))
        }
        (_, i, n) => get(engine, &req.params, i, n),
    }
}

/// `GET [/<indices>]/_alias[/<names>]`: `{index: {aliases: {...}}}`; names that match no
/// alias make it a 404 that still lists what was found, as Elasticsearch 7.10 answers.
fn get(engine: &Engine, params: &Params, index: Option<&str>, name: Option<&str>) -> ApiResult {
    let opts = params.indices_options(Options {
        forbid_closed: false,
        expand_closed: true,
        expand_hidden: true,
        ..Options::default()
    })?;
    let indices = engine
        .store
        .resolve_filtered(index.unwrap_or("_all"), opts)?;
    let names: Option<Vec<&str>> = name.map(|n| n.split(',').collect());
    let wanted = |k: &str| {
        names
            .as_ref()
            .is_none_or(|ns| ns.iter().any(|p| *p == "_all" || wildcard_match(p, k)))
    };
    let mut out = Map::new();
    let mut found: Vec<String> = Vec::new();
    for (h, _) in indices {
        let aliases: Map<String, Value> =
            h.aliases().into_iter().filter(|(k, _)| wanted(k)).collect();
        found.extend(aliases.keys().cloned());
        if names.is_none() || !aliases.is_empty() {
            out.insert(h.name.clone(), json!({ "aliases": aliases }));
        }
    }
    let missing: Vec<&str> = names
        .unwrap_or_default()
        .into_iter()
        .filter(|p| !p.contains('*') && *p != "_all" && !found.iter().any(|f| f == p))
        .collect();
    if !missing.is_empty() {
        let mut v = Value::Object(out);
        let what = if missing.len() == 1 {
            "alias"
        } else {
            "aliases"
        };
        v["error"] = json!(format!("{what} [{}] missing", missing.join(",")));
        v["status"] = json!(404);
        return Ok(Response::json(404, &v));
    }
    if out.is_empty() && name.is_some() {
        return Ok(Response::json(200, &json!({})));
    }
    Ok(Response::json(200, &Value::Object(out)))
}

/// `GET /_cat/aliases[/<names>]`.
pub fn cat_aliases(engine: &Engine, name: Option<&str>, params: &Params) -> ApiResult {
    use cat::col;
    const COLS: [cat::Column; 6] = [
        col("alias", false, &["a"]),
        col("index", false, &["i", "idx"]),
        col("filter", false, &["f", "fi"]),
        col("routing.index", false, &["ri", "routingIndex"]),
        col("routing.search", false, &["rs", "routingSearch"]),
        col("is_write_index", false, &["w", "isWriteIndex"]),
    ];
    let names: Vec<&str> = name.map(|n| n.split(',').collect()).unwrap_or_default();
    let mut rows = Vec::new();
    let opts = params.indices_options(Options::default())?;
    for h in engine.store.resolve("_all", opts)? {
        for (alias, def) in h.aliases() {
            if !names.is_empty() && !names.iter().any(|p| wildcard_match(p, &alias)) {
                continue;
            }
            let filter = if def.get("filter").is_some() {
                "*"
            } else {
                "-"
            };
            let routing = |k: &str| {
                def.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("-")
                    .to_string()
            };
            let write = match def.get("is_write_index").and_then(Value::as_bool) {
                Some(b) => b.to_string(),
                None => "-".into(),
            };
            rows.push(vec![
                Cell::Text(alias),
                Cell::Text(h.name.clone()),
                Cell::Text(filter.into()),
                Cell::Text(routing("index_routing")),
                Cell::Text(routing("search_routing")),
                Cell::Text(write),
            ]);
        }
    }
    cat_response(&COLS, rows, params)
}
