//! `searchgate load-site` through the real edge (`searchgate serve`), over HTTPS with the
//! edge's own CA (`--cacert <data_dir>/ca.pem`), with the mock cluster as the upstream: the
//! edge's 413s (body over `max_body`, more actions than the plan's `max_bulk_actions`,
//! spec 7) make the loader halve, and every page of the fixture site lands exactly once.

use crate::support::hugo as support;
use crate::support::mock_es;
use crate::support::serve;

use std::time::Duration;

use mock_es::{MockConfig, MockEs};
use serve::Serve;
use support::{bulk_pairs, ensure_hugo, fixture_site, load_site, text};

const USER: &str = "loader7";
const PASS: &str = "Pw9secretXYZ";

fn edge_config(
    dir: &std::path::Path,
    upstream: std::net::SocketAddr,
    max_body: &str,
    max_actions: u32,
) -> std::path::PathBuf {
    let data = dir.join("data");
    let text = format!(
        r#"[edge]
domain = "localhost"
https = "127.0.0.1:0"
data_dir = "{data}"
route_by_username = true
max_body = "{max_body}"
access_log = "off"

[[plans]]
name = "small"
concurrency = 2
queue_size = 16
queue_timeout = "10s"
shards = 10
disk = "1gb"
memory = "1gb"
max_bulk_actions = {max_actions}

[[clusters]]
id = "c1"
hostname = "c1"
region = "local"
class = "single-tenant"
plan = "small"
username = "{USER}"
password = "{PASS}"
upstream = ["{upstream}"]
"#,
        data = data.display()
    );
    let path = dir.join("searchgate.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn the_fixture_site_through_the_edge_halves_on_its_413s() {
    ensure_hugo();
    let tmp = tempfile::tempdir().unwrap();
    let mock = MockEs::start(MockConfig::default());
    let config = edge_config(tmp.path(), mock.addr, "6kb", 4);
    let edge = Serve::start(&config, Duration::from_secs(60));
    let url = format!("https://{USER}:{PASS}@localhost:{}", edge.https_port);
    let ca = tmp.path().join("data/ca.pem");
    let site = fixture_site();
    let args = [
        site.to_str().unwrap(),
        "--index",
        "site",
        "--url",
        &url,
        "--cacert",
        ca.to_str().unwrap(),
        "--progress",
        "plain",
    ];
    let out = load_site(&args);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}\nedge:\n{}", edge.log_text());
    assert!(stdout.contains("indexed 20, failed 0"), "{stdout}");
    assert!(
        !stdout.contains("halvings 0"),
        "the edge's 413s were seen: {stdout}"
    );
    assert!(!stdout.contains(PASS) && !stderr.contains(PASS));

    let dry = load_site(&[
        site.to_str().unwrap(),
        "--index",
        "site",
        "--dry-run",
        "--progress",
        "off",
    ]);
    let expected = bulk_pairs(&text(&dry).0);
    let st = mock.state();
    assert_eq!(st.docs.len(), expected.len());
    assert!(
        st.indexed.values().all(|&n| n == 1),
        "every page indexed exactly once"
    );
    for (action, doc) in expected {
        assert_eq!(
            st.docs.get(action["index"]["_id"].as_str().unwrap()),
            Some(&doc)
        );
    }
    for r in st.requests.iter().filter(|r| r.path == "/_bulk") {
        let actions = bulk_pairs(std::str::from_utf8(&r.body).unwrap()).len();
        assert!(
            actions <= 4 && r.body.len() <= 6 * 1024,
            "the edge passed only bodies within its limits"
        );
    }
}

#[test]
fn wrong_credentials_through_the_edge_are_a_clear_401() {
    let tmp = tempfile::tempdir().unwrap();
    let mock = MockEs::start(MockConfig::default());
    let config = edge_config(tmp.path(), mock.addr, "40mb", 1000);
    let edge = Serve::start(&config, Duration::from_secs(60));
    let ca = tmp.path().join("data/ca.pem");
    let records = tmp.path().join("none.json");
    std::fs::write(&records, "[]").unwrap();
    let url = format!(
        "https://{USER}:wrongPassword1@localhost:{}",
        edge.https_port
    );
    let out = load_site(&[
        "--from-json",
        records.to_str().unwrap(),
        "--index",
        "site",
        "--url",
        &url,
        "--cacert",
        ca.to_str().unwrap(),
    ]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("HTTP 401") && stderr.contains(&format!("{USER}:****@")),
        "{stderr}"
    );
    assert!(!stderr.contains("wrongPassword1"));
    // The edge itself talks to its upstream (start check, metering); nothing of ours passed.
    let st = mock.state();
    assert!(
        st.indices.is_empty() && st.bulk_calls == 0,
        "the edge stopped the loader"
    );
}
