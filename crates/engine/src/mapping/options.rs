//! The parameters of a leaf field -> [`LeafOptions`]: analyzers and normalizers resolved in
//! the index's analysis, and every value checked. A parameter value whose effect the engine
//! does not implement is refused by name (400), never kept without effect.

use serde_json::{Map, Value};

use super::date::{parse_formats, DEFAULT_FORMAT};
use super::{Analysis, Analyzer, LeafKind, LeafOptions};
use crate::analysis::Missing;
use crate::error::{EngineError, EngineResult};

fn unsupported(path: &str, what: &str) -> EngineError {
    EngineError::mapper(format!(
        "{what} on field [{path}] is not supported by this engine"
    ))
}

fn resolve(an: &Analysis, name: &Value, path: &str) -> EngineResult<Analyzer> {
    let name = name.as_str().ok_or_else(|| {
        EngineError::mapper(format!(
            "analyzer [{name}] has not been configured in mappings"
        ))
    })?;
    an.analyzer(name).map_err(|m| match m {
        Missing::Unsupported(n) => unsupported(path, &format!("analyzer [{n}]")),
        Missing::Unknown => EngineError::mapper(format!(
            "analyzer [{name}] has not been configured in mappings"
        )),
    })
}

/// Values of parameters the engine accepts only in their default (or equivalent) form.
fn check_values(kind: LeafKind, p: &Map<String, Value>, path: &str) -> EngineResult<()> {
    let s = |k: &str| {
        p.get(k)
            .map(|v| v.as_str().map(String::from).unwrap_or(v.to_string()))
    };
    if let Some(v) = s("similarity") {
        if v != "BM25" {
            return Err(unsupported(path, &format!("[similarity] [{v}]")));
        }
    }
    if let Some(v) = p.get("boost") {
        if v.as_f64() != Some(1.0) {
            return Err(unsupported(
                path,
                &format!("[boost] [{v}] (index-time boosts)"),
            ));
        }
    }
    if let Some(v) = p.get("position_increment_gap") {
        if v.as_i64() != Some(100) {
            return Err(unsupported(
                path,
                &format!("[position_increment_gap] [{v}]"),
            ));
        }
    }
    if p.contains_key("fielddata_frequency_filter") {
        return Err(unsupported(path, "[fielddata_frequency_filter]"));
    }
    if let Some(v) = p.get("split_queries_on_whitespace") {
        if as_bool(v, "split_queries_on_whitespace")? {
            return Err(unsupported(path, "[split_queries_on_whitespace] true"));
        }
    }
    if let Some(v) = s("locale") {
        if !matches!(
            v.as_str(),
            "" | "ROOT" | "root" | "en" | "EN" | "ENGLISH" | "en_US" | "en-US"
        ) {
            return Err(unsupported(path, &format!("[locale] [{v}]")));
        }
    }
    match (kind, s("index_options").as_deref()) {
        (_, None) => {}
        (LeafKind::Text, Some("positions" | "offsets")) => {}
        (LeafKind::Keyword, Some("docs")) => {}
        (LeafKind::Text | LeafKind::Keyword, Some(o @ ("docs" | "freqs"))) => {
            return Err(unsupported(path, &format!("[index_options] [{o}]")))
        }
        (LeafKind::Keyword, Some(o @ ("positions" | "offsets"))) => {
            return Err(EngineError::mapper(format!(
                "Unknown value [{o}] for field [index_options] - accepted values are [docs, freqs]"
            )))
        }
        (_, Some(o)) => {
            return Err(EngineError::mapper(format!(
                "Unknown value [{o}] for field [index_options] - accepted values are [docs, freqs, positions, offsets]"
            )))
        }
    }
    if let Some(v) = p.get("store") {
        if as_bool(v, "store")? {
            return Err(unsupported(path, "[store] true"));
        }
    }
    if let Some(v) = p.get("norms") {
        let on = as_bool(v, "norms")?;
        if kind == LeafKind::Keyword && on {
            return Err(unsupported(path, "[norms] true"));
        }
        if kind == LeafKind::Text && !on {
            return Err(unsupported(path, "[norms] false"));
        }
    }
    Ok(())
}

