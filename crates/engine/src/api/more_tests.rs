//! API tests of aggregations run for real, highlight, collapse, the new queries, update
//! scripts, by-query requests and `_reindex` (issue 14), written from the reference.

use serde_json::{json, Value};

use super::tests::{call, call_ct, engine, put, Reply};
use super::*;

fn post(e: &Engine, t: &str, b: Value) -> Reply {
    call(e, Method::Post, t, &b.to_string())
}

/// `ev` (2 shards): twelve documents, one per month of 2021 (15th, 10:00 UTC).
fn events(e: &Engine) {
    let r = put(
        e,
        "/ev",
        json!({"settings": {"number_of_shards": 2, "number_of_replicas": 0},
               "mappings": {"properties": {"when": {"type": "date"}, "kind": {"type": "keyword"},
                                           "n": {"type": "long"}, "text": {"type": "text"}}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let mut bulk = String::new();
    for m in 1..=12 {
        bulk.push_str(&format!(
            "{{\"index\":{{\"_index\":\"ev\",\"_id\":\"{m}\"}}}}\n"
        ));
        let kind = ["a", "b", "c"][m % 3];
        bulk.push_str(&format!(
            "{{\"when\":\"2021-{m:02}-15T10:00:00Z\",\"kind\":\"{kind}\",\"n\":{m},\"text\":\"event number {m} of kind {kind}. Another sentence here.\"}}\n"
        ));
    }
    let r = call_ct(
        e,
        Method::Post,
        "/_bulk?refresh=true",
        &bulk,
        Some("application/x-ndjson"),
    );
    assert_eq!(r.json()["errors"], false, "{}", r.text());
}

fn aggs(e: &Engine, a: Value) -> Value {
    let r = post(e, "/ev/_search", json!({"size": 0, "aggs": a}));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["aggregations"].clone()
}

#[test]
fn date_histogram_calendar_and_zones() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    events(&e);
    let v = aggs(
        &e,
        json!({"q": {"date_histogram": {"field": "when", "calendar_interval": "quarter"},
        "aggs": {"s": {"sum": {"field": "n"}}}}}),
    );
    let b = v["q"]["buckets"].as_array().unwrap();
    assert_eq!(b.len(), 4);
    assert_eq!(b[0]["key_as_string"], "2021-01-01T00:00:00.000Z");
    assert_eq!(b[0]["key"], 1_609_459_200_000i64);
    assert_eq!(b[0]["doc_count"], 3);
    assert_eq!(b[0]["s"]["value"], 6.0);
    let v = aggs(
        &e,
        json!({"m": {"date_histogram": {"field": "when", "calendar_interval": "1M", "time_zone": "America/New_York", "format": "yyyy-MM", "min_doc_count": 1}}}),
    );
    let b = v["m"]["buckets"].as_array().unwrap();
    assert_eq!(b.len(), 12);
    assert_eq!(b[0]["key_as_string"], "2021-01");
    assert_eq!(b[0]["key"], 1_609_477_200_000i64, "midnight in New York");
    // empty buckets between the data are kept (min_doc_count 0)
    let v = aggs(
        &e,
        json!({"w": {"date_histogram": {"field": "when", "calendar_interval": "week"}}}),
    );
    let b = v["w"]["buckets"].as_array().unwrap();
    assert!(b.len() > 40 && b.iter().filter(|x| x["doc_count"] == 0).count() > 30);
    let v = aggs(
        &e,
        json!({"f": {"date_histogram": {"field": "when", "fixed_interval": "30d", "keyed": true}}}),
    );
    assert!(v["f"]["buckets"].is_object());
    let r = post(
        &e,
        "/ev/_search",
        json!({"aggs": {"x": {"date_histogram": {"field": "when", "fixed_interval": "1s"}}}}),
    );
    assert_eq!(
        r.json()["error"]["type"],
        "too_many_buckets_exception",
        "{}",
        r.text()
    );
}

#[test]
fn ranges_filters_composite_metrics_and_top_hits() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    events(&e);
    let v = aggs(
        &e,
        json!({
            "dr": {"date_range": {"field": "when", "format": "yyyy-MM-dd", "ranges": [{"to": "2021-04-01"}, {"from": "2021-04-01", "key": "later"}]}},
            "r": {"range": {"field": "n", "ranges": [{"to": 4}, {"from": 4, "to": 8}]}},
            "f": {"filters": {"filters": {"a": {"term": {"kind": "a"}}, "b": {"term": {"kind": "b"}}}, "other_bucket_key": "rest"}},
            "anon": {"filters": {"filters": [{"term": {"kind": "c"}}]}},
            "one": {"filter": {"range": {"n": {"gte": 10}}}, "aggs": {"m": {"max": {"field": "n"}}}},
            "card": {"cardinality": {"field": "kind"}},
            "p": {"percentiles": {"field": "n", "percents": [50, 99]}},
            "top": {"top_hits": {"size": 2, "sort": [{"n": "desc"}], "_source": ["n"]}},
            "by": {"terms": {"field": "kind"}, "aggs": {"best": {"top_hits": {"size": 1, "sort": [{"n": "asc"}]}}}},
        }),
    );
    assert_eq!(v["dr"]["buckets"][0]["to_as_string"], "2021-04-01");
    assert_eq!(v["dr"]["buckets"][0]["doc_count"], 3);
    assert_eq!(v["dr"]["buckets"][1]["key"], "later");
    assert_eq!(v["r"]["buckets"][0]["doc_count"], 3);
    assert_eq!(v["f"]["buckets"]["a"]["doc_count"], 4);
    assert_eq!(v["f"]["buckets"]["rest"]["doc_count"], 4);
    assert_eq!(v["anon"]["buckets"][0]["doc_count"], 4);
    assert_eq!(v["one"]["doc_count"], 3);
    assert_eq!(v["one"]["m"]["value"], 12.0);
    assert_eq!(v["card"]["value"], 3);
    assert!(
        v["p"]["values"]["50.0"].as_f64().unwrap() > 5.0,
        "{}",
        v["p"]
    );
    assert_eq!(v["top"]["hits"]["total"]["value"], 12);
    assert_eq!(v["top"]["hits"]["hits"][0]["_source"], json!({"n": 12}));
    for b in v["by"]["buckets"].as_array().unwrap() {
        let n = b["best"]["hits"]["hits"][0]["_source"]["n"]
            .as_i64()
            .unwrap();
        assert!(n <= 3, "the smallest n of kind {}: {n}", b["key"]);
    }
    let mut keys = Vec::new();
    let mut after: Option<Value> = None;
    loop {
        let mut c = json!({"sources": [{"k": {"terms": {"field": "kind"}}}, {"n": {"histogram": {"field": "n", "interval": 6}}}], "size": 2});
        if let Some(a) = &after {
            c["after"] = a.clone();
        }
        let v = aggs(&e, json!({"c": {"composite": c}}));
        let b = v["c"]["buckets"].as_array().unwrap().clone();
        if b.is_empty() {
            break;
        }
        keys.extend(b.iter().map(|x| x["key"].clone()));
        after = Some(v["c"]["after_key"].clone());
    }
    assert_eq!(keys.len(), 7, "{keys:?}");
}

#[test]
fn highlight_collapse_and_new_queries() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    events(&e);
    let r = post(
        &e,
        "/ev/_search",
        json!({"query": {"match": {"text": "kind"}}, "size": 1,
        "highlight": {"fields": {"text": {"fragment_size": 20, "number_of_fragments": 1}}}}),
    );
    assert_eq!(
        r.json()["hits"]["hits"][0]["highlight"]["text"][0]
            .as_str()
            .unwrap()
            .matches("<em>kind</em>")
            .count(),
        1,
        "{}",
        r.text()
    );
    let r = post(
        &e,
        "/ev/_search",
        json!({"collapse": {"field": "kind"}, "sort": ["n"]}),
    );
    let hits = r.json()["hits"]["hits"].as_array().unwrap().clone();
    assert_eq!(hits.len(), 3, "{}", r.text());
    assert_eq!(hits[0]["fields"]["kind"], json!(["b"]));
    assert_eq!(r.json()["hits"]["total"]["value"], 12);
    assert_eq!(
        post(&e, "/ev/_search", json!({"collapse": {"field": "text"}})).status,
        400
    );
    let total = |q: Value| {
        post(&e, "/ev/_search", json!({"query": q})).json()["hits"]["total"]["value"].clone()
    };
    assert_eq!(total(json!({"regexp": {"kind": "[ab]"}})), 8);
    assert_eq!(
        total(json!({"regexp": {"kind": {"value": "A", "case_insensitive": true}}})),
        4
    );
    assert_eq!(
        total(json!({"match_bool_prefix": {"text": "event numb"}})),
        12
    );
    assert_eq!(
        total(
            json!({"combined_fields": {"query": "number 7", "fields": ["text"], "operator": "and"}})
        ),
        1
    );
    assert_eq!(
        total(
            json!({"terms_set": {"kind": {"terms": ["a", "b"], "minimum_should_match_field": "n"}}})
        ),
        1
    );
    assert_eq!(
        post(&e, "/ev/_search", json!({"query": {"regexp": {"n": "1"}}})).status,
        400
    );
}

#[test]
fn update_scripts_by_query_and_reindex() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    events(&e);
    let r = post(
        &e,
        "/ev/_update/1?refresh=true",
        json!({"script": {"source": "ctx._source.n += params.k; ctx._source.tags = ['x']", "params": {"k": 100}}}),
    );
    assert_eq!(r.json()["result"], "updated", "{}", r.text());
    assert_eq!(
        call(&e, Method::Get, "/ev/_doc/1", "").json()["_source"]["n"],
        101
    );
    let r = post(
        &e,
        "/ev/_update/1",
        json!({"script": "if (ctx._source.n > 100) { ctx.op = 'none' }"}),
    );
    assert_eq!(r.json()["result"], "noop");
    let r = post(&e, "/ev/_update/1", json!({"script": "ctx.op = 'delete'"}));
    assert_eq!(r.json()["result"], "deleted");
    let r = post(
        &e,
        "/ev/_update/99",
        json!({"script": "ctx._source.n += 1", "upsert": {"n": 0}}),
    );
    assert_eq!(r.json()["result"], "created");
    let r = post(
        &e,
        "/ev/_update/98",
        json!({"script": "ctx._source.n = 5", "upsert": {}, "scripted_upsert": true}),
    );
    assert_eq!(r.status, 201);
    let r = post(&e, "/ev/_update/2", json!({"script": "while (true) {}"}));
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["caused_by"]["type"], "script_exception");
    call(&e, Method::Post, "/ev/_refresh", "");
    let r = post(
        &e,
        "/ev/_update_by_query?refresh=true",
        json!({"query": {"term": {"kind": "a"}}, "script": "ctx._source.kind = 'z'"}),
    );
    assert_eq!(r.json()["updated"], 4, "{}", r.text());
    let r = post(
        &e,
        "/ev/_delete_by_query?refresh=true&conflicts=proceed",
        json!({"query": {"term": {"kind": "z"}}}),
    );
    let v = r.json();
    assert_eq!(
        (
            v["deleted"].clone(),
            v["batches"].clone(),
            v["failures"].clone()
        ),
        (json!(4), json!(1), json!([])),
        "{v}"
    );
    assert_eq!(
        post(&e, "/ev/_delete_by_query", json!({})).status,
        400,
        "query is required"
    );
    assert_eq!(
        post(
            &e,
            "/ev/_delete_by_query?wait_for_completion=false",
            json!({"query": {"match_all": {}}})
        )
        .status,
        400
    );
    put(&e, "/copy", json!({}));
    let r = post(
        &e,
        "/_reindex?refresh=true",
        json!({"source": {"index": "ev", "query": {"term": {"kind": "b"}}}, "dest": {"index": "copy"}}),
    );
    assert_eq!(r.json()["created"], 3, "{}", r.text());
    let r = post(
        &e,
        "/_reindex",
        json!({"source": {"index": "ev"}, "dest": {"index": "copy", "op_type": "create"}, "conflicts": "proceed"}),
    );
    assert_eq!(r.json()["version_conflicts"], 3, "{}", r.text());
    assert_eq!(r.json()["created"], 6, "{}", r.text());
    let r = post(
        &e,
        "/_reindex",
        json!({"source": {"index": "ev", "remote": {"host": "http://h:9200"}}, "dest": {"index": "copy"}}),
    );
    assert_eq!(r.status, 400);
    assert!(r.text().contains("remote"));
    assert_eq!(
        post(
            &e,
            "/_reindex",
            json!({"source": {"index": "ev"}, "dest": {"index": "ev"}})
        )
        .status,
        400
    );
}

