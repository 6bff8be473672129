//! Media types of multitenant requests, parsed as RFC 9110 says (`type/subtype`, then
//! `;`-separated parameters, names case-insensitive, values optionally quoted) and checked
//! against what the edge can read: a body must be JSON or NDJSON (`application/json`,
//! `application/x-ndjson`, and `application/vnd.elasticsearch+json` /
//! `+x-ndjson` with `compatible-with=7|8|9`); anything else is 406 as Elasticsearch
//! answers a media type it does not support. Compressed bodies and CBOR, Smile or YAML
//! responses are refused too (the edge must read every byte it forwards and returns).
//!
//! Must not touch: bodies, I/O.

use crate::errors::EdgeError;

/// A parsed media type: lowercase type and subtype, parameters as sent (names lowercase).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaType {
    pub kind: String,
    pub subtype: String,
    pub params: Vec<(String, String)>,
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Parses one media type; `None` when it is malformed.
pub fn parse(value: &str) -> Option<MediaType> {
    let mut parts = value.split(';');
    let essence = parts.next()?.trim();
    let (kind, subtype) = essence.split_once('/')?;
    if !is_token(kind) || !is_token(subtype) {
        return None;
    }
    let mut params = Vec::new();
    for p in parts {
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        let (name, val) = p.split_once('=')?;
        let (name, val) = (name.trim(), val.trim());
        let val = match val.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            Some(q) if !q.contains(['"', '\\']) => q,
            Some(_) => return None,
            None if is_token(val) => val,
            None => return None,
        };
        if !is_token(name) {
            return None;
        }
        params.push((name.to_ascii_lowercase(), val.to_string()));
    }
    Some(MediaType {
        kind: kind.to_ascii_lowercase(),
        subtype: subtype.to_ascii_lowercase(),
        params,
    })
}

fn not_supported(value: &str) -> EdgeError {
    EdgeError::Refused {
        status: 406,
        kind: "content_type_exception",
        reason: format!("Content-Type header [{value}] is not supported"),
    }
}

/// Checks the `Content-Type` of a request that has a body.
pub fn check_content_type(value: Option<&[u8]>) -> Result<(), EdgeError> {
    let Some(raw) = value else {
        return Err(EdgeError::Refused {
            status: 406,
            kind: "content_type_exception",
            reason: "Content-Type header is missing".into(),
        });
    };
    let text = String::from_utf8_lossy(raw);
    let mt = parse(&text).ok_or_else(|| not_supported(&text))?;
    let vendor = match (mt.kind.as_str(), mt.subtype.as_str()) {
        ("application", "json" | "x-ndjson") => false,
        ("application", "vnd.elasticsearch+json" | "vnd.elasticsearch+x-ndjson") => true,
        _ => return Err(not_supported(&text)),
    };
    let mut compatible = false;
    for (name, val) in &mt.params {
        match name.as_str() {
            "charset" if val.eq_ignore_ascii_case("utf-8") => {}
            "compatible-with" if vendor && matches!(val.as_str(), "7" | "8" | "9") => {
                compatible = true
            }
            _ => return Err(not_supported(&text)),
        }
    }
    if vendor && !compatible {
        return Err(not_supported(&text));
    }
    Ok(())
}

/// Checks the headers the multitenant rewriting depends on: a body (when there is one) of
/// a JSON media type, not compressed; a response asked for as JSON or text. The edge must
/// also drop `Accept-Encoding`, so the upstream answers uncompressed.
pub fn check_headers(
    content_type: Option<&[u8]>,
    content_encoding: Option<&[u8]>,
    accept: Option<&[u8]>,
    has_body: bool,
) -> Result<(), EdgeError> {
    if content_encoding.is_some_and(|e| !e.trim_ascii().eq_ignore_ascii_case(b"identity")) {
        return Err(EdgeError::BadRequest(
            "compressed request bodies are not supported on this cluster",
        ));
    }
    if has_body {
        check_content_type(content_type)?;
    }
    if let Some(acc) = accept {
        let text = String::from_utf8_lossy(acc);
        for range in text.split(',') {
            let binary = parse(range).is_some_and(|m| {
                ["cbor", "smile", "yaml"]
                    .iter()
                    .any(|b| m.subtype.contains(b))
            });
            if binary {
                return Err(EdgeError::Refused {
                    status: 406,
                    kind: "content_type_exception",
                    reason: format!(
                        "Accept header [{text}]: only JSON and text responses are supported on this cluster"
                    ),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        for ok in [
            "application/json",
            "application/json; charset=UTF-8",
            "Application/JSON;charset=\"utf-8\"",
            "application/x-ndjson",
            "application/vnd.elasticsearch+json; compatible-with=8",
            "application/vnd.elasticsearch+x-ndjson;compatible-with=7",
            "application/vnd.elasticsearch+json; compatible-with=\"9\"",
        ] {
            assert!(check_content_type(Some(ok.as_bytes())).is_ok(), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/cbor",
            "application/smile",
            "application/yaml",
            "application/x-www-form-urlencoded",
            "application/vnd.elasticsearch+json",
            "application/vnd.elasticsearch+json; compatible-with=6",
            "application/json; charset=latin1",
            "application/json; foo=bar",
            "application/jsonx",
            "application/json/x",
            "application/json; charset=\"utf-8",
            "",
            "json",
        ] {
            let e = check_content_type(Some(bad.as_bytes())).unwrap_err();
            assert_eq!(e.status(), 406, "{bad}");
        }
        assert_eq!(check_content_type(None).unwrap_err().status(), 406);
    }

    #[test]
    fn headers() {
        let j = Some(&b"application/json"[..]);
        assert!(check_headers(j, None, None, true).is_ok());
        assert!(check_headers(None, None, None, false).is_ok());
        assert!(check_headers(None, None, None, true).is_err());
        assert!(check_headers(j, Some(b"gzip"), None, true).is_err());
        assert!(check_headers(j, Some(b"identity"), None, true).is_ok());
        assert!(check_headers(j, None, Some(b"application/json, text/plain;q=0.5"), true).is_ok());
        assert!(check_headers(j, None, Some(b"*/*"), true).is_ok());
        assert!(check_headers(j, None, Some(b"application/yaml"), true).is_err());
        assert!(check_headers(j, None, Some(b"text/plain, application/cbor"), true).is_err());
    }
}
