//! Search tests over a real store: every query type, sorting, paging, sources, aggregations.

use std::sync::Arc;

use serde_json::{json, Value};

use super::*;
use crate::mapping::parse_mappings;
use crate::names::AutoCreate;
use crate::store::index::CreateIndex;
use crate::store::shard::{Cond, WriterOptions};
use crate::store::{Action, RefreshPolicy, Store, WriteItem};

fn docs() -> Vec<Value> {
    vec![
        json!({"title": "The quick brown fox", "tag": "animal", "n": 5, "price": 1.5, "when": "2020-01-01", "ok": true}),
        json!({"title": "Lazy dogs sleep all day", "tag": "animal", "n": 10, "price": 2.5, "when": "2020-06-01", "ok": false}),
        json!({"title": "Quick start guide for foxes", "tag": "book", "n": 1, "price": 10.0, "when": "2021-01-01"}),
        json!({"title": "Cooking with brown rice", "tag": "book", "n": 7, "user": {"name": "ann"}}),
        json!({"title": "A fox, a dog and a cat", "tag": "Animal", "n": 3, "price": 0.5, "when": "2019-12-31"}),
    ]
}

fn setup(shards: u32) -> (tempfile::TempDir, Store, Arc<IndexHandle>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), WriterOptions::default(), AutoCreate::None).unwrap();
    let pm = parse_mappings(
        &json!({"properties": {"tag": {"type": "keyword"}}}),
        &Default::default(),
    )
    .unwrap();
    let mut req = CreateIndex {
        mapping: pm.mapping,
        ..Default::default()
    };
    req.settings.shards = shards;
    let h = store.create("idx", req).unwrap();
    let items = docs()
        .into_iter()
        .enumerate()
        .map(|(i, d)| WriteItem {
            action: Action::Index,
            index: "idx".into(),
            type_name: None,
            id: Some((i + 1).to_string()),
            routing: None,
            source: serde_json::to_vec(&d).unwrap(),
            update: None,
            cond: Cond::default(),
        })
        .collect();
    let (r, t) = store.write(items);
    assert!(r.iter().all(|r| r.outcome.is_ok()), "{r:?}");
    store.finish(&t, RefreshPolicy::Immediate).unwrap();
    (dir, store, h)
}

fn run(h: &Arc<IndexHandle>, body: Value) -> Value {
    let req = SearchRequest::from_body(Some(&body)).unwrap();
    search(std::slice::from_ref(h), &req).unwrap()
}

fn ids(v: &Value) -> Vec<String> {
    v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["_id"].as_str().unwrap().to_string())
        .collect()
}

fn sorted_ids(v: &Value) -> Vec<String> {
    let mut i = ids(v);
    i.sort();
    i
}

fn q(h: &Arc<IndexHandle>, query: Value) -> Vec<String> {
    sorted_ids(&run(h, json!({"query": query, "size": 100})))
}

#[test]
fn response_shape_of_spec_section_4() {
    let (_d, _s, h) = setup(2);
    let v = run(&h, json!({"query": {"match": {"title": "fox"}}}));
    assert!(v["took"].is_u64());
    assert_eq!(v["timed_out"], false);
    assert_eq!(v["_shards"]["total"], 2);
    assert_eq!(v["_shards"]["successful"], 2);
    assert_eq!(v["hits"]["total"], json!({"value": 2, "relation": "eq"}));
    assert!(v["hits"]["max_score"].as_f64().unwrap() > 0.0);
    let hit = &v["hits"]["hits"][0];
    for k in ["_index", "_type", "_id", "_score", "_source"] {
        assert!(hit.get(k).is_some(), "{k}");
    }
    assert_eq!(hit["_index"], "idx");
    assert_eq!(hit["_type"], "_doc");
}

