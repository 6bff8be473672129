//! End-to-end: changes while running (spec 1.8, 3, 5.4; issue 5 "Changes while running").
//! A rewritten config file, or SIGHUP alone, applies to the next request, also on
//! keep-alive connections opened before the change: rotated credentials get 401 at once
//! (or after the configured grace), a plan change moves the allowance at once (requests
//! already queued too), a removed cluster answers 404 Cluster Not Found, and a new
//! single-tenant cluster answers 404 until its upstream answers, then works.

use crate::support::e2e;

use std::time::{Duration, Instant};

use e2e::mock::Mock;
use e2e::{es_error, held, ClusterSpec, Config, Edge, Engine, PlanSpec, Response, Tenant};

fn assert_401(r: &Response, what: &str) {
    let (kind, _) = es_error(r, 401);
    assert_eq!(kind, "security_exception", "{what}");
}

fn assert_cluster_not_found(r: &Response, what: &str) {
    let (kind, reason) = es_error(r, 404);
    assert_eq!(kind, "cluster_not_found_exception", "{what}");
    assert!(reason.starts_with("Cluster Not Found"), "{what}: {reason}");
}

/// `t` with another password.
fn with_pass(t: &Tenant, pass: &str) -> Tenant {
    Tenant {
        pass: pass.into(),
        ..t.clone()
    }
}

// spec 5.4, 3: rotation and removal apply to the next request on connections opened
// before the change (the file rewritten; the edge watches it).
#[test]
fn rotation_and_removal_apply_to_open_connections() {
    let mut config = Config::new()
        .cluster(ClusterSpec::multitenant("rot", "p"))
        .cluster(ClusterSpec::multitenant("gone", "p"));
    let mut edge = Edge::start(config.clone());
    let (rot, gone) = (edge.tenant("rot"), edge.tenant("gone"));
    let (mut c_rot, mut c_gone) = (edge.client(), edge.client());
    assert_eq!(c_rot.send(&rot.req("PUT", "/books")).status, 200);
    assert_eq!(c_gone.send(&gone.req("PUT", "/books")).status, 200);

    config.get_mut("rot").password = "rotatedpass2".into();
    config.clusters.retain(|c| c.id != "gone");
    edge.reload(config);

    assert_401(
        &c_rot.send(&rot.req("GET", "/books/_search")),
        "the old pair",
    );
    let new = with_pass(&rot, "rotatedpass2");
    let r = c_rot.send(&new.req("GET", "/books/_search"));
    assert_eq!(r.status, 200, "the new pair: {}", r.text());
    assert_cluster_not_found(&c_gone.send(&gone.req("GET", "/books/_search")), "removed");
    assert_cluster_not_found(&c_gone.send(&gone.req("PUT", "/books2")), "removed, update");
    assert_eq!(
        (c_rot.opened, c_gone.opened),
        (1, 1),
        "the same connections throughout"
    );
    // The removed tenant's data is not reachable under any other tenant either.
    let r = c_rot.send(&new.req("GET", "/_cat/indices?format=json"));
    assert_eq!(r.json().as_array().unwrap().len(), 1, "{}", r.text());
}

// spec 5.4: with `credential_grace`, the old pair keeps working until the grace ends, then
// 401; the new pair works at once. The change is made visible by SIGHUP alone (the file's
// modification time is kept, so the watcher cannot see it).
#[test]
fn credential_grace_then_401_after_sighup() {
    const GRACE: Duration = Duration::from_secs(4);
    let mut config = Config::new()
        .edge("credential_grace", "\"4s\"")
        .cluster(ClusterSpec::multitenant("rot", "p"));
    let mut edge = Edge::start(config.clone());
    let old = edge.tenant("rot");
    let mut c = edge.client();
    assert_eq!(c.send(&old.req("PUT", "/books")).status, 200);

    config.get_mut("rot").password = "rotatedpass3".into();
    edge.reload_by_sighup(config);
    let reloaded = Instant::now();
    let new = with_pass(&old, "rotatedpass3");
    let r = c.send(&old.req("GET", "/books/_search"));
    assert_eq!(r.status, 200, "the old pair during the grace: {}", r.text());
    assert_eq!(
        c.send(&new.req("GET", "/books/_search")).status,
        200,
        "the new pair"
    );
    let expired = e2e::eventually(
        "the old pair to expire",
        GRACE + Duration::from_secs(10),
        || {
            let r = c.send(&old.req("GET", "/books/_search"));
            (r.status != 200).then_some(r)
        },
    );
    assert_401(&expired, "the old pair after the grace");
    assert!(reloaded.elapsed() <= GRACE + Duration::from_secs(10));
    assert_eq!(c.send(&new.req("GET", "/books/_search")).status, 200);
    assert_eq!(c.opened, 1, "one connection throughout");
}

