//! API tests of the search side of the issue 14 audit, from the Elasticsearch 7.10
//! reference: `range` and `date_range` aggregations (only the ranges asked for, sorted by
//! `from`, overlapping, keyed, on date fields, `top_hits` in their buckets, refusals),
//! fractional bounds of `range` queries on integer fields, and the `source` parameter that
//! stands for a missing body of `_search`, `_count` and `_msearch`.

use serde_json::{json, Value};

use super::audit_tests::{bulk, get, kind, post, reason};
use super::tests::{call, engine, put};
use super::*;

/// `t`: `n` long 1..=10, `p` double `n / 2`, `d` the first of month `n` of 2021.
fn numbers() -> (tempfile::TempDir, Engine) {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let r = put(
        &e,
        "/t",
        json!({"settings": {"number_of_replicas": 0},
               "mappings": {"properties": {"n": {"type": "long"}, "p": {"type": "double"},
                                           "d": {"type": "date"}}}}),
    );
    assert_eq!(r.status, 200);
    let docs: Vec<Value> = (1..=10)
        .map(|i| {
            json!({"id": i.to_string(), "n": i, "p": i as f64 / 2.0,
                        "d": format!("2021-{i:02}-01")})
        })
        .collect();
    bulk(&e, "t", &docs);
    (d, e)
}

#[test]
fn range_aggregations_and_fractional_range_bounds() {
    let (_d, e) = numbers();
    let count = |q: Value| post(&e, "/t/_count", json!({"query": q})).json()["count"].clone();
    // a fractional bound on a long field rounds as Elasticsearch rounds it (was a panic)
    assert_eq!(count(json!({"range": {"n": {"gte": 4.5, "lt": 8}}})), 3);
    assert_eq!(count(json!({"range": {"n": {"gt": 4.5, "lte": 8.5}}})), 4);
    assert_eq!(count(json!({"range": {"n": {"gte": 5, "lt": 5}}})), 0);
    assert_eq!(count(json!({"range": {"p": {"gte": 1, "lt": 3.5}}})), 5);
    // integer bounds on a double field: 1.0, 1.5, 2.0, 2.5
    assert_eq!(count(json!({"range": {"p": {"gte": 1, "lt": 3}}})), 4);
    let aggs = json!({
        "r": {"range": {"field": "n", "ranges": [{"from": 4, "to": 8}, {"to": 4.5}, {"from": 8}]}},
        "o": {"range": {"field": "n", "keyed": true, "ranges": [{"to": 8, "key": "low"}, {"from": 4}]},
              "aggs": {"m": {"max": {"field": "n"}}}},
        "dr": {"date_range": {"field": "d", "format": "yyyy-MM", "ranges": [{"to": "2021-03-01"}]}},
    });
    let v = post(&e, "/t/_search?size=0", json!({ "aggs": aggs })).json()["aggregations"].clone();
    assert_eq!(
        v["r"]["buckets"],
        json!([
            {"key": "*-4.5", "to": 4.5, "doc_count": 4},
            {"key": "4.0-8.0", "from": 4.0, "to": 8.0, "doc_count": 4},
            {"key": "8.0-*", "from": 8.0, "doc_count": 3},
        ]),
        "only the ranges asked for, sorted by from: {v}"
    );
    assert_eq!(
        v["o"]["buckets"]["low"]["doc_count"], 7,
        "overlapping ranges: {v}"
    );
    assert_eq!(v["o"]["buckets"]["4.0-*"]["doc_count"], 7);
    assert_eq!(v["o"]["buckets"]["4.0-*"]["m"]["value"], 10.0);
    assert!(
        v["o"]["buckets"]["low"].get("key").is_none(),
        "keyed buckets have no key"
    );
    assert_eq!(
        v["dr"]["buckets"],
        json!([{"key": "*-2021-03", "to": 1614556800000.0, "to_as_string": "2021-03",
                "doc_count": 2}])
    );
}

