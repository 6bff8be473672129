//! Issue 25, the memory one request may take in the embedded engine, end to end through
//! `searchgate serve` (spec 1.6: multitenant clusters share the engine; spec 7: errors in
//! Elasticsearch's shape; spec 8: no tenant takes more than its plan or takes the service
//! down). Before, `_mget` of 500,000 ids grew the engine to 2.4 GB and `_msearch` of 5000
//! items to 1.1 GB. Now what a request builds is charged against the engine's request
//! circuit breaker (`[engine] breaker_request_mb`, here 1 MB so documents of 100 KB show
//! the boundary) and refused beyond it with 429 `circuit_breaking_exception`, as
//! Elasticsearch refuses; the other tenant is answered all along. Also Elasticsearch's own
//! limits where the engine used tantivy's: `search.max_buckets` (400
//! `too_many_buckets_exception` at 65,536 buckets, also for a tiny histogram interval) and
//! the longest keyword Lucene indexes (32,766 bytes).

use crate::support::e2e;

use e2e::{es_error, ClusterSpec, Config, Edge, Response, Tenant};
use serde_json::{json, Value};

/// Bytes of each document's `pad`.
const PAD: usize = 100 * 1024;

fn config() -> Config {
    Config::new()
        .engine_key("breaker_request_mb", "1")
        .cluster(ClusterSpec::multitenant("alpha", "p"))
        .cluster(ClusterSpec::multitenant("bravo", "p"))
}

