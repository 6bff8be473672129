//! Elasticsearch aggregation request -> tantivy aggregation request, for one index.
//! What the rewritten request loses (bucket boundaries and keys of date histograms, the
//! names of `filters` buckets, the indices of `terms` on `_index`, `top_hits`) is kept in
//! [`Note`]s and [`TopHitsJob`]s, keyed by the aggregation's path (`a>b`).

use std::collections::BTreeMap;

use jiff::tz::TimeZone;
use serde_json::{json, Map, Value};
use tantivy::query::{AllQuery, BooleanQuery, EmptyQuery, Occur, Query as TQuery};

use super::filter::placeholder;
use super::{check_not_text, perr, Env};
use crate::error::{EngineError, EngineResult};
use crate::query::{compile, parse_query};
use crate::store::schema::F_KW;

/// One requested range (epoch milliseconds for dates).
#[derive(Debug, Clone, PartialEq)]
pub struct RangeEntry {
    pub from: Option<f64>,
    pub to: Option<f64>,
    pub key: Option<String>,
}

/// How a range aggregation renders.
#[derive(Debug, Clone)]
pub struct RangeNote {
    /// Sorted as Elasticsearch sorts them; sibling `i` is entry `i`.
    pub entries: Vec<RangeEntry>,
    pub keyed: bool,
    /// Dates: the zone and format of keys and `*_as_string`.
    pub dates: Option<(TimeZone, Option<String>)>,
}

/// What rendering needs to know about one rewritten aggregation.
#[derive(Debug, Clone)]
pub enum Note {
    DateHistogram {
        tz: TimeZone,
        format: Option<String>,
        min_doc_count: u64,
        /// `extended_bounds` given: empty buckets at the ends are kept.
        extended: bool,
        keyed: bool,
        key_desc: bool,
    },
    /// `range` and `date_range`: sibling filters named `<name>\u{1}<i>`.
    Ranges(RangeNote),
    /// Rewritten as sibling filters named `<name>\u{1}<i>`.
    Filters { names: Vec<String>, keyed: bool },
    /// `terms` on `_index`: sibling filters named `<name>\u{1}<index>`.
    IndexTerms {
        names: Vec<String>,
        size: usize,
        min_doc_count: u64,
        by_key: bool,
        desc: bool,
    },
    /// Composite sources that were date histograms (keys are integers).
    Composite { dates: Vec<String> },
    /// A top-level `percentiles` with siblings `<name>\u{1}values` and `<name>\u{1}count`
    /// (see `exact`).
    ExactPercentiles { compression: f64 },
}

/// A `top_hits` to fill once the buckets are known: under the bucket aggregation at
/// `parent` (empty: the top level).
#[derive(Debug, Clone, PartialEq)]
pub struct TopHitsJob {
    pub parent: String,
    pub name: String,
    pub body: Value,
}

/// Rewrites one request, collecting the queries filter aggregations need.
pub struct Rewriter<'a> {
    pub(super) env: &'a Env<'a>,
    pub queries: Vec<Box<dyn TQuery>>,
    pub notes: BTreeMap<String, Note>,
    pub top_hits: Vec<TopHitsJob>,
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}>{name}")
    }
}

/// Keys each aggregation type passes to tantivy.
fn allowed(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "terms" => &[
            "field",
            "size",
            "shard_size",
            "min_doc_count",
            "order",
            "missing",
            "show_term_doc_count_error",
            "include",
            "exclude",
        ],
        "histogram" => &[
            "field",
            "interval",
            "offset",
            "min_doc_count",
            "extended_bounds",
            "hard_bounds",
            "keyed",
        ],
        "avg" | "sum" | "min" | "max" | "stats" | "value_count" => &["field", "missing"],
        "extended_stats" => &["field", "missing", "sigma"],
        "percentiles" => &["field", "percents", "keyed", "missing", "tdigest"],
        "cardinality" => &["field", "missing", "precision_threshold"],
        _ => return None,
    })
}

pub(super) fn unsupported(kind: &str) -> EngineError {
    EngineError::IllegalArgument(format!(
        "[{kind}] aggregations are not supported by this engine"
    ))
}

impl<'a> Rewriter<'a> {
    /// A rewriter for the index of `env`.
    pub fn new(env: &'a Env<'a>) -> Self {
        Rewriter {
            env,
            queries: Vec::new(),
            notes: BTreeMap::new(),
            top_hits: Vec::new(),
        }
    }

    pub(super) fn query(&mut self, q: Box<dyn TQuery>) -> Value {
        self.queries.push(q);
        Value::String(placeholder(self.queries.len() - 1))
    }

