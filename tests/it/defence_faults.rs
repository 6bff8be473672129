//! Issue 25, defence in depth: no fault reachable from a request takes the service down,
//! end to end through `searchgate serve` with the embedded engine. Faults are injected by
//! the test-only hooks (`[debug] panic_hooks`, accepted only with
//! `SEARCHGATE_DEBUG_HOOKS=1`): a request carrying `x-searchgate-debug-panic: <point>`
//! panics there. Each test ends by checking that every tenant is still answered.
//!
//! - a panic in a connection's task: that request gets 500 in Elasticsearch's shape (spec
//!   7), its allowance slot (spec 1.7, 8) and reserved search context are free again, the
//!   worker's other connections go on, the panic is counted in `/metrics`;
//! - a panic after the response went out: that connection closes, nothing else;
//! - a worker thread that dies is started again on its listening sockets;
//! - the admin API and the engine contain their panics the same way;
//! - the engine child that exits is started again, also after the executable it was
//!   started from was replaced on disk (an upgrade);
//! - the hooks are refused unless the environment allows them too.

use crate::support::e2e;

use std::net::SocketAddr;
use std::time::Duration;

use e2e::metrics::{scrape, series};
use e2e::{direct, es_error, eventually, ClusterSpec, Config, Edge, PlanSpec, Response, Tenant};
use serde_json::json;

const HOOK: &str = "X-Searchgate-Debug-Panic";
const ALLOW: (&str, &str) = ("SEARCHGATE_DEBUG_HOOKS", "1");

/// Two tenants on a plan of one request in flight (a slot that leaked would show at once)
/// and one open search context, with the fault injection on.
fn config() -> Config {
    Config::new()
        .plan(
            PlanSpec::new("one")
                .allowance(1, 4, "2s")
                .contexts(1)
                .shards(10),
        )
        .cluster(ClusterSpec::multitenant("alpha", "one"))
        .cluster(ClusterSpec::multitenant("bravo", "one"))
        .section("[debug]\npanic_hooks = true\n")
        .with_admin()
}

fn start(config: Config) -> Edge {
    Edge::start_in(tempfile::tempdir().unwrap(), config, &[ALLOW])
}

/// A one-shard index `books` with a document, for `t`.
fn seed(edge: &Edge, t: &Tenant) {
    let body = json!({"settings": {"number_of_shards": 1, "number_of_replicas": 0}});
    let r = edge.send(&t.json("PUT", "/books", &body));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = edge.send(&t.json("PUT", "/books/_doc/1?refresh=true", &json!({"n": 1})));
    assert!(r.status < 300, "{}", r.text());
}

/// Every tenant is still served: a search and a write each.
fn all_answered(edge: &Edge, tenants: &[&Tenant]) {
    for t in tenants {
        let r = edge.send(&t.req("GET", "/books/_search"));
        assert_eq!(r.status, 200, "{}", r.text());
        let r = edge.send(&t.json("POST", "/books/_doc?refresh=true", &json!({"n": 2})));
        assert_eq!(r.status, 201, "{}", r.text());
    }
}

fn metric(edge: &Edge, name: &str) -> u64 {
    let text = scrape(edge.metrics.expect("a metrics listener"));
    series(&text, name).unwrap_or_else(|| panic!("{name} in:\n{text}"))
}

/// The 500 of a contained panic (spec 7: Elasticsearch's error shape), connection closed.
fn internal_error(r: &Response) {
    let (kind, reason) = es_error(r, 500);
    assert_eq!(kind, "exception", "{reason}");
    assert!(r.closes(), "the connection closes after a contained panic");
}

