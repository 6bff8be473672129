//! End-to-end: usage history (issue 12): per cluster, at a fixed interval of the control
//! plane's clock (driven by the test), the metering reading (disk, documents, shards,
//! indices) and the requests and bytes the edge counted since the previous sample; read
//! through `GET /v1/clusters/{id}/usage` and `searchgate admin usage`; old samples pruned
//! after the retention; a restart keeps the history.

use crate::support::e2e;

use std::process::Command;
use std::time::Duration;

use e2e::metrics;
use e2e::{eventually, ClusterSpec, Config, Edge, PlanSpec};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(20);

fn config() -> Config {
    Config::new()
        .edge("metering_interval", "\"200ms\"")
        .admin_key("test_clock", "\"2030-03-01T00:00:00Z\"")
        .section("[billing]\nusage_interval = \"1h\"\nusage_retention = \"3h\"\n")
        .plan(PlanSpec::new("p"))
        .cluster(ClusterSpec::multitenant("shop", "p"))
}

fn advance(edge: &Edge, by: &str) {
    edge.admin()
        .call("POST", "/v1/test/clock", Some(&json!({ "advance": by })))
        .expect(200);
}

fn samples(edge: &Edge, query: &str) -> Vec<Value> {
    edge.admin()
        .call("GET", &format!("/v1/clusters/shop/usage{query}"), None)
        .expect(200)["samples"]
        .as_array()
        .unwrap()
        .clone()
}

/// Waits for a sample at `at` and returns it.
fn sample_at(edge: &Edge, at: &str) -> Value {
    eventually(&format!("a sample at {at}"), WAIT, || {
        samples(edge, "?from=2030-03-01&to=2030-04-01")
            .into_iter()
            .find(|s| s["at"] == at)
    })
}

// issue 12: samples at the interval, readings and counters, retention, restart
#[test]
fn usage_history_at_a_fixed_interval() {
    let edge = Edge::start(config());
    let t = edge.tenant("shop");
    // The first sample is taken after the first metering round, at the clock's time.
    let first = sample_at(&edge, "2030-03-01T00:00:00Z");
    assert_eq!(first["documents"], 0);

    assert_eq!(edge.send(&t.req("PUT", "/books")).status, 200);
    for i in 0..5 {
        let doc = json!({"title": format!("book {i}")});
        let r = edge.send(&t.json("POST", &format!("/books/doc/{i}?refresh=true"), &doc));
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let sent = 6; // the create and five documents
                  // The hub counted them (what the sample reads), and metering read the documents.
    let addr = edge.metrics.expect("the metrics listener");
    let counted = "searchgate_requests_total{cluster=\"shop\",code=\"2xx\"} ";
    eventually("the hub counted the requests", WAIT, || {
        let text = metrics::scrape(addr);
        let n: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix(counted))?
            .trim()
            .parse()
            .ok()?;
        (n >= sent).then_some(())
    });
    eventually("a reading of 5 documents", WAIT, || {
        let c = edge.admin().show("shop");
        (c["usage"]["documents"] == 5).then_some(())
    });

    advance(&edge, "1h");
    let s = sample_at(&edge, "2030-03-01T01:00:00Z");
    assert_eq!(s["documents"], 5);
    assert_eq!(s["indices"], 1);
    assert!(s["disk_bytes"].as_u64().unwrap() > 0);
    assert!(s["shards"].as_u64().unwrap() >= 1);
    assert_eq!(
        s["requests"].as_u64().unwrap() + first["requests"].as_u64().unwrap(),
        sent
    );
    assert!(s["bytes_in"].as_u64().unwrap() > 0 && s["bytes_out"].as_u64().unwrap() > 0);

    // No requests in the next hour: a sample with none.
    advance(&edge, "1h");
    let quiet = sample_at(&edge, "2030-03-01T02:00:00Z");
    assert_eq!(
        (quiet["requests"].clone(), quiet["documents"].clone()),
        (json!(0), json!(5))
    );

    // The CLI reads the same history.
    let admin = edge.admin();
    let token = edge.dir.path().join("edge").join("admin.token");
    let out = Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .args(["admin", "--url", &admin.url, "--token-file"])
        .arg(&token)
        .args([
            "usage",
            "shop",
            "--from",
            "2030-03-01",
            "--to",
            "2030-03-02",
        ])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{table}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header = table.lines().nth(1).unwrap();
    assert!(
        header.starts_with("AT") && header.contains("REQUESTS"),
        "{table}"
    );
    assert!(table.contains("2030-03-01T01:00:00Z"), "{table}");
    let json_out = Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .args(["admin", "--url", &admin.url, "--token-file"])
        .arg(&token)
        .args(["usage", "shop", "--from", "2030-03-01", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert_eq!(v["cluster"], "shop");
    assert!(v["samples"].as_array().unwrap().len() >= 3);

    // A restart keeps the history (the clock set again: it starts where the file says).
    let dir = edge.stop();
    let edge = Edge::start_in(dir, config(), &[]);
    advance(&edge, "2h");
    assert!(sample_at(&edge, "2030-03-01T01:00:00Z")["documents"] == 5);

    // Retention: three hours after 04:00, the samples before 01:00 are gone.
    advance(&edge, "2h");
    sample_at(&edge, "2030-03-01T04:00:00Z");
    let kept: Vec<String> = samples(&edge, "?from=2030-03-01&to=2030-04-01")
        .iter()
        .map(|s| s["at"].as_str().unwrap().to_string())
        .collect();
    assert!(
        !kept.contains(&"2030-03-01T00:00:00Z".to_string()),
        "{kept:?}"
    );
    assert!(
        kept.contains(&"2030-03-01T01:00:00Z".to_string()),
        "{kept:?}"
    );

    // Bad ranges are refused; an unknown cluster is 404.
    let r = edge
        .admin()
        .call("GET", "/v1/clusters/shop/usage?from=yesterday", None);
    assert_eq!(r.status, 400, "{}", r.body);
    let r = edge.admin().call(
        "GET",
        "/v1/clusters/shop/usage?from=2030-03-02&to=2030-03-01",
        None,
    );
    assert_eq!(r.status, 400);
    let r = edge.admin().call("GET", "/v1/clusters/nope/usage", None);
    assert_eq!(r.status, 404);
}
