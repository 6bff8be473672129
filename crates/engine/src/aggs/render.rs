//! tantivy's aggregation results -> Elasticsearch's response shapes and types, guided by the
//! original request and the rewrite's notes: date histograms (keys, `key_as_string` in the
//! time zone, empty buckets, `keyed`), `range`/`date_range`, `filters` and `terms` on
//! `_index` buckets gathered back from their sibling filters, composite keys, integer counts and
//! keys of integer and date fields, `value_as_string` of dates, percentiles in order.

use std::collections::BTreeMap;

use jiff::tz::TimeZone;
use serde_json::{json, Map, Value};

use super::dates;
use super::rewrite::Note;
use crate::error::EngineResult;
use crate::mapping::date::format_millis;
use crate::mapping::{LeafKind, Mapping};

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}>{name}")
    }
}

fn kind_of(def: &Map<String, Value>) -> String {
    def.keys()
        .find(|k| !matches!(k.as_str(), "aggs" | "aggregations" | "meta"))
        .cloned()
        .unwrap_or_default()
}

/// Renders every aggregation of `req` found in `res` (an object of results by name).
pub fn render(
    res: &mut Value,
    req: &Value,
    mapping: &Mapping,
    notes: &BTreeMap<String, Note>,
    path: &str,
) -> EngineResult<()> {
    let (Some(reqs), true) = (req.as_object(), res.is_object()) else {
        return Ok(());
    };
    for (name, def) in reqs {
        let Some(def) = def.as_object() else { continue };
        let here = join(path, name);
        let kind = kind_of(def);
        let sub = def.get("aggs").or_else(|| def.get("aggregations"));
        let gathered = gather(res, name);
        let mut out = match notes.get(&here) {
            Some(Note::Filters { names, keyed }) => {
                filters(gathered, names, *keyed, sub, mapping, notes, &here)?
            }
            Some(Note::Ranges(note)) => {
                let mut parts = gathered;
                if let Some(s) = sub {
                    for (_, b) in parts.iter_mut() {
                        render(b, s, mapping, notes, &here)?;
                    }
                }
                super::ranges::render(parts, note)?
            }
            Some(Note::IndexTerms {
                names,
                size,
                min_doc_count,
                by_key,
                desc,
            }) => index_terms(
                gathered,
                names,
                *size,
                *min_doc_count,
                (*by_key, *desc),
                sub,
                mapping,
                notes,
                &here,
            )?,
            Some(Note::ExactPercentiles { compression }) => {
                let Some(mut v) = res.get_mut(name).map(Value::take) else {
                    continue;
                };
                super::exact::apply(&mut v, &gathered, *compression);
                v
            }
            _ => match res.get_mut(name).map(Value::take) {
                Some(v) => v,
                None => continue,
            },
        };
        match notes.get(&here) {
            Some(Note::DateHistogram {
                tz,
                format,
                min_doc_count,
                extended,
                keyed,
                key_desc,
            }) => date_histogram(
                &mut out,
                tz,
                format.as_deref(),
                *min_doc_count,
                *extended,
                *keyed,
                *key_desc,
            )?,
            Some(Note::Composite { dates }) => composite(&mut out, dates),
            _ => {}
        }
        fix_types(&mut out, &kind, def, mapping);
        if !matches!(
            notes.get(&here),
            Some(Note::Filters { .. } | Note::IndexTerms { .. } | Note::Ranges(_))
        ) {
            if let Some(sub) = sub {
                for_each_bucket(&mut out, &mut |b| render(b, sub, mapping, notes, &here))?;
            }
        }
        if let Some(m) = def.get("meta") {
            out["meta"] = m.clone();
        }
        res[name.as_str()] = out;
    }
    Ok(())
}

/// Removes and returns the sibling results `<name>\u{1}<key>`, in request order.
fn gather(res: &mut Value, name: &str) -> Vec<(String, Value)> {
    let Some(obj) = res.as_object_mut() else {
        return vec![];
    };
    let prefix = format!("{name}\u{1}");
    let keys: Vec<String> = obj
        .keys()
        .filter(|k| k.starts_with(&prefix))
        .cloned()
        .collect();
    keys.into_iter()
        .filter_map(|k| obj.remove(&k).map(|v| (k[prefix.len()..].to_string(), v)))
        .collect()
}

