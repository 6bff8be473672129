//! The options of a page of hits, wherever the DSL has one: the search body, `inner_hits`
//! of a query and of `collapse`, and the `top_hits` aggregation. Sort (with `_index`
//! positions recorded for `search_after`), highlight, collapse, and the plain options.
//!
//! A child of `query` because the grammar is recursive both ways: a query holds
//! `inner_hits`, and a nested sort's `filter` or a `highlight_query` is a query again.
//!
//! Must not touch: the search body's own keys (`search`), aggregations (`aggs`).

use super::super::super::json::{Object, Value};
use super::super::super::lucene::could_name_index;
use super::super::{
    at, check_field_list, known_keys, no_scripts, object_mut, parsing, unsupported, Tenant,
};
use super::{query, refuse_scripts};
use crate::errors::EdgeError;

/// The sort spec (string, object or array of them); returns the positions sorting on
/// `_index`. Used for search bodies, `inner_hits`/`top_hits`, `top_metrics`, `bucket_sort`
/// and the `sort` of by-query jobs and `_reindex` sources: every option is read from
/// [`SORT_OPTIONS`] (a nested sort's `filter` and the deprecated `nested_filter` are
/// queries), unknown options refused (attacks-10 #6, #10).
pub fn sort(t: &Tenant, v: &mut Value, where_: &str) -> Result<Vec<usize>, EdgeError> {
    let mut on_index = Vec::new();
    let items: Vec<&mut Value> = match v {
        Value::Array(a) => a.iter_mut().collect(),
        other => vec![other],
    };
    for (i, item) in items.into_iter().enumerate() {
        let here = format!("{where_}[{i}]");
        let field = match item {
            Value::String(f) => f.clone(),
            Value::Object(o) if o.len() == 1 => {
                let (f, spec) = o.iter_mut().next().expect("one key");
                match f {
                    "_script" => return Err(no_scripts(&here)),
                    "_geo_distance" => geo_distance_sort(t, spec, &at(&here, f))?,
                    _ => sort_options(t, spec, &at(&here, f))?,
                }
                f.to_string()
            }
            _ => return Err(parsing(format!("[{here}] malformed sort"))),
        };
        if field == "_index" {
            on_index.push(i);
        } else if could_name_index(&field) {
            return Err(unsupported(&format!("sort on [{field}]"), &here));
        }
    }
    Ok(on_index)
}

/// What an option of a field sort holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SortKey {
    /// A scalar (`order`, `missing`, `mode`, ...).
    Scalar,
    /// A field path (`nested_path`): must not be `_index`.
    Path,
    /// `nested`: `{path, filter, max_children, nested}`.
    Nested,
    /// A query (`nested_filter`, deprecated but still parsed by 7.10).
    Query,
}

/// The options of a field sort (`FieldSortBuilder` of 7.10); `_score` and `_doc` take a
/// subset of them.
const SORT_OPTIONS: &[(&str, SortKey)] = &[
    ("order", SortKey::Scalar),
    ("missing", SortKey::Scalar),
    ("mode", SortKey::Scalar),
    ("sort_mode", SortKey::Scalar),
    ("unmapped_type", SortKey::Scalar),
    ("numeric_type", SortKey::Scalar),
    ("format", SortKey::Scalar),
    ("nested", SortKey::Nested),
    ("nested_path", SortKey::Path),
    ("nested_filter", SortKey::Query),
];

/// The options of a `_geo_distance` sort besides its one field (`GeoDistanceSortBuilder`).
const GEO_SORT_OPTIONS: &[(&str, SortKey)] = &[
    ("order", SortKey::Scalar),
    ("unit", SortKey::Scalar),
    ("mode", SortKey::Scalar),
    ("sort_mode", SortKey::Scalar),
    ("distance_type", SortKey::Scalar),
    ("validation_method", SortKey::Scalar),
    ("ignore_unmapped", SortKey::Scalar),
    ("nested", SortKey::Nested),
    ("nested_path", SortKey::Path),
    ("nested_filter", SortKey::Query),
];

fn sort_options(t: &Tenant, spec: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let Value::Object(o) = spec else {
        return match spec {
            Value::String(_) => Ok(()), // "asc" / "desc"
            _ => Err(parsing(format!("[{where_}] malformed sort"))),
        };
    };
    for (k, v) in o.iter_mut() {
        match SORT_OPTIONS.iter().find(|(n, _)| *n == k) {
            Some(&(_, key)) => sort_option(t, key, v, &at(where_, k))?,
            None => return Err(parsing(format!("[{where_}] unknown sort option [{k}]"))),
        }
    }
    Ok(())
}

