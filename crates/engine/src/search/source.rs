//! `_source` filtering: `_source: false`, a pattern, a list, or `{includes, excludes}` in
//! the body; `_source`, `_source_includes`, `_source_excludes` as URI parameters. Patterns
//! use `*` wildcards and dotted paths, as Elasticsearch's `XContentMapValues.filter`.

use serde_json::{Map, Value};

use crate::error::{EngineError, EngineResult};
use crate::mapping::join;
use crate::names::wildcard_match;

/// What to return of each hit's source.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum SourceFilter {
    #[default]
    All,
    None,
    Filter {
        includes: Vec<String>,
        excludes: Vec<String>,
    },
}

fn strings(v: &Value) -> EngineResult<Vec<String>> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) => a
            .iter()
            .map(|x| {
                x.as_str().map(String::from).ok_or_else(|| {
                    EngineError::Parsing("[_source] patterns must be strings".into())
                })
            })
            .collect(),
        Value::Null => Ok(vec![]),
        _ => Err(EngineError::Parsing(
            "[_source] expected a string or an array of strings".into(),
        )),
    }
}

impl SourceFilter {
    /// From the body's `_source`.
    pub fn from_body(v: &Value) -> EngineResult<SourceFilter> {
        match v {
            Value::Bool(true) => Ok(SourceFilter::All),
            Value::Bool(false) => Ok(SourceFilter::None),
            Value::String(_) | Value::Array(_) => Ok(SourceFilter::Filter {
                includes: strings(v)?,
                excludes: vec![],
            }),
            Value::Object(o) => {
                let mut includes = vec![];
                let mut excludes = vec![];
                for (k, val) in o {
                    match k.as_str() {
                        "includes" | "include" => includes = strings(val)?,
                        "excludes" | "exclude" => excludes = strings(val)?,
                        other => {
                            return Err(EngineError::Parsing(format!(
                                "Unknown key for a START_ARRAY in [{other}]."
                            )))
                        }
                    }
                }
                Ok(SourceFilter::Filter { includes, excludes })
            }
            _ => Err(EngineError::Parsing("[_source] malformed".into())),
        }
    }

    /// From URI parameters (each optional).
    pub fn from_params(
        source: Option<&str>,
        includes: Option<&str>,
        excludes: Option<&str>,
    ) -> Option<SourceFilter> {
        let list = |s: &str| {
            s.split(',')
                .filter(|p| !p.is_empty())
                .map(String::from)
                .collect::<Vec<_>>()
        };
        let mut f = match source {
            None if includes.is_none() && excludes.is_none() => return None,
            None | Some("true") | Some("") => SourceFilter::All,
            Some("false") => return Some(SourceFilter::None),
            Some(s) => SourceFilter::Filter {
                includes: list(s),
                excludes: vec![],
            },
        };
        if includes.is_some() || excludes.is_some() {
            let (mut inc, mut exc) = match f {
                SourceFilter::Filter { includes, excludes } => (includes, excludes),
                _ => (vec![], vec![]),
            };
            inc.extend(includes.map(list).unwrap_or_default());
            exc.extend(excludes.map(list).unwrap_or_default());
            f = SourceFilter::Filter {
                includes: inc,
                excludes: exc,
            };
        }
        Some(f)
    }

    /// Applies the filter to a parsed source.
    pub fn apply(&self, src: &Map<String, Value>) -> Map<String, Value> {
        match self {
            SourceFilter::All => src.clone(),
            SourceFilter::None => Map::new(),
            SourceFilter::Filter { includes, excludes } => filter_obj(src, "", includes, excludes),
        }
    }
}

fn may_contain(pattern: &str, path: &str) -> bool {
    let prefix = format!("{path}.");
    pattern.starts_with(&prefix)
        || pattern
            .split('*')
            .next()
            .is_some_and(|head| prefix.starts_with(head) || head.starts_with(&prefix))
            && pattern.contains('*')
}

fn filter_value(v: &Value, path: &str, inc: &[String], exc: &[String]) -> Option<Value> {
    match v {
        Value::Object(o) => {
            let m = filter_obj(o, path, inc, exc);
            (!m.is_empty() || inc.is_empty()).then_some(Value::Object(m))
        }
        Value::Array(a) => {
            let items: Vec<Value> = a
                .iter()
                .filter_map(|x| filter_value(x, path, inc, exc))
                .collect();
            (!items.is_empty() || inc.is_empty()).then_some(Value::Array(items))
        }
        other => inc.is_empty().then(|| other.clone()),
    }
}

fn filter_obj(
    obj: &Map<String, Value>,
    prefix: &str,
    inc: &[String],
    exc: &[String],
) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in obj {
        let path = join(prefix, k);
        if exc.iter().any(|p| wildcard_match(p, &path)) {
            continue;
        }
        let whole = inc.is_empty() || inc.iter().any(|p| wildcard_match(p, &path));
        let kept = if whole {
            filter_value(v, &path, &[], exc)
        } else if inc.iter().any(|p| may_contain(p, &path)) {
            filter_value(v, &path, inc, exc)
                .filter(|x| !matches!(x, Value::Object(m) if m.is_empty()))
        } else {
            None
        };
        if let Some(x) = kept {
            out.insert(k.clone(), x);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn src() -> Map<String, Value> {
        json!({"title": "t", "user": {"name": "n", "age": 3}, "tags": ["a"], "items": [{"x": 1, "y": 2}]})
            .as_object()
            .unwrap()
            .clone()
    }

    fn f(v: Value) -> Value {
        Value::Object(SourceFilter::from_body(&v).unwrap().apply(&src()))
    }

    #[test]
    fn includes_and_excludes() {
        assert_eq!(f(json!("title")), json!({"title": "t"}));
        assert_eq!(
            f(json!(["user.name", "tags"])),
            json!({"user": {"name": "n"}, "tags": ["a"]})
        );
        assert_eq!(f(json!("user")), json!({"user": {"name": "n", "age": 3}}));
        assert_eq!(f(json!("u*")), json!({"user": {"name": "n", "age": 3}}));
        assert_eq!(
            f(json!({"excludes": ["user.age", "items"]})),
            json!({"title": "t", "user": {"name": "n"}, "tags": ["a"]})
        );
        assert_eq!(
            f(json!({"includes": ["items.x"]})),
            json!({"items": [{"x": 1}]})
        );
        assert_eq!(f(json!(false)), json!({}));
        assert_eq!(f(json!(true)), Value::Object(src()));
    }

    #[test]
    fn params() {
        assert_eq!(SourceFilter::from_params(None, None, None), None);
        assert_eq!(
            SourceFilter::from_params(Some("false"), None, None),
            Some(SourceFilter::None)
        );
        let p = SourceFilter::from_params(None, Some("a,b"), Some("c")).unwrap();
        assert_eq!(
            p,
            SourceFilter::Filter {
                includes: vec!["a".into(), "b".into()],
                excludes: vec!["c".into()]
            }
        );
    }
}
