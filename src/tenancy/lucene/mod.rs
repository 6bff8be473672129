//! Lucene's two query languages where a tenant can reach the `_index` field: regular
//! expressions (`regexp` queries, `include`/`exclude` of `terms` aggregations) and the
//! classic query syntax (`query_string`, the `q` parameter).
//!
//! - [`regexp`]: a strict parser of Lucene's `RegExp` syntax (all optional operators on,
//!   as Elasticsearch's default `flags: ALL`), and a canonical writer: every literal
//!   character that is not a letter or digit escaped, every group explicit. A regexp on
//!   `_index` is forwarded only as `"<prefix>"(<canonical form>)`, which cannot match
//!   outside the tenant's prefix whatever the expression says.
//! - [`query_string`]: a conservative lexer that finds every field name the classic
//!   parser could read in a query text (escapes including `\uXXXX`, whitespace before
//!   `:`, quotes, `/regex/`, ranges), so that a field that could be `_index` is refused.
//!
//! Must not touch: JSON, prefixes (callers add them), I/O.

pub mod query_string;
pub mod regexp;

/// Whether a field name or pattern could name the `_index` metadata field: it equals
/// `_index`, or matches it as a glob (`*` any run, `?` one character, conservatively
/// both), except exactly `*`, which Elasticsearch expands without metadata fields. A
/// `^boost` suffix (field lists) is ignored.
pub fn could_name_index(field: &str) -> bool {
    let f = match field.rfind('^') {
        Some(i) if i > 0 => &field[..i],
        _ => field,
    };
    f != "*" && glob(f.as_bytes(), b"_index")
}

fn glob(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| glob(rest, &s[i..])),
        Some((b'?', rest)) => !s.is_empty() && glob(rest, &s[1..]),
        Some((c, rest)) => s.first() == Some(c) && glob(rest, &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::could_name_index;

    #[test]
    fn field_patterns_that_could_be_index() {
        for f in [
            "_index", "_ind*", "**", "?index", "_*", "*x", "*index", "_index^2", "*^3", "_?ndex",
            "*_*",
        ] {
            let want = f != "*^3";
            assert_eq!(could_name_index(f), want, "{f}");
        }
        for f in [
            "*", "title", "_id", "index", "_index.x", "x_index", "*.title", "_indexes",
        ] {
            assert!(!could_name_index(f), "{f}");
        }
    }
}
