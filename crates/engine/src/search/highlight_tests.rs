//! Highlighting from the reference: tags, fields, fragments.

use super::*;
use crate::query::parse_query;
use serde_json::json;

fn mapping() -> Mapping {
    crate::mapping::parse_mappings(
        &json!({"properties": {
        "title": {"type": "text"}, "body": {"type": "text"}, "tag": {"type": "keyword"}}}),
        &Default::default(),
    )
    .unwrap()
    .mapping
}

fn hl(h: Value, q: Value, src: Value) -> Option<Value> {
    let h = Highlight::parse(&h).unwrap();
    let q = parse_query(&q).unwrap();
    highlight_hit(&h, &q, &mapping(), src.as_object().unwrap())
}

#[test]
fn tags_terms_and_fields() {
    let src = json!({"title": "The Quick brown fox", "body": "a fox here", "tag": "fox"});
    let v = hl(
        json!({"fields": {"title": {}}}),
        json!({"match": {"title": "quick fox"}}),
        src.clone(),
    );
    assert_eq!(
        v,
        Some(json!({"title": ["The <em>Quick</em> brown <em>fox</em>"]}))
    );
    // require_field_match (default true): a query on title does not light body up
    let v = hl(
        json!({"fields": {"body": {}}}),
        json!({"match": {"title": "fox"}}),
        src.clone(),
    );
    assert_eq!(v, None);
    let v = hl(
        json!({"require_field_match": false, "pre_tags": ["["], "post_tags": ["]"], "fields": {"body": {}}}),
        json!({"match": {"title": "fox"}}),
        src.clone(),
    );
    assert_eq!(v, Some(json!({"body": ["a [fox] here"]})));
    let v = hl(
        json!({"fields": {"tag": {}}}),
        json!({"term": {"tag": "fox"}}),
        src.clone(),
    );
    assert_eq!(v, Some(json!({"tag": ["<em>fox</em>"]})));
    let v = hl(
        json!({"fields": [{"title": {}}]}),
        json!({"prefix": {"title": "qui"}}),
        src,
    );
    assert_eq!(v, Some(json!({"title": ["The <em>Quick</em> brown fox"]})));
}

#[test]
fn fragments_sizes_and_counts() {
    let text =
        "First sentence about cats. Second one has a fox. Third mentions fox and fox again. Last.";
    let src = json!({"body": text});
    let q = json!({"match": {"body": "fox"}});
    let v = hl(
        json!({"fields": {"body": {"number_of_fragments": 1}}}),
        q.clone(),
        src.clone(),
    )
    .unwrap();
    assert_eq!(
        v["body"],
        json!(["Third mentions <em>fox</em> and <em>fox</em> again."])
    );
    let v = hl(json!({"fields": {"body": {}}}), q.clone(), src.clone()).unwrap();
    assert_eq!(v["body"].as_array().unwrap().len(), 2);
    assert_eq!(v["body"][0], "Second one has a <em>fox</em>.");
    let v = hl(
        json!({"fields": {"body": {"number_of_fragments": 0}}}),
        q.clone(),
        src.clone(),
    )
    .unwrap();
    assert_eq!(v["body"][0].as_str().unwrap().matches("<em>").count(), 3);
    assert!(v["body"][0].as_str().unwrap().starts_with("First sentence"));
    let v = hl(
        json!({"fields": {"title": {"no_match_size": 9}}}),
        q,
        json!({"title": "nothing here at all"}),
    )
    .unwrap();
    assert_eq!(v["title"], json!(["nothing"]));
}

#[test]
fn bad_requests_are_named() {
    assert!(Highlight::parse(&json!({"fields": {"a": {"highlight_query": {}}}})).is_err());
    assert!(Highlight::parse(&json!({"bogus": 1, "fields": {"a": {}}})).is_err());
    assert!(Highlight::parse(&json!({})).is_err());
}
