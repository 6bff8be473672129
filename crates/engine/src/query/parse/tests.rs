//! Tests of the parent module.
use super::*;
use crate::query::{BoostedField, Msm};
use serde_json::json;

fn p(v: Value) -> EngineResult<Query> {
    parse_query(&v)
}

#[test]
fn short_and_long_forms() {
    let a = p(json!({"match": {"title": "quick fox"}})).unwrap();
    let b = p(json!({"match": {"title": {"query": "quick fox"}}})).unwrap();
    assert_eq!(a, b);
    let t = p(json!({"term": {"n": {"value": 5, "boost": 2}}})).unwrap();
    assert_eq!(
        t,
        Query::Term {
            field: "n".into(),
            value: json!(5),
            boost: 2.0
        }
    );
    assert_eq!(p(json!({})).unwrap(), Query::MatchAll { boost: 1.0 });
}

#[test]
fn bool_clauses_accept_objects_and_arrays() {
    let q = p(json!({"bool": {"must": {"match_all": {}}, "should": [{"term": {"a": 1}}, {"term": {"b": 2}}],
        "minimum_should_match": "50%"}})).unwrap();
    let Query::Bool {
        must, should, msm, ..
    } = q
    else {
        panic!()
    };
    assert_eq!(must.len(), 1);
    assert_eq!(should.len(), 2);
    assert_eq!(msm, Some(Msm::Percent(50)));
}

#[test]
fn range_forms() {
    let q = p(json!({"range": {"n": {"from": 1, "to": 5, "include_upper": false}}})).unwrap();
    let Query::Range { bounds, .. } = q else {
        panic!()
    };
    assert_eq!(bounds.gte, Some(json!(1)));
    assert_eq!(bounds.lt, Some(json!(5)));
}

#[test]
fn errors_are_parsing_exceptions() {
    let cases = [
        (json!({"foo": {}}), "unknown query [foo]"),
        (
            json!({"match": {"a": "x", "b": "y"}}),
            "doesn't support multiple fields",
        ),
        (
            json!({"match": {"a": {"query": "x", "bad": 1}}}),
            "[match] query does not support [bad]",
        ),
        (
            json!({"bool": {"musts": []}}),
            "[bool] query does not support [musts]",
        ),
        (json!({"exists": {}}), "must be provided with a [field]"),
        (json!({"match": {}, "term": {}}), "malformed query"),
        (
            json!({"query_string": {}}),
            "must be provided with a [query]",
        ),
        (json!({"match": "x"}), "no start_object"),
    ];
    for (q, msg) in cases {
        let e = p(q.clone()).unwrap_err();
        assert_eq!(e.body().kind, "parsing_exception", "{q}");
        assert!(e.to_string().contains(msg), "{q}: {e}");
    }
}

#[test]
fn multi_match_fields_with_boosts() {
    let q = p(json!({"multi_match": {"query": "x", "fields": ["title^3", "body"], "type": "most_fields"}})).unwrap();
    let Query::MultiMatch { fields, kind, .. } = q else {
        panic!()
    };
    assert_eq!(
        fields[0],
        BoostedField {
            name: "title".into(),
            boost: 3.0
        }
    );
    assert_eq!(kind, MultiKind::MostFields);
}

// issue 30: `_name`, wherever the query takes it, wraps the query in `Query::Named`
#[test]
fn named_queries_keep_their_name() {
    for q in [
        json!({"query_string": {"query": "a", "_name": "n"}}),
        json!({"match": {"f": {"query": "a", "_name": "n"}}}),
        json!({"term": {"f": {"value": "a", "_name": "n"}}}),
        json!({"term": {"f": "a", "_name": "n"}}),
        json!({"bool": {"must": [], "_name": "n"}}),
        json!({"match_all": {"_name": "n"}}),
        json!({"range": {"f": {"gte": 1, "_name": "n"}}}),
        json!({"exists": {"field": "f", "_name": "n"}}),
        json!({"match_phrase": {"f": {"query": "a", "_name": "n"}}}),
        json!({"ids": {"values": ["1"], "_name": "n"}}),
    ] {
        let parsed = p(q.clone()).unwrap();
        assert_eq!(parsed.named().len(), 1, "{q}");
        assert_eq!(parsed.named()[0].0, "n", "{q}");
    }
    let q = p(
        json!({"bool": {"filter": [{"ids": {"values": ["1"], "_name": "a"}}],
        "should": [{"dis_max": {"queries": [{"match_all": {"_name": "b"}}]}}]}}),
    )
    .unwrap();
    let names: Vec<&str> = q.named().iter().map(|(n, _)| *n).collect();
    assert_eq!(names, vec!["b", "a"]);
    // a field called `_name` is a field, not a name
    assert!(p(json!({"term": {"_name": {"value": "x"}}}))
        .unwrap()
        .named()
        .is_empty());
}
