//! Index expressions of one tenant -> upstream expressions confined to its prefix, and the
//! auto-creation whitelist (spec 2.2).
//!
//! An expression is a comma-separated list (path segments, `_msearch` `index` strings) or a
//! single name (`_bulk`/`_mget` `_index`). Every part is rewritten so that what the
//! upstream resolves starts with the tenant's prefix:
//! - `*` and `_all` -> `<P>*`; an empty list (`""`, `","`) -> `<P>*` (never "all indices");
//! - `name`, `logs-*`, `a*b` -> `<P>name`, `<P>logs-*`, `<P>a*b`;
//! - exclusions `-name` -> `-<P>name`; date math `<logs-{now/d}>` -> `<<P>logs-{now/d}>`;
//! - parts starting with `_` (other than `_all`) or `+`, an empty exclusion, or a `:`
//!   (cross-cluster search) are refused as invalid names (400), since after prefixing the
//!   upstream would accept what it would refuse from a tenant alone;
//! - a name longer than [`MAX_NAME`] bytes (255 minus the prefix) is refused with the
//!   numbers the tenant sees (`(240 > 234)`), never the upstream's.
//!
//! Must not touch: encodings (callers decode and re-encode), I/O.

use std::borrow::Cow;

use super::prefix::{Prefix, PREFIX_LEN};
use crate::errors::EdgeError;

/// Longest index, alias or template name a tenant may use: Elasticsearch's 255 bytes minus
/// the prefix.
pub const MAX_NAME: usize = 255 - PREFIX_LEN;

/// Index-name patterns created automatically on first write (spec 1.5, 2.2).
pub const AUTO_CREATE: &[&str] = &["logstash", "requests", "events", ".kibana", "kibana-int"];

/// Whether a tenant's index `name` is on the auto-creation whitelist.
pub fn is_auto_create(name: &[u8]) -> bool {
    AUTO_CREATE.iter().any(|p| name.starts_with(p.as_bytes()))
}

/// Whether a tenant's expression is one concrete name (no list, wildcard, `_all`,
/// exclusion or date math): what a document write or an index creation targets.
pub fn is_concrete(name: &[u8]) -> bool {
    !name.is_empty()
        && !name.contains(&b',')
        && !name.contains(&b'*')
        && !matches!(name[0], b'_' | b'-' | b'+' | b'<')
}

fn invalid(part: &[u8], reason: impl Into<Cow<'static, str>>) -> EdgeError {
    EdgeError::InvalidIndexName {
        index: String::from_utf8_lossy(&part[..part.len().min(255)]).into_owned(),
        reason: reason.into(),
    }
}

/// Refuses a name longer than [`MAX_NAME`], as Elasticsearch words it with the tenant's
/// numbers.
pub fn check_length(name: &[u8]) -> Result<(), EdgeError> {
    if name.len() > MAX_NAME {
        return Err(invalid(
            name,
            format!("index name is too long, ({} > {MAX_NAME})", name.len()),
        ));
    }
    Ok(())
}

const BAD_START: &str = "must not start with '_', '-', or '+'";
const BAD_COLON: &str = "must not contain ':'";
const BAD_DATE_MATH: &str = "date math expression must have a name inside '<' and '>'";

/// Appends the upstream form of the tenant's expression `expr` (decoded bytes) to `out`.
pub fn rewrite_expr(p: &Prefix, expr: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
    let mut first = true;
    for part in expr.split(|&b| b == b',').filter(|s| !s.is_empty()) {
        if !first {
            out.push(b',');
        }
        first = false;
        rewrite_name_part(p, part, out)?;
    }
    if first {
        all(p, out);
    }
    Ok(())
}

/// The tenant's "all indices": `<P>*`.
pub fn all(p: &Prefix, out: &mut Vec<u8>) {
    out.extend_from_slice(p.as_bytes());
    out.push(b'*');
}

/// Appends the upstream form of one part of an expression (no `,`: what [`rewrite_expr`]
/// does for each part; a single name, `*`, an exclusion or date math).
pub fn rewrite_name_part(p: &Prefix, part: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
    if part.contains(&b':') {
        return Err(invalid(part, BAD_COLON));
    }
    match part {
        b"*" | b"_all" => {
            all(p, out);
            Ok(())
        }
        [b'-', rest @ ..] => {
            out.push(b'-');
            match rest {
                [] | [b'-' | b'+', ..] => Err(invalid(part, BAD_START)),
                b"*" | b"_all" => {
                    all(p, out);
                    Ok(())
                }
                _ => name(p, rest, out),
            }
        }
        [b'<', inner @ .., b'>'] => {
            if inner.is_empty() || matches!(inner[0], b'_' | b'-' | b'+') {
                return Err(invalid(part, BAD_DATE_MATH));
            }
            check_length(inner)?;
            out.push(b'<');
            out.extend_from_slice(p.as_bytes());
            out.extend_from_slice(inner);
            out.push(b'>');
            Ok(())
        }
        _ => name(p, part, out),
    }
}

