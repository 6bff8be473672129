//! End-to-end: separate search and write limits (issue 29; spec 1.7, 7 (429), 8) through
//! `searchgate serve` on both classes. A plan with `search_concurrency`/`search_queue_size`
//! and `write_concurrency`/`write_queue_size` keeps searches answering 200 while bulk loads
//! fill the write limit (the writers get 429s that name the `write` limit, with
//! `Retry-After`); the per-limit metrics count them. A plan without them shares one
//! allowance as before: the same load makes searches fail too.
//!
//! Waits on events only: the edge's own counters (`searchgate_limit_rejections_total`) and
//! the number of searches answered since.

use crate::support::e2e;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use e2e::metrics::{scrape, series};
use e2e::{eventually, ClusterSpec, Config, Edge, Engine, PlanSpec, Tenant};
use serde_json::json;

/// Searches and writes each get their own lane; the shared allowance is tiny, so a
/// request that wrongly waited there would fail at once.
fn split_plan() -> PlanSpec {
    PlanSpec::new("split")
        .allowance(1, 0, "5s")
        .with("search_concurrency", "4")
        .with("search_queue_size", "64")
        .with("write_concurrency", "1")
        .with("write_queue_size", "1")
}

/// One allowance for everything, as small as the write lane above.
fn shared_plan() -> PlanSpec {
    PlanSpec::new("shared").allowance(1, 1, "5s")
}

fn prepare(edge: &Edge, t: &Tenant) {
    let settings = json!({"settings": {"number_of_shards": 1, "number_of_replicas": 0}});
    let r = edge.send(&t.json("PUT", "/site", &settings));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = edge.send(&t.json("PUT", "/load", &settings));
    assert_eq!(r.status, 200, "{}", r.text());
    let doc = json!({"title": "hello world"});
    let r = edge.send(&t.json("PUT", "/site/_doc/1?refresh=true", &doc));
    assert_eq!(r.status, 201, "{}", r.text());
}

/// What a bulk load and a search loop saw.
#[derive(Default)]
struct Seen {
    searches: AtomicU64,
    /// Search answers other than 200: (status, body).
    search_failures: Mutex<Vec<(u16, String)>>,
    /// Write 429s: (limit named in the body, Retry-After).
    write_429s: Mutex<Vec<(String, Option<String>)>>,
}

