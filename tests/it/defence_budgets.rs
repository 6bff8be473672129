//! Issue 25, budgets in the engine's own units, end to end through `searchgate serve` with
//! the embedded engine (spec 1.6: multitenant clusters share resources; spec 7: 429, and
//! never a 500 caused by another tenant; spec 8: limits per plan):
//!
//! - open search contexts count as the engine counts them, one per shard searched: a
//!   scroll over a 5-shard index is 5;
//! - the engine's limit (500 shard contexts) is shared out: when the plans on the engine
//!   would exceed it together, each cluster gets its part, and the cluster that wants more
//!   is refused 429 by the edge before the engine refuses anyone else (issue 25 #3: one
//!   tenant's 59 scrolls on a 5-shard index made another tenant's first scroll fail 500);
//! - a wait whose client went away (the edge answered 504 at its deadline) ends in the
//!   engine at once: no engine thread outlives the request (issue 25 #4);
//! - afterwards every tenant is still answered.

use crate::support::e2e;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use e2e::{es_error, eventually, ClusterSpec, Config, Edge, PlanSpec, Response, Tenant};
use serde_json::json;

/// `t`'s index `name` of `shards` primaries (no replica) with a document.
fn index(edge: &Edge, t: &Tenant, name: &str, shards: u64) {
    let body = json!({"settings": {"number_of_shards": shards, "number_of_replicas": 0}});
    let r = edge.send(&t.json("PUT", &format!("/{name}"), &body));
    assert_eq!(r.status, 200, "{}", r.text());
    let doc = format!("/{name}/_doc/1?refresh=true");
    let r = edge.send(&t.json("PUT", &doc, &json!({"n": 1})));
    assert!(r.status < 300, "{}", r.text());
}

fn scroll(edge: &Edge, t: &Tenant, name: &str) -> Response {
    edge.send(&t.req("GET", &format!("/{name}/_search?scroll=5m&size=1")))
}

fn pit(edge: &Edge, t: &Tenant, name: &str) -> Response {
    edge.send(&t.req("POST", &format!("/{name}/_pit?keep_alive=5m")))
}

/// The edge's 429 with the share and what the cluster holds.
fn refused(r: &Response, share: u64, open: u64) {
    let (kind, reason) = es_error(r, 429);
    assert_eq!(kind, "too_many_scroll_contexts_exception", "{reason}");
    let limit = format!("less than or equal to: [{share}]");
    assert!(reason.contains(&limit), "{reason}");
    assert!(reason.contains(&format!("Open now: [{open}]")), "{reason}");
}

/// Every tenant is still served: a search and a write each.
fn all_answered(edge: &Edge, tenants: &[&Tenant]) {
    for t in tenants {
        let r = edge.send(&t.req("GET", "/big/_search"));
        assert_eq!(r.status, 200, "{}", r.text());
        let r = edge.send(&t.json("POST", "/big/_doc", &json!({"n": 2})));
        assert_eq!(r.status, 201, "{}", r.text());
    }
}

// issue 25 #3 (spec 1.6, 7, 8): two tenants on the default plan (500 contexts each) share
// the engine's 500 shard contexts: 250 each, so 50 scrolls of a 5-shard index. The 51st
// of the first is refused 429 by the edge (N+1); the second still opens its 50, none of
// them a 500 from the engine; points in time count the same way.
#[test]
fn one_tenant_cannot_use_up_the_engines_search_contexts() {
    let config = Config::new()
        .cluster(ClusterSpec::multitenant("noisy", "p"))
        .cluster(ClusterSpec::multitenant("quiet", "p"));
    let edge = Edge::start(config);
    let (noisy, quiet) = (edge.tenant("noisy"), edge.tenant("quiet"));
    index(&edge, &noisy, "big", 5);
    index(&edge, &quiet, "big", 5);

    for n in 0..50 {
        let r = scroll(&edge, &noisy, "big");
        assert_eq!(r.status, 200, "scroll {n}: {}", r.text());
        assert_eq!(r.json()["_shards"]["total"], 5);
    }
    refused(&scroll(&edge, &noisy, "big"), 250, 250);
    refused(&pit(&edge, &noisy, "big"), 250, 250);

    // the other tenant's share is whole: 40 scrolls and 10 points in time
    for n in 0..40 {
        let r = scroll(&edge, &quiet, "big");
        assert_eq!(
            r.status,
            200,
            "scroll {n} of the quiet tenant: {}",
            r.text()
        );
    }
    for n in 0..10 {
        let r = pit(&edge, &quiet, "big");
        assert_eq!(r.status, 200, "point in time {n}: {}", r.text());
    }
    refused(&scroll(&edge, &quiet, "big"), 250, 250);

    // still refused, still no 500, for both
    refused(&scroll(&edge, &noisy, "big"), 250, 250);
    all_answered(&edge, &[&noisy, &quiet]);
}

