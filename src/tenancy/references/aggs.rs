//! The aggregation rows of the table, read from `aggs_table`: every aggregation type has a
//! row listing each key its Elasticsearch 7.10 parser knows and what the key holds, and a
//! key not in the row is refused. `_index` as a bucketing field is allowed where only its
//! values come back (stripped): `terms` (with `include`/`exclude` rewritten), `composite`
//! terms sources (with `after` rewritten), and the counting metrics. Every key that holds
//! a query (`filter`, `filters`, `background_filter`, `t_test.{a,b}.filter`) is read as a
//! query, every sort (`top_metrics.sort`, `bucket_sort.sort`) as a search body's sort, and
//! scripts are refused everywhere.
//!
//! Must not touch: queries (see `query`), search options (see `search`).

use super::super::json::{Object, Value};
use super::super::lucene::{could_name_index, regexp};
use super::aggs_table::{rule, Agg, OnIndex, K, SOURCES};
use super::query::{hits, query};
use super::{at, check_field_list, no_scripts, object_mut, parsing, unsupported, Tenant};
use crate::errors::EdgeError;

pub use super::aggs_table::AGGS;

/// Reads and rewrites an `aggs` object: `{name: {type: body, aggs: {...}, meta: {...}}}`.
pub fn aggregations(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    for (name, def) in object_mut(v, where_)?.iter_mut() {
        let here = at(where_, name);
        let def = object_mut(def, &here)?;
        let mut kind = None;
        for (k, body) in def.iter_mut() {
            match k {
                "aggs" | "aggregations" => aggregations(t, body, &at(&here, k))?,
                "meta" => plain(body, &at(&here, k))?,
                _ if kind.is_some() => {
                    return Err(parsing(format!(
                        "Found two aggregation type definitions in [{name}]: [{}] and [{k}]",
                        kind.unwrap_or_default()
                    )))
                }
                _ => {
                    one(t, k, body, &at(&here, k))?;
                    kind = Some(k.to_string());
                }
            }
        }
        if kind.is_none() {
            return Err(parsing(format!(
                "Missing definition for aggregation [{name}]"
            )));
        }
    }
    Ok(())
}

fn one(t: &Tenant, kind: &str, body: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let Some(rule) = rule(kind) else {
        return Err(parsing(format!("Unknown aggregation type [{kind}]")));
    };
    match rule {
        Agg::Refuse => Err(no_scripts(where_)),
        Agg::Query => query(t, body, where_),
        Agg::Hits => hits::hits_options(t, body, where_),
        Agg::Keys(on, groups) => keyed(t, kind, on, groups, object_mut(body, where_)?, where_),
    }
}

/// The key of `groups` named `k`.
fn key_kind(groups: &[&[(&str, K)]], k: &str) -> Option<K> {
    groups
        .iter()
        .flat_map(|g| g.iter())
        .find(|(n, _)| *n == k)
        .map(|(_, kind)| *kind)
}

/// An aggregation body read key by key from its row.
fn keyed(
    t: &Tenant,
    kind: &str,
    on: OnIndex,
    groups: &[&[(&str, K)]],
    o: &mut Object,
    where_: &str,
) -> Result<(), EdgeError> {
    let index = o.get("field").and_then(Value::as_str) == Some("_index");
    let index_sources = composite_index_sources(o, where_)?;
    for (k, v) in o.iter_mut() {
        let here = at(where_, k);
        let Some(key) = key_kind(groups, k) else {
            return Err(parsing(format!("[{kind}] unknown field [{k}]")));
        };
        match key {
            K::Field => field(v, on, &here)?,
            K::Fields => check_field_list(v, &here)?,
            K::Plain => plain(v, &here)?,
            K::Query => query(t, v, &here)?,
            K::Sort => sort(t, v, &here)?,
            K::Script => return Err(no_scripts(&here)),
            K::FieldConfig => field_configs(t, v, &here)?,
            K::Filters => filters(t, v, &here)?,
            K::IncludeExclude if index && on == OnIndex::Terms => include_exclude(t, v, &here)?,
            K::IncludeExclude => plain(v, &here)?,
            K::Sources => sources(v, &here)?,
            K::After => after(t, v, &index_sources, &here)?,
        }
    }
    Ok(())
}

/// The aggregation's `field`: a string; `_index` only as `on` allows.
fn field(v: &Value, on: OnIndex, where_: &str) -> Result<(), EdgeError> {
    match v {
        Value::String(s) if s == "_index" && on != OnIndex::Refuse => Ok(()),
        Value::String(s) if could_name_index(s) => {
            Err(unsupported(&format!("an aggregation on [{s}]"), where_))
        }
        Value::String(_) => Ok(()),
        other => Err(parsing(format!(
            "[{where_}] must be a field name, found [{}]",
            other.token_name()
        ))),
    }
}

/// A value that holds no query: walked anyway, scripts refused and fields checked.
fn plain(v: &Value, where_: &str) -> Result<(), EdgeError> {
    match v {
        Value::Object(o) => o.iter().try_for_each(|(k, v)| {
            let here = at(where_, k);
            match k {
                "script" => Err(no_scripts(&here)),
                _ if k.ends_with("_script") => Err(no_scripts(&here)),
                "field" | "fields" => check_field_list(v, &here),
                _ => plain(v, &here),
            }
        }),
        Value::Array(a) => a.iter().try_for_each(|v| plain(v, where_)),
        _ => Ok(()),
    }
}

/// A sort inside an aggregation: read as a search body's sort (nested filters are
/// queries, scripts refused); sorting on `_index` only orders the tenant's own names.
fn sort(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    hits::sort(t, v, where_).map(|_| ())
}

