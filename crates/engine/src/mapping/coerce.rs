//! Value coercion of leaf fields, with Elasticsearch's rules and errors: numbers from
//! numbers or numeric strings (range-checked, truncated when `coerce`), booleans from
//! `true`/`false`, dates by the field's formats, IPs, keywords with `ignore_above`.

use serde_json::Value;

use super::date::{number_to_millis, parse_date};
use super::{LeafKind, LeafMapping};
use crate::error::{EngineError, EngineResult};

/// A value for the keyword/number JSON field.
#[derive(Debug, Clone, PartialEq)]
pub enum KwValue {
    Str(String),
    I64(i64),
    F64(f64),
    Bool(bool),
}

/// A leaf value converted for indexing.
pub(super) enum Converted {
    Text(String),
    Kw(KwValue),
    Skip,
}

fn scalar_string(val: &Value) -> String {
    match val {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub(super) fn convert(
    l: &LeafMapping,
    path: &str,
    val: &Value,
    id: &str,
) -> EngineResult<Converted> {
    let kind = l.kind;
    match kind {
        LeafKind::Text => Ok(Converted::Text(scalar_string(val))),
        LeafKind::Keyword => {
            let s = scalar_string(val);
            if l.opts.ignore_above.is_some_and(|n| s.chars().count() > n) {
                return Ok(Converted::Skip);
            }
            if s.len() > MAX_TERM_BYTES && (l.opts.index || l.opts.doc_values) {
                return Err(immense_term(path, &s));
            }
            Ok(Converted::Kw(KwValue::Str(s)))
        }
        LeafKind::Ip => {
            let s = scalar_string(val);
            match s.parse::<std::net::IpAddr>() {
                Ok(ip) => Ok(Converted::Kw(KwValue::Str(ip.to_string()))),
                Err(_) => Err(EngineError::bad_value(
                    path,
                    "ip",
                    id,
                    &s,
                    format!("'{s}' is not an IP string literal."),
                )),
            }
        }
        LeafKind::Boolean => convert_bool(path, val, id).map(|b| Converted::Kw(KwValue::Bool(b))),
        LeafKind::Date => convert_date(l, path, val, id).map(|ms| Converted::Kw(KwValue::I64(ms))),
        LeafKind::Binary | LeafKind::Unindexed => Ok(Converted::Skip),
        k if k.int_bounds().is_some() => {
            convert_int(l, path, val, id).map(|n| Converted::Kw(KwValue::I64(n)))
        }
        _ => convert_float(l, path, val, id).map(|f| Converted::Kw(KwValue::F64(f))),
    }
}

/// Longest term Lucene indexes (and so Elasticsearch), in UTF-8 bytes.
pub const MAX_TERM_BYTES: usize = 32766;

/// Elasticsearch's refusal of a document with a keyword longer than [`MAX_TERM_BYTES`]:
/// the prefix is its first 30 bytes as Java prints a `byte[]` (signed).
fn immense_term(path: &str, s: &str) -> EngineError {
    let prefix: Vec<String> = s.bytes().take(30).map(|b| (b as i8).to_string()).collect();
    let original = format!(
        "bytes can be at most {MAX_TERM_BYTES} in length; got {}",
        s.len()
    );
    EngineError::ImmenseTerm {
        reason: format!(
            "Document contains at least one immense term in field=\"{path}\" (whose UTF8 encoding is longer than the max length {MAX_TERM_BYTES}), all of which were skipped.  Please correct the analyzer to not produce such terms.  The prefix of the first immense term is: '[{}]...', original message: {original}",
            prefix.join(", ")
        ),
        cause: original,
    }
}

fn not_numeric(path: &str, kind: LeafKind, id: &str, val: &Value) -> EngineError {
    EngineError::bad_value(
        path,
        kind.name(),
        id,
        &val.to_string(),
        format!(
            "Current token ({}) not numeric, can not use numeric value accessors",
            if val.is_boolean() {
                "VALUE_TRUE/VALUE_FALSE"
            } else {
                "START_ARRAY"
            }
        ),
    )
}

fn convert_int(l: &LeafMapping, path: &str, val: &Value, id: &str) -> EngineResult<i64> {
    let kind = l.kind;
    let (lo, hi) = kind.int_bounds().expect("integer kind");
    let as_f64: f64 = match val {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                return check_range(i as f64, i, lo, hi, kind, path, id);
            }
            n.as_f64().unwrap_or(f64::NAN)
        }
        Value::String(s) => {
            if !l.opts.coerce {
                return Err(EngineError::bad_value(
                    path,
                    kind.name(),
                    id,
                    s,
                    "Value is a string but coercion is disabled".into(),
                ));
            }
            let t = s.trim();
            if let Ok(i) = t.parse::<i64>() {
                return check_range(i as f64, i, lo, hi, kind, path, id);
            }
            match t.parse::<f64>() {
                Ok(f) if f.is_finite() => f,
                _ => return Err(EngineError::number_format(path, kind.name(), id, s)),
            }
        }
        other => return Err(not_numeric(path, kind, id, other)),
    };
    if !l.opts.coerce && as_f64.fract() != 0.0 {
        return Err(EngineError::bad_value(
            path,
            kind.name(),
            id,
            &as_f64.to_string(),
            format!("Value [{as_f64}] has a decimal part"),
        ));
    }
    check_range(as_f64, as_f64.trunc() as i64, lo, hi, kind, path, id)
}

