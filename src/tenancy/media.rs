//! Media types of multitenant requests, parsed as RFC 9110 says (`type/subtype`, then
//! `;`-separated parameters, names case-insensitive, values optionally quoted) and checked
//! against what the edge can read: a body must be JSON or NDJSON (`application/json`,
//! `application/x-ndjson`, and `application/vnd.elasticsearch+json` /
//! `+x-ndjson` with `compatible-with=7|8|9`); anything else is 406 as Elasticsearch
//! answers a media type it does not support. Compressed bodies and any `Accept` other than
//! JSON, NDJSON or text (CBOR, Smile, YAML, in full or as short names) are refused too (the
//! edge must read every byte it forwards and returns).
//!
//! Must not touch: bodies, I/O.

use super::encoding::{request_coding, Coding};
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

/// Checks the headers the multitenant rewriting depends on: a `Content-Type` (required
/// with a body, checked whenever it is sent) of a JSON media type, a body either plain or
/// in a coding the edge inflates (`encoding::request_coding`, returned), and an `Accept`
/// the upstream can only answer with JSON or text. The edge must also drop
/// `Accept-Encoding` and `Content-Encoding`, so the upstream reads and answers uncompressed.
///
/// Elasticsearch picks the response format from `format`, else `Accept`, else the request's
/// `Content-Type` (even without a body), with `XContentType.fromMediaTypeOrFormat`: a full
/// media type, one followed by `;`, or a short name (`yaml`, `smile`, `cbor`, any case) all
/// count (attacks-10 #3). So every `Accept` range must be one of [`ACCEPTED`] and every
/// `Content-Type` JSON or NDJSON; `format` is checked with the parameters
/// (`references::params`: `json` or text only).
pub fn check_headers(
    content_type: Option<&[u8]>,
    content_encoding: Option<&[u8]>,
    accept: Option<&[u8]>,
    has_body: bool,
) -> Result<Option<Coding>, EdgeError> {
    let coding = request_coding(content_encoding)?;
    match content_type {
        Some(ct) if !has_body => check_bodiless_content_type(ct)?,
        _ if has_body => check_content_type(content_type)?,
        _ => {}
    }
    if let Some(acc) = accept {
        check_accept(acc)?;
    }
    Ok(coding)
}

/// The `Content-Type` of a request without a body: it still picks the response format
/// upstream when `Accept` names none, so it must be JSON or NDJSON, or one of the types
/// HTTP clients send with an empty body (`application/x-www-form-urlencoded`, as
/// `curl -d ''` does, and `text/plain`), which Elasticsearch maps to no format (JSON).
fn check_bodiless_content_type(raw: &[u8]) -> Result<(), EdgeError> {
    if check_content_type(Some(raw)).is_ok() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(raw);
    match parse(&text) {
        Some(mt) if mt.params.iter().all(|(n, _)| n == "charset") => {
            match (mt.kind.as_str(), mt.subtype.as_str()) {
                ("application", "x-www-form-urlencoded") | ("text", "plain") => Ok(()),
                _ => Err(not_supported(&text)),
            }
        }
        _ => Err(not_supported(&text)),
    }
}

/// `Accept` ranges whose answer is JSON (or a `_cat` text table), as `type/subtype`.
pub const ACCEPTED: &[&str] = &[
    "application/json",
    "application/x-ndjson",
    "application/vnd.elasticsearch+json",
    "application/vnd.elasticsearch+x-ndjson",
    "text/plain",
    "application/*",
    "text/*",
    "*/*",
];

