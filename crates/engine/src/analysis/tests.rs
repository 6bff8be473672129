use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::*;

fn flat(v: Value) -> BTreeMap<String, Value> {
    crate::store::settings::flatten(&v).unwrap()
}

fn analysis(v: Value) -> Analysis {
    from_settings(&flat(v)).unwrap()
}

fn err(v: Value) -> String {
    from_settings(&flat(v)).unwrap_err().body().reason
}

fn texts(a: &Analyzer, s: &str) -> Vec<String> {
    a.chain()
        .expect("custom")
        .analyze(s)
        .into_iter()
        .map(|t| t.text)
        .collect()
}

#[test]
fn custom_analyzer_with_char_filter_tokenizer_and_filters() {
    let a = analysis(json!({"analysis": {
        "analyzer": {"folded": {"type": "custom", "tokenizer": "standard",
            "char_filter": ["html_strip"], "filter": ["lowercase", "asciifolding", "stop"]}}
    }}));
    let an = a.analyzer("folded").unwrap();
    assert_eq!(
        texts(&an, "<p>The Café</p> <b>is</b> Open"),
        vec!["cafe", "open"]
    );
    // positions keep the gap the stop words left
    let toks = an.chain().unwrap().analyze("the quick fox");
    assert_eq!(toks.iter().map(|t| t.position).collect::<Vec<_>>(), [1, 2]);
}

#[test]
fn tokenizer_and_filter_defined_in_settings() {
    let a = analysis(json!({"analysis": {
        "filter": {"my_stop": {"type": "stop", "stopwords": ["foo", "Bar"], "ignore_case": true}},
        "tokenizer": {"ws": {"type": "whitespace"}},
        "char_filter": {"dash": {"type": "mapping", "mappings": ["- => _"]}},
        "analyzer": {"a": {"tokenizer": "ws", "char_filter": ["dash"], "filter": ["my_stop", "uppercase"]}}
    }}));
    assert_eq!(texts(&a.analyzer("a").unwrap(), "foo BAR a-b"), vec!["A_B"]);
}

#[test]
fn standard_type_with_stopwords_and_builtins() {
    let a = analysis(json!({"analysis": {"analyzer": {
        "std": {"type": "standard", "stopwords": "_english_"},
        "plain": {"type": "standard"}
    }}}));
    assert_eq!(texts(&a.analyzer("std").unwrap(), "The Fox"), vec!["fox"]);
    assert_eq!(a.analyzer("plain").unwrap(), Analyzer::Standard);
    assert_eq!(
        texts(&a.analyzer("simple").unwrap(), "Don't 42x"),
        vec!["don", "t", "x"]
    );
    assert_eq!(a.analyzer("whitespace").unwrap(), Analyzer::Whitespace);
    assert_eq!(a.analyzer("nope"), Err(Missing::Unknown));
    assert_eq!(
        a.analyzer("french"),
        Err(Missing::Unsupported("french".into()))
    );
}

#[test]
fn normalizers() {
    let a = analysis(json!({"analysis": {"normalizer": {
        "lc": {"type": "custom", "filter": ["lowercase", "asciifolding"]}
    }}}));
    assert_eq!(
        a.normalizer("lc").unwrap().normalize("ÉCOLE Été"),
        "ecole ete"
    );
    assert_eq!(a.normalizer("lowercase").unwrap().normalize("ABC"), "abc");
    assert!(a.normalizer("other").is_none());
}

#[test]
fn elasticsearch_messages_for_bad_definitions() {
    assert_eq!(
        err(json!({"analysis": {"analyzer": {"a": {"type": "custom", "tokenizer": "nope"}}}})),
        "Custom Analyzer [a] failed to find tokenizer under name [nope]"
    );
    assert_eq!(
        err(
            json!({"analysis": {"analyzer": {"a": {"tokenizer": "standard", "filter": ["nope"]}}}})
        ),
        "Custom Analyzer [a] failed to find filter under name [nope]"
    );
    assert_eq!(
        err(
            json!({"analysis": {"analyzer": {"a": {"tokenizer": "standard", "char_filter": "nope"}}}})
        ),
        "Custom Analyzer [a] failed to find char_filter under name [nope]"
    );
    assert_eq!(
        err(json!({"analysis": {"analyzer": {"a": {"type": "custom"}}}})),
        "Custom Analyzer [a] must be configured with a tokenizer"
    );
    assert_eq!(
        err(json!({"analysis": {"analyzer": {"a": {"type": "bogus"}}}})),
        "Unknown analyzer type [bogus] for [a]"
    );
    assert_eq!(
        err(json!({"analysis": {"normalizer": {"n": {"tokenizer": "standard"}}}})),
        "Custom normalizer [n] cannot configure a tokenizer"
    );
    assert_eq!(
        err(json!({"analysis": {"normalizer": {"n": {"filter": ["porter_stem"]}}}})),
        "Custom normalizer [n] may not use filter [porter_stem]"
    );
    assert_eq!(
        err(json!({"analysis": {"filter": {"f": {"type": "bogus"}}}})),
        "Unknown filter type [bogus] for [f]"
    );
}

#[test]
fn what_the_engine_lacks_is_refused_by_name() {
    for (v, name) in [
        (
            json!({"analysis": {"filter": {"s": {"type": "synonym", "synonyms": ["a, b"]}}}}),
            "synonym",
        ),
        (
            json!({"analysis": {"analyzer": {"a": {"tokenizer": "ngram"}}}}),
            "ngram",
        ),
        (
            json!({"analysis": {"analyzer": {"a": {"type": "french"}}}}),
            "french",
        ),
        (
            json!({"analysis": {"analyzer": {"a": {"type": "standard", "max_token_length": 5}}}}),
            "max_token_length",
        ),
        (
            json!({"analysis": {"filter": {"f": {"type": "stop", "stopwords_path": "x.txt"}}}}),
            "stopwords_path",
        ),
        (
            json!({"analysis": {"char_filter": {"c": {"type": "pattern_replace", "pattern": "a"}}}}),
            "pattern_replace",
        ),
        (
            json!({"analysis": {"analyzer": {"a": {"tokenizer": "standard", "filter": ["shingle"]}}}}),
            "shingle",
        ),
    ] {
        let e = err(v);
        assert!(
            e.contains(name) && e.contains("not supported by this engine"),
            "{e}"
        );
    }
    assert!(err(json!({"analysis": {"foo": {"x": {"type": "y"}}}}))
        .contains("unknown setting [index.analysis.foo.x.type]"));
}

#[test]
fn lists_come_as_arrays_or_comma_separated() {
    let a = analysis(json!({"analysis": {"analyzer": {
        "a": {"tokenizer": "whitespace", "filter": "lowercase, asciifolding"}
    }}}));
    assert_eq!(texts(&a.analyzer("a").unwrap(), "Ça VA"), vec!["ca", "va"]);
}
