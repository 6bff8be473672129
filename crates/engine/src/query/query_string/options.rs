//! The options of `query_string` and `simple_query_string` -> [`QsOptions`]. Each option
//! Elasticsearch 7.10 accepts is either honoured by the query-string parser or, in a form
//! the engine cannot honour, refused by name (400); none is kept without effect.
//!
//! Owns: option names and values. Must not touch: the query syntax (`query_string`).

use serde_json::Value;

use super::{parse_query_string, QsOptions};
use crate::error::EngineResult;
use crate::query::params::{
    boosted_field, err, parse_boost, parse_fields, parse_max_expansions, parse_msm, parse_operator,
    parse_prefix_length, parse_tie_breaker, value_text,
};
use crate::query::{Fuzziness, Query};

/// Parses a `query_string` (`name` = "query_string") or `simple_query_string` body.
pub(in crate::query) fn parse_qs(body: &Value, name: &str) -> EngineResult<Query> {
    let mut o = QsOptions::default();
    let mut query = None;
    for (k, v) in crate::query::params::as_obj(body, name)? {
        match k.as_str() {
            "query" => query = Some(value_text(v)),
            "_name" => {}
            _ if common(&mut o, k, v, name)? => {}
            _ if name == "query_string" && classic_only(&mut o, k, v, name)? => {}
            _ if name != "query_string" && k == "flags" => flags(v, name)?,
            other => return Err(err(format!("[{name}] query does not support [{other}]"))),
        }
    }
    let query = query.ok_or_else(|| err(format!("[{name}] must be provided with a [query]")))?;
    parse_query_string(&query, &o)
}

fn refuse(name: &str, k: &str, v: &Value) -> crate::error::EngineError {
    err(format!(
        "[{name}] [{k}] [{v}] is not supported by this engine"
    ))
}

fn boolean(v: &Value, name: &str, k: &str) -> EngineResult<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" || s == "false" => Ok(s == "true"),
        other => Err(err(format!(
            "[{name}] [{k}] must be a boolean, got [{other}]"
        ))),
    }
}

/// Accepts `v` only when it equals the default Elasticsearch applies (the only form the
/// engine honours).
fn only_default(v: &Value, default: &Value, name: &str, k: &str) -> EngineResult<()> {
    let same = v == default
        || v.as_str().is_some_and(|s| {
            Value::String(s.into()) == *default
                || s.parse::<i64>().ok().map(Value::from).as_ref() == Some(default)
                || s.parse::<bool>().ok().map(Value::from).as_ref() == Some(default)
        });
    if same {
        Ok(())
    } else {
        Err(refuse(name, k, v))
    }
}

/// Options both queries take.
fn common(o: &mut QsOptions, k: &str, v: &Value, name: &str) -> EngineResult<bool> {
    match k {
        "default_field" => o.fields = vec![boosted_field(v.as_str().unwrap_or("*"))],
        "fields" => o.fields = parse_fields(v, name)?,
        "default_operator" => o.default_operator = parse_operator(v, name)?,
        "minimum_should_match" => o.msm = Some(parse_msm(v)?),
        "boost" => o.boost = parse_boost(v, name)?,
        "lenient" => o.lenient = Some(boolean(v, name, k)?),
        "analyzer" => o.analyzer = Some(analyzer(v, name)?),
        // the engine has no synonym filters: with or without, the same query
        "auto_generate_synonyms_phrase_query" => {
            boolean(v, name, k)?;
        }
        "analyze_wildcard" => only_default(v, &Value::Bool(false), name, k)?,
        "fuzzy_prefix_length" => o.fuzzy_prefix_length = parse_prefix_length(v, name)?,
        "fuzzy_max_expansions" => o.fuzzy_max_expansions = parse_max_expansions(v, name)?,
        "fuzzy_transpositions" => o.fuzzy_transpositions = boolean(v, name, k)?,
        "quote_field_suffix" => return Err(refuse(name, k, v)),
        _ => return Ok(false),
    }
    Ok(true)
}

/// Options of `query_string` only.
fn classic_only(o: &mut QsOptions, k: &str, v: &Value, name: &str) -> EngineResult<bool> {
    match k {
        "tie_breaker" => o.tie_breaker = parse_tie_breaker(v, name)?,
        "quote_analyzer" => o.quote_analyzer = Some(analyzer(v, name)?),
        "allow_leading_wildcard" => o.allow_leading_wildcard = boolean(v, name, k)?,
        "phrase_slop" => {
            o.phrase_slop = v
                .as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    err(format!(
                        "[{name}] [phrase_slop] must be a non-negative integer, got [{v}]"
                    ))
                })?
        }
        "fuzziness" => {
            o.fuzziness = Fuzziness::parse(v)
                .ok_or_else(|| err(format!("[{name}] failed to parse [fuzziness] value [{v}]")))?
        }
        "time_zone" => o.time_zone = Some(value_text(v)),
        // a limit on automaton size; the engine applies its own
        "max_determinized_states" => {}
        "enable_position_increments" => only_default(v, &Value::Bool(true), name, k)?,
        "escape" => only_default(v, &Value::Bool(false), name, k)?,
        "type" => only_default(v, &Value::from("best_fields"), name, k)?,
        "rewrite" | "fuzzy_rewrite" => only_default(v, &Value::from("constant_score"), name, k)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// `simple_query_string`'s `flags`: only `ALL` (the default) is the syntax the engine parses.
