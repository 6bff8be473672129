//! End-to-end: a cluster on several upstream nodes (issue 28; spec 7: 503 while a node
//! restarts, 502 after a crash): a dead node is taken out by its health checks and costs
//! no client an error (reads are tried again on another node), and it comes back once it
//! passes its checks; a black-holed node is taken out; a write whose node closed without
//! answering is never sent to a second node; a cluster whose nodes are all down answers
//! 503 and recovers without a restart.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::e2e::eventually;
use crate::support::edge::{metrics, ClusterSpec, Conn, Mock, Req, Server, Setup};

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
// (each costs one check timeout); then every request goes to the live node at once.
#[test]
fn a_black_holed_node_is_taken_out_by_its_checks() {
    let front = Mock::start();
    let live = Mock::start();
    let hole = Hole::open(TcpListener::bind("127.0.0.1:0").unwrap());
    let (server, pool) = start(&front, &[hole.addr, live.addr]);
    wait_state(&server, hole.addr, "down");
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
}

// issue 28, spec 7: a node that hangs under load (it keeps accepting and reading, and
// answers nothing, its checks included) costs the requests it swallowed one detection by
// its checks, not the 20 s deadline: once it is down, the reads waiting on it go to the
// live node (200) and the writes get 502 without a second copy anywhere; the tenant's
// two slots are never drained meanwhile (every request is answered, none 429 or 504).
#[test]
fn requests_waiting_on_a_node_that_hangs_are_freed_when_its_checks_fail() {
    let front = Mock::start();
    let live = Mock::start();
    let hole = Hole::answering(TcpListener::bind("127.0.0.1:0").unwrap());
    let pool = ClusterSpec::new("pool", hole.addr).nodes(&[live.addr]);
    let server = Setup::new(front.addr)
        .cluster(pool.clone())
        .section(HEALTH)
        .plan(2, 64, "19s")
        .edge("deadline", "\"20s\"")
        .start();
    for i in 0..8 {
        let r = server.send(&req(&pool, "GET", &format!("/warm{i}/_search")));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let addr = hole.addr;
    wait_state(&server, addr, "up");
    hole.hang();
    let stop = AtomicBool::new(false);
    let done: [AtomicUsize; 4] = Default::default();
    let answers: Vec<(&str, String, u16)> = std::thread::scope(|s| {
        let clients: Vec<_> = (0..4)
            .map(|t| {
                let (pool, stop, done) = (&pool, &stop, &done[t]);
                s.spawn(move || {
                    let mut answers = Vec::new();
                    for i in 0.. {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        let (method, target) = match i % 2 {
                            0 => ("GET", format!("/t{t}r{i}/_search")),
                            _ => ("PUT", format!("/w/_doc/t{t}w{i}")),
                        };
                        let mut c = Conn::plain(server.http);
                        c.send(&req(pool, method, &target).body(&b"{}"[..]).bytes());
                        answers.push((method, target, c.response().status));
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                    answers
                })
            })
            .collect();
        eventually(
            "the node swallowed a request",
            Duration::from_secs(10),
            || (!hole.targets().is_empty()).then_some(()),
        );
        wait_state(&server, addr, "down");
        // Every client gets two more answers: none is left waiting on the hung node.
        let at_down: Vec<usize> = done.iter().map(|d| d.load(Ordering::SeqCst)).collect();
        eventually(
            "every client is answered again",
            Duration::from_secs(10),
            || {
                let moved = done.iter().zip(&at_down);
                moved
                    .into_iter()
                    .all(|(d, &n)| d.load(Ordering::SeqCst) >= n + 2)
                    .then_some(())
            },
        );
        stop.store(true, Ordering::SeqCst);
        clients
            .into_iter()
            .flat_map(|c| c.join().unwrap())
            .collect()
    });
    let swallowed = hole.targets();
    let count = |targets: Vec<String>| {
        let mut n = std::collections::HashMap::<String, usize>::new();
        targets
            .into_iter()
            .for_each(|t| *n.entry(t).or_default() += 1);
        n
    };
    let at_live = count(live.requests().into_iter().map(|r| r.target).collect());
    let at_hole = count(swallowed.clone());
    let mut gave_502 = 0;
    for (method, target, status) in &answers {
        let at_hole = at_hole.get(target).copied().unwrap_or(0);
        let at_live = at_live.get(target).copied().unwrap_or(0);
        match (*method, *status) {
            ("GET", 200) => assert!(
                at_live == 1 && at_hole <= 1,
                "{target}: {at_live}/{at_hole}"
            ),
            ("PUT", 200) => assert_eq!((at_hole, at_live), (0, 1), "{target}"),
            ("PUT", 502) => {
                gave_502 += 1;
                assert_eq!((at_hole, at_live), (1, 0), "{target}: never a second copy");
            }
            (m, s) => panic!("{m} {target}: {s} (the deadline or the slots ran out)"),
        }
    }
    let text = metrics::scrape(server.metrics.expect("[edge] metrics"));
    let series = "searchgate_upstream_retries_total{reason=\"node_down\"}";
    let freed = metrics::series(&text, series).unwrap_or(0);
    assert_eq!(
        freed + gave_502,
        swallowed.len() as u64,
        "every swallowed request was given up on when the node went down: {swallowed:?}"
    );
}

/// A node that answers every request (`{}`) until [`Hole::hang`], and from then on accepts
/// connections and reads what comes and answers nothing (a hung process whose kernel still
/// accepts): the targets of the requests it received after hanging are kept.
struct Hole {
    addr: SocketAddr,
    hung: Arc<AtomicBool>,
    targets: Arc<Mutex<Vec<String>>>,
}

impl Hole {
    /// A node on `listener` that never answers.
    fn open(listener: TcpListener) -> Hole {
        let hole = Hole::answering(listener);
        hole.hang();
        hole
    }

    /// A node on `listener` that answers until it hangs.
    fn answering(listener: TcpListener) -> Hole {
        let addr = listener.local_addr().unwrap();
        let hung = Arc::new(AtomicBool::new(false));
        let targets = Arc::new(Mutex::new(Vec::new()));
        let (h, seen) = (hung.clone(), targets.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (h, seen) = (h.clone(), seen.clone());
                std::thread::spawn(move || Hole::serve(conn, &h, &seen));
            }
        });
        Hole {
            addr,
            hung,
            targets,
        }
    }

    fn serve(mut conn: TcpStream, hung: &AtomicBool, seen: &Mutex<Vec<String>>) {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap_or(0));
                if buf.len() < end + 4 + len {
                    break;
                }
                let target = head.split(' ').nth(1).unwrap_or("").to_string();
                buf.drain(..end + 4 + len);
                if hung.load(Ordering::SeqCst) {
                    seen.lock().unwrap().push(target);
                    continue; // never answered
                }
                let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                              content-length: 2\r\n\r\n{}";
                if conn.write_all(answer.as_bytes()).is_err() {
                    return;
                }
            }
            match conn.read(&mut chunk) {
                Ok(n @ 1..) => buf.extend_from_slice(&chunk[..n]),
                _ => return,
            }
        }
    }

    /// From now on nothing is answered.
    fn hang(&self) {
        self.hung.store(true, Ordering::SeqCst);
    }

    /// The targets of the requests it swallowed, its checks (`/`) left out.
    fn targets(&self) -> Vec<String> {
        let all = self.targets.lock().unwrap().clone();
        all.into_iter().filter(|t| t != "/").collect()
    }
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

