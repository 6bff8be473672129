//! Readers of the parameters the query DSL's parsers share (`boost`, `fields` with their
//! `^` boosts, `operator`, `minimum_should_match`, the `match` options, `slop`,
//! `tie_breaker`, prefix lengths and expansions, `zero_terms_query`, `analyzer`), each
//! refusing a bad value with Elasticsearch 7.10's `parsing_exception` message.
//!
//! Must not touch: which query a body is (`parse`, `parse_more`, `query_string`). A leaf of
//! the parsers: imports none of them.

use serde_json::{Map, Value};

use super::{BoostedField, MatchOpts, Msm, Operator};
use crate::error::{EngineError, EngineResult};

pub(super) fn err(msg: impl Into<String>) -> EngineError {
    EngineError::Parsing(msg.into())
}

pub(super) fn as_obj<'a>(v: &'a Value, name: &str) -> EngineResult<&'a Map<String, Value>> {
    v.as_object().ok_or_else(|| {
        err(format!(
            "[{name}] query malformed, no start_object after query name"
        ))
    })
}

pub(super) fn parse_boost(v: &Value, name: &str) -> EngineResult<f32> {
    match v {
        Value::Number(n) => Ok(n.as_f64().unwrap_or(1.0) as f32),
        Value::String(s) => s
            .parse()
            .map_err(|_| err(format!("[{name}] failed to parse [boost]"))),
        _ => Err(err(format!("[{name}] failed to parse [boost]"))),
    }
}

/// The single `{field: ...}` of field-level queries, skipping `boost`/`_name` siblings.
pub(super) fn single_field<'a>(
    body: &'a Value,
    name: &str,
) -> EngineResult<(&'a String, &'a Value, f32)> {
    let obj = as_obj(body, name)?;
    let mut field: Option<(&String, &Value)> = None;
    let mut boost = 1.0;
    for (k, v) in obj {
        match k.as_str() {
            "boost" if !v.is_object() => boost = parse_boost(v, name)?,
            "_name" if !v.is_object() => {}
            _ => {
                if let Some((f, _)) = field {
                    return Err(err(format!(
                        "[{name}] query doesn't support multiple fields, found [{f}] and [{k}]"
                    )));
                }
                field = Some((k, v));
            }
        }
    }
    let (f, v) = field.ok_or_else(|| err(format!("[{name}] query requires a field")))?;
    Ok((f, v, boost))
}

/// `minimum_should_match` as a number, `"2"`, `"-1"`, `"75%"` or `"-25%"`.
pub fn parse_msm(v: &Value) -> EngineResult<Msm> {
    match v {
        Value::Number(n) => Ok(Msm::Count(n.as_i64().unwrap_or(0))),
        Value::String(s) => {
            let s = s.trim();
            if let Some(p) = s.strip_suffix('%') {
                p.trim().parse().map(Msm::Percent)
            } else {
                s.parse().map(Msm::Count)
            }
            .map_err(|_| err(format!("failed to parse minimum_should_match [{s}]")))
        }
        _ => Err(err("[minimum_should_match] must be a number or a string")),
    }
}

pub(super) fn parse_operator(v: &Value, name: &str) -> EngineResult<Operator> {
    match v.as_str().map(str::to_ascii_lowercase).as_deref() {
        Some("or") => Ok(Operator::Or),
        Some("and") => Ok(Operator::And),
        _ => Err(err(format!(
            "[{name}] query does not support operator [{v}]"
        ))),
    }
}

pub(super) fn match_opt(
    opts: &mut MatchOpts,
    k: &str,
    v: &Value,
    name: &str,
) -> EngineResult<bool> {
    match k {
        "operator" => opts.operator = parse_operator(v, name)?,
        "minimum_should_match" => opts.msm = Some(parse_msm(v)?),
        "zero_terms_query" => opts.zero_terms_all = parse_zero_terms(v)?,
        "lenient" => opts.lenient = parse_flag(v, name, k)?,
        "fuzziness" => {
            opts.fuzziness =
                Some(super::Fuzziness::parse(v).ok_or_else(|| {
                    err(format!("[{name}] failed to parse [fuzziness] value [{v}]"))
                })?)
        }
        "analyzer" => opts.analyzer = Some(analyzer_named(v, name)?),
        "prefix_length" => opts.prefix_length = parse_prefix_length(v, name)?,
        "max_expansions" => opts.max_expansions = parse_max_expansions(v, name)?,
        "fuzzy_transpositions" => opts.transpositions = parse_flag(v, name, k)?,
        // without synonym filters (none exist in this engine) the option has no effect
        "auto_generate_synonyms_phrase_query" => {
            parse_flag(v, name, k)?;
        }
        "cutoff_frequency" | "fuzzy_rewrite" if !v.is_null() => {
            return Err(EngineError::IllegalArgument(format!(
                "[{name}] [{k}] is not supported by this engine"
            )))
        }
        "cutoff_frequency" | "fuzzy_rewrite" | "_name" => {}
        _ => return Ok(false),
    }
    Ok(true)
}

