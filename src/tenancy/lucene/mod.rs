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

/// `*` any run, `?` one byte, else the byte itself. Backtracks only to the last `*` seen:
/// at most `p.len() * s.len()` steps. (The recursive form tried every split at every `*`:
/// a 98-byte `sort` value of stars took 65 s, found by `fuzz/fuzz_targets/tenancy.rs`.)
fn glob(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    // After the last `*`: where the pattern resumes, and where its run in `s` ends.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(b'*') => {
                pi += 1;
                star = Some((pi, si));
            }
            Some(&c) if c == b'?' || c == s[si] => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                // The last `*` takes one more byte; what follows it starts over.
                Some((resume, run_end)) => {
                    pi = resume;
                    si = run_end + 1;
                    star = Some((resume, si));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::{could_name_index, glob};

    /// The definition, tried every way (exponential; for short inputs only).
    fn glob_by_definition(p: &[u8], s: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((b'*', rest)) => (0..=s.len()).any(|i| glob_by_definition(rest, &s[i..])),
            Some((b'?', rest)) => !s.is_empty() && glob_by_definition(rest, &s[1..]),
            Some((c, rest)) => s.first() == Some(c) && glob_by_definition(rest, &s[1..]),
        }
    }

    #[test]
    fn glob_agrees_with_its_definition() {
        // Every pattern of up to 5 bytes over `* ? _ i x`, against names around `_index`.
        let alphabet = b"*?_ix";
        let names: [&[u8]; 7] = [b"", b"_", b"_i", b"_index", b"ii", b"_ix_ix", b"x"];
        let mut patterns: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..5 {
            let longer: Vec<Vec<u8>> = patterns
                .iter()
                .filter(|p| p.len() == patterns.last().map_or(0, Vec::len))
                .flat_map(|p| alphabet.iter().map(move |&c| [p.as_slice(), &[c]].concat()))
                .collect();
            patterns.extend(longer);
        }
        for p in &patterns {
            for s in names {
                assert_eq!(glob(p, s), glob_by_definition(p, s), "{p:?} {s:?}");
            }
        }
    }

    /// attack15: every pattern of up to 6 bytes over every byte of `_index` plus `* ? a`,
    /// against `_index` and near names (a standalone run of the same check to 8 bytes,
    /// 48 M patterns, found no difference either).
    #[test]
    fn attack15_glob_agrees_with_its_definition_on_index_bytes() {
        let alphabet = b"*?_indexa";
        let names: [&[u8]; 5] = [b"_index", b"", b"_i_index", b"index_", b"aaa"];
        let mut level: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..6 {
            level = level
                .iter()
                .flat_map(|p| alphabet.iter().map(move |&c| [p.as_slice(), &[c]].concat()))
                .collect();
            for p in &level {
                for s in names {
                    assert_eq!(glob(p, s), glob_by_definition(p, s), "{p:?} {s:?}");
                }
            }
        }
    }

    #[test]
    fn fuzz_finding_many_stars_are_not_exponential() {
        // fuzz/fuzz_targets/tenancy.rs: a `sort` field of this shape took 65 s.
        let field = format!("{}?*)****x+", "*".repeat(55));
        assert!(!could_name_index(&field));
        let many = format!("{}_index", "*?".repeat(2000));
        assert!(!could_name_index(&many));
        assert!(could_name_index(&"*".repeat(2000)));
    }

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