fn check_range(
    f: f64,
    i: i64,
    lo: i64,
    hi: i64,
    kind: LeafKind,
    path: &str,
    id: &str,
) -> EngineResult<i64> {
    if f < lo as f64 || f > hi as f64 || i < lo || i > hi {
        return Err(EngineError::bad_value(
            path,
            kind.name(),
            id,
            &f.to_string(),
            format!(
                "Value [{f}] is out of range for {} {}",
                if kind == LeafKind::Integer { "an" } else { "a" },
                kind.name()
            ),
        ));
    }
    Ok(i)
}

fn convert_float(l: &LeafMapping, path: &str, val: &Value, id: &str) -> EngineResult<f64> {
    let kind = l.kind;
    let f = match val {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) if l.opts.coerce => match s.trim().parse::<f64>() {
            Ok(f) if f.is_finite() => f,
            _ => return Err(EngineError::number_format(path, kind.name(), id, s)),
        },
        Value::String(s) => {
            return Err(EngineError::bad_value(
                path,
                kind.name(),
                id,
                s,
                "Value is a string but coercion is disabled".into(),
            ))
        }
        other => return Err(not_numeric(path, kind, id, other)),
    };
    match l.opts.scaling_factor {
        Some(sf) if kind == LeafKind::ScaledFloat => Ok((f * sf).round() / sf),
        _ => Ok(f),
    }
}

fn convert_bool(path: &str, val: &Value, id: &str) -> EngineResult<bool> {
    match val {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" || s.is_empty() => Ok(false),
        other => {
            let s = scalar_string(other);
            Err(EngineError::bad_value(
                path,
                "boolean",
                id,
                &s,
                format!("Failed to parse value [{s}] as only [true] or [false] are allowed."),
            ))
        }
    }
}

fn convert_date(l: &LeafMapping, path: &str, val: &Value, id: &str) -> EngineResult<i64> {
    let formats = &l.opts.formats;
    let fail = |s: &str| {
        let spec = l.date_format();
        EngineError::bad_value(
            path,
            "date",
            id,
            s,
            format!("failed to parse date field [{s}] with format [{spec}]"),
        )
    };
    match val {
        Value::String(s) => parse_date(formats, s).ok_or_else(|| fail(s)),
        Value::Number(n) => Ok(number_to_millis(formats, n.as_f64().unwrap_or(0.0))),
        other => Err(fail(&other.to_string())),
    }
}

#[cfg(test)]
mod immense_tests {
    use super::*;
    use crate::mapping::Analysis;

    fn keyword(mapping: serde_json::Value) -> LeafMapping {
        let obj = mapping.as_object().unwrap();
        super::super::parse::parse_leaf(LeafKind::Keyword, obj, "k", &Analysis::default()).unwrap()
    }

    #[test]
    fn keywords_up_to_32766_bytes_and_not_beyond() {
        let l = keyword(serde_json::json!({"type": "keyword"}));
        let ok = Value::String("é".repeat(MAX_TERM_BYTES / 2));
        assert!(matches!(convert(&l, "k", &ok, "1"), Ok(Converted::Kw(_))));
        let over = Value::String(format!("{}x", "é".repeat(MAX_TERM_BYTES / 2)));
        let e = convert(&l, "k", &over, "1")
            .err()
            .unwrap()
            .body()
            .to_value();
        assert_eq!(e["status"], 400);
        assert_eq!(e["error"]["type"], "illegal_argument_exception");
        let reason = e["error"]["reason"].as_str().unwrap();
        assert!(reason.starts_with("Document contains at least one immense term in field=\"k\" (whose UTF8 encoding is longer than the max length 32766)"), "{reason}");
        assert!(reason.contains("'[-61, -87, -61"), "{reason}");
        assert_eq!(
            e["error"]["caused_by"]["type"],
            "max_bytes_length_exceeded_exception"
        );
        assert!(e["error"]["caused_by"]["reason"]
            .as_str()
            .unwrap()
            .ends_with("got 32767"));
        // ignore_above skips the value instead, as in Elasticsearch
        let l = keyword(serde_json::json!({"type": "keyword", "ignore_above": 100}));
        assert!(matches!(convert(&l, "k", &over, "1"), Ok(Converted::Skip)));
    }
}
