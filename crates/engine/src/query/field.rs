//! Leaf queries on one field, the building blocks the compound compilers (`compile`,
//! `more`, `patterns`) share: `exists`, exact values, `term`, `terms`, `match`, fuzzy keywords,
//! `range` (dates read with date math and time zones, numbers as one term type), and a
//! query run over every field a pattern expands to. The clause and terms limits live here.
//!
//! Must not touch: compound queries (`compile`, `more`), regular expressions and wildcards
//! (`patterns`), the DSL's parsing.

use std::ops::Bound;

use serde_json::Value;
use tantivy::query::{
    AllQuery, BooleanQuery, DisjunctionMaxQuery, ExistsQuery, Occur, RangeQuery, TermSetQuery,
};
use tantivy::Term;

use super::ctx::{empty, index_matches, konst, term_q, Ctx, Q};
use super::datemath;
use super::fuzzy::FuzzyQuery;
use super::numeric;
use super::target::{self, as_bool, as_number, as_text, expand, Target};
use super::{MatchOpts, Operator, RangeBounds};
use crate::error::{EngineError, EngineResult};
use crate::mapping::date::{self, parse_formats};
use crate::mapping::{LeafKind, Property};
use crate::names::wildcard_match;
use crate::store::schema::F_KW;

/// Runs `per` on a field or on each field a pattern expands to (best score wins).
pub(super) fn over_fields(
    ctx: &Ctx<'_>,
    field: &str,
    lenient: bool,
    per: &dyn Fn(&str) -> EngineResult<Q>,
) -> EngineResult<Q> {
    if !field.contains('*') {
        return per(field);
    }
    let mut qs = Vec::new();
    for f in expand(ctx, field) {
        match per(&f) {
            Ok(q) => qs.push(q),
            Err(_) if lenient || field.contains('*') => {}
            Err(e) => return Err(e),
        }
    }
    Ok(match qs.len() {
        0 => empty(),
        1 => qs.pop().expect("one"),
        _ => Box::new(DisjunctionMaxQuery::new(qs)),
    })
}

/// An exact value on a keyword/number/date/boolean field.
fn exact_kw(ctx: &Ctx<'_>, path: &str, kind: LeafKind, v: &Value) -> EngineResult<Q> {
    Ok(match kind {
        LeafKind::Keyword | LeafKind::Ip => term_q(target::kw_str_term(ctx, path, &as_text(v))),
        LeafKind::Boolean => konst(
            term_q(target::kw_bool_term(ctx, path, as_bool(ctx, v)?)),
            1.0,
        ),
        LeafKind::Date => {
            let b = RangeBounds {
                gte: Some(v.clone()),
                lte: Some(v.clone()),
                ..Default::default()
            };
            range(ctx, path, &b)?
        }
        _ => konst(
            term_q(target::kw_num_term(ctx, path, as_number(ctx, v)?)),
            1.0,
        ),
    })
}

pub(super) fn match_field(
    ctx: &Ctx<'_>,
    f: &str,
    query: &Value,
    opts: &MatchOpts,
) -> EngineResult<Q> {
    match target::target(ctx, f)? {
        Target::Text {
            field,
            path,
            analyzer,
        } => {
            let an = target::query_analyzer(ctx, opts.analyzer.as_deref(), &analyzer, "match")?;
            let toks = target::tokens(&an, &as_text(query));
            let terms: Vec<Q> = toks
                .iter()
                .map(|(_, t)| match opts.fuzzy(t) {
                    Some(p) => {
                        let base = target::text_term(field, path.as_deref(), "");
                        Box::new(FuzzyQuery::new(base, t, p)) as Q
                    }
                    None => term_q(target::text_term(field, path.as_deref(), t)),
                })
                .collect();
            Ok(combine_terms(terms, opts))
        }
        Target::Kw { path, kind } if opts.fuzziness.is_some() => {
            match fuzzy_kw(ctx, f, &path, kind, &as_text(query), opts) {
                Err(_) if opts.lenient => Ok(empty()),
                other => other,
            }
        }
        Target::Kw { path, kind } => match exact_kw(ctx, &path, kind, query) {
            Err(_) if opts.lenient => Ok(empty()),
            other => other,
        },
        Target::Id => Ok(term_q(Term::from_field_text(
            ctx.fields.id,
            &as_text(query),
        ))),
        Target::Index => Ok(index_matches(ctx, &as_text(query))),
        Target::Unmapped => Ok(empty()),
    }
}

