//! The query DSL: the supported Elasticsearch queries as a small AST, parsed from JSON with
//! Elasticsearch's error messages (`parse`), the Lucene-like syntax of `query_string` and
//! `q=` (`query_string`), date math (`datemath`), and the compilation of the AST into a
//! tantivy query against one index's mapping (`compile`).
//!
//! Must not touch: searchers, collectors, HTTP.

pub mod automaton;
pub mod compile;
mod ctx;
pub mod datemath;
mod field;
pub mod fuzzy;
mod more;
mod numeric;
mod params;
pub mod parse;
mod parse_more;
mod patterns;
pub mod query_string;
pub mod target;
mod watched;

use serde_json::Value;

pub use ctx::Ctx;

/// Compiles `q` for the index described by `ctx`, its documents counted as the request's
/// work (`watched`: the search stops when the request's client went away).
pub fn compile(
    q: &Query,
    ctx: &Ctx<'_>,
) -> crate::error::EngineResult<Box<dyn tantivy::query::Query>> {
    compile::compile(q, ctx).map(watched::watch)
}
pub use parse::parse_query;

/// `operator` of match queries and `default_operator` of query strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Operator {
    #[default]
    Or,
    And,
}

/// `minimum_should_match`: a count or a percentage, possibly negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Msm {
    Count(i64),
    Percent(i64),
}

impl Msm {
    /// Number of optional clauses required out of `n`.
    pub fn required(self, n: usize) -> usize {
        let n = n as i64;
        let r = match self {
            Msm::Count(c) if c < 0 => n + c,
            Msm::Count(c) => c,
            Msm::Percent(p) if p < 0 => n - (n * -p / 100),
            Msm::Percent(p) => n * p / 100,
        };
        r.clamp(0, n) as usize
    }
}

/// How `multi_match` combines its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MultiKind {
    #[default]
    BestFields,
    MostFields,
    CrossFields,
    Phrase,
    PhrasePrefix,
    /// `bool_prefix`: `match_bool_prefix` on each field.
    BoolPrefix,
}

/// A field name with a boost (`title^2`).
#[derive(Debug, Clone, PartialEq)]
pub struct BoostedField {
    pub name: String,
    pub boost: f32,
}

/// Options of a full-text match.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchOpts {
    pub operator: Operator,
    pub msm: Option<Msm>,
    /// `zero_terms_query: all`.
    pub zero_terms_all: bool,
    pub lenient: bool,
    /// `fuzziness`: edit distance per term (None: exact terms).
    pub fuzziness: Option<Fuzziness>,
    /// `analyzer`: the search analyzer named in the query, over the field's.
    pub analyzer: Option<String>,
    /// `prefix_length` of fuzzy terms (characters that must match exactly; 0).
    pub prefix_length: usize,
    /// `max_expansions`: terms a fuzzy term (or the prefix of a phrase prefix) expands to
    /// (50; at most [`fuzzy::MAX_EXPANSIONS_CAP`]).
    pub max_expansions: usize,
    /// `fuzzy_transpositions` (true: a swap of two adjacent characters is one edit).
    pub transpositions: bool,
}

impl Default for MatchOpts {
    fn default() -> Self {
        MatchOpts {
            operator: Operator::Or,
            msm: None,
            zero_terms_all: false,
            lenient: false,
            fuzziness: None,
            analyzer: None,
            prefix_length: 0,
            max_expansions: 50,
            transpositions: true,
        }
    }
}

impl MatchOpts {
    /// The fuzzy options of `term`, when `fuzziness` gives it a distance above 0.
    pub fn fuzzy(&self, term: &str) -> Option<fuzzy::FuzzyParams> {
        let distance = self.fuzziness?.distance(term);
        (distance > 0).then_some(fuzzy::FuzzyParams {
            distance,
            prefix_length: self.prefix_length,
            max_expansions: self.max_expansions,
            transpositions: self.transpositions,
        })
    }
}

/// `fuzziness`: a fixed edit distance (0-2) or `AUTO[:low,high]` (0 below `low`
/// characters, 1 below `high`, else 2; `AUTO` is `AUTO:3,6`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fuzziness {
    Fixed(u8),
    Auto(usize, usize),
}

