//! Issue 25, the values a tenant sends, end to end through `searchgate serve` on the
//! embedded engine (spec 7: errors of the right status and Elasticsearch's shape; spec 8:
//! the request deadline): every request class that once took the service down or read a
//! value otherwise than the upstream, sent by one tenant with its own credentials, and
//! after each class every tenant is still answered.
//!
//! - no panic from a number: keep-alives past the clock's range (`scroll=150000000000000d`,
//!   `_pit?keep_alive=`, a scroll continuation, a point in time's `keep_alive`), windows
//!   past an `int`, waits past any deadline: 400 with Elasticsearch's error, or an answer;
//! - one reading: `scroll=1%20h` and `+1h` are an hour to the edge and the engine alike;
//!   what Elasticsearch refuses (`1M`, a trailing space, fractions, `v=yes`) is refused by
//!   the edge with Elasticsearch's 400 naming the parameter;
//! - waits end before the deadline (issue 25 #4): a cluster-health wait of an hour is
//!   answered by the engine (its own `timed_out`), not by the edge's 504.

use crate::support::e2e;

use e2e::{es_error, ClusterSpec, Config, Edge, PlanSpec, Response, Tenant};
use serde_json::{json, Value};

fn seed(edge: &Edge, t: &Tenant) {
    assert_eq!(edge.send(&t.req("PUT", "/books")).status, 200);
    for n in 0..3 {
        let r = edge.send(&t.json(
            "PUT",
            &format!("/books/_doc/{n}?refresh=true"),
            &json!({"n": n, "d": "2020-01-01"}),
        ));
        assert!(r.status < 300, "{}", r.text());
    }
}

/// Every tenant still gets its answers (the edge and its engine are up).
fn all_answered(edge: &Edge, tenants: &[&Tenant]) {
    for t in tenants {
        let r = edge.send(&t.req("GET", "/books/_search?size=0"));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["hits"]["total"]["value"], 3);
    }
}

/// The 400 of a keep-alive past `search.max_keep_alive`, as Elasticsearch's shards
/// answer it.
fn keep_alive_too_large(r: &Response, shown: &str) {
    assert_eq!(r.status, 400, "{}", r.text());
    let v = r.json();
    let e = &v["error"];
    assert_eq!(e["type"], "search_phase_execution_exception", "{v}");
    assert_eq!(e["reason"], "all shards failed", "{v}");
    let why = format!("Keep alive for request ({shown}) is too large. It must be less than (1d). This limit can be set by changing the [search.max_keep_alive] cluster level setting.");
    for cause in [&e["caused_by"], &e["root_cause"][0]] {
        assert_eq!(cause["type"], "illegal_argument_exception", "{v}");
        assert_eq!(cause["reason"], why.as_str(), "{v}");
    }
    assert_eq!(v["status"], 400);
}

fn sealed(r: &Response, field: &str) -> String {
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()[field].as_str().expect("an id").to_string()
}

fn start() -> (Edge, Tenant, Tenant) {
    let config = Config::new()
        .plan(PlanSpec::new("p").contexts(100))
        .cluster(ClusterSpec::multitenant("alpha", "p"))
        .cluster(ClusterSpec::multitenant("bravo", "p"));
    let edge = Edge::start(config);
    let (alpha, bravo) = (edge.tenant("alpha"), edge.tenant("bravo"));
    seed(&edge, &alpha);
    seed(&edge, &bravo);
    (edge, alpha, bravo)
}

