//! `highlight`: the request (global and per-field options: `pre_tags`, `post_tags`,
//! `fragment_size`, `number_of_fragments`, `require_field_match`, `no_match_size`, `order`,
//! `encoder`) and the fragments of one hit.
//!
//! Fragments come from the hit's `_source`: each value of a highlighted field is analyzed
//! again with the field's analyzer (offsets kept), the tokens the query matches are wrapped
//! in the tags, and the text is cut into passages as Elasticsearch's default (unified)
//! highlighter does: sentences, a sentence longer than `fragment_size` cut at the first word
//! boundary after it, best-scoring passages (most matches) first chosen, then returned in
//! text order (or by score with `order: score`). `number_of_fragments: 0` returns each
//! whole value. Keyword fields are highlighted whole when their value matches.
//!
//! Must not touch: searching (the hits are given), HTTP.

use serde_json::{Map, Value};

use super::super::query::target::tokens;
use super::super::query::{MultiKind, Query};
use crate::error::{EngineError, EngineResult};
use crate::mapping::{Analyzer, LeafKind, Mapping};
use crate::names::wildcard_match;

/// Options that the request's top level and each field can set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Opts {
    pub pre_tags: Option<Vec<String>>,
    pub post_tags: Option<Vec<String>>,
    pub fragment_size: Option<usize>,
    pub number_of_fragments: Option<usize>,
    pub require_field_match: Option<bool>,
    pub no_match_size: Option<usize>,
    pub order_by_score: Option<bool>,
    pub html: Option<bool>,
}

/// A parsed `highlight`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Highlight {
    pub global: Opts,
    /// Field name or pattern, with its own options.
    pub fields: Vec<(String, Opts)>,
}

fn perr(msg: String) -> EngineError {
    EngineError::Parsing(msg)
}

fn tags(v: &Value, k: &str) -> EngineResult<Vec<String>> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().map(String::from))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| perr(format!("[highlight] [{k}] must be strings"))),
        _ => Err(perr(format!("[highlight] [{k}] must be strings"))),
    }
}

fn size(v: &Value, k: &str) -> EngineResult<usize> {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .map(|n| n as usize)
        .ok_or_else(|| perr(format!("[highlight] failed to parse field [{k}]")))
}

/// Options accepted and without effect on this highlighter's output.
const NEUTRAL: &[&str] = &[
    "type",
    "fragmenter",
    "boundary_scanner",
    "boundary_chars",
    "boundary_max_scan",
    "boundary_scanner_locale",
    "phrase_limit",
    "highlight_filter",
    "max_analyzed_offset",
    "force_source",
    "fragment_offset",
];

impl Opts {
    fn set(&mut self, k: &str, v: &Value) -> EngineResult<()> {
        match k {
            "pre_tags" => self.pre_tags = Some(tags(v, k)?),
            "post_tags" => self.post_tags = Some(tags(v, k)?),
            "fragment_size" => self.fragment_size = Some(size(v, k)?),
            "number_of_fragments" => self.number_of_fragments = Some(size(v, k)?),
            "no_match_size" => self.no_match_size = Some(size(v, k)?),
            "require_field_match" => {
                self.require_field_match = Some(v.as_bool().ok_or_else(|| {
                    perr(format!(
                        "[highlight] failed to parse field [{k}]: not a boolean"
                    ))
                })?)
            }
            "order" => self.order_by_score = Some(v.as_str() == Some("score")),
            "encoder" => self.html = Some(v.as_str() == Some("html")),
            "tags_schema" if v.as_str() == Some("styled") => {
                self.pre_tags = Some((1..=10).map(|i| format!("<em class=\"hlt{i}\">")).collect());
                self.post_tags = Some(vec!["</em>".into()]);
            }
            k if NEUTRAL.contains(&k) => {}
            "highlight_query" | "matched_fields" => {
                return Err(EngineError::IllegalArgument(format!(
                    "[highlight] [{k}] is not supported by this engine"
                )))
            }
            other => return Err(perr(format!("[highlight] unknown field [{other}]"))),
        }
        Ok(())
    }

    /// These options over `base`.
    fn over(&self, base: &Opts) -> Opts {
        Opts {
            pre_tags: self.pre_tags.clone().or_else(|| base.pre_tags.clone()),
            post_tags: self.post_tags.clone().or_else(|| base.post_tags.clone()),
            fragment_size: self.fragment_size.or(base.fragment_size),
            number_of_fragments: self.number_of_fragments.or(base.number_of_fragments),
            require_field_match: self.require_field_match.or(base.require_field_match),
            no_match_size: self.no_match_size.or(base.no_match_size),
            order_by_score: self.order_by_score.or(base.order_by_score),
            html: self.html.or(base.html),
        }
    }
}