// spec 7 (500), 1.7 and 8 (allowance): a panic while a request holds its slot and a
// reserved search context ends that request only.
#[test]
fn a_panic_in_a_request_is_contained_to_its_connection() {
    let edge = start(config());
    let (alpha, bravo) = (edge.tenant("alpha"), edge.tenant("bravo"));
    seed(&edge, &alpha);
    seed(&edge, &bravo);
    // a keep-alive connection opened before the faults, served by one of the workers
    let mut before = edge.client();
    assert_eq!(before.send(&alpha.req("GET", "/books/_count")).status, 200);

    // more panics than workers, at each point before the response: every worker takes some
    let mut panics = 0;
    for point in ["head", "slot", "head", "slot", "slot", "head"] {
        let r = edge.send(&alpha.req("GET", "/books/_search").header(HOOK, point));
        internal_error(&r);
        panics += 1;
    }
    // a scroll open that panics holding its reserved context gives the place back: the
    // plan's one context is free for the next open
    for _ in 0..3 {
        let req = alpha
            .req("GET", "/books/_search?scroll=1m")
            .header(HOOK, "slot");
        internal_error(&edge.send(&req));
        panics += 1;
    }
    let r = edge.send(&alpha.req("GET", "/books/_search?scroll=1m"));
    assert_eq!(
        r.status,
        200,
        "the reserved context was released: {}",
        r.text()
    );

    // the slot was given back each time (the plan allows one in flight), the connection
    // opened before is still served, the other tenant too
    assert_eq!(before.send(&alpha.req("GET", "/books/_count")).status, 200);
    assert_eq!(before.opened, 1, "the same connection");
    all_answered(&edge, &[&alpha, &bravo]);
    assert_eq!(
        metric(&edge, "searchgate_panics_total{component=\"edge\"}"),
        panics
    );
    assert!(edge
        .out
        .text()
        .contains("a panic ended a request (GET /books/_search"));
}

// A panic once the response went out can only end the connection: the client got the
// whole answer, then the connection closed; nothing else is touched.
#[test]
fn a_panic_after_the_response_closes_only_that_connection() {
    let edge = start(config());
    let alpha = edge.tenant("alpha");
    seed(&edge, &alpha);
    let mut c = edge.conn();
    let req = alpha.req("GET", "/books/_count").header(HOOK, "relay");
    let r = e2e::exchange(&mut c, &req);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(c.is_closed(), "closed after the response");
    all_answered(&edge, &[&alpha]);
    assert_eq!(
        metric(&edge, "searchgate_panics_total{component=\"edge\"}"),
        1
    );
}

