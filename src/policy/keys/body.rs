//! A body sent by a key limited to indices: every index it names (`index`, `_index`,
//! `indices` members anywhere; in `_bulk` the action lines only) and every alias or pattern
//! it creates must be within the key's patterns.
//!
//! Must not touch: roles (`keys`), the path (`scope`), credentials, sockets.

use std::borrow::Cow;

use serde_json::Value;

use super::scope::{contained, opaque};
use super::{body_names_all, outside, Denied, ALL_CONTEXTS};

/// Why [`check_body`] refused a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyRefusal {
    /// It names an index outside the key's patterns: 403.
    Denied(Denied),
    /// It is not the JSON (or NDJSON) its endpoint takes: 400, as the upstream would.
    Malformed,
}

/// Object members that name indices in Elasticsearch request bodies.
const INDEX_KEYS: &[&str] = &["index", "_index", "indices"];

/// Every string under an `index`, `_index` or `indices` member of `v` must be within
/// `patterns` (`Err`: the first that is not).
fn check_value(v: &Value, patterns: &[String]) -> Result<(), String> {
    match v {
        Value::Object(o) => {
            for (k, v) in o {
                if INDEX_KEYS.contains(&k.as_str()) {
                    check_names(v, patterns)?;
                }
                check_value(v, patterns)?;
            }
            Ok(())
        }
        Value::Array(a) => a.iter().try_for_each(|v| check_value(v, patterns)),
        _ => Ok(()),
    }
}

fn check_names(v: &Value, patterns: &[String]) -> Result<(), String> {
    match v {
        Value::String(s) => {
            for item in s.split(',') {
                let item = item.trim();
                let ok = item.starts_with('-')
                    || (!opaque(item.as_bytes())
                        && patterns
                            .iter()
                            .any(|p| contained(item.as_bytes(), p.as_bytes())));
                if !ok {
                    return Err(item.to_string());
                }
            }
            Ok(())
        }
        Value::Array(a) => a.iter().try_for_each(|v| check_names(v, patterns)),
        // `"index": {...}` is a field or an action, not a name: its members are walked.
        _ => Ok(()),
    }
}

/// Members through which a body that creates indices, aliases or templates names what it
/// creates or what it will apply to: an index creation's and a template's `aliases` (their
/// member names are alias names), a template's `index_patterns`. A key limited to indices
/// must not name anything outside its patterns there either: a template `site-t` with
/// `index_patterns: ["secret*"]` and an alias `site-all` would put every index the master
/// creates later under a name the key may read (attack: `tests/it/attack_keys.rs`).
const CREATED_KEYS: &[&str] = &["aliases", "alias", "index_patterns"];

/// The body kinds whose bodies create names (see [`CREATED_KEYS`]).
fn creates_names(kind: crate::request::classify::BodyKind) -> bool {
    use crate::request::classify::BodyKind as B;
    matches!(
        kind,
        B::CreateIndex | B::Template | B::IndexTemplate | B::ComponentTemplate | B::PutAlias
    )
}

/// Every name under a [`CREATED_KEYS`] member of `v` must be within `patterns`: the member
/// names of an `aliases` object, the strings of an `alias`, `aliases` or `index_patterns`
/// member.
fn check_created(v: &Value, patterns: &[String]) -> Result<(), String> {
    match v {
        Value::Object(o) => {
            for (k, v) in o {
                if CREATED_KEYS.contains(&k.as_str()) {
                    match v {
                        Value::Object(names) => names
                            .keys()
                            .try_for_each(|n| check_names(&Value::String(n.clone()), patterns))?,
                        other => check_names(other, patterns)?,
                    }
                }
                check_created(v, patterns)?;
            }
            Ok(())
        }
        Value::Array(a) => a.iter().try_for_each(|v| check_created(v, patterns)),
        _ => Ok(()),
    }
}

/// The body kinds [`check_body`] reads for a key limited to indices (everything but
/// documents, which are data).
pub fn body_checked(kind: crate::request::classify::BodyKind) -> bool {
    use crate::request::classify::BodyKind as B;
    !matches!(kind, B::None | B::Document)
}

/// Checks a whole body of `kind` sent by a key limited to `patterns` (empty: a restricted
/// key without indices, whose clear-scroll body is read for `_all` only): JSON, or NDJSON
/// (`_bulk`: action lines only, the documents they carry are data; `_msearch`: every
/// line). `Err`: the refusal.
pub fn check_body(
    patterns: &[String],
    kind: crate::request::classify::BodyKind,
    body: &[u8],
    action: &str,
) -> Result<(), BodyRefusal> {
    use crate::request::classify::BodyKind as B;
    let malformed = || BodyRefusal::Malformed;
    let bad = |n: String| BodyRefusal::Denied(outside(action.to_string(), &n));
    match kind {
        B::Bulk | B::Msearch => {
            let mut skip_source = false;
            for line in body.split(|&b| b == b'\n') {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                if skip_source {
                    skip_source = false;
                    continue;
                }
                let v: Value = serde_json::from_slice(line).map_err(|_| malformed())?;
                if kind == B::Bulk {
                    let action = v.as_object().and_then(|o| o.iter().next());
                    let Some((name, meta)) = action else {
                        return Err(malformed());
                    };
                    skip_source = name != "delete";
                    check_value(meta, patterns).map_err(bad)?;
                } else {
                    check_value(&v, patterns).map_err(bad)?;
                }
            }
            Ok(())
        }
        _ if body.iter().all(u8::is_ascii_whitespace) => Ok(()),
        _ => {
            let v: Value = serde_json::from_slice(body).map_err(|_| malformed())?;
            if kind == B::ClearScroll && body_names_all(&v) {
                return Err(BodyRefusal::Denied(Denied {
                    action: action.to_string(),
                    why: Cow::Borrowed(ALL_CONTEXTS),
                }));
            }
            if patterns.is_empty() {
                return Ok(());
            }
            check_value(&v, patterns).map_err(bad)?;
            if creates_names(kind) {
                check_created(&v, patterns).map_err(bad)?;
            }
            Ok(())
        }
    }
}
