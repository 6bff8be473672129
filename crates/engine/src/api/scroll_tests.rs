//! Scroll through the API without a network: contexts, pages, point-in-time view, clear
//! scroll, expiry, validation and the open-context limit. Page shapes follow spec 4
//! (integer `hits.total`, `_shards`), errors spec 7 (`root_cause`, `type`, `status`).

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{json, Value};

use super::tests::{call, call_ct, engine, put};
use super::*;
use crate::search::Scrolls;

const DOCS: usize = 2500;

/// `idx` with 2 shards and 2,500 documents, loaded in 5 refreshed batches (several
/// segments per shard). `title` repeats `alpha` 1-7 times so scores differ; `k` is a
/// keyword shared by several documents.
fn loaded(e: &Engine) {
    let r = put(
        e,
        "/idx",
        json!({"settings": {"number_of_shards": 2, "number_of_replicas": 0},
               "mappings": {"properties": {"k": {"type": "keyword"}, "n": {"type": "long"},
                                           "title": {"type": "text"}}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    for batch in 0..5 {
        let mut body = String::new();
        for i in batch * 500..(batch + 1) * 500 {
            let title = format!("{}beta", "alpha ".repeat(i % 7 + 1));
            body.push_str(&format!(
                "{{\"index\":{{\"_index\":\"idx\",\"_id\":\"{i}\"}}}}\n"
            ));
            body.push_str(
                &json!({"n": i, "k": format!("k{:03}", (i * 7) % 300), "title": title}).to_string(),
            );
            body.push('\n');
        }
        let r = call_ct(
            e,
            Method::Post,
            "/_bulk?refresh=true",
            &body,
            Some("application/x-ndjson"),
        );
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["errors"], false);
    }
}

fn post(e: &Engine, target: &str, body: Value) -> (u16, Value) {
    let r = call(e, Method::Post, target, &body.to_string());
    (r.status, r.json())
}

fn next(e: &Engine, id: &str) -> (u16, Value) {
    post(
        e,
        "/_search/scroll",
        json!({"scroll": "1m", "scroll_id": id}),
    )
}

/// Opens a scroll with `body` and reads it to the end; returns every page's hits.
fn scroll_all(e: &Engine, body: Value) -> Vec<Vec<Value>> {
    let (status, mut page) = post(e, "/idx/_search?scroll=1m", body);
    assert_eq!(status, 200, "{page}");
    let mut pages = Vec::new();
    loop {
        assert_eq!(
            page["hits"]["total"]["value"], DOCS,
            "hits.total stays the full total"
        );
        assert_eq!(page["_shards"]["total"], 2);
        let hits = page["hits"]["hits"].as_array().unwrap().clone();
        if hits.is_empty() {
            break;
        }
        pages.push(hits);
        let id = page["_scroll_id"].as_str().unwrap().to_string();
        let (status, p) = next(e, &id);
        assert_eq!(status, 200, "{p}");
        page = p;
    }
    pages
}

fn ids_once(pages: &[Vec<Value>]) -> Vec<usize> {
    let ids: Vec<usize> = pages
        .iter()
        .flatten()
        .map(|h| h["_id"].as_str().unwrap().parse().unwrap())
        .collect();
    let set: HashSet<_> = ids.iter().collect();
    assert_eq!(set.len(), ids.len(), "an id came back twice");
    assert_eq!(ids.len(), DOCS);
    ids
}

#[test]
fn doc_order_reads_every_document_once() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    loaded(&e);
    // helpers.scan sends `"sort": "_doc"` as a string
    let pages = scroll_all(&e, json!({"size": 1000, "sort": "_doc"}));
    let sizes: Vec<usize> = pages.iter().map(Vec::len).collect();
    assert_eq!(sizes, [1000, 1000, 500]);
    ids_once(&pages);
    let first = &pages[0][0];
    assert!(first["_score"].is_null(), "no scoring in _doc order");
    assert!(first["_source"]["title"].is_string());
    assert!(first["sort"][0].is_u64());
}

#[test]
fn scored_query_pages_in_score_order() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    loaded(&e);
    let body = json!({"size": 1000, "query": {"match": {"title": "alpha"}},
                      "sort": ["_score"]});
    let pages = scroll_all(&e, body);
    ids_once(&pages);
    let scores: Vec<f64> = pages
        .iter()
        .flatten()
        .map(|h| h["_score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "scores descend");
    assert!(scores[0] > scores[DOCS - 1], "scores differ");
    // default relevance order (no sort) too
    ids_once(&scroll_all(
        &e,
        json!({"size": 700, "query": {"match": {"title": "beta"}}}),
    ));
}

#[test]
fn field_sorts_page_through_the_same_order() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    loaded(&e);
    let pages = scroll_all(&e, json!({"size": 1000, "sort": [{"n": "desc"}]}));
    let ids = ids_once(&pages);
    assert_eq!(ids, (0..DOCS).rev().collect::<Vec<_>>());
    // keyword key with ties across shards and segments, then a numeric key
    let pages = scroll_all(&e, json!({"size": 300, "sort": ["k", {"n": "asc"}]}));
    ids_once(&pages);
    let keys: Vec<(String, u64)> = pages
        .iter()
        .flatten()
        .map(|h| {
            let s = &h["sort"];
            (s[0].as_str().unwrap().to_string(), s[1].as_u64().unwrap())
        })
        .collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "strictly ascending");
}

#[test]
fn point_in_time_view() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    loaded(&e);
    let (_, page) = post(
        &e,
        "/idx/_search?scroll=1m",
        json!({"size": 1000, "sort": ["_doc"]}),
    );
    let id = page["_scroll_id"].as_str().unwrap().to_string();
    let mut seen: Vec<String> = hit_ids(&page);
    // a new document and a deletion after the first page, both refreshed
    let r = put(&e, "/idx/_doc/new?refresh=true", json!({"n": 99999}));
    assert_eq!(r.status, 201);
    let r = call(&e, Method::Get, "/idx/_search?q=n:2499", "");
    assert_eq!(r.json()["hits"]["total"]["value"], 1);
    let r = call(&e, Method::Delete, "/idx/_doc/2499?refresh=true", "");
    assert_eq!(r.status, 200);
    loop {
        let (status, p) = next(&e, &id);
        assert_eq!(status, 200);
        assert_eq!(p["hits"]["total"]["value"], DOCS);
        let ids = hit_ids(&p);
        if ids.is_empty() {
            break;
        }
        seen.extend(ids);
    }
    assert_eq!(seen.len(), DOCS);
    assert!(!seen.contains(&"new".to_string()), "later write not seen");
    assert!(seen.contains(&"2499".to_string()), "later delete not seen");
    // a new scroll sees the new state
    let (_, p) = post(&e, "/idx/_search?scroll=1m", json!({"size": 10}));
    assert_eq!(p["hits"]["total"]["value"], DOCS);
}

