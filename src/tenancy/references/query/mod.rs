//! The query DSL rows of the table: every query type Elasticsearch 7.10 knows that a
//! tenant may use, what references it can hold, and what the edge does with them.
//! Compound queries are walked recursively; anything not in [`QUERIES`] is refused as
//! Elasticsearch refuses an unknown query (the edge cannot know what it would reference).
//!
//! Must not touch: aggregations, search options (see `aggs`, `search`).

use super::super::json::{Object, Value};
use super::super::lucene::{could_name_index, query_string, regexp};
use super::{
    at, check_field_list, known_keys, no_scripts, object_mut, parsing, rewrite_name, unsupported,
    Tenant,
};
use crate::errors::EdgeError;

pub mod hits;

/// What the edge does with the `_index` field in a field-level query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnIndex {
    /// `term`: the value becomes `<P>value`.
    Term,
    /// `prefix`, `wildcard`: the value becomes `<P>value`.
    Prefix,
    Wildcard,
    /// `regexp`: strict Lucene parse, then `"<P>"(<canonical>)`.
    Regexp,
    /// `match` without fuzziness: `query` becomes `<P>value`.
    Match,
    /// Anything else comparing `_index` (fuzzy, range, span, phrase, ...): refused.
    Refuse,
}

/// How a query type is read.
#[derive(Debug, Clone, Copy)]
pub enum Rule {
    /// Names no field that could compare `_index` and holds no query: passes.
    Plain,
    /// Field-level: every key but `boost`/`_name` is a field; `_index` as [`OnIndex`] says;
    /// no script inside.
    Field(OnIndex),
    /// Compound: these keys hold queries (one object, or an array of them); other keys
    /// must be scalars or arrays of scalars.
    Sub(&'static [&'static str]),
    /// Its own reader (see the function named in the table).
    Own(fn(&Tenant, &mut Object, &str) -> Result<(), EdgeError>),
    /// Never forwarded.
    Refuse,
}

use OnIndex as I;
use Rule::{Field, Own, Plain, Refuse, Sub};

/// Every query type, alphabetically.
pub static QUERIES: &[(&str, Rule)] = &[
    ("bool", Sub(&["must", "filter", "should", "must_not"])),
    ("boosting", Sub(&["positive", "negative"])),
    ("combined_fields", Own(field_lists)),
    ("common", Field(I::Refuse)),
    ("constant_score", Sub(&["filter"])),
    ("dis_max", Sub(&["queries"])),
    ("distance_feature", Own(field_option)),
    ("exists", Plain),
    ("field_masking_span", Own(field_masking_span)),
    ("function_score", Own(function_score)),
    ("fuzzy", Field(I::Refuse)),
    ("geo_bounding_box", Field(I::Refuse)),
    ("geo_distance", Field(I::Refuse)),
    ("geo_polygon", Field(I::Refuse)),
    ("geo_shape", Own(indexed_shape)),
    ("has_child", Own(joined)),
    ("has_parent", Own(joined)),
    ("ids", Plain),
    ("intervals", Own(intervals)),
    ("match", Field(I::Match)),
    ("match_all", Plain),
    ("match_bool_prefix", Field(I::Refuse)),
    ("match_none", Plain),
    ("match_phrase", Field(I::Refuse)),
    ("match_phrase_prefix", Field(I::Refuse)),
    ("more_like_this", Own(more_like_this)),
    ("multi_match", Own(field_lists)),
    ("nested", Own(joined)),
    ("parent_id", Plain),
    ("percolate", Refuse),
    ("pinned", Sub(&["organic"])),
    ("prefix", Field(I::Prefix)),
    ("query_string", Own(query_string_query)),
    ("range", Field(I::Refuse)),
    ("rank_feature", Own(field_option)),
    ("regexp", Field(I::Regexp)),
    ("script", Refuse),
    ("script_score", Refuse),
    ("shape", Own(indexed_shape)),
    ("simple_query_string", Own(field_lists)),
    ("span_containing", Sub(&["big", "little"])),
    ("span_first", Sub(&["match"])),
    ("span_multi", Sub(&["match"])),
    ("span_near", Sub(&["clauses"])),
    ("span_not", Sub(&["include", "exclude"])),
    ("span_or", Sub(&["clauses"])),
    ("span_term", Field(I::Refuse)),
    ("span_within", Sub(&["big", "little"])),
    ("term", Field(I::Term)),
    ("terms", Own(terms)),
    ("terms_set", Field(I::Refuse)),
    ("type", Plain),
    ("wildcard", Field(I::Wildcard)),
    ("wrapper", Refuse),
];

/// The rule of query type `name`.
pub fn rule(name: &str) -> Option<Rule> {
    QUERIES.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
}