// issue 28 (DNS): a node's host name stands for every address it resolves to, and is
// looked up again every `resolve_interval`: requests reach each address, and an address
// the name loses gets no request after the next lookup. (The name is resolved through the
// tests' hosts file, `SEARCHGATE_TEST_HOSTS`: this machine's DNS gives no name two
// loopback addresses.)
#[test]
fn a_host_name_with_several_addresses_uses_each_and_follows_changes() {
    let front = Mock::start();
    let two = Mock::start_at("127.0.0.2:0".parse().unwrap());
    let port = two.addr.port();
    let three = Mock::start_at(SocketAddr::from(([127, 0, 0, 3], port)));
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, "127.0.0.2 multi.test\n127.0.0.3 multi.test\n").unwrap();
    let c = ClusterSpec::new("named", front.addr).pool("main");
    let server = Setup::new(front.addr)
        .cluster(c.clone())
        .section("[upstream_health]\nresolve_interval = \"1s\"\n")
        .section(&pool_main(&[format!("multi.test:{port}")]))
        .env("SEARCHGATE_DEBUG_HOOKS", "1")
        .env("SEARCHGATE_TEST_HOSTS", hosts.to_str().unwrap())
        .start();
    let batch = |tag: &str| -> (usize, usize) {
        for i in 0..40 {
            let r = server.send(&req(&c, "GET", &format!("/{tag}{i}/_search")));
            assert_eq!(r.status, 200, "{}", r.text());
        }
        let of = |m: &Mock| {
            (0..40)
                .map(|i| received(m, &format!("/{tag}{i}/_search")))
                .sum::<usize>()
        };
        (of(&two), of(&three))
    };
    let (at_two, at_three) = batch("both");
    assert_eq!(at_two + at_three, 40);
    assert!(
        at_two > 0 && at_three > 0,
        "each address served: {at_two}/{at_three}"
    );
    std::fs::write(&hosts, "127.0.0.3 multi.test\n").unwrap();
    let mut round = 0;
    eventually(
        "the name's lost address is left",
        Duration::from_secs(10),
        || {
            round += 1;
            (batch(&format!("after{round}-")) == (0, 40)).then_some(())
        },
    );
}

