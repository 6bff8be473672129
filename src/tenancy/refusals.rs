//! The refusals a multitenant request check answers with (Elasticsearch-shaped 400s,
//! rendered by `errors`), and how they name where in a body something was found. Every
//! checker of the tenancy layer (the reference table, the Painless subset, key ids)
//! refuses through these.
//!
//! Must not touch: what is refused (the checkers decide), I/O.

use super::json::{Object, Value};
use crate::errors::EdgeError;

/// 400 `parsing_exception` (what Elasticsearch answers for a malformed query body).
pub fn parsing(reason: impl Into<String>) -> EdgeError {
    EdgeError::Refused {
        status: 400,
        kind: "parsing_exception",
        reason: reason.into(),
    }
}

/// 400 `illegal_argument_exception`.
pub fn illegal(reason: impl Into<String>) -> EdgeError {
    EdgeError::Refused {
        status: 400,
        kind: "illegal_argument_exception",
        reason: reason.into(),
    }
}

/// 400: a feature the edge cannot confine to one tenant, named with where it was found.
pub fn unsupported(what: &str, at: &str) -> EdgeError {
    illegal(format!(
        "[{what}] is not supported on this cluster (found at [{at}]): it could reach data outside this cluster's indices"
    ))
}

/// Scripts are refused except where the Painless subset applies.
pub fn no_scripts(at: &str) -> EdgeError {
    illegal(format!(
        "scripts are not supported on this cluster (found at [{at}])"
    ))
}

/// `where.key` for error messages.
pub fn at(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// The object at `v`, or a `parsing_exception` naming `where_`.
pub fn object_mut<'v>(v: &'v mut Value, where_: &str) -> Result<&'v mut Object, EdgeError> {
    let token = v.token_name();
    v.as_object_mut()
        .ok_or_else(|| parsing(format!("[{where_}] must be an object, found [{token}]")))
}

/// Refuses any key of `o` not in `known`, naming it as Elasticsearch does.
pub fn known_keys(o: &Object, known: &[&str], where_: &str) -> Result<(), EdgeError> {
    match o.keys().find(|k| !known.contains(k)) {
        Some(k) => Err(parsing(format!("[{where_}] unknown field [{k}]"))),
        None => Ok(()),
    }
}