/// A whole number option (a JSON number or its string).
pub(super) fn parse_int(v: &Value, name: &str, key: &str) -> EngineResult<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .ok_or_else(|| err(format!("[{name}] failed to parse [{key}] value [{v}]")))
}

/// A boolean option (`true`/`false` or their strings).
pub(super) fn parse_flag(v: &Value, name: &str, key: &str) -> EngineResult<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" || s == "false" => Ok(s == "true"),
        _ => Err(err(format!("[{name}] failed to parse [{key}] value [{v}]"))),
    }
}

/// `prefix_length`: at least 0 (Elasticsearch's message otherwise).
pub(super) fn parse_prefix_length(v: &Value, name: &str) -> EngineResult<usize> {
    let n = parse_int(v, name, "prefix_length")?;
    usize::try_from(n).map_err(|_| {
        EngineError::IllegalArgument(format!(
            "[{name}] requires prefix length to be non-negative."
        ))
    })
}

/// `max_expansions`: positive; above [`super::fuzzy::MAX_EXPANSIONS_CAP`] it is the cap, as
/// Lucene bounds it by the clause limit.
pub(super) fn parse_max_expansions(v: &Value, name: &str) -> EngineResult<usize> {
    match parse_int(v, name, "max_expansions")? {
        n if n > 0 => Ok((n as u64).min(super::fuzzy::MAX_EXPANSIONS_CAP as u64) as usize),
        _ => Err(EngineError::IllegalArgument(format!(
            "[{name}] requires max expansions to be positive."
        ))),
    }
}

/// `zero_terms_query`: `none` or `all` (true for `all`).
pub(super) fn parse_zero_terms(v: &Value) -> EngineResult<bool> {
    match v.as_str().map(str::to_ascii_lowercase).as_deref() {
        Some("none") => Ok(false),
        Some("all") => Ok(true),
        _ => Err(err(format!(
            "Unsupported zero_terms_query value [{}]",
            value_text(v)
        ))),
    }
}

/// A query's `analyzer`: a name, resolved against the index's analysis when compiled.
pub(super) fn analyzer_named(v: &Value, name: &str) -> EngineResult<String> {
    v.as_str()
        .map(String::from)
        .ok_or_else(|| err(format!("[{name}] analyzer must be a string")))
}

pub(super) fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `slop`: a whole number of at least 0.
pub(super) fn parse_slop(v: &Value, name: &str) -> EngineResult<u32> {
    u32::try_from(parse_int(v, name, "slop")?)
        .map_err(|_| EngineError::IllegalArgument("No negative slop allowed.".into()))
}

/// `tie_breaker`: a number (or its string).
pub(super) fn parse_tie_breaker(v: &Value, name: &str) -> EngineResult<f32> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .map(|f| f as f32)
    .ok_or_else(|| {
        err(format!(
            "[{name}] failed to parse [tie_breaker] value [{v}]"
        ))
    })
}

/// Parses `title^2` into a boosted field.
pub fn boosted_field(s: &str) -> BoostedField {
    match s.rsplit_once('^') {
        Some((name, b)) if b.parse::<f32>().is_ok() => BoostedField {
            name: name.to_string(),
            boost: b.parse().unwrap_or(1.0),
        },
        _ => BoostedField {
            name: s.to_string(),
            boost: 1.0,
        },
    }
}

pub(super) fn parse_fields(v: &Value, name: &str) -> EngineResult<Vec<BoostedField>> {
    match v {
        Value::String(s) => Ok(vec![boosted_field(s)]),
        Value::Array(a) => a
            .iter()
            .map(|f| {
                f.as_str()
                    .map(boosted_field)
                    .ok_or_else(|| err(format!("[{name}] fields must be strings")))
            })
            .collect(),
        _ => Err(err(format!(
            "[{name}] query does not support [fields] of this type"
        ))),
    }
}