#[test]
fn full_text_queries() {
    let (_d, _s, h) = setup(1);
    assert_eq!(q(&h, json!({"match": {"title": "fox"}})), vec!["1", "5"]);
    assert_eq!(
        q(
            &h,
            json!({"match": {"title": {"query": "quick fox", "operator": "and"}}})
        ),
        vec!["1"]
    );
    assert_eq!(
        q(
            &h,
            json!({"match": {"title": {"query": "quick fox dog", "minimum_should_match": 2}}})
        ),
        vec!["1", "5"]
    );
    assert_eq!(
        q(&h, json!({"match_phrase": {"title": "quick brown"}})),
        vec!["1"]
    );
    assert_eq!(
        q(&h, json!({"match_phrase": {"title": "brown quick"}})),
        Vec::<String>::new()
    );
    assert_eq!(
        q(&h, json!({"match_phrase_prefix": {"title": "quick sta"}})),
        vec!["3"]
    );
    assert_eq!(
        q(
            &h,
            json!({"multi_match": {"query": "animal", "fields": ["title", "tag"]}})
        ),
        vec!["1", "2"]
    );
    assert_eq!(
        q(
            &h,
            json!({"query_string": {"query": "title:fox AND -tag:Animal"}})
        ),
        vec!["1"]
    );
    assert_eq!(
        q(&h, json!({"query_string": {"query": "cooking OR sleep"}})),
        vec!["2", "4"]
    );
    assert_eq!(
        q(&h, json!({"query_string": {"query": "\"brown rice\""}})),
        vec!["4"]
    );
    assert_eq!(q(&h, json!({"match": {"title": "the"}})).len(), 1);
}

#[test]
fn term_level_queries() {
    let (_d, _s, h) = setup(3);
    assert_eq!(q(&h, json!({"term": {"tag": "animal"}})), vec!["1", "2"]);
    assert_eq!(
        q(&h, json!({"term": {"tag.keyword": "animal"}})),
        Vec::<String>::new()
    );
    assert_eq!(
        q(
            &h,
            json!({"term": {"title.keyword": "Lazy dogs sleep all day"}})
        ),
        vec!["2"]
    );
    assert_eq!(q(&h, json!({"term": {"n": 5}})), vec!["1"]);
    assert_eq!(q(&h, json!({"term": {"ok": true}})), vec!["1"]);
    assert_eq!(q(&h, json!({"terms": {"n": [1, 3]}})), vec!["3", "5"]);
    assert_eq!(
        q(&h, json!({"terms": {"tag": ["book", "Animal"]}})),
        vec!["3", "4", "5"]
    );
    assert_eq!(
        q(&h, json!({"range": {"n": {"gte": 3, "lt": 7}}})),
        vec!["1", "5"]
    );
    assert_eq!(
        q(&h, json!({"range": {"price": {"gt": 1.5}}})),
        vec!["2", "3"]
    );
    assert_eq!(
        q(
            &h,
            json!({"range": {"when": {"gte": "2020-01-01", "lt": "2021-01-01"}}})
        ),
        vec!["1", "2"]
    );
    assert_eq!(
        q(&h, json!({"range": {"when": {"lte": "2020"}}})),
        vec!["1", "5"]
    );
    assert_eq!(
        q(&h, json!({"exists": {"field": "price"}})),
        vec!["1", "2", "3", "5"]
    );
    assert_eq!(q(&h, json!({"exists": {"field": "user"}})), vec!["4"]);
    assert_eq!(q(&h, json!({"prefix": {"tag": "bo"}})), vec!["3", "4"]);
    assert_eq!(
        q(&h, json!({"prefix": {"title": "fox"}})),
        vec!["1", "3", "5"]
    );
    assert_eq!(q(&h, json!({"wildcard": {"tag": "a*l"}})), vec!["1", "2"]);
    assert_eq!(
        q(&h, json!({"ids": {"values": ["2", "4", "9"]}})),
        vec!["2", "4"]
    );
    assert_eq!(
        q(&h, json!({"term": {"missing_field": "x"}})),
        Vec::<String>::new()
    );
}