fn bulk_writer(edge: &Edge, t: &Tenant, stop: &AtomicBool, seen: &Seen, first: u32) {
    let mut c = edge.client();
    let mut n = first;
    while !stop.load(Ordering::Relaxed) {
        let mut lines = Vec::new();
        for i in n..n + 200 {
            lines.push(json!({"index": {"_index": "load", "_id": i.to_string()}}));
            lines.push(json!({"n": i, "text": "some words to index for a while"}));
        }
        n += 200;
        let r = c.send(&t.ndjson("POST", "/_bulk", &lines));
        if r.status == 429 {
            let limit = r.json()["error"]["limit"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let retry = r.header("Retry-After").map(str::to_string);
            seen.write_429s.lock().unwrap().push((limit, retry));
        } else {
            assert_eq!(r.status, 200, "bulk: {}", r.text());
            assert_eq!(r.json()["errors"], json!(false), "bulk: {}", r.text());
        }
    }
}

fn searcher(edge: &Edge, t: &Tenant, stop: &AtomicBool, seen: &Seen) {
    let mut c = edge.client();
    let q = json!({"query": {"match": {"title": "hello"}}});
    while !stop.load(Ordering::Relaxed) {
        let r = c.send(&t.json("POST", "/site/_search", &q));
        if r.status != 200 {
            seen.search_failures
                .lock()
                .unwrap()
                .push((r.status, r.text()));
        }
        seen.searches.fetch_add(1, Ordering::Relaxed);
    }
}

fn limit_series(edge: &Edge, name: &str, id: &str, limit: &str) -> Option<u64> {
    let text = scrape(edge.metrics.expect("metrics"));
    series(
        &text,
        &format!("{name}{{cluster=\"{id}\",limit=\"{limit}\"}}"),
    )
}

/// Runs four bulk writers and two searchers against cluster `id` until the write limit
/// has refused at least 10 bulks and 40 searches were answered after the first refusal
/// (or, `until_search_fails`, until a search failed).
fn load(edge: &Edge, id: &str, limit: &str, until_search_fails: bool) -> Seen {
    let t = edge.tenant(id);
    prepare(edge, &t);
    let (stop, seen) = (AtomicBool::new(false), Seen::default());
    std::thread::scope(|s| {
        for w in 0..4 {
            let (t, stop, seen) = (&t, &stop, &seen);
            s.spawn(move || bulk_writer(edge, t, stop, seen, w * 1_000_000));
        }
        for _ in 0..2 {
            s.spawn(|| searcher(edge, &t, &stop, &seen));
        }
        let what = format!("{id}: bulk loads refused by the {limit} limit");
        let rejections = "searchgate_limit_rejections_total";
        eventually(&what, Duration::from_secs(60), || {
            limit_series(edge, rejections, id, limit).filter(|n| *n >= 10)
        });
        let at = seen.searches.load(Ordering::Relaxed);
        eventually(
            "searches answered meanwhile",
            Duration::from_secs(60),
            || {
                let failed = !seen.search_failures.lock().unwrap().is_empty();
                let done = seen.searches.load(Ordering::Relaxed) >= at + 40;
                (done || (until_search_fails && failed)).then_some(())
            },
        );
        stop.store(true, Ordering::Relaxed);
    });
    seen
}

fn search_unaffected(edge: &Edge, id: &str) {
    let seen = load(edge, id, "write", false);
    let failures = seen.search_failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "searches failed: {:?}",
        &failures[..failures.len().min(3)]
    );
    let w = seen.write_429s.lock().unwrap();
    assert!(!w.is_empty(), "the bulk load saw the write limit");
    for (limit, retry) in w.iter() {
        assert_eq!(limit, "write");
        assert_eq!(retry.as_deref(), Some("1"), "Retry-After");
    }
    assert_eq!(
        limit_series(edge, "searchgate_limit_rejections_total", id, "search"),
        Some(0),
        "the search limit refused nothing"
    );
    for (name, want) in [
        ("searchgate_limit_concurrency", 4),
        ("searchgate_limit_in_flight", 0),
    ] {
        assert_eq!(limit_series(edge, name, id, "search"), Some(want), "{name}");
    }
    assert_eq!(
        limit_series(edge, "searchgate_limit_concurrency", id, "write"),
        Some(1)
    );
    eprintln!(
        "{id}: {} searches all 200 while {} bulks got 429 from the write limit",
        seen.searches.load(Ordering::Relaxed),
        w.len()
    );
}

// issue 29: search traffic is not refused while a bulk load saturates the write limit
// (multitenant class, embedded engine); without the split, the same load fails searches
#[test]
fn searches_pass_while_bulk_loads_fill_the_write_limit_multitenant() {
    let config = Config::new()
        .plan(split_plan())
        .plan(shared_plan())
        .cluster(ClusterSpec::multitenant("split", "split"))
        .cluster(ClusterSpec::multitenant("shared", "shared"));
    let edge = Edge::start(config);
    search_unaffected(&edge, "split");

    // the control: one shared allowance, the same load; searches get 429 (limit `shared`)
    let seen = load(&edge, "shared", "shared", true);
    let failures = seen.search_failures.lock().unwrap();
    let (status, body) = failures
        .first()
        .expect("a search refused under the shared allowance");
    assert_eq!(*status, 429, "{body}");
    assert!(body.contains("\"limit\":\"shared\""), "{body}");
    let search = limit_series(&edge, "searchgate_limit_concurrency", "shared", "search");
    assert!(search.is_none(), "no search limit without the split");
}

// issue 29: the same on the single-tenant class (a standalone engine upstream)
#[test]
fn searches_pass_while_bulk_loads_fill_the_write_limit_single_tenant() {
    let engine = Engine::start();
    let config = Config::new()
        .plan(split_plan())
        .cluster(ClusterSpec::single("solo", "split", engine.addr));
    let edge = Edge::start(config);
    search_unaffected(&edge, "solo");
}
