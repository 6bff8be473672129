//! `index.analysis.*` settings -> [`Analysis`]: components defined under `analysis.analyzer`,
//! `normalizer`, `tokenizer`, `filter` and `char_filter`, resolved against each other and
//! the built-in names, with Elasticsearch 7.10's messages. A type, option or component the
//! engine does not implement is a 400 naming it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use super::chain::{Chain, CharFilter, TokenFilter, Tokenizer, ENGLISH_STOP_WORDS};
use super::{builtin_analyzer, Analysis, Analyzer, Missing};
use crate::error::{EngineError, EngineResult};

const PREFIX: &str = "index.analysis.";

type Group = BTreeMap<String, BTreeMap<String, Value>>;

/// The analysis registry of an index from its flattened settings.
pub fn from_settings(flat: &BTreeMap<String, Value>) -> EngineResult<Analysis> {
    let mut groups: BTreeMap<&str, Group> = BTreeMap::new();
    for (key, v) in flat {
        let Some(rest) = key.strip_prefix(PREFIX) else {
            continue;
        };
        let mut parts = rest.splitn(3, '.');
        let (Some(component), Some(name), Some(opt)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(unknown_setting(key));
        };
        let component = match component {
            "analyzer" | "normalizer" | "tokenizer" | "filter" | "char_filter" => component,
            _ => return Err(unknown_setting(key)),
        };
        groups
            .entry(component)
            .or_default()
            .entry(name.to_string())
            .or_default()
            .insert(opt.to_string(), v.clone());
    }
    let empty = Group::new();
    let get = |c: &str| groups.get(c).unwrap_or(&empty);
    let comps = Components {
        tokenizers: get("tokenizer"),
        filters: get("filter"),
        char_filters: get("char_filter"),
    };
    let mut out = Analysis::default();
    for (name, opts) in get("analyzer") {
        out.analyzers
            .insert(name.clone(), analyzer(name, opts, &comps)?);
    }
    for (name, opts) in get("normalizer") {
        out.normalizers
            .insert(name.clone(), Arc::new(normalizer(name, opts, &comps)?));
    }
    // a defined component nobody uses is still checked, as Elasticsearch builds them all
    for name in comps.tokenizers.keys() {
        comps.tokenizer(name)?;
    }
    for name in comps.filters.keys() {
        comps.filter(name)?;
    }
    for name in comps.char_filters.keys() {
        comps.char_filter(name)?;
    }
    Ok(out)
}

fn unknown_setting(key: &str) -> EngineError {
    EngineError::IllegalArgument(format!(
        "unknown setting [{key}] please check that any required plugins are installed, or check the breaking changes documentation for removed settings"
    ))
}

fn unsupported(what: &str, name: &str) -> EngineError {
    EngineError::IllegalArgument(format!("{what} [{name}] is not supported by this engine"))
}

/// A setting's value as a list of strings (an array, or a comma-separated string).
fn list(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        Value::String(s) if s.starts_with('[') => {
            serde_json::from_str::<Vec<String>>(s).unwrap_or_else(|_| vec![s.clone()])
        }
        Value::String(s) => s
            .split(',')
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect(),
        Value::Null => vec![],
        other => vec![other.to_string()],
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn number(key: &str, name: &str, v: &Value) -> EngineResult<usize> {
    text(v).parse().map_err(|_| {
        EngineError::IllegalArgument(format!(
            "Failed to parse value [{}] for setting [{key}] of [{name}]",
            text(v)
        ))
    })
}

fn flag(key: &str, v: &Value) -> EngineResult<bool> {
    match text(v).as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(EngineError::IllegalArgument(format!(
            "Failed to parse value [{other}] as only [true] or [false] are allowed for [{key}]"
        ))),
    }
}

/// Only the listed options (and `type`) of a component; any other is refused by name.
fn check_opts(
    what: &str,
    name: &str,
    opts: &BTreeMap<String, Value>,
    allowed: &[&str],
) -> EngineResult<()> {
    for k in opts.keys() {
        if k != "type" && !allowed.contains(&k.as_str()) {
            return Err(EngineError::IllegalArgument(format!(
                "[{k}] of {what} [{name}] is not supported by this engine"
            )));
        }
    }
    Ok(())
}