/// Reads and rewrites one query object (`{}` is `match_all`).
pub fn query(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let Value::Object(o) = v else {
        return Err(parsing(format!(
            "[{where_}] query malformed, must start with start_object"
        )));
    };
    if o.len() > 1 {
        let first = o.keys().next().unwrap_or_default().to_string();
        return Err(parsing(format!(
            "[{first}] malformed query, expected [END_OBJECT] but found [FIELD_NAME]"
        )));
    }
    let Some((name, body)) = o.iter_mut().next() else {
        return Ok(());
    };
    let here = at(where_, name);
    let Some(rule) = rule(name) else {
        return Err(parsing(format!("unknown query [{name}]")));
    };
    match rule {
        Plain => Ok(()),
        Refuse if name.contains("script") => Err(no_scripts(&here)),
        Refuse if name == "percolate" => Err(unsupported(
            "percolate (stored queries are documents the edge does not read)",
            &here,
        )),
        Refuse => Err(unsupported(name, &here)),
        Field(on_index) => field_query(t, name, on_index, body, &here),
        Sub(keys) => sub_queries(t, keys, object_mut(body, &here)?, &here),
        Own(f) => f(t, object_mut(body, &here)?, &here),
    }
}

/// A query at `v`: one object, or (where `many`) an array of them.
fn queries(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    match v {
        Value::Array(a) => a
            .iter_mut()
            .enumerate()
            .try_for_each(|(i, q)| query(t, q, &format!("{where_}[{i}]"))),
        other => query(t, other, where_),
    }
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

fn sub_queries(t: &Tenant, keys: &[&str], o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    for (k, v) in o.iter_mut() {
        if keys.contains(&k) {
            queries(t, v, &at(where_, k))?;
        } else if !(is_scalar(v) || matches!(v, Value::Array(a) if a.iter().all(is_scalar))) {
            return Err(parsing(format!("[{where_}] unknown field [{k}]")));
        }
    }
    Ok(())
}

/// Refuses a `script` key anywhere inside `v`.
pub fn refuse_scripts(v: &Value, where_: &str) -> Result<(), EdgeError> {
    match v {
        Value::Object(o) => o.iter().try_for_each(|(k, v)| {
            if k == "script" || k.ends_with("_script") {
                Err(no_scripts(&at(where_, k)))
            } else {
                refuse_scripts(v, &at(where_, k))
            }
        }),
        Value::Array(a) => a.iter().try_for_each(|v| refuse_scripts(v, where_)),
        _ => Ok(()),
    }
}

fn field_query(
    t: &Tenant,
    name: &str,
    on_index: OnIndex,
    body: &mut Value,
    where_: &str,
) -> Result<(), EdgeError> {
    let o = object_mut(body, where_)?;
    for (field, v) in o.iter_mut() {
        let here = at(where_, field);
        if matches!(field, "boost" | "_name") && is_scalar(v) {
            continue;
        }
        refuse_scripts(v, &here)?;
        if field == "_index" {
            on_index_value(t, name, on_index, v, &here)?;
        }
    }
    Ok(())
}

/// The `_index` value of a field-level query (short form or with options).
fn on_index_value(
    t: &Tenant,
    name: &str,
    on_index: OnIndex,
    v: &mut Value,
    where_: &str,
) -> Result<(), EdgeError> {
    let (value_keys, options): (&[&str], &[&str]) = match on_index {
        I::Refuse => return Err(unsupported(&format!("{name} on [_index]"), where_)),
        I::Term => (&["value"], &["boost", "_name", "case_insensitive"]),
        I::Prefix => (
            &["value"],
            &["boost", "_name", "case_insensitive", "rewrite"],
        ),
        I::Wildcard => (
            &["value", "wildcard"],
            &["boost", "_name", "case_insensitive", "rewrite"],
        ),
        I::Regexp => (
            &["value"],
            &[
                "boost",
                "_name",
                "case_insensitive",
                "rewrite",
                "flags",
                "max_determinized_states",
            ],
        ),
        I::Match => (&["query"], &["boost", "_name"]),
    };
    let slot = match v {
        Value::Object(o) => {
            let mut all = value_keys.to_vec();
            all.extend_from_slice(options);
            known_keys(o, &all, where_)?;
            if let Some(flags) = o.get("flags") {
                if flags.as_str() != Some("ALL") {
                    return Err(unsupported(
                        "regexp flags other than ALL on [_index]",
                        where_,
                    ));
                }
            }
            let mut found = o
                .entries_mut()
                .iter_mut()
                .filter(|(k, _)| value_keys.contains(&k.as_str()));
            let first = found.next().map(|(_, v)| v);
            if found.next().is_some() {
                return Err(parsing(format!(
                    "[{name}] has more than one value in [{where_}]"
                )));
            }
            first.ok_or_else(|| parsing(format!("[{name}] query on [_index] has no value")))?
        }
        other => other,
    };
    let Value::String(s) = slot else {
        return Err(parsing(format!(
            "[{name}] on [_index] takes a string value"
        )));
    };
    *s = match on_index {
        I::Regexp => regexp::confine(t.prefix.as_str(), s).map_err(|e| {
            parsing(format!(
                "[regexp] on [_index]: invalid regular expression at position {}: {}",
                e.at, e.what
            ))
        })?,
        _ => t.prefixed(s),
    };
    Ok(())
}

/// `terms`: values on `_index` rewritten; a lookup's `index` rewritten; a lookup on a field
/// that could be `_index` refused.
fn terms(t: &Tenant, o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    for (field, v) in o.iter_mut() {
        let here = at(where_, field);
        match v {
            _ if matches!(field, "boost" | "_name") && is_scalar(v) => {}
            Value::Array(values) if field == "_index" => {
                for x in values.iter_mut() {
                    match x {
                        Value::String(s) => *s = t.prefixed(s),
                        _ => return Err(parsing("[terms] on [_index] takes string values")),
                    }
                }
            }
            Value::Array(_) => {}
            // looked-up values are the tenant's own data, compared unprefixed (and as
            // patterns) with the prefixed name: a prefix oracle (attacks-10 #4)
            Value::Object(_) if could_name_index(field) => {
                return Err(unsupported("a terms lookup on [_index]", &here))
            }
            Value::Object(lookup) => {
                known_keys(lookup, &["index", "id", "path", "routing", "type"], &here)?;
                match lookup.get_mut("index") {
                    Some(i) => rewrite_name(t, i, &at(&here, "index"))?,
                    None => {
                        return Err(parsing(
                            "[terms] query lookup element requires specifying the index",
                        ))
                    }
                }
            }
            _ => return Err(parsing(format!("[terms] query does not support [{field}]"))),
        }
    }
    Ok(())
}

/// `multi_match`, `combined_fields`, `simple_query_string`: the field lists.
fn field_lists(_t: &Tenant, o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    for (k, v) in o.iter() {
        let here = at(where_, k);
        match k {
            "fields" => check_field_list(v, &here)?,
            "quote_field_suffix" => quote_suffix(v, &here)?,
            _ if is_scalar(v) => {}
            _ => return Err(parsing(format!("[{where_}] unknown field [{k}]"))),
        }
    }
    Ok(())
}

/// A quoted term's field is `field + suffix` upstream: only a sub-field suffix (`.exact`)
/// cannot turn a field into `_index`.
fn quote_suffix(v: &Value, where_: &str) -> Result<(), EdgeError> {
    match v.as_str() {
        Some(s) if s.starts_with('.') => Ok(()),
        _ => Err(unsupported(
            "a quote_field_suffix not starting with '.'",
            where_,
        )),
    }
}

/// `query_string`: the text's field names and the field lists.
fn query_string_query(_t: &Tenant, o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    for (k, v) in o.iter() {
        let here = at(where_, k);
        match k {
            "query" => check_query_text(v, &here)?,
            "fields" | "default_field" => check_field_list(v, &here)?,
            "quote_field_suffix" => quote_suffix(v, &here)?,
            _ if is_scalar(v) => {}
            _ => return Err(parsing(format!("[query_string] unknown field [{k}]"))),
        }
    }
    Ok(())
}

/// A Lucene query text (`query_string.query`, the `q` parameter).
pub fn check_query_text(v: &Value, where_: &str) -> Result<(), EdgeError> {
    let Value::String(s) = v else {
        return Err(parsing(format!("[{where_}] must be a string")));
    };
    match query_string::field_naming_index(s) {
        Some(f) => Err(unsupported(&format!("a query on field [{f}]"), where_)),
        None => Ok(()),
    }
}

/// `distance_feature`, `rank_feature`: their `field`.
fn field_option(_t: &Tenant, o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    if let Some(f) = o.get("field") {
        check_field_list(f, &at(where_, "field"))?;
    }
    o.iter()
        .try_for_each(|(k, v)| refuse_scripts(v, &at(where_, k)))
}

fn field_masking_span(t: &Tenant, o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    if let Some(f) = o.get("field") {
        check_field_list(f, &at(where_, "field"))?;
    }
    sub_queries(t, &["query"], o, where_)
}

/// `nested`, `has_child`, `has_parent`: the inner query and `inner_hits`.
fn joined(t: &Tenant, o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    for (k, v) in o.iter_mut() {
        let here = at(where_, k);
        match k {
            "query" => query(t, v, &here)?,
            "inner_hits" => hits::hits_options(t, v, &here)?,
            _ if is_scalar(v) => {}
            _ => return Err(parsing(format!("[{where_}] unknown field [{k}]"))),
        }
    }
    Ok(())
}

fn function_score(t: &Tenant, o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    for (k, v) in o.iter_mut() {
        let here = at(where_, k);
        match k {
            "query" => query(t, v, &here)?,
            "functions" => {
                let Value::Array(fns) = v else {
                    return Err(parsing("[function_score] [functions] must be an array"));
                };
                for (i, f) in fns.iter_mut().enumerate() {
                    let fhere = format!("{here}[{i}]");
                    for (fk, fv) in object_mut(f, &fhere)?.iter_mut() {
                        score_function(t, fk, fv, &at(&fhere, fk))?;
                    }
                }
            }
            _ => score_function(t, k, v, &here)?,
        }
    }
    Ok(())
}

/// One key of a score function (or of `function_score` itself).
fn score_function(t: &Tenant, k: &str, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    match k {
        "filter" => query(t, v, where_),
        "script_score" => Err(no_scripts(where_)),
        "random_score" | "field_value_factor" => {
            let o = object_mut(v, where_)?;
            if let Some(f) = o.get("field") {
                check_field_list(f, &at(where_, "field"))?;
            }
            refuse_scripts(v, where_)
        }
        "gauss" | "linear" | "exp" => {
            for (field, fv) in object_mut(v, where_)?.iter() {
                if field != "multi_value_mode" && could_name_index(field) {
                    return Err(unsupported(&format!("{k} on [{field}]"), where_));
                }
                refuse_scripts(fv, where_)?;
            }
            Ok(())
        }
        _ if is_scalar(v) => Ok(()),
        _ => Err(parsing(format!("[function_score] unknown field [{k}]"))),
    }
}

fn more_like_this(t: &Tenant, o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    for (k, v) in o.iter_mut() {
        let here = at(where_, k);
        match k {
            "fields" => check_field_list(v, &here)?,
            "like" | "unlike" => match v {
                Value::Array(items) => {
                    for (i, item) in items.iter_mut().enumerate() {
                        like_item(t, item, &format!("{here}[{i}]"))?;
                    }
                }
                item => like_item(t, item, &here)?,
            },
            _ if is_scalar(v) || matches!(v, Value::Array(a) if a.iter().all(is_scalar)) => {}
            _ => return Err(parsing(format!("[more_like_this] unknown field [{k}]"))),
        }
    }
    Ok(())
}

fn like_item(t: &Tenant, item: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let Value::Object(doc) = item else {
        return Ok(()); // a text
    };
    known_keys(
        doc,
        &[
            "_index",
            "_type",
            "_id",
            "doc",
            "fields",
            "per_field_analyzer",
            "routing",
            "version",
            "version_type",
        ],
        where_,
    )?;
    if let Some(f) = doc.get("fields") {
        check_field_list(f, &at(where_, "fields"))?;
    }
    if let Some(i) = doc.get_mut("_index") {
        rewrite_name(t, i, &at(where_, "_index"))?;
    }
    Ok(())
}

/// `geo_shape`, `shape`: `indexed_shape.index` (absent: the upstream's default `shapes`).
fn indexed_shape(t: &Tenant, o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    for (field, v) in o.iter_mut() {
        let here = at(where_, field);
        if is_scalar(v) {
            continue;
        }
        if could_name_index(field) {
            return Err(unsupported("a shape query on [_index]", &here));
        }
        let Some(shape) = object_mut(v, &here)?.get_mut("indexed_shape") else {
            continue;
        };
        let shape_here = at(&here, "indexed_shape");
        let so = object_mut(shape, &shape_here)?;
        known_keys(so, &["index", "id", "path", "routing", "type"], &shape_here)?;
        if so.get("index").is_none() {
            so.insert("index", Value::String("shapes".into()));
        }
        rewrite_name(
            t,
            so.get_mut("index").expect("just set"),
            &at(&shape_here, "index"),
        )?;
    }
    Ok(())
}

/// `intervals`: `_index` as the field, `use_field` naming it, and filter scripts refused.
fn intervals(_t: &Tenant, o: &mut Object, where_: &str) -> Result<(), EdgeError> {
    fn walk(v: &Value, where_: &str) -> Result<(), EdgeError> {
        match v {
            Value::Object(o) => o.iter().try_for_each(|(k, v)| {
                let here = at(where_, k);
                match k {
                    "script" => Err(no_scripts(&here)),
                    "use_field" => check_field_list(v, &here),
                    _ => walk(v, &here),
                }
            }),
            Value::Array(a) => a.iter().try_for_each(|v| walk(v, where_)),
            _ => Ok(()),
        }
    }
    for (field, v) in o.iter() {
        if matches!(field, "boost" | "_name") {
            continue;
        }
        if could_name_index(field) {
            return Err(unsupported("intervals on [_index]", where_));
        }
        walk(v, &at(where_, field))?;
    }
    Ok(())
}
