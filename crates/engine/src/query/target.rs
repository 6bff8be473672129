//! Where a query field lives in the shard schema, and how its terms are built: text in a
//! slot or the JSON text field (analyzed), keywords/numbers/dates/booleans in the keyword
//! JSON field (numbers normalised as tantivy indexes them), `_id`, and `_index`.

use serde_json::Value;
use tantivy::schema::Field;
use tantivy::Term;

use super::ctx::Ctx;
use crate::error::{EngineError, EngineResult};
use crate::mapping::{under_metadata, Analyzer, LeafKind};
use crate::names::wildcard_match;
use crate::store::schema::analyzer;

/// A resolved query field.
#[derive(Debug, Clone)]
pub enum Target {
    /// `_id`.
    Id,
    /// `_index` of the index being searched.
    Index,
    /// An analyzed text field.
    Text {
        field: Field,
        path: Option<String>,
        analyzer: Analyzer,
    },
    /// A keyword, numeric, date or boolean field.
    Kw { path: String, kind: LeafKind },
    /// Not mapped (or not searchable): matches nothing.
    Unmapped,
}

/// Resolves a (non-wildcard) field name. A field mapped with `index: false` cannot be
/// searched (Elasticsearch 7.10's `query_shard_exception`).
pub fn target(ctx: &Ctx<'_>, name: &str) -> EngineResult<Target> {
    match name {
        "_id" => return Ok(Target::Id),
        "_index" => return Ok(Target::Index),
        _ => {}
    }
    let Some(info) = ctx.mapping.field(name) else {
        return Ok(Target::Unmapped);
    };
    if !info.indexed && !matches!(info.kind, LeafKind::Binary | LeafKind::Unindexed) {
        return Err(EngineError::QueryShard {
            reason: format!("Cannot search on field [{name}] since it is not indexed."),
            index: ctx.index_name.to_string(),
        });
    }
    Ok(match info.kind {
        LeafKind::Text => match info.slot {
            Some(s) => Target::Text {
                field: ctx.fields.slots[s as usize],
                path: None,
                analyzer: info.search_analyzer.clone(),
            },
            None => Target::Text {
                field: ctx.fields.text,
                path: Some(name.to_string()),
                analyzer: info.search_analyzer.clone(),
            },
        },
        LeafKind::Binary | LeafKind::Unindexed => Target::Unmapped,
        kind => Target::Kw {
            path: name.to_string(),
            kind,
        },
    })
}

/// Expands a field pattern (`title*`, `*`) to mapped text and keyword fields; a plain name
/// is returned as is. `*` never includes numbers, dates or booleans (as Elasticsearch's
/// lenient `*` expansion).
pub fn expand(ctx: &Ctx<'_>, pattern: &str) -> Vec<String> {
    if !pattern.contains('*') {
        return vec![pattern.to_string()];
    }
    ctx.mapping
        .fields()
        .into_iter()
        .filter(|(p, f)| {
            // an `_index`/`_id` field mapped before metadata names were refused must not
            // turn a pattern into the index-name or id target
            !under_metadata(p)
                && f.indexed
                && wildcard_match(pattern, p)
                && matches!(f.kind, LeafKind::Text | LeafKind::Keyword | LeafKind::Ip)
        })
        .map(|(p, _)| p.to_string())
        .collect()
}

/// The analyzer a query names (`analyzer`), else the field's search analyzer.
pub fn query_analyzer(
    ctx: &Ctx<'_>,
    named: Option<&str>,
    field: &Analyzer,
    query: &str,
) -> EngineResult<Analyzer> {
    match named {
        None => Ok(field.clone()),
        Some(n) => ctx
            .mapping
            .analysis
            .analyzer(n)
            .map_err(|_| EngineError::QueryShard {
                reason: format!("[{query}] analyzer [{n}] not found"),
                index: ctx.index_name.to_string(),
            }),
    }
}

/// Tokens of `text` by `analyzer`, with positions.
pub fn tokens(a: &Analyzer, text: &str) -> Vec<(usize, String)> {
    let mut an = analyzer(a);
    let mut out = Vec::new();
    an.token_stream(text)
        .process(&mut |t| out.push((t.position, t.text.clone())));
    out
}