// A worker thread that dies anyway (here: a panic outside any connection's task) is
// started again on the same listening sockets: every new connection is still accepted
// and served, whichever socket of the SO_REUSEPORT group the kernel gives it to.
#[test]
fn a_dead_worker_is_started_again_on_its_sockets() {
    let edge = start(config());
    let (alpha, bravo) = (edge.tenant("alpha"), edge.tenant("bravo"));
    seed(&edge, &alpha);
    seed(&edge, &bravo);
    for round in 1..=2u64 {
        let r = edge.send(&alpha.req("GET", "/books/_count").header(HOOK, "worker"));
        assert_eq!(r.status, 200, "{}", r.text());
        eventually("the worker's restart", Duration::from_secs(20), || {
            (metric(&edge, "searchgate_worker_restarts_total") >= round).then_some(())
        });
    }
    assert!(edge.out.text().contains("died (injected worker panic"));
    // many fresh connections: the kernel spreads them over both workers' sockets
    for _ in 0..40 {
        let r = edge.send(&bravo.req("GET", "/books/_count"));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    all_answered(&edge, &[&alpha, &bravo]);
}

// The admin API: a panic in a request is answered 500 in the API's own error shape, counted,
// and the API (and the edge) go on.
#[test]
fn the_admin_api_contains_a_panic() {
    let edge = start(config());
    let alpha = edge.tenant("alpha");
    seed(&edge, &alpha);
    let admin = edge.admin();
    let a = admin.call_with("GET", "/v1/clusters", None, &[(HOOK, "admin")]);
    assert_eq!(a.status, 500, "{}", a.body);
    assert_eq!(a.body["error"]["type"], "internal", "{}", a.body);
    let clusters = admin
        .call_with("GET", "/v1/clusters", None, &[])
        .expect(200);
    assert!(clusters.to_string().contains("alpha"), "{clusters}");
    assert_eq!(
        metric(&edge, "searchgate_panics_total{component=\"admin\"}"),
        1
    );
    all_answered(&edge, &[&alpha]);
}

fn engine_hook_req(point: &str) -> e2e::client::Req {
    e2e::client::Req::new("GET", "/")
        .host("engine")
        .header(HOOK, point)
}

/// A request straight to the engine with the hook header.
fn engine_hook(engine: SocketAddr, point: &str) -> Response {
    let mut c = e2e::Conn::plain(engine);
    e2e::exchange(&mut c, &engine_hook_req(point))
}

// The engine: a panic in a handler is answered 500 (Elasticsearch's shape) on that
// connection only; the engine's other connections and the tenants go on.
#[test]
fn the_engine_contains_a_panic() {
    let edge = start(config());
    let (alpha, bravo) = (edge.tenant("alpha"), edge.tenant("bravo"));
    seed(&edge, &alpha);
    let engine = edge.engine();
    for _ in 0..3 {
        let r = engine_hook(engine, "engine");
        let (kind, _) = es_error(&r, 500);
        assert_eq!(kind, "exception");
    }
    assert_eq!(direct(engine, "GET", "/", None).status, 200);
    seed(&edge, &bravo);
    all_answered(&edge, &[&alpha, &bravo]);
    assert!(edge
        .out
        .text()
        .contains("searchgate engine: a panic ended GET /"));
}

// The engine child is started from the running executable (`/proc/self/exe`): after an
// upgrade replaced the file the edge was started from, an engine that exits is still
// started again, with its data, and counted.
#[test]
fn the_engine_is_restarted_after_its_executable_was_replaced() {
    let bin = tempfile::tempdir().unwrap();
    let exe = bin.path().join("searchgate");
    std::fs::copy(env!("CARGO_BIN_EXE_searchgate"), &exe).unwrap();
    let edge = Edge::start_exe(&exe, tempfile::tempdir().unwrap(), config(), &[ALLOW]);
    let alpha = edge.tenant("alpha");
    seed(&edge, &alpha);
    // the upgrade: a new file takes the old one's name (the old one is deleted)
    let next = bin.path().join("searchgate.new");
    std::fs::write(&next, b"#!/bin/sh\nexit 3\n").unwrap();
    std::fs::rename(&next, &exe).unwrap();
    let engine = edge.engine();
    let skip = edge.out.len();
    let mut c = e2e::Conn::plain(engine);
    c.send(&engine_hook_req("engine-exit").bytes());
    assert!(c.is_closed(), "the engine exited without answering");
    edge.out
        .wait_for_after(
            skip,
            "the embedded engine is back on",
            Duration::from_secs(60),
        )
        .unwrap_or_else(|| panic!("no restart:\n{}", edge.out.text()));
    assert_eq!(metric(&edge, "searchgate_engine_restarts_total"), 1);
    let r = edge.send(&alpha.req("GET", "/books/_count"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["count"], 1, "the data survived: {}", r.text());
    all_answered(&edge, &[&alpha]);
}

// The hooks are for tests: a file asking for them is refused unless the environment says
// so too, and without `[debug]` the header does nothing.
#[test]
fn the_hooks_need_the_environment_and_are_off_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("searchgate.toml");
    std::fs::write(&path, config().toml(dir.path())).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .args(["serve", "--config"])
        .arg(&path)
        .env_remove(ALLOW.0)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("debug.panic_hooks: refused"), "{err}");

    let mut plain = config();
    plain.sections.clear();
    let edge = Edge::start(plain);
    let alpha = edge.tenant("alpha");
    seed(&edge, &alpha);
    for point in ["head", "slot", "relay", "worker"] {
        let r = edge.send(&alpha.req("GET", "/books/_count").header(HOOK, point));
        assert_eq!(r.status, 200, "{point}: {}", r.text());
    }
    let r = engine_hook(edge.engine(), "engine");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        metric(&edge, "searchgate_panics_total{component=\"edge\"}"),
        0
    );
    assert_eq!(metric(&edge, "searchgate_worker_restarts_total"), 0);
}
