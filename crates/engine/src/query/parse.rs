//! JSON query DSL -> [`Query`], with Elasticsearch 7.10's `parsing_exception` messages.

use serde_json::Value;

use super::params::{
    analyzer_named, as_obj, err, match_opt, parse_boost, parse_fields, parse_max_expansions,
    parse_slop, parse_tie_breaker, parse_zero_terms, single_field, value_text,
};
use super::parse_more::{
    parse_bool_prefix, parse_combined, parse_regexp, parse_terms_set, text_query,
};
use super::{CiKind, MatchOpts, MultiKind, Query, RangeBounds};
use crate::error::{EngineError, EngineResult};

pub use super::params::{boosted_field, parse_msm};

/// Parses a query object (`{"match": {...}}`); `{}` is `match_all`. A query with `_name`
/// comes wrapped in [`Query::Named`] (hits report it in `matched_queries`).
pub fn parse_query(v: &Value) -> EngineResult<Query> {
    let q = parse_unnamed(v)?;
    let body = v.as_object().and_then(|o| o.values().next());
    Ok(match body.and_then(query_name) {
        Some(name) => Query::Named {
            name,
            query: Box::new(q),
        },
        None => q,
    })
}

/// The `_name` of a query body: a sibling of its options (`{"bool": {..., "_name"}}`,
/// `{"term": {"f": "x", "_name"}}`) or inside its one field's object
/// (`{"match": {"f": {"query": "x", "_name"}}}`), where every parser reads it.
fn query_name(body: &Value) -> Option<String> {
    let obj = body.as_object()?;
    if let Some(Value::String(n)) = obj.get("_name") {
        return Some(n.clone());
    }
    let mut fields = obj.iter().filter(|(k, _)| *k != "boost" && *k != "_name");
    let (_, inner) = fields.next()?;
    if fields.next().is_some() {
        return None;
    }
    match inner.get("_name") {
        Some(Value::String(n)) => Some(n.clone()),
        _ => None,
    }
}

fn parse_unnamed(v: &Value) -> EngineResult<Query> {
    let obj = v
        .as_object()
        .ok_or_else(|| err("[_na] query malformed, must start with start_object"))?;
    let mut it = obj.iter();
    let Some((name, body)) = it.next() else {
        return Ok(Query::MatchAll { boost: 1.0 });
    };
    if let Some((next, _)) = it.next() {
        return Err(err(format!(
            "[{name}] malformed query, expected [END_OBJECT] but found [FIELD_NAME] ({next})"
        )));
    }
    match name.as_str() {
        "match_all" => Ok(Query::MatchAll {
            boost: boost_only(body, name)?,
        }),
        "match_none" => Ok(Query::MatchNone),
        "match" => parse_match(body),
        "match_phrase" => parse_phrase(body, name, false),
        "match_phrase_prefix" => parse_phrase(body, name, true),
        "multi_match" => parse_multi_match(body),
        "term" => parse_term(body),
        "terms" => parse_terms(body),
        "range" => parse_range(body),
        "exists" => parse_exists(body),
        "prefix" | "wildcard" => parse_prefix_like(body, name),
        "ids" => parse_ids(body),
        "regexp" => parse_regexp(body),
        "match_bool_prefix" => parse_bool_prefix(body),
        "combined_fields" => parse_combined(body),
        "terms_set" => parse_terms_set(body),
        "bool" => parse_bool(body),
        "query_string" | "simple_query_string" => super::query_string::parse_qs(body, name),
        "constant_score" => parse_constant_score(body),
        "dis_max" => parse_dis_max(body),
        other => Err(err(format!("unknown query [{other}]"))),
    }
}

fn boost_only(body: &Value, name: &str) -> EngineResult<f32> {
    let mut boost = 1.0;
    for (k, v) in as_obj(body, name)? {
        match k.as_str() {
            "boost" => boost = parse_boost(v, name)?,
            "_name" => {}
            other => return Err(err(format!("[{name}] query does not support [{other}]"))),
        }
    }
    Ok(boost)
}