#[test]
fn unknown_parameters_and_filter_path() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    events(&e);
    let r = call(&e, Method::Get, "/ev/_search?bogus=1", "");
    assert_eq!(r.status, 400);
    assert!(r
        .text()
        .contains("contains unrecognized parameter: [bogus]"));
    let r = call(
        &e,
        Method::Get,
        "/ev/_search?filter_path=hits.total,took",
        "",
    );
    let v = r.json();
    assert_eq!(v["hits"], json!({"total": {"value": 12, "relation": "eq"}}));
    assert!(v.get("_shards").is_none());
}

#[test]
fn fuzziness_analyzer_and_range_time_zones() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    events(&e);
    let total = |q: Value| {
        post(&e, "/ev/_search", json!({"query": q})).json()["hits"]["total"]["value"].clone()
    };
    assert_eq!(total(json!({"match": {"text": "evnt"}})), 0);
    assert_eq!(
        total(json!({"match": {"text": {"query": "evnt", "fuzziness": "AUTO"}}})),
        12
    );
    assert_eq!(
        total(json!({"match": {"text": {"query": "evnt", "fuzziness": 0}}})),
        0
    );
    assert_eq!(total(json!({"query_string": {"query": "text:evnt~1"}})), 12);
    assert_eq!(
        post(
            &e,
            "/ev/_search",
            json!({"query": {"match": {"text": {"query": "x", "fuzziness": "lots"}}}})
        )
        .status,
        400
    );
    assert_eq!(
        total(json!({"match": {"text": {"query": "Event", "analyzer": "whitespace"}}})),
        0,
        "whitespace keeps the capital"
    );
    assert_eq!(
        post(
            &e,
            "/ev/_search",
            json!({"query": {"match": {"text": {"query": "x", "analyzer": "my_custom"}}}})
        )
        .status,
        400
    );
    // 2021-01-15T10:00Z is 11:00 in Paris: a local bound of 10:30 there excludes it
    let q = |tz: Option<&str>| {
        let mut r = json!({"gte": "2021-01-15T10:30:00", "lt": "2021-01-16"});
        if let Some(t) = tz {
            r["time_zone"] = json!(t);
        }
        total(json!({"range": {"when": r}}))
    };
    assert_eq!(q(None), 0);
    assert_eq!(q(Some("Europe/Paris")), 1);
}
