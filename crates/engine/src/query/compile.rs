//! [`Query`] -> tantivy query for one index: full-text queries are analyzed with the
//! field's search analyzer and scored with BM25; term-level queries on numbers, dates and
//! booleans score a constant, as in Elasticsearch; filters score zero.

use serde_json::Value;
use tantivy::query::{
    AllQuery, BooleanQuery, DisjunctionMaxQuery, Occur, PhrasePrefixQuery, PhraseQuery,
    TermSetQuery,
};
use tantivy::Term;

use super::ctx::{boosted, empty, konst, term_q, Ctx, Q};
use super::field::{
    exists, match_field, over_fields, range, term_field, terms, too_many_clauses, MAX_CLAUSES,
};
use super::patterns::regex_field;
use super::target::{self, as_text, expand, Target};
use super::{CiKind, MatchOpts, MultiKind, Query};
use crate::error::{EngineError, EngineResult};

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
        Query::Prefix { .. }
        | Query::Wildcard { .. }
        | Query::CaseInsensitive { .. }
        | Query::Regexp { .. } => pattern_level(q, ctx)?,
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

/// `prefix`, `wildcard`, case-insensitive terms and `regexp`: regular expressions over the
/// field's terms (`patterns`).
fn pattern_level(q: &Query, ctx: &Ctx<'_>) -> EngineResult<Q> {
    Ok(match q {
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
        _ => unreachable!("only pattern queries come here"),
    })
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
