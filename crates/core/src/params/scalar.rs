//! Booleans and integers of URL parameters, as Elasticsearch 7.10's `RestRequest` reads
//! them (`paramAsBoolean`, `paramAsInt`, `paramAsLong`).
//!
//! Booleans are strict since 7.0: `true` and `false` only, an empty value (`?pretty`) is
//! `true`, and a value of whitespace alone (`Character.isWhitespace`) is the endpoint's
//! default (`Booleans.parseBoolean(value, default)` sees no text), so it reads as absent.
//!
//! Must not touch: query strings, error rendering.

use super::java;
use super::ParamError;

/// A boolean parameter: `Some(b)`, or `None` when the value leaves the endpoint's default
/// (whitespace only). The canonical form is `true`/`false`, or the parameter left out.
pub fn parse_bool(value: &str) -> Result<Option<bool>, ParamError> {
    match value {
        "" | "true" => Ok(Some(true)),
        "false" => Ok(Some(false)),
        v if v.chars().all(java::is_whitespace) => Ok(None),
        v => Err(ParamError::illegal(format!(
            "Failed to parse value [{v}] as only [true] or [false] are allowed."
        ))),
    }
}

/// `paramAsInt(name)`: a Java `int`.
pub fn parse_int(value: &str, name: &str) -> Result<i32, ParamError> {
    java::parse_int(value).map_err(|_| {
        ParamError::illegal(format!(
            "Failed to parse int parameter [{name}] with value [{value}]"
        ))
    })
}

/// `paramAsLong(name)`: a Java `long`.
pub fn parse_long(value: &str, name: &str) -> Result<i64, ParamError> {
    java::parse_long(value).map_err(|_| {
        ParamError::illegal(format!(
            "Failed to parse long parameter [{name}] with value [{value}]"
        ))
    })
}

/// `from` and `size` of a search's URL: a Java `int` where `-1` means "not given" (as
/// `RestSearchAction` reads them); below `-1` is Elasticsearch's "cannot be negative".
pub fn parse_window(value: &str, name: &str) -> Result<Option<u32>, ParamError> {
    match parse_int(value, name)? {
        -1 => Ok(None),
        n if n < 0 => Err(negative(name, i64::from(n))),
        n => Ok(Some(n as u32)),
    }
}

/// Elasticsearch 7.10's refusal of a negative `from` or `size` (`SearchSourceBuilder`).
pub fn negative(name: &str, n: i64) -> ParamError {
    match name {
        "from" => ParamError::illegal("[from] parameter cannot be negative"),
        _ => ParamError::illegal(format!(
            "[{name}] parameter cannot be negative, found [{n}]"
        )),
    }
}