/// Checks an `Accept` header: every comma-separated range is in [`ACCEPTED`] (parameters
/// `q`, `charset=utf-8` and, on the vendor types, `compatible-with=7|8|9` allowed), or the
/// short name `json`; anything else (`yaml`, `application/smile`, `application/cbor`,
/// `application/vnd.elasticsearch+yaml`, a malformed range) is 406.
pub fn check_accept(raw: &[u8]) -> Result<(), EdgeError> {
    let text = String::from_utf8_lossy(raw);
    let refuse = || EdgeError::Refused {
        status: 406,
        kind: "content_type_exception",
        reason: format!(
            "Accept header [{text}]: only JSON and text responses are supported on this cluster"
        ),
    };
    for range in text.split(',') {
        let range = range.trim();
        if range.is_empty() || range.eq_ignore_ascii_case("json") {
            continue;
        }
        let mt = parse(range).ok_or_else(refuse)?;
        let essence = format!("{}/{}", mt.kind, mt.subtype);
        if !ACCEPTED.contains(&essence.as_str()) {
            return Err(refuse());
        }
        let vendor = essence.starts_with("application/vnd.");
        let params_ok = mt.params.iter().all(|(name, val)| match name.as_str() {
            "q" => val.bytes().all(|b| b.is_ascii_digit() || b == b'.'),
            "charset" => val.eq_ignore_ascii_case("utf-8"),
            "compatible-with" => vendor && matches!(val.as_str(), "7" | "8" | "9"),
            _ => false,
        });
        if !params_ok {
            return Err(refuse());
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

    /// attacks-10 #3 (issue 10 §3, ids reveal nothing): `XContentType.fromMediaTypeOrFormat`
    /// takes short names and `type;...` prefixes from `Accept`, and the request's
    /// `Content-Type` when `Accept` names nothing it knows, body or not.
    #[test]
    fn non_json_response_formats_are_refused() {
        let j = Some(&b"application/json"[..]);
        for bad in [
            "yaml",
            "YAML",
            "smile",
            "Smile",
            "cbor",
            "CBOR",
            "application/yaml",
            "application/x-yaml",
            "application/smile",
            "application/cbor",
            "application/yaml;q=1, application/json",
            "application/json, yaml",
            "application/vnd.elasticsearch+yaml; compatible-with=8",
            "application/vnd.elasticsearch+smile;compatible-with=7",
            "application/vnd.elasticsearch+cbor",
            "text/csv",
            "text/yaml",
            "application/json; foo=bar",
            "application/json; compatible-with=8",
            "jsonx",
            "application/jso n",
            "/",
        ] {
            let e = check_headers(j, None, Some(bad.as_bytes()), true).unwrap_err();
            assert_eq!(e.status(), 406, "{bad}");
            assert_eq!(e.body().kind, "content_type_exception", "{bad}");
        }
        for ok in [
            "application/json",
            "Application/JSON; charset=UTF-8",
            "application/json, text/plain;q=0.5, */*;q=0.1",
            "application/vnd.elasticsearch+json; compatible-with=8",
            "application/vnd.elasticsearch+x-ndjson;compatible-with=7",
            "text/plain",
            "*/*",
            "application/*",
            "json",
            "",
        ] {
            assert!(
                check_headers(j, None, Some(ok.as_bytes()), true).is_ok(),
                "{ok}"
            );
        }
        // without a body, the Content-Type still chooses the response format upstream
        for bad in [
            "application/smile",
            "application/yaml",
            "application/x-yaml",
            "application/cbor",
            "application/vnd.elasticsearch+smile; compatible-with=8",
            "yaml",
            "text/plain; foo=bar",
        ] {
            let e = check_headers(Some(bad.as_bytes()), None, Some(b"*/*"), false).unwrap_err();
            assert_eq!(e.status(), 406, "{bad}");
        }
        for ok in [
            "application/json",
            "application/x-www-form-urlencoded",
            "text/plain; charset=utf-8",
        ] {
            assert!(
                check_headers(Some(ok.as_bytes()), None, None, false).is_ok(),
                "{ok}"
            );
        }
        // with a body, only JSON and NDJSON
        assert!(check_headers(Some(b"text/plain"), None, None, true).is_err());
    }

    #[test]
    fn headers() {
        let j = Some(&b"application/json"[..]);
        assert!(check_headers(j, None, None, true).is_ok());
        assert!(check_headers(None, None, None, false).is_ok());
        assert!(check_headers(None, None, None, true).is_err());
        assert_eq!(
            check_headers(j, Some(b"gzip"), None, true),
            Ok(Some(Coding::Gzip))
        );
        assert!(check_headers(j, Some(b"br"), None, true).is_err());
        assert!(check_headers(j, Some(b"identity"), None, true).is_ok());
        assert!(check_headers(j, None, Some(b"application/json, text/plain;q=0.5"), true).is_ok());
        assert!(check_headers(j, None, Some(b"*/*"), true).is_ok());
        assert!(check_headers(j, None, Some(b"application/yaml"), true).is_err());
        assert!(check_headers(j, None, Some(b"text/plain, application/cbor"), true).is_err());
    }
}