/// The term of one token in a text target.
pub fn text_term(field: Field, path: Option<&str>, token: &str) -> Term {
    match path {
        None => Term::from_field_text(field, token),
        Some(p) => {
            let mut t = Term::from_field_json_path(field, p, true);
            t.append_type_and_str(token);
            t
        }
    }
}

/// The term of an exact string in the keyword field.
pub fn kw_str_term(ctx: &Ctx<'_>, path: &str, s: &str) -> Term {
    let mut t = Term::from_field_json_path(ctx.fields.kw, path, true);
    t.append_type_and_str(&normalized(ctx, path, s));
    t
}

/// A keyword value as its field's `normalizer` indexed it (term-level queries and `match`
/// on a normalized keyword see the normalized form, as in Elasticsearch).
pub fn normalized<'s>(ctx: &Ctx<'_>, path: &str, s: &'s str) -> std::borrow::Cow<'s, str> {
    match ctx.mapping.field(path).and_then(|f| f.normalizer.as_ref()) {
        Some(n) => std::borrow::Cow::Owned(n.normalize(s)),
        None => std::borrow::Cow::Borrowed(s),
    }
}

/// A number as tantivy indexes it in a JSON field (integral values as i64).
pub fn kw_num_term(ctx: &Ctx<'_>, path: &str, n: f64) -> Term {
    let mut t = Term::from_field_json_path(ctx.fields.kw, path, true);
    if n.fract() == 0.0 && n >= i64::MIN as f64 && n <= i64::MAX as f64 {
        t.append_type_and_fast_value(n as i64);
    } else {
        t.append_type_and_fast_value(n);
    }
    t
}

/// A boolean term in the keyword field.
pub fn kw_bool_term(ctx: &Ctx<'_>, path: &str, b: bool) -> Term {
    let mut t = Term::from_field_json_path(ctx.fields.kw, path, true);
    t.append_type_and_fast_value(b);
    t
}

/// The bytes every term of a JSON path starts with (for prefix/regex automata).
pub fn json_str_prefix(field: Field, path: &str) -> Vec<u8> {
    let mut t = Term::from_field_json_path(field, path, true);
    t.append_type_and_str("");
    t.serialized_value_bytes().to_vec()
}

/// A JSON scalar as text.
pub fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A number for a numeric field, or the `query_shard_exception` Elasticsearch gives.
pub fn as_number(ctx: &Ctx<'_>, v: &Value) -> EngineResult<f64> {
    let s = as_text(v);
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
    .ok_or_else(|| EngineError::QueryShard {
        reason: format!("failed to create query: For input string: \"{s}\""),
        index: ctx.index_name.to_string(),
    })
}

/// A boolean for a boolean field.
pub fn as_bool(ctx: &Ctx<'_>, v: &Value) -> EngineResult<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" || s == "false" => Ok(s == "true"),
        other => Err(EngineError::QueryShard {
            reason: format!(
                "failed to create query: Can't parse boolean value [{}], expected [true] or [false]",
                as_text(other)
            ),
            index: ctx.index_name.to_string(),
        }),
    }
}

/// Escapes bytes for a regex pattern (every non-alphanumeric as `\x{..}`).
pub fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            out.push_str(&format!("\\x{{{:x}}}", c as u32));
        }
    }
    out
}

/// Translates an Elasticsearch wildcard (`*`, `?`) into a regex.
pub fn wildcard_regex(w: &str) -> String {
    let mut out = String::new();
    let mut buf = [0u8; 4];
    for c in w.chars() {
        match c {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            c => out.push_str(&regex_escape(c.encode_utf8(&mut buf))),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regex_helpers() {
        assert_eq!(regex_escape("ab.c"), "ab\\x{2e}c");
        assert_eq!(wildcard_regex("a*b?"), "a.*b.");
    }

    #[test]
    fn standard_tokens_have_positions() {
        let t = tokens(&Analyzer::Standard, "Quick brown-fox");
        assert_eq!(
            t,
            vec![(0, "quick".into()), (1, "brown".into()), (2, "fox".into())]
        );
    }
}
