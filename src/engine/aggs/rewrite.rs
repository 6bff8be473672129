//! Elasticsearch aggregation request -> tantivy aggregation request, for one index.
//! What the rewritten request loses (bucket boundaries and keys of date histograms, the
//! names of `filters` buckets, the indices of `terms` on `_index`, `top_hits`) is kept in
//! [`Note`]s and [`TopHitsJob`]s, keyed by the aggregation's path (`a>b`).

use std::collections::BTreeMap;

use jiff::tz::TimeZone;
use serde_json::{json, Map, Value};
use tantivy::query::{AllQuery, BooleanQuery, EmptyQuery, Occur, Query as TQuery};

use super::dates::{self, Interval};
use super::filter::placeholder;
use super::{check_not_text, perr, Env};
use crate::engine::error::{EngineError, EngineResult};
use crate::engine::mapping::LeafKind;
use crate::engine::query::{compile, datemath, parse_query};
use crate::engine::store::schema::F_KW;

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
    DateRange {
        tz: TimeZone,
        format: Option<String>,
        keyed: bool,
        keys: Vec<super::render::DateRangeKey>,
    },
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
    env: &'a Env<'a>,
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
        "range" => &["field", "ranges", "keyed"],
        "avg" | "sum" | "min" | "max" | "stats" | "value_count" => &["field", "missing"],
        "extended_stats" => &["field", "missing", "sigma"],
        "percentiles" => &["field", "percents", "keyed", "missing", "tdigest"],
        "cardinality" => &["field", "missing", "precision_threshold"],
        _ => return None,
    })
}