/// A fuzzy `match` on a keyword field (the whole value is the term); numbers, dates and
/// booleans refuse it as Elasticsearch 7.10 does.
fn fuzzy_kw(
    ctx: &Ctx<'_>,
    f: &str,
    path: &str,
    kind: LeafKind,
    text: &str,
    opts: &MatchOpts,
) -> EngineResult<Q> {
    if kind != LeafKind::Keyword {
        return Err(EngineError::QueryShard {
            reason: format!(
                "Can only use fuzzy queries on keyword and text fields - not on [{f}] which is of type [{}]",
                kind.name()
            ),
            index: ctx.index_name.to_string(),
        });
    }
    let value = target::normalized(ctx, path, text);
    Ok(match opts.fuzzy(&value) {
        Some(p) => Box::new(FuzzyQuery::new(
            target::kw_str_term(ctx, path, ""),
            &value,
            p,
        )),
        None => term_q(target::kw_str_term(ctx, path, &value)),
    })
}

pub(super) fn combine_terms(mut terms: Vec<Q>, opts: &MatchOpts) -> Q {
    match terms.len() {
        0 if opts.zero_terms_all => Box::new(AllQuery),
        0 => empty(),
        1 => terms.pop().expect("one"),
        n => {
            let (occur, min) = match opts.operator {
                Operator::And => (Occur::Must, 0),
                Operator::Or => (Occur::Should, opts.msm.map_or(1, |m| m.required(n)).max(1)),
            };
            let clauses = terms.into_iter().map(|t| (occur, t)).collect();
            Box::new(BooleanQuery::with_minimum_required_clauses(clauses, min))
        }
    }
}

pub(super) fn term_field(ctx: &Ctx<'_>, f: &str, value: &Value) -> EngineResult<Q> {
    Ok(match target::target(ctx, f)? {
        Target::Text { field, path, .. } => {
            term_q(target::text_term(field, path.as_deref(), &as_text(value)))
        }
        Target::Kw { path, kind } => exact_kw(ctx, &path, kind, value)?,
        Target::Id => term_q(Term::from_field_text(ctx.fields.id, &as_text(value))),
        Target::Index => index_matches(ctx, &as_text(value)),
        Target::Unmapped => empty(),
    })
}

/// Clauses of one `bool` query at most (Elasticsearch's `indices.query.bool.max_clause_count`,
/// 1024): twenty thousand took the engine seconds each (issue 25).
pub const MAX_CLAUSES: usize = 1024;

/// Values of one `terms` query at most (Elasticsearch's `index.max_terms_count`).
pub const MAX_TERMS: usize = 65_536;

/// Lucene's `TooManyClauses`, as a client error (a 500 would read as a failing node).
pub(super) fn too_many_clauses() -> EngineError {
    EngineError::SearchPhase {
        kind: "too_many_clauses".into(),
        reason: format!("maxClauseCount is set to {MAX_CLAUSES}"),
    }
}

pub(super) fn terms(ctx: &Ctx<'_>, f: &str, values: &[Value]) -> EngineResult<Q> {
    if values.len() > MAX_TERMS {
        return Err(EngineError::IllegalArgument(format!(
            "The number of terms [{}] used in the Terms Query request has exceeded the allowed maximum of [{MAX_TERMS}]. This maximum can be set by changing the [index.max_terms_count] index level setting.",
            values.len()
        )));
    }
    let ts: Vec<Term> = match target::target(ctx, f)? {
        Target::Text { field, path, .. } => values
            .iter()
            .map(|v| target::text_term(field, path.as_deref(), &as_text(v)))
            .collect(),
        Target::Kw { path, kind } => match kind {
            LeafKind::Keyword | LeafKind::Ip => values
                .iter()
                .map(|v| target::kw_str_term(ctx, &path, &as_text(v)))
                .collect(),
            LeafKind::Boolean => values
                .iter()
                .map(|v| Ok(target::kw_bool_term(ctx, &path, as_bool(ctx, v)?)))
                .collect::<EngineResult<_>>()?,
            LeafKind::Date => {
                let qs = values
                    .iter()
                    .map(|v| exact_kw(ctx, &path, kind, v))
                    .collect::<EngineResult<Vec<_>>>()?;
                return Ok(konst(Box::new(BooleanQuery::union(qs)), 1.0));
            }
            _ => values
                .iter()
                .map(|v| Ok(target::kw_num_term(ctx, &path, as_number(ctx, v)?)))
                .collect::<EngineResult<_>>()?,
        },
        Target::Id => values
            .iter()
            .map(|v| Term::from_field_text(ctx.fields.id, &as_text(v)))
            .collect(),
        Target::Index => {
            let hit = values
                .iter()
                .any(|v| wildcard_match(&as_text(v), ctx.index_name));
            return Ok(if hit { Box::new(AllQuery) } else { empty() });
        }
        Target::Unmapped => return Ok(empty()),
    };
    Ok(konst(Box::new(TermSetQuery::new(ts)), 1.0))
}