fn field_entries(v: &Value) -> EngineResult<Vec<(String, Opts)>> {
    let mut out = Vec::new();
    let mut add = |name: &String, o: &Value| -> EngineResult<()> {
        let mut opts = Opts::default();
        for (k, v) in o
            .as_object()
            .ok_or_else(|| perr(format!("[highlight] field [{name}] must be an object")))?
        {
            opts.set(k, v)?;
        }
        out.push((name.clone(), opts));
        Ok(())
    };
    match v {
        Value::Object(m) => m.iter().try_for_each(|(n, o)| add(n, o))?,
        Value::Array(a) => {
            for item in a {
                let m = item.as_object().filter(|m| m.len() == 1).ok_or_else(|| {
                    perr("[highlight] [fields] entries must be objects of one field".into())
                })?;
                m.iter().try_for_each(|(n, o)| add(n, o))?;
            }
        }
        _ => {
            return Err(perr(
                "[highlight] [fields] must be an object or an array".into(),
            ))
        }
    }
    Ok(out)
}

impl Highlight {
    /// Parses the body's `highlight`.
    pub fn parse(v: &Value) -> EngineResult<Highlight> {
        let obj = v
            .as_object()
            .ok_or_else(|| perr("[highlight] must be an object".into()))?;
        let mut h = Highlight::default();
        for (k, v) in obj {
            match k.as_str() {
                "fields" => h.fields = field_entries(v)?,
                other => h.global.set(other, v)?,
            }
        }
        if h.fields.is_empty() {
            return Err(perr("[highlight] requires [fields]".into()));
        }
        Ok(h)
    }
}

/// What the query looks for, per field.
#[derive(Debug, Clone, PartialEq)]
enum Want {
    Term(String),
    Prefix(String),
    Pattern(String),
}

/// (field or field pattern, what it wants) of every positive clause of `q`.
fn wanted(q: &Query, m: &Mapping, out: &mut Vec<(String, Want)>) {
    let mut text = |field: &str, s: &str, last_prefix: bool| {
        let an = m
            .field(field)
            .map_or(Analyzer::Standard, |f| f.search_analyzer.clone());
        let toks = tokens(&an, s);
        for (i, (_, t)) in toks.iter().enumerate() {
            let w = if last_prefix && i + 1 == toks.len() {
                Want::Prefix(t.clone())
            } else {
                Want::Term(t.clone())
            };
            out.push((field.to_string(), w));
        }
    };
    let as_text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), String::from);
    match q {
        Query::Match { field, query, .. } => text(field, &as_text(query), false),
        Query::MatchPhrase {
            field,
            query,
            prefix,
            ..
        } => text(field, query, *prefix),
        Query::MatchBoolPrefix { field, query, .. } => text(field, query, true),
        Query::MultiMatch {
            fields,
            query,
            kind,
            ..
        } => {
            let names: Vec<&str> = if fields.is_empty() {
                vec!["*"]
            } else {
                fields.iter().map(|f| f.name.as_str()).collect()
            };
            for f in names {
                text(f, &as_text(query), *kind == MultiKind::PhrasePrefix);
            }
        }
        Query::CombinedFields { fields, query, .. } => {
            for f in fields {
                text(&f.name, query, false);
            }
        }
        Query::Term { field, value, .. } => out.push((field.clone(), Want::Term(as_text(value)))),
        Query::Terms { field, values, .. } | Query::TermsSet { field, values, .. } => {
            for v in values {
                out.push((field.clone(), Want::Term(as_text(v))));
            }
        }
        Query::Prefix { field, value, .. } => {
            out.push((field.clone(), Want::Prefix(value.clone())))
        }
        Query::Wildcard { field, value, .. } => {
            out.push((field.clone(), Want::Pattern(value.clone())))
        }
        Query::Bool {
            must,
            should,
            filter,
            ..
        } => {
            for c in must.iter().chain(should).chain(filter) {
                wanted(c, m, out);
            }
        }
        Query::ConstantScore { filter, .. } => wanted(filter, m, out),
        Query::DisMax { queries, .. } => queries.iter().for_each(|c| wanted(c, m, out)),
        Query::Named { query, .. } => wanted(query, m, out),
        _ => {}
    }
}