fn for_each_bucket(
    out: &mut Value,
    f: &mut dyn FnMut(&mut Value) -> EngineResult<()>,
) -> EngineResult<()> {
    match out.get_mut("buckets") {
        Some(Value::Array(a)) => a.iter_mut().try_for_each(f),
        Some(Value::Object(o)) => o.values_mut().try_for_each(f),
        _ => Ok(()),
    }
}

#[allow(clippy::too_many_arguments)]
fn filters(
    mut parts: Vec<(String, Value)>,
    names: &[String],
    keyed: bool,
    sub: Option<&Value>,
    mapping: &Mapping,
    notes: &BTreeMap<String, Note>,
    here: &str,
) -> EngineResult<Value> {
    parts.sort_by_key(|(i, _)| i.parse::<usize>().unwrap_or(usize::MAX));
    let mut buckets = Vec::new();
    for (i, mut b) in parts {
        if let Some(s) = sub {
            render(&mut b, s, mapping, notes, here)?;
        }
        let n = i
            .parse::<usize>()
            .ok()
            .and_then(|i| names.get(i))
            .cloned()
            .unwrap_or(i);
        buckets.push((n, b));
    }
    Ok(if keyed {
        json!({"buckets": Value::Object(buckets.into_iter().collect())})
    } else {
        json!({"buckets": buckets.into_iter().map(|(_, b)| b).collect::<Vec<_>>()})
    })
}

#[allow(clippy::too_many_arguments)]
fn index_terms(
    parts: Vec<(String, Value)>,
    names: &[String],
    size: usize,
    min_doc_count: u64,
    (by_key, desc): (bool, bool),
    sub: Option<&Value>,
    mapping: &Mapping,
    notes: &BTreeMap<String, Note>,
    here: &str,
) -> EngineResult<Value> {
    let mut buckets = Vec::new();
    for (index, mut b) in parts.into_iter().filter(|(n, _)| names.contains(n)) {
        if let Some(s) = sub {
            render(&mut b, s, mapping, notes, here)?;
        }
        let count = b.get("doc_count").and_then(Value::as_u64).unwrap_or(0);
        if count < min_doc_count {
            continue;
        }
        let mut entry = Map::new();
        entry.insert("key".into(), Value::String(index));
        entry.insert("doc_count".into(), json!(count));
        if let Value::Object(o) = b {
            entry.extend(o.into_iter().filter(|(k, _)| k != "doc_count"));
        }
        buckets.push(Value::Object(entry));
    }
    let key = |v: &Value| v["key"].as_str().unwrap_or_default().to_string();
    let count = |v: &Value| v["doc_count"].as_u64().unwrap_or(0);
    buckets.sort_by(|a, b| {
        let o = if by_key {
            key(a).cmp(&key(b))
        } else {
            count(a).cmp(&count(b)).then(key(b).cmp(&key(a)))
        };
        if desc {
            o.reverse()
        } else {
            o
        }
    });
    let other: u64 = buckets.iter().skip(size).map(count).sum();
    buckets.truncate(size);
    Ok(json!({"doc_count_error_upper_bound": 0, "sum_other_doc_count": other, "buckets": buckets}))
}

