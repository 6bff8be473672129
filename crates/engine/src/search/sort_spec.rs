//! The sort specification as requested: the body's `sort` (a field name, `{field: order}`
//! or `{field: {options}}`, or an array of those) and the `sort=a:desc,b` parameter, parsed
//! into [`SortSpec`]s. Options: `order`, `missing` (`_last` or `_first`), `unmapped_type`,
//! `mode` (the value of a multi-valued field a document sorts by), and `numeric_type` (checked
//! against the field when the key is resolved). What Elasticsearch 7.10 takes and this
//! engine does not (a `missing` value, `nested`, `format`) is 400 naming it.
//!
//! Pure: JSON in, specs out.

use serde_json::{json, Value};

use crate::error::{EngineError, EngineResult};

/// Which value of a multi-valued field a document sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortMode {
    Min,
    Max,
    Sum,
    Avg,
    Median,
}

impl SortMode {
    fn parse(v: &Value) -> EngineResult<SortMode> {
        let s = v.as_str().unwrap_or_default();
        Ok(match s.to_ascii_lowercase().as_str() {
            "min" => SortMode::Min,
            "max" => SortMode::Max,
            "sum" => SortMode::Sum,
            "avg" => SortMode::Avg,
            "median" => SortMode::Median,
            _ => {
                return Err(EngineError::IllegalArgument(format!(
                    "Unknown SortMode [{}]",
                    crate::query::target::as_text(v)
                )))
            }
        })
    }

    /// Whether only numeric fields take this mode.
    pub fn numeric_only(self) -> bool {
        matches!(self, SortMode::Sum | SortMode::Avg | SortMode::Median)
    }
}

/// One sort key as requested.
#[derive(Debug, Clone, PartialEq)]
pub struct SortSpec {
    pub field: String,
    pub desc: bool,
    pub missing_first: bool,
    pub unmapped_type: Option<String>,
    /// `None`: `min` ascending, `max` descending, as Elasticsearch defaults.
    pub mode: Option<SortMode>,
    pub numeric_type: Option<String>,
}

impl SortSpec {
    /// A key on `field` with the defaults of its order.
    pub fn new(field: &str, desc: bool) -> SortSpec {
        SortSpec {
            field: field.to_string(),
            desc,
            missing_first: false,
            unmapped_type: None,
            mode: None,
            numeric_type: None,
        }
    }
}

/// Parses the body's `sort` (string, object or array of those).
pub fn parse_sort(v: &Value) -> EngineResult<Vec<SortSpec>> {
    let items: Vec<&Value> = match v {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    items.into_iter().map(parse_one).collect()
}

fn default_desc(field: &str) -> bool {
    field == "_score"
}

fn parse_order(v: &Value) -> EngineResult<bool> {
    match v.as_str() {
        Some("desc") => Ok(true),
        Some("asc") => Ok(false),
        _ => Err(EngineError::Parsing(format!(
            "[sort] unknown order [{v}], expected [asc] or [desc]"
        ))),
    }
}

fn parse_missing(v: &Value) -> EngineResult<bool> {
    match v.as_str() {
        Some("_first") => Ok(true),
        Some("_last") => Ok(false),
        _ => Err(EngineError::IllegalArgument(format!(
            "[sort] a [missing] value other than [_last] or [_first] ({v}) is not supported by this engine"
        ))),
    }
}

fn parse_options(s: &mut SortSpec, m: &serde_json::Map<String, Value>) -> EngineResult<()> {
    for (k, val) in m {
        match k.as_str() {
            "order" => s.desc = parse_order(val)?,
            "missing" => s.missing_first = parse_missing(val)?,
            "unmapped_type" => s.unmapped_type = val.as_str().map(String::from),
            "mode" => s.mode = Some(SortMode::parse(val)?),
            "numeric_type" => s.numeric_type = val.as_str().map(str::to_ascii_lowercase),
            "nested" | "nested_path" | "nested_filter" | "format" => {
                return Err(EngineError::IllegalArgument(format!(
                    "[sort] option [{k}] is not supported by this engine"
                )))
            }
            other => {
                return Err(EngineError::Parsing(format!(
                    "[field_sort] unknown field [{other}]"
                )))
            }
        }
    }
    Ok(())
}

fn parse_one(v: &Value) -> EngineResult<SortSpec> {
    match v {
        Value::String(f) => Ok(SortSpec::new(f, default_desc(f))),
        Value::Object(o) if o.len() == 1 => {
            let (f, opts) = o.iter().next().expect("one entry");
            let mut s = SortSpec::new(f, default_desc(f));
            match opts {
                Value::String(_) => s.desc = parse_order(opts)?,
                Value::Object(m) => parse_options(&mut s, m)?,
                other => {
                    return Err(EngineError::Parsing(format!(
                        "[sort] malformed sort for [{f}]: {other}"
                    )))
                }
            }
            Ok(s)
        }
        other => Err(EngineError::Parsing(format!(
            "[sort] malformed sort: {other}"
        ))),
    }
}

/// Parses the `sort=a:desc,b` URI parameter.
pub fn parse_sort_param(s: &str) -> EngineResult<Vec<SortSpec>> {
    s.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (f, order) = p.split_once(':').unwrap_or((p, ""));
            let desc = match order {
                "" => default_desc(f),
                o => parse_order(&json!(o))?,
            };
            Ok(SortSpec::new(f, desc))
        })
        .collect()
}

/// Whether the sort is the default relevance order.
pub fn is_score_order(specs: &[SortSpec]) -> bool {
    specs.is_empty() || (specs.len() == 1 && specs[0].field == "_score" && specs[0].desc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_read_or_refused_by_name() {
        let s = parse_sort(
            &json!([{"n": {"order": "desc", "mode": "AVG", "missing": "_first"}}, "_doc"]),
        )
        .unwrap();
        assert_eq!(s[0].mode, Some(SortMode::Avg));
        assert!(s[0].desc && s[0].missing_first);
        assert_eq!(s[1], SortSpec::new("_doc", false));
        let err = |v: Value| parse_sort(&v).unwrap_err().body().reason;
        assert_eq!(
            err(json!({"n": {"mode": "first"}})),
            "Unknown SortMode [first]"
        );
        assert!(err(json!({"n": {"missing": 0}})).contains("not supported"));
        assert!(err(json!({"n": {"nested": {"path": "x"}}})).contains("[nested]"));
        assert_eq!(
            err(json!({"n": {"size": 1}})),
            "[field_sort] unknown field [size]"
        );
        assert_eq!(
            parse_sort_param("a:desc,_score").unwrap(),
            vec![SortSpec::new("a", true), SortSpec::new("_score", true)]
        );
    }
}