// spec 1.8: a plan change takes effect at once for connection limits, requests already
// waiting in the queue included.
#[test]
fn plan_change_moves_the_allowance_at_once() {
    let mock = Mock::start();
    let mut config = Config::new()
        .plan(PlanSpec::new("one").allowance(1, 4, "15s"))
        .cluster(ClusterSpec::single("lim", "one", mock.addr));
    config.engine = false;
    let mut edge = Edge::start(config.clone());
    let t = edge.tenant("lim");
    let first = held(&edge, &t, "/a/_search");
    mock.wait_in_flight(1);
    let second = held(&edge, &t, "/b/_search");
    // The second waits in the queue: the allowance is 1.
    edge.wait_gauge(
        "searchgate_queue_depth",
        "lim",
        "the second request queued",
        |n| n == 1,
    );
    assert_eq!(mock.in_flight(), 1, "the second request is queued");

    config.plan_mut("one").concurrency = 2;
    edge.reload(config.clone());
    mock.wait_in_flight(2); // the queued request got the new slot
    mock.release();
    for h in [first, second] {
        assert_eq!(h.join().unwrap().status, 200);
    }
    assert_eq!(mock.max_in_flight(), 2);

    // Down to 1 with no queue: while one request is in flight, another is 429 at once.
    config.plan_mut("one").concurrency = 1;
    config.plan_mut("one").queue_size = 0;
    edge.reload(config);
    let before = mock.requests().len();
    // Held until the refusal is seen (a fixed delay could end first on a slow machine).
    mock.hold_again();
    let slow = held(&edge, &t, "/c/_search");
    mock.wait_in_flight(1);
    let (kind, _) = es_error(&edge.send(&t.req("GET", "/d/_search")), 429);
    assert_eq!(kind, "too_many_requests_exception");
    mock.release();
    assert_eq!(slow.join().unwrap().status, 200);
    assert_eq!(
        mock.requests().len(),
        before + 1,
        "the refused request never reached it"
    );
}

// spec 3: a new single-tenant cluster answers 404 Cluster Not Found until its upstream
// answers (provisioning), then normal, on a connection opened before it existed.
#[test]
fn new_single_tenant_cluster_is_not_found_until_its_upstream_answers() {
    let reserved = e2e::mock::HeldPort::new();
    let port = reserved.addr();
    let mut config = Config::new().cluster(ClusterSpec::multitenant("old", "p"));
    let mut edge = Edge::start(config.clone());
    let late = ClusterSpec::single("late", "p", port);
    let t = late.tenant();
    let mut c = edge.client();
    assert_cluster_not_found(&c.send(&t.req("GET", "/")), "before it is configured");
    config = config.cluster(late);
    edge.reload(config);
    assert_cluster_not_found(&c.send(&t.req("GET", "/")), "configured, upstream down");
    assert_cluster_not_found(
        &c.send(&t.req("PUT", "/books")),
        "configured, upstream down",
    );

    let skip = edge.out.len();
    let _engine = Engine::start_at(reserved.release());
    let up = edge
        .out
        .wait_for_after(skip, "cluster late is up", Duration::from_secs(20));
    assert!(up.is_some(), "{}", edge.out.text());
    let r = c.send(&t.req("GET", "/"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.send(&t.req("PUT", "/books")).status, 200);
    let r = c.send(&t.req("GET", "/_cat/indices"));
    assert!(r.text().contains("books"), "{}", r.text());
    assert_eq!(c.opened, 1);
}
