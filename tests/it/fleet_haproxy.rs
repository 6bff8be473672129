//! The load balancer configuration the fleet ships (`tuning/haproxy-fleet.cfg`, issue 27)
//! in front of three `searchgate serve` nodes on one PostgreSQL store, all on 127.0.0.1:
//! Debian's `haproxy` (installed when missing) runs the shipped file with only its
//! addresses, node names and map path replaced. It reads each connection's TLS SNI, sends
//! it to the node the fleet's map names as its cluster's home (with a PROXY v2 header the
//! nodes read, `[edge] trusted_proxies`), and health-checks the nodes:
//!
//! - every cluster's requests land on its home: no node asks another for a permit
//!   (`searchgate_fleet_remote_permits_total` stays 0 on every node);
//! - a node killed with SIGKILL: its clusters are served through the backups as soon as
//!   the health checks find it down, the fleet moves them when its lease runs out, and
//!   with the map read again every request lands on its new home.
//!
//! Waits are on events (a port, a gauge, an answer), never sleeps.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::e2e::mock::Mock;
use crate::support::e2e::{
    eventually, exchange, metrics, ClusterSpec, Config, Conn, Edge, PlanSpec, Tenant,
};
use crate::support::installs::ensure_debian_packages;
use crate::support::pg::{free_port, Pg};

/// The clusters of the test (single-tenant, on the mock).
const CLUSTERS: [&str; 9] = ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"];
/// The nodes' names (their backends in the balancer's configuration).
const NAMES: [&str; 3] = ["a", "b", "c"];

