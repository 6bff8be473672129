//! `prefix`, `wildcard`, `regexp` and case-insensitive terms: regex automata restricted to
//! the key range of the literal prefix (`exists` is a leaf query of `field`).

use tantivy::query::AllQuery;

use super::automaton::RangedRegexQuery;
use super::ctx::{empty, index_matches, konst, Ctx, Q};
use super::field::term_field;
use super::target::{self, Target};
use super::CiKind;
use crate::error::{EngineError, EngineResult};
use crate::mapping::LeafKind;
use crate::names::wildcard_match;

/// The leading characters of a pattern that are literal (before any `*`/`?`).
fn literal_prefix(raw: &str, is_prefix: bool) -> &str {
    if is_prefix {
        return raw;
    }
    let end = raw.find(['*', '?']).unwrap_or(raw.len());
    &raw[..end]
}

pub(super) fn regex_on(
    field: tantivy::schema::Field,
    path: Option<&str>,
    re: &str,
    literal: &str,
) -> EngineResult<Q> {
    let mut prefix = match path {
        Some(p) => target::json_str_prefix(field, p),
        None => Vec::new(),
    };
    let pattern = format!(
        "{}{re}",
        target::regex_escape(&String::from_utf8_lossy(&prefix))
    );
    prefix.extend_from_slice(literal.as_bytes());
    let q = RangedRegexQuery::new(field, &pattern, prefix)
        .map_err(|e| EngineError::Parsing(format!("invalid pattern: {e}")))?;
    Ok(konst(Box::new(q), 1.0))
}

pub(super) fn regex_field(
    ctx: &Ctx<'_>,
    f: &str,
    re: &str,
    raw: &str,
    is_prefix: bool,
) -> EngineResult<Q> {
    match target::target(ctx, f)? {
        Target::Text { field, path, .. } => {
            regex_on(field, path.as_deref(), re, literal_prefix(raw, is_prefix))
        }
        Target::Kw {
            path,
            kind: LeafKind::Keyword | LeafKind::Ip,
        } => regex_on(
            ctx.fields.kw,
            Some(&path),
            re,
            literal_prefix(raw, is_prefix),
        ),
        Target::Id => regex_on(ctx.fields.id, None, re, literal_prefix(raw, is_prefix)),
        Target::Index => Ok(index_matches(
            ctx,
            &if is_prefix {
                format!("{raw}*")
            } else {
                raw.to_string()
            },
        )),
        _ => Ok(empty()),
    }
}

/// `term`, `prefix` or `wildcard` with `case_insensitive`: an automaton over the field's
/// terms with the value's letters in either case (keywords, text terms, `_id`, `_index`,
/// booleans); numbers, dates and ips refuse it as Elasticsearch 7.10 does.
pub(super) fn case_insensitive(
    ctx: &Ctx<'_>,
    f: &str,
    kind: CiKind,
    value: &serde_json::Value,
) -> EngineResult<Q> {
    let v = target::as_text(value);
    let body = match kind {
        CiKind::Term => target::regex_escape(&v),
        CiKind::Prefix => format!("{}.*", target::regex_escape(&v)),
        CiKind::Wildcard => target::wildcard_regex(&v),
    };
    let re = format!("(?i){body}");
    match target::target(ctx, f)? {
        Target::Text { field, path, .. } => regex_on(field, path.as_deref(), &re, ""),
        Target::Kw {
            path,
            kind: LeafKind::Keyword,
        } => {
            // a normalizer applies to the value first, as to any keyword query
            let v = target::normalized(ctx, &path, &v);
            let body = match kind {
                CiKind::Term => target::regex_escape(&v),
                CiKind::Prefix => format!("{}.*", target::regex_escape(&v)),
                CiKind::Wildcard => target::wildcard_regex(&v),
            };
            regex_on(ctx.fields.kw, Some(&path), &format!("(?i){body}"), "")
        }
        Target::Kw {
            path,
            kind: LeafKind::Boolean,
        } if kind == CiKind::Term => {
            let b = serde_json::Value::String(v.to_lowercase());
            term_field(ctx, &path, &b)
        }
        Target::Id => regex_on(ctx.fields.id, None, &re, ""),
        Target::Index => {
            let pat = match kind {
                CiKind::Prefix => format!("{v}*"),
                _ => v.clone(),
            };
            Ok(
                if wildcard_match(&pat.to_lowercase(), &ctx.index_name.to_lowercase()) {
                    Box::new(AllQuery)
                } else {
                    empty()
                },
            )
        }
        Target::Kw { kind: k, .. } if kind == CiKind::Term => Err(EngineError::QueryShard {
            reason: format!(
                "[{f}] field which is of type [{}], does not support case insensitive term queries",
                k.name()
            ),
            index: ctx.index_name.to_string(),
        }),
        _ => Ok(empty()),
    }
}

