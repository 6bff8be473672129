//! Search endpoints over HTTP: `_search` (body, URI, index lists and wildcards), the query
//! DSL, sorting, paging, `_source` filtering, aggregations, `_count`, `_msearch`, and the
//! errors (spec 4, 7).

use crate::support::engine_support;

use engine_support::{Client, Engine};
use serde_json::{json, Value};

fn setup(e: &Engine) -> Client {
    let mut c = e.client();
    c.req("PUT", "/lib", Some(r#"{"settings":{"number_of_shards":2},"mappings":{"properties":{"genre":{"type":"keyword"},"year":{"type":"integer"}}}}"#));
    c.req("PUT", "/mag", None);
    let body = concat!(
        "{\"index\":{\"_index\":\"lib\",\"_id\":\"1\"}}\n{\"title\":\"Dune\",\"genre\":\"scifi\",\"year\":1965,\"pages\":412}\n",
        "{\"index\":{\"_index\":\"lib\",\"_id\":\"2\"}}\n{\"title\":\"Dune Messiah\",\"genre\":\"scifi\",\"year\":1969,\"pages\":256}\n",
        "{\"index\":{\"_index\":\"lib\",\"_id\":\"3\"}}\n{\"title\":\"Emma\",\"genre\":\"classic\",\"year\":1815,\"pages\":474}\n",
        "{\"index\":{\"_index\":\"lib\",\"_id\":\"4\"}}\n{\"title\":\"The Left Hand of Darkness\",\"genre\":\"scifi\",\"year\":1969}\n",
        "{\"index\":{\"_index\":\"mag\",\"_id\":\"m1\"}}\n{\"title\":\"Dune review\",\"year\":2021}\n",
    );
    assert_eq!(
        c.req("POST", "/_bulk?refresh=true", Some(body)).json()["errors"],
        false
    );
    c
}

fn ids(v: &Value) -> Vec<String> {
    let mut i: Vec<String> = v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["_id"].as_str().unwrap().to_string())
        .collect();
    i.sort();
    i
}

fn search(c: &mut Client, path: &str, body: Value) -> Value {
    let r = c.req("POST", path, Some(&body.to_string()));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

// spec 4: response shape
#[test]
fn search_response_shape() {
    let e = Engine::start();
    let mut c = setup(&e);
    let v = c.get("/lib/_search?pretty").json();
    assert!(v["took"].is_u64());
    assert_eq!(v["timed_out"], false);
    assert_eq!(
        v["_shards"],
        json!({"total": 2, "successful": 2, "skipped": 0, "failed": 0})
    );
    assert_eq!(v["hits"]["total"]["value"], 4);
    assert!(v["hits"]["max_score"].is_number());
    for h in v["hits"]["hits"].as_array().unwrap() {
        for k in ["_index", "_type", "_id", "_score", "_source"] {
            assert!(h.get(k).is_some(), "{k} in {h}");
        }
    }
}

#[test]
fn all_indices_lists_and_wildcards() {
    let e = Engine::start();
    let mut c = setup(&e);
    assert_eq!(c.get("/_search").json()["hits"]["total"]["value"], 5);
    assert_eq!(
        c.get("/lib,mag/_search?q=dune").json()["hits"]["total"]["value"],
        3
    );
    assert_eq!(c.get("/m*/_search").json()["hits"]["total"]["value"], 1);
    assert_eq!(c.get("/_all/_search?size=0").json()["_shards"]["total"], 3);
    assert_eq!(c.get("/zz*/_search").json()["hits"]["total"]["value"], 0);
    assert_eq!(
        c.get("/lib,missing/_search?ignore_unavailable=true").json()["hits"]["total"]["value"],
        4
    );
}

// spec 7: unknown index
#[test]
fn search_unknown_index_is_404() {
    let e = Engine::start();
    let mut c = setup(&e);
    for p in ["/nope/_search", "/lib,nope/_search", "/nope/_count"] {
        let r = c.get(p);
        assert_eq!(r.status, 404, "{p}");
        let v = r.json();
        assert_eq!(v["error"]["type"], "index_not_found_exception");
        assert_eq!(v["error"]["resource.id"], "nope");
    }
}

#[test]
fn query_dsl() {
    let e = Engine::start();
    let mut c = setup(&e);
    let cases = [
        (json!({"match": {"title": "dune"}}), vec!["1", "2"]),
        (json!({"match_phrase": {"title": "left hand"}}), vec!["4"]),
        (
            json!({"multi_match": {"query": "scifi", "fields": ["title", "genre"]}}),
            vec!["1", "2", "4"],
        ),
        (
            json!({"multi_match": {"query": "emma darkness", "fields": ["title^2", "genre"]}}),
            vec!["3", "4"],
        ),
        (json!({"term": {"genre": "classic"}}), vec!["3"]),
        (json!({"terms": {"year": [1965, 1815]}}), vec!["1", "3"]),
        (
            json!({"range": {"year": {"gte": 1900, "lte": 1966}}}),
            vec!["1"],
        ),
        (json!({"exists": {"field": "pages"}}), vec!["1", "2", "3"]),
        (json!({"prefix": {"genre": "sci"}}), vec!["1", "2", "4"]),
        (json!({"ids": {"values": ["2", "3"]}}), vec!["2", "3"]),
        (
            json!({"bool": {"must": {"match": {"title": "dune"}}, "must_not": {"term": {"year": 1969}}}}),
            vec!["1"],
        ),
        (
            json!({"bool": {"filter": [{"term": {"genre": "scifi"}}, {"range": {"year": {"gt": 1966}}}]}}),
            vec!["2", "4"],
        ),
        (
            json!({"bool": {"should": [{"match": {"title": "emma"}}, {"match": {"title": "darkness"}}], "minimum_should_match": 1}}),
            vec!["3", "4"],
        ),
        (
            json!({"query_string": {"query": "genre:scifi AND NOT title:dune"}}),
            vec!["4"],
        ),
        (json!({"match_all": {}}), vec!["1", "2", "3", "4"]),
    ];
    for (q, want) in cases {
        let v = search(&mut c, "/lib/_search", json!({"query": q}));
        assert_eq!(ids(&v), want, "{q}");
    }
}

#[test]
fn uri_search() {
    let e = Engine::start();
    let mut c = setup(&e);
    let v = c
        .get("/lib/_search?q=genre:scifi&sort=year:asc&size=2&from=1&_source=title")
        .json();
    assert_eq!(v["hits"]["total"]["value"], 3);
    let hits = v["hits"]["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0]["sort"], json!([1969]));
    assert_eq!(
        hits[0]["_source"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        vec!["title"]
    );
    let v = c
        .get("/lib/_search?q=title:dune%20messiah&default_operator=AND")
        .json();
    assert_eq!(ids(&v), vec!["2"]);
}

#[test]
fn sort_paging_and_source() {
    let e = Engine::start();
    let mut c = setup(&e);
    let v = search(
        &mut c,
        "/lib/_search",
        json!({"sort": [{"year": "desc"}, {"genre": "asc"}], "size": 3, "_source": {"excludes": ["pages"]}}),
    );
    let order: Vec<&str> = v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        order[0..2]
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        2
    );
    assert_eq!(order[2], "1");
    assert!(v["hits"]["hits"][0]["_source"].get("pages").is_none());
    assert_eq!(v["hits"]["max_score"], Value::Null);
    let r = c.req("POST", "/lib/_search", Some(r#"{"sort":["title"]}"#));
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["caused_by"]["type"],
        "illegal_argument_exception"
    );
    let r = c.req("POST", "/lib/_search", Some(r#"{"from":10000,"size":1}"#));
    assert_eq!(r.status, 400);
}

#[test]
fn aggregations() {
    let e = Engine::start();
    let mut c = setup(&e);
    let v = search(
        &mut c,
        "/lib/_search",
        json!({"size": 0, "aggs": {
        "genres": {"terms": {"field": "genre"}},
        "oldest": {"min": {"field": "year"}}, "newest": {"max": {"field": "year"}},
        "avg_pages": {"avg": {"field": "pages"}}, "pages": {"sum": {"field": "pages"}},
        "with_pages": {"value_count": {"field": "pages"}}}}),
    );
    let a = &v["aggregations"];
    assert_eq!(
        a["genres"]["buckets"],
        json!([{"key": "scifi", "doc_count": 3}, {"key": "classic", "doc_count": 1}])
    );
    assert_eq!(
        (a["oldest"]["value"].as_f64(), a["newest"]["value"].as_f64()),
        (Some(1815.0), Some(1969.0))
    );
    assert_eq!(a["avg_pages"]["value"], 1142.0 / 3.0);
    assert_eq!(a["pages"]["value"], 1142.0);
    assert_eq!(a["with_pages"]["value"], 3);
    let r = c.req(
        "POST",
        "/lib/_search",
        Some(r#"{"aggs":{"t":{"terms":{"field":"title"}}}}"#),
    );
    assert_eq!(r.status, 400);
}

#[test]
fn count_and_msearch() {
    let e = Engine::start();
    let mut c = setup(&e);
    assert_eq!(c.get("/lib/_count").json()["count"], 4);
    let v = c
        .req(
            "POST",
            "/lib/_count",
            Some(r#"{"query":{"term":{"genre":"scifi"}}}"#),
        )
        .json();
    assert_eq!(v["count"], 3);
    assert_eq!(
        c.req("POST", "/lib/_count", Some(r#"{"size":1}"#)).status,
        400
    );
    let body = "{\"index\":\"lib\"}\n{\"query\":{\"term\":{\"genre\":\"classic\"}}}\n{\"index\":\"nope\"}\n{}\n{}\n{\"size\":0}\n";
    let v = c.req("POST", "/_msearch", Some(body)).json();
    let r = v["responses"].as_array().unwrap();
    assert_eq!(r[0]["hits"]["total"]["value"], 1);
    assert_eq!(r[1]["status"], 404);
    assert_eq!(r[1]["error"]["type"], "index_not_found_exception");
    assert_eq!(r[2]["hits"]["total"]["value"], 5);
    let v = c.req("POST", "/mag/_msearch", Some("{}\n{}\n")).json();
    assert_eq!(v["responses"][0]["hits"]["total"]["value"], 1);
}

#[test]
fn query_errors_are_400() {
    let e = Engine::start();
    let mut c = setup(&e);
    let cases = [
        r#"{"query":{"nope":{}}}"#,
        r#"{"query":{"match":{"a":"x","b":"y"}}}"#,
        r#"{"query":{"term":{"year":"abc"}}}"#,
        r#"{"query":{"query_string":{"query":"(unbalanced"}}}"#,
        r#"{"unknown_key":1}"#,
        r#"{"size":-1}"#,
        "{not json",
    ];
    for body in cases {
        let r = c.req("POST", "/lib/_search", Some(body));
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert_eq!(r.json()["status"], 400);
    }
}
