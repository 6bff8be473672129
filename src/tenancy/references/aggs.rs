//! The aggregation rows of the table. Every aggregation type Elasticsearch 7.10 knows that
//! a tenant may use; `_index` as a bucketing field is allowed where only its values come
//! back (stripped): `terms` (with `include`/`exclude` rewritten), `composite` terms sources
//! (with `after` rewritten), and the counting metrics. Scripts are refused everywhere.
//!
//! Must not touch: queries (see `query`), search options (see `search`).

use super::super::json::{Object, Value};
use super::super::lucene::{could_name_index, regexp};
use super::query::query;
use super::{at, no_scripts, object_mut, parsing, search, unsupported, Tenant};
use crate::errors::EdgeError;

/// How an aggregation type is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agg {
    /// On a `field` (or none): `_index` refused, no script anywhere.
    Field,
    /// On a `field` whose values only count: `_index` allowed.
    Counting,
    /// `terms`: `_index` allowed, `include`/`exclude` rewritten.
    Terms,
    /// `significant_terms`: `background_filter` is a query, `_index` refused.
    Significant,
    Composite,
    /// The body is a query.
    Filter,
    /// `filters`: named (object) or anonymous (array) queries.
    Filters,
    TopHits,
    Refuse,
}

/// Every aggregation type, alphabetically.
pub static AGGS: &[(&str, Agg)] = &[
    ("adjacency_matrix", Agg::Filters),
    ("auto_date_histogram", Agg::Field),
    ("avg", Agg::Field),
    ("avg_bucket", Agg::Field),
    ("boxplot", Agg::Field),
    ("bucket_script", Agg::Refuse),
    ("bucket_selector", Agg::Refuse),
    ("bucket_sort", Agg::Field),
    ("cardinality", Agg::Counting),
    ("children", Agg::Field),
    ("composite", Agg::Composite),
    ("cumulative_cardinality", Agg::Field),
    ("cumulative_sum", Agg::Field),
    ("date_histogram", Agg::Field),
    ("date_range", Agg::Field),
    ("derivative", Agg::Field),
    ("diversified_sampler", Agg::Field),
    ("extended_stats", Agg::Field),
    ("extended_stats_bucket", Agg::Field),
    ("filter", Agg::Filter),
    ("filters", Agg::Filters),
    ("geo_bounds", Agg::Field),
    ("geo_centroid", Agg::Field),
    ("geo_distance", Agg::Field),
    ("geohash_grid", Agg::Field),
    ("geotile_grid", Agg::Field),
    ("global", Agg::Field),
    ("histogram", Agg::Field),
    ("inference", Agg::Refuse),
    ("ip_range", Agg::Field),
    ("matrix_stats", Agg::Field),
    ("max", Agg::Field),
    ("max_bucket", Agg::Field),
    ("median_absolute_deviation", Agg::Field),
    ("min", Agg::Field),
    ("min_bucket", Agg::Field),
    ("missing", Agg::Counting),
    ("moving_avg", Agg::Field),
    ("moving_fn", Agg::Refuse),
    ("moving_percentiles", Agg::Field),
    ("multi_terms", Agg::Field),
    ("nested", Agg::Field),
    ("normalize", Agg::Field),
    ("parent", Agg::Field),
    ("percentile_ranks", Agg::Field),
    ("percentiles", Agg::Field),
    ("percentiles_bucket", Agg::Field),
    ("range", Agg::Field),
    ("rare_terms", Agg::Field),
    ("rate", Agg::Field),
    ("reverse_nested", Agg::Field),
    ("sampler", Agg::Field),
    ("scripted_metric", Agg::Refuse),
    ("serial_diff", Agg::Field),
    ("significant_terms", Agg::Significant),
    ("significant_text", Agg::Field),
    ("stats", Agg::Field),
    ("stats_bucket", Agg::Field),
    ("string_stats", Agg::Field),
    ("sum", Agg::Field),
    ("sum_bucket", Agg::Field),
    ("t_test", Agg::Field),
    ("terms", Agg::Terms),
    ("top_hits", Agg::TopHits),
    ("top_metrics", Agg::Field),
    ("value_count", Agg::Counting),
    ("variable_width_histogram", Agg::Field),
    ("weighted_avg", Agg::Field),
];