fn unsupported(kind: &str) -> EngineError {
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

    fn query(&mut self, q: Box<dyn TQuery>) -> Value {
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
            "date_range" => vec![(name.to_string(), with_sub(self.date_range(body, &here)?))],
            "composite" => vec![(name.to_string(), with_sub(self.composite(body, &here)?))],
            k => {
                let keys = allowed(k).ok_or_else(|| unsupported(k))?;
                vec![(
                    name.to_string(),
                    with_sub(json!({ k: self.fielded(k, body, keys)? })),
                )]
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

    fn column(&self, field: &str) -> EngineResult<String> {
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

    fn date_field(&self, body: &Value, kind: &str) -> EngineResult<String> {
        let f = body.get("field").and_then(Value::as_str).ok_or_else(|| {
            perr(format!(
                "Required one of fields [field, script], but none were specified. [{kind}]"
            ))
        })?;
        match self.env.ctx.mapping.field(f).map(|i| i.kind) {
            Some(LeafKind::Date) | None => Ok(f.to_string()),
            Some(k) if k.is_numeric() => Ok(f.to_string()),
            Some(k) => Err(EngineError::IllegalArgument(format!(
                "Field [{f}] of type [{}] is not supported for aggregation [{kind}]",
                k.name()
            ))),
        }
    }

    fn date_histogram(&mut self, body: &Value, here: &str) -> EngineResult<Value> {
        let field = self.date_field(body, "date_histogram")?;
        let (mut iv, mut tz, mut format, mut offset) = (None, TimeZone::UTC, None, 0i64);
        let (mut min_doc_count, mut ext, mut keyed, mut key_desc) = (0u64, None, false, false);
        for (k, v) in body.as_object().into_iter().flatten() {
            let s = v.as_str().unwrap_or_default();
            match k.as_str() {
                "field" => {}
                "calendar_interval" => iv = Some(dates::calendar(s)?),
                "fixed_interval" => iv = Some(dates::fixed(s)?),
                "interval" | "date_histogram_interval" => iv = Some(dates::legacy(s)?),
                "time_zone" => tz = dates::zone(s)?,
                "format" => format = Some(s.to_string()),
                "offset" => offset = offset_ms(v)?,
                "min_doc_count" => min_doc_count = v.as_u64().unwrap_or(0),
                "keyed" => keyed = v.as_bool().unwrap_or(false),
                "extended_bounds" => ext = Some(v.clone()),
                "order" => key_desc = order_desc(v)?,
                other => return Err(perr(format!("[date_histogram] unknown field [{other}]"))),
            }
        }
        let iv: Interval = iv.ok_or_else(|| EngineError::IllegalArgument("Required one of fields [calendar_interval, fixed_interval, interval], but none were specified.".into()))?;
        let mut bounds = self.env.bounds.get(&field).copied();
        if let Some(e) = &ext {
            let get = |k: &str| e.get(k).map(|x| self.date_value(x, &field, k == "max"));
            let (lo, hi) = (get("min").transpose()?, get("max").transpose()?);
            bounds = match (bounds, lo, hi) {
                (Some((a, b)), lo, hi) => {
                    Some((lo.map_or(a, |l| l.min(a)), hi.map_or(b, |h| h.max(b))))
                }
                (None, Some(l), Some(h)) => Some((l, h)),
                _ => None,
            };
        }
        let ranges: Vec<Value> = match bounds {
            Some((lo, hi)) => {
                let b = dates::boundaries(lo, hi, iv, &tz, offset)?;
                b.windows(2)
                    .map(|w| json!({"from": w[0] as f64, "to": w[1] as f64}))
                    .collect()
            }
            None => vec![json!({"to": f64::MIN})],
        };
        self.notes.insert(
            here.to_string(),
            Note::DateHistogram {
                tz,
                format,
                min_doc_count,
                extended: ext.is_some(),
                keyed,
                key_desc,
            },
        );
        Ok(json!({"range": {"field": self.column(&field)?, "ranges": ranges}}))
    }

    fn date_value(&self, v: &Value, field: &str, up: bool) -> EngineResult<i64> {
        if let Some(n) = v.as_i64() {
            return Ok(n);
        }
        let formats = self
            .env
            .ctx
            .mapping
            .field(field)
            .map(|i| i.formats.clone())
            .unwrap_or_default();
        let s = v.as_str().unwrap_or_default();
        datemath::eval(s, &formats, self.env.ctx.now_ms, up)
            .ok_or_else(|| EngineError::Parsing(format!("failed to parse date field [{s}]")))
    }

    fn date_range(&mut self, body: &Value, here: &str) -> EngineResult<Value> {
        let field = self.date_field(body, "date_range")?;
        let (mut tz, mut format, mut keyed, mut ranges) = (TimeZone::UTC, None, false, Vec::new());
        let mut keys = Vec::new();
        for (k, v) in body.as_object().into_iter().flatten() {
            match k.as_str() {
                "field" => {}
                "time_zone" => tz = dates::zone(v.as_str().unwrap_or_default())?,
                "format" => format = v.as_str().map(String::from),
                "keyed" => keyed = v.as_bool().unwrap_or(false),
                "ranges" => {
                    for r in v
                        .as_array()
                        .ok_or_else(|| perr("[ranges] must be an array".into()))?
                    {
                        let mut out = Map::new();
                        let mut key: super::render::DateRangeKey = (None, None, None);
                        for (rk, rv) in r.as_object().into_iter().flatten() {
                            match rk.as_str() {
                                "from" | "to" if rv.is_null() => {}
                                "from" | "to" => {
                                    let ms = self.date_value(rv, &field, false)?;
                                    out.insert(rk.clone(), json!(ms as f64));
                                    if rk == "from" {
                                        key.0 = Some(ms);
                                    } else {
                                        key.1 = Some(ms);
                                    }
                                }
                                "key" => key.2 = rv.as_str().map(String::from),
                                other => {
                                    return Err(perr(format!(
                                        "[date_range] unknown range field [{other}]"
                                    )))
                                }
                            }
                        }
                        ranges.push(Value::Object(out));
                        keys.push(key);
                    }
                }
                other => return Err(perr(format!("[date_range] unknown field [{other}]"))),
            }
        }
        self.notes.insert(
            here.to_string(),
            Note::DateRange {
                tz,
                format,
                keyed,
                keys,
            },
        );
        Ok(json!({"range": {"field": self.column(&field)?, "ranges": ranges}}))
    }

    fn composite(&mut self, body: &Value, here: &str) -> EngineResult<Value> {
        let mut out = Map::new();
        let mut dates_seen = Vec::new();
        for (k, v) in body
            .as_object()
            .ok_or_else(|| perr("[composite] must be an object".into()))?
        {
            match k.as_str() {
                "size" | "after" => {
                    out.insert(k.clone(), v.clone());
                }
                "sources" => {
                    let mut sources = Vec::new();
                    for s in v
                        .as_array()
                        .ok_or_else(|| perr("[sources] must be an array".into()))?
                    {
                        let (name, spec) =
                            s.as_object().and_then(|o| o.iter().next()).ok_or_else(|| {
                                perr("[composite] source must be an object of one source".into())
                            })?;
                        let (kind, b) = spec
                            .as_object()
                            .and_then(|o| o.iter().next())
                            .ok_or_else(|| perr("[composite] source must name its type".into()))?;
                        let src = match kind.as_str() {
                            "terms" => {
                                json!({"terms": self.source_fields(b, &["field", "order", "missing_bucket"])?})
                            }
                            "histogram" => {
                                json!({"histogram": self.source_fields(b, &["field", "interval", "order", "missing_bucket"])?})
                            }
                            "date_histogram" => {
                                let iv = match (b.get("fixed_interval"), b.get("interval")) {
                                    (Some(f), _) | (None, Some(f)) => dates::fixed(f.as_str().unwrap_or_default()),
                                    _ => Err(EngineError::IllegalArgument("[composite] date_histogram sources with [calendar_interval] are not supported by this engine; use [fixed_interval]".into())),
                                }?;
                                let Interval::Fixed(ms) = iv else {
                                    unreachable!("fixed")
                                };
                                dates_seen.push(name.clone());
                                let field =
                                    b.get("field").and_then(Value::as_str).unwrap_or_default();
                                let mut h =
                                    json!({"field": self.column(field)?, "interval": ms as f64});
                                if let Some(o) = b.get("order") {
                                    h["order"] = o.clone();
                                }
                                json!({"histogram": h})
                            }
                            other => return Err(unsupported(&format!("composite {other} source"))),
                        };
                        sources.push(json!({ name.as_str(): src }));
                    }
                    out.insert("sources".into(), Value::Array(sources));
                }
                other => return Err(perr(format!("[composite] unknown field [{other}]"))),
            }
        }
        out.entry("size").or_insert(json!(10));
        self.notes
            .insert(here.to_string(), Note::Composite { dates: dates_seen });
        Ok(json!({ "composite": out }))
    }

    fn source_fields(&self, b: &Value, keys: &[&str]) -> EngineResult<Value> {
        let mut out = Map::new();
        for (k, v) in b.as_object().into_iter().flatten() {
            match k.as_str() {
                "field" => {
                    out.insert(
                        "field".into(),
                        Value::String(self.column(v.as_str().unwrap_or_default())?),
                    );
                }
                k if keys.contains(&k) => {
                    out.insert(k.to_string(), v.clone());
                }
                other => {
                    return Err(perr(format!(
                        "[composite] source option [{other}] is not supported"
                    )))
                }
            }
        }
        Ok(Value::Object(out))
    }
}

fn offset_ms(v: &Value) -> EngineResult<i64> {
    let s = v.as_str().map_or_else(|| v.to_string(), String::from);
    let (neg, rest) = match s.strip_prefix('-') {
        Some(r) => (true, r.to_string()),
        None => (false, s.trim_start_matches('+').to_string()),
    };
    let ms = crate::engine::store::settings::parse_time_ms("offset", &rest)?;
    Ok(if neg { -ms } else { ms })
}

fn order_desc(v: &Value) -> EngineResult<bool> {
    let (k, dir) = v
        .as_object()
        .and_then(|o| o.iter().next())
        .ok_or_else(|| perr("[order] must be an object".into()))?;
    if k != "_key" {
        return Err(EngineError::IllegalArgument(format!(
            "[date_histogram] ordering by [{k}] is not supported by this engine"
        )));
    }
    Ok(dir.as_str() == Some("desc"))
}
