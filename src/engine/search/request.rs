//! The search request: body keys and URI parameters (`q`, `df`, `default_operator`,
//! `from`, `size`, `sort`, `_source*`, `version`, ...), validated as Elasticsearch does.

use serde_json::Value;

use super::sort::{parse_sort, parse_sort_param, SortSpec};
use super::source::SourceFilter;
use crate::engine::error::{EngineError, EngineResult};
use crate::engine::query::parse::{boosted_field, parse_query};
use crate::engine::query::query_string::{parse_query_string, QsOptions};
use crate::engine::query::{Operator, Query};

/// A parsed search request.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRequest {
    pub query: Query,
    pub post_filter: Option<Query>,
    pub from: usize,
    pub size: usize,
    pub sort: Vec<SortSpec>,
    pub source: SourceFilter,
    pub aggs: Option<Value>,
    pub track_scores: bool,
    pub version: bool,
    pub seq_no_primary_term: bool,
}

impl Default for SearchRequest {
    fn default() -> Self {
        SearchRequest {
            query: Query::MatchAll { boost: 1.0 },
            post_filter: None,
            from: 0,
            size: 10,
            sort: Vec::new(),
            source: SourceFilter::All,
            aggs: None,
            track_scores: false,
            version: false,
            seq_no_primary_term: false,
        }
    }
}

/// Body keys accepted and ignored (features without effect here).
const IGNORED: &[&str] = &[
    "track_total_hits",
    "timeout",
    "highlight",
    "explain",
    "stored_fields",
    "docvalue_fields",
    "min_score",
    "terminate_after",
    "suggest",
    "script_fields",
    "indices_boost",
    "profile",
    "ext",
    "fields",
    "stats",
    "_name",
    "batched_reduce_size",
    "rescore",
    "collapse",
];

fn count(v: &Value, name: &str) -> EngineResult<usize> {
    let n = match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| EngineError::Parsing(format!("[{name}] failed to parse field")))?;
    if n < 0 {
        return Err(EngineError::IllegalArgument(format!(
            "[{name}] parameter cannot be negative, found [{n}]"
        )));
    }
    Ok(n as usize)
}

fn flag(v: &Value) -> bool {
    matches!(v, Value::Bool(true)) || v.as_str() == Some("true")
}

impl SearchRequest {
    /// Parses a search body (absent: match all, 10 hits).
    pub fn from_body(body: Option<&Value>) -> EngineResult<SearchRequest> {
        let mut r = SearchRequest::default();
        let Some(body) = body else { return Ok(r) };
        let obj = body.as_object().ok_or_else(|| {
            EngineError::Parsing("Unexpected token, expected a search body object".into())
        })?;
        for (k, v) in obj {
            match k.as_str() {
                "query" => r.query = parse_query(v)?,
                "post_filter" => r.post_filter = Some(parse_query(v)?),
                "from" => r.from = count(v, "from")?,
                "size" => r.size = count(v, "size")?,
                "sort" => r.sort = parse_sort(v)?,
                "_source" => r.source = SourceFilter::from_body(v)?,
                "aggs" | "aggregations" => r.aggs = Some(v.clone()),
                "track_scores" => r.track_scores = flag(v),
                "version" => r.version = flag(v),
                "seq_no_primary_term" => r.seq_no_primary_term = flag(v),
                "search_after" | "slice" | "pit" | "runtime_mappings" => {
                    return Err(EngineError::IllegalArgument(format!(
                        "[{k}] is not supported by this engine"
                    )))
                }
                k if IGNORED.contains(&k) => {}
                other => {
                    return Err(EngineError::Parsing(format!(
                        "Unknown key for a {} in [{other}].",
                        if v.is_object() {
                            "START_OBJECT"
                        } else if v.is_array() {
                            "START_ARRAY"
                        } else {
                            "VALUE_STRING"
                        }
                    )))
                }
            }
        }
        Ok(r)
    }

    /// Applies URI parameters (they override the body, as in Elasticsearch).
    pub fn apply_params(&mut self, get: &dyn Fn(&str) -> Option<String>) -> EngineResult<()> {
        if let Some(q) = get("q") {
            let default_operator = match get("default_operator")
                .map(|s| s.to_ascii_lowercase())
                .as_deref()
            {
                Some("and") => Operator::And,
                Some("or") | None => Operator::Or,
                Some(other) => {
                    return Err(EngineError::IllegalArgument(format!(
                        "operator [{other}] is not allowed, use [AND] or [OR]"
                    )))
                }
            };
            let fields = get("df")
                .map(|f| vec![boosted_field(&f)])
                .unwrap_or_default();
            let opts = QsOptions {
                fields,
                default_operator,
                ..Default::default()
            };
            self.query = parse_query_string(&q, &opts)?;
        }
        if let Some(v) = get("from") {
            self.from = count(&Value::String(v), "from")?;
        }
        if let Some(v) = get("size") {
            self.size = count(&Value::String(v), "size")?;
        }
        if let Some(s) = get("sort") {
            self.sort = parse_sort_param(&s)?;
        }
        let (src, inc, exc) = (
            get("_source"),
            get("_source_includes").or_else(|| get("_source_include")),
            get("_source_excludes").or_else(|| get("_source_exclude")),
        );
        if let Some(f) = SourceFilter::from_params(src.as_deref(), inc.as_deref(), exc.as_deref()) {
            self.source = f;
        }
        for (name, slot) in [
            ("version", &mut self.version),
            ("seq_no_primary_term", &mut self.seq_no_primary_term),
            ("track_scores", &mut self.track_scores),
        ] {
            if let Some(v) = get(name) {
                *slot = v == "true" || v.is_empty();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn body_keys() {
        let r = SearchRequest::from_body(Some(&json!({"query": {"match_all": {}}, "from": 5, "size": 2,
            "sort": ["n"], "_source": ["a"], "aggs": {"x": {"avg": {"field": "n"}}}, "track_total_hits": true}))).unwrap();
        assert_eq!((r.from, r.size, r.sort.len()), (5, 2, 1));
        assert!(r.aggs.is_some());
        let e = SearchRequest::from_body(Some(&json!({"querry": {}}))).unwrap_err();
        assert_eq!(e.body().kind, "parsing_exception");
        let e = SearchRequest::from_body(Some(&json!({"size": -1}))).unwrap_err();
        assert_eq!(e.status(), 400);
    }

    #[test]
    fn params_override() {
        let mut r = SearchRequest::from_body(Some(&json!({"size": 3}))).unwrap();
        let params = |k: &str| match k {
            "q" => Some("title:fox".to_string()),
            "size" => Some("7".to_string()),
            "_source" => Some("false".to_string()),
            _ => None,
        };
        r.apply_params(&params).unwrap();
        assert_eq!(r.size, 7);
        assert_eq!(r.source, SourceFilter::None);
        assert!(matches!(r.query, Query::MultiMatch { .. }));
    }
}
