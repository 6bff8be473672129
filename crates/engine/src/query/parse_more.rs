//! The query parsers added for Elasticsearch 7.10 compatibility: `regexp`,
//! `match_bool_prefix`, `combined_fields`, `terms_set`, and the text-query body they share
//! with `match_phrase`.

use serde_json::Value;

use super::params::{
    as_obj, err, match_opt, parse_boost, parse_fields, parse_msm, parse_operator, single_field,
    value_text,
};
use super::{MatchOpts, Query};
use crate::error::{EngineError, EngineResult};

/// `{field: text}` or `{field: {<key>: text, boost, _name, ...}}`: the field, the text and
/// the boost; other options go to `opt`, which says whether it knew them.
pub(super) fn text_query(
    body: &Value,
    name: &str,
    key: &str,
    opt: &mut dyn FnMut(&str, &Value) -> EngineResult<bool>,
) -> EngineResult<(String, String, f32)> {
    let (field, v, mut boost) = single_field(body, name)?;
    let text = match v {
        Value::Object(o) => {
            let mut q = None;
            for (k, val) in o {
                match k.as_str() {
                    k if k == key => q = Some(value_text(val)),
                    "boost" => boost = parse_boost(val, name)?,
                    "_name" => {}
                    other if opt(other, val)? => {}
                    other => return Err(err(format!("[{name}] query does not support [{other}]"))),
                }
            }
            q.ok_or_else(|| match key {
                "query" => err("No text specified for text query"),
                _ => err(format!("[{name}] query requires a [{key}]")),
            })?
        }
        other => value_text(other),
    };
    Ok((field.clone(), text, boost))
}

pub(super) fn parse_regexp(body: &Value) -> EngineResult<Query> {
    let mut case_insensitive = false;
    let (field, value, boost) = text_query(body, "regexp", "value", &mut |k, v| {
        Ok(match k {
            "case_insensitive" => {
                case_insensitive = v.as_bool().unwrap_or(false);
                true
            }
            "flags" => {
                check_regexp_flags(v)?;
                true
            }
            "flags_value" | "max_determinized_states" | "rewrite" => true,
            _ => false,
        })
    })?;
    Ok(Query::Regexp {
        field,
        value,
        case_insensitive,
        boost,
    })
}

/// `flags` of `regexp`: `ALL` (the default) and `NONE` and the named operators are known;
/// the translation supports the default operator set.
fn check_regexp_flags(v: &Value) -> EngineResult<()> {
    let s = v.as_str().unwrap_or("");
    for f in s.split('|').map(str::trim).filter(|f| !f.is_empty()) {
        match f.to_ascii_uppercase().as_str() {
            "ALL" | "NONE" | "ANYSTRING" | "EMPTY" | "INTERVAL" | "INTERSECTION" | "COMPLEMENT" => {
            }
            other => return Err(err(format!("Unknown regexp flag [{other}]"))),
        }
    }
    Ok(())
}

pub(super) fn parse_bool_prefix(body: &Value) -> EngineResult<Query> {
    let name = "match_bool_prefix";
    let mut opts = MatchOpts::default();
    let (field, query, boost) = text_query(body, name, "query", &mut |k, v| {
        match_opt(&mut opts, k, v, name)
    })?;
    Ok(Query::MatchBoolPrefix {
        field,
        query,
        opts,
        boost,
    })
}

pub(super) fn parse_combined(body: &Value) -> EngineResult<Query> {
    let name = "combined_fields";
    let (mut query, mut fields, mut boost) = (None, vec![], 1.0);
    let mut opts = MatchOpts::default();
    for (k, v) in as_obj(body, name)? {
        match k.as_str() {
            "query" => query = Some(value_text(v)),
            "fields" => fields = parse_fields(v, name)?,
            "boost" => boost = parse_boost(v, name)?,
            "operator" => opts.operator = parse_operator(v, name)?,
            "minimum_should_match" => opts.msm = Some(parse_msm(v)?),
            "zero_terms_query" => opts.zero_terms_all = v.as_str() == Some("all"),
            "auto_generate_synonyms_phrase_query" | "_name" => {}
            other => return Err(err(format!("[{name}] query does not support [{other}]"))),
        }
    }
    if fields.is_empty() {
        return Err(err("[combined_fields] requires 'fields' to be provided"));
    }
    Ok(Query::CombinedFields {
        fields,
        query: query.ok_or_else(|| err("[combined_fields] requires 'query' to be provided"))?,
        opts,
        boost,
    })
}

pub(super) fn parse_terms_set(body: &Value) -> EngineResult<Query> {
    let name = "terms_set";
    let (field, v, mut boost) = single_field(body, name)?;
    let o = as_obj(v, name)?;
    let (mut values, mut msm_field) = (None, None);
    for (k, val) in o {
        match k.as_str() {
            "terms" => values = val.as_array().cloned(),
            "minimum_should_match_field" => msm_field = val.as_str().map(String::from),
            "minimum_should_match_script" => {
                return Err(EngineError::IllegalArgument(
                    "[terms_set] [minimum_should_match_script] is not supported by this engine; use [minimum_should_match_field]".into(),
                ))
            }
            "boost" => boost = parse_boost(val, name)?,
            "_name" => {}
            other => return Err(err(format!("[{name}] query does not support [{other}]"))),
        }
    }
    let values = values.ok_or_else(|| err("[terms_set] requires [terms]"))?;
    if values.len() > 64 {
        return Err(EngineError::IllegalArgument(
            "[terms_set] with more than 64 terms is not supported by this engine".into(),
        ));
    }
    Ok(Query::TermsSet {
        field: field.clone(),
        values,
        msm_field: msm_field.ok_or_else(|| err("No minimum should match has been specified"))?,
        boost,
    })
}
