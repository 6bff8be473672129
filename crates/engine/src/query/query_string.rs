//! The `query_string` / `q=` syntax (a practical subset of Lucene's classic query parser):
//! terms, `"phrases"~slop`, `field:value`, `field:(a b)`, `+`/`-`/`!`/`NOT`, `AND`/`OR`/
//! `&&`/`||`, parentheses, `^boost`, `*`/`?` wildcards, `[a TO b]`/`{a TO b}` ranges,
//! `>`/`>=`/`<`/`<=` comparisons and `_exists_:field`. Clauses combine as Lucene's
//! `addClause` does, honouring `default_operator`.

use serde_json::Value;

mod options;
pub(super) use options::parse_qs;

use super::params::boosted_field;
use super::{BoostedField, Fuzziness, MatchOpts, Msm, MultiKind, Operator, Query, RangeBounds};
use crate::error::{EngineError, EngineResult};

/// Options of a query string.
#[derive(Debug, Clone)]
pub struct QsOptions {
    /// Fields searched by terms without `field:` (empty: every text/keyword field).
    pub fields: Vec<BoostedField>,
    pub default_operator: Operator,
    pub tie_breaker: f32,
    pub msm: Option<Msm>,
    pub boost: f32,
    /// `analyzer`: the search analyzer of terms (and of phrases without `quote_analyzer`).
    pub analyzer: Option<String>,
    /// `quote_analyzer`: the search analyzer of `"phrases"`.
    pub quote_analyzer: Option<String>,
    /// `phrase_slop`: the slop of phrases without `~N`.
    pub phrase_slop: u32,
    /// `fuzziness`: the edit distance of `term~` without a number.
    pub fuzziness: Fuzziness,
    /// `lenient`: values that do not fit a field match nothing instead of failing (the
    /// engine's default when unset: lenient, as for field patterns).
    pub lenient: Option<bool>,
    /// `allow_leading_wildcard` (default true).
    pub allow_leading_wildcard: bool,
    /// `time_zone` of date range bounds given without one.
    pub time_zone: Option<String>,
    /// `fuzzy_prefix_length`, `fuzzy_max_expansions`, `fuzzy_transpositions` of `term~`.
    pub fuzzy_prefix_length: usize,
    pub fuzzy_max_expansions: usize,
    pub fuzzy_transpositions: bool,
}

