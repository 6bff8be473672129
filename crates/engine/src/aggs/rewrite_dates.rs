//! The date and composite parts of [`Rewriter`]: `date_histogram` as a `range` aggregation
//! over epoch milliseconds, and `composite` sources.

use jiff::tz::TimeZone;
use serde_json::{json, Map, Value};

use super::dates::{self, Interval};
use super::perr;
use super::rewrite::{unsupported, Note, Rewriter};
use crate::error::{EngineError, EngineResult};
use crate::mapping::LeafKind;
use crate::query::datemath;

impl Rewriter<'_> {
    pub(super) fn date_field(&self, body: &Value, kind: &str) -> EngineResult<String> {
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

    pub(super) fn date_histogram(&mut self, body: &Value, here: &str) -> EngineResult<Value> {
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

    pub(super) fn date_value(&self, v: &Value, field: &str, up: bool) -> EngineResult<i64> {
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

    pub(super) fn composite(&mut self, body: &Value, here: &str) -> EngineResult<Value> {
        let mut out = Map::new();
        let mut dates_seen = Vec::new();
        // source name -> the type prefix of tantivy's after keys
        let mut types: Map<String, Value> = Map::new();
        let mut after = None;
        for (k, v) in body
            .as_object()
            .ok_or_else(|| perr("[composite] must be an object".into()))?
        {
            match k.as_str() {
                "size" => {
                    out.insert(k.clone(), v.clone());
                }
                "after" => after = Some(v.clone()),
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
                        types.insert(name.clone(), json!(self.after_type(kind, b)));
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
        if let Some(a) = after {
            out.insert("after".into(), tantivy_after(&a, &types)?);
        }
        out.entry("size").or_insert(json!(10));
        self.notes
            .insert(here.to_string(), Note::Composite { dates: dates_seen });
        Ok(json!({ "composite": out }))
    }

    /// The type tantivy gives the keys of a composite source (`str`, `i64`, `f64`, `bool`).
    fn after_type(&self, kind: &str, b: &Value) -> &'static str {
        if kind != "terms" {
            return "f64";
        }
        let field = b.get("field").and_then(Value::as_str).unwrap_or_default();
        match self.env.ctx.mapping.field(field).map(|f| f.kind) {
            Some(LeafKind::Boolean) => "bool",
            Some(k) if k.is_float() => "f64",
            Some(k) if k.is_numeric() => "i64",
            _ => "str",
        }
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
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(&s)),
    };
    let ms = crate::store::settings::parse_time_ms("offset", rest)?;
    // `-` of the most negative value would overflow: saturate, as a past-range offset
    // matches no bucket anyway
    Ok(if neg { ms.saturating_neg() } else { ms })
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

/// An `after` key as Elasticsearch gives it (the last bucket's key) in tantivy's encoding
/// (`<type>:<value>` per source).
fn tantivy_after(after: &Value, types: &Map<String, Value>) -> EngineResult<Value> {
    let obj = after
        .as_object()
        .ok_or_else(|| perr("[composite] [after] must be an object".into()))?;
    let mut out = Map::new();
    for (name, v) in obj {
        let t = types.get(name).and_then(Value::as_str).ok_or_else(|| {
            EngineError::IllegalArgument(format!(
                "[after] has a key [{name}] that is not a source of the composite aggregation"
            ))
        })?;
        let text = match v {
            Value::Null => "null:".to_string(),
            Value::String(s) if t == "str" => format!("str:{s}"),
            Value::Number(n) if t == "i64" => format!("i64:{}", n.as_f64().unwrap_or(0.0) as i64),
            Value::Number(n) if t == "f64" => format!("f64:{}", n.as_f64().unwrap_or(0.0)),
            Value::Bool(b) if t == "bool" => format!("bool:{b}"),
            other => {
                return Err(EngineError::IllegalArgument(format!(
                    "[after] value [{other}] of [{name}] does not fit its source"
                )))
            }
        };
        out.insert(name.clone(), Value::String(text));
    }
    Ok(Value::Object(out))
}