fn hit_ids(page: &Value) -> Vec<String> {
    page["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["_id"].as_str().unwrap().to_string())
        .collect()
}

fn assert_missing(status: u16, v: &Value, id: &str) {
    assert_eq!(status, 404, "{v}");
    assert_eq!(v["status"], 404);
    assert_eq!(v["error"]["type"], "search_phase_execution_exception");
    let cause = &v["error"]["root_cause"][0];
    assert_eq!(cause["type"], "search_context_missing_exception");
    // issue 25: the id is never echoed (a multitenant edge sent the raw one)
    assert_eq!(cause["reason"], "No search context found for id [_na_]");
    assert!(!v.to_string().contains(id), "{v}");
    assert_eq!(
        v["error"]["caused_by"]["type"],
        "search_context_missing_exception"
    );
}

#[test]
fn clear_scroll_frees_contexts() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    loaded(&e);
    let open = |e: &Engine| {
        let (_, p) = post(e, "/idx/_search?scroll=5m", json!({"size": 10}));
        p["_scroll_id"].as_str().unwrap().to_string()
    };
    let (a, b, c) = (open(&e), open(&e), open(&e));
    assert_eq!(e.scrolls.open_shard_contexts(), 6);
    // body with a list; two shard contexts per scroll, as Elasticsearch counts them
    let r = call(
        &e,
        Method::Delete,
        "/_search/scroll",
        &json!({"scroll_id": [a]}).to_string(),
    );
    assert_eq!(
        (r.status, r.json()),
        (200, json!({"succeeded": true, "num_freed": 2}))
    );
    let (status, v) = next(&e, &a);
    assert_missing(status, &v, &a);
    // clearing it again frees nothing: 404 with the same shape, as Elasticsearch
    let r = call(
        &e,
        Method::Delete,
        "/_search/scroll",
        &json!({"scroll_id": a}).to_string(),
    );
    assert_eq!(
        (r.status, r.json()),
        (404, json!({"succeeded": true, "num_freed": 0}))
    );
    // path form
    let r = call(&e, Method::Delete, &format!("/_search/scroll/{b}"), "");
    assert_eq!(r.json()["num_freed"], 2);
    let r = call(&e, Method::Delete, "/_search/scroll/_all", "");
    assert_eq!((r.status, r.json()["num_freed"].clone()), (200, json!(2)));
    assert_eq!(e.scrolls.open_shard_contexts(), 0);
    let (status, v) = next(&e, &c);
    assert_missing(status, &v, &c);
    let r = call(&e, Method::Delete, "/_search/scroll", "");
    assert_eq!(r.status, 400);
}