/// Reads and rewrites an `aggs` object: `{name: {type: body, aggs: {...}, meta: {...}}}`.
pub fn aggregations(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    for (name, def) in object_mut(v, where_)?.iter_mut() {
        let here = at(where_, name);
        let def = object_mut(def, &here)?;
        let mut kind = None;
        for (k, body) in def.iter_mut() {
            match k {
                "aggs" | "aggregations" => aggregations(t, body, &at(&here, k))?,
                "meta" => {}
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
    let Some(&(_, rule)) = AGGS.iter().find(|(n, _)| *n == kind) else {
        return Err(parsing(format!("Unknown aggregation type [{kind}]")));
    };
    match rule {
        Agg::Refuse => Err(no_scripts(where_)),
        Agg::Field => fields(body, false, where_),
        Agg::Counting => fields(body, true, where_),
        Agg::Filter => query(t, body, where_),
        Agg::Filters => filters(t, object_mut(body, where_)?, where_),
        Agg::TopHits => search::hits_options(t, body, where_),
        Agg::Significant => {
            let o = object_mut(body, where_)?;
            if let Some(q) = o.get_mut("background_filter") {
                query(t, q, &at(where_, "background_filter"))?;
            }
            walk_fields(body, false, &["background_filter"], where_)
        }
        Agg::Terms => terms(t, object_mut(body, where_)?, where_),
        Agg::Composite => composite(t, object_mut(body, where_)?, where_),
    }
}

/// Every `field`/`fields` inside `body` checked (`_index` allowed or not), scripts refused.
fn fields(body: &Value, index_ok: bool, where_: &str) -> Result<(), EdgeError> {
    walk_fields(body, index_ok, &[], where_)
}

fn walk_fields(v: &Value, index_ok: bool, skip: &[&str], where_: &str) -> Result<(), EdgeError> {
    match v {
        Value::Object(o) => walk_object(o, index_ok, skip, where_),
        Value::Array(a) => a
            .iter()
            .try_for_each(|v| walk_fields(v, index_ok, &[], where_)),
        _ => Ok(()),
    }
}

fn walk_object(o: &Object, index_ok: bool, skip: &[&str], where_: &str) -> Result<(), EdgeError> {
    o.iter().try_for_each(|(k, v)| {
        let here = at(where_, k);
        match k {
            _ if skip.contains(&k) => Ok(()),
            "script" => Err(no_scripts(&here)),
            _ if k.ends_with("_script") => Err(no_scripts(&here)),
            "field" | "fields" if !index_ok => field_names(v, &here),
            _ => walk_fields(v, index_ok, &[], &here),
        }
    })
}

/// A field name or list; objects inside (`multi_terms.terms[].field`) are walked.
fn field_names(v: &Value, where_: &str) -> Result<(), EdgeError> {
    match v {
        Value::String(s) if could_name_index(s) => {
            Err(unsupported(&format!("an aggregation on [{s}]"), where_))
        }
        Value::Array(a) => a.iter().try_for_each(|x| field_names(x, where_)),
        Value::Object(_) => walk_fields(v, false, &[], where_),
        _ => Ok(()),
    }
}

fn filters(t: &Tenant, o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    for (k, v) in o.iter_mut() {
        let here = at(where_, k);
        match (k, v) {
            ("filters", Value::Object(named)) => {
                for (n, q) in named.iter_mut() {
                    query(t, q, &at(&here, n))?;
                }
            }
            ("filters", Value::Array(anon)) => {
                for (i, q) in anon.iter_mut().enumerate() {
                    query(t, q, &format!("{here}[{i}]"))?;
                }
            }
            ("other_bucket" | "other_bucket_key" | "separator", v)
                if !matches!(v, Value::Object(_) | Value::Array(_)) => {}
            _ => return Err(parsing(format!("[{where_}] unknown field [{k}]"))),
        }
    }
    Ok(())
}

/// Whether the aggregation body buckets on `_index`.
fn on_index(o: &Object) -> bool {
    o.get("field").and_then(Value::as_str) == Some("_index")
}

fn terms(t: &Tenant, o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    let index = on_index(o);
    if let Some(f) = o.get("field").and_then(Value::as_str) {
        if f != "_index" && could_name_index(f) {
            return Err(unsupported(&format!("an aggregation on [{f}]"), where_));
        }
    }
    for key in ["include", "exclude"] {
        if let (true, Some(v)) = (index, o.get_mut(key)) {
            include_exclude(t, v, &at(where_, key))?;
        }
    }
    // `field` was checked above; the rest for scripts.
    walk_object(o, true, &["include", "exclude"], where_)
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

fn composite(t: &Tenant, o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    let mut on_index_names: Vec<String> = Vec::new();
    if let Some(Value::Array(sources)) = o.get("sources") {
        for (i, src) in sources.iter().enumerate() {
            let here = format!("{where_}.sources[{i}]");
            let Some(src) = src.as_object() else {
                return Err(parsing(format!("[{here}] must be an object")));
            };
            for (name, def) in src.iter() {
                let Some(def) = def.as_object() else {
                    return Err(parsing(format!("[{here}.{name}] must be an object")));
                };
                for (kind, body) in def.iter() {
                    let indexed = body.as_object().is_some_and(on_index);
                    if indexed && kind != "terms" {
                        return Err(unsupported(&format!("{kind} on [_index]"), &here));
                    }
                    if indexed {
                        on_index_names.push(name.to_string());
                    }
                    walk_fields(body, indexed, &[], &here)?;
                }
            }
        }
    }
    if let Some(after) = o.get_mut("after") {
        for (name, v) in object_mut(after, &at(where_, "after"))?.iter_mut() {
            if let (true, Value::String(s)) = (on_index_names.iter().any(|n| n == name), &mut *v) {
                *s = t.prefixed(s);
            }
        }
    }
    walk_object(o, true, &["sources", "after"], where_)
}
