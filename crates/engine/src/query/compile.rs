//! [`Query`] -> tantivy query for one index: full-text queries are analyzed with the
//! field's search analyzer and scored with BM25; term-level queries on numbers, dates and
//! booleans score a constant, as in Elasticsearch; filters score zero.

use std::ops::Bound;

use serde_json::Value;
use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, ConstScoreQuery, DisjunctionMaxQuery, EmptyQuery, Occur,
    PhrasePrefixQuery, PhraseQuery, Query as TQuery, RangeQuery, TermQuery, TermSetQuery,
};
use tantivy::schema::IndexRecordOption;
use tantivy::Term;

use super::datemath;
use super::fuzzy::FuzzyQuery;
use super::numeric;
use super::patterns::{exists, regex_field};
use super::target::{self, as_bool, as_number, as_text, expand, Target};
use super::{CiKind, MatchOpts, MultiKind, Operator, Query, RangeBounds};
use crate::error::{EngineError, EngineResult};
use crate::mapping::date::{self, parse_formats};
use crate::mapping::{LeafKind, Mapping, Property};
use crate::names::wildcard_match;
use crate::store::schema::Fields;

pub(super) type Q = Box<dyn TQuery>;

/// What compilation needs to know about the index searched.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    pub mapping: &'a Mapping,
    pub fields: &'a Fields,
    pub index_name: &'a str,
    pub now_ms: i64,
}

pub(super) fn boosted(q: Q, boost: f32) -> Q {
    if boost == 1.0 {
        q
    } else {
        Box::new(BoostQuery::new(q, boost))
    }
}

pub(super) fn empty() -> Q {
    Box::new(EmptyQuery)
}

pub(super) fn konst(q: Q, score: f32) -> Q {
    Box::new(ConstScoreQuery::new(q, score))
}

pub(super) fn term_q(t: Term) -> Q {
    Box::new(TermQuery::new(t, IndexRecordOption::WithFreqs))
}

/// Compiles `q` for the index described by `ctx`.
pub fn compile(q: &Query, ctx: &Ctx<'_>) -> EngineResult<Q> {
    Ok(match q {
        Query::Named { query, .. } => compile(query, ctx)?,
        Query::MatchAll { boost } => boosted(Box::new(AllQuery), *boost),
        Query::MatchNone => empty(),
        Query::Match { .. } | Query::MatchPhrase { .. } | Query::MultiMatch { .. } => {
            full_text(q, ctx)?
        }
        Query::MatchBoolPrefix { .. } | Query::CombinedFields { .. } | Query::TermsSet { .. } => {
            super::more::compile_more(q, ctx)?
        }
        Query::Bool {
            must,
            should,
            must_not,
            filter,
            msm,
            boost,
        } => boosted(
            bool_query(ctx, must, should, must_not, filter, *msm)?,
            *boost,
        ),
        Query::ConstantScore { filter, boost } => konst(compile(filter, ctx)?, *boost),
        Query::DisMax {
            queries,
            tie_breaker,
            boost,
        } => {
            let qs = queries
                .iter()
                .map(|q| compile(q, ctx))
                .collect::<EngineResult<Vec<_>>>()?;
            boosted(
                Box::new(DisjunctionMaxQuery::with_tie_breaker(qs, *tie_breaker)),
                *boost,
            )
        }
        _ => term_level(q, ctx)?,
    })
}

/// `match`, `match_phrase[_prefix]`, `multi_match`: analyzed, BM25-scored.
fn full_text(q: &Query, ctx: &Ctx<'_>) -> EngineResult<Q> {
    Ok(match q {
        Query::Match {
            field,
            query,
            opts,
            boost,
        } => {
            let per = |f: &str| match_field(ctx, f, query, opts);
            boosted(over_fields(ctx, field, opts.lenient, &per)?, *boost)
        }
        Query::MatchPhrase {
            field,
            query,
            slop,
            prefix,
            analyzer,
            max_expansions,
            zero_terms_all,
            boost,
        } => {
            let ph = Phrase {
                slop: *slop,
                prefix: *prefix,
                max_expansions: *max_expansions,
                zero_terms_all: *zero_terms_all,
            };
            let an = analyzer.as_deref();
            let per = |f: &str| phrase_field(ctx, f, query, ph, an);
            boosted(over_fields(ctx, field, false, &per)?, *boost)
        }
        Query::MultiMatch {
            fields,
            query,
            kind,
            tie_breaker,
            slop,
            opts,
            boost,
        } => boosted(
            multi_match(ctx, fields, query, *kind, *tie_breaker, *slop, opts)?,
            *boost,
        ),
        _ => unreachable!("only full-text queries come here"),
    })
}

