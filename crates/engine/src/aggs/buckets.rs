//! The documents of one bucket as a query, for the `top_hits` under a bucket aggregation.

use serde_json::Value;

use super::dates;
use crate::error::{EngineError, EngineResult};
use crate::query::{parse_query, Query, RangeBounds};

/// Which bucket of its aggregation: by key (keyed buckets) or by position.
#[derive(Debug, Clone, Copy)]
pub enum BucketRef<'a> {
    Named(&'a str),
    At(usize),
}

fn range(field: &str, from: Option<Value>, to: Option<Value>, millis: bool) -> Query {
    Query::Range {
        field: field.to_string(),
        bounds: RangeBounds {
            gte: from,
            lt: to,
            format: millis.then(|| "epoch_millis".to_string()),
            ..Default::default()
        },
        boost: 1.0,
    }
}

fn unsupported(kind: &str) -> EngineError {
    EngineError::IllegalArgument(format!(
        "[top_hits] under a [{kind}] aggregation is not supported by this engine"
    ))
}

/// The query of bucket `b` (rendered) of the aggregation defined by `def`.
pub fn bucket_query(def: &Value, at: BucketRef<'_>, b: &Value) -> EngineResult<Query> {
    let obj = def.as_object().ok_or_else(|| unsupported("?"))?;
    let (kind, body) = obj
        .iter()
        .find(|(k, _)| !matches!(k.as_str(), "aggs" | "aggregations" | "meta"))
        .ok_or_else(|| unsupported("?"))?;
    let field = body
        .get("field")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let key = b.get("key").cloned().unwrap_or(Value::Null);
    Ok(match kind.as_str() {
        "terms" => Query::Term {
            field: field.into(),
            value: key,
            boost: 1.0,
        },
        "histogram" => {
            let k = key.as_f64().unwrap_or(0.0);
            let w = body.get("interval").and_then(Value::as_f64).unwrap_or(1.0);
            range(field, Some(Value::from(k)), Some(Value::from(k + w)), false)
        }
        "date_histogram" => {
            let k = key.as_i64().unwrap_or(0);
            let s = |n: &str| body.get(n).and_then(Value::as_str);
            let iv = match (s("calendar_interval"), s("fixed_interval"), s("interval")) {
                (Some(c), _, _) => dates::calendar(c)?,
                (_, Some(f), _) => dates::fixed(f)?,
                (_, _, Some(i)) => dates::legacy(i)?,
                _ => return Err(unsupported(kind)),
            };
            let tz = dates::zone(s("time_zone").unwrap_or("UTC"))?;
            let end = dates::next(k, iv, &tz, 0)?;
            range(field, Some(Value::from(k)), Some(Value::from(end)), true)
        }
        // bounds of date ranges (also `range` on a date field: its buckets have
        // `*_as_string`) are epoch milliseconds
        "range" | "date_range" => range(
            field,
            b.get("from").filter(|v| !v.is_null()).cloned(),
            b.get("to").filter(|v| !v.is_null()).cloned(),
            kind == "date_range"
                || b.get("from_as_string").is_some()
                || b.get("to_as_string").is_some(),
        ),
        "filter" => parse_query(body)?,
        "filters" => {
            let filters = body.get("filters").ok_or_else(|| unsupported(kind))?;
            let q = match (at, filters) {
                (BucketRef::Named(n), Value::Object(m)) => m.get(n),
                (BucketRef::At(i), Value::Array(a)) => a.get(i),
                _ => None,
            };
            match q {
                Some(q) => parse_query(q)?,
                None => return Err(unsupported("filters other_bucket")),
            }
        }
        other => return Err(unsupported(other)),
    })
}