    /// Rewrites an `aggs` object at `path`.
    pub fn aggs(&mut self, raw: &Value, path: &str) -> EngineResult<Value> {
        let obj = raw
            .as_object()
            .ok_or_else(|| perr("Expected [START_OBJECT] under [aggregations]".into()))?;
        let mut out = Map::new();
        for (name, def) in obj {
            if name.contains('\u{1}') || name.contains('>') || name.contains('[') {
                return Err(perr(format!("Invalid aggregation name [{name}]. Aggregation names can contain any character except '[', ']', and '>'")));
            }
            for (n, v) in self.one(name, def, path)? {
                out.insert(n, v);
            }
        }
        Ok(Value::Object(out))
    }

    fn one(&mut self, name: &str, def: &Value, path: &str) -> EngineResult<Vec<(String, Value)>> {
        let obj = def.as_object().ok_or_else(|| {
            perr(format!(
                "Expected [START_OBJECT] under [{name}], but got a value"
            ))
        })?;
        let here = join(path, name);
        let mut sub = None;
        let mut kinds = Vec::new();
        for (k, v) in obj {
            match k.as_str() {
                "aggs" | "aggregations" => sub = Some(self.aggs(v, &here)?),
                "meta" => {}
                _ => kinds.push((k.as_str(), v)),
            }
        }
        let [(kind, body)] = kinds.as_slice() else {
            return Err(perr(format!(
                "Expected exactly one aggregation type under [{name}]"
            )));
        };
        if body.get("script").is_some() {
            return Err(EngineError::IllegalArgument(format!(
                "scripts in aggregations ([{name}]) are not supported by this engine"
            )));
        }
        let with_sub = |mut v: Value| {
            if let Some(s) = &sub {
                v["aggs"] = s.clone();
            }
            v
        };
        Ok(match *kind {
            "top_hits" => {
                if path.contains('>') {
                    return Err(EngineError::IllegalArgument("[top_hits] is supported at the top level and under one bucket aggregation by this engine".into()));
                }
                self.top_hits.push(TopHitsJob {
                    parent: path.to_string(),
                    name: name.to_string(),
                    body: (*body).clone(),
                });
                vec![]
            }
            "terms" if body.get("field").and_then(Value::as_str) == Some("_index") => {
                self.index_terms(name, body, &here, &sub)?
            }
            "filter" => {
                let q = self.compiled(body)?;
                vec![(name.to_string(), with_sub(json!({ "filter": q })))]
            }
            "filters" => self.filters(name, body, &here, &sub)?,
            "date_histogram" => vec![(
                name.to_string(),
                with_sub(self.date_histogram(body, &here)?),
            )],
            "range" | "date_range" => self.ranges(name, kind, body, &here, &sub)?,
            "composite" => vec![(name.to_string(), with_sub(self.composite(body, &here)?))],
            k => {
                let keys = allowed(k).ok_or_else(|| unsupported(k))?;
                let mut out = vec![(
                    name.to_string(),
                    with_sub(json!({ k: self.fielded(k, body, keys)? })),
                )];
                if k == "percentiles" && path.is_empty() {
                    out.extend(self.exact_percentiles(name, body, &here)?);
                }
                out
            }
        })
    }

    /// A body whose `field` is rewritten to its column, after the keys are checked.
    fn fielded(&self, kind: &str, body: &Value, keys: &[&str]) -> EngineResult<Value> {
        let obj = body
            .as_object()
            .ok_or_else(|| perr(format!("[{kind}] must be an object")))?;
        let mut out = Map::new();
        for (k, v) in obj {
            match k.as_str() {
                "field" => {
                    let f = v
                        .as_str()
                        .ok_or_else(|| perr(format!("[{kind}] [field] must be a string")))?;
                    out.insert("field".into(), Value::String(self.column(f)?));
                }
                "precision_threshold" | "tdigest" => {}
                "shard_size" => {
                    out.insert("segment_size".into(), v.clone());
                }
                k if keys.contains(&k) => {
                    out.insert(k.to_string(), v.clone());
                }
                other => return Err(perr(format!("[{kind}] unknown field [{other}]"))),
            }
        }
        if !out.contains_key("field") {
            return Err(perr(format!(
                "Required one of fields [field, script], but none were specified. [{kind}]"
            )));
        }
        Ok(Value::Object(out))
    }

    pub(super) fn column(&self, field: &str) -> EngineResult<String> {
        if field.starts_with('_') {
            return Err(EngineError::IllegalArgument(format!(
                "aggregations on metadata field [{field}] are not supported by this engine"
            )));
        }
        check_not_text(self.env.ctx.mapping, field)?;
        Ok(format!("{F_KW}.{field}"))
    }

