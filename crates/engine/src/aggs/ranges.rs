//! `range` and `date_range` aggregations as Elasticsearch 7.10 computes them: one bucket per
//! requested range (`from` included, `to` excluded, overlapping ranges allowed), sorted by
//! `from` then `to`, keyed `from-to` (`*` for an open end; numbers as Java prints doubles,
//! dates in the aggregation's `format` and `time_zone`) unless a `key` is given.
//!
//! tantivy's range aggregation refuses overlapping ranges and adds buckets for the gaps, so
//! each range is rewritten as a sibling filter aggregation `<name>\u{1}<i>` over a `range`
//! query (with the sub-aggregations), and [`render`] gathers them back.

use jiff::tz::TimeZone;
use serde_json::{json, Map, Value};

use super::rewrite::{Note, RangeEntry, RangeNote, Rewriter};
use super::{dates, perr};
use crate::error::{EngineError, EngineResult};
use crate::mapping::LeafKind;
use crate::query::{compile, Query, RangeBounds};

/// A double as Java's `Double.toString` prints it (`4.0`, `4.5`, `1.0E7`).
pub fn java_double(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 || (1e-3..1e7).contains(&a) {
        return format!("{x:?}");
    }
    let s = format!("{x:e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let m = if m.contains('.') {
        m.to_string()
    } else {
        format!("{m}.0")
    };
    format!("{m}E{e}")
}

impl Rewriter<'_> {
    fn bound(&self, v: &Value, field: &str, date: bool, up: bool) -> EngineResult<f64> {
        if date {
            return Ok(self.date_value(v, field, up)? as f64);
        }
        match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        }
        .filter(|f| f.is_finite())
        .ok_or_else(|| perr(format!("[range] failed to parse range bound [{v}]")))
    }

    fn entries(&self, v: &Value, field: &str, date: bool) -> EngineResult<Vec<RangeEntry>> {
        let list = v
            .as_array()
            .ok_or_else(|| perr("[ranges] must be an array".into()))?;
        let mut out = Vec::new();
        for r in list {
            let mut e = RangeEntry {
                from: None,
                to: None,
                key: None,
            };
            for (k, x) in r
                .as_object()
                .ok_or_else(|| perr("[ranges] entries must be objects".into()))?
            {
                match k.as_str() {
                    "from" | "to" if x.is_null() => {}
                    "from" => e.from = Some(self.bound(x, field, date, false)?),
                    "to" => e.to = Some(self.bound(x, field, date, false)?),
                    "key" => e.key = Some(range_key(x)?),
                    other => return Err(perr(format!("[range] unknown range field [{other}]"))),
                }
            }
            out.push(e);
        }
        if out.is_empty() {
            return Err(EngineError::IllegalArgument(
                "No [ranges] specified for the [range] aggregation".into(),
            ));
        }
        let key = |b: Option<f64>, inf: f64| b.unwrap_or(inf);
        out.sort_by(|a, b| {
            key(a.from, f64::NEG_INFINITY)
                .total_cmp(&key(b.from, f64::NEG_INFINITY))
                .then(key(a.to, f64::INFINITY).total_cmp(&key(b.to, f64::INFINITY)))
        });
        Ok(out)
    }

    /// Rewrites a `range` or `date_range` into sibling filters, one per range.
    pub(super) fn ranges(
        &mut self,
        name: &str,
        kind: &str,
        body: &Value,
        here: &str,
        sub: &Option<Value>,
    ) -> EngineResult<Vec<(String, Value)>> {
        let field = self.date_field(body, kind)?;
        let is_date = kind == "date_range"
            || self.env.ctx.mapping.field(&field).map(|i| i.kind) == Some(LeafKind::Date);
        let (mut tz, mut format, mut keyed, mut entries) = (TimeZone::UTC, None, false, None);
        for (k, v) in body.as_object().into_iter().flatten() {
            match k.as_str() {
                "field" | "ranges" => {}
                "keyed" => {
                    keyed = v
                        .as_bool()
                        .ok_or_else(|| perr(format!("[{kind}] [keyed] must be a boolean")))?
                }
                "time_zone" if is_date => tz = dates::zone(v.as_str().unwrap_or_default())?,
                "format" if is_date => format = v.as_str().map(String::from),
                // Elasticsearch's keys this engine does not implement
                "format" | "missing" | "value_type" => {
                    return Err(EngineError::IllegalArgument(format!(
                        "[{k}] of a [{kind}] aggregation is not supported by this engine"
                    )))
                }
                other => return Err(perr(format!("[{kind}] unknown field [{other}]"))),
            }
        }
        if let Some(r) = body.get("ranges") {
            entries = Some(self.entries(r, &field, is_date)?);
        }
        let entries = entries.ok_or_else(|| {
            EngineError::IllegalArgument(format!(
                "No [ranges] specified for the [{name}] aggregation"
            ))
        })?;
        self.column(&field)?; // refuses text and metadata fields
        let mut out = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            let bounds = RangeBounds {
                gte: e.from.map(Value::from),
                lt: e.to.map(Value::from),
                format: is_date.then(|| "epoch_millis".to_string()),
                ..Default::default()
            };
            let q = Query::Range {
                field: field.clone(),
                bounds,
                boost: 1.0,
            };
            let mut v = json!({ "filter": self.query(compile(&q, &self.env.ctx)?) });
            if let Some(s) = sub {
                v["aggs"] = s.clone();
            }
            out.push((format!("{name}\u{1}{i}"), v));
        }
        let dates = is_date.then_some((tz, format));
        self.notes.insert(
            here.to_string(),
            Note::Ranges(RangeNote {
                entries,
                keyed,
                dates,
            }),
        );
        Ok(out)
    }
}

