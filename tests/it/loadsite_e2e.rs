//! End to end: `searchgate serve` (the edge, over HTTPS with its own CA, in front of the
//! embedded engine) and `searchgate load-site` with real Hugo on the fixture site; then
//! `_count`, a search for a known title, a date range in ISO form, an unchanged re-run and
//! `--prune` after a page was deleted (spec 2.4, 4, 4.1, 5).

use crate::support::hugo as support;
use crate::support::serve;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use serve::Serve;
use support::{bulk_pairs, ensure_hugo, fixture_site, load_site, text};

const USER: &str = "loader7";
const PASS: &str = "Pw9secretXYZ";

fn write_config(dir: &Path) -> std::path::PathBuf {
    let data = dir.join("data");
    let text = format!(
        r#"[edge]
domain = "localhost"
https = "127.0.0.1:0"
data_dir = "{data}"
route_by_username = true
access_log = "off"

[engine]
listen = "127.0.0.1:0"
data_dir = "{data}/engine"

[[plans]]
name = "small"
concurrency = 2
queue_size = 16
queue_timeout = "10s"
shards = 10
disk = "1gb"
memory = "1gb"
max_bulk_actions = 1000

[[clusters]]
id = "c1"
hostname = "c1"
region = "local"
class = "single-tenant"
plan = "small"
username = "{USER}"
password = "{PASS}"
"#,
        data = data.display()
    );
    let path = dir.join("searchgate.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A client of the cluster that trusts the edge's CA.
struct Cluster {
    agent: ureq::Agent,
    base: String,
}

impl Cluster {
    fn new(port: u16, ca: &Path) -> Self {
        let agent = serve::ca_agent(ca);
        Self {
            agent,
            base: format!("https://localhost:{port}"),
        }
    }

    fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASS}"));
        let mut resp = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Authorization", format!("Basic {auth}"))
            .header("Content-Type", "application/json")
            .send(serde_json::to_vec(&body).unwrap())
            .unwrap();
        let status = resp.status().as_u16();
        let bytes = resp.body_mut().read_to_vec().unwrap();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    fn count(&self) -> u64 {
        let (status, v) = self.post("/site/_count", json!({}));
        assert_eq!(status, 200, "{v}");
        v["count"].as_u64().unwrap()
    }
}

fn load(site: &Path, port: u16, ca: &Path, extra: &[&str]) -> String {
    let url = format!("https://{USER}:{PASS}@localhost:{port}");
    let mut args = vec![site.to_str().unwrap(), "--index", "site", "--url", &url];
    args.extend(["--cacert", ca.to_str().unwrap(), "--progress", "plain"]);
    args.extend_from_slice(extra);
    let out = load_site(&args);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(!stdout.contains(PASS) && !stderr.contains(PASS));
    stdout
}

#[test]
fn fixture_site_through_the_edge_into_the_embedded_engine() {
    ensure_hugo();
    let tmp = tempfile::tempdir().unwrap();
    let edge = Serve::start(&write_config(tmp.path()), Duration::from_secs(120));
    let ca = tmp.path().join("data/ca.pem");
    let cluster = Cluster::new(edge.https_port, &ca);
    let site = fixture_site();

    let stdout = load(&site, edge.https_port, &ca, &[]);
    assert!(
        stdout.contains("pages seen 24, included 20, skipped by rule 4"),
        "{stdout}"
    );
    assert!(stdout.contains("indexed 20, failed 0"), "{stdout}");
    assert_eq!(cluster.count(), 20);

    // A search for a known title returns the document exactly as the dry run shows it.
    let dry = load_site(&[
        site.to_str().unwrap(),
        "--index",
        "site",
        "--dry-run",
        "--progress",
        "off",
    ]);
    let expected = bulk_pairs(&text(&dry).0);
    let (_, first) = expected
        .iter()
        .find(|(_, d)| d["relpermalink"] == "/posts/first-post/")
        .unwrap();
    let (status, v) = cluster.post(
        "/site/_search",
        json!({"query": {"match": {"title": "Getting Started with Searchgate"}}}),
    );
    assert_eq!(status, 200, "{v}");
    let hit = &v["hits"]["hits"][0];
    assert_eq!(hit["_id"], first["objectID"]);
    assert_eq!(hit["_type"], "doc");
    assert_eq!(&hit["_source"], first);

    // Unix-second dates are dates: a range in ISO form finds the March 2023 post only.
    let range = json!({"query": {"bool": {"filter": [
        {"range": {"date": {"gte": "2023-03-01", "lt": "2023-04-01"}}},
        {"term": {"kind": "page"}}
    ]}}});
    let (status, v) = cluster.post("/site/_search", range);
    assert_eq!(status, 200, "{v}");
    let ids: Vec<&Value> = v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["_id"])
        .collect();
    assert_eq!(ids, [&first["objectID"]]);

    // Re-running without changes changes nothing.
    let stdout = load(&site, edge.https_port, &ca, &["--prune"]);
    assert!(
        stdout.contains("indexed 20, failed 0, pruned 0"),
        "{stdout}"
    );
    assert_eq!(cluster.count(), 20);
    let (_, v) = cluster.post(
        "/site/_search",
        json!({"query": {"ids": {"values": [first["objectID"]]}}}),
    );
    assert_eq!(&v["hits"]["hits"][0]["_source"], first);

    // Delete a page: --prune removes it and the tag page only it used (/tags/solo/).
    let copy = tmp.path().join("site");
    assert!(Command::new("cp")
        .arg("-r")
        .arg(&site)
        .arg(&copy)
        .status()
        .unwrap()
        .success());
    std::fs::remove_file(copy.join("content/posts/second-post.md")).unwrap();
    let stdout = load(&copy, edge.https_port, &ca, &["--prune"]);
    assert!(
        stdout.contains("included 18") && stdout.contains("pruned 2"),
        "{stdout}"
    );
    assert_eq!(cluster.count(), 18);
    let (_, v) = cluster.post(
        "/site/_search",
        json!({"query": {"match": {"title": "A Second Post"}}}),
    );
    assert_eq!(v["hits"]["total"]["value"], 0, "{v}");
}