/// The options of a leaf field of `kind` with parameters `p`.
pub(super) fn leaf_options(
    kind: LeafKind,
    p: &Map<String, Value>,
    path: &str,
    an: &Analysis,
) -> EngineResult<LeafOptions> {
    let get_bool = |name: &str, default: bool| -> EngineResult<bool> {
        p.get(name).map_or(Ok(default), |v| as_bool(v, name))
    };
    check_values(kind, p, path)?;
    let analyzer = match p.get("analyzer") {
        Some(v) => resolve(an, v, path)?,
        None if kind == LeafKind::Text => an.default_analyzer(),
        None => Analyzer::Standard,
    };
    let search_analyzer = match p.get("search_analyzer") {
        Some(v) => resolve(an, v, path)?,
        None => an
            .default_search_analyzer()
            .filter(|_| kind == LeafKind::Text && !p.contains_key("analyzer"))
            .unwrap_or_else(|| analyzer.clone()),
    };
    if let Some(v) = p.get("search_quote_analyzer") {
        if resolve(an, v, path)? != search_analyzer {
            return Err(unsupported(
                path,
                "[search_quote_analyzer] other than the search analyzer",
            ));
        }
    }
    let normalizer = match p.get("normalizer") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let name = v.as_str().unwrap_or_default();
            Some(an.normalizer(name).ok_or_else(|| {
                EngineError::mapper(format!(
                    "normalizer [{name}] not found for field [{}]",
                    path.rsplit('.').next().unwrap_or(path)
                ))
            })?)
        }
    };
    let ignore_above = match p.get("ignore_above") {
        None => None,
        Some(v) => match v.as_i64() {
            Some(n) if n >= 0 => Some(n as usize),
            _ => {
                return Err(EngineError::mapper(format!(
                "Failed to parse mapping: [ignore_above] must be positive, got [{v}] for [{path}]"
            )))
            }
        },
    };
    let format = p
        .get("format")
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_FORMAT);
    let formats = if kind == LeafKind::Date {
        parse_formats(format).map_err(EngineError::mapper)?
    } else {
        Vec::new()
    };
    let scaling_factor = p.get("scaling_factor").and_then(Value::as_f64);
    if kind == LeafKind::ScaledFloat && scaling_factor.is_none() {
        return Err(EngineError::mapper(format!(
            "Field [scaling_factor] is required for [{path}]"
        )));
    }
    Ok(LeafOptions {
        index: get_bool("index", true)?,
        ignore_above,
        null_value: p.get("null_value").filter(|v| !v.is_null()).cloned(),
        coerce: get_bool("coerce", true)?,
        ignore_malformed: get_bool("ignore_malformed", false)?,
        analyzer,
        search_analyzer,
        normalizer,
        fielddata: get_bool("fielddata", false)?,
        doc_values: get_bool("doc_values", kind != LeafKind::Text)?,
        store: get_bool("store", false)?,
        formats,
        scaling_factor,
        copy_to: copy_to(kind, p, path)?,
    })
}

/// `copy_to`: one path or a list of paths. Types whose values the engine keeps in `_source`
/// only (geo_point, ...) cannot be copied: refused by name.
fn copy_to(kind: LeafKind, p: &Map<String, Value>, path: &str) -> EngineResult<Vec<String>> {
    let targets: Vec<String> = match p.get("copy_to") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), String::from))
            .collect(),
        Some(other) => vec![other.to_string()],
    };
    if let Some(t) = targets
        .iter()
        .find(|t| t.is_empty() || t.split('.').any(str::is_empty))
    {
        return Err(EngineError::mapper(format!(
            "[copy_to] on field [{path}]: invalid target field name [{t}]"
        )));
    }
    if kind == LeafKind::Unindexed && !targets.is_empty() {
        return Err(unsupported(path, "[copy_to] from a field of this type"));
    }
    Ok(targets)
}

/// A boolean parameter (`true`/`false` or their strings).
pub(super) fn as_bool(v: &Value, name: &str) -> EngineResult<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" || s == "false" => Ok(s == "true"),
        other => Err(EngineError::mapper(format!(
            "Failed to parse value [{other}] as only [true] or [false] are allowed for [{name}]"
        ))),
    }
}