/// A range's `key`: a string, or a number taken as its text (as Elasticsearch reads it).
fn range_key(v: &Value) -> EngineResult<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(perr(format!(
            "[range] [key] must be a string, found [{other}]"
        ))),
    }
}

fn end(b: Option<f64>, dates: &Option<(TimeZone, Option<String>)>) -> EngineResult<Option<String>> {
    let Some(x) = b else { return Ok(None) };
    Ok(Some(match dates {
        Some((tz, format)) => dates::format(x as i64, format.as_deref(), tz)?,
        None => java_double(x),
    }))
}

/// The buckets of a range aggregation from its siblings (already rendered inside).
pub fn render(parts: Vec<(String, Value)>, note: &RangeNote) -> EngineResult<Value> {
    let mut by_index: Vec<Option<Value>> = vec![None; note.entries.len()];
    for (i, v) in parts {
        if let Some(slot) = i.parse::<usize>().ok().and_then(|i| by_index.get_mut(i)) {
            *slot = Some(v);
        }
    }
    let mut buckets = Vec::new();
    for (e, part) in note.entries.iter().zip(by_index) {
        let (fs, ts) = (end(e.from, &note.dates)?, end(e.to, &note.dates)?);
        let key = e.key.clone().unwrap_or_else(|| {
            format!(
                "{}-{}",
                fs.as_deref().unwrap_or("*"),
                ts.as_deref().unwrap_or("*")
            )
        });
        let mut b = Map::new();
        if !note.keyed {
            b.insert("key".into(), json!(key));
        }
        let dated = note.dates.is_some();
        if let (Some(f), Some(s)) = (e.from, &fs) {
            b.insert("from".into(), json!(f));
            if dated {
                b.insert("from_as_string".into(), json!(s));
            }
        }
        if let (Some(t), Some(s)) = (e.to, &ts) {
            b.insert("to".into(), json!(t));
            if dated {
                b.insert("to_as_string".into(), json!(s));
            }
        }
        let part = part.unwrap_or_else(|| json!({"doc_count": 0}));
        b.insert(
            "doc_count".into(),
            part.get("doc_count").cloned().unwrap_or(json!(0)),
        );
        if let Value::Object(o) = part {
            b.extend(o.into_iter().filter(|(k, _)| k != "doc_count"));
        }
        buckets.push((key, Value::Object(b)));
    }
    Ok(if note.keyed {
        json!({"buckets": Value::Object(buckets.into_iter().collect())})
    } else {
        json!({"buckets": buckets.into_iter().map(|(_, b)| b).collect::<Vec<_>>()})
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_java_does() {
        for (x, s) in [
            (4.0, "4.0"),
            (4.5, "4.5"),
            (-3.0, "-3.0"),
            (0.0, "0.0"),
            (1e7, "1.0E7"),
            (1.5e10, "1.5E10"),
            (0.0001, "1.0E-4"),
            (1234567.0, "1234567.0"),
        ] {
            assert_eq!(java_double(x), s, "{x}");
        }
    }
}