struct Components<'a> {
    tokenizers: &'a Group,
    filters: &'a Group,
    char_filters: &'a Group,
}

impl Components<'_> {
    fn tokenizer(&self, name: &str) -> EngineResult<Option<Tokenizer>> {
        match self.tokenizers.get(name) {
            Some(opts) => {
                let ty = opts.get("type").map(text).ok_or_else(|| {
                    EngineError::IllegalArgument(format!(
                        "tokenizer [{name}] must specify either an analyzer type, or a tokenizer"
                    ))
                })?;
                configured_tokenizer(name, &ty, opts).map(Some)
            }
            None => builtin_tokenizer(name),
        }
    }

    fn filter(&self, name: &str) -> EngineResult<Option<TokenFilter>> {
        match self.filters.get(name) {
            Some(opts) => {
                let ty = opts.get("type").map(text).ok_or_else(|| {
                    EngineError::IllegalArgument(format!(
                        "token filter [{name}] must specify either an analyzer type, or a tokenizer"
                    ))
                })?;
                configured_filter(name, &ty, opts).map(Some)
            }
            None => builtin_filter(name),
        }
    }

    fn char_filter(&self, name: &str) -> EngineResult<Option<CharFilter>> {
        match self.char_filters.get(name) {
            Some(opts) => {
                let ty = opts.get("type").map(text).ok_or_else(|| {
                    EngineError::IllegalArgument(format!(
                        "char filter [{name}] must specify either an analyzer type, or a tokenizer"
                    ))
                })?;
                configured_char_filter(name, &ty, opts).map(Some)
            }
            None => builtin_char_filter(name),
        }
    }

    /// The char filters and filters a custom analyzer or normalizer lists.
    fn lists(
        &self,
        owner: &str,
        opts: &BTreeMap<String, Value>,
    ) -> EngineResult<(Vec<CharFilter>, Vec<TokenFilter>)> {
        let mut cfs = Vec::new();
        for n in opts.get("char_filter").map(list).unwrap_or_default() {
            cfs.push(self.char_filter(&n)?.ok_or_else(|| {
                EngineError::IllegalArgument(format!(
                    "{owner} failed to find char_filter under name [{n}]"
                ))
            })?);
        }
        let mut fs = Vec::new();
        for n in opts.get("filter").map(list).unwrap_or_default() {
            fs.push(self.filter(&n)?.ok_or_else(|| {
                EngineError::IllegalArgument(format!(
                    "{owner} failed to find filter under name [{n}]"
                ))
            })?);
        }
        Ok((cfs, fs))
    }
}

