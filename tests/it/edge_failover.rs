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

const ADMIN: &str = "[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"pools-test-token-0123456789\"\n";

/// `[[upstream_pools]]` `main` with `nodes` (checked every 100ms, down after 2 failures).
fn pool_main(nodes: &[String]) -> String {
    let list: Vec<String> = nodes.iter().map(|n| format!("\"{n}\"")).collect();
    format!(
        "[[upstream_pools]]\nname = \"main\"\nnodes = [{}]\ninterval = \"100ms\"\nfall = 2\n",
        list.join(", ")
    )
}

/// `searchgate admin pools --json` against `server`'s admin listener.
fn admin_pools(server: &Server) -> serde_json::Value {
    let line = server
        .out
        .wait_for("searchgate: admin API on ", Duration::from_secs(5))
        .expect("the admin listener");
    let url = line.split_whitespace().nth(4).expect("its url");
    let token = server.dir.path().join("token");
    std::fs::write(&token, "pools-test-token-0123456789").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .args(["admin", "--json", "--url", url, "--token-file"])
        .arg(&token)
        .arg("pools")
        .output()
        .expect("searchgate admin pools");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

// issue 28 (named pools): two clusters name one `[[upstream_pools]]` whose nodes are given
// by name (`localhost:port`) and by address: both clusters use both nodes; each node is
// checked once (one state per node in the metrics and in `searchgate admin pools`); a
// dead node is taken out for both at once; a reload that changes the pool's nodes moves
// both clusters, and one naming a pool that does not exist is refused whole.
#[test]
fn clusters_on_a_named_pool_share_its_nodes_checks_and_reloads() {
    let front = Mock::start();
    let (m1, m2, m3) = (Mock::start(), Mock::start(), Mock::start());
    let x = ClusterSpec::new("x", front.addr).pool("main");
    let y = ClusterSpec::new("y", front.addr).pool("main");
    let base = Setup::new(front.addr)
        .cluster(x.clone())
        .cluster(y.clone())
        .section(HEALTH)
        .section(ADMIN);
    let by_name = format!("localhost:{}", m1.addr.port());
    let setup = base
        .clone()
        .section(&pool_main(&[by_name, m2.addr.to_string()]));
    let mut server = setup.start();
    for i in 0..20 {
        for c in [&x, &y] {
            let r = server.send(&req(c, "GET", &format!("/{}{i}/_search", c.id)));
            assert_eq!(r.status, 200, "{}", r.text());
        }
    }
    for m in [&m1, &m2] {
        let of = |c: &str| {
            (0..20)
                .map(|i| received(m, &format!("/{c}{i}/_search")))
                .sum::<usize>()
        };
        assert!(
            of("x") > 0 && of("y") > 0,
            "{} serves both clusters",
            m.addr
        );
    }
    wait_state(&server, m1.addr, "up");
    wait_state(&server, m2.addr, "up");
    let text = metrics::scrape(server.metrics.unwrap());
    let lines = |a: SocketAddr| {
        let needle = format!("searchgate_upstream_node_up{{node=\"{a}\"");
        text.lines().filter(|l| l.starts_with(&needle)).count()
    };
    assert_eq!(
        (lines(m1.addr), lines(m2.addr)),
        (1, 1),
        "one state per node"
    );
    let pools = admin_pools(&server);
    let main = &pools["pools"][0];
    assert_eq!(main["name"], "main");
    assert_eq!(main["clusters"], serde_json::json!(["x", "y"]));
    let nodes: Vec<(String, String)> = main["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["address"].as_str().unwrap().into(),
                n["state"].as_str().unwrap().into(),
            )
        })
        .collect();
    let mut nodes = nodes;
    nodes.sort();
    let mut want = vec![
        (m1.addr.to_string(), "up".into()),
        (m2.addr.to_string(), "up".into()),
    ];
    want.sort();
    assert_eq!(nodes, want);
    // the named node dies: down for both clusters, and no read fails
    let dead = m1.addr;
    drop(m1);
    wait_state(&server, dead, "down");
    for i in 0..10 {
        for c in [&x, &y] {
            let r = server.send(&req(c, "GET", &format!("/d{i}/_search")));
            assert_eq!(r.status, 200, "{}", r.text());
        }
    }
    // reload: the pool is now m2 and m3; both clusters reach m3
    server.rewrite(
        base.clone()
            .section(&pool_main(&[m2.addr.to_string(), m3.addr.to_string()])),
    );
    eventually("both clusters on m3", Duration::from_secs(10), || {
        for c in [&x, &y] {
            assert_eq!(
                server
                    .send(&req(c, "GET", &format!("/m3{}/_search", c.id)))
                    .status,
                200
            );
        }
        (received(&m3, "/m3x/_search") > 0 && received(&m3, "/m3y/_search") > 0).then_some(())
    });
    // a cluster naming an unknown pool: the whole reload is refused, the pool keeps serving
    let mut bad = base
        .clone()
        .section(&pool_main(&[m2.addr.to_string(), m3.addr.to_string()]));
    bad.clusters.iter_mut().find(|c| c.id == "x").unwrap().pool = Some("nope".into());
    server.rewrite(bad);
    server
        .err
        .wait_for(
            "no [[upstream_pools]] named `nope`",
            Duration::from_secs(10),
        )
        .expect("the reload refused, naming the pool");
    let r = server.send(&req(&x, "GET", "/after/_search"));
    assert_eq!(r.status, 200, "{}", r.text());
}