    fn compiled(&mut self, query: &Value) -> EngineResult<Value> {
        let q = compile(&parse_query(query)?, &self.env.ctx)?;
        Ok(self.query(q))
    }

    fn filters(
        &mut self,
        name: &str,
        body: &Value,
        here: &str,
        sub: &Option<Value>,
    ) -> EngineResult<Vec<(String, Value)>> {
        let (mut list, mut keyed) = (Vec::new(), true);
        let mut other: Option<String> = None;
        for (k, v) in body
            .as_object()
            .ok_or_else(|| perr("[filters] must be an object".into()))?
        {
            match (k.as_str(), v) {
                ("filters", Value::Object(m)) => {
                    list = m.iter().map(|(n, q)| (n.clone(), q.clone())).collect()
                }
                ("filters", Value::Array(a)) => {
                    keyed = false;
                    list = a
                        .iter()
                        .enumerate()
                        .map(|(i, q)| (i.to_string(), q.clone()))
                        .collect();
                }
                ("other_bucket", Value::Bool(true)) => other = other.or(Some("_other_".into())),
                ("other_bucket", Value::Bool(false)) => {}
                ("other_bucket_key", Value::String(s)) => other = Some(s.clone()),
                (k, _) => return Err(perr(format!("[filters] unknown field [{k}]"))),
            }
        }
        let mut names = Vec::new();
        let mut out = Vec::new();
        let mut compiled = Vec::new();
        for (n, q) in &list {
            let c = compile(&parse_query(q)?, &self.env.ctx)?;
            compiled.push(c.box_clone());
            names.push(n.clone());
            out.push((n.clone(), self.query(c)));
        }
        if let Some(o) = other {
            let mut clauses: Vec<(Occur, Box<dyn TQuery>)> =
                vec![(Occur::Must, Box::new(AllQuery))];
            clauses.extend(compiled.into_iter().map(|c| (Occur::MustNot, c)));
            names.push(o.clone());
            out.push((o, self.query(Box::new(BooleanQuery::new(clauses)))));
        }
        self.notes
            .insert(here.to_string(), Note::Filters { names, keyed });
        Ok(out
            .into_iter()
            .enumerate()
            .map(|(i, (_, q))| {
                let mut v = json!({ "filter": q });
                if let Some(s) = sub {
                    v["aggs"] = s.clone();
                }
                (format!("{name}\u{1}{i}"), v)
            })
            .collect())
    }

    fn index_terms(
        &mut self,
        name: &str,
        body: &Value,
        here: &str,
        sub: &Option<Value>,
    ) -> EngineResult<Vec<(String, Value)>> {
        let (mut size, mut min_doc_count, mut by_key, mut desc) = (10usize, 1u64, false, true);
        for (k, v) in body.as_object().into_iter().flatten() {
            match k.as_str() {
                "field" => {}
                "size" => {
                    size = v
                        .as_u64()
                        .ok_or_else(|| perr("[size] must be a number".into()))?
                        as usize
                }
                "min_doc_count" => min_doc_count = v.as_u64().unwrap_or(1),
                "order" => {
                    let (key, dir) = v
                        .as_object()
                        .and_then(|o| o.iter().next())
                        .ok_or_else(|| perr("[order] must be an object".into()))?;
                    by_key = match key.as_str() {
                        "_key" | "_term" => true,
                        "_count" => false,
                        other => {
                            return Err(EngineError::IllegalArgument(format!(
                            "ordering [_index] terms by [{other}] is not supported by this engine"
                        )))
                        }
                    };
                    desc = dir.as_str() == Some("desc");
                }
                other => {
                    return Err(EngineError::IllegalArgument(format!(
                        "[terms] option [{other}] on [_index] is not supported by this engine"
                    )))
                }
            }
        }
        let names: Vec<String> = self.env.indices.to_vec();
        self.notes.insert(
            here.to_string(),
            Note::IndexTerms {
                names: names.clone(),
                size,
                min_doc_count,
                by_key,
                desc,
            },
        );
        let mut out = Vec::new();
        for n in names {
            let q: Box<dyn TQuery> = if n == self.env.ctx.index_name {
                Box::new(AllQuery)
            } else {
                Box::new(EmptyQuery)
            };
            let mut v = json!({ "filter": self.query(q) });
            if let Some(s) = sub {
                v["aggs"] = s.clone();
            }
            out.push((format!("{name}\u{1}{n}"), v));
        }
        Ok(out)
    }
}