impl Fuzziness {
    /// Parses `0`, `1`, `2`, `"AUTO"`, `"AUTO:3,6"`.
    pub fn parse(v: &Value) -> Option<Fuzziness> {
        let s = v.as_str().map_or_else(|| v.to_string(), String::from);
        let s = s.trim();
        if let Some(rest) = s.strip_prefix("AUTO").or_else(|| s.strip_prefix("auto")) {
            return match rest.strip_prefix(':') {
                None if rest.is_empty() => Some(Fuzziness::Auto(3, 6)),
                Some(r) => {
                    let (a, b) = r.split_once(',')?;
                    Some(Fuzziness::Auto(
                        a.trim().parse().ok()?,
                        b.trim().parse().ok()?,
                    ))
                }
                None => None,
            };
        }
        match s.parse::<f64>().ok()? as u8 {
            d @ 0..=2 => Some(Fuzziness::Fixed(d)),
            _ => None,
        }
    }

    /// The edit distance for a term.
    pub fn distance(self, term: &str) -> u8 {
        match self {
            Fuzziness::Fixed(d) => d,
            Fuzziness::Auto(low, high) => {
                let n = term.chars().count();
                if n < low {
                    0
                } else if n < high {
                    1
                } else {
                    2
                }
            }
        }
    }
}

/// Bounds of a range query, as given.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RangeBounds {
    pub gt: Option<Value>,
    pub gte: Option<Value>,
    pub lt: Option<Value>,
    pub lte: Option<Value>,
    pub format: Option<String>,
    /// `time_zone` of date strings given without one.
    pub time_zone: Option<String>,
    /// `relation: disjoint` (refused on every field type this engine has; `intersects`,
    /// `contains` and `within` mean the same on single values, as in Elasticsearch).
    pub disjoint: bool,
}

/// Which term-level query a case-insensitive one is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CiKind {
    Term,
    Prefix,
    Wildcard,
}

/// A parsed query (a small tree built once per request).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    /// A query with `_name`: matches as `query`; hits it matches list `name` in
    /// `matched_queries`.
    Named {
        name: String,
        query: Box<Query>,
    },
    MatchAll {
        boost: f32,
    },
    MatchNone,
    Match {
        field: String,
        query: Value,
        opts: MatchOpts,
        boost: f32,
    },
    MatchPhrase {
        field: String,
        query: String,
        slop: u32,
        prefix: bool,
        /// `analyzer` named in the query (over the field's search analyzer).
        analyzer: Option<String>,
        /// `max_expansions` of the last term (prefix form; 50).
        max_expansions: usize,
        /// `zero_terms_query: all`.
        zero_terms_all: bool,
        boost: f32,
    },
    MultiMatch {
        fields: Vec<BoostedField>,
        query: Value,
        kind: MultiKind,
        tie_breaker: f32,
        slop: u32,
        opts: MatchOpts,
        boost: f32,
    },
    Term {
        field: String,
        value: Value,
        boost: f32,
    },
    Terms {
        field: String,
        values: Vec<Value>,
        boost: f32,
    },
    Range {
        field: String,
        bounds: RangeBounds,
        boost: f32,
    },
    Exists {
        field: String,
        boost: f32,
    },
    Prefix {
        field: String,
        value: String,
        boost: f32,
    },
    Wildcard {
        field: String,
        value: String,
        boost: f32,
    },
    Ids {
        values: Vec<String>,
        boost: f32,
    },
    /// `regexp` (Lucene syntax, translated; `case_insensitive`).
    Regexp {
        field: String,
        value: String,
        case_insensitive: bool,
        boost: f32,
    },
    /// `match_bool_prefix`: analyzed terms, the last one as a prefix.
    MatchBoolPrefix {
        field: String,
        query: String,
        opts: MatchOpts,
        boost: f32,
    },
    /// `combined_fields`: the terms looked up over several text fields as one.
    CombinedFields {
        fields: Vec<BoostedField>,
        query: String,
        opts: MatchOpts,
        boost: f32,
    },
    /// `terms_set` with `minimum_should_match_field`.
    TermsSet {
        field: String,
        values: Vec<Value>,
        msm_field: String,
        boost: f32,
    },
    /// `term`, `prefix` or `wildcard` with `case_insensitive: true`.
    CaseInsensitive {
        field: String,
        kind: CiKind,
        value: Value,
        boost: f32,
    },
    Bool {
        must: Vec<Query>,
        should: Vec<Query>,
        must_not: Vec<Query>,
        filter: Vec<Query>,
        msm: Option<Msm>,
        boost: f32,
    },
    ConstantScore {
        filter: Box<Query>,
        boost: f32,
    },
    DisMax {
        queries: Vec<Query>,
        tie_breaker: f32,
        boost: f32,
    },
}

