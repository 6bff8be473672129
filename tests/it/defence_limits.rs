//! Issue 25, what one request may cost the engine, end to end through `searchgate serve`
//! with the embedded engine, as a hostile tenant would try it (spec 7: a client-side
//! problem is a 400 in Elasticsearch's shape; spec 8: a request lasts at most the
//! deadline, and no tenant's request may take the service down for the others):
//!
//! - a query string nested a hundred thousand parentheses deep (in a body's
//!   `query_string` or `simple_query_string`) overflowed the engine's connection stack:
//!   the whole engine aborted and every tenant got 503 while it restarted. Now 400, the
//!   engine never restarts;
//! - an update script doubling a string forty times (`s += s`) grew the engine by
//!   gigabytes for minutes after the edge had answered 504. Now 400 `script_exception`;
//! - the work of a request whose client went away (a client that gave up, or the edge at
//!   its deadline) went on in the engine; now the edge drops its upstream connection when
//!   its client goes away, and the engine stops the work when its connection closes
//!   (deterministic work: the test-only `engine-busy` hook works until stopped).
//!
//! Each test ends by checking that every tenant is still answered.

use crate::support::e2e;

use std::time::Duration;

use e2e::metrics::{scrape, series};
use e2e::{es_error, ClusterSpec, Config, Edge, PlanSpec, Tenant};
use serde_json::json;

const HOOK: &str = "X-Searchgate-Debug-Panic";
const ALLOW: (&str, &str) = ("SEARCHGATE_DEBUG_HOOKS", "1");

fn config() -> Config {
    Config::new()
        .plan(PlanSpec::new("one").allowance(1, 4, "5s"))
        .cluster(ClusterSpec::multitenant("alpha", "one"))
        .cluster(ClusterSpec::multitenant("bravo", "one"))
}

/// A one-shard index `books` with a document, for `t`.
fn seed(edge: &Edge, t: &Tenant) {
    let body = json!({"settings": {"number_of_shards": 1, "number_of_replicas": 0}});
    let r = edge.send(&t.json("PUT", "/books", &body));
    assert_eq!(r.status, 200, "{}", r.text());
    let doc = json!({"title": "a fox", "n": 1});
    let r = edge.send(&t.json("PUT", "/books/_doc/1?refresh=true", &doc));
    assert!(r.status < 300, "{}", r.text());
}

/// Every tenant is still served: a search and a write each.
fn all_answered(edge: &Edge, tenants: &[&Tenant]) {
    for t in tenants {
        let r = edge.send(&t.req("GET", "/books/_search"));
        assert_eq!(r.status, 200, "{}", r.text());
        let r = edge.send(&t.json("POST", "/books/_doc", &json!({"n": 2})));
        assert_eq!(r.status, 201, "{}", r.text());
    }
}

fn engine_restarts(edge: &Edge) -> u64 {
    let text = scrape(edge.metrics.expect("a metrics listener"));
    series(&text, "searchgate_engine_restarts_total").unwrap_or_else(|| panic!("{text}"))
}

// spec 7 (400), 8: parentheses nested past 100 levels are refused at N+1 and far beyond,
// in both query-string queries; 100 levels still search; the engine never restarted.
#[test]
fn deep_query_strings_are_refused_not_a_stack_overflow() {
    let edge = Edge::start(config());
    let (alpha, bravo) = (edge.tenant("alpha"), edge.tenant("bravo"));
    seed(&edge, &alpha);
    seed(&edge, &bravo);
    let nested = |n: usize| format!("{}fox{}", "(".repeat(n), ")".repeat(n));
    for kind in ["query_string", "simple_query_string"] {
        let body = |n| json!({"query": {kind: {"query": nested(n)}}});
        let r = edge.send(&alpha.json("POST", "/books/_search", &body(100)));
        assert_eq!(r.status, 200, "{kind} at 100: {}", r.text());
        for n in [101, 100_000] {
            let r = edge.send(&alpha.json("POST", "/books/_search", &body(n)));
            let (kind_, reason) = es_error(&r, 400);
            assert_eq!(kind_, "parsing_exception", "{kind} at {n}: {reason}");
            assert!(reason.contains("nested deeper than 100 levels"), "{reason}");
        }
    }
    assert_eq!(engine_restarts(&edge), 0, "{}", edge.out.text());
    all_answered(&edge, &[&alpha, &bravo]);
}

