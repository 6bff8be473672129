//! The search request: body keys and URI parameters (`q`, `df`, `default_operator`,
//! `from`, `size`, `sort`, `_source*`, `version`, `track_total_hits`,
//! `rest_total_hits_as_int`, `search_after`, `pit`, `collapse`, `highlight`, ...), validated
//! as Elasticsearch does. A key the engine does not implement is a 400 naming it, never
//! ignored.

use serde_json::Value;

use super::highlight::Highlight;
use super::sort::{parse_sort, parse_sort_param, SortSpec};
use super::source::SourceFilter;
use crate::error::{EngineError, EngineResult};
use crate::query::parse::{boosted_field, parse_query};
use crate::query::query_string::{parse_query_string, QsOptions};
use crate::query::{Operator, Query};
use searchgate_core::params;

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
    /// `track_total_hits` as asked (None: the default, up to 10,000).
    pub track_total: Option<TrackTotal>,
    /// `rest_total_hits_as_int=true`: `hits.total` as an integer.
    pub total_as_int: bool,
    /// `search_after`: the sort values of the last hit of the previous page.
    pub search_after: Option<Vec<Value>>,
    /// `pit`: a point in time to search (id, keep-alive).
    pub pit: Option<PitRef>,
    /// `collapse`: the keyword field whose values collapse hits.
    pub collapse: Option<String>,
    /// `highlight`.
    pub highlight: Option<Highlight>,
    /// `stored_fields: _none_` or a list without `_source`: no `_source` in hits.
    pub stored_fields_none: bool,
    /// Filters of the filtered aliases the request named, by index.
    pub alias_filters: std::collections::BTreeMap<String, Query>,
    /// Routing values by index (`routing`, aliases' `search_routing`): an index listed is
    /// searched on the shards its values select only.
    pub routing: std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
}

/// `track_total_hits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrackTotal {
    Accurate,
    UpTo(u64),
    Disabled,
}

/// How far totals are counted when the request does not say.
pub const DEFAULT_TRACK_TOTAL: u64 = 10_000;

/// The `pit` of a search body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PitRef {
    pub id: String,
    pub keep_alive: Option<String>,
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
            track_total: None,
            total_as_int: false,
            search_after: None,
            pit: None,
            collapse: None,
            highlight: None,
            stored_fields_none: false,
            alias_filters: Default::default(),
            routing: Default::default(),
        }
    }
}

/// Body keys accepted whose effect is nil here: `timeout` (searches are never cut short, so
/// `timed_out` is always false), `stats` (statistics groups), `profile: false`,
/// `explain: false`, `ext: {}`.
fn harmless(k: &str, v: &Value) -> bool {
    match k {
        "timeout" | "stats" => true,
        "profile" | "explain" => v == &Value::Bool(false),
        "ext" => v.as_object().is_some_and(|o| o.is_empty()),
        _ => false,
    }
}

/// Body keys of Elasticsearch 7.10 searches this engine does not implement: a 400 names them.
const UNSUPPORTED: &[&str] = &[
    "profile",
    "explain",
    "ext",
    "docvalue_fields",
    "terminate_after",
    "suggest",
    "script_fields",
    "indices_boost",
    "fields",
    "rescore",
    "slice",
    "runtime_mappings",
    "min_score",
];