fn analyzer(
    name: &str,
    opts: &BTreeMap<String, Value>,
    comps: &Components<'_>,
) -> EngineResult<Analyzer> {
    let ty = match (opts.get("type").map(text), opts.get("tokenizer")) {
        (Some(t), _) => t,
        (None, Some(_)) => "custom".to_string(),
        (None, None) => {
            return Err(EngineError::IllegalArgument(format!(
                "analyzer [{name}] must specify either an analyzer type, or a tokenizer"
            )))
        }
    };
    if let Some(v) = opts.get("position_increment_gap") {
        if number("position_increment_gap", name, v)? != 100 {
            return Err(unsupported(
                "[position_increment_gap] other than 100 of analyzer",
                name,
            ));
        }
    }
    let chain = |tokenizer, char_filters, filters| {
        Analyzer::Custom(Arc::new(Chain {
            name: name.to_string(),
            char_filters,
            tokenizer,
            filters,
        }))
    };
    match ty.as_str() {
        "custom" => {
            check_opts(
                "analyzer",
                name,
                opts,
                &[
                    "tokenizer",
                    "filter",
                    "char_filter",
                    "position_increment_gap",
                ],
            )?;
            let owner = format!("Custom Analyzer [{name}]");
            let tname = opts.get("tokenizer").map(text).ok_or_else(|| {
                EngineError::IllegalArgument(format!("{owner} must be configured with a tokenizer"))
            })?;
            let tokenizer = comps.tokenizer(&tname)?.ok_or_else(|| {
                EngineError::IllegalArgument(format!(
                    "{owner} failed to find tokenizer under name [{tname}]"
                ))
            })?;
            let (cfs, fs) = comps.lists(&owner, opts)?;
            Ok(chain(tokenizer, cfs, fs))
        }
        "standard" | "stop" => {
            check_opts(
                "analyzer",
                name,
                opts,
                &["stopwords", "max_token_length", "position_increment_gap"],
            )?;
            if let Some(v) = opts.get("max_token_length") {
                if number("max_token_length", name, v)? != 255 {
                    return Err(unsupported(
                        "[max_token_length] other than 255 of analyzer",
                        name,
                    ));
                }
            }
            let default_stop = if ty == "stop" { "_english_" } else { "_none_" };
            let words = opts
                .get("stopwords")
                .map(list)
                .unwrap_or_else(|| vec![default_stop.to_string()]);
            let mut filters = vec![TokenFilter::Lowercase];
            let stop = stop_words(name, &words)?;
            if !stop.is_empty() {
                filters.push(TokenFilter::Stop {
                    words: stop,
                    ignore_case: false,
                });
            }
            let tokenizer = if ty == "stop" {
                Tokenizer::Letter
            } else {
                Tokenizer::Standard
            };
            if ty == "standard" && filters.len() == 1 {
                return Ok(Analyzer::Standard);
            }
            Ok(chain(tokenizer, vec![], filters))
        }
        "simple" | "whitespace" | "keyword" | "english" => {
            check_opts("analyzer", name, opts, &["position_increment_gap"])?;
            builtin_analyzer(&ty).map_err(|_| unsupported("analyzer type", &ty))
        }
        other => match builtin_analyzer(other) {
            Err(Missing::Unsupported(_)) => Err(unsupported("analyzer type", other)),
            _ => Err(EngineError::IllegalArgument(format!(
                "Unknown analyzer type [{other}] for [{name}]"
            ))),
        },
    }
}

fn normalizer(
    name: &str,
    opts: &BTreeMap<String, Value>,
    comps: &Components<'_>,
) -> EngineResult<Chain> {
    if let Some(t) = opts.get("type").map(text) {
        if t != "custom" {
            return Err(EngineError::IllegalArgument(format!(
                "Unknown normalizer type [{t}] for [{name}]"
            )));
        }
    }
    if opts.contains_key("tokenizer") {
        return Err(EngineError::IllegalArgument(format!(
            "Custom normalizer [{name}] cannot configure a tokenizer"
        )));
    }
    check_opts("normalizer", name, opts, &["filter", "char_filter"])?;
    let owner = format!("Custom normalizer [{name}]");
    let (cfs, fs) = comps.lists(&owner, opts)?;
    if cfs.contains(&CharFilter::HtmlStrip) {
        return Err(EngineError::IllegalArgument(format!(
            "Custom normalizer [{name}] may not use char filter [html_strip]"
        )));
    }
    let names = opts.get("filter").map(list).unwrap_or_default();
    for (f, n) in fs.iter().zip(&names) {
        if !f.normalizing() {
            return Err(EngineError::IllegalArgument(format!(
                "Custom normalizer [{name}] may not use filter [{n}]"
            )));
        }
    }
    Ok(Chain {
        name: name.to_string(),
        char_filters: cfs,
        tokenizer: Tokenizer::Keyword,
        filters: fs,
    })
}

fn stop_words(name: &str, words: &[String]) -> EngineResult<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    for w in words {
        match w.as_str() {
            "_none_" => {}
            "_english_" => out.extend(ENGLISH_STOP_WORDS.iter().map(|s| s.to_string())),
            s if s.starts_with('_') && s.ends_with('_') => {
                return Err(unsupported(&format!("stop words list {s} of"), name))
            }
            s => {
                out.insert(s.to_string());
            }
        }
    }
    Ok(out)
}

/// Tokenizers Elasticsearch 7.10 has that this engine does not.
const ES_TOKENIZERS: &[&str] = &[
    "ngram",
    "nGram",
    "edge_ngram",
    "edgeNGram",
    "pattern",
    "simple_pattern",
    "simple_pattern_split",
    "char_group",
    "classic",
    "uax_url_email",
    "path_hierarchy",
    "PathHierarchy",
    "thai",
];