fn flags(v: &Value, name: &str) -> EngineResult<()> {
    match v {
        Value::String(s) if s.eq_ignore_ascii_case("ALL") => Ok(()),
        Value::Number(n) if n.as_i64() == Some(-1) => Ok(()),
        other => Err(refuse(name, "flags", other)),
    }
}

fn analyzer(v: &Value, name: &str) -> EngineResult<String> {
    v.as_str()
        .map(String::from)
        .ok_or_else(|| err(format!("[{name}] analyzer must be a string")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::parse::parse_query;
    use crate::query::MultiKind;
    use serde_json::json;

    fn qs(body: Value) -> EngineResult<Query> {
        parse_query(&json!({ "query_string": body }))
    }

    fn reason(r: EngineResult<Query>) -> String {
        r.unwrap_err().body().reason
    }

    // issue 30: every query_string option is honoured or refused by name
    #[test]
    fn honoured_options_reach_the_query() {
        let Query::MultiMatch { opts, .. } =
            qs(json!({"query": "fox", "analyzer": "whitespace", "lenient": false})).unwrap()
        else {
            panic!()
        };
        assert_eq!(opts.analyzer.as_deref(), Some("whitespace"));
        assert!(!opts.lenient);
        let Query::MultiMatch {
            opts, slop, kind, ..
        } = qs(json!({"query": "\"a b\"",
            "analyzer": "standard", "quote_analyzer": "keyword", "phrase_slop": 3}))
        .unwrap()
        else {
            panic!()
        };
        assert_eq!((kind, slop), (MultiKind::Phrase, 3));
        assert_eq!(opts.analyzer.as_deref(), Some("keyword"));
        let Query::MultiMatch { slop, .. } =
            qs(json!({"query": "\"a b\"~1", "phrase_slop": 3})).unwrap()
        else {
            panic!()
        };
        assert_eq!(slop, 1);
        let Query::MultiMatch { opts, .. } = qs(json!({"query": "fox~", "fuzziness": 1})).unwrap()
        else {
            panic!()
        };
        assert_eq!(opts.fuzziness, Some(Fuzziness::Fixed(1)));
        let Query::MultiMatch { opts, .. } = qs(json!({"query": "fox~"})).unwrap() else {
            panic!()
        };
        assert_eq!(opts.fuzziness, Some(Fuzziness::Auto(3, 6)));
        assert_eq!(
            (opts.prefix_length, opts.max_expansions, opts.transpositions),
            (0, 50, true)
        );
        // the fuzzy options reach `term~` (issue 30: honoured, not dropped)
        let Query::MultiMatch { opts, .. } = qs(json!({"query": "fox~1", "fuzzy_prefix_length": 2,
            "fuzzy_max_expansions": 5000, "fuzzy_transpositions": false}))
        .unwrap() else {
            panic!()
        };
        assert_eq!(
            (opts.prefix_length, opts.max_expansions, opts.transpositions),
            (2, crate::query::fuzzy::MAX_EXPANSIONS_CAP, false)
        );
        assert!(
            reason(qs(json!({"query": "a~", "fuzzy_max_expansions": 0})))
                .contains("requires max expansions to be positive")
        );
        let Query::Range { bounds, .. } =
            qs(json!({"query": "d:[2020-01-01 TO *]", "time_zone": "+01:00"})).unwrap()
        else {
            panic!()
        };
        assert_eq!(bounds.time_zone.as_deref(), Some("+01:00"));
        assert!(
            reason(qs(json!({"query": "*ox", "allow_leading_wildcard": false})))
                .contains("not allowed as first character")
        );
        assert!(qs(json!({"query": "ox*", "allow_leading_wildcard": false})).is_ok());
        // defaults and no-effect options pass
        assert!(qs(
            json!({"query": "a", "analyze_wildcard": false, "fuzzy_prefix_length": 0,
            "fuzzy_max_expansions": 50, "fuzzy_transpositions": true, "escape": false,
            "type": "best_fields", "rewrite": "constant_score", "max_determinized_states": 10000,
            "enable_position_increments": true, "auto_generate_synonyms_phrase_query": true})
        )
        .is_ok());
    }

    #[test]
    fn options_without_effect_are_refused_by_name() {
        for (k, v) in [
            ("analyze_wildcard", json!(true)),
            ("quote_field_suffix", json!(".exact")),
            ("enable_position_increments", json!(false)),
            ("escape", json!(true)),
            ("type", json!("most_fields")),
            ("rewrite", json!("scoring_boolean")),
        ] {
            let r = reason(qs(json!({"query": "a", k: v})));
            assert!(
                r.contains(&format!("[{k}]")) && r.contains("not supported"),
                "{k}: {r}"
            );
        }
        let r = reason(parse_query(
            &json!({"simple_query_string": {"query": "a", "flags": "OR|AND"}}),
        ));
        assert!(r.contains("[flags]"), "{r}");
        assert!(
            parse_query(&json!({"simple_query_string": {"query": "a", "flags": "ALL"}})).is_ok()
        );
        // query_string-only options are not simple_query_string's
        let r = reason(parse_query(
            &json!({"simple_query_string": {"query": "a", "phrase_slop": 1}}),
        ));
        assert!(r.contains("does not support [phrase_slop]"), "{r}");
        assert!(reason(qs(json!({"query": "a", "flags": "ALL"}))).contains("[flags]"));
    }
}