/// `t`'s one-shard index `big` of 12 documents of [`PAD`] bytes (ids 0..12), and `small`
/// with one small document.
fn seed(edge: &Edge, t: &Tenant) {
    for name in ["big", "small"] {
        let body = json!({"settings": {"number_of_shards": 1, "number_of_replicas": 0},
            "mappings": {"properties": {"pad": {"type": "text", "index": false}}}});
        let r = edge.send(&t.json("PUT", &format!("/{name}"), &body));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    for id in 0..12 {
        let doc = json!({"pad": "x".repeat(PAD)});
        let r = edge.send(&t.json("PUT", &format!("/big/_doc/{id}"), &doc));
        assert!(r.status < 300, "{}", r.text());
    }
    let r = edge.send(&t.json("PUT", "/small/_doc/1", &json!({"n": 1})));
    assert!(r.status < 300, "{}", r.text());
    let r = edge.send(&t.req("POST", "/big,small/_refresh"));
    assert_eq!(r.status, 200, "{}", r.text());
}

/// Every tenant is still served: a search and a write each.
fn all_answered(edge: &Edge, tenants: &[&Tenant]) {
    for t in tenants {
        let r = edge.send(&t.req("GET", "/small/_search"));
        assert_eq!(r.status, 200, "{}", r.text());
        let r = edge.send(&t.json("POST", "/small/_doc", &json!({"n": 2})));
        assert_eq!(r.status, 201, "{}", r.text());
    }
}

/// The request breaker's 429, in Elasticsearch's shape.
fn broken(r: &Response, what: &str) {
    let (kind, reason) = es_error(r, 429);
    assert_eq!(kind, "circuit_breaking_exception", "{reason}");
    let head = format!("[request] Data too large, data for [{what}] would be [");
    assert!(reason.starts_with(&head), "{reason}");
    assert!(
        reason.ends_with("which is larger than the limit of [1048576/1mb]"),
        "{reason}"
    );
    let e = &r.json()["error"];
    assert_eq!(e["bytes_limit"], 1048576, "{e}");
    assert_eq!(e["durability"], "TRANSIENT", "{e}");
    assert!(e["bytes_wanted"].as_u64().unwrap() > 1048576, "{e}");
}

fn mget(edge: &Edge, t: &Tenant, n: usize) -> Response {
    let ids: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    edge.send(&t.json("POST", "/big/_mget", &json!({ "ids": ids })))
}

// spec 8: an `_mget` keeps each document it found until the answer is written: ten
// documents of 100 KB fit in 1 MB (N), eleven do not (N+1: 429, nothing partial).
#[test]
fn an_mget_takes_at_most_the_request_budget() {
    let edge = Edge::start(config());
    let (alpha, bravo) = (edge.tenant("alpha"), edge.tenant("bravo"));
    seed(&edge, &alpha);
    seed(&edge, &bravo);

    let r = mget(&edge, &alpha, 10);
    assert_eq!(r.status, 200, "{}", r.text());
    let docs = r.json()["docs"].as_array().unwrap().clone();
    assert_eq!(docs.len(), 10);
    assert!(docs
        .iter()
        .all(|d| d["found"] == true && d["_index"] == "big"));
    broken(&mget(&edge, &alpha, 11), "<mget>");
    // missing ids are small: far more of them fit
    let ids: Vec<String> = (100..2_100).map(|i| i.to_string()).collect();
    let r = edge.send(&alpha.json("POST", "/big/_mget", &json!({ "ids": ids })));
    assert_eq!(r.status, 200, "{}", r.text());
    all_answered(&edge, &[&alpha, &bravo]);
}

// spec 8: each hit's rendered source is charged as it is fetched (its stored document
// while it is rendered) and again as the response's bytes: five hits of 100 KB fit in
// 1 MB (N), six do not (N+1).
#[test]
fn a_search_takes_at_most_the_request_budget() {
    let edge = Edge::start(config());
    let (alpha, bravo) = (edge.tenant("alpha"), edge.tenant("bravo"));
    seed(&edge, &alpha);
    seed(&edge, &bravo);

    let r = edge.send(&alpha.req("GET", "/big/_search?size=5"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["hits"]["hits"].as_array().unwrap().len(), 5);
    // six rendered sources (615 KB) fit; with the answer's bytes (615 KB more) they do not
    broken(
        &edge.send(&alpha.req("GET", "/big/_search?size=6")),
        "<response>",
    );
    // without sources the stored documents are read one at a time and given back
    let r = edge.send(&alpha.req("GET", "/big/_search?size=12&_source=false"));
    assert_eq!(r.status, 200, "{}", r.text());
    all_answered(&edge, &[&alpha, &bravo]);
}

fn msearch(edge: &Edge, t: &Tenant, n: usize) -> Vec<Value> {
    let mut lines = Vec::new();
    for i in 0..n {
        lines.push(json!({"index": "big"}));
        lines.push(json!({"query": {"ids": {"values": [i.to_string()]}}}));
    }
    let r = edge.send(&t.ndjson("POST", "/_msearch", &lines));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["responses"].as_array().unwrap().clone()
}

// spec 8: an `_msearch` keeps each search's response as bytes; a search is refused as an
// item (429 in `responses`, as Elasticsearch reports a failed item) when what the earlier
// items hold and its own hits do not fit: nine of 100 KB fit (N), the tenth does not
// (N+1), and the request itself still answers.
#[test]
fn an_msearch_takes_at_most_the_request_budget() {
    let edge = Edge::start(config());
    let (alpha, bravo) = (edge.tenant("alpha"), edge.tenant("bravo"));
    seed(&edge, &alpha);
    seed(&edge, &bravo);

    let nine = msearch(&edge, &alpha, 9);
    assert!(nine.iter().all(|r| r["status"] == 200), "{nine:?}");
    let ten = msearch(&edge, &alpha, 10);
    assert!(ten[..9].iter().all(|r| r["status"] == 200));
    assert_eq!(ten[9]["status"], 429, "{}", ten[9]);
    assert_eq!(ten[9]["error"]["type"], "circuit_breaking_exception");
    all_answered(&edge, &[&alpha, &bravo]);
}

/// A histogram of `n` with interval 1 over documents 0 and `max`.
fn histogram(edge: &Edge, t: &Tenant, index: &str, max: u64) -> Response {
    let body = json!({"settings": {"number_of_shards": 1, "number_of_replicas": 0},
        "mappings": {"properties": {"n": {"type": "long"}}}});
    let r = edge.send(&t.json("PUT", &format!("/{index}"), &body));
    assert_eq!(r.status, 200, "{}", r.text());
    for (id, n) in [(1, 0), (2, max)] {
        let target = format!("/{index}/_doc/{id}?refresh=true");
        let r = edge.send(&t.json("PUT", &target, &json!({ "n": n })));
        assert!(r.status < 300, "{}", r.text());
    }
    let aggs = json!({"size": 0, "aggs": {"h": {"histogram": {"field": "n", "interval": 1}}}});
    edge.send(&t.json("POST", &format!("/{index}/_search"), &aggs))
}

// spec 7: a histogram whose interval makes more than `search.max_buckets` (65,535)
// buckets is 400 `too_many_buckets_exception`, as in Elasticsearch 7.10 (it was a 400
// naming tantivy's memory limit): 65,535 buckets (N) answer, 65,536 (N+1) do not, nor
// does a tiny interval over a wide range; the same for `date_histogram`.
#[test]
fn histograms_stop_at_max_buckets() {
    let edge = Edge::start(Config::new().cluster(ClusterSpec::multitenant("alpha", "p")));
    let alpha = edge.tenant("alpha");
    let r = histogram(&edge, &alpha, "n1", 65_534);
    assert_eq!(r.status, 200, "{}", r.text());
    let buckets = &r.json()["aggregations"]["h"]["buckets"];
    assert_eq!(buckets.as_array().unwrap().len(), 65_535);
    let too_many = |r: &Response| {
        let (kind, reason) = es_error(r, 400);
        assert_eq!(kind, "too_many_buckets_exception", "{reason}");
        assert!(
            reason.contains("Must be less than or equal to: [65535] but was [65536]"),
            "{reason}"
        );
        assert_eq!(r.json()["error"]["max_buckets"], 65535);
    };
    too_many(&histogram(&edge, &alpha, "n2", 65_535));
    let tiny = json!({"size": 0, "aggs": {"h": {"histogram": {"field": "n", "interval": 0.0001}}}});
    too_many(&edge.send(&alpha.json("POST", "/n2/_search", &tiny)));

    let body = json!({"mappings": {"properties": {"t": {"type": "date"}}}});
    let r = edge.send(&alpha.json("PUT", "/d", &body));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = edge.send(&alpha.json("PUT", "/d/_doc/1?refresh=true", &json!({"t": "2020-01-01"})));
    assert!(r.status < 300, "{}", r.text());
    let r = edge.send(&alpha.json("PUT", "/d/_doc/2?refresh=true", &json!({"t": "2021-01-01"})));
    assert!(r.status < 300, "{}", r.text());
    let tiny = json!({"size": 0, "aggs": {"h": {"date_histogram": {"field": "t", "fixed_interval": "1s"}}}});
    too_many(&edge.send(&alpha.json("POST", "/d/_search", &tiny)));
    let fine = json!({"size": 0, "aggs": {"h": {"date_histogram": {"field": "t", "calendar_interval": "day"}}}});
    let r = edge.send(&alpha.json("POST", "/d/_search", &fine));
    assert_eq!(r.status, 200, "{}", r.text());
}

// Lucene's longest term: a keyword of 32,766 bytes is indexed (N), one of 32,767 (N+1)
// refuses the document with 400 `illegal_argument_exception` "Document contains at least
// one immense term" (single write and bulk item alike), as in Elasticsearch.
#[test]
fn keywords_longer_than_lucenes_longest_term_are_refused() {
    let edge = Edge::start(Config::new().cluster(ClusterSpec::multitenant("alpha", "p")));
    let alpha = edge.tenant("alpha");
    let body = json!({"mappings": {"properties": {"k": {"type": "keyword"}}}});
    let r = edge.send(&alpha.json("PUT", "/kw", &body));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = edge.send(&alpha.json("PUT", "/kw/_doc/1", &json!({"k": "a".repeat(32_766)})));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = edge.send(&alpha.json("PUT", "/kw/_doc/2", &json!({"k": "a".repeat(32_767)})));
    let (kind, reason) = es_error(&r, 400);
    assert_eq!(kind, "illegal_argument_exception");
    assert!(
        reason.starts_with("Document contains at least one immense term in field=\"k\""),
        "{reason}"
    );
    let lines = [
        json!({"index": {"_id": "3"}}),
        json!({"k": "b".repeat(40_000)}),
    ];
    let r = edge.send(&alpha.ndjson("POST", "/kw/_bulk", &lines));
    assert_eq!(r.status, 200, "{}", r.text());
    let item = &r.json()["items"][0]["index"];
    assert_eq!(item["status"], 400, "{item}");
    assert_eq!(
        item["error"]["type"], "illegal_argument_exception",
        "{item}"
    );
    let r = edge.send(&alpha.req("GET", "/kw/_doc/2"));
    assert_eq!(r.status, 404, "{}", r.text());
}
