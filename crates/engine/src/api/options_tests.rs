//! API tests of issue 30's "never ignore silently" audit: the options of `match`,
//! `multi_match`, `match_phrase_prefix`, `query_string` and `range` that the engine used to
//! accept and drop are honoured (`prefix_length`, `max_expansions`, `fuzzy_transpositions`,
//! `zero_terms_query`, `cross_fields`, `bool_prefix`) or refused by name (`cutoff_frequency`,
//! a DISJOINT `relation`), and mapping parameters without effect are refused (spec 7: 400
//! with Elasticsearch's error shape). Expected counts follow Elasticsearch 7.10's reference
//! (Lucene's `FuzzyQuery`: the prefix matches exactly, transpositions count one edit).

use serde_json::{json, Value};

use super::audit_tests::{bulk, post, reason};
use super::tests::{engine, put};
use super::*;

/// `f`: text `w`, keyword `k` (the same word), long `n`, text `p`, `first`/`last` names.
fn words() -> (tempfile::TempDir, Engine) {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let r = put(
        &e,
        "/f",
        json!({"mappings": {"properties": {"w": {"type": "text"}, "k": {"type": "keyword"},
            "n": {"type": "long"}, "p": {"type": "text"}, "first": {"type": "text"},
            "last": {"type": "text"}}}}),
    );
    assert_eq!(r.status, 200);
    let mut docs: Vec<Value> = ["quick", "quack", "quikc", "wuick", "slow"]
        .iter()
        .enumerate()
        .map(|(i, w)| json!({"id": format!("w{i}"), "w": w, "k": w, "n": i}))
        .collect();
    for i in 1..=3 {
        docs.push(json!({"id": format!("p{i}"), "p": format!("foo bar{i}")}));
    }
    docs.push(json!({"id": "name", "first": "will", "last": "smith"}));
    bulk(&e, "f", &docs);
    (d, e)
}

fn count(e: &Engine, q: Value) -> u64 {
    let r = post(e, "/f/_count", json!({ "query": q }));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["count"].as_u64().unwrap()
}

fn refused(e: &Engine, q: Value) -> String {
    let r = post(e, "/f/_search", json!({ "query": q }));
    assert_eq!(r.status, 400, "{}", r.text());
    reason(&r)
}

#[test]
fn fuzzy_options_of_match_are_honoured() {
    let (_d, e) = words();
    let m = |opts: Value| {
        let mut o = json!({"query": "quick", "fuzziness": 1});
        o.as_object_mut()
            .unwrap()
            .extend(opts.as_object().unwrap().clone());
        count(&e, json!({"match": {"w": o}}))
    };
    // quack (substitution), quikc (transposition), wuick (substitution)
    assert_eq!(m(json!({})), 4);
    assert_eq!(m(json!({"fuzzy_transpositions": false})), 3);
    assert_eq!(m(json!({"prefix_length": 1})), 3);
    // "qui": quick, and quikc by a transposition
    assert_eq!(m(json!({"prefix_length": "3"})), 2);
    assert_eq!(
        m(json!({"prefix_length": 3, "fuzzy_transpositions": false})),
        1
    );
    // the most similar term first: the exact one
    assert_eq!(m(json!({"max_expansions": 1})), 1);
    // above the cap it is the cap (Lucene: min(maxClauseCount, maxExpansions))
    assert_eq!(m(json!({"max_expansions": 1_000_000_000})), 4);
    // the same options on a keyword field and through multi_match and query_string
    let k = count(
        &e,
        json!({"match": {"k": {"query": "quick", "fuzziness": 1, "prefix_length": 1}}}),
    );
    assert_eq!(k, 3);
    let mm = count(
        &e,
        json!({"multi_match": {"query": "quick", "fields": ["w"], "fuzziness": 1,
            "fuzzy_transpositions": false}}),
    );
    assert_eq!(mm, 3);
    let qs = count(
        &e,
        json!({"query_string": {"query": "w:quick~1", "fuzzy_prefix_length": 1}}),
    );
    assert_eq!(qs, 3);
}

