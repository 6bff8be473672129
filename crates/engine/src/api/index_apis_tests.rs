//! API tests of issue 30's index-API family, from Elasticsearch 7.10's reference: a
//! search with aggregations over a pattern that matches no index answers without
//! `aggregations` (the empty response of a search over no shard); `query_string` syntax
//! errors are 400 (Lucene's classic grammar: `^` wants a number, `/regexp/` is a regular
//! expression and must be terminated).

use serde_json::json;

use super::audit_tests::{bulk, post, reason};
use super::tests::{engine, put};

#[test]
fn aggregations_over_no_index_are_omitted() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let body = json!({"aggs": {"a": {"terms": {"field": "t"}}}});
    let r = post(&e, "/nomatch*/_search", body.clone());
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["_shards"]["total"], 0);
    assert!(v.get("aggregations").is_none(), "{v}");
    // an index that exists but holds nothing still answers its (empty) aggregations
    assert_eq!(put(&e, "/empty", json!({})).status, 200);
    let v = post(&e, "/empty/_search", body).json();
    assert_eq!(v["aggregations"]["a"]["buckets"], json!([]), "{v}");
}

#[test]
fn query_string_syntax_errors_are_400() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let m = json!({"mappings": {"properties": {"t": {"type": "text"}, "k": {"type": "keyword"}}}});
    assert_eq!(put(&e, "/q", m).status, 200);
    bulk(
        &e,
        "q",
        &[
            json!({"id": "1", "t": "quick fox", "k": "abc"}),
            json!({"id": "2", "t": "lazy dog", "k": "abd/x"}),
        ],
    );
    let qs = |q: &str| {
        post(
            &e,
            "/q/_search",
            json!({"query": {"query_string": {"query": q}}}),
        )
    };
    for q in [
        "t:(fox",
        "fox AND",
        "\"unclosed",
        "t:[1 TO",
        "t:",
        "^2",
        "(",
        ")",
        "fox OR OR dog",
        "a:b:c",
        "AND",
        "fox^",
        "fox^ dog",
        "/ab",
        "k:/ab",
        "t:/qu.*",
    ] {
        let r = qs(q);
        assert_eq!(r.status, 400, "{q}: {}", r.text());
        assert!(
            reason(&r).starts_with(&format!("Failed to parse query [{q}]")),
            "{q}: {}",
            r.text()
        );
    }
    // a regular expression is one, on the named field or the default ones
    let hits = |q: &str| qs(q).json()["hits"]["total"]["value"].clone();
    assert_eq!(hits("k:/ab./"), 1);
    assert_eq!(hits("k:/ab.\\/x/"), 1, "an escaped slash");
    assert_eq!(hits("t:/qu.*/"), 1);
    assert_eq!(hits("/(qu|la).*/"), 2);
    assert_eq!(hits("fox^2 dog"), 2);
}

// Elasticsearch 7.10 reference, "Date math support in index names": a URL-encoded
// `<name-{now/d}>` in the path creates, writes and searches the resolved index
#[test]
fn date_math_index_names_in_paths() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let today = crate::aggs::dates::format(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64,
        Some("yyyy.MM.dd"),
        &jiff::tz::TimeZone::UTC,
    )
    .unwrap();
    let enc = "%3Cdm-%7Bnow%2Fd%7D%3E";
    let r = put(&e, &format!("/{enc}"), json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["index"], format!("dm-{today}"));
    let r = post(&e, &format!("/{enc}/_doc?refresh=true"), json!({"a": 1}));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["_index"], format!("dm-{today}"));
    let v = post(&e, &format!("/{enc}/_search"), json!({})).json();
    assert_eq!(v["hits"]["total"]["value"], 1, "{v}");
    let r = post(&e, "/%3Cdm-%7Bnow%2Fd%3E/_search", json!({}));
    assert_eq!(r.status, 400, "{}", r.text());
}

// Elasticsearch 7.10 reference, "Date math support in index names": date math in bodies
// too (`_bulk` actions' `_index`, `_aliases` actions' `index`/`alias`, `_reindex`'s
// `source.index` and `dest.index`), resolved once per request; one the engine cannot read
// fails its bulk item (400), the other items are applied
#[test]
fn date_math_index_names_in_bodies() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let today = || {
        crate::aggs::dates::format(
            crate::date_names::wall_ms(),
            Some("yyyy.MM.dd"),
            &jiff::tz::TimeZone::UTC,
        )
        .unwrap()
    };
    let before = today();
    assert_eq!(put(&e, &format!("/dm-{before}"), json!({})).status, 200);
    assert_eq!(put(&e, &format!("/copy-{before}"), json!({})).status, 200);
    let body = "{\"index\":{\"_index\":\"<dm-{now/d}>\",\"_id\":\"1\"}}\n{\"a\":1}\n\
                {\"index\":{\"_index\":\"<dm-{now/d>\",\"_id\":\"2\"}}\n{\"a\":1}\n";
    let r = super::tests::call_ct(
        &e,
        searchgate_core::proto::Method::Post,
        "/_bulk?refresh=true",
        body,
        Some("application/x-ndjson"),
    );
    let v = r.json();
    if today() != before {
        return; // midnight passed during the test: nothing more to compare
    }
    assert_eq!(
        v["items"][0]["index"]["_index"],
        format!("dm-{before}"),
        "{v}"
    );
    assert_eq!(v["items"][0]["index"]["status"], 201, "{v}");
    assert_eq!(v["items"][1]["index"]["status"], 400, "{v}");
    let r = post(
        &e,
        "/_aliases",
        json!({"actions": [{"add": {"index": "<dm-{now/d}>", "alias": "<today-{now/d}>"}}]}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let v = super::audit_tests::get(&e, &format!("/_alias/today-{before}")).json();
    assert!(v.get(format!("dm-{before}")).is_some(), "{v}");
    let r = post(
        &e,
        "/_reindex?refresh=true",
        json!({"source": {"index": "<dm-{now/d}>"}, "dest": {"index": "<copy-{now/d}>"}}),
    );
    assert_eq!(r.json()["created"], 1, "{}", r.text());
    let r = post(
        &e,
        "/_reindex",
        json!({"source": {"index": "<dm-{now/d>"}, "dest": {"index": "x"}}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    let _ = reason(&r);
    let _ = bulk;
}