// issue 25 #1 and its class: keep-alives past the clock's range, by every way a
// keep-alive reaches the edge, each sent more times than the edge has workers
#[test]
fn huge_keep_alives_are_refused_and_take_nothing_down() {
    let (edge, alpha, bravo) = start();
    let scroll = sealed(
        &edge.send(&alpha.req("POST", "/books/_search?scroll=1m&size=1")),
        "_scroll_id",
    );
    let pit = sealed(
        &edge.send(&alpha.req("POST", "/books/_pit?keep_alive=1m")),
        "id",
    );
    let huge = "150000000000000d";
    let requests = [
        alpha.req("POST", &format!("/books/_search?scroll={huge}")),
        alpha.req("GET", &format!("/books/_search?scroll={huge}&size=1")),
        alpha.req("POST", &format!("/books/_pit?keep_alive={huge}")),
        alpha.json(
            "POST",
            "/_search/scroll",
            &json!({"scroll": huge, "scroll_id": scroll}),
        ),
        alpha.json(
            "POST",
            &format!("/_search/scroll?scroll={huge}"),
            &json!({"scroll_id": scroll}),
        ),
        alpha.json(
            "POST",
            "/_search",
            &json!({"pit": {"id": pit, "keep_alive": huge}}),
        ),
        alpha.req("GET", "/books/_search?scroll=9223372036854775807nanos"),
    ];
    for _ in 0..12 {
        for req in &requests {
            keep_alive_too_large(&edge.send(req), "106751.9d");
        }
    }
    // N and N+1 at `search.max_keep_alive`
    let r = edge.send(&alpha.req("POST", "/books/_search?scroll=86400000ms&size=1"));
    assert_eq!(r.status, 200, "{}", r.text());
    keep_alive_too_large(
        &edge.send(&alpha.req("POST", "/books/_search?scroll=86400001ms")),
        "1d",
    );
    keep_alive_too_large(
        &edge.send(&alpha.req("POST", "/books/_pit?keep_alive=36h")),
        "1.5d",
    );
    // the scroll and the point in time still work
    let r = edge.send(&alpha.json(
        "POST",
        "/_search/scroll",
        &json!({"scroll": "1m", "scroll_id": scroll}),
    ));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = edge.send(&alpha.json(
        "POST",
        "/_search",
        &json!({"pit": {"id": pit, "keep_alive": "1m"}}),
    ));
    assert_eq!(r.status, 200, "{}", r.text());
    all_answered(&edge, &[&alpha, &bravo]);
}

// issue 25 #3 (the class): every other number a tenant sends, in the URL and in bodies
#[test]
fn numbers_past_their_range_get_400_and_take_nothing_down() {
    let (edge, alpha, bravo) = start();
    let url: &[(&str, &str)] = &[
        (
            "/books/_search?size=2147483648",
            "Failed to parse int parameter [size] with value [2147483648]",
        ),
        (
            "/books/_search?from=-2",
            "[from] parameter cannot be negative",
        ),
        (
            "/books/_search?size=-5",
            "[size] parameter cannot be negative, found [-5]",
        ),
        (
            "/books/_search?from=2147483647&size=2147483647",
            "Result window is too large",
        ),
        (
            "/books/_search?scroll=9223372036854775808ms",
            "failed to parse [9223372036854775808ms], fractional time values are not supported",
        ),
        (
            "/books/_search?timeout=1.5h",
            "failed to parse [1.5h], fractional time values are not supported",
        ),
        (
            "/_cluster/health?master_timeout=-9223372036854775809s",
            "failed to parse [-9223372036854775809s], fractional time values are not supported",
        ),
    ];
    for _ in 0..3 {
        for (target, want) in url {
            let r = edge.send(&alpha.req("GET", target));
            assert_eq!(r.status, 400, "{target}: {}", r.text());
            let v = r.json();
            let reason = [&v["error"]["reason"], &v["error"]["caused_by"]["reason"]]
                .iter()
                .filter_map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join(" / ");
            assert!(reason.contains(want), "{target}: {reason}");
        }
    }
    let bodies: &[Value] = &[
        json!({"from": 9223372036854775807u64, "size": 9223372036854775807u64}),
        json!({"from": -1}),
        json!({"size": 1e300}),
        json!({"query": {"range": {"d": {"gte": "now+150000000000000d"}}}}),
        json!({"query": {"range": {"d": {"gte": "now-9223372036854775807ms/d"}}}}),
        json!({"query": {"range": {"d": {"gte": 9223372036854775807u64}}}}),
        json!({"query": {"range": {"n": {"gte": 1e308, "lte": -1e308}}}}),
        json!({"size": 0, "aggs": {"h": {"date_histogram": {"field": "d", "fixed_interval": "150000000000000d"}}}}),
        json!({"size": 0, "aggs": {"h": {"date_histogram": {"field": "d", "fixed_interval": "1d", "offset": "+150000000000000d"}}}}),
        json!({"size": 0, "aggs": {"h": {"date_histogram": {"field": "d", "fixed_interval": "1d", "offset": "-9223372036854775808ms"}}}}),
        json!({"size": 0, "aggs": {"h": {"histogram": {"field": "n", "interval": 1e-300}}}}),
        json!({"size": 0, "aggs": {"h": {"histogram": {"field": "n", "interval": 1, "offset": 1e308}}}}),
        json!({"size": 0, "aggs": {"t": {"terms": {"field": "n", "size": 2147483648u64}}}}),
        json!({"size": 0, "aggs": {"t": {"terms": {"field": "n", "size": -1}}}}),
        json!({"track_total_hits": 9223372036854775807u64}),
        json!({"search_after": [9223372036854775807u64], "sort": ["n"]}),
    ];
    for body in bodies {
        let r = edge.send(&alpha.json("POST", "/books/_search", body));
        assert!(
            r.status == 200 || r.status == 400,
            "{body}: {} {}",
            r.status,
            r.text()
        );
        if r.status == 400 {
            r.assert_es_error(400);
        }
    }
    all_answered(&edge, &[&alpha, &bravo]);
}