#[test]
fn unknown_expired_and_malformed_ids() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    loaded(&e);
    let unknown = "A".repeat(32);
    let (status, v) = next(&e, &unknown);
    assert_missing(status, &v, &unknown);
    // query-string and path forms
    let r = call(
        &e,
        Method::Get,
        &format!("/_search/scroll?scroll_id={unknown}&scroll=1m"),
        "",
    );
    assert_eq!(r.status, 404);
    let r = call(&e, Method::Get, &format!("/_search/scroll/{unknown}"), "");
    assert_eq!(r.status, 404);
    let (status, v) = next(&e, "not-a-scroll-id");
    assert_eq!(status, 400);
    assert_eq!(v["error"]["reason"], "Cannot parse scroll id");
    // keep-alive of 1ms: gone once it has passed
    let (_, p) = post(&e, "/idx/_search?scroll=1ms", json!({"size": 10}));
    let id = p["_scroll_id"].as_str().unwrap().to_string();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (status, v) = post(&e, "/_search/scroll", json!({"scroll_id": id}));
    assert_missing(status, &v, &id);
    // expired contexts are swept: nothing left open
    let (_, p) = post(&e, "/idx/_search?scroll=1ms", json!({"size": 10}));
    assert!(p["_scroll_id"].is_string());
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(e.scrolls.sweep(), 1);
    assert_eq!(e.scrolls.open_shard_contexts(), 0);
}

#[test]
fn scroll_request_validation() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    loaded(&e);
    let (status, v) = post(
        &e,
        "/idx/_search?scroll=1m",
        json!({"from": 10, "size": 10}),
    );
    assert_eq!(status, 400);
    assert_eq!(v["error"]["type"], "action_request_validation_exception");
    assert_eq!(
        v["error"]["reason"],
        "Validation Failed: 1: using [from] is not allowed in a scroll context;"
    );
    let (status, _) = post(&e, "/idx/_search?scroll=1m&from=5", json!({}));
    assert_eq!(status, 400);
    let (status, _) = post(&e, "/idx/_search?scroll=1m", json!({"size": 0}));
    assert_eq!(status, 400);
    let (status, v) = post(&e, "/idx/_search?scroll=1m", json!({"size": 10001}));
    assert_eq!(status, 400);
    assert!(v["error"]["caused_by"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("Batch size is too large"));
    let (status, _) = post(&e, "/idx/_search?scroll=2d", json!({}));
    assert_eq!(status, 400);
    let (status, _) = post(&e, "/idx/_search?scroll=soon", json!({}));
    assert_eq!(status, 400);
    let (status, v) = post(&e, "/_search/scroll", json!({"scroll": "1m"}));
    assert_eq!(status, 400, "{v}");
    let (status, _) = post(&e, "/_search/scroll", json!({"scroll_id": "x", "size": 3}));
    assert_eq!(status, 400);
    assert_eq!(e.scrolls.open_shard_contexts(), 0, "failures open nothing");
}

#[test]
fn open_context_limit() {
    let d = tempfile::tempdir().unwrap();
    let mut e = engine(d.path());
    e.scrolls = Arc::new(Scrolls::new(5));
    loaded(&e);
    let mut ids = Vec::new();
    for _ in 0..2 {
        let (status, p) = post(&e, "/idx/_search?scroll=1m", json!({"size": 5}));
        assert_eq!(status, 200);
        ids.push(p["_scroll_id"].as_str().unwrap().to_string());
    }
    // 4 of 5 shard contexts are open; a third two-shard scroll would make 6
    let (status, v) = post(&e, "/idx/_search?scroll=1m", json!({"size": 5}));
    assert_eq!(status, 500, "{v}");
    assert_eq!(v["error"]["type"], "search_phase_execution_exception");
    assert_eq!(v["error"]["root_cause"][0]["type"], "exception");
    assert_eq!(
        v["error"]["caused_by"]["reason"],
        "Trying to create too many scroll contexts. Must be less than or equal to: [5]. This limit can be set by changing the [search.max_open_scroll_context] setting."
    );
    // plain searches are not limited; open scrolls go on
    let (status, _) = post(&e, "/idx/_search", json!({"size": 5}));
    assert_eq!(status, 200);
    assert_eq!(next(&e, &ids[0]).0, 200);
    let r = call(
        &e,
        Method::Delete,
        &format!("/_search/scroll/{}", ids[1]),
        "",
    );
    assert_eq!(r.status, 200);
    let (status, _) = post(&e, "/idx/_search?scroll=1m", json!({"size": 5}));
    assert_eq!(status, 200);
}

#[test]
fn aggregations_come_with_the_first_page() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    loaded(&e);
    let (status, p) = post(
        &e,
        "/idx/_search?scroll=1m",
        json!({"size": 100, "aggs": {"m": {"max": {"field": "n"}}}}),
    );
    assert_eq!(status, 200, "{p}");
    assert_eq!(p["aggregations"]["m"]["value"], 2499.0);
    let (_, p) = next(&e, p["_scroll_id"].as_str().unwrap());
    assert!(p.get("aggregations").is_none());
    assert_eq!(p["hits"]["hits"].as_array().unwrap().len(), 100);
}