fn name(p: &Prefix, n: &[u8], out: &mut Vec<u8>) -> Result<(), EdgeError> {
    if matches!(n.first(), Some(b'_' | b'-' | b'+')) {
        return Err(invalid(n, BAD_START));
    }
    check_length(n)?;
    out.extend_from_slice(p.as_bytes());
    out.extend_from_slice(n);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::prefix::TenancyKey;
    use super::*;

    fn rw(expr: &str) -> Result<String, EdgeError> {
        let p = Prefix::from_bytes(b"abcdefghijklmnopqrst-").unwrap();
        let mut out = Vec::new();
        rewrite_expr(&p, expr.as_bytes(), &mut out)?;
        Ok(String::from_utf8(out).unwrap().replace(p.as_str(), "P:"))
    }

    #[test]
    fn expressions() {
        let table: &[(&str, &str)] = &[
            ("books", "P:books"),
            ("a,b", "P:a,P:b"),
            ("*", "P:*"),
            ("_all", "P:*"),
            ("", "P:*"),
            (",", "P:*"),
            ("a,,b", "P:a,P:b"),
            ("logs-*", "P:logs-*"),
            ("a*b", "P:a*b"),
            ("*,-logs-old", "P:*,-P:logs-old"),
            ("-*", "-P:*"),
            ("_all,-x", "P:*,-P:x"),
            ("<logs-{now/d}>", "<P:logs-{now/d}>"),
            (".kibana", "P:.kibana"),
            ("Upper", "P:Upper"),
        ];
        for (expr, want) in table {
            assert_eq!(rw(expr).as_deref(), Ok(*want), "{expr}");
        }
    }

    #[test]
    fn refused_parts() {
        for expr in [
            "_foo",
            "a,_b",
            "+a",
            "--a",
            "-",
            "-+a",
            "remote:idx",
            "a,r:*",
            "<>",
            "<_x>",
            "-_x",
        ] {
            let e = rw(expr).unwrap_err();
            assert_eq!(e.status(), 400, "{expr}");
            assert_eq!(e.body().kind, "invalid_index_name_exception");
        }
    }

    // The limit as the tenant sees it: 234 bytes pass, 235 are refused naming (235 > 234).
    #[test]
    fn name_length_at_n_and_n_plus_one() {
        assert!(rw(&"a".repeat(MAX_NAME)).is_ok());
        let e = rw(&"a".repeat(240)).unwrap_err();
        assert!(
            e.body()
                .reason
                .ends_with("index name is too long, (240 > 234)"),
            "{e:?}"
        );
        assert!(rw(&format!("x,{}", "b".repeat(MAX_NAME + 1))).is_err());
        assert!(rw(&format!("<{}{{now}}>", "b".repeat(MAX_NAME))).is_err());
    }

    #[test]
    fn every_part_is_confined_to_the_prefix() {
        let p = Prefix::derive(&TenancyKey::from_bytes([9; 32]), "x");
        for expr in ["a", "*", "a,b,-c", "<d{now}>", "_all", "", "x*y"] {
            let mut out = Vec::new();
            rewrite_expr(&p, expr.as_bytes(), &mut out).unwrap();
            for part in out.split(|&b| b == b',') {
                let body = part.strip_prefix(b"-").unwrap_or(part);
                let body = body.strip_prefix(b"<").unwrap_or(body);
                assert!(body.starts_with(p.as_bytes()), "{expr}");
            }
        }
    }

    #[test]
    fn whitelist() {
        for n in [
            "logstash-2024.01.01",
            "requests",
            "events-x",
            ".kibana",
            ".kibana_1",
            "kibana-int",
        ] {
            assert!(is_auto_create(n.as_bytes()), "{n}");
        }
        for n in ["books", "xlogstash", "kibana", "event"] {
            assert!(!is_auto_create(n.as_bytes()), "{n}");
        }
        assert!(is_concrete(b"logs"));
        for n in ["", "a,b", "a*", "_all", "-a", "<x>"] {
            assert!(!is_concrete(n.as_bytes()), "{n}");
        }
    }
}