// issue 25 #2: one reading of every value the edge acts on
#[test]
fn values_are_read_as_the_engine_and_elasticsearch_read_them() {
    let (edge, alpha, bravo) = start();
    for keep in ["1%20h", "+1h", "%2B1h", "1H", "%201m", "1%20d%20"] {
        let r = edge.send(&alpha.req("POST", &format!("/books/_search?scroll={keep}&size=1")));
        assert_eq!(r.status, 200, "{keep}: {}", r.text());
    }
    let refused: &[(&str, &str)] = &[
        ("/books/_search?scroll=1M", "failed to parse setting [scroll] with value [1M] as a time value: unit is missing or unrecognized"),
        ("/books/_search?scroll=1m%20", "failed to parse setting [scroll] with value [1m ] as a time value: unit is missing or unrecognized"),
        ("/books/_search?scroll=1.5h", "failed to parse [1.5h], fractional time values are not supported"),
        ("/books/_pit?keep_alive=", "failed to parse setting [keep_alive] with value [] as a time value: unit is missing or unrecognized"),
        ("/_cat/indices?v=yes", "Failed to parse value [yes] as only [true] or [false] are allowed."),
        ("/_cluster/health?timeout=5", "failed to parse setting [timeout] with value [5] as a time value: unit is missing or unrecognized"),
    ];
    for (target, want) in refused {
        let method = if target.contains("_pit") {
            "POST"
        } else {
            "GET"
        };
        let (kind, reason) = es_error(&edge.send(&alpha.req(method, target)), 400);
        assert_eq!(
            (kind.as_str(), reason.as_str()),
            ("illegal_argument_exception", *want),
            "{target}"
        );
    }
    // `v` of whitespace leaves the default upstream (no header row): the listing's one
    // row is the tenant's index, never a header the edge passes unread
    let r = edge.send(&alpha.req("GET", "/_cat/indices?v=%20&h=index"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text().trim(), "books");
    let r = edge.send(&alpha.req("GET", "/_cat/indices?v&h=index"));
    assert_eq!(
        r.text().split_whitespace().collect::<Vec<_>>(),
        ["index", "books"]
    );
    all_answered(&edge, &[&alpha, &bravo]);
}

// issue 25 #4, spec 8: a wait longer than the request's deadline is cut to the time left,
// so the engine answers it (`timed_out`) before the edge would answer 504
#[test]
fn waits_end_before_the_deadline() {
    let config = Config::new()
        .edge("deadline", "\"5s\"")
        .plan(PlanSpec::new("p"))
        .cluster(ClusterSpec::multitenant("alpha", "p"))
        .cluster(ClusterSpec::multitenant("bravo", "p"));
    let edge = Edge::start(config);
    let (alpha, bravo) = (edge.tenant("alpha"), edge.tenant("bravo"));
    seed(&edge, &alpha);
    seed(&edge, &bravo);
    for target in [
        "/_cluster/health/missing?wait_for_status=green&timeout=1h",
        "/_cluster/health/missing?wait_for_status=green&timeout=-1",
        "/_cluster/health/missing?wait_for_status=green&timeout=150000000000000d",
        "/_cluster/health/missing?wait_for_status=green",
        "/_cluster/health/books?wait_for_nodes=9&master_timeout=1h",
    ] {
        let r = edge.send(&alpha.req("GET", target));
        assert_ne!(
            r.status,
            504,
            "{target}: the edge gave up first: {}",
            r.text()
        );
        let v = r.json();
        assert!(
            v["timed_out"] == json!(true) || v["error"]["type"].is_string(),
            "{target}: {v}"
        );
    }
    all_answered(&edge, &[&alpha, &bravo]);
}

// issue 25 #5: what a tenant sees never holds an upstream id, and `DELETE /<alias>` is
// refused as Elasticsearch 7.10 refuses it (the indices behind the alias stay)
#[test]
fn no_raw_ids_and_no_deletion_through_an_alias() {
    let (edge, alpha, bravo) = start();
    let scroll = sealed(
        &edge.send(&alpha.req("POST", "/books/_search?scroll=1m&size=1")),
        "_scroll_id",
    );
    let r = edge.send(&alpha.json("DELETE", "/_search/scroll", &json!({"scroll_id": scroll})));
    assert_eq!(r.status, 200, "{}", r.text());
    let pit = sealed(
        &edge.send(&alpha.req("POST", "/books/_pit?keep_alive=1m")),
        "id",
    );
    let r = edge.send(&alpha.json("DELETE", "/_pit", &json!({"id": pit})));
    assert_eq!(r.status, 200, "{}", r.text());
    for r in [
        edge.send(&alpha.json(
            "POST",
            "/_search/scroll",
            &json!({"scroll": "1m", "scroll_id": scroll}),
        )),
        edge.send(&alpha.json("POST", "/_search", &json!({"pit": {"id": pit}}))),
    ] {
        assert_eq!(r.status, 404, "{}", r.text());
        let v = r.json();
        assert_eq!(
            v["error"]["root_cause"][0]["type"],
            "search_context_missing_exception"
        );
        let reason = v["error"]["root_cause"][0]["reason"].as_str().unwrap();
        assert_eq!(reason, "No search context found for id [_na_]", "{v}");
    }
    let r = edge.send(&alpha.json(
        "POST",
        "/_aliases",
        &json!({"actions": [{"add": {"index": "books", "alias": "shelf"}}]}),
    ));
    assert_eq!(r.status, 200, "{}", r.text());
    let (kind, reason) = es_error(&edge.send(&alpha.req("DELETE", "/shelf")), 400);
    assert_eq!(kind, "illegal_argument_exception");
    assert_eq!(
        reason,
        "The provided expression [shelf] matches an alias, specify the corresponding concrete indices instead."
    );
    all_answered(&edge, &[&alpha, &bravo]);
}

// Issue 30 (index APIs), spec 1.5, 2.2: a write to an alias's name goes through the alias,
// as Elasticsearch 7.10 writes it, on both classes: to its only index or its write index;
// with several indices and no write index it is refused (400 naming the alias), and no
// index named like the alias is ever created beside it, not by the edge's creation of
// whitelisted indices (`events*`) nor by an explicit `PUT`. The same for an alias named
// like an existing index.
#[test]
fn writes_to_an_alias_name_go_through_the_alias() {
    let engine = e2e::Engine::start();
    let config = Config::new()
        .plan(PlanSpec::new("p").contexts(100))
        .cluster(ClusterSpec::multitenant("alpha", "p"))
        .cluster(ClusterSpec::single("solo", "p", engine.addr));
    let edge = Edge::start(config);
    for t in [edge.tenant("alpha"), edge.tenant("solo")] {
        for index in ["events-1", "events-2", "logs-a"] {
            assert_eq!(edge.send(&t.req("PUT", &format!("/{index}"))).status, 200);
        }
        let actions = json!({"actions": [
            {"add": {"index": "events-1", "alias": "events-one"}},
            {"add": {"index": "events-1", "alias": "events-all"}},
            {"add": {"index": "events-2", "alias": "events-all"}},
            {"add": {"index": "events-1", "alias": "events-w", "is_write_index": false}},
            {"add": {"index": "events-2", "alias": "events-w", "is_write_index": true}},
        ]});
        let r = edge.send(&t.json("POST", "/_aliases", &actions));
        assert_eq!(r.status, 200, "{}", r.text());
        let doc = json!({"n": 1});
        for (alias, goes_to) in [("events-one", "events-1"), ("events-w", "events-2")] {
            for path in [format!("/{alias}/_doc/1"), format!("/{alias}/_doc")] {
                let r = edge.send(&t.json("POST", &format!("{path}?refresh=true"), &doc));
                assert_eq!(r.status, 201, "{path}: {}", r.text());
                assert_eq!(r.json()["_index"], goes_to, "{}", r.text());
            }
            let bulk =
                format!("{{\"index\":{{\"_index\":\"{alias}\",\"_id\":\"b\"}}}}\n{{\"n\":2}}\n");
            let r = edge.send(
                &t.req("POST", "/_bulk")
                    .header("Content-Type", "application/x-ndjson")
                    .body(bulk),
            );
            assert_eq!(r.status, 200, "{}", r.text());
            assert_eq!(
                r.json()["items"][0]["index"]["_index"],
                goes_to,
                "{}",
                r.text()
            );
        }
        let r = edge.send(&t.json("POST", "/events-all/_doc/1", &doc));
        let kind = r.assert_es_error(400);
        assert_eq!(kind, "illegal_argument_exception", "{}", r.text());
        assert!(
            r.text()
                .contains("no write index is defined for alias [events-all]"),
            "{}",
            r.text()
        );
        // no index beside an alias, nor an alias beside an index
        let r = edge.send(&t.req("PUT", "/events-all"));
        assert_eq!(
            r.assert_es_error(400),
            "invalid_index_name_exception",
            "{}",
            r.text()
        );
        let r = edge.send(&t.json("PUT", "/events-3", &json!({"aliases": {"logs-a": {}}})));
        assert_eq!(
            r.assert_es_error(400),
            "invalid_alias_name_exception",
            "{}",
            r.text()
        );
        let r = edge.send(&t.req("GET", "/_cat/indices/events*?h=index&s=index"));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(
            r.text().split_whitespace().collect::<Vec<_>>(),
            ["events-1", "events-2"]
        );
    }
}

/// `name` is `<stem>YYYY.MM.DD` (a concrete name a date resolved to).
fn dated(name: &str, stem: &str) -> bool {
    name.strip_prefix(stem).is_some_and(|d| {
        d.len() == 10
            && d.bytes().enumerate().all(|(i, b)| {
                if i == 4 || i == 7 {
                    b == b'.'
                } else {
                    b.is_ascii_digit()
                }
            })
    })
}

// Issue 30 (date-math index names), the rule of one reading: the edge resolves date math
// in the path itself (UTC, Elasticsearch 7.10's grammar) and forwards the concrete name,
// on both classes; so the plan's shard count sees every index a date-math write creates
// (before, the single-tenant upstream auto-created them past it), and a format's quoted
// wildcard or `_all`, nested brackets or unescaped braces are refused with 400 instead of
// being read by the upstream after every check. Percent-encoded, as clients send them.
#[test]
fn date_math_names_are_resolved_once_by_the_edge() {
    let engine = e2e::Engine::start();
    let config = Config::new()
        .plan(PlanSpec::new("p").contexts(100).shards(4))
        .cluster(ClusterSpec::multitenant("alpha", "p"))
        .cluster(ClusterSpec::multitenant("bravo", "p"))
        .cluster(ClusterSpec::single("solo", "p", engine.addr));
    let edge = Edge::start(config);
    let bravo = edge.tenant("bravo");
    assert_eq!(edge.send(&bravo.req("PUT", "/events-x")).status, 200);
    for t in [edge.tenant("alpha"), edge.tenant("solo")] {
        let doc = json!({"n": 1});
        let r = edge.send(&t.json(
            "PUT",
            "/%3Cevents-%7Bnow%2Fd%7D%3E/_doc/1?refresh=true",
            &doc,
        ));
        assert_eq!(r.status, 201, "{}", r.text());
        let today = r.json()["_index"].as_str().unwrap().to_string();
        assert!(dated(&today, "events-"), "{today}");
        let r = edge.send(&t.req("GET", "/%3Cevents-%7Bnow%2Fd%7D%3E,events-x/_search"));
        assert_eq!(
            r.status,
            404,
            "another tenant's events-x is not this one's: {}",
            r.text()
        );
        let r = edge.send(&t.req("GET", "/%3Cevents-%7Bnow%2Fd%7D%3E/_search"));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["hits"]["total"]["value"], 1, "{}", r.text());
        // the second date-math index fits the plan (2 shards each), the third does not
        let r = edge.send(&t.json("PUT", "/%3Cevents-%7Bnow%2B1d%2Fd%7D%3E/_doc/1", &doc));
        assert_eq!(r.status, 201, "{}", r.text());
        let r = edge.send(&t.json("PUT", "/%3Cevents-%7Bnow%2B2d%2Fd%7D%3E/_doc/1", &doc));
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(r.text().contains("shard capacity"), "{}", r.text());
        for path in [
            "/%3Cevents-%7Bnow%2Fd%7Byyyy.MM.dd'*'%7D%7D%3E/_search",
            "/%3C%7Bnow%2Fd%7B'_all'%7D%7D%3E/_search",
            "/%3C%7Bnow%2Fd%7B'..'%7D%7D%3E/_search",
            "/%3C%3Cevents-%7Bnow%2Fd%7D%3E%3E/_search",
            "/%3Cevents-%7Bnow%2Fd%7D%7D%3E/_search",
            "/%3Cevents-%7Bnow%2Fd%7Byyyy%7CEurope%2FParis%7D%7D%3E/_search",
            "/%3Cevents-%7Bnow%2B99999999999d%7D%3E/_search",
        ] {
            let r = edge.send(&t.req("GET", path));
            assert_eq!(
                r.assert_es_error(400),
                "parse_exception",
                "{path}: {}",
                r.text()
            );
        }
        let r = edge.send(&t.req("DELETE", "/%3C%7Bnow%2Fd%7B'*'%7D%7D%3E"));
        r.assert_es_error(400);
        let r = edge.send(&t.req("GET", &format!("/{today}/_count")));
        assert_eq!(r.status, 200, "nothing was deleted: {}", r.text());
    }
    let r = edge.send(&bravo.req("GET", "/events-x/_count"));
    assert_eq!(r.status, 200, "{}", r.text());
}