/// `track_total_hits` from a body value or a parameter.
pub fn parse_track_total(v: &Value) -> EngineResult<TrackTotal> {
    let n = match v {
        Value::Bool(true) => return Ok(TrackTotal::Accurate),
        Value::Bool(false) => return Ok(TrackTotal::Disabled),
        Value::String(s) if s == "true" || s.is_empty() => return Ok(TrackTotal::Accurate),
        Value::String(s) if s == "false" => return Ok(TrackTotal::Disabled),
        Value::String(s) => s.parse::<i64>().ok(),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
    .ok_or_else(|| {
        EngineError::Parsing(format!("[track_total_hits] failed to parse field [{v}]"))
    })?;
    match n {
        -1 => Ok(TrackTotal::Disabled),
        n if n < -1 => Err(EngineError::IllegalArgument(format!(
            "[track_total_hits] parameter must be positive or equals to -1, got {n}"
        ))),
        n if n >= i32::MAX as i64 => Ok(TrackTotal::Accurate),
        n => Ok(TrackTotal::UpTo(n as u64)),
    }
}

fn parse_pit(v: &Value) -> EngineResult<PitRef> {
    let o = v
        .as_object()
        .ok_or_else(|| EngineError::Parsing("[pit] must be an object".into()))?;
    let mut pit = PitRef {
        id: String::new(),
        keep_alive: None,
    };
    for (k, x) in o {
        match (k.as_str(), x) {
            ("id", Value::String(s)) => pit.id = s.clone(),
            ("keep_alive", Value::String(s)) => pit.keep_alive = Some(s.clone()),
            (other, _) => {
                return Err(EngineError::Parsing(format!(
                    "[point_in_time] unknown field [{other}]"
                )))
            }
        }
    }
    if pit.id.is_empty() {
        return Err(EngineError::Parsing(
            "[point_in_time] requires an [id]".into(),
        ));
    }
    Ok(pit)
}

fn parse_collapse(v: &Value) -> EngineResult<String> {
    let o = v
        .as_object()
        .ok_or_else(|| EngineError::Parsing("[collapse] must be an object".into()))?;
    let mut field = None;
    for (k, x) in o {
        match (k.as_str(), x) {
            ("field", Value::String(s)) => field = Some(s.clone()),
            (other, _) => {
                return Err(EngineError::IllegalArgument(format!(
                    "[collapse] option [{other}] is not supported by this engine"
                )))
            }
        }
    }
    field.ok_or_else(|| EngineError::Parsing("[collapse] requires a [field]".into()))
}

/// `stored_fields`: true when `_source` is not among them.
fn no_source_in(v: &Value) -> bool {
    let names: Vec<&str> = match v {
        Value::String(s) => s.split(',').map(str::trim).collect(),
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    !names.iter().any(|n| *n == "_source" || *n == "*")
}

/// `from` or `size` of a body: a Java `int` (Elasticsearch reads it with `intValue()`),
/// not negative.
fn count(v: &Value, name: &str) -> EngineResult<usize> {
    let n = match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| EngineError::Parsing(format!("[{name}] failed to parse field")))?;
    if i32::try_from(n).is_err() {
        return Err(EngineError::XContent(format!(
            "Numeric value ({n}) out of range of int"
        )));
    }
    if n < 0 {
        return Err(params::negative(name, n).into());
    }
    Ok(n as usize)
}

/// `from` or `size` of the URL (`params::parse_window`: `-1` leaves the body's value).
fn window(v: &str, name: &str) -> EngineResult<Option<usize>> {
    Ok(params::parse_window(v, name)?.map(|n| n as usize))
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
                "track_total_hits" => r.track_total = Some(parse_track_total(v)?),
                "search_after" => match v {
                    Value::Array(a) => r.search_after = Some(a.clone()),
                    _ => {
                        return Err(EngineError::Parsing(
                            "[search_after] must be an array of values".into(),
                        ))
                    }
                },
                "pit" => r.pit = Some(parse_pit(v)?),
                "collapse" => r.collapse = Some(parse_collapse(v)?),
                "highlight" => r.highlight = Some(Highlight::parse(v)?),
                "stored_fields" => r.stored_fields_none = no_source_in(v),
                k if harmless(k, v) => {}
                k if UNSUPPORTED.contains(&k) => {
                    return Err(EngineError::IllegalArgument(format!(
                        "[{k}] is not supported by this engine"
                    )))
                }
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
        if let Some(n) = get("from")
            .map(|v| window(&v, "from"))
            .transpose()?
            .flatten()
        {
            self.from = n;
        }
        if let Some(n) = get("size")
            .map(|v| window(&v, "size"))
            .transpose()?
            .flatten()
        {
            self.size = n;
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
        if let Some(v) = get("track_total_hits") {
            self.track_total = Some(parse_track_total(&Value::String(v))?);
        }
        if let Some(v) = get("stored_fields") {
            self.stored_fields_none = no_source_in(&Value::String(v));
        }
        if let Some(v) = get("rest_total_hits_as_int") {
            self.total_as_int = v == "true" || v.is_empty();
        }
        if self.total_as_int {
            match self.track_total {
                None => self.track_total = Some(TrackTotal::Accurate),
                Some(TrackTotal::UpTo(n)) => {
                    return Err(EngineError::IllegalArgument(format!(
                        "[rest_total_hits_as_int] cannot be used if the tracking of total hits is not accurate, got {n}"
                    )))
                }
                Some(_) => {}
            }
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

    /// Applies the filters of the filtered aliases through which `index` was reached (any of
    /// them matches), as Elasticsearch does for searches, counts and by-query requests.
    pub fn add_alias_filters(&mut self, index: &str, filters: &[Value]) -> EngineResult<()> {
        let mut qs = filters
            .iter()
            .map(parse_query)
            .collect::<EngineResult<Vec<_>>>()?;
        let q = if qs.len() == 1 {
            qs.remove(0)
        } else {
            Query::Bool {
                must: vec![],
                should: qs,
                must_not: vec![],
                filter: vec![],
                msm: Some(crate::query::Msm::Count(1)),
                boost: 1.0,
            }
        };
        self.alias_filters.insert(index.to_string(), q);
        Ok(())
    }

    /// `hits.total` for `total` matching documents, as the request asks it rendered.
    pub fn total_json(&self, total: u64) -> Option<Value> {
        let track = self
            .track_total
            .unwrap_or(TrackTotal::UpTo(DEFAULT_TRACK_TOTAL));
        if self.total_as_int {
            return Some(match track {
                TrackTotal::Disabled => Value::from(-1),
                _ => Value::from(total),
            });
        }
        match track {
            TrackTotal::Disabled => None,
            TrackTotal::UpTo(n) if total > n => {
                Some(serde_json::json!({"value": n, "relation": "gte"}))
            }
            _ => Some(serde_json::json!({"value": total, "relation": "eq"})),
        }
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