fn date_histogram(
    out: &mut Value,
    tz: &TimeZone,
    format: Option<&str>,
    min_doc_count: u64,
    extended: bool,
    keyed: bool,
    desc: bool,
) -> EngineResult<()> {
    let ranges = match out.get_mut("buckets").map(Value::take) {
        Some(Value::Array(a)) => a,
        _ => vec![],
    };
    let mut buckets = Vec::new();
    for r in ranges {
        let Some(from) = r.get("from").and_then(Value::as_f64) else {
            continue;
        };
        let mut b = Map::new();
        b.insert(
            "key_as_string".into(),
            json!(dates::format(from as i64, format, tz)?),
        );
        b.insert("key".into(), json!(from as i64));
        b.insert(
            "doc_count".into(),
            r.get("doc_count").cloned().unwrap_or(json!(0)),
        );
        if let Value::Object(o) = r {
            b.extend(o.into_iter().filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "key" | "from" | "to" | "doc_count" | "from_as_string" | "to_as_string"
                )
            }));
        }
        buckets.push(Value::Object(b));
    }
    let count = |b: &Value| b["doc_count"].as_u64().unwrap_or(0);
    if min_doc_count > 0 {
        buckets.retain(|b| count(b) >= min_doc_count);
    } else if !extended {
        let first = buckets.iter().position(|b| count(b) > 0);
        let last = buckets.iter().rposition(|b| count(b) > 0);
        buckets = match (first, last) {
            (Some(a), Some(z)) => buckets.drain(a..=z).collect(),
            _ => vec![],
        };
    }
    if desc {
        buckets.reverse();
    }
    out["buckets"] = if keyed {
        Value::Object(
            buckets
                .into_iter()
                .map(|b| {
                    (
                        b["key_as_string"].as_str().unwrap_or_default().to_string(),
                        b,
                    )
                })
                .collect(),
        )
    } else {
        Value::Array(buckets)
    };
    Ok(())
}

/// Composite keys of date sources as integers; `after_key` is the last bucket's key on every
/// page that has buckets, as Elasticsearch gives it.
fn composite(out: &mut Value, dates: &[String]) {
    let last = out
        .get("buckets")
        .and_then(Value::as_array)
        .and_then(|b| b.last())
        .and_then(|b| b.get("key"))
        .cloned();
    // tantivy's own after key is in its `<type>:<value>` encoding: the last key instead
    match last {
        Some(k) => out["after_key"] = k,
        None => {
            if let Some(o) = out.as_object_mut() {
                o.remove("after_key");
            }
        }
    }
    let fix = |key: &mut Value| {
        for d in dates {
            integerize(key, d);
        }
    };
    if let Some(k) = out.get_mut("after_key") {
        fix(k);
    }
    if let Some(Value::Array(bs)) = out.get_mut("buckets") {
        for b in bs {
            if let Some(k) = b.get_mut("key") {
                fix(k);
            }
        }
    }
}

/// Integer counts and keys for integer and date fields; `value_as_string` for dates;
/// percentiles in increasing order.
fn fix_types(out: &mut Value, kind: &str, def: &Map<String, Value>, mapping: &Mapping) {
    let field_kind = def
        .get(kind)
        .and_then(|b| b.get("field"))
        .and_then(Value::as_str)
        .and_then(|f| mapping.field(f))
        .map(|f| f.kind);
    let integral = field_kind.is_some_and(|k| k.int_bounds().is_some() || k == LeafKind::Date);
    match kind {
        "value_count" | "cardinality" => integerize(out, "value"),
        "min" | "max" if field_kind == Some(LeafKind::Date) => {
            if let Some(ms) = out.get("value").and_then(Value::as_f64) {
                out["value_as_string"] = Value::String(format_millis(ms as i64));
            }
        }
        "percentiles" => {
            if let Some(Value::Object(vals)) = out.get_mut("values") {
                let mut v: Vec<(String, Value)> = std::mem::take(vals).into_iter().collect();
                v.sort_by(|a, b| {
                    a.0.parse::<f64>()
                        .unwrap_or(0.0)
                        .total_cmp(&b.0.parse::<f64>().unwrap_or(0.0))
                });
                *vals = v.into_iter().collect();
            }
        }
        // histogram keys stay doubles (`0.0`), as Elasticsearch renders them
        "terms" | "histogram" => {
            if let Some(Value::Array(buckets)) = out.get_mut("buckets") {
                for b in buckets {
                    if integral && kind == "terms" {
                        integerize(b, "key");
                    }
                    if field_kind == Some(LeafKind::Date) {
                        if let Some(ms) = b.get("key").and_then(Value::as_f64) {
                            b["key_as_string"] = Value::String(format_millis(ms as i64));
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

fn integerize(v: &mut Value, key: &str) {
    if let Some(f) = v.get(key).and_then(Value::as_f64) {
        if f.fract() == 0.0 && f.abs() < 9.0e15 {
            v[key] = Value::from(f as i64);
        }
    }
}