impl Default for QsOptions {
    fn default() -> Self {
        QsOptions {
            fields: Vec::new(),
            default_operator: Operator::Or,
            tie_breaker: 0.0,
            msm: None,
            boost: 1.0,
            analyzer: None,
            quote_analyzer: None,
            phrase_slop: 0,
            fuzziness: Fuzziness::Auto(3, 6),
            lenient: None,
            allow_leading_wildcard: true,
            time_zone: None,
            fuzzy_prefix_length: 0,
            fuzzy_max_expansions: 50,
            fuzzy_transpositions: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    LParen,
    RParen,
    Colon,
    Plus,
    Minus,
    Not,
    And,
    Or,
    Caret(f32),
    /// `/regexp/`.
    Regex(String),
    /// `~N`, or `~` alone (None: the `fuzziness` / `phrase_slop` option).
    Tilde(Option<u32>),
    Phrase(String),
    Range {
        lo: String,
        hi: String,
        incl_lo: bool,
        incl_hi: bool,
    },
    Cmp(&'static str, String),
    /// A term; the flag says whether it holds unescaped wildcards.
    Word(String, bool),
}

fn perr(q: &str, why: &str) -> EngineError {
    EngineError::Parsing(format!("Failed to parse query [{q}]: {why}"))
}

const SPECIAL: &[char] = &['(', ')', ':', '^', '~', '"', '[', ']', '{', '}', '\\'];

/// Lucene's classic parser separates terms only at these (`_WHITESPACE` in its grammar):
/// any other character, other Unicode spaces included, is part of a term, so
/// `_index\u{b}:x` names the field `_index\u{b}` (attack18: splitting at every Unicode space
/// read `_index` there, which the edge, reading as Lucene does, had let through).
fn lucene_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{3000}')
}

fn read_word(chars: &[char], i: &mut usize) -> (String, bool) {
    let mut s = String::new();
    let mut wild = false;
    while *i < chars.len() {
        let c = chars[*i];
        if c == '\\' && *i + 1 < chars.len() {
            s.push(chars[*i + 1]);
            *i += 2;
            continue;
        }
        if lucene_space(c) || SPECIAL.contains(&c) {
            break;
        }
        wild |= c == '*' || c == '?';
        s.push(c);
        *i += 1;
    }
    (s, wild)
}

fn read_number<T: std::str::FromStr>(chars: &[char], i: &mut usize) -> Option<T> {
    let start = *i;
    while *i < chars.len() && (chars[*i].is_ascii_digit() || chars[*i] == '.') {
        *i += 1;
    }
    chars[start..*i].iter().collect::<String>().parse().ok()
}

fn read_range(q: &str, chars: &[char], i: &mut usize) -> EngineResult<Tok> {
    let incl_lo = chars[*i] == '[';
    *i += 1;
    let end = chars[*i..]
        .iter()
        .position(|&c| c == ']' || c == '}')
        .ok_or_else(|| perr(q, "unterminated range"))?;
    let inner: String = chars[*i..*i + end].iter().collect();
    let incl_hi = chars[*i + end] == ']';
    *i += end + 1;
    let parts: Vec<&str> = inner.split(" TO ").map(str::trim).collect();
    if parts.len() != 2 {
        return Err(perr(q, "a range needs the form [a TO b]"));
    }
    Ok(Tok::Range {
        lo: parts[0].into(),
        hi: parts[1].into(),
        incl_lo,
        incl_hi,
    })
}

/// One-character (or two-character) operators.
fn punct(c: char, next: Option<char>) -> Option<(Tok, usize)> {
    Some(match (c, next) {
        ('(', _) => (Tok::LParen, 1),
        (')', _) => (Tok::RParen, 1),
        (':', _) => (Tok::Colon, 1),
        ('+', _) => (Tok::Plus, 1),
        ('-', _) => (Tok::Minus, 1),
        ('!', _) => (Tok::Not, 1),
        ('&', Some('&')) => (Tok::And, 2),
        ('|', Some('|')) => (Tok::Or, 2),
        _ => return None,
    })
}

fn comparison(chars: &[char], i: &mut usize) -> Tok {
    let (c, eq) = (chars[*i], chars.get(*i + 1) == Some(&'='));
    *i += if eq { 2 } else { 1 };
    let op = match (c, eq) {
        ('>', true) => "gte",
        ('>', false) => "gt",
        ('<', true) => "lte",
        _ => "lt",
    };
    Tok::Cmp(op, read_word(chars, i).0)
}

fn word(q: &str, chars: &[char], i: &mut usize) -> EngineResult<Tok> {
    let c = chars[*i];
    let (w, wild) = read_word(chars, i);
    if w.is_empty() {
        return Err(perr(q, &format!("unexpected character '{c}'")));
    }
    Ok(match w.as_str() {
        "AND" if !wild => Tok::And,
        "OR" if !wild => Tok::Or,
        "NOT" if !wild => Tok::Not,
        _ => Tok::Word(w, wild),
    })
}

/// A `/regexp/` term (Lucene's `REGEXPTERM`: `\/` escapes a slash); unterminated is a
/// syntax error.
fn read_regex(q: &str, chars: &[char], i: &mut usize) -> EngineResult<Tok> {
    let mut re = String::new();
    let mut j = *i + 1;
    while j < chars.len() {
        match chars[j] {
            '\\' if chars.get(j + 1) == Some(&'/') => {
                re.push('/');
                j += 2;
            }
            '/' => {
                *i = j + 1;
                return Ok(Tok::Regex(re));
            }
            c => {
                re.push(c);
                j += 1;
            }
        }
    }
    Err(perr(q, "unterminated regular expression"))
}

fn lex(q: &str) -> EngineResult<Vec<Tok>> {
    let chars: Vec<char> = q.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    while i < chars.len() {
        let c = chars[i];
        if lucene_space(c) {
            i += 1;
            continue;
        }
        if let Some((tok, n)) = punct(c, chars.get(i + 1).copied()) {
            out.push(tok);
            i += n;
            continue;
        }
        out.push(match c {
            '^' => {
                i += 1;
                // Lucene's grammar wants a number after `^` (`fox^` is a syntax error)
                let b = read_number(&chars, &mut i)
                    .ok_or_else(|| perr(q, "'^' must be followed by a number"))?;
                Tok::Caret(b)
            }
            '/' => read_regex(q, &chars, &mut i)?,
            '~' => {
                i += 1;
                Tok::Tilde(read_number(&chars, &mut i))
            }
            '"' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&c| c == '"')
                    .ok_or_else(|| perr(q, "unterminated quote"))?;
                let phrase = chars[i + 1..i + 1 + end].iter().collect();
                i += end + 2;
                Tok::Phrase(phrase)
            }
            '[' | '{' => read_range(q, &chars, &mut i)?,
            '>' | '<' => comparison(&chars, &mut i),
            _ => word(q, &chars, &mut i)?,
        });
    }
    Ok(out)
}