/// One `{field, missing, script, filter, time_zone}` or a list of them.
fn field_configs(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let one = |c: &mut Value, here: &str| -> Result<(), EdgeError> {
        for (k, v) in object_mut(c, here)?.iter_mut() {
            let kh = at(here, k);
            match k {
                "field" => field(v, OnIndex::Refuse, &kh)?,
                "filter" => query(t, v, &kh)?,
                "script" => return Err(no_scripts(&kh)),
                "missing" | "time_zone" | "timezone" => plain(v, &kh)?,
                _ => return Err(parsing(format!("[{here}] unknown field [{k}]"))),
            }
        }
        Ok(())
    };
    match v {
        Value::Array(list) => list
            .iter_mut()
            .enumerate()
            .try_for_each(|(i, c)| one(c, &format!("{where_}[{i}]"))),
        c => one(c, where_),
    }
}

fn filters(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    match v {
        Value::Object(named) => named
            .iter_mut()
            .try_for_each(|(n, q)| query(t, q, &at(where_, n))),
        Value::Array(anon) => anon
            .iter_mut()
            .enumerate()
            .try_for_each(|(i, q)| query(t, q, &format!("{where_}[{i}]"))),
        _ => Err(parsing(format!("[{where_}] must be an object or an array"))),
    }
}

/// `include`/`exclude` on `_index`: exact values prefixed, a regex confined, partitions
/// refused.
fn include_exclude(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    match v {
        Value::String(re) => {
            *re = regexp::confine(t.prefix.as_str(), re).map_err(|e| {
                parsing(format!(
                    "[{where_}]: invalid regular expression at position {}: {}",
                    e.at, e.what
                ))
            })?;
            Ok(())
        }
        Value::Array(values) => values.iter_mut().try_for_each(|x| match x {
            Value::String(s) => {
                *s = t.prefixed(s);
                Ok(())
            }
            _ => Err(parsing(format!("[{where_}] on [_index] takes strings"))),
        }),
        _ => Err(unsupported("partitions of [_index] terms", where_)),
    }
}

/// The names of a `composite`'s sources that bucket on `_index` (empty for other types).
fn composite_index_sources(o: &Object, where_: &str) -> Result<Vec<String>, EdgeError> {
    let mut names = Vec::new();
    if let Some(Value::Array(sources)) = o.get("sources") {
        for (i, src) in sources.iter().enumerate() {
            let Some(src) = src.as_object() else {
                return Err(parsing(format!(
                    "[{where_}.sources[{i}]] must be an object"
                )));
            };
            for (name, def) in src.iter() {
                let on_index = def.as_object().is_some_and(|d| {
                    d.iter().any(|(_, body)| {
                        body.as_object()
                            .and_then(|b| b.get("field"))
                            .and_then(Value::as_str)
                            == Some("_index")
                    })
                });
                if on_index {
                    names.push(name.to_string());
                }
            }
        }
    }
    Ok(names)
}

/// `composite.sources`: `[{name: {type: {...}}}]`, each source read from `SOURCES`.
fn sources(v: &Value, where_: &str) -> Result<(), EdgeError> {
    let Value::Array(list) = v else {
        return Err(parsing(format!("[{where_}] must be an array")));
    };
    for (i, src) in list.iter().enumerate() {
        let here = format!("{where_}[{i}]");
        let Some(src) = src.as_object() else {
            return Err(parsing(format!("[{here}] must be an object")));
        };
        for (name, def) in src.iter() {
            let nhere = at(&here, name);
            let Some(def) = def.as_object().filter(|d| d.len() == 1) else {
                return Err(parsing(format!("[{nhere}] must hold one source")));
            };
            let (kind, body) = def.iter().next().expect("one source");
            let Some((_, groups)) = SOURCES.iter().find(|(n, _)| *n == kind) else {
                return Err(parsing(format!("invalid source type: {kind}")));
            };
            let on = if kind == "terms" {
                OnIndex::Terms
            } else {
                OnIndex::Refuse
            };
            let Some(body) = body.as_object() else {
                return Err(parsing(format!("[{nhere}.{kind}] must be an object")));
            };
            source(kind, on, groups, body, &at(&nhere, kind))?;
        }
    }
    Ok(())
}

fn source(
    kind: &str,
    on: OnIndex,
    groups: &[&[(&str, K)]],
    o: &Object,
    where_: &str,
) -> Result<(), EdgeError> {
    for (k, v) in o.iter() {
        let here = at(where_, k);
        match key_kind(groups, k) {
            Some(K::Field) if v.as_str() == Some("_index") && on == OnIndex::Refuse => {
                return Err(unsupported(&format!("{kind} on [_index]"), where_))
            }
            Some(K::Field) => field(v, on, &here)?,
            Some(K::Script) => return Err(no_scripts(&here)),
            Some(_) => plain(v, &here)?,
            None => return Err(parsing(format!("[{kind}] unknown field [{k}]"))),
        }
    }
    Ok(())
}

/// `composite.after`: the values of `_index` sources prefixed.
fn after(
    t: &Tenant,
    v: &mut Value,
    index_sources: &[String],
    where_: &str,
) -> Result<(), EdgeError> {
    for (name, v) in object_mut(v, where_)?.iter_mut() {
        match v {
            Value::String(s) if index_sources.iter().any(|n| n == name) => *s = t.prefixed(s),
            _ if index_sources.iter().any(|n| n == name) => {
                return Err(parsing(format!(
                    "[{where_}.{name}] on [_index] takes a string"
                )))
            }
            other => plain(other, &at(where_, name))?,
        }
    }
    Ok(())
}