// issue 28, spec 7: three real engine nodes behind one cluster; under a steady search
// load one is killed (SIGKILL) and started again on its port and data: no search fails
// (a search that met the dead node is tried on another), the node leaves the cluster's
// nodes and serves again once it passes its checks.
#[test]
fn an_engine_node_killed_under_load_costs_no_search_and_rejoins() {
    use crate::support::engine_support::Engine;
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut engines: Vec<Engine> = dirs
        .iter()
        .map(|d| Engine::start_in(d.path(), &[]))
        .collect();
    for e in &engines {
        let mut c = e.client();
        let r = c.req(
            "PUT",
            "/docs",
            Some(r#"{"settings":{"number_of_shards":1}}"#),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        let r = c.req(
            "PUT",
            "/docs/_doc/1?refresh=true",
            Some(r#"{"title":"pools"}"#),
        );
        assert!(r.status < 300, "{}", r.text());
    }
    let front = Mock::start();
    let addrs: Vec<SocketAddr> = engines.iter().map(|e| e.addr).collect();
    let (server, pool) = start(&front, &addrs);
    let victim = addrs[1];
    let (stop, done) = (AtomicBool::new(false), AtomicUsize::new(0));
    let failures: Vec<String> = std::thread::scope(|s| {
        let clients: Vec<_> = (0..4)
            .map(|_| {
                let (pool, stop, done) = (&pool, &stop, &done);
                s.spawn(move || {
                    let mut failed = Vec::new();
                    let body = br#"{"query":{"match":{"title":"pools"}}}"#;
                    while !stop.load(Ordering::SeqCst) {
                        let search = req(pool, "POST", "/docs/_search")
                            .header("content-type", "application/json")
                            .body(&body[..]);
                        let mut c = Conn::plain(server.http);
                        c.send(&search.bytes());
                        let r = c.response();
                        if r.status != 200 || r.json()["hits"]["total"]["value"] != 1 {
                            failed.push(format!("{} {}", r.status, r.text()));
                        }
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                    failed
                })
            })
            .collect();
        let served = |n: usize| {
            let from = done.load(Ordering::SeqCst);
            eventually("searches are served", Duration::from_secs(20), || {
                (done.load(Ordering::SeqCst) >= from + n).then_some(())
            });
        };
        served(50);
        engines[1].kill9();
        wait_state(&server, victim, "down");
        served(50);
        engines[1] = Engine::start_on(&victim.to_string(), dirs[1].path(), &[]);
        wait_state(&server, victim, "up");
        served(50);
        stop.store(true, Ordering::SeqCst);
        clients
            .into_iter()
            .flat_map(|c| c.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "searches failed: {failures:?}");
}