#[derive(Clone, Copy, PartialEq)]
enum Occ {
    Must,
    Should,
    MustNot,
}

struct Parser<'a> {
    q: &'a str,
    toks: Vec<Tok>,
    pos: usize,
    opts: &'a QsOptions,
    /// Parentheses open at the current position.
    depth: usize,
}

/// The deepest nesting of parentheses read: deeper would recurse past the connection
/// thread's stack, and a stack overflow ends the whole engine, not one request (the same
/// bound as the nesting of a JSON body).
pub const MAX_NESTING: usize = 100;

/// Parses a query string into a query.
pub fn parse_query_string(q: &str, opts: &QsOptions) -> EngineResult<Query> {
    let toks = lex(q)?;
    if toks.is_empty() {
        return Ok(Query::MatchNone);
    }
    let mut p = Parser {
        q,
        toks,
        pos: 0,
        opts,
        depth: 0,
    };
    let query = p.query(None)?;
    if p.pos < p.toks.len() {
        return Err(perr(q, "unexpected ')'"));
    }
    Ok(with_boost(query, opts.boost))
}

fn with_boost(q: Query, boost: f32) -> Query {
    if boost == 1.0 {
        return q;
    }
    Query::DisMax {
        queries: vec![q],
        tie_breaker: 0.0,
        boost,
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn query(&mut self, field: Option<&str>) -> EngineResult<Query> {
        let mut clauses: Vec<(Occ, Query)> = Vec::new();
        while let Some(t) = self.peek() {
            if *t == Tok::RParen {
                break;
            }
            let conj = match t {
                Tok::And => {
                    self.pos += 1;
                    Some(Operator::And)
                }
                Tok::Or => {
                    self.pos += 1;
                    Some(Operator::Or)
                }
                _ => None,
            };
            let modifier = match self.peek() {
                Some(Tok::Plus) => {
                    self.pos += 1;
                    Some(Occ::Must)
                }
                Some(Tok::Minus) | Some(Tok::Not) => {
                    self.pos += 1;
                    Some(Occ::MustNot)
                }
                _ => None,
            };
            let q = self.clause(field)?;
            self.add_clause(&mut clauses, conj, modifier, q);
        }
        Ok(combine(clauses, self.opts.msm))
    }

    /// Lucene's `QueryParserBase.addClause`.
    fn add_clause(
        &self,
        clauses: &mut Vec<(Occ, Query)>,
        conj: Option<Operator>,
        m: Option<Occ>,
        q: Query,
    ) {
        let default_and = self.opts.default_operator == Operator::And;
        if let Some(last) = clauses.last_mut() {
            if conj == Some(Operator::And) && last.0 != Occ::MustNot {
                last.0 = Occ::Must;
            }
            if default_and && conj == Some(Operator::Or) && last.0 != Occ::MustNot {
                last.0 = Occ::Should;
            }
        }
        let prohibited = m == Some(Occ::MustNot);
        let required = if default_and {
            !prohibited && conj != Some(Operator::Or)
        } else {
            m == Some(Occ::Must) || (conj == Some(Operator::And) && !prohibited)
        };
        let occ = if prohibited {
            Occ::MustNot
        } else if required {
            Occ::Must
        } else {
            Occ::Should
        };
        clauses.push((occ, q));
    }

    fn clause(&mut self, field: Option<&str>) -> EngineResult<Query> {
        let mut field = field.map(String::from);
        if let (Some(Tok::Word(w, _)), Some(Tok::Colon)) =
            (self.peek().cloned(), self.toks.get(self.pos + 1))
        {
            self.pos += 2;
            field = Some(w);
        }
        let tok = self
            .next()
            .ok_or_else(|| perr(self.q, "unexpected end of query"))?;
        let mut q = self.atom(field.as_deref(), tok)?;
        if let Some(Tok::Caret(b)) = self.peek() {
            q = with_boost(q, *b);
            self.pos += 1;
        }
        if let Some(Tok::Tilde(n)) = self.peek() {
            let d = match n {
                Some(n) => Fuzziness::Fixed((*n).min(2) as u8),
                None => self.opts.fuzziness,
            };
            self.pos += 1;
            if let Query::MultiMatch {
                opts,
                kind: MultiKind::BestFields,
                ..
            } = &mut q
            {
                opts.fuzziness = Some(d);
                opts.prefix_length = self.opts.fuzzy_prefix_length;
                opts.max_expansions = self.opts.fuzzy_max_expansions;
                opts.transpositions = self.opts.fuzzy_transpositions;
            }
        }
        Ok(q)
    }

    fn atom(&mut self, field: Option<&str>, tok: Tok) -> EngineResult<Query> {
        Ok(match tok {
            Tok::LParen => {
                if self.depth == MAX_NESTING {
                    let why = format!("parentheses nested deeper than {MAX_NESTING} levels");
                    return Err(perr(self.q, &why));
                }
                self.depth += 1;
                let inner = self.query(field)?;
                self.depth -= 1;
                if self.next() != Some(Tok::RParen) {
                    return Err(perr(self.q, "missing ')'"));
                }
                inner
            }
            // normalized as the other multi-term forms are (lowercase)
            Tok::Regex(re) => {
                let re = re.to_lowercase();
                self.per_field(field, &|f| Query::Regexp {
                    field: f.into(),
                    value: re.clone(),
                    case_insensitive: false,
                    boost: 1.0,
                })
            }
            Tok::Phrase(text) => {
                let slop = match self.peek() {
                    Some(Tok::Tilde(s)) => {
                        let s = s.unwrap_or(self.opts.phrase_slop);
                        self.pos += 1;
                        s
                    }
                    _ => self.opts.phrase_slop,
                };
                self.phrase(field, text, slop)
            }
            Tok::Range {
                lo,
                hi,
                incl_lo,
                incl_hi,
            } => {
                let bound = |s: &str| (s != "*").then(|| Value::String(s.to_string()));
                let mut b = RangeBounds::default();
                *(if incl_lo { &mut b.gte } else { &mut b.gt }) = bound(&lo);
                *(if incl_hi { &mut b.lte } else { &mut b.lt }) = bound(&hi);
                self.range(field, b)
            }
            Tok::Cmp(op, v) => {
                let mut b = RangeBounds::default();
                let slot = match op {
                    "gt" => &mut b.gt,
                    "gte" => &mut b.gte,
                    "lt" => &mut b.lt,
                    _ => &mut b.lte,
                };
                *slot = Some(Value::String(v));
                self.range(field, b)
            }
            Tok::Word(w, wild) => self.word(field, w, wild)?,
            other => return Err(perr(self.q, &format!("unexpected token {other:?}"))),
        })
    }

    fn range(&self, field: Option<&str>, mut b: RangeBounds) -> Query {
        b.time_zone = self.opts.time_zone.clone();
        self.per_field(field, &|f| Query::Range {
            field: f.into(),
            bounds: b.clone(),
            boost: 1.0,
        })
    }

    fn fields(&self, field: Option<&str>) -> Vec<BoostedField> {
        match field {
            Some(f) => vec![boosted_field(f)],
            None if self.opts.fields.is_empty() => vec![boosted_field("*")],
            None => self.opts.fields.clone(),
        }
    }

    fn per_field(&self, field: Option<&str>, make: &dyn Fn(&str) -> Query) -> Query {
        let fields = self.fields(field);
        if fields.len() == 1 && fields[0].boost == 1.0 {
            return make(&fields[0].name);
        }
        let queries = fields
            .iter()
            .map(|f| with_boost(make(&f.name), f.boost))
            .collect();
        Query::DisMax {
            queries,
            tie_breaker: self.opts.tie_breaker,
            boost: 1.0,
        }
    }

    /// A term with `*`/`?`: `*` alone (exists / match all), a prefix, or a wildcard.
    fn wild(&self, field: Option<&str>, w: String) -> Query {
        if w == "*" {
            return match field {
                Some(f) => Query::Exists {
                    field: f.into(),
                    boost: 1.0,
                },
                None => Query::MatchAll { boost: 1.0 },
            };
        }
        let prefix = w.strip_suffix('*').filter(|p| !p.contains(['*', '?']));
        match prefix {
            Some(p) => {
                let p = p.to_lowercase();
                self.per_field(field, &|f| Query::Prefix {
                    field: f.into(),
                    value: p.clone(),
                    boost: 1.0,
                })
            }
            None => {
                let w = w.to_lowercase();
                self.per_field(field, &|f| Query::Wildcard {
                    field: f.into(),
                    value: w.clone(),
                    boost: 1.0,
                })
            }
        }
    }

    fn word(&self, field: Option<&str>, w: String, wild: bool) -> EngineResult<Query> {
        if field == Some("_exists_") {
            return Ok(Query::Exists {
                field: w,
                boost: 1.0,
            });
        }
        if wild && w != "*" && !self.opts.allow_leading_wildcard && w.starts_with(['*', '?']) {
            return Err(perr(
                self.q,
                "'*' or '?' not allowed as first character in WildcardQuery",
            ));
        }
        if wild {
            return Ok(self.wild(field, w));
        }
        let opts = MatchOpts {
            operator: self.opts.default_operator,
            lenient: self.opts.lenient.unwrap_or(true),
            analyzer: self.opts.analyzer.clone(),
            ..Default::default()
        };
        Ok(Query::MultiMatch {
            fields: self.fields(field),
            query: Value::String(w),
            kind: MultiKind::BestFields,
            tie_breaker: self.opts.tie_breaker,
            slop: 0,
            opts,
            boost: 1.0,
        })
    }

    fn phrase(&self, field: Option<&str>, text: String, slop: u32) -> Query {
        Query::MultiMatch {
            fields: self.fields(field),
            query: Value::String(text),
            kind: MultiKind::Phrase,
            tie_breaker: self.opts.tie_breaker,
            slop,
            opts: MatchOpts {
                lenient: self.opts.lenient.unwrap_or(true),
                analyzer: self
                    .opts
                    .quote_analyzer
                    .clone()
                    .or(self.opts.analyzer.clone()),
                ..Default::default()
            },
            boost: 1.0,
        }
    }
}

fn combine(clauses: Vec<(Occ, Query)>, msm: Option<Msm>) -> Query {
    if clauses.len() == 1 && clauses[0].0 != Occ::MustNot && msm.is_none() {
        return clauses.into_iter().next().expect("one clause").1;
    }
    let (mut must, mut should, mut must_not) = (vec![], vec![], vec![]);
    for (o, q) in clauses {
        match o {
            Occ::Must => must.push(q),
            Occ::Should => should.push(q),
            Occ::MustNot => must_not.push(q),
        }
    }
    Query::Bool {
        must,
        should,
        must_not,
        filter: vec![],
        msm,
        boost: 1.0,
    }
}

#[cfg(test)]
mod tests;
