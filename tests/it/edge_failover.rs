//! End-to-end: a cluster on several upstream nodes (issue 28; spec 7: 503 while a node
//! restarts, 502 after a crash): a dead node is taken out by its health checks and costs
//! no client an error (reads are tried again on another node), and it comes back once it
//! passes its checks; a black-holed node is taken out; a write whose node closed without
//! answering is never sent to a second node; a cluster whose nodes are all down answers
//! 503 and recovers without a restart.

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use crate::support::e2e::eventually;
use crate::support::edge::{metrics, ClusterSpec, Mock, Req, Server, Setup};

/// Quick checks, so the tests wait on them for moments, not seconds.
const HEALTH: &str = "[upstream_health]\ninterval = \"100ms\"\ntimeout = \"300ms\"\nrise = 2\n\
                      fall = 2\npassive_failures = 2\neject_base = \"30s\"\n";

/// An edge whose one cluster `pool` has the nodes `nodes` (`front` is where the default
/// cluster points: an extra mock, so the pool's nodes see only the pool's requests).
fn start(front: &Mock, nodes: &[SocketAddr]) -> (Server, ClusterSpec) {
    let pool = ClusterSpec::new("pool", nodes[0]).nodes(&nodes[1..]);
    let server = Setup::new(front.addr)
        .cluster(pool.clone())
        .section(HEALTH)
        .start();
    (server, pool)
}

fn req(pool: &ClusterSpec, method: &str, target: &str) -> Req {
    Req::new(method, target)
        .host(&pool.host())
        .auth(&pool.username, &pool.password)
}

/// The node's state as the edge's metrics say (`up`, `down` or `ejected`).
fn state(server: &Server, node: SocketAddr) -> Option<String> {
    let text = metrics::scrape(server.metrics.expect("[edge] metrics"));
    let prefix = format!("searchgate_upstream_node_up{{node=\"{node}\",state=\"");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split('"').next())
        .map(str::to_string)
}

fn wait_state(server: &Server, node: SocketAddr, want: &str) {
    eventually(&format!("{node} {want}"), Duration::from_secs(10), || {
        (state(server, node).as_deref() == Some(want)).then_some(())
    });
}

fn received(mock: &Mock, target: &str) -> usize {
    mock.requests()
        .iter()
        .filter(|r| r.target == target)
        .count()
}

// issue 28, spec 7: one node of three dies under a steady read load: no client sees an
// error (a read that hit the dead node is tried on another), the node is taken out by its
// checks, and it serves again once it is back and passes them.
#[test]
fn a_dead_node_costs_no_errors_and_rejoins_after_its_checks() {
    let front = Mock::start();
    let nodes = [Mock::start(), Mock::start(), Mock::start()];
    let addrs: Vec<SocketAddr> = nodes.iter().map(|m| m.addr).collect();
    let (server, pool) = start(&front, &addrs);
    let [a, b, c] = nodes;
    let dead = b.addr;
    drop(b); // its port is closed: connections are refused
    for i in 0..60 {
        let r = server.send(&req(&pool, "GET", &format!("/s{i}/_search")));
        assert_eq!(r.status, 200, "read {i}: {}", r.text());
    }
    wait_state(&server, dead, "down");
    let served = (0..60).map(|i| format!("/s{i}/_search"));
    let total: usize = served.map(|t| received(&a, &t) + received(&c, &t)).sum();
    assert_eq!(total, 60, "every read was answered by a live node, once");
    let back = Mock::start_at(dead);
    wait_state(&server, dead, "up");
    eventually("the node serves again", Duration::from_secs(10), || {
        let r = server.send(&req(&pool, "GET", "/again/_search"));
        assert_eq!(r.status, 200);
        (received(&back, "/again/_search") > 0).then_some(())
    });
}

// issue 28: a node that accepts connections and never answers is taken out by its checks
// (each costs one check timeout); then every request goes to the live node at once, and
// the cluster's slots are not held by requests waiting on it.
#[test]
fn a_black_holed_node_is_taken_out_by_its_checks() {
    let front = Mock::start();
    let live = Mock::start();
    let hole = TcpListener::bind("127.0.0.1:0").unwrap(); // never accepts: the backlog holds
    let hole_addr = hole.local_addr().unwrap();
    let (server, pool) = start(&front, &[hole_addr, live.addr]);
    wait_state(&server, hole_addr, "down");
    for i in 0..20 {
        let r = server.send(&req(&pool, "GET", &format!("/h{i}/_search")));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    assert_eq!(
        (0..20)
            .map(|i| received(&live, &format!("/h{i}/_search")))
            .sum::<usize>(),
        20
    );
    drop(hole);
}

// issue 28 (never a write twice): on a node that reads a request whole and closes without
// answering, a read is tried again on the other node (200), a write is not (502) and was
// received exactly once, by one node.
#[test]
fn after_no_answer_reads_go_to_another_node_and_writes_are_never_resent() {
    let front = Mock::start();
    let (bad, good) = (Mock::start(), Mock::start());
    let (server, pool) = start(&front, &[bad.addr, good.addr]);
    bad.answer_all("resp=none");
    let mut writes_failed = 0;
    for i in 0..16 {
        let target = format!("/r{i}/_search");
        let r = server.send(&req(&pool, "GET", &target));
        assert_eq!(r.status, 200, "read {i}: {}", r.text());
        let target = format!("/w/_doc/{i}");
        let r = server.send(&req(&pool, "PUT", &target).body(&b"{\"a\":1}"[..]));
        match r.status {
            200 => assert_eq!((received(&bad, &target), received(&good, &target)), (0, 1)),
            502 => {
                writes_failed += 1;
                assert_eq!((received(&bad, &target), received(&good, &target)), (1, 0));
            }
            s => panic!("write {i}: {s} {}", r.text()),
        }
        if state(&server, bad.addr).as_deref() != Some("up") {
            break; // taken out: the rest would all go to the good node
        }
    }
    assert!(
        writes_failed <= 2,
        "the node was ejected after its failures"
    );
    eventually("the node is taken out", Duration::from_secs(10), || {
        let _ = server.send(&req(&pool, "GET", "/poke/_search"));
        (state(&server, bad.addr).as_deref() != Some("up")).then_some(())
    });
}

// issue 28, spec 7: every node down: 503 at once (not at the deadline), and served again
// as soon as one comes back, without a restart of the edge.
#[test]
fn a_cluster_with_every_node_down_answers_503_and_recovers() {
    let front = Mock::start();
    let (a, b) = (Mock::start(), Mock::start());
    let (server, pool) = start(&front, &[a.addr, b.addr]);
    let gone = a.addr;
    drop((a, b));
    let r = server.send(&req(&pool, "GET", "/_search"));
    assert_eq!(r.assert_es_error(503), "service_unavailable_exception");
    wait_state(&server, gone, "down");
    let r = server.send(&req(&pool, "GET", "/_search"));
    assert_eq!(r.assert_es_error(503), "service_unavailable_exception");
    let back = Mock::start_at(gone);
    eventually("served again", Duration::from_secs(10), || {
        let r = server.send(&req(&pool, "GET", "/back/_search"));
        (r.status == 200).then_some(())
    });
    assert!(received(&back, "/back/_search") >= 1);
    let text = metrics::scrape(server.metrics.unwrap());
    let retried = metrics::series(
        &text,
        "searchgate_upstream_retries_total{reason=\"connect\"}",
    );
    assert!(
        retried >= Some(1),
        "the first read tried both nodes: {text}"
    );
}