fn bound_terms(
    b: &RangeBounds,
    mk: &dyn Fn(&Value, bool) -> EngineResult<Term>,
) -> EngineResult<(Bound<Term>, Bound<Term>)> {
    let lo = match (&b.gt, &b.gte) {
        (Some(v), _) => Bound::Excluded(mk(v, true)?),
        (None, Some(v)) => Bound::Included(mk(v, false)?),
        _ => Bound::Unbounded,
    };
    let hi = match (&b.lt, &b.lte) {
        (Some(v), _) => Bound::Excluded(mk(v, false)?),
        (None, Some(v)) => Bound::Included(mk(v, true)?),
        _ => Bound::Unbounded,
    };
    Ok((lo, hi))
}

pub(super) fn range(ctx: &Ctx<'_>, f: &str, b: &RangeBounds) -> EngineResult<Q> {
    if b.gt.is_none() && b.gte.is_none() && b.lt.is_none() && b.lte.is_none() {
        return Ok(exists(ctx, f));
    }
    let (lo, hi) = match target::target(ctx, f)? {
        Target::Kw {
            path,
            kind: LeafKind::Date,
        } => date_bounds(ctx, f, &path, b)?,
        Target::Kw {
            path,
            kind: LeafKind::Keyword | LeafKind::Ip,
        } => bound_terms(b, &|v, _| Ok(target::kw_str_term(ctx, &path, &as_text(v))))?,
        Target::Kw {
            kind: LeafKind::Boolean,
            ..
        } => return Ok(empty()),
        Target::Kw { path, kind } => {
            let num = |v: &Option<Value>| v.as_ref().map(|v| as_number(ctx, v)).transpose();
            let integer = matches!(
                kind,
                LeafKind::Long | LeafKind::Integer | LeafKind::Short | LeafKind::Byte
            );
            let bounds = numeric::numeric_bounds(
                integer,
                (num(&b.gt)?, num(&b.gte)?),
                (num(&b.lt)?, num(&b.lte)?),
            );
            match numeric::terms(ctx, &path, bounds) {
                Some(t) => t,
                None => return Ok(empty()),
            }
        }
        Target::Text {
            field, path: None, ..
        } => bound_terms(b, &|v, _| Ok(Term::from_field_text(field, &as_text(v))))?,
        Target::Id => bound_terms(b, &|v, _| {
            Ok(Term::from_field_text(ctx.fields.id, &as_text(v)))
        })?,
        _ => return Ok(empty()),
    };
    Ok(Box::new(RangeQuery::new(lo, hi)))
}

/// The bounds of a `range` on date field `f` (stored under `path`): date math against the
/// request's now, the query's `format` (else the field's) and `time_zone`; a number in the
/// field's epoch unit.
fn date_bounds(
    ctx: &Ctx<'_>,
    f: &str,
    path: &str,
    b: &RangeBounds,
) -> EngineResult<(Bound<Term>, Bound<Term>)> {
    let formats = match &b.format {
        Some(spec) => parse_formats(spec).map_err(EngineError::Parsing)?,
        None => ctx
            .mapping
            .field(f)
            .map(|i| i.formats.clone())
            .unwrap_or_default(),
    };
    bound_terms(b, &|v, up| {
        let ms = match v {
            // A number is read in the field's epoch unit (seconds for a field
            // mapped `epoch_second`), as Elasticsearch does.
            Value::Number(n) => date::number_to_millis(&formats, n.as_f64().unwrap_or(0.0)),
            other => datemath::eval(&as_text(other), &formats, ctx.now_ms, up)
                .map(|ms| in_zone(ms, &as_text(other), b.time_zone.as_deref()))
                .ok_or_else(|| {
                    // Named in the error: the query's format, else the field's.
                    let spec = match (&b.format, ctx.mapping.property(f)) {
                        (Some(q), _) => q.as_str(),
                        (None, Some(Property::Leaf(l))) => l.date_format(),
                        (None, _) => date::DEFAULT_FORMAT,
                    };
                    EngineError::Parsing(format!(
                        "failed to parse date field [{}] with format [{spec}]",
                        as_text(other),
                    ))
                })?,
        };
        Ok(target::kw_num_term(ctx, path, ms as f64))
    })
}

/// A date string without its own zone, read in `tz`: the instant it names there.
fn in_zone(ms: i64, text: &str, tz: Option<&str>) -> i64 {
    let Some(tz) = tz else { return ms };
    let date = text.split("||").next().unwrap_or(text).trim();
    let zoned = date.starts_with("now")
        || date.ends_with('Z')
        || date.ends_with('z')
        || date
            .rfind(['+', '-'])
            .is_some_and(|i| i > 10 && date[i..].contains(':'))
        || date.bytes().all(|b| b.is_ascii_digit());
    match (zoned, crate::zones::zone_offset_ms(tz, ms)) {
        (false, Some(off)) => ms - off,
        _ => ms,
    }
}

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
