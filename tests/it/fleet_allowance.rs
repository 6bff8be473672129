//! One cluster, one allowance, across the fleet (issue 27): three `searchgate serve` nodes
//! sharing one PostgreSQL store (`support::pg`) in front of one slow upstream (the edge
//! tests' mock, which records the most requests it held at once). A cluster's plan is
//! exact across the fleet: requests spread over every node never have more in flight
//! upstream than the plan's concurrency (spec 1.6, 1.7, 8); a full queue and a queue
//! timeout answer 429 wherever the request arrived (spec 7); the home killed with SIGKILL
//! under load: its clusters move within the lease, every request is answered 200, 429 or
//! 503, never more in flight than the plan.
//!
//! Waits are on events (a gauge, a status, the mock's count), never sleeps.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::support::e2e::metrics;
use crate::support::e2e::mock::Mock;
use crate::support::e2e::{es_error, eventually, ClusterSpec, Config, Edge, PlanSpec, Tenant};
use crate::support::pg::Pg;

/// The lease of the nodes' registrations in these tests.
const LEASE: Duration = Duration::from_secs(2);

/// Node `node` of a fleet on store `url`: one cluster `c1` on `upstream`, plan `p2`
/// (concurrency 2, a queue of `queue`, `queue_timeout`).
fn node(
    url: &str,
    node: &str,
    upstream: std::net::SocketAddr,
    queue: u32,
    timeout: &str,
) -> Config {
    let mut c = Config::new()
        .plan(PlanSpec::new("p2").allowance(2, queue, timeout))
        .cluster(ClusterSpec::single("c1", "p2", upstream))
        .section(&format!(
            "[store]\nurl = {url:?}\n\n[fleet]\nnode_id = {node:?}\npoll_interval = \"1s\"\nlease = \"{}s\"\npeer_listen = \"127.0.0.1:0\"\n",
            LEASE.as_secs()
        ));
    c.engine = false;
    c
}

/// A gauge or counter of node `n` without labels.
fn figure(n: &Edge, name: &str) -> Option<u64> {
    metrics::series(
        &metrics::scrape(n.metrics.expect("a metrics listener")),
        name,
    )
}

/// Waits until every node of `nodes` sees `count` live nodes and exactly one of them is
/// home of the one cluster; returns the home's index.
fn settled(nodes: &[&Edge], count: u64) -> usize {
    eventually(
        "the fleet to agree on its nodes",
        Duration::from_secs(20),
        || {
            let seen: Vec<_> = nodes
                .iter()
                .map(|n| figure(n, "searchgate_fleet_nodes"))
                .collect();
            if seen.iter().any(|s| *s != Some(count)) {
                return None;
            }
            let homes: Vec<_> = nodes
                .iter()
                .map(|n| figure(n, "searchgate_fleet_homes"))
                .collect();
            let home: Vec<usize> = (0..nodes.len()).filter(|i| homes[*i] == Some(1)).collect();
            (home.len() == 1 && homes.iter().all(|h| h.is_some())).then(|| home[0])
        },
    )
}

/// A search of `t` the mock answers after `ms` (or holds, with `hold`).
fn search(t: &Tenant, how: &str) -> crate::support::e2e::Req {
    t.req("GET", "/books/_search").header("X-Mock", how)
}