// The plans fit the engine together: each cluster keeps its plan's limit, counted in shard
// contexts (N and N+1), and a small index costs less than a large one.
#[test]
fn a_plan_counts_shard_contexts_when_the_engine_has_room() {
    let config = Config::new()
        .plan(PlanSpec::new("small").contexts(12))
        .cluster(ClusterSpec::multitenant("alpha", "small"))
        .cluster(ClusterSpec::multitenant("bravo", "small"));
    let edge = Edge::start(config);
    let (alpha, bravo) = (edge.tenant("alpha"), edge.tenant("bravo"));
    index(&edge, &alpha, "big", 5);
    index(&edge, &bravo, "big", 5);
    // 5 + 5 = 10 of 12: a third scroll of 5 does not fit
    for _ in 0..2 {
        assert_eq!(scroll(&edge, &alpha, "big").status, 200);
    }
    refused(&scroll(&edge, &alpha, "big"), 12, 10);
    // clearing one frees its 5
    let id = scroll(&edge, &bravo, "big").json()["_scroll_id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = edge.send(&bravo.json("DELETE", "/_search/scroll", &json!({ "scroll_id": id })));
    assert_eq!(r.status, 200, "{}", r.text());
    for _ in 0..2 {
        assert_eq!(scroll(&edge, &bravo, "big").status, 200);
    }
    refused(&scroll(&edge, &bravo, "big"), 12, 10);
    all_answered(&edge, &[&alpha, &bravo]);
}

/// The connections the engine still holds (its side of each: established, or closed by
/// the client and not yet by the engine), read from the kernel's socket table.
fn engine_connections(engine: SocketAddr) -> u64 {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp (Linux)");
    let port = format!("{:04X}", engine.port());
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // ESTABLISHED (01) or CLOSE_WAIT (08): the engine has not closed its socket
            f.len() > 3
                && f[1].rsplit(':').next() == Some(port.as_str())
                && matches!(f[3], "01" | "08")
        })
        .count() as u64
}

// issue 25 #4: a wait whose client went away ends in the engine at once. A health wait on
// a missing index for an hour: straight to the engine, the client closes; through the
// edge, the edge answers 504 at its deadline and closes its upstream connection. Either
// way the engine's connection (and its thread) is gone within moments, not an hour.
#[test]
fn a_wait_ends_when_its_client_is_gone() {
    let config = Config::new()
        .edge("deadline", "\"2s\"")
        .plan(PlanSpec::new("one").allowance(1, 4, "5s"))
        .cluster(ClusterSpec::multitenant("alpha", "one"))
        .cluster(ClusterSpec::multitenant("bravo", "one"));
    let edge = Edge::start(config);
    let (alpha, bravo) = (edge.tenant("alpha"), edge.tenant("bravo"));
    index(&edge, &alpha, "big", 1);
    index(&edge, &bravo, "big", 1);
    let engine = edge.engine();
    let idle = engine_connections(engine);

    // straight to the engine, then the client goes away
    let mut held = TcpStream::connect(engine).unwrap();
    let req =
        "GET /_cluster/health/missing?wait_for_status=green&timeout=1h HTTP/1.1\r\nHost: e\r\n\r\n";
    held.write_all(req.as_bytes()).unwrap();
    eventually(
        "the wait to hold a connection",
        Duration::from_secs(10),
        || (engine_connections(engine) > idle).then_some(()),
    );
    drop(held);
    eventually(
        "the engine to end the wait",
        Duration::from_secs(10),
        || (engine_connections(engine) <= idle).then_some(()),
    );

    // through the edge: 504 at the deadline, and the engine's connection ends with it
    for _ in 0..3 {
        let wait = alpha.req(
            "GET",
            "/_cluster/health/missing?wait_for_status=green&timeout=1h",
        );
        let r = edge.send(&wait);
        assert!(matches!(r.status, 504 | 408 | 200), "{}", r.text());
    }
    eventually(
        "the engine to end the waits",
        Duration::from_secs(10),
        || (engine_connections(engine) <= idle + 1).then_some(()),
    );
    // the tenant's one slot is free at once
    let r = edge.send(&alpha.req("GET", "/big/_count"));
    assert_eq!(r.status, 200, "{}", r.text());
    all_answered(&edge, &[&alpha, &bravo]);
}