/// `regexp` on one field: keyword, text (per term) and `_id`; any other type is the
/// `query_shard_exception` Elasticsearch gives (`_index` included: constant fields have no
/// regexp query in 7.10).
pub(super) fn regexp_field(ctx: &Ctx<'_>, f: &str, re: &str) -> EngineResult<Q> {
    match target::target(ctx, f)? {
        Target::Text { field, path, .. } => regex_on(field, path.as_deref(), re, ""),
        Target::Kw {
            path,
            kind: LeafKind::Keyword | LeafKind::Ip,
        } => regex_on(ctx.fields.kw, Some(&path), re, ""),
        Target::Id => regex_on(ctx.fields.id, None, re, ""),
        Target::Index => Err(not_for_regexp(ctx, f, "_index")),
        Target::Kw { kind, .. } => Err(not_for_regexp(ctx, f, kind.name())),
        Target::Unmapped => Ok(empty()),
    }
}

fn not_for_regexp(ctx: &Ctx<'_>, f: &str, type_name: &str) -> EngineError {
    EngineError::QueryShard {
        reason: format!(
            "Can only use regexp queries on keyword and text fields - not on [{f}] which is of type [{type_name}]"
        ),
        index: ctx.index_name.to_string(),
    }
}

/// Largest numeric interval (`<1-100>`) expanded into an alternation.
const MAX_INTERVAL: u64 = 1000;

/// A Lucene regular expression (`regexp` with the default flags) in the syntax of the
/// regex automaton: `@` is any string, `<n-m>` a numeric interval, `"..."` a literal,
/// `\c` the character c, and `^`/`$` plain characters (Lucene has no anchors: a pattern
/// matches whole terms). Intersection (`&`), complement (`~`) and the empty language (`#`)
/// are refused naming the operator.
pub fn lucene_regex(src: &str) -> EngineResult<String> {
    let unsupported = |op: &str| {
        EngineError::IllegalArgument(format!(
            "[regexp] operator [{op}] is not supported by this engine"
        ))
    };
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::new();
    let mut buf = [0u8; 4];
    let (mut i, mut in_class) = (0, false);
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if i + 1 < chars.len() => {
                out.push_str(&target::regex_escape(chars[i + 1].encode_utf8(&mut buf)));
                i += 1;
            }
            '\\' => {
                return Err(EngineError::Parsing(
                    "[regexp] expected a character after [\\]".into(),
                ))
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '-' if in_class => out.push('-'),
            _ if in_class => out.push_str(&target::regex_escape(c.encode_utf8(&mut buf))),
            '"' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&x| x == '"')
                    .ok_or_else(|| EngineError::Parsing("[regexp] unterminated string".into()))?;
                let lit: String = chars[i + 1..i + 1 + end].iter().collect();
                out.push_str(&format!("(?:{})", target::regex_escape(&lit)));
                i += end + 1;
            }
            '@' => out.push_str("(?s:.*)"),
            '<' => {
                let end = chars[i..]
                    .iter()
                    .position(|&x| x == '>')
                    .ok_or_else(|| EngineError::Parsing("[regexp] unterminated interval".into()))?;
                let body: String = chars[i + 1..i + end].iter().collect();
                out.push_str(&interval(&body).ok_or_else(|| unsupported("<n-m>"))?);
                i += end;
            }
            '&' => return Err(unsupported("&")),
            '~' => return Err(unsupported("~")),
            '#' => return Err(unsupported("#")),
            '.' | '*' | '+' | '?' | '(' | ')' | '|' | '{' | '}' => out.push(c),
            ',' if out.ends_with(|x: char| x.is_ascii_digit()) => out.push(c),
            c if c.is_alphanumeric() => out.push(c),
            c => out.push_str(&target::regex_escape(c.encode_utf8(&mut buf))),
        }
        i += 1;
    }
    if in_class {
        return Err(EngineError::Parsing(
            "[regexp] unterminated character class".into(),
        ));
    }
    Ok(out)
}

fn interval(body: &str) -> Option<String> {
    let (a, b) = body.split_once('-')?;
    let (lo, hi): (u64, u64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    let (lo, hi) = (lo.min(hi), lo.max(hi));
    if hi - lo > MAX_INTERVAL {
        return None;
    }
    let alts: Vec<String> = (lo..=hi).map(|n| n.to_string()).collect();
    Some(format!("(?:0*(?:{}))", alts.join("|")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lucene_regex_translation() {
        assert_eq!(lucene_regex("ab.*c").unwrap(), "ab.*c");
        assert_eq!(lucene_regex("a^b$").unwrap(), "a\\x{5e}b\\x{24}");
        assert_eq!(lucene_regex("x@").unwrap(), "x(?s:.*)");
        assert_eq!(lucene_regex("[a-c]+").unwrap(), "[a-c]+");
        assert_eq!(lucene_regex("[^0-9]").unwrap(), "[^0-9]");
        assert_eq!(lucene_regex("a{2,3}").unwrap(), "a{2,3}");
        assert_eq!(lucene_regex("\\d").unwrap(), "d");
        assert_eq!(lucene_regex("\"a.b\"").unwrap(), "(?:a\\x{2e}b)");
        assert_eq!(lucene_regex("v<1-3>").unwrap(), "v(?:0*(?:1|2|3))");
        for bad in ["a&b", "~a", "#", "[ab", "\"x"] {
            assert_eq!(lucene_regex(bad).unwrap_err().status(), 400, "{bad}");
        }
    }
}
