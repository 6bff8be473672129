//! `filter_path`: a comma list of dotted paths (`*` within a name, `**` for any depth, a
//! leading `-` to exclude) that keeps only the named parts of a JSON response, as
//! Elasticsearch's response filtering does; arrays are walked through, and objects or
//! arrays left empty are dropped.
//!
//! Pure functions.

use serde_json::{Map, Value};

use crate::names::wildcard_match;

type Pattern<'a> = Vec<&'a str>;

fn advance<'a>(patterns: &[Pattern<'a>], key: &str) -> Vec<Pattern<'a>> {
    let mut out = Vec::new();
    for p in patterns {
        match p.first() {
            Some(&"**") => {
                out.push(p.clone());
                out.extend(advance(&[p[1..].to_vec()], key));
            }
            Some(seg) if wildcard_match(seg, key) => out.push(p[1..].to_vec()),
            _ => {}
        }
    }
    out
}

fn done(p: &Pattern<'_>) -> bool {
    p.is_empty() || (p.len() == 1 && p[0] == "**")
}

fn include(v: &Value, patterns: &[Pattern<'_>]) -> Option<Value> {
    if patterns.iter().any(done) {
        return Some(v.clone());
    }
    match v {
        Value::Object(o) => {
            let mut out = Map::new();
            for (k, child) in o {
                let next = advance(patterns, k);
                if next.is_empty() {
                    continue;
                }
                if let Some(c) = include(child, &next) {
                    out.insert(k.clone(), c);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Value::Array(a) => {
            let items: Vec<Value> = a.iter().filter_map(|x| include(x, patterns)).collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        _ => None,
    }
}

fn exclude(v: &mut Value, patterns: &[Pattern<'_>]) {
    match v {
        Value::Object(o) => {
            let keys: Vec<String> = o.keys().cloned().collect();
            for k in keys {
                let next = advance(patterns, &k);
                if next.iter().any(|p| p.is_empty()) {
                    o.remove(&k);
                } else if !next.is_empty() {
                    if let Some(c) = o.get_mut(&k) {
                        exclude(c, &next);
                    }
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| exclude(x, patterns)),
        _ => {}
    }
}

/// Filters `v` by a `filter_path` value.
pub fn filter(v: &Value, spec: &str) -> Value {
    let (mut inc, mut exc): (Vec<Pattern<'_>>, Vec<Pattern<'_>>) = (Vec::new(), Vec::new());
    for p in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match p.strip_prefix('-') {
            Some(x) => exc.push(x.split('.').collect()),
            None => inc.push(p.split('.').collect()),
        }
    }
    let mut out = if inc.is_empty() {
        v.clone()
    } else {
        include(v, &inc).unwrap_or_else(|| Value::Object(Map::new()))
    };
    if !exc.is_empty() {
        exclude(&mut out, &exc);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_wildcards_and_exclusions() {
        let v = json!({"took": 1, "hits": {"total": {"value": 2}, "hits": [{"_id": "a", "_source": {"x": 1}}, {"_id": "b"}]}});
        assert_eq!(filter(&v, "took"), json!({"took": 1}));
        assert_eq!(
            filter(&v, "hits.hits._id"),
            json!({"hits": {"hits": [{"_id": "a"}, {"_id": "b"}]}})
        );
        assert_eq!(
            filter(&v, "**._id,took"),
            json!({"took": 1, "hits": {"hits": [{"_id": "a"}, {"_id": "b"}]}})
        );
        assert_eq!(
            filter(&v, "hits.t*.value"),
            json!({"hits": {"total": {"value": 2}}})
        );
        assert_eq!(filter(&v, "nothing"), json!({}));
        assert_eq!(filter(&v, "-hits"), json!({"took": 1}));
        assert_eq!(
            filter(&v, "hits,-hits.hits._source"),
            json!({"hits": {"total": {"value": 2}, "hits": [{"_id": "a"}, {"_id": "b"}]}})
        );
    }
}