fn builtin_tokenizer(name: &str) -> EngineResult<Option<Tokenizer>> {
    Ok(Some(match name {
        "standard" => Tokenizer::Standard,
        "whitespace" => Tokenizer::Whitespace,
        "keyword" => Tokenizer::Keyword,
        "letter" => Tokenizer::Letter,
        "lowercase" => Tokenizer::Lowercase,
        n if ES_TOKENIZERS.contains(&n) => return Err(unsupported("tokenizer", n)),
        _ => return Ok(None),
    }))
}

fn configured_tokenizer(
    name: &str,
    ty: &str,
    opts: &BTreeMap<String, Value>,
) -> EngineResult<Tokenizer> {
    match ty {
        "standard" | "whitespace" => {
            check_opts("tokenizer", name, opts, &["max_token_length"])?;
            if let Some(v) = opts.get("max_token_length") {
                if number("max_token_length", name, v)? != 255 {
                    return Err(unsupported(
                        "[max_token_length] other than 255 of tokenizer",
                        name,
                    ));
                }
            }
        }
        "keyword" => check_opts("tokenizer", name, opts, &["buffer_size"])?,
        _ => check_opts("tokenizer", name, opts, &[])?,
    }
    match builtin_tokenizer(ty)? {
        Some(t) => Ok(t),
        None => Err(EngineError::IllegalArgument(format!(
            "Unknown tokenizer type [{ty}] for [{name}]"
        ))),
    }
}

/// Token filters Elasticsearch 7.10 has that this engine does not.
const ES_FILTERS: &[&str] = &[
    "apostrophe",
    "cjk_bigram",
    "cjk_width",
    "classic",
    "common_grams",
    "condition",
    "decimal_digit",
    "delimited_payload",
    "dictionary_decompounder",
    "edge_ngram",
    "edgeNGram",
    "elision",
    "fingerprint",
    "flatten_graph",
    "hunspell",
    "hyphenation_decompounder",
    "keep",
    "keep_types",
    "keyword_marker",
    "keyword_repeat",
    "kstem",
    "limit",
    "min_hash",
    "multiplexer",
    "ngram",
    "nGram",
    "pattern_capture",
    "pattern_replace",
    "phonetic",
    "predicate_token_filter",
    "remove_duplicates",
    "reverse",
    "shingle",
    "snowball",
    "stemmer_override",
    "synonym",
    "synonym_graph",
    "word_delimiter",
    "word_delimiter_graph",
    "german_normalization",
    "scandinavian_folding",
    "scandinavian_normalization",
    "serbian_normalization",
    "sorani_normalization",
    "arabic_normalization",
    "hindi_normalization",
    "indic_normalization",
    "persian_normalization",
    "bengali_normalization",
    "porter_stem_filter",
];

fn builtin_filter(name: &str) -> EngineResult<Option<TokenFilter>> {
    Ok(Some(match name {
        "lowercase" => TokenFilter::Lowercase,
        "uppercase" => TokenFilter::Uppercase,
        "asciifolding" => TokenFilter::AsciiFolding {
            preserve_original: false,
        },
        "stop" => TokenFilter::stop_english(),
        "trim" => TokenFilter::Trim,
        "porter_stem" => TokenFilter::EnglishStem,
        "unique" => TokenFilter::Unique,
        "truncate" => TokenFilter::Truncate { length: 10 },
        n if ES_FILTERS.contains(&n) => return Err(unsupported("token filter", n)),
        _ => return Ok(None),
    }))
}