impl Query {
    /// A bool query of required clauses.
    pub fn all_of(must: Vec<Query>) -> Query {
        Query::Bool {
            must,
            should: vec![],
            must_not: vec![],
            filter: vec![],
            msm: None,
            boost: 1.0,
        }
    }
}

impl Query {
    /// The named queries in this tree (`_name`), outermost first, in document order.
    pub fn named(&self) -> Vec<(&str, &Query)> {
        let mut out = Vec::new();
        self.collect_named(&mut out);
        out
    }

    fn collect_named<'a>(&'a self, out: &mut Vec<(&'a str, &'a Query)>) {
        match self {
            Query::Named { name, query } => {
                out.push((name.as_str(), query.as_ref()));
                query.collect_named(out);
            }
            Query::Bool {
                must,
                should,
                must_not,
                filter,
                ..
            } => {
                for q in must.iter().chain(should).chain(must_not).chain(filter) {
                    q.collect_named(out);
                }
            }
            Query::DisMax { queries, .. } => queries.iter().for_each(|q| q.collect_named(out)),
            Query::ConstantScore { filter, .. } => filter.collect_named(out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 25: a `bool` of 1024 clauses compiles, 1025 is Lucene's `too_many_clauses` as
    /// a 400 (so also a query string of that many terms); a `terms` query of 65,536 values
    /// compiles, one more is refused naming `index.max_terms_count`.
    #[test]
    fn clauses_and_terms_are_bounded() {
        use crate::mapping::Mapping;
        use crate::store::schema;
        let (mapping, fields) = (
            Mapping::default(),
            schema::fields(&schema::build_schema()).unwrap(),
        );
        let ctx = Ctx {
            mapping: &mapping,
            fields: &fields,
            index_name: "i",
            now_ms: 0,
        };
        let should = |n: usize| Query::Bool {
            must: vec![],
            should: (0..n).map(|_| Query::MatchAll { boost: 1.0 }).collect(),
            must_not: vec![],
            filter: vec![],
            msm: None,
            boost: 1.0,
        };
        assert!(compile(&should(field::MAX_CLAUSES), &ctx).is_ok());
        let e = compile(&should(field::MAX_CLAUSES + 1), &ctx)
            .err()
            .unwrap()
            .body();
        assert_eq!(e.status, 400);
        assert_eq!(
            e.caused_by.unwrap(),
            (
                "too_many_clauses".into(),
                "maxClauseCount is set to 1024".into()
            )
        );
        let words: Vec<String> = (0..=field::MAX_CLAUSES).map(|i| format!("w{i}")).collect();
        let qs = query_string::parse_query_string(&words.join(" "), &Default::default()).unwrap();
        assert_eq!(compile(&qs, &ctx).err().unwrap().status(), 400);
        let terms = |n: usize| {
            parse_query(&serde_json::json!({"terms": {"k": (0..n).collect::<Vec<_>>()}})).unwrap()
        };
        assert!(compile(&terms(field::MAX_TERMS), &ctx).is_ok());
        let e = compile(&terms(field::MAX_TERMS + 1), &ctx)
            .err()
            .unwrap()
            .body();
        assert_eq!(e.status, 400);
        assert!(e.reason.contains("[index.max_terms_count]"), "{}", e.reason);
    }

    #[test]
    fn minimum_should_match_forms() {
        assert_eq!(Msm::Count(2).required(5), 2);
        assert_eq!(Msm::Count(-1).required(5), 4);
        assert_eq!(Msm::Percent(75).required(4), 3);
        assert_eq!(Msm::Percent(-25).required(4), 3);
        assert_eq!(Msm::Count(9).required(3), 3);
        assert_eq!(Msm::Percent(50).required(3), 1);
    }
}
