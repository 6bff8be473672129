//! `exists`, `prefix` and `wildcard`: the field names / fast-field columns behind
//! `exists`, and regex automata restricted to the key range of the literal prefix.

use tantivy::query::{AllQuery, BooleanQuery, ExistsQuery};
use tantivy::Term;

use super::automaton::RangedRegexQuery;
use super::compile::{empty, index_matches, konst, term_q, Ctx, Q};
use super::target::{self, Target};
use crate::engine::error::{EngineError, EngineResult};
use crate::engine::mapping::LeafKind;
use crate::engine::names::wildcard_match;
use crate::engine::store::schema::F_KW;

/// `exists` on one mapped leaf: `_field_names` for text, the fast-field column otherwise.
fn exists_leaf(ctx: &Ctx<'_>, path: &str, kind: LeafKind) -> Q {
    if kind == LeafKind::Text {
        term_q(Term::from_field_text(ctx.fields.names, path))
    } else {
        Box::new(ExistsQuery::new(format!("{F_KW}.{path}"), false))
    }
}

pub(super) fn exists(ctx: &Ctx<'_>, f: &str) -> Q {
    if f == "_id" || f == "_index" {
        return Box::new(AllQuery);
    }
    let prefix = format!("{f}.");
    let many = f.contains('*') || ctx.mapping.is_object(f);
    let qs: Vec<Q> = ctx
        .mapping
        .fields()
        .into_iter()
        .filter(|(p, _)| match (many, f.contains('*')) {
            (true, true) => wildcard_match(f, p),
            (true, false) => p.starts_with(&prefix),
            (false, _) => *p == f,
        })
        .map(|(p, info)| exists_leaf(ctx, p, info.kind))
        .collect();
    match qs.len() {
        0 => empty(),
        1 => konst(qs.into_iter().next().expect("one"), 1.0),
        _ => konst(Box::new(BooleanQuery::union(qs)), 1.0),
    }
}

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
    match target::target(ctx, f) {
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