/// A connection straight to the engine that sent one request and read its answer (now
/// idle, kept alive).
fn idle_engine_connection(engine: SocketAddr) -> e2e::Conn {
    let mut c = e2e::Conn::plain(engine);
    let r = e2e::exchange(&mut c, &e2e::client::Req::new("GET", "/").host("engine"));
    assert_eq!(r.status, 200, "{}", r.text());
    c
}

// issue 25 #4 (spec 7: 503 only for a node restart): the engine's connection limit counts
// the connections doing work. At the limit, a new connection takes the place of the one
// idle the longest, so idle keep-alive connections (the edge's pools, anyone's) never lock
// the tenants out; only when every connection is busy is the next one refused (N+1).
#[test]
fn the_engines_connection_limit_counts_busy_connections_only() {
    let config = Config::new()
        .engine_key("max_connections", "4")
        .cluster(ClusterSpec::multitenant("alpha", "p"))
        .cluster(ClusterSpec::multitenant("bravo", "p"));
    let edge = Edge::start(config);
    let (alpha, bravo) = (edge.tenant("alpha"), edge.tenant("bravo"));
    let engine = edge.engine();
    // four idle connections fill the limit; the tenants are still served, again and again
    let idle: Vec<e2e::Conn> = (0..4).map(|_| idle_engine_connection(engine)).collect();
    index(&edge, &alpha, "big", 1);
    index(&edge, &bravo, "big", 1);
    all_answered(&edge, &[&alpha, &bravo]);
    drop(idle);

    // four busy connections (waits) fill it for real: the fifth is refused 503
    let waits: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut s = TcpStream::connect(engine).unwrap();
            let req = "GET /_cluster/health/missing?wait_for_status=green&timeout=30s HTTP/1.1\r\nHost: e\r\n\r\n";
            s.write_all(req.as_bytes()).unwrap();
            s
        })
        .collect();
    eventually("four busy connections", Duration::from_secs(10), || {
        let r = e2e::direct(engine, "GET", "/", None);
        (r.status == 503).then_some(())
    });
    // the waits' clients go away: the engine ends them, and serves again
    drop(waits);
    eventually("room again", Duration::from_secs(10), || {
        (e2e::direct(engine, "GET", "/", None).status == 200).then_some(())
    });
    all_answered(&edge, &[&alpha, &bravo]);
}

// issue 25 (spec 1.6, 8): the plans of the multitenant clusters on the embedded engine must
// fit its connection limit, else a busy moment of some tenants makes another's request
// fail 503. Two clusters on the default plan (16 each, and 8 for the edge's own) fit a
// limit of 40 exactly (N): no warning; a third cluster added by a reload (N+1) makes the
// edge warn, naming the figures and the setting to raise; back to two, it says they fit.
#[test]
fn plans_that_overcommit_the_engines_connections_are_warned_about() {
    let two = Config::new()
        .engine_key("max_connections", "40")
        .cluster(ClusterSpec::multitenant("alpha", "p"))
        .cluster(ClusterSpec::multitenant("bravo", "p"));
    let mut edge = Edge::start(two.clone());
    edge.reload(
        two.clone()
            .cluster(ClusterSpec::multitenant("charlie", "p")),
    );
    let warning = edge
        .out
        .wait_for(
            "warning: the 3 multitenant cluster(s)",
            Duration::from_secs(10),
        )
        .unwrap_or_else(|| panic!("no warning:\n{}", edge.out.text()));
    assert!(
        warning.contains("may have 56 requests in flight at once"),
        "{warning}"
    );
    assert!(
        warning.contains("[engine] max_connections = 40"),
        "{warning}"
    );
    assert!(warning.contains("at least 56"), "{warning}");
    assert!(
        !edge.out.text().contains("warning: the 2 multitenant"),
        "two clusters fit: {}",
        edge.out.text()
    );
    edge.reload(two);
    edge.out
        .wait_for(
            "fit its [engine] max_connections = 40 again",
            Duration::from_secs(10),
        )
        .unwrap_or_else(|| panic!("no all-clear:\n{}", edge.out.text()));
    let alpha = edge.tenant("alpha");
    let r = edge.send(&alpha.req("GET", "/"));
    assert_eq!(r.status, 200, "{}", r.text());
}