#[test]
fn range_buckets_on_dates_hold_their_top_hits() {
    let (_d, e) = numbers();
    let aggs = json!({
        // a `range` on a date field: bounds in the field's format, keys as dates
        "r": {"range": {"field": "d", "ranges": [{"from": "2021-09-01"}, {"to": "2021-02-01", "key": 7}]},
              "aggs": {"top": {"top_hits": {"size": 5, "sort": [{"n": "asc"}], "_source": ["n"]}}}},
        "nr": {"range": {"field": "n", "ranges": [{"from": 9.5}]},
               "aggs": {"top": {"top_hits": {"sort": [{"n": "desc"}]}}}},
        "h": {"histogram": {"field": "d", "interval": 86400000, "min_doc_count": 1}},
    });
    let r = post(&e, "/t/_search?size=0", json!({ "aggs": aggs }));
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json()["aggregations"].clone();
    let b = &v["r"]["buckets"];
    assert_eq!(b[0]["key"], "7", "a numeric key is its text: {v}");
    assert_eq!(b[0]["to_as_string"], "2021-02-01T00:00:00.000Z");
    assert_eq!(b[0]["doc_count"], 1);
    let ns = |hits: &Value| -> Vec<i64> {
        hits["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["_source"]["n"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(ns(&b[0]["top"]), vec![1], "{v}");
    assert_eq!(b[1]["key"], "2021-09-01T00:00:00.000Z-*");
    assert_eq!(ns(&b[1]["top"]), vec![9, 10], "{v}");
    assert_eq!(ns(&v["nr"]["buckets"][0]["top"]), vec![10], "{v}");
    let h = &v["h"]["buckets"][0];
    assert_eq!(h["key_as_string"], "2021-01-01T00:00:00.000Z", "{v}");
    assert_eq!(h["doc_count"], 1);
}

#[test]
fn range_aggregations_refuse_what_they_do_not_take() {
    let (_d, e) = numbers();
    let agg = |body: Value| {
        post(
            &e,
            "/t/_search?size=0",
            json!({"aggs": {"r": {"range": body}}}),
        )
    };
    let r = agg(json!({"field": "n", "keyed": "yes", "ranges": [{"to": 1}]}));
    assert_eq!((r.status, kind(&r).as_str()), (400, "parsing_exception"));
    let r = agg(json!({"field": "n", "missing": 0, "ranges": [{"to": 1}]}));
    assert_eq!(r.status, 400);
    assert!(reason(&r).contains("[missing]"), "{}", r.text());
    let r = agg(json!({"field": "n", "format": "0.0", "ranges": [{"to": 1}]}));
    assert!(reason(&r).contains("not supported"), "{}", r.text());
    let r = agg(json!({"field": "n", "ranges": []}));
    assert_eq!(r.status, 400, "{}", r.text());
    let r = agg(json!({"field": "n", "ranges": [{"to": 1, "key": ["a"]}]}));
    assert_eq!(r.status, 400, "{}", r.text());
    let r = agg(json!({"field": "n", "ranges": [{"to": 1, "size": 3}]}));
    assert_eq!(reason(&r), "[range] unknown range field [size]");
}

#[test]
fn the_source_parameter_stands_for_a_missing_body() {
    let (_d, e) = numbers();
    let q = "%7B%22query%22%3A%7B%22term%22%3A%7B%22n%22%3A3%7D%7D%7D"; // {"query":{"term":{"n":3}}}
    let json_ct = "source_content_type=application/json";
    let r = get(&e, &format!("/t/_search?source={q}&{json_ct}"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["hits"]["total"]["value"], 1);
    let r = get(&e, &format!("/t/_count?source={q}&{json_ct}"));
    assert_eq!(r.json()["count"], 1, "{}", r.text());
    // _msearch: NDJSON in the parameter
    let lines = "%7B%7D%0A%7B%22query%22%3A%7B%22term%22%3A%7B%22n%22%3A3%7D%7D%7D%0A"; // {}\n{...}\n
    let r = get(
        &e,
        &format!("/t/_msearch?source={lines}&source_content_type=application/x-ndjson"),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["responses"][0]["hits"]["total"]["value"], 1);
    // as Elasticsearch 7.10 answers: a 500 without (or with another) source_content_type
    let r = get(&e, &format!("/t/_search?source={q}"));
    assert_eq!(
        (r.status, kind(&r).as_str()),
        (500, "illegal_state_exception")
    );
    assert_eq!(
        reason(&r),
        "source and source_content_type parameters are required"
    );
    let r = get(
        &e,
        &format!("/t/_search?source={q}&source_content_type=text/plain"),
    );
    assert_eq!(
        reason(&r),
        "Unknown value for source_content_type [text/plain]"
    );
    // with a body, the parameters are not read: unrecognized
    let r = call(
        &e,
        Method::Post,
        &format!("/t/_search?source={q}&{json_ct}"),
        r#"{"size": 0}"#,
    );
    assert_eq!(r.status, 400);
    assert_eq!(
        reason(&r),
        "request [/t/_search] contains unrecognized parameters: [source] -> did you mean [_source]?, [source_content_type]"
    );
}

#[test]
fn percentiles_of_small_sets_are_elasticsearchs() {
    let (_d, e) = numbers();
    let aggs = json!({
        "p": {"percentiles": {"field": "n", "percents": [1, 50, 99]}},
        "l": {"percentiles": {"field": "n", "percents": [50], "keyed": false}},
        "d": {"percentiles": {"field": "d", "percents": [50]}},
        "t": {"terms": {"field": "n", "size": 1}, "aggs": {"p": {"percentiles": {"field": "p"}}}},
    });
    let r = post(&e, "/t/_search?size=0", json!({ "aggs": aggs }));
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json()["aggregations"].clone();
    let near = |x: &Value, want: f64| (x.as_f64().unwrap() - want).abs() < 1e-9;
    // rank q * (n - 1) of 1..=10, interpolated
    assert!(near(&v["p"]["values"]["1.0"], 1.09), "{v}");
    assert!(near(&v["p"]["values"]["50.0"], 5.5), "{v}");
    assert!(near(&v["p"]["values"]["99.0"], 9.91), "{v}");
    assert_eq!(v["l"]["values"], json!([{"key": 50.0, "value": 5.5}]));
    // 2021-05-01 and 2021-06-01, halfway
    assert!(near(&v["d"]["values"]["50.0"], 1_621_166_400_000.0), "{v}");
    assert!(
        v.as_object().unwrap().keys().all(|k| !k.contains('\u{1}')),
        "no helper aggregation leaks: {v}"
    );
    // under a bucket aggregation: tantivy's sketch (about 1% relative error)
    let p50 = v["t"]["buckets"][0]["p"]["values"]["50.0"]
        .as_f64()
        .unwrap();
    assert!((p50 - 0.5).abs() <= 0.01, "{v}");
}

#[test]
fn multi_valued_fields_sort_by_their_mode() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let r = put(
        &e,
        "/m",
        json!({"settings": {"number_of_replicas": 0},
               "mappings": {"properties": {"v": {"type": "long"}, "k": {"type": "keyword"}}}}),
    );
    assert_eq!(r.status, 200);
    bulk(
        &e,
        "m",
        &[
            json!({"id": "a", "v": [9, 1], "k": ["z", "b"]}),
            json!({"id": "b", "v": [4, 5], "k": ["c", "d"]}),
            json!({"id": "c", "v": [3], "k": ["a", "y"]}),
        ],
    );
    let order = |sort: Value| -> (Vec<String>, Vec<Value>) {
        let r = post(&e, "/m/_search", json!({ "sort": sort }));
        assert_eq!(r.status, 200, "{}", r.text());
        let hits = r.json()["hits"]["hits"].as_array().unwrap().clone();
        let ids = hits.iter().map(|h| h["_id"].as_str().unwrap().to_string());
        (
            ids.collect(),
            hits.iter().map(|h| h["sort"][0].clone()).collect(),
        )
    };
    // ascending: the least value; descending: the greatest (whatever the order indexed)
    assert_eq!(order(json!([{"v": "asc"}])).0, ["a", "c", "b"]);
    assert_eq!(order(json!([{"v": "desc"}])).0, ["a", "b", "c"]);
    assert_eq!(order(json!([{"k": "asc"}])).0, ["c", "a", "b"]);
    assert_eq!(order(json!([{"k": {"order": "desc"}}])).0, ["a", "c", "b"]);
    let (ids, sort) = order(json!([{"v": {"order": "asc", "mode": "sum"}}]));
    assert_eq!(
        (ids, sort),
        (
            vec!["c".into(), "b".into(), "a".into()],
            vec![json!(3), json!(9), json!(10)]
        )
    );
    // avg of a long field rounds half up: 4.5 -> 5, 5, 3
    let (_, sort) = order(json!([{"v": {"mode": "avg"}}]));
    assert_eq!(sort, vec![json!(3), json!(5), json!(5)]);
    let (ids, _) = order(json!([{"v": {"mode": "median", "order": "desc"}}, {"_id": "asc"}]));
    assert_eq!(ids, ["a", "b", "c"]);
    let (_, sort) = order(json!([{"v": {"numeric_type": "double"}}]));
    assert_eq!(sort[0], json!(1.0));
    let r = post(&e, "/m/_search", json!({"sort": [{"k": {"mode": "avg"}}]}));
    assert_eq!(r.status, 400);
    assert_eq!(
        reason(&r),
        "we only support AVG, MEDIAN and SUM on number based fields"
    );
    let r = post(
        &e,
        "/m/_search",
        json!({"sort": [{"k": {"numeric_type": "long"}}]}),
    );
    assert_eq!(r.status, 400);
    let r = post(&e, "/m/_search", json!({"sort": [{"v": {"missing": 0}}]}));
    assert_eq!(r.status, 400);
    assert!(reason(&r).contains("[missing]"), "{}", r.text());
}