#[test]
fn bool_queries() {
    let (_d, _s, h) = setup(2);
    assert_eq!(
        q(
            &h,
            json!({"bool": {"must": {"match": {"title": "fox"}}, "filter": {"range": {"n": {"gt": 4}}}}})
        ),
        vec!["1"]
    );
    assert_eq!(
        q(
            &h,
            json!({"bool": {"must_not": {"term": {"tag": "animal"}}}})
        ),
        vec!["3", "4", "5"]
    );
    assert_eq!(
        q(
            &h,
            json!({"bool": {"should": [{"term": {"n": 1}}, {"term": {"n": 3}}]}})
        ),
        vec!["3", "5"]
    );
    assert_eq!(
        q(
            &h,
            json!({"bool": {"should": [{"term": {"n": 1}}, {"match": {"title": "quick"}}], "minimum_should_match": 2}})
        ),
        vec!["3"]
    );
    assert_eq!(
        q(
            &h,
            json!({"bool": {"filter": {"term": {"tag": "book"}}, "should": {"match": {"title": "rice"}}}})
        ),
        vec!["3", "4"]
    );
    assert_eq!(q(&h, json!({"bool": {}})).len(), 5);
    let v = run(
        &h,
        json!({"query": {"bool": {"filter": {"term": {"tag": "book"}}}}}),
    );
    assert_eq!(v["hits"]["hits"][0]["_score"], 0.0);
}

#[test]
fn sorting_paging_and_sources() {
    let (_d, _s, h) = setup(3);
    let v = run(&h, json!({"sort": [{"n": "desc"}], "size": 2}));
    assert_eq!(ids(&v), vec!["2", "4"]);
    assert_eq!(v["hits"]["hits"][0]["sort"], json!([10]));
    assert_eq!(v["hits"]["max_score"], Value::Null);
    let v = run(&h, json!({"sort": ["n"], "from": 1, "size": 2}));
    assert_eq!(ids(&v), vec!["5", "1"]);
    let v = run(
        &h,
        json!({"sort": [{"price": {"order": "asc"}}], "size": 10}),
    );
    assert_eq!(ids(&v), vec!["5", "1", "2", "3", "4"]);
    let v = run(&h, json!({"sort": [{"tag": "asc"}, {"n": "desc"}]}));
    assert_eq!(ids(&v), vec!["5", "2", "1", "4", "3"]);
    let v = run(
        &h,
        json!({"query": {"ids": {"values": ["4"]}}, "_source": ["user.name"]}),
    );
    assert_eq!(
        v["hits"]["hits"][0]["_source"],
        json!({"user": {"name": "ann"}})
    );
    let v = run(
        &h,
        json!({"query": {"ids": {"values": ["4"]}}, "_source": false}),
    );
    assert!(v["hits"]["hits"][0].get("_source").is_none());
    let v = run(&h, json!({"size": 0}));
    assert_eq!(v["hits"]["total"]["value"], 5);
    assert_eq!(v["hits"]["hits"], json!([]));
    let req = SearchRequest::from_body(Some(&json!({"sort": ["title"]}))).unwrap();
    assert_eq!(
        search(std::slice::from_ref(&h), &req).unwrap_err().status(),
        400
    );
    let req = SearchRequest::from_body(Some(&json!({"sort": ["nope"]}))).unwrap();
    assert_eq!(
        search(std::slice::from_ref(&h), &req).unwrap_err().status(),
        400
    );
    let req = SearchRequest::from_body(Some(&json!({"from": 9995, "size": 10}))).unwrap();
    assert_eq!(
        search(std::slice::from_ref(&h), &req).unwrap_err().status(),
        400
    );
}

#[test]
fn source_is_returned_byte_for_byte() {
    let (_d, _s, h) = setup(1);
    let v = run(&h, json!({"query": {"ids": {"values": ["1"]}}}));
    let body = serde_json::to_string(&v).unwrap();
    assert!(body.contains(&serde_json::to_string(&docs()[0]).unwrap()));
}