/// Sends `per_node` requests of `t` to each node at once; the statuses.
fn spread(nodes: &[&Edge], t: &Tenant, per_node: usize, how: &str) -> Vec<u16> {
    std::thread::scope(|s| {
        let handles: Vec<_> = nodes
            .iter()
            .flat_map(|n| (0..per_node).map(move |_| n))
            .map(|n| s.spawn(|| n.send(&search(t, how)).status))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

// spec 1.6, 1.7, 8 (issue 27): a plan of concurrency 2 loaded through all three nodes never
// has more than 2 requests in flight upstream, and uses both; the nodes away from home ask
// the home for permits.
#[test]
fn three_nodes_share_one_allowance() {
    let pg = Pg::start();
    let url = pg.database();
    let mock = Mock::start();
    let a = Edge::start(node(&url, "a", mock.addr, 30, "20s"));
    let b = Edge::start(node(&url, "b", mock.addr, 30, "20s"));
    let c = Edge::start(node(&url, "c", mock.addr, 30, "20s"));
    let nodes = [&a, &b, &c];
    let home = settled(&nodes, 3);
    let t = a.tenant("c1");
    for n in nodes {
        assert_eq!(
            n.send(&search(&t, "delay=1")).status,
            200,
            "{}",
            n.out.text()
        );
    }
    let statuses = spread(&nodes, &t, 6, "delay=150");
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    assert_eq!(
        mock.max_in_flight(),
        2,
        "the upstream held at most the plan's 2 at once, and the plan was used in full"
    );
    for (i, n) in nodes.iter().enumerate() {
        let remote = figure(n, "searchgate_fleet_remote_permits_total").expect("exposed");
        if i == home {
            assert_eq!(remote, 0, "the home admits its own requests");
        } else {
            assert!(
                remote >= 6,
                "node {i} asked the home for each of its requests: {remote}"
            );
        }
    }
    let grants = figure(nodes[home], "searchgate_fleet_peer_grants_total").unwrap();
    assert!(
        grants >= 12,
        "the home granted the others' permits: {grants}"
    );

    // The map a load balancer reads names the same home on every node.
    let names = ["a", "b", "c"];
    for n in nodes {
        let addr = n.metrics.expect("a metrics listener");
        let map = http_get(addr, "/fleet/homes.map");
        assert_eq!(map, format!("c1.r1. {}\n", names[home]), "{}", n.out.text());
    }

    // A peer listener never serves a customer's request: an HTTP request (valid
    // credentials and all) gets no byte back, the connection is closed.
    let line = a
        .out
        .wait_for("peers on ", Duration::from_secs(5))
        .expect("the line");
    let peer = line
        .split("peers on ")
        .nth(1)
        .unwrap()
        .split(';')
        .next()
        .unwrap();
    let mut conn = std::net::TcpStream::connect(peer).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let req = format!(
        "GET /books/_search HTTP/1.1\r\nHost: c1.r1.example.test\r\nAuthorization: Basic {}\r\n\r\n",
        base64_of(b"c1user:c1pass")
    );
    use std::io::{Read, Write};
    conn.write_all(req.as_bytes()).unwrap();
    let mut got = Vec::new();
    let _ = conn.read_to_end(&mut got);
    assert!(
        got.is_empty(),
        "the peer listener answered: {:?}",
        String::from_utf8_lossy(&got)
    );
}

/// The body of `GET path` on a metrics listener.
fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: metrics\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

fn base64_of(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}

// spec 7, 8 (issue 27): a full queue answers 429 at once and a queue timeout 429 after the
// plan's timeout, whichever node the request arrived at, as on one node.
#[test]
fn queue_overflow_and_timeout_answer_429_from_any_node() {
    let pg = Pg::start();
    let url = pg.database();
    let mock = Mock::start();
    let a = Edge::start(node(&url, "a", mock.addr, 1, "1s"));
    let b = Edge::start(node(&url, "b", mock.addr, 1, "1s"));
    let c = Edge::start(node(&url, "c", mock.addr, 1, "1s"));
    let nodes = [&a, &b, &c];
    let home = settled(&nodes, 3);
    let away: Vec<&Edge> = (0..3).filter(|i| *i != home).map(|i| nodes[i]).collect();
    let t = a.tenant("c1");
    std::thread::scope(|s| {
        // Both permits taken, through the two nodes away from home.
        let held: Vec<_> = away
            .iter()
            .map(|n| s.spawn(|| n.send(&search(&t, "hold")).status))
            .collect();
        mock.wait_in_flight(2);
        // One waits in the queue (from the home itself)...
        let queued = s.spawn(|| {
            let r = nodes[home].send(&search(&t, "delay=1"));
            (r.status, Instant::now())
        });
        nodes[home].wait_gauge("searchgate_queue_depth", "c1", "one request queued", |d| {
            d == 1
        });
        // ... so the next one, away from home, finds the queue full.
        let full = away[0].send(&search(&t, "delay=1"));
        let (kind, reason) = es_error(&full, 429);
        assert_eq!(kind, "too_many_requests_exception", "{reason}");
        assert!(
            reason.contains("of 2 concurrent requests is in use and its queue of 1 is full"),
            "{reason}"
        );
        // The queued one times out after the plan's 1s: 429.
        let (status, _) = queued.join().unwrap();
        assert_eq!(status, 429);
        // Away from home, a queue timeout is a 429 too.
        let timed = away[1].send(&search(&t, "delay=1"));
        let (_, reason) = es_error(&timed, 429);
        assert!(
            reason.starts_with("Too Many Requests: waited 1"),
            "{reason}"
        );
        mock.release();
        for h in held {
            assert_eq!(h.join().unwrap(), 200);
        }
    });
    assert_eq!(mock.max_in_flight(), 2);
}

// Issue 27: the home killed with SIGKILL under load: the survivors answer 200, 429 or 503
// (never anything else), never more than the plan's 2 in flight upstream, and the cluster
// has a new home within the lease (and a little for the next renewal).
#[test]
fn home_killed_under_load_moves_the_cluster_without_overshoot() {
    let pg = Pg::start();
    let url = pg.database();
    let mock = Mock::start();
    let mut nodes = vec![
        Edge::start(node(&url, "a", mock.addr, 30, "5s")),
        Edge::start(node(&url, "b", mock.addr, 30, "5s")),
        Edge::start(node(&url, "c", mock.addr, 30, "5s")),
    ];
    let home = settled(&nodes.iter().collect::<Vec<_>>(), 3);
    let t = nodes[0].tenant("c1");
    let killed = nodes.remove(home);
    let stop = AtomicBool::new(false);
    let answers = std::thread::scope(|s| {
        let load: Vec<_> = (0..6)
            .map(|i| {
                let (n, t, stop) = (&nodes[i % 2], &t, &stop);
                s.spawn(move || {
                    let mut seen = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        seen.push(n.send(&search(t, "delay=50")).status);
                    }
                    seen
                })
            })
            .collect();
        eventually("load to flow", Duration::from_secs(10), || {
            (mock.requests().len() > 20).then_some(())
        });
        let at = Instant::now();
        drop(killed.kill9());
        let survivors: Vec<&Edge> = nodes.iter().collect();
        let new_home = settled(&survivors, 2);
        let moved = at.elapsed();
        // Load keeps flowing through the new home.
        let before = mock.requests().len();
        eventually(
            "requests served by the new home",
            Duration::from_secs(10),
            || (mock.requests().len() > before + 20).then_some(()),
        );
        stop.store(true, Ordering::Relaxed);
        let all: Vec<u16> = load.into_iter().flat_map(|h| h.join().unwrap()).collect();
        (all, moved, new_home)
    });
    let (all, moved, _) = answers;
    assert!(
        all.iter().all(|s| matches!(s, 200 | 429 | 503)),
        "every request answered 200, 429 or 503: {:?}",
        all.iter()
            .filter(|s| !matches!(s, 200 | 429 | 503))
            .collect::<Vec<_>>()
    );
    assert!(all.iter().filter(|s| **s == 200).count() > 40, "{all:?}");
    assert!(
        mock.max_in_flight() <= 2,
        "in flight at once: {}",
        mock.max_in_flight()
    );
    assert!(
        moved < LEASE + Duration::from_secs(5),
        "the cluster moved {moved:?} after the kill (lease {LEASE:?})"
    );
}

// Issue 27: a node that joins under load and becomes the cluster's home takes it over only
// as the old home's requests end: never more than the plan's 2 in flight upstream, every
// request answered 200, 429 or 503, and the new node ends up home.
#[test]
fn a_node_joining_under_load_takes_over_without_overshoot() {
    let pg = Pg::start();
    let url = pg.database();
    let mock = Mock::start();
    let a = Edge::start(node(&url, "a", mock.addr, 30, "5s"));
    let b = Edge::start(node(&url, "b", mock.addr, 30, "5s"));
    settled(&[&a, &b], 2);
    // A name that wins cluster c1 over a and b (rendezvous over the three names).
    let joiner = (0..1000)
        .map(|i| format!("n{i}"))
        .find(|n| {
            let names = ["a", "b", n.as_str()];
            searchgate::fleet::rendezvous::home(&names, "c1") == Some(2)
        })
        .expect("some name wins");
    let t = a.tenant("c1");
    let stop = AtomicBool::new(false);
    let (all, c) = std::thread::scope(|s| {
        let load: Vec<_> = (0..6)
            .map(|i| {
                let (n, t, stop) = ([&a, &b][i % 2], &t, &stop);
                s.spawn(move || {
                    let mut seen = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        seen.push(n.send(&search(t, "delay=100")).status);
                    }
                    seen
                })
            })
            .collect();
        eventually("load to flow", Duration::from_secs(10), || {
            (mock.requests().len() > 10).then_some(())
        });
        let c = Edge::start(node(&url, &joiner, mock.addr, 30, "5s"));
        let home = settled(&[&a, &b, &c], 3);
        assert_eq!(home, 2, "the joiner is home of c1");
        let before = mock.requests().len();
        eventually(
            "requests admitted by the new home",
            Duration::from_secs(10),
            || (mock.requests().len() > before + 20).then_some(()),
        );
        stop.store(true, Ordering::Relaxed);
        let all: Vec<u16> = load.into_iter().flat_map(|h| h.join().unwrap()).collect();
        (all, c)
    });
    assert!(
        all.iter().all(|s| matches!(s, 200 | 429 | 503)),
        "{:?}",
        all.iter()
            .filter(|s| !matches!(s, 200 | 429 | 503))
            .collect::<Vec<_>>()
    );
    assert!(
        mock.max_in_flight() <= 2,
        "in flight at once: {}",
        mock.max_in_flight()
    );
    assert!(figure(&c, "searchgate_fleet_peer_grants_total").unwrap() > 0);
    assert!(figure(&a, "searchgate_fleet_handovers_total").is_some());
}

/// Node `node` of a fleet on store `url` whose one multitenant cluster `m1` is placed on
/// the shared engine `engine`, plan `pc` (shard capacity 6, two open contexts).
fn places_node(url: &str, node: &str, engine: &crate::support::e2e::Engine) -> Config {
    let m1 = ClusterSpec {
        upstream: Some(engine.addr),
        ..ClusterSpec::multitenant("m1", "pc")
    };
    let mut c = Config::new()
        .admin_key("shared_upstreams", &format!("[\"{}\"]", engine.addr))
        .plan(PlanSpec::new("pc").shards(6).contexts(2))
        .cluster(m1)
        .section(&format!(
            "[store]\nurl = {url:?}\n\n[fleet]\nnode_id = {node:?}\npoll_interval = \"1s\"\nlease = \"{}s\"\npeer_listen = \"127.0.0.1:0\"\n",
            LEASE.as_secs()
        ));
    c.engine = false;
    c
}

/// Opens a scroll of `books` through `n`.
fn open_scroll(n: &Edge, t: &Tenant) -> crate::support::e2e::Response {
    n.send(&t.req("GET", "/books/_search?scroll=1m&size=1"))
}

/// The sealed scroll id of an open that must have succeeded.
fn scroll_id(r: &crate::support::e2e::Response) -> String {
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["_scroll_id"].as_str().expect("an id").to_string()
}

/// The edge's 429 for an open beyond the plan's two contexts, with the numbers.
fn contexts_full(r: &crate::support::e2e::Response) {
    let (kind, reason) = es_error(r, 429);
    assert_eq!(kind, "too_many_scroll_contexts_exception", "{reason}");
    assert!(reason.contains("less than or equal to: [2]"), "{reason}");
    assert!(reason.contains("Open now: [2]"), "{reason}");
}

/// The 400 of an index creation beyond the plan's 6 shards, `in_use` of them in use.
fn capacity_full(r: &crate::support::e2e::Response, in_use: u64) {
    let (kind, reason) = es_error(r, 400);
    assert_eq!(kind, "validation_exception", "{reason}");
    let e = &r.json()["error"];
    assert_eq!(e["shard_capacity"], 6, "{e}");
    assert_eq!(e["shards_in_use"], in_use, "{e}");
}

// spec 8, issue 10 §3, issue 27: a cluster's open search contexts and its shard capacity
// are counted once for the fleet, at its home, whichever node a request reaches: scrolls
// opened through different nodes stop at the plan's two with 429
// too_many_scroll_contexts_exception (and a clear through a third node frees a place for
// all of them); index creations through different nodes stop at the plan's 6 shards
// with the 400 of one node.
#[test]
fn contexts_and_shards_are_counted_once_across_the_fleet() {
    let pg = Pg::start();
    let url = pg.database();
    let engine = crate::support::e2e::Engine::start();
    let a = Edge::start(places_node(&url, "a", &engine));
    let b = Edge::start(places_node(&url, "b", &engine));
    let c = Edge::start(places_node(&url, "c", &engine));
    let nodes = [&a, &b, &c];
    let home = settled(&nodes, 3);
    let away: Vec<&Edge> = (0..3).filter(|i| *i != home).map(|i| nodes[i]).collect();
    let home = nodes[home];
    let t = a.tenant("m1");

    // `books` (the upstream's defaults: 2 shards) created away from home, filled through
    // the other node.
    let r = away[0].send(&t.req("PUT", "/books"));
    assert_eq!(r.status, 200, "{}", r.text());
    for n in 0..3 {
        let doc = serde_json::json!({ "n": n });
        let r = away[1].send(&t.json("PUT", &format!("/books/_doc/{n}?refresh=true"), &doc));
        assert!(r.status < 300, "{}", r.text());
    }

    // Two scrolls, each opened through a node away from home: the plan's two.
    let s1 = scroll_id(&open_scroll(away[0], &t));
    let s2 = scroll_id(&open_scroll(away[1], &t));
    // A third, through any node, is one too many.
    for n in [home, away[0], away[1]] {
        contexts_full(&open_scroll(n, &t));
    }
    // A continuation is not an open: it still works, through another node.
    let more = serde_json::json!({ "scroll": "1m", "scroll_id": s2 });
    let r = home.send(&t.json("POST", "/_search/scroll", &more));
    assert_eq!(r.status, 200, "{}", r.text());
    // Clearing s1 through the home frees its place for every node at once.
    let clear = serde_json::json!({ "scroll_id": [s1] });
    let r = home.send(&t.json("DELETE", "/_search/scroll", &clear));
    assert_eq!(r.status, 200, "{}", r.text());
    let s3 = scroll_id(&open_scroll(away[1], &t));
    contexts_full(&open_scroll(away[0], &t));
    // ... and so does a clear through a node away from home.
    let clear = serde_json::json!({ "scroll_id": [s3] });
    let r = away[0].send(&t.json("DELETE", "/_search/scroll", &clear));
    assert_eq!(r.status, 200, "{}", r.text());
    scroll_id(&open_scroll(home, &t));
    contexts_full(&open_scroll(away[1], &t));

    // Shards: 2 in use; 2 more through one node away from home, 2 through the home: 6.
    let two = serde_json::json!({"settings": {"number_of_shards": 1, "number_of_replicas": 1}});
    let r = away[1].send(&t.json("PUT", "/more", &two));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = home.send(&t.json("PUT", "/third", &two));
    assert_eq!(r.status, 200, "{}", r.text());
    // One more shard is refused through every node, as on one node.
    let one = serde_json::json!({"settings": {"number_of_shards": 1, "number_of_replicas": 0}});
    for n in [away[0], away[1], home] {
        capacity_full(&n.send(&t.json("PUT", "/fourth", &one)), 6);
    }
    assert_eq!(
        home.send(&t.req("GET", "/fourth")).status,
        404,
        "nothing was created upstream"
    );
    // The home counted the others' permits.
    assert!(figure(home, "searchgate_fleet_peer_grants_total").unwrap() > 0);
}

// Issue 27 (docs/fleet.md, "Handover: the exact guarantee"): permits a home granted to
// other nodes outlive it when it is killed; they count against the new home until they
// end. Two requests hold the plan's two permits from the home, through the two other
// nodes; the home is killed with SIGKILL; once the survivors agree on the new home, new
// requests through both of them queue (nothing more reaches the upstream) until the two
// old requests end, then are served.
#[test]
fn a_dead_homes_permits_count_against_the_new_home() {
    let pg = Pg::start();
    let url = pg.database();
    let mock = Mock::start();
    let mut nodes = vec![
        Edge::start(node(&url, "a", mock.addr, 30, "20s")),
        Edge::start(node(&url, "b", mock.addr, 30, "20s")),
        Edge::start(node(&url, "c", mock.addr, 30, "20s")),
    ];
    let home = settled(&nodes.iter().collect::<Vec<_>>(), 3);
    let t = nodes[0].tenant("c1");
    let killed = nodes.remove(home);
    std::thread::scope(|s| {
        let held: Vec<_> = nodes
            .iter()
            .map(|n| s.spawn(|| n.send(&search(&t, "hold")).status))
            .collect();
        mock.wait_in_flight(2);
        drop(killed.kill9());
        let survivors: Vec<&Edge> = nodes.iter().collect();
        let new_home = settled(&survivors, 2);
        let later: Vec<_> = nodes
            .iter()
            .map(|n| s.spawn(|| n.send(&search(&t, "delay=1")).status))
            .collect();
        // Both new requests wait in the new home's queue behind the old permits.
        nodes[new_home].wait_gauge("searchgate_queue_depth", "c1", "both queued", |d| d == 2);
        assert_eq!(mock.in_flight(), 2, "only the dead home's two are upstream");
        mock.release();
        for h in held {
            assert_eq!(h.join().unwrap(), 200);
        }
        for h in later {
            assert_eq!(h.join().unwrap(), 200);
        }
    });
    assert_eq!(
        mock.max_in_flight(),
        2,
        "never more than the plan's 2 in flight upstream"
    );
}

// Issue 27 (docs/fleet.md, "Handover: the exact guarantee"): the cluster's shards and open
// contexts are exact across a change of home. The home creates two indices (4 of the
// plan's 6 shards) and opens the plan's two scrolls, then is killed with SIGKILL. No
// metering reading runs meanwhile (`metering_interval` is an hour in these tests), so the
// survivors' ledgers know nothing of them: the new home counts them from the engine's
// `_stats/search` and `_cat/indices` before it lets the cluster create or open anything
// (503 with Retry-After until then). A third scroll and 3 more shards are refused as on
// the old home, through either survivor; 2 more shards still fit.
#[test]
fn a_new_home_counts_the_shards_and_contexts_the_old_home_held() {
    let pg = Pg::start();
    let url = pg.database();
    let engine = crate::support::e2e::Engine::start();
    let mut nodes = vec![
        Edge::start(places_node(&url, "a", &engine)),
        Edge::start(places_node(&url, "b", &engine)),
        Edge::start(places_node(&url, "c", &engine)),
    ];
    let home = settled(&nodes.iter().collect::<Vec<_>>(), 3);
    let t = nodes[0].tenant("m1");
    let old = &nodes[home];
    let r = old.send(&t.req("PUT", "/books"));
    assert_eq!(r.status, 200, "{}", r.text());
    let doc = serde_json::json!({ "n": 1 });
    let r = old.send(&t.json("PUT", "/books/_doc/1?refresh=true", &doc));
    assert!(r.status < 300, "{}", r.text());
    scroll_id(&open_scroll(old, &t));
    scroll_id(&open_scroll(old, &t));
    contexts_full(&open_scroll(old, &t));
    let two = serde_json::json!({"settings": {"number_of_shards": 1, "number_of_replicas": 1}});
    let r = old.send(&t.json("PUT", "/more", &two));
    assert_eq!(r.status, 200, "{}", r.text());

    drop(nodes.remove(home).kill9());
    let survivors: Vec<&Edge> = nodes.iter().collect();
    let new_home = settled(&survivors, 2);
    let other = survivors[1 - new_home];
    // Until the new home has counted them: 503, never a 200.
    let r = eventually(
        "the new home to count the old one's contexts",
        Duration::from_secs(30),
        || {
            let r = open_scroll(survivors[new_home], &t);
            match r.status {
                503 => {
                    assert!(r.header("retry-after").is_some(), "{}", r.text());
                    None
                }
                _ => Some(r),
            }
        },
    );
    contexts_full(&r);
    contexts_full(&open_scroll(other, &t));
    let three = serde_json::json!({"settings": {"number_of_shards": 3, "number_of_replicas": 0}});
    for n in [survivors[new_home], other] {
        capacity_full(&n.send(&t.json("PUT", "/big", &three)), 4);
    }
    let r = other.send(&t.json("PUT", "/fits", &two));
    assert_eq!(r.status, 200, "2 more shards fit: {}", r.text());
    capacity_full(
        &survivors[new_home].send(&t.json("PUT", "/fourth", &two)),
        6,
    );
}