/// `_geo_distance`: one key is the field (its points pass), the others options.
fn geo_distance_sort(t: &Tenant, spec: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let o = object_mut(spec, where_)?;
    let mut fields = 0;
    for (k, v) in o.iter_mut() {
        let here = at(where_, k);
        match GEO_SORT_OPTIONS.iter().find(|(n, _)| *n == k) {
            Some(&(_, key)) => sort_option(t, key, v, &here)?,
            None if could_name_index(k) => {
                return Err(unsupported(&format!("_geo_distance on [{k}]"), &here))
            }
            None => {
                fields += 1;
                refuse_scripts(v, &here)?;
            }
        }
    }
    if fields > 1 {
        return Err(parsing(format!(
            "[{where_}] sorts on one field (found {fields})"
        )));
    }
    Ok(())
}

fn sort_option(t: &Tenant, key: SortKey, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    match key {
        SortKey::Scalar if !matches!(v, Value::Object(_) | Value::Array(_)) => Ok(()),
        SortKey::Scalar => Err(parsing(format!("[{where_}] must be a value"))),
        SortKey::Path => check_field_list(v, where_),
        SortKey::Nested => nested_sort(t, v, where_),
        SortKey::Query => query(t, v, where_),
    }
}

fn nested_sort(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let o = object_mut(v, where_)?;
    known_keys(o, &["path", "filter", "max_children", "nested"], where_)?;
    if let Some(p) = o.get("path") {
        check_field_list(p, &at(where_, "path"))?;
    }
    if let Some(f) = o.get_mut("filter") {
        query(t, f, &at(where_, "filter"))?;
    }
    if let Some(n) = o.get_mut("nested") {
        nested_sort(t, n, &at(where_, "nested"))?;
    }
    Ok(())
}

pub(in crate::tenancy::references) fn highlight(
    t: &Tenant,
    v: &mut Value,
    where_: &str,
) -> Result<(), EdgeError> {
    let o = object_mut(v, where_)?;
    for (k, v) in o.iter_mut() {
        let here = at(where_, k);
        match k {
            "highlight_query" => query(t, v, &here)?,
            "fields" => match v {
                Value::Object(fields) => highlight_fields(t, fields, &here)?,
                Value::Array(list) => {
                    for f in list.iter_mut() {
                        highlight_fields(t, object_mut(f, &here)?, &here)?;
                    }
                }
                _ => return Err(parsing(format!("[{here}] must be an object or an array"))),
            },
            "matched_fields" => check_field_list(v, &here)?,
            _ => refuse_scripts(v, &here)?,
        }
    }
    Ok(())
}

fn highlight_fields(t: &Tenant, fields: &mut Object, where_: &str) -> Result<(), EdgeError> {
    for (name, opts) in fields.iter_mut() {
        let here = at(where_, name);
        if could_name_index(name) {
            return Err(unsupported(&format!("highlighting [{name}]"), &here));
        }
        if let Value::Object(_) = opts {
            highlight(t, opts, &here)?;
        }
    }
    Ok(())
}

pub(in crate::tenancy::references) fn collapse(
    t: &Tenant,
    v: &mut Value,
    where_: &str,
) -> Result<(), EdgeError> {
    let o = object_mut(v, where_)?;
    known_keys(
        o,
        &["field", "inner_hits", "max_concurrent_group_searches"],
        where_,
    )?;
    if let Some(f) = o.get("field") {
        check_field_list(f, &at(where_, "field"))?;
    }
    match o.get_mut("inner_hits") {
        Some(Value::Array(list)) => list
            .iter_mut()
            .try_for_each(|h| hits_options(t, h, &at(where_, "inner_hits"))),
        Some(h) => hits_options(t, h, &at(where_, "inner_hits")),
        None => Ok(()),
    }
}

/// `inner_hits` and `top_hits`: what to return for each hit.
pub fn hits_options(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let o = object_mut(v, where_)?;
    if let Some(s) = o.get_mut("sort") {
        sort(t, s, &at(where_, "sort"))?;
    }
    for (k, v) in o.iter_mut() {
        let here = at(where_, k);
        match k {
            "sort" => {}
            "highlight" => highlight(t, v, &here)?,
            "collapse" => collapse(t, v, &here)?,
            "script_fields" => return Err(no_scripts(&here)),
            "name"
            | "from"
            | "size"
            | "_source"
            | "explain"
            | "version"
            | "seq_no_primary_term"
            | "stored_fields"
            | "docvalue_fields"
            | "fields"
            | "ignore_unmapped"
            | "track_scores" => refuse_scripts(v, &here)?,
            _ => return Err(parsing(format!("[{where_}] unknown field [{k}]"))),
        }
    }
    Ok(())
}