#[test]
fn options_without_effect_are_refused_by_name() {
    let (_d, e) = words();
    let r = refused(
        &e,
        json!({"match": {"w": {"query": "quick", "cutoff_frequency": 0.01}}}),
    );
    assert!(
        r.contains("[cutoff_frequency]") && r.contains("not supported"),
        "{r}"
    );
    let r = refused(
        &e,
        json!({"match": {"w": {"query": "quick", "fuzzy_rewrite": "top_terms_10"}}}),
    );
    assert!(r.contains("[fuzzy_rewrite]"), "{r}");
    let r = refused(
        &e,
        json!({"match": {"w": {"query": "quick", "fuzziness": 1, "max_expansions": 0}}}),
    );
    assert_eq!(r, "[match] requires max expansions to be positive.");
    let r = refused(
        &e,
        json!({"match": {"w": {"query": "quick", "prefix_length": -1}}}),
    );
    assert_eq!(r, "[match] requires prefix length to be non-negative.");
    let r = refused(
        &e,
        json!({"match": {"w": {"query": "quick", "zero_terms_query": "some"}}}),
    );
    assert_eq!(r, "Unsupported zero_terms_query value [some]");
    let r = refused(&e, json!({"match": {"n": {"query": "3", "fuzziness": 1}}}));
    assert!(
        r.contains("Can only use fuzzy queries on keyword and text fields"),
        "{r}"
    );
    // max_expansions is an option of match_phrase_prefix, not of match_phrase
    let r = refused(
        &e,
        json!({"match_phrase": {"p": {"query": "foo", "max_expansions": 2}}}),
    );
    assert!(r.contains("[max_expansions]"), "{r}");
}

#[test]
fn phrase_prefix_expansions_and_zero_terms() {
    let (_d, e) = words();
    let pp = |q: &str, max: u64| {
        count(
            &e,
            json!({"match_phrase_prefix": {"p": {"query": q, "max_expansions": max}}}),
        )
    };
    assert_eq!(pp("foo bar", 50), 3);
    assert_eq!(pp("foo bar", 2), 2);
    assert_eq!(pp("bar", 1), 1);
    // no terms: nothing, or everything with zero_terms_query all
    assert_eq!(count(&e, json!({"match_phrase": {"p": ""}})), 0);
    assert_eq!(
        count(
            &e,
            json!({"match_phrase": {"p": {"query": "", "zero_terms_query": "all"}}})
        ),
        9
    );
}

#[test]
fn multi_match_cross_fields_and_bool_prefix() {
    let (_d, e) = words();
    let mm = |t: &str| {
        count(
            &e,
            json!({"multi_match": {"query": "will smith", "type": t,
                "fields": ["first", "last"], "operator": "and"}}),
        )
    };
    // cross_fields: every term in some field; best_fields: every term in one field
    assert_eq!(mm("cross_fields"), 1);
    assert_eq!(mm("best_fields"), 0);
    let bp = count(
        &e,
        json!({"multi_match": {"query": "wil", "type": "bool_prefix", "fields": ["first"]}}),
    );
    assert_eq!(bp, 1);
}

#[test]
fn range_relation() {
    let (_d, e) = words();
    for rel in ["intersects", "CONTAINS", "within"] {
        let q = json!({"range": {"n": {"gte": 1, "lte": 3, "relation": rel}}});
        assert_eq!(count(&e, q), 3, "{rel}");
    }
    let r = refused(
        &e,
        json!({"range": {"n": {"gte": 1, "relation": "disjoint"}}}),
    );
    assert_eq!(
        r,
        "Field [n] of type [long] does not support DISJOINT ranges"
    );
    let r = refused(&e, json!({"range": {"n": {"gte": 1, "relation": "near"}}}));
    assert_eq!(r, "near is not a valid relation");
}

#[test]
fn mapping_parameters_without_effect_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    for (i, m) in [
        json!({"_source": {"enabled": false}}),
        json!({"_source": {"excludes": ["a"]}}),
        json!({"enabled": false}),
        json!({"dynamic_templates": [{"s": {"match": "*", "mapping": {"type": "keyword"}}}]}),
        json!({"runtime": {"r": {"type": "keyword"}}}),
        json!({"dynamic_date_formats": ["yyyy"]}),
        json!({"properties": {"o": {"type": "nested"}}}),
        json!({"properties": {"o": {"type": "nested", "include_in_parent": true,
            "properties": {"i": {"type": "nested", "include_in_parent": true}}}}}),
    ]
    .into_iter()
    .enumerate()
    {
        let r = put(&e, &format!("/m{i}"), json!({ "mappings": m }));
        assert_eq!(r.status, 400, "{m}: {}", r.text());
        assert_eq!(r.json()["error"]["type"], "mapper_parsing_exception", "{m}");
        assert!(reason(&r).contains("not supported by this engine"), "{m}");
    }
    // the forms whose effect the engine has are kept and returned
    let ok = json!({"_source": {"enabled": true}, "_routing": {"required": false},
        "dynamic_templates": [], "properties": {"o": {"type": "nested", "include_in_parent": true,
        "properties": {"i": {"type": "nested", "include_in_root": true}}}}});
    let r = put(&e, "/ok", json!({ "mappings": ok }));
    assert_eq!(r.status, 200, "{}", r.text());
    let m = super::audit_tests::get(&e, "/ok/_mapping?include_type_name=false").json();
    let o = &m["ok"]["mappings"]["properties"]["o"];
    assert_eq!(o["include_in_parent"], true, "{m}");
    assert_eq!(o["properties"]["i"]["include_in_root"], true, "{m}");
}