// spec 7 (400), 8: a script building more than 16mb is a script error, in `_update` and
// `_update_by_query` alike; the document is unchanged; the engine never restarted.
#[test]
fn a_script_cannot_build_gigabytes() {
    let edge = Edge::start(config());
    let (alpha, bravo) = (edge.tenant("alpha"), edge.tenant("bravo"));
    seed(&edge, &alpha);
    seed(&edge, &bravo);
    let doubling =
        "ctx._source.s = 'ab'; ".to_string() + &"ctx._source.s += ctx._source.s; ".repeat(40);
    let script = json!({"script": {"source": doubling}});
    for path in ["/books/_update/1", "/books/_update_by_query"] {
        let r = edge.send(&alpha.json("POST", path, &script));
        let (kind, reason) = es_error(&r, 400);
        assert_eq!(kind, "illegal_argument_exception", "{path}: {reason}");
        let cause = &r.json()["error"]["caused_by"];
        assert_eq!(cause["type"], "script_exception", "{}", r.text());
        let why = cause["reason"].as_str().unwrap_or_default();
        assert!(why.contains("built more than [16mb]"), "{why}");
    }
    let r = edge.send(&alpha.req("GET", "/books/_doc/1"));
    assert_eq!(r.json()["_source"], json!({"title": "a fox", "n": 1}));
    // the bound is far above what scripts build: a 2mb string still goes in
    let big = "x".repeat(1 << 20);
    let script =
        json!({"script": {"source": "ctx._source.s = params.s + params.s", "params": {"s": big}}});
    let r = edge.send(&alpha.json("POST", "/books/_update/1", &script));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(engine_restarts(&edge), 0);
    all_answered(&edge, &[&alpha, &bravo]);
}

// spec 8 (the deadline, the plan's allowance): work whose client went away stops in the
// engine, straight to it and through the edge (which drops its upstream connection when
// its client leaves); the tenant's one slot is free again at once.
#[test]
fn the_engine_stops_the_work_of_a_client_that_went_away() {
    let config = config().section("[debug]\npanic_hooks = true\n");
    let edge = Edge::start_in(tempfile::tempdir().unwrap(), config, &[ALLOW]);
    let (alpha, bravo) = (edge.tenant("alpha"), edge.tenant("bravo"));
    seed(&edge, &alpha);
    seed(&edge, &bravo);
    let wait = |skip: usize, line: &str| {
        edge.out
            .wait_for_after(skip, line, Duration::from_secs(30))
            .unwrap_or_else(|| panic!("no `{line}` in:\n{}", edge.out.text()))
    };
    let busy = "searchgate engine: busy as asked";
    let stopped = "searchgate engine: stopped GET /";

    // straight to the engine
    let skip = edge.out.len();
    let mut c = e2e::Conn::plain(edge.engine());
    c.send(
        &e2e::client::Req::new("GET", "/")
            .host("engine")
            .header(HOOK, "engine-busy")
            .bytes(),
    );
    wait(skip, busy);
    drop(c);
    wait(skip, stopped);

    // through the edge, twice (the edge keeps the test-only header to itself, so the work
    // is a real search: an aggregation of 60,000 ranges, seconds of engine work): the
    // client sends it and goes away; the plan allows one request in flight, so the next
    // request would wait in the queue (and time out) if the first still held its slot
    let mut bulk = String::new();
    for i in 0..3000 {
        bulk.push_str(&format!(
            "{{\"index\":{{\"_index\":\"books\"}}}}\n{{\"n\":{i}}}\n"
        ));
    }
    let r = edge.send(
        &alpha
            .req("POST", "/_bulk?refresh=true")
            .header("Content-Type", "application/x-ndjson")
            .body(bulk),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let ranges: Vec<_> = (0..60_000)
        .map(|i| json!({"from": i, "to": i + 1}))
        .collect();
    let heavy = json!({"size": 0, "aggs": {"r": {"range": {"field": "n", "ranges": ranges}}}});
    for round in 0..2 {
        let skip = edge.out.len();
        let mut c = edge.conn();
        c.send(&alpha.json("POST", "/books/_search", &heavy).bytes());
        let in_flight = || {
            let text = scrape(edge.metrics.expect("a metrics listener"));
            series(&text, "searchgate_requests_in_flight{cluster=\"alpha\"}")
        };
        e2e::eventually(
            "the search to hold its slot",
            Duration::from_secs(10),
            || (in_flight() == Some(1)).then_some(()),
        );
        drop(c);
        let line = wait(skip, "searchgate engine: stopped POST /");
        assert!(line.contains("books/_search"), "round {round}: {line}");
        let r = edge.send(&alpha.req("GET", "/books/_count"));
        assert_eq!(r.status, 200, "round {round}: {}", r.text());
    }
    assert_eq!(engine_restarts(&edge), 0);
    all_answered(&edge, &[&alpha, &bravo]);
}