#[test]
fn aggregations() {
    let (_d, _s, h) = setup(3);
    let v = run(
        &h,
        json!({"size": 0, "aggs": {
        "tags": {"terms": {"field": "tag"}, "aggs": {"avg_n": {"avg": {"field": "n"}}}},
        "min_n": {"min": {"field": "n"}}, "max_p": {"max": {"field": "price"}},
        "sum_n": {"sum": {"field": "n"}}, "cnt": {"value_count": {"field": "n"}},
        "nums": {"terms": {"field": "n", "size": 2}}, "first": {"min": {"field": "when"}}}}),
    );
    let a = &v["aggregations"];
    let buckets = a["tags"]["buckets"].as_array().unwrap();
    assert_eq!(buckets[0]["key"], "animal");
    assert_eq!(buckets[0]["doc_count"], 2);
    assert_eq!(buckets[0]["avg_n"]["value"], 7.5);
    assert_eq!(a["min_n"]["value"], 1.0);
    assert_eq!(a["max_p"]["value"], 10.0);
    assert_eq!(a["sum_n"]["value"], 26.0);
    assert_eq!(a["cnt"]["value"], 5);
    assert_eq!(a["nums"]["buckets"].as_array().unwrap().len(), 2);
    assert!(a["nums"]["buckets"][0]["key"].is_i64());
    assert_eq!(a["first"]["value_as_string"], "2019-12-31T00:00:00.000Z");
}

#[test]
fn count_and_uri_search() {
    let (_d, _s, h) = setup(2);
    let req = SearchRequest {
        query: crate::query::parse_query(&json!({"match": {"title": "fox"}})).unwrap(),
        ..Default::default()
    };
    let c = count(std::slice::from_ref(&h), &req).unwrap();
    assert_eq!(c["count"], 2);
    assert_eq!(c["_shards"]["total"], 2);
    let mut req = SearchRequest::default();
    req.apply_params(&|k| (k == "q").then(|| "tag:book".to_string()))
        .unwrap();
    assert_eq!(
        sorted_ids(&search(std::slice::from_ref(&h), &req).unwrap()),
        vec!["3", "4"]
    );
}

#[test]
fn bm25_prefers_shorter_fields() {
    let (_d, _s, h) = setup(1);
    let v = run(&h, json!({"query": {"match": {"title": "fox"}}}));
    // "The quick brown fox" (4 terms) beats "A fox, a dog and a cat" (7 terms)
    assert_eq!(ids(&v), vec!["1", "5"]);
    let s0 = v["hits"]["hits"][0]["_score"].as_f64().unwrap();
    let s1 = v["hits"]["hits"][1]["_score"].as_f64().unwrap();
    assert!(s0 > s1 && s1 > 0.0);
}

// issue 30: `_name` -> each hit lists the named queries (query and post filter, any depth)
// it matches in `matched_queries`; hits matching none have no `matched_queries`
#[test]
fn named_queries_are_reported_per_hit() {
    let (_d, _s, h) = setup(2);
    let v = run(
        &h,
        json!({"query": {"bool": {"should": [
            {"match": {"title": {"query": "fox", "_name": "fox"}}},
            {"term": {"tag": {"value": "book", "_name": "book"}}},
            {"constant_score": {"filter": {"range": {"n": {"gte": 5, "_name": "big"}}}}}
        ], "_name": "any"}},
        "post_filter": {"exists": {"field": "title", "_name": "titled"}},
        "size": 10}),
    );
    let mut got: Vec<(String, Value)> = v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["_id"].as_str().unwrap().to_string(),
                h["matched_queries"].clone(),
            )
        })
        .collect();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        got,
        vec![
            ("1".into(), json!(["any", "big", "fox", "titled"])),
            ("2".into(), json!(["any", "big", "titled"])),
            ("3".into(), json!(["any", "book", "titled"])),
            ("4".into(), json!(["any", "big", "book", "titled"])),
            ("5".into(), json!(["any", "fox", "titled"])),
        ]
    );
    let v = run(&h, json!({"query": {"match": {"title": "fox"}}}));
    assert!(v["hits"]["hits"][0].get("matched_queries").is_none(), "{v}");
}