/// `term`, `terms`, `range`, `exists`, `prefix`, `wildcard`, `ids`.
fn term_level(q: &Query, ctx: &Ctx<'_>) -> EngineResult<Q> {
    Ok(match q {
        Query::Term {
            field,
            value,
            boost,
        } => boosted(
            over_fields(ctx, field, false, &|f| term_field(ctx, f, value))?,
            *boost,
        ),
        Query::Terms {
            field,
            values,
            boost,
        } => boosted(terms(ctx, field, values)?, *boost),
        Query::Range {
            field,
            bounds,
            boost,
        } => {
            let per = |f: &str| match ctx.mapping.field(f) {
                Some(info) if bounds.disjoint => Err(EngineError::IllegalArgument(format!(
                    "Field [{f}] of type [{}] does not support DISJOINT ranges",
                    info.kind.name()
                ))),
                _ => range(ctx, f, bounds),
            };
            boosted(over_fields(ctx, field, true, &per)?, *boost)
        }
        Query::Exists { field, boost } => boosted(exists(ctx, field), *boost),
        Query::Prefix {
            field,
            value,
            boost,
        } => {
            let per = |f: &str| {
                let value = target::normalized(ctx, f, value);
                let re = format!("{}.*", target::regex_escape(&value));
                regex_field(ctx, f, &re, &value, true)
            };
            boosted(over_fields(ctx, field, true, &per)?, *boost)
        }
        Query::Wildcard {
            field,
            value,
            boost,
        } => {
            let per = |f: &str| {
                let value = target::normalized(ctx, f, value);
                regex_field(ctx, f, &target::wildcard_regex(&value), &value, false)
            };
            boosted(over_fields(ctx, field, true, &per)?, *boost)
        }
        Query::CaseInsensitive {
            field,
            kind,
            value,
            boost,
        } => {
            let per = |f: &str| super::patterns::case_insensitive(ctx, f, *kind, value);
            boosted(
                konst(over_fields(ctx, field, *kind != CiKind::Term, &per)?, 1.0),
                *boost,
            )
        }
        Query::Regexp {
            field,
            value,
            case_insensitive,
            boost,
        } => {
            let re = super::patterns::lucene_regex(value)?;
            let re = if *case_insensitive {
                format!("(?i){re}")
            } else {
                re
            };
            let per = |f: &str| super::patterns::regexp_field(ctx, f, &re);
            boosted(over_fields(ctx, field, true, &per)?, *boost)
        }
        Query::Ids { values, boost } => {
            let ts: Vec<Term> = values
                .iter()
                .map(|v| Term::from_field_text(ctx.fields.id, v))
                .collect();
            boosted(konst(Box::new(TermSetQuery::new(ts)), 1.0), *boost)
        }
        _ => unreachable!("only term-level queries come here"),
    })
}

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