fn parse_match(body: &Value) -> EngineResult<Query> {
    let (field, v, mut boost) = single_field(body, "match")?;
    let mut opts = MatchOpts::default();
    let query = match v {
        Value::Object(o) => {
            let mut q = None;
            for (k, val) in o {
                match k.as_str() {
                    "query" => q = Some(val.clone()),
                    "boost" => boost = parse_boost(val, "match")?,
                    _ if match_opt(&mut opts, k, val, "match")? => {}
                    other => return Err(err(format!("[match] query does not support [{other}]"))),
                }
            }
            q.ok_or_else(|| err("No text specified for text query"))?
        }
        other => other.clone(),
    };
    if query.is_null() || query.is_object() || query.is_array() {
        return Err(err("[match] unknown token [START_OBJECT] after [query]"));
    }
    Ok(Query::Match {
        field: field.clone(),
        query,
        opts,
        boost,
    })
}

fn parse_phrase(body: &Value, name: &str, prefix: bool) -> EngineResult<Query> {
    let (mut slop, mut analyzer, mut max_expansions, mut zero_terms_all) = (0, None, 50, false);
    let (field, query, boost) = text_query(body, name, "query", &mut |k, v| {
        match k {
            "slop" => slop = parse_slop(v, name)?,
            "analyzer" => analyzer = Some(analyzer_named(v, name)?),
            "max_expansions" if prefix => max_expansions = parse_max_expansions(v, name)?,
            "zero_terms_query" => zero_terms_all = parse_zero_terms(v)?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(Query::MatchPhrase {
        field,
        query,
        slop,
        prefix,
        analyzer,
        max_expansions,
        zero_terms_all,
        boost,
    })
}

fn parse_multi_match(body: &Value) -> EngineResult<Query> {
    let name = "multi_match";
    let mut q = None;
    let (mut fields, mut kind, mut tie, mut slop, mut boost) =
        (vec![], MultiKind::BestFields, 0.0, 0, 1.0);
    let mut opts = MatchOpts::default();
    for (k, v) in as_obj(body, name)? {
        match k.as_str() {
            "query" => q = Some(v.clone()),
            "fields" => fields = parse_fields(v, name)?,
            "type" => {
                kind = match v.as_str().unwrap_or("") {
                    "best_fields" => MultiKind::BestFields,
                    "bool_prefix" => MultiKind::BoolPrefix,
                    "most_fields" => MultiKind::MostFields,
                    "cross_fields" => MultiKind::CrossFields,
                    "phrase" => MultiKind::Phrase,
                    "phrase_prefix" => MultiKind::PhrasePrefix,
                    other => {
                        return Err(err(format!(
                            "[multi_match] query does not support type {other}"
                        )))
                    }
                }
            }
            "tie_breaker" => tie = parse_tie_breaker(v, name)?,
            "slop" => slop = parse_slop(v, name)?,
            "boost" => boost = parse_boost(v, name)?,
            _ if match_opt(&mut opts, k, v, name)? => {}
            other => {
                return Err(err(format!(
                    "[multi_match] query does not support [{other}]"
                )))
            }
        }
    }
    let query = q.ok_or_else(|| err("No text specified for multi_match query"))?;
    Ok(Query::MultiMatch {
        fields,
        query,
        kind,
        tie_breaker: tie,
        slop,
        opts,
        boost,
    })
}

/// `case_insensitive` of `term`, `prefix` and `wildcard` (a boolean).
fn parse_ci(v: &Value, name: &str) -> EngineResult<bool> {
    v.as_bool().ok_or_else(|| {
        err(format!(
            "[{name}] query does not support [case_insensitive] of value [{v}]"
        ))
    })
}

fn parse_term(body: &Value) -> EngineResult<Query> {
    let (field, v, mut boost) = single_field(body, "term")?;
    let mut ci = false;
    let value = match v {
        Value::Object(o) => {
            let mut value = None;
            for (k, val) in o {
                match k.as_str() {
                    "value" => value = Some(val.clone()),
                    "boost" => boost = parse_boost(val, "term")?,
                    "case_insensitive" => ci = parse_ci(val, "term")?,
                    "_name" => {}
                    other => return Err(err(format!("[term] query does not support [{other}]"))),
                }
            }
            value.ok_or_else(|| err("[term] query requires a [value]"))?
        }
        Value::Array(_) => return Err(err("[term] query does not support array of values")),
        other => other.clone(),
    };
    if ci {
        return Ok(Query::CaseInsensitive {
            field: field.clone(),
            kind: CiKind::Term,
            value,
            boost,
        });
    }
    Ok(Query::Term {
        field: field.clone(),
        value,
        boost,
    })
}

fn parse_terms(body: &Value) -> EngineResult<Query> {
    let (field, v, boost) = single_field(body, "terms")?;
    let values = v
        .as_array()
        .ok_or_else(|| err(format!("[terms] query does not support [{field}]")))?
        .clone();
    Ok(Query::Terms {
        field: field.clone(),
        values,
        boost,
    })
}

fn parse_range(body: &Value) -> EngineResult<Query> {
    let (field, v, mut boost) = single_field(body, "range")?;
    let o = as_obj(v, "range")?;
    let mut b = RangeBounds::default();
    let (mut from, mut to, mut incl_lo, mut incl_hi) = (None, None, true, true);
    for (k, val) in o {
        let val = (!val.is_null()).then(|| val.clone());
        match k.as_str() {
            "gt" => b.gt = val,
            "gte" => b.gte = val,
            "lt" => b.lt = val,
            "lte" => b.lte = val,
            "from" => from = val,
            "to" => to = val,
            "include_lower" => incl_lo = val.and_then(|v| v.as_bool()).unwrap_or(true),
            "include_upper" => incl_hi = val.and_then(|v| v.as_bool()).unwrap_or(true),
            "format" => b.format = val.and_then(|v| v.as_str().map(String::from)),
            "boost" => boost = val.map_or(Ok(1.0), |v| parse_boost(&v, "range"))?,
            "time_zone" => b.time_zone = val.and_then(|v| v.as_str().map(String::from)),
            "relation" => b.disjoint = parse_relation(val.as_ref())?,
            "_name" => {}
            other => return Err(err(format!("[range] query does not support [{other}]"))),
        }
    }
    if from.is_some() {
        if incl_lo {
            b.gte = from
        } else {
            b.gt = from
        }
    }
    if to.is_some() {
        if incl_hi {
            b.lte = to
        } else {
            b.lt = to
        }
    }
    Ok(Query::Range {
        field: field.clone(),
        bounds: b,
        boost,
    })
}

/// `relation` of `range`: true for `disjoint`.
fn parse_relation(v: Option<&Value>) -> EngineResult<bool> {
    let Some(v) = v else { return Ok(false) };
    match v.as_str().map(str::to_ascii_lowercase).as_deref() {
        Some("intersects" | "contains" | "within") => Ok(false),
        Some("disjoint") => Ok(true),
        _ => Err(EngineError::IllegalArgument(format!(
            "{} is not a valid relation",
            value_text(v)
        ))),
    }
}

fn parse_exists(body: &Value) -> EngineResult<Query> {
    let mut field = None;
    let mut boost = 1.0;
    for (k, v) in as_obj(body, "exists")? {
        match k.as_str() {
            "field" => field = v.as_str().map(String::from),
            "boost" => boost = parse_boost(v, "exists")?,
            "_name" => {}
            other => return Err(err(format!("[exists] query does not support [{other}]"))),
        }
    }
    let field = field.ok_or_else(|| err("[exists] must be provided with a [field]"))?;
    Ok(Query::Exists { field, boost })
}

fn parse_prefix_like(body: &Value, name: &str) -> EngineResult<Query> {
    let (field, v, mut boost) = single_field(body, name)?;
    let mut ci = false;
    let value = match v {
        Value::Object(o) => {
            let mut value = None;
            for (k, val) in o {
                match k.as_str() {
                    "value" | "wildcard" | "prefix" => value = val.as_str().map(String::from),
                    "boost" => boost = parse_boost(val, name)?,
                    "case_insensitive" => ci = parse_ci(val, name)?,
                    "rewrite" | "_name" => {}
                    other => return Err(err(format!("[{name}] query does not support [{other}]"))),
                }
            }
            value.ok_or_else(|| err(format!("[{name}] query requires a [value]")))?
        }
        other => value_text(other),
    };
    let field = field.clone();
    Ok(match (name, ci) {
        (_, true) => Query::CaseInsensitive {
            field,
            kind: if name == "prefix" {
                CiKind::Prefix
            } else {
                CiKind::Wildcard
            },
            value: Value::String(value),
            boost,
        },
        ("prefix", false) => Query::Prefix {
            field,
            value,
            boost,
        },
        _ => Query::Wildcard {
            field,
            value,
            boost,
        },
    })
}

fn parse_ids(body: &Value) -> EngineResult<Query> {
    let mut values = None;
    let mut boost = 1.0;
    for (k, v) in as_obj(body, "ids")? {
        match k.as_str() {
            "values" => {
                let arr = v
                    .as_array()
                    .ok_or_else(|| err("[ids] query does not support [values] of this type"))?;
                values = Some(arr.iter().map(value_text).collect());
            }
            "boost" => boost = parse_boost(v, "ids")?,
            "type" | "types" | "_name" => {}
            other => return Err(err(format!("[ids] query does not support [{other}]"))),
        }
    }
    Ok(Query::Ids {
        values: values.ok_or_else(|| err("[ids] query, no ids values provided"))?,
        boost,
    })
}

fn clauses(v: &Value) -> EngineResult<Vec<Query>> {
    match v {
        Value::Array(a) => a.iter().map(parse_query).collect(),
        other => Ok(vec![parse_query(other)?]),
    }
}

fn parse_bool(body: &Value) -> EngineResult<Query> {
    let (mut must, mut should, mut must_not, mut filter) = (vec![], vec![], vec![], vec![]);
    let (mut msm, mut boost) = (None, 1.0);
    for (k, v) in as_obj(body, "bool")? {
        match k.as_str() {
            "must" => must = clauses(v)?,
            "should" => should = clauses(v)?,
            "must_not" | "mustNot" => must_not = clauses(v)?,
            "filter" => filter = clauses(v)?,
            "minimum_should_match" => msm = Some(parse_msm(v)?),
            "boost" => boost = parse_boost(v, "bool")?,
            "adjust_pure_negative" | "disable_coord" | "_name" => {}
            other => return Err(err(format!("[bool] query does not support [{other}]"))),
        }
    }
    Ok(Query::Bool {
        must,
        should,
        must_not,
        filter,
        msm,
        boost,
    })
}

fn parse_constant_score(body: &Value) -> EngineResult<Query> {
    let mut filter = None;
    let mut boost = 1.0;
    for (k, v) in as_obj(body, "constant_score")? {
        match k.as_str() {
            "filter" => filter = Some(parse_query(v)?),
            "boost" => boost = parse_boost(v, "constant_score")?,
            "_name" => {}
            other => {
                return Err(err(format!(
                    "[constant_score] query does not support [{other}]"
                )))
            }
        }
    }
    let filter = filter.ok_or_else(|| err("[constant_score] requires a 'filter' element"))?;
    Ok(Query::ConstantScore {
        filter: Box::new(filter),
        boost,
    })
}

fn parse_dis_max(body: &Value) -> EngineResult<Query> {
    let (mut queries, mut tie, mut boost) = (vec![], 0.0, 1.0);
    for (k, v) in as_obj(body, "dis_max")? {
        match k.as_str() {
            "queries" => queries = clauses(v)?,
            "tie_breaker" => tie = parse_tie_breaker(v, "dis_max")?,
            "boost" => boost = parse_boost(v, "dis_max")?,
            "_name" => {}
            other => return Err(err(format!("[dis_max] query does not support [{other}]"))),
        }
    }
    Ok(Query::DisMax {
        queries,
        tie_breaker: tie,
        boost,
    })
}

#[cfg(test)]
mod tests;
