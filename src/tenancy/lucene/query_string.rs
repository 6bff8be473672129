//! Field names in Lucene's classic query syntax (`query_string`, the `q` parameter), found
//! conservatively: the edge never rewrites the text, it only refuses a text in which some
//! field could be `_index`.
//!
//! The classic parser reads `field:value` where `field` is a term token (escapes allowed,
//! `\uXXXX` included) and whitespace may stand between the token and the `:`. Rather than
//! track where the parser's tokens start, every `:` that is not escaped is taken as a
//! possible field separator (also inside quotes, regexes and ranges: that only refuses
//! more), the run of token characters before it (after optional whitespace) is unescaped,
//! and every suffix of that run is a candidate field name (any Unicode space before the `:`
//! is skipped as well, for readers that split terms there). A candidate that
//! [`super::could_name_index`] is refused. So `\_index:x`, `\u005findex:x`, `_ind\*:x`,
//! `+_index :x` and `a AND(_index:x)` are all caught.
//!
//! Must not touch: JSON, I/O.

use super::could_name_index;

/// One character of the text after escape processing.
#[derive(Debug, Clone, Copy)]
struct Unit {
    c: char,
    escaped: bool,
}

fn units(text: &str) -> Vec<Unit> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '\\' || i + 1 == chars.len() {
            out.push(Unit {
                c: chars[i],
                escaped: false,
            });
            i += 1;
            continue;
        }
        if chars[i + 1] == 'u' && i + 6 <= chars.len() {
            let hex: String = chars[i + 2..i + 6].iter().collect();
            if let Some(c) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                out.push(Unit { c, escaped: true });
                i += 6;
                continue;
            }
        }
        out.push(Unit {
            c: chars[i + 1],
            escaped: true,
        });
        i += 2;
    }
    out
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{3000}')
}

/// Characters that end a term token (unescaped).
fn ends_token(c: char) -> bool {
    is_space(c)
        || matches!(
            c,
            '(' | ')' | '[' | ']' | '{' | '}' | '"' | '^' | '~' | ':' | '/'
        )
}

/// The first field name (as unescaped) in `text` that could name `_index`, if any.
pub fn field_naming_index(text: &str) -> Option<String> {
    let u = units(text);
    for (i, colon) in u.iter().enumerate() {
        if colon.c != ':' || colon.escaped {
            continue;
        }
        let mut end = i;
        // Lucene's five spaces, and every other Unicode space: a reader that splits terms
        // there (the embedded engine did) ends the field before them (attack18). A run of
        // Lucene's own token that keeps them can never be `_index` anyway.
        while end > 0
            && !u[end - 1].escaped
            && (is_space(u[end - 1].c) || u[end - 1].c.is_whitespace())
        {
            end -= 1;
        }
        let mut start = end;
        while start > 0 && (u[start - 1].escaped || !ends_token(u[start - 1].c)) {
            start -= 1;
        }
        for from in start..end {
            let name: String = u[from..end].iter().map(|x| x.c).collect();
            if could_name_index(&name) {
                return Some(name);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::field_naming_index;

    #[test]
    fn fields_that_could_be_index_are_found() {
        for q in [
            "_index:x",
            "_index:tenant*",
            "\\_index:x",
            "\\u005findex:x",
            "\\u005Findex:x",
            "_ind*:x",
            "_ind\\*:x",
            "**:x",
            "?index:x",
            "_index :x",
            "_index\t\n: x",
            "+_index:x",
            "-_index:x",
            "!_index:x",
            "a AND (_index:x)",
            "a&&_index:/ab.*/",
            "title:a OR _index:[a TO b]",
            "\"quoted\" _index:x",
            "\\ _index:x",
            "x-_index:y",
            "_i\\n\\d\\e\\x:y",
            "_index\u{3000}:x",
        ] {
            assert!(field_naming_index(q).is_some(), "{q}");
        }
    }

    /// Lucene separates terms only at its five whitespace characters, so `_index\u{b}:x`
    /// names the field `_index\u{b}` upstream; a reader that splits at any Unicode space
    /// (the embedded engine did: attack18) reads `_index`. Both readings are checked.
    #[test]
    fn other_unicode_spaces_before_the_colon_are_both_readings() {
        for ws in ['\u{b}', '\u{c}', '\u{85}', '\u{a0}', '\u{2028}', '\u{202f}'] {
            let q = format!("_index{ws}:x");
            assert_eq!(field_naming_index(&q).as_deref(), Some("_index"), "{q:?}");
            let q = format!("a AND _ind*{ws}{ws} :x");
            assert_eq!(field_naming_index(&q).as_deref(), Some("_ind*"), "{q:?}");
        }
        assert_eq!(field_naming_index("title\u{a0}:x"), None);
    }

    #[test]
    fn other_texts_pass() {
        for q in [
            "hello world",
            "title:rust",
            "*:x",
            "title\\:_index",
            "url:\"http://x/_index\"",
            "_id:1 OR _source:x",
            "index:x",
            "_indexes:x",
            "title:(_index)",
            "a\\\\",
            "",
            "_exists_:title",
        ] {
            assert_eq!(field_naming_index(q), None, "{q}");
        }
    }
}
