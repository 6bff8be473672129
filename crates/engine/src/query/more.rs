//! `match_bool_prefix`, `combined_fields` and `terms_set` compiled for one index.
//!
//! `combined_fields` looks each analyzed term up in every field (with the field boosts) and
//! keeps the best field's score per term; Elasticsearch scores the fields as one (BM25F),
//! so scores differ while the matching documents are the same. `terms_set` with
//! `minimum_should_match_field` is the union, over k = 1..n, of "at least k of the terms"
//! and "the field is at most k", which is cheap for the few terms such queries carry.

use tantivy::query::{BooleanQuery, DisjunctionMaxQuery, Occur};

use super::ctx::{boosted, empty, konst, term_q, Ctx, Q};
use super::field::{combine_terms, match_field, over_fields, range, term_field};
use super::fuzzy::FuzzyQuery;
use super::patterns::regex_on;
use super::target::{self, expand, Target};
use super::{MatchOpts, Query, RangeBounds};
use crate::error::EngineResult;

/// Compiles the queries of this module.
pub(super) fn compile_more(q: &Query, ctx: &Ctx<'_>) -> EngineResult<Q> {
    match q {
        Query::MatchBoolPrefix {
            field,
            query,
            opts,
            boost,
        } => {
            let per = |f: &str| bool_prefix_field(ctx, f, query, opts);
            Ok(boosted(
                over_fields(ctx, field, opts.lenient, &per)?,
                *boost,
            ))
        }
        Query::CombinedFields {
            fields,
            query,
            opts,
            boost,
        } => Ok(boosted(combined(ctx, fields, query, opts)?, *boost)),
        Query::TermsSet {
            field,
            values,
            msm_field,
            boost,
        } => Ok(boosted(terms_set(ctx, field, values, msm_field)?, *boost)),
        _ => unreachable!("only the queries of this module come here"),
    }
}

/// `match_bool_prefix` on one field: every term but the last as `match` has it (fuzzy with
/// `fuzziness`), the last as a prefix.
pub(super) fn bool_prefix_field(
    ctx: &Ctx<'_>,
    f: &str,
    query: &str,
    opts: &MatchOpts,
) -> EngineResult<Q> {
    let Target::Text {
        field,
        path,
        analyzer,
    } = target::target(ctx, f)?
    else {
        return match_field(ctx, f, &serde_json::Value::String(query.into()), opts);
    };
    let an = target::query_analyzer(
        ctx,
        opts.analyzer.as_deref(),
        &analyzer,
        "match_bool_prefix",
    )?;
    let toks = target::tokens(&an, query);
    let mut clauses: Vec<Q> = Vec::with_capacity(toks.len());
    for (i, (_, t)) in toks.iter().enumerate() {
        if i + 1 == toks.len() {
            let re = format!("{}.*", target::regex_escape(t));
            clauses.push(regex_on(field, path.as_deref(), &re, t)?);
        } else if let Some(p) = opts.fuzzy(t) {
            let base = target::text_term(field, path.as_deref(), "");
            clauses.push(Box::new(FuzzyQuery::new(base, t, p)));
        } else {
            clauses.push(term_q(target::text_term(field, path.as_deref(), t)));
        }
    }
    Ok(combine_terms(clauses, opts))
}

fn combined(
    ctx: &Ctx<'_>,
    fields: &[super::BoostedField],
    query: &str,
    opts: &MatchOpts,
) -> EngineResult<Q> {
    let mut targets = Vec::new();
    for bf in fields {
        for f in expand(ctx, &bf.name) {
            if let Target::Text {
                field,
                path,
                analyzer,
            } = target::target(ctx, &f)?
            {
                targets.push((field, path, analyzer, bf.boost));
            }
        }
    }
    let Some(first) = targets.first() else {
        return Ok(empty());
    };
    let an = target::query_analyzer(ctx, opts.analyzer.as_deref(), &first.2, "combined_fields")?;
    let toks = target::tokens(&an, query);
    let per_term: Vec<Q> = toks
        .iter()
        .map(|(_, t)| {
            let alts: Vec<Q> = targets
                .iter()
                .map(|(field, path, _, b)| {
                    boosted(term_q(target::text_term(*field, path.as_deref(), t)), *b)
                })
                .collect();
            Box::new(DisjunctionMaxQuery::new(alts)) as Q
        })
        .collect();
    Ok(combine_terms(per_term, opts))
}

/// `multi_match` of type `cross_fields`: text fields grouped by search analyzer, each group
/// matched as one field (terms looked up in every field of the group, as `combined_fields`),
/// other fields one by one; the best group scores (with `tie_breaker`), as Elasticsearch
/// groups them. Scores approximate Elasticsearch's blended term statistics.
pub(super) fn cross_fields(
    ctx: &Ctx<'_>,
    names: &[(String, f32)],
    query: &str,
    tie: f32,
    opts: &MatchOpts,
) -> EngineResult<Q> {
    let mut groups: Vec<(crate::mapping::Analyzer, Vec<super::BoostedField>)> = Vec::new();
    let mut alts: Vec<Q> = Vec::new();
    for (f, b) in names {
        let bf = super::BoostedField {
            name: f.clone(),
            boost: *b,
        };
        match target::target(ctx, f) {
            Ok(Target::Text { analyzer, .. }) => {
                match groups.iter_mut().find(|(a, _)| *a == analyzer) {
                    Some((_, g)) => g.push(bf),
                    None => groups.push((analyzer, vec![bf])),
                }
            }
            Ok(_) => match match_field(ctx, f, &serde_json::Value::String(query.into()), opts) {
                Ok(q) => alts.push(boosted(q, *b)),
                Err(_) if opts.lenient => {}
                Err(e) => return Err(e),
            },
            Err(_) if opts.lenient => {}
            Err(e) => return Err(e),
        }
    }
    for (_, g) in groups {
        alts.push(combined(ctx, &g, query, opts)?);
    }
    Ok(match alts.len() {
        0 => empty(),
        1 => alts.pop().expect("one"),
        _ => Box::new(DisjunctionMaxQuery::with_tie_breaker(alts, tie)),
    })
}

fn terms_set(
    ctx: &Ctx<'_>,
    field: &str,
    values: &[serde_json::Value],
    msm_field: &str,
) -> EngineResult<Q> {
    let n = values.len();
    let mut union: Vec<(Occur, Q)> = Vec::with_capacity(n);
    for k in 1..=n {
        let terms = values
            .iter()
            .map(|v| Ok((Occur::Should, term_field(ctx, field, v)?)))
            .collect::<EngineResult<Vec<_>>>()?;
        let at_least = BooleanQuery::with_minimum_required_clauses(terms, k);
        let bound = RangeBounds {
            lte: Some(serde_json::Value::from(k as u64)),
            ..Default::default()
        };
        let both: Vec<(Occur, Q)> = vec![
            (Occur::Must, Box::new(at_least)),
            (Occur::Must, konst(range(ctx, msm_field, &bound)?, 0.0)),
        ];
        union.push((Occur::Should, Box::new(BooleanQuery::new(both))));
    }
    Ok(konst(Box::new(BooleanQuery::new(union)), 1.0))
}
