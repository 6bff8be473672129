//! Media types of requests and responses: `Content-Type` is one media type, `Accept` a
//! comma-separated list of them, each with `;`-separated parameters (quoted values allowed).
//! The versioned types `application/vnd.elasticsearch+json; compatible-with=N` (and
//! `+x-ndjson`) are accepted for N = 7, 8 and 9 (elasticsearch-py 7.17/8/9 and the Node.js
//! client 8/9 send them); the response then carries the same versioned type. When both
//! headers name a version they must agree (400 `media_type_header_exception`, as
//! Elasticsearch answers). `Accept` also decides whether `_cat` answers JSON or text
//! (`format=` wins).
//!
//! Pure functions: headers in, decision out.

use super::JSON;
use crate::error::EngineError;

/// One media type with its parameters (names lowercased, values unquoted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaType {
    /// `type/subtype`, lowercased.
    pub essence: String,
    pub params: Vec<(String, String)>,
}

impl MediaType {
    /// The value of parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Splits `s` on `sep` outside double quotes.
fn split_unquoted(s: &str, sep: char) -> Vec<&str> {
    let (mut out, mut start, mut quoted) = (Vec::new(), 0, false);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            c if c == sep && !quoted => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-*".contains(&b))
}

/// Parses one media type (`type/subtype; k=v; ...`).
pub fn parse_one(s: &str) -> Result<MediaType, String> {
    let mut parts = split_unquoted(s, ';').into_iter();
    let essence = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    match essence.split_once('/') {
        Some((t, st)) if is_token(t) && is_token(st) => {}
        _ => return Err(format!("invalid media type [{}]", s.trim())),
    }
    let mut params = Vec::new();
    for p in parts {
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| format!("invalid parameter [{p}] in media type [{}]", s.trim()))?;
        let v = v.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|x| x.strip_suffix('"'))
            .unwrap_or(v);
        params.push((k.trim().to_ascii_lowercase(), v.to_string()));
    }
    Ok(MediaType { essence, params })
}

/// Parses an `Accept` list; empty entries are skipped.
pub fn parse_list(s: &str) -> Result<Vec<MediaType>, String> {
    split_unquoted(s, ',')
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .map(parse_one)
        .collect()
}

/// Request body types the engine reads.
const BODY_TYPES: &[&str] = &[
    "application/json",
    "application/x-ndjson",
    "application/vnd.elasticsearch+json",
    "application/vnd.elasticsearch+x-ndjson",
];

/// Whether a body of this media type (`type/subtype`, lowercased) is one the engine reads.
pub fn is_json_body(essence: &str) -> bool {
    BODY_TYPES.contains(&essence)
}

/// What the headers decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    /// `Content-Type` of JSON responses.
    pub json_type: String,
    /// `compatible-with` asked for (either header).
    pub compat: Option<u8>,
    /// Whether `Accept` prefers JSON over text (for `_cat` without `format=`).
    pub accept_json: bool,
}

fn media_error(header: &str, value: &str, why: &str) -> EngineError {
    EngineError::MediaType(format!(
        "A compatible version is required on both Content-Type and Accept headers if either one has requested a compatible version and the compatible versions must match. {why} {header}={value}"
    ))
}

/// The `compatible-with` version of a media type (None when absent).
fn version_of(m: &MediaType, header: &str, value: &str) -> Result<Option<u8>, EngineError> {
    match m.param("compatible-with") {
        None => Ok(None),
        Some(v) => match v.trim().parse::<u8>() {
            Ok(n @ 7..=9) => Ok(Some(n)),
            _ => Err(media_error(
                header,
                value,
                &format!("{header} version must be either version 9, 8 or 7, but found {v}."),
            )),
        },
    }
}