fn configured_filter(
    name: &str,
    ty: &str,
    opts: &BTreeMap<String, Value>,
) -> EngineResult<TokenFilter> {
    let get = |k: &str| opts.get(k);
    Ok(match ty {
        "asciifolding" => {
            check_opts("token filter", name, opts, &["preserve_original"])?;
            TokenFilter::AsciiFolding {
                preserve_original: get("preserve_original")
                    .map_or(Ok(false), |v| flag("preserve_original", v))?,
            }
        }
        "stop" => {
            check_opts(
                "token filter",
                name,
                opts,
                &["stopwords", "ignore_case", "remove_trailing"],
            )?;
            if let Some(v) = get("remove_trailing") {
                if !flag("remove_trailing", v)? {
                    return Err(unsupported("[remove_trailing] false of token filter", name));
                }
            }
            let ignore_case = get("ignore_case").map_or(Ok(false), |v| flag("ignore_case", v))?;
            let words = get("stopwords")
                .map(list)
                .unwrap_or_else(|| vec!["_english_".into()]);
            let mut words = stop_words(name, &words)?;
            if ignore_case {
                words = words.into_iter().map(|w| w.to_lowercase()).collect();
            }
            TokenFilter::Stop { words, ignore_case }
        }
        "stemmer" => {
            check_opts("token filter", name, opts, &["language", "name"])?;
            let lang = get("language")
                .or(get("name"))
                .map(text)
                .unwrap_or_else(|| "english".into());
            match lang.as_str() {
                "english" | "porter" | "porter2" => TokenFilter::EnglishStem,
                other => {
                    return Err(unsupported(
                        &format!("stemmer language [{other}] of token filter"),
                        name,
                    ))
                }
            }
        }
        "length" => {
            check_opts("token filter", name, opts, &["min", "max"])?;
            TokenFilter::Length {
                min: get("min").map_or(Ok(0), |v| number("min", name, v))?,
                max: get("max").map_or(Ok(i32::MAX as usize), |v| number("max", name, v))?,
            }
        }
        "truncate" => {
            check_opts("token filter", name, opts, &["length"])?;
            TokenFilter::Truncate {
                length: get("length").map_or(Ok(10), |v| number("length", name, v))?,
            }
        }
        "unique" => {
            check_opts("token filter", name, opts, &["only_on_same_position"])?;
            if get("only_on_same_position")
                .map_or(Ok(false), |v| flag("only_on_same_position", v))?
            {
                return Err(unsupported("[only_on_same_position] of token filter", name));
            }
            TokenFilter::Unique
        }
        "lowercase" => {
            check_opts("token filter", name, opts, &["language"])?;
            if let Some(l) = get("language") {
                return Err(unsupported(
                    &format!("lowercase language [{}] of token filter", text(l)),
                    name,
                ));
            }
            TokenFilter::Lowercase
        }
        "uppercase" | "trim" | "porter_stem" => {
            check_opts("token filter", name, opts, &[])?;
            builtin_filter(ty)?.expect("built in")
        }
        other => {
            if ES_FILTERS.contains(&other) {
                return Err(unsupported("token filter type", other));
            }
            return Err(EngineError::IllegalArgument(format!(
                "Unknown filter type [{other}] for [{name}]"
            )));
        }
    })
}

fn builtin_char_filter(name: &str) -> EngineResult<Option<CharFilter>> {
    Ok(match name {
        "html_strip" => Some(CharFilter::HtmlStrip),
        "mapping" | "pattern_replace" => {
            return Err(unsupported("char filter without settings", name))
        }
        _ => None,
    })
}

fn configured_char_filter(
    name: &str,
    ty: &str,
    opts: &BTreeMap<String, Value>,
) -> EngineResult<CharFilter> {
    match ty {
        "html_strip" => {
            check_opts("char filter", name, opts, &["escaped_tags"])?;
            if opts
                .get("escaped_tags")
                .is_some_and(|v| !list(v).is_empty())
            {
                return Err(unsupported("[escaped_tags] of char filter", name));
            }
            Ok(CharFilter::HtmlStrip)
        }
        "mapping" => {
            check_opts("char filter", name, opts, &["mappings"])?;
            let rules = opts.get("mappings").map(list).ok_or_else(|| {
                EngineError::IllegalArgument(
                    "mapping requires either `mappings` or `mappings_path` to be configured".into(),
                )
            })?;
            let mut pairs = Vec::new();
            for r in rules {
                let (k, v) = r.split_once("=>").ok_or_else(|| {
                    EngineError::IllegalArgument(format!("Invalid Mapping Rule : [{r}]"))
                })?;
                pairs.push((k.trim().to_string(), v.trim().to_string()));
            }
            pairs.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
            Ok(CharFilter::Mapping(pairs))
        }
        "pattern_replace" => Err(unsupported("char filter type", ty)),
        other => Err(EngineError::IllegalArgument(format!(
            "Unknown char_filter type [{other}] for [{name}]"
        ))),
    }
}