/// Node `name` on store `url`, its clusters on `upstream`; `tls`: the certificate and key
/// of the first node (every node must present the same to the clients).
fn node(url: &str, name: &str, upstream: SocketAddr, tls: Option<(&Path, &Path)>) -> Config {
    let mut c = Config::new()
        .plan(PlanSpec::new("p2").allowance(2, 30, "20s"))
        .edge("https", "\"127.0.0.1:0\"")
        .edge("trusted_proxies", "[\"127.0.0.1/32\"]")
        .section(&format!(
            "[store]\nurl = {url:?}\n\n[fleet]\nnode_id = {name:?}\npoll_interval = \"1s\"\nlease = \"2s\"\npeer_listen = \"127.0.0.1:0\"\n"
        ));
    for id in CLUSTERS {
        c = c.cluster(ClusterSpec::single(id, "p2", upstream));
    }
    if let Some((cert, key)) = tls {
        c = c
            .edge("tls_cert", &format!("{cert:?}"))
            .edge("tls_key", &format!("{key:?}"));
    }
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

/// Waits until every node of `nodes` sees them all and they are home of every cluster
/// between them.
fn settled(nodes: &[&Edge]) {
    eventually("the fleet to agree", Duration::from_secs(30), || {
        let all = nodes
            .iter()
            .all(|n| figure(n, "searchgate_fleet_nodes") == Some(nodes.len() as u64));
        let homes: u64 = nodes
            .iter()
            .filter_map(|n| figure(n, "searchgate_fleet_homes"))
            .sum();
        (all && homes == CLUSTERS.len() as u64).then_some(())
    });
}

/// The balancer's map, read from node `n` (`GET /fleet/homes.map`).
fn homes_map(n: &Edge) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(n.metrics.expect("a metrics listener")).unwrap();
    write!(s, "GET /fleet/homes.map HTTP/1.1\r\nHost: metrics\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

/// The node the map names for cluster `id`.
fn home_in(map: &str, id: &str) -> String {
    let prefix = format!("{id}.r1. ");
    map.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{id} in the map:\n{map}"))
        .to_string()
}

/// HAProxy running the shipped configuration.
struct Haproxy {
    child: Child,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Haproxy {
    /// The shipped configuration with the test's addresses: the nodes' HTTPS listeners
    /// (`nodes`, by name), a free port, the map file in `dir`.
    fn config(nodes: &[(&str, SocketAddr)], port: u16, map: &Path) -> String {
        let shipped = crate::support::repo_root().join("tuning/haproxy-fleet.cfg");
        let mut text = std::fs::read_to_string(shipped).expect("tuning/haproxy-fleet.cfg");
        text = text.replace("bind :443", &format!("bind 127.0.0.1:{port}"));
        // The shipped maxconn needs a file descriptor limit of twice as many; test
        // machines have less (HAProxy refuses to start rather than serve fewer).
        text = text.replace("maxconn 100000", "maxconn 4000");
        text = text.replace(
            "/etc/haproxy/searchgate-homes.map",
            &map.display().to_string(),
        );
        for (i, (name, addr)) in nodes.iter().enumerate() {
            text = text.replace(&format!("10.0.0.1{}:443", i + 1), &addr.to_string());
            text = text.replace(&format!("edge-{}", i + 1), name);
        }
        let left = text
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .any(|l| l.contains("10.0.0."));
        assert!(!left, "every address replaced:\n{text}");
        text
    }

    fn start(nodes: &[(&str, SocketAddr)], map: &str) -> Haproxy {
        ensure_debian_packages("haproxy -v", &["haproxy"]);
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let map_path = dir.path().join("homes.map");
        std::fs::write(&map_path, map).unwrap();
        let cfg = dir.path().join("haproxy.cfg");
        std::fs::write(&cfg, Haproxy::config(nodes, port, &map_path)).unwrap();
        let check = Command::new("haproxy")
            .arg("-c")
            .arg("-f")
            .arg(&cfg)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "haproxy -c: {}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let child = Haproxy::spawn(dir.path());
        let mut h = Haproxy { child, addr, dir };
        h.wait_listening();
        h
    }

    /// Starts HAProxy in the foreground on `dir`'s haproxy.cfg, its log in haproxy.log.
    fn spawn(dir: &Path) -> Child {
        let log = std::fs::File::create(dir.join("haproxy.log")).unwrap();
        Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(dir.join("haproxy.cfg"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("haproxy")
    }

    fn wait_listening(&mut self) {
        let (child, dir, addr) = (&mut self.child, self.dir.path(), self.addr);
        eventually("haproxy to listen", Duration::from_secs(20), || {
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(dir.join("haproxy.log")).unwrap_or_default();
                panic!("haproxy ended ({status}):\n{log}");
            }
            std::net::TcpStream::connect(addr).ok().map(drop)
        });
    }

    /// Writes `map` and starts HAProxy again on the same port (it reads the map at start).
    fn reload(&mut self, map: &str) {
        std::fs::write(self.dir.path().join("homes.map"), map).unwrap();
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = Haproxy::spawn(self.dir.path());
        self.wait_listening();
    }

    /// Sends a search of `t` over TLS through the balancer (SNI: the cluster's host);
    /// `None` when the connection failed.
    fn search(&self, ca: &Path, t: &Tenant) -> Option<u16> {
        let (addr, host) = (self.addr, t.host.clone());
        let req = t.req("GET", "/books/_search").header("X-Mock", "delay=1");
        let ca = ca.to_path_buf();
        let r = std::panic::catch_unwind(move || {
            let mut c = Conn::tls(addr, &ca, &host);
            exchange(&mut c, &req).status
        });
        r.ok()
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Each node's count of remote permits (requests that landed away from home).
fn remote_permits(nodes: &[&Edge]) -> Vec<u64> {
    nodes
        .iter()
        .map(|n| figure(n, "searchgate_fleet_remote_permits_total").expect("exposed"))
        .collect()
}

// Issue 27: the shipped HAProxy configuration sends every cluster's connections to its
// home (no remote permit anywhere), and after a node is killed with SIGKILL its clusters
// are served through the others at once and land on their new homes once the map is read
// again.
#[test]
fn haproxy_sends_each_cluster_to_its_home() {
    let pg = Pg::start();
    let url = pg.database();
    let mock = Mock::start();
    let first = Edge::start(node(&url, NAMES[0], mock.addr, None));
    let edge_dir = first.ca().parent().unwrap().to_path_buf();
    let (cert, key): (PathBuf, PathBuf) = (
        edge_dir.join("edge-cert.pem"),
        edge_dir.join("edge-key.pem"),
    );
    let mut nodes = vec![first];
    for name in &NAMES[1..] {
        nodes.push(Edge::start(node(
            &url,
            name,
            mock.addr,
            Some((&cert, &key)),
        )));
    }
    // The CA the clients trust, kept apart (the first node may be the one killed).
    let keep = tempfile::tempdir().unwrap();
    let ca = keep.path().join("ca.pem");
    std::fs::copy(nodes[0].ca(), &ca).unwrap();
    settled(&nodes.iter().collect::<Vec<_>>());
    let map = homes_map(&nodes[0]);
    let homes: std::collections::HashSet<String> =
        CLUSTERS.iter().map(|c| home_in(&map, c)).collect();
    assert!(homes.len() >= 2, "clusters spread over the nodes:\n{map}");
    let listeners: Vec<(&str, SocketAddr)> = NAMES
        .iter()
        .zip(&nodes)
        .map(|(n, e)| (*n, e.https.expect("https")))
        .collect();
    let mut lb = Haproxy::start(&listeners, &map);
    let tenants: Vec<Tenant> = CLUSTERS.iter().map(|c| nodes[0].tenant(c)).collect();
    for t in &tenants {
        for _ in 0..5 {
            assert_eq!(lb.search(&ca, t), Some(200), "{}", t.host);
        }
    }
    assert_eq!(
        remote_permits(&nodes.iter().collect::<Vec<_>>()),
        vec![0, 0, 0],
        "every request landed on its cluster's home"
    );

    // The home of c1 killed: its clusters are served through the other nodes (the health
    // checks find it down; the fleet moves them when its lease runs out).
    let victim = home_in(&map, "c1");
    let at = NAMES.iter().position(|n| *n == victim).unwrap();
    drop(nodes.remove(at).kill9());
    let moved: Vec<&Tenant> = tenants
        .iter()
        .zip(CLUSTERS)
        .filter(|(_, c)| home_in(&map, c) == victim)
        .map(|(t, _)| t)
        .collect();
    for t in &moved {
        eventually("a moved cluster served", Duration::from_secs(30), || {
            (lb.search(&ca, t) == Some(200)).then_some(())
        });
    }
    let survivors: Vec<&Edge> = nodes.iter().collect();
    settled(&survivors);
    let map = homes_map(survivors[0]);
    assert!(!map.contains(&format!(" {victim}\n")), "{map}");
    lb.reload(&map);
    let before = remote_permits(&survivors);
    for t in &tenants {
        for _ in 0..3 {
            assert_eq!(lb.search(&ca, t), Some(200), "{}", t.host);
        }
    }
    assert_eq!(
        remote_permits(&survivors),
        before,
        "with the map read again, every request landed on its new home"
    );
}