/// Decides the response media type from the request's headers (`has_body`: whether the
/// request carries a body, whose `Content-Type` must then be one the engine reads).
pub fn negotiate(
    content_type: Option<&str>,
    accept: Option<&str>,
    has_body: bool,
) -> Result<Negotiated, EngineError> {
    let mut ct_version = None;
    if let (true, Some(ct)) = (has_body, content_type) {
        let m = parse_one(ct).map_err(|_| EngineError::ContentType(ct.to_string()))?;
        if !BODY_TYPES.contains(&m.essence.as_str()) {
            return Err(EngineError::ContentType(ct.to_string()));
        }
        ct_version = version_of(&m, "Content-Type", ct)?;
    }
    let mut accept_version = None;
    let mut accept_json = false;
    if let Some(acc) = accept {
        let list = parse_list(acc).map_err(|e| media_error("Accept", acc, &e))?;
        for m in &list {
            if let Some(v) = version_of(m, "Accept", acc)? {
                accept_version = accept_version.or(Some(v));
            }
        }
        accept_json = list.first().is_some_and(|m| {
            matches!(
                m.essence.as_str(),
                "application/json" | "application/vnd.elasticsearch+json"
            )
        });
    }
    if let (Some(c), Some(a)) = (ct_version, accept_version) {
        if c != a {
            return Err(media_error(
                "Content-Type",
                content_type.unwrap_or_default(),
                &format!("Content-Type version [{c}] and Accept version [{a}] differ."),
            ));
        }
    }
    let compat = accept_version.or(ct_version);
    Ok(Negotiated {
        json_type: match compat {
            Some(v) => format!("application/vnd.elasticsearch+json;compatible-with={v}"),
            None => JSON.into(),
        },
        compat,
        accept_json,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_parameters() {
        let l =
            parse_list("application/vnd.elasticsearch+json; compatible-with=9,text/plain").unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].essence, "application/vnd.elasticsearch+json");
        assert_eq!(l[0].param("compatible-with"), Some("9"));
        assert_eq!(l[1].essence, "text/plain");
        let m = parse_one(r#"Application/JSON; Charset="UTF-8""#).unwrap();
        assert_eq!(m.essence, "application/json");
        assert_eq!(m.param("charset"), Some("UTF-8"));
        let l = parse_list(r#"a/b; x="1,2", c/d"#).unwrap();
        assert_eq!(l[0].param("x"), Some("1,2"));
        assert_eq!(l[1].essence, "c/d");
        assert!(parse_one("json").is_err());
        assert!(parse_one("a/b; nonsense").is_err());
        assert!(parse_list("").unwrap().is_empty());
    }

    // The @elastic/elasticsearch 9 client's headers (issue 14).
    #[test]
    fn node_client_9_headers() {
        let n = negotiate(
            Some("application/vnd.elasticsearch+json; compatible-with=9"),
            Some("application/vnd.elasticsearch+json; compatible-with=9,text/plain"),
            true,
        )
        .unwrap();
        assert_eq!(n.compat, Some(9));
        assert_eq!(
            n.json_type,
            "application/vnd.elasticsearch+json;compatible-with=9"
        );
        assert!(n.accept_json);
    }

    #[test]
    fn versions_7_8_9_and_mismatches() {
        for v in [7, 8, 9] {
            let ct = format!("application/vnd.elasticsearch+x-ndjson;compatible-with={v}");
            let n = negotiate(Some(&ct), None, true).unwrap();
            assert_eq!(n.compat, Some(v));
        }
        for bad in ["6", "10", "x"] {
            let ct = format!("application/vnd.elasticsearch+json;compatible-with={bad}");
            let e = negotiate(Some(&ct), None, true).unwrap_err();
            assert_eq!(e.body().kind, "media_type_header_exception");
            assert_eq!(e.status(), 400);
        }
        let e = negotiate(
            Some("application/vnd.elasticsearch+json;compatible-with=8"),
            Some("application/vnd.elasticsearch+json;compatible-with=7"),
            true,
        )
        .unwrap_err();
        assert_eq!(e.body().kind, "media_type_header_exception");
        // without a body the Content-Type is not read
        let n = negotiate(Some("text/plain"), Some("text/plain"), false).unwrap();
        assert_eq!((n.compat, n.accept_json), (None, false));
        assert_eq!(n.json_type, JSON);
    }

    #[test]
    fn body_types() {
        assert!(negotiate(Some("application/json; charset=UTF-8"), None, true).is_ok());
        assert!(negotiate(Some("application/x-ndjson"), None, true).is_ok());
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "nonsense",
        ] {
            let e = negotiate(Some(bad), None, true).unwrap_err();
            assert_eq!(e.status(), 406, "{bad}");
            assert_eq!(e.body().kind, "content_type_exception");
        }
    }
}