pub(super) fn index_matches(ctx: &Ctx<'_>, pattern: &str) -> Q {
    if wildcard_match(pattern, ctx.index_name) {
        Box::new(AllQuery)
    } else {
        empty()
    }
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

/// The options of a phrase query.
#[derive(Debug, Clone, Copy)]
pub(super) struct Phrase {
    pub slop: u32,
    pub prefix: bool,
    pub max_expansions: usize,
    pub zero_terms_all: bool,
}

fn phrase_field(
    ctx: &Ctx<'_>,
    f: &str,
    query: &str,
    ph: Phrase,
    named: Option<&str>,
) -> EngineResult<Q> {
    let Phrase { slop, prefix, .. } = ph;
    match target::target(ctx, f)? {
        Target::Text {
            field,
            path,
            analyzer,
        } => {
            let qname = if prefix {
                "match_phrase_prefix"
            } else {
                "match_phrase"
            };
            let an = target::query_analyzer(ctx, named, &analyzer, qname)?;
            let toks = target::tokens(&an, query);
            let terms: Vec<(usize, Term)> = toks
                .iter()
                .map(|(p, t)| (*p, target::text_term(field, path.as_deref(), t)))
                .collect();
            Ok(match (terms.len(), prefix) {
                (0, _) if ph.zero_terms_all => Box::new(AllQuery),
                (0, _) => empty(),
                (1, false) => term_q(terms.into_iter().next().expect("one").1),
                (_, true) => {
                    // the prefix expands to at most `max_expansions` terms (per segment)
                    let mut q = PhrasePrefixQuery::new_with_offset(terms);
                    q.set_max_expansions(ph.max_expansions as u32);
                    Box::new(q)
                }
                (_, false) => Box::new(PhraseQuery::new_with_offset_and_slop(terms, slop)),
            })
        }
        _ => match_field(
            ctx,
            f,
            &Value::String(query.to_string()),
            &MatchOpts::default(),
        ),
    }
}

fn multi_match(
    ctx: &Ctx<'_>,
    fields: &[super::BoostedField],
    query: &Value,
    kind: MultiKind,
    tie: f32,
    slop: u32,
    opts: &MatchOpts,
) -> EngineResult<Q> {
    let mut names: Vec<(String, f32)> = Vec::new();
    let star = [super::BoostedField {
        name: "*".into(),
        boost: 1.0,
    }];
    let fields = if fields.is_empty() { &star[..] } else { fields };
    for bf in fields {
        for f in expand(ctx, &bf.name) {
            names.push((f, bf.boost));
        }
    }
    let lenient = opts.lenient || fields.iter().any(|f| f.name.contains('*'));
    if kind == MultiKind::CrossFields {
        return super::more::cross_fields(ctx, &names, &as_text(query), tie, opts);
    }
    let ph = Phrase {
        slop,
        prefix: kind == MultiKind::PhrasePrefix,
        max_expansions: opts.max_expansions,
        zero_terms_all: opts.zero_terms_all,
    };
    let mut qs = Vec::new();
    for (f, b) in names {
        let q = match kind {
            MultiKind::Phrase | MultiKind::PhrasePrefix => {
                phrase_field(ctx, &f, &as_text(query), ph, opts.analyzer.as_deref())
            }
            MultiKind::BoolPrefix => super::more::bool_prefix_field(ctx, &f, &as_text(query), opts),
            _ => match_field(ctx, &f, query, opts),
        };
        match q {
            Ok(q) => qs.push(boosted(q, b)),
            Err(_) if lenient => {}
            Err(e) => return Err(e),
        }
    }
    Ok(match (qs.len(), kind) {
        (0, _) => empty(),
        (1, _) => qs.pop().expect("one"),
        (_, MultiKind::MostFields) => Box::new(BooleanQuery::union(qs)),
        _ => Box::new(DisjunctionMaxQuery::with_tie_breaker(qs, tie)),
    })
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
fn too_many_clauses() -> EngineError {
    EngineError::SearchPhase {
        kind: "too_many_clauses".into(),
        reason: format!("maxClauseCount is set to {MAX_CLAUSES}"),
    }
}

fn terms(ctx: &Ctx<'_>, f: &str, values: &[Value]) -> EngineResult<Q> {
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
        } => {
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
                Ok(target::kw_num_term(ctx, &path, ms as f64))
            })?
        }
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

fn bool_query(
    ctx: &Ctx<'_>,
    must: &[Query],
    should: &[Query],
    must_not: &[Query],
    filter: &[Query],
    msm: Option<super::Msm>,
) -> EngineResult<Q> {
    let n = must.len() + should.len() + must_not.len() + filter.len();
    if n > MAX_CLAUSES {
        return Err(too_many_clauses());
    }
    let mut clauses: Vec<(Occur, Q)> = Vec::new();
    for q in must {
        clauses.push((Occur::Must, compile(q, ctx)?));
    }
    for q in filter {
        clauses.push((Occur::Must, konst(compile(q, ctx)?, 0.0)));
    }
    for q in must_not {
        clauses.push((Occur::MustNot, compile(q, ctx)?));
    }
    let required = !must.is_empty() || !filter.is_empty();
    for q in should {
        clauses.push((Occur::Should, compile(q, ctx)?));
    }
    let min = match msm {
        Some(m) => m.required(should.len()),
        None if required || should.is_empty() => 0,
        None => 1,
    };
    if !required && should.is_empty() {
        // only must_not (or nothing): everything else matches, with a score of 0 (or 1 when empty)
        let score = if must_not.is_empty() { 1.0 } else { 0.0 };
        clauses.push((Occur::Must, konst(Box::new(AllQuery), score)));
    }
    if min > should.len() {
        return Ok(empty());
    }
    Ok(Box::new(BooleanQuery::with_minimum_required_clauses(
        clauses, min,
    )))
}