fn want_matches(w: &Want, token: &str) -> bool {
    match w {
        Want::Term(t) => t == token,
        Want::Prefix(p) => token.starts_with(p.as_str()),
        Want::Pattern(p) => {
            // `?` as one character: map it to `*`-free comparison by length-aware matching
            if p.contains('?') {
                let re = super::super::query::target::wildcard_regex(p);
                regex_full_match(&re, token)
            } else {
                wildcard_match(p, token)
            }
        }
    }
}

fn regex_full_match(re: &str, s: &str) -> bool {
    tantivy_fst::Regex::new(re).is_ok_and(|r| {
        use tantivy_fst::Automaton;
        let mut st = r.start();
        for b in s.bytes() {
            st = r.accept(&st, b);
            if !r.can_match(&st) {
                return false;
            }
        }
        r.is_match(&st)
    })
}

/// The string values of `path` in a source (dotted paths through objects and arrays).
fn values_at<'a>(src: &'a Map<String, Value>, path: &str, out: &mut Vec<&'a str>) {
    fn walk<'a>(v: &'a Value, rest: &str, out: &mut Vec<&'a str>) {
        match v {
            Value::Array(a) => a.iter().for_each(|x| walk(x, rest, out)),
            Value::String(s) if rest.is_empty() => out.push(s),
            Value::Object(o) if !rest.is_empty() => walk_obj(o, rest, out),
            _ => {}
        }
    }
    fn walk_obj<'a>(o: &'a Map<String, Value>, rest: &str, out: &mut Vec<&'a str>) {
        for (k, x) in o {
            if rest == k {
                walk(x, "", out);
            } else if let Some(r) = rest
                .strip_prefix(k.as_str())
                .and_then(|r| r.strip_prefix('.'))
            {
                walk(x, r, out);
            }
        }
    }
    walk_obj(src, path, out);
}

/// One highlighted passage: its text with tags and how many matches it holds.
struct Passage {
    text: String,
    matches: usize,
}

fn escape_html(s: &str, html: bool) -> String {
    if !html {
        return s.to_string();
    }
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
}

/// Byte ranges of sentences, each at most about `size` bytes (cut at a word boundary).
fn passages_of(text: &str, size: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let end_of_sentence = matches!(bytes[i], b'.' | b'!' | b'?')
            && bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace());
        let too_long = i - start >= size.max(1) && bytes[i].is_ascii_whitespace();
        if end_of_sentence || bytes[i] == b'\n' || too_long {
            let end = if too_long { i } else { i + 1 };
            out.push((start, end));
            start = end;
        }
        i += 1;
    }
    if start < bytes.len() {
        out.push((start, bytes.len()));
    }
    out
}

/// The highlighted fragments of one value.
fn fragments_of(text: &str, hits: &[(usize, usize)], o: &Resolved) -> Vec<Passage> {
    let mark = |from: usize, to: usize| -> (String, usize) {
        let mut s = String::new();
        let mut pos = from;
        let mut n = 0;
        for &(a, b) in hits.iter().filter(|(a, b)| *a >= from && *b <= to) {
            s.push_str(&escape_html(&text[pos..a], o.html));
            s.push_str(&o.pre);
            s.push_str(&escape_html(&text[a..b], o.html));
            s.push_str(&o.post);
            pos = b;
            n += 1;
        }
        s.push_str(&escape_html(&text[pos..to], o.html));
        (s, n)
    };
    if o.count == 0 {
        let (t, n) = mark(0, text.len());
        return vec![Passage {
            text: t,
            matches: n,
        }];
    }
    passages_of(text, o.size)
        .into_iter()
        .filter_map(|(a, b)| {
            let (t, n) = mark(a, b);
            (n > 0).then(|| Passage {
                text: t.trim().to_string(),
                matches: n,
            })
        })
        .collect()
}

/// Options with their defaults applied.
struct Resolved {
    pre: String,
    post: String,
    size: usize,
    count: usize,
    require_field_match: bool,
    no_match_size: usize,
    by_score: bool,
    html: bool,
}

fn resolve(o: &Opts) -> Resolved {
    let first = |v: &Option<Vec<String>>, d: &str| {
        v.as_ref()
            .and_then(|t| t.first().cloned())
            .unwrap_or_else(|| d.to_string())
    };
    Resolved {
        pre: first(&o.pre_tags, "<em>"),
        post: first(&o.post_tags, "</em>"),
        size: o.fragment_size.unwrap_or(100),
        count: o.number_of_fragments.unwrap_or(5),
        require_field_match: o.require_field_match.unwrap_or(true),
        no_match_size: o.no_match_size.unwrap_or(0),
        by_score: o.order_by_score.unwrap_or(false),
        html: o.html.unwrap_or(false),
    }
}

/// Match spans of the wanted terms in one value of `field`.
fn spans(value: &str, field_kind: LeafKind, an: &Analyzer, wants: &[&Want]) -> Vec<(usize, usize)> {
    if field_kind != LeafKind::Text {
        return if wants.iter().any(|w| want_matches(w, value)) {
            vec![(0, value.len())]
        } else {
            vec![]
        };
    }
    // offsets must point into the value itself: char filters (which change the text) are
    // left out when highlighting
    let unfiltered;
    let an = match an.chain() {
        Some(c) if !c.char_filters.is_empty() => {
            unfiltered = Analyzer::Custom(std::sync::Arc::new(crate::analysis::Chain {
                char_filters: vec![],
                ..c.clone()
            }));
            &unfiltered
        }
        _ => an,
    };
    let mut a = crate::store::schema::analyzer(an);
    let mut out = Vec::new();
    a.token_stream(value).process(&mut |t| {
        if wants.iter().any(|w| want_matches(w, &t.text)) {
            out.push((t.offset_from, t.offset_to));
        }
    });
    out
}

fn no_match(value: &str, n: usize) -> String {
    if value.len() <= n {
        return value.to_string();
    }
    let cut = value[..n].rfind(char::is_whitespace).unwrap_or_else(|| {
        (0..=n)
            .rev()
            .find(|&i| value.is_char_boundary(i))
            .unwrap_or(0)
    });
    value[..cut].to_string()
}

/// The `highlight` object of one hit (None when no field has a fragment).
pub fn highlight_hit(
    h: &Highlight,
    query: &Query,
    mapping: &Mapping,
    source: &Map<String, Value>,
) -> Option<Value> {
    let mut wants = Vec::new();
    wanted(query, mapping, &mut wants);
    let mut out = Map::new();
    for (pattern, fopts) in &h.fields {
        let o = resolve(&fopts.over(&h.global));
        let names: Vec<String> = if pattern.contains('*') {
            mapping
                .fields()
                .into_iter()
                .filter(|(p, f)| {
                    wildcard_match(pattern, p)
                        && matches!(f.kind, LeafKind::Text | LeafKind::Keyword)
                })
                .map(|(p, _)| p.to_string())
                .collect()
        } else {
            vec![pattern.clone()]
        };
        for name in names {
            if let Some(frags) = field_fragments(&name, &o, &wants, mapping, source) {
                out.insert(
                    name,
                    Value::Array(frags.into_iter().map(Value::String).collect()),
                );
            }
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

fn field_fragments(
    name: &str,
    o: &Resolved,
    wants: &[(String, Want)],
    mapping: &Mapping,
    source: &Map<String, Value>,
) -> Option<Vec<String>> {
    let info = mapping.field(name)?;
    let mine: Vec<&Want> = wants
        .iter()
        .filter(|(f, _)| {
            !o.require_field_match || f == name || (f.contains('*') && wildcard_match(f, name))
        })
        .map(|(_, w)| w)
        .collect();
    let mut values = Vec::new();
    values_at(source, name, &mut values);
    if values.is_empty() {
        if let Some((parent, _)) = name.rsplit_once('.') {
            values_at(source, parent, &mut values);
        }
    }
    let mut passages = Vec::new();
    for v in &values {
        let s = spans(v, info.kind, &info.analyzer, &mine);
        if !s.is_empty() {
            passages.extend(fragments_of(v, &s, o));
        }
    }
    if passages.is_empty() {
        let first = values.first().filter(|_| o.no_match_size > 0)?;
        return Some(vec![escape_html(&no_match(first, o.no_match_size), o.html)]);
    }
    if o.count > 0 {
        let mut idx: Vec<usize> = (0..passages.len()).collect();
        idx.sort_by(|&a, &b| {
            passages[b]
                .matches
                .cmp(&passages[a].matches)
                .then(a.cmp(&b))
        });
        idx.truncate(o.count);
        if !o.by_score {
            idx.sort_unstable();
        }
        return Some(
            idx.into_iter()
                .map(|i| std::mem::take(&mut passages[i].text))
                .collect(),
        );
    }
    Some(passages.into_iter().map(|p| p.text).collect())
}

#[cfg(test)]
#[path = "highlight_tests.rs"]
mod tests;
