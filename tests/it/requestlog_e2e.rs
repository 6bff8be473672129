//! End-to-end: a cluster's customer-visible request log (issue 29) through `searchgate
//! serve`: `GET /v1/clusters/{id}/requests` lists the recent requests newest first, with
//! the key, the client address, the method, the path in the tenant's own index names
//! (query values never kept), the status, the times queued and upstream, the bytes; the
//! multitenant class's internal index names never show; `?slow=true` lists those at or over
//! the cluster's threshold (`PUT /v1/clusters/{id}/slow_threshold`, audited); the ring is
//! bounded; `searchgate admin requests ID [--slow]` prints the same.

use crate::support::e2e;

use std::process::Command;

use e2e::admin::Admin;
use e2e::{ClusterSpec, Config, Edge, PlanSpec, Tenant};
use serde_json::{json, Value};

/// The ring's bound (`registry::requestlog::RECENT`).
const RECENT: usize = 100;

fn requests(admin: &Admin, id: &str, slow: bool) -> Value {
    let q = if slow { "?slow=true" } else { "" };
    admin
        .call("GET", &format!("/v1/clusters/{id}/requests{q}"), None)
        .expect(200)
}

fn list(v: &Value) -> &Vec<Value> {
    v["requests"].as_array().unwrap()
}

fn cli(edge: &Edge, args: &[&str]) -> String {
    let admin = edge.admin();
    let token = edge.dir.path().join("edge").join("admin.token");
    let out = Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .args(["admin", "--url", &admin.url, "--token-file"])
        .arg(&token)
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The engine's real name of the tenant's index `site` (the prefixed one).
fn internal_name(edge: &Edge) -> String {
    let r = e2e::direct(edge.engine(), "GET", "/_cat/indices?h=index", None);
    r.text()
        .lines()
        .map(str::trim)
        .find(|l| l.ends_with("site") && *l != "site")
        .unwrap_or_else(|| panic!("no prefixed site index: {}", r.text()))
        .to_string()
}

// issue 29: the request log shows what the customer sent, newest first, bounded
#[test]
fn the_request_log_shows_the_customers_requests() {
    let config = Config::new()
        .with_admin()
        .plan(PlanSpec::new("p"))
        .cluster(ClusterSpec::multitenant("shop", "p"));
    let edge = Edge::start(config);
    let admin = edge.admin();
    let t = edge.tenant("shop");
    let r = edge.send(&t.json("PUT", "/site", &json!({})));
    assert_eq!(r.status, 200, "{}", r.text());
    let k = admin
        .call(
            "POST",
            "/v1/clusters/shop/keys",
            Some(&json!({"name": "browser", "role": "search"})),
        )
        .expect(201);
    let key = Tenant {
        host: t.host.clone(),
        user: k["username"].as_str().unwrap().into(),
        pass: k["password"].as_str().unwrap().into(),
    };
    let r = edge.send(&key.req("GET", "/site/_search?q=secret-words&size=1"));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = edge.send(&key.req("DELETE", "/site"));
    assert_eq!(r.status, 403, "{}", r.text());

    let v = requests(admin, "shop", false);
    let text = v.to_string();
    let l = list(&v);
    assert_eq!(l.len(), 3, "{v:#}");
    let (refused, search, create) = (&l[0], &l[1], &l[2]);
    assert_eq!(refused["path"], json!("/site"));
    assert_eq!(refused["status"], json!(403));
    assert_eq!(refused["key"], json!("browser"));
    assert_eq!(search["method"], json!("GET"));
    assert_eq!(
        search["path"],
        json!("/site/_search?q=*&size=*"),
        "query names only"
    );
    assert_eq!(search["status"], json!(200));
    assert_eq!(search["key"], json!("browser"));
    assert_eq!(search["client"], json!("127.0.0.1"));
    assert!(search["upstream_ms"].as_f64().is_some(), "{search}");
    assert!(search["bytes_out"].as_u64().unwrap() > 0);
    assert!(search["bytes_in"].as_u64().unwrap() > 0);
    assert_eq!(create["key"], Value::Null, "the master pair");
    assert_eq!(create["method"], json!("PUT"));
    assert!(
        !text.contains("secret-words"),
        "query values are never kept: {text}"
    );
    let internal = internal_name(&edge);
    assert!(
        !text.contains(&internal),
        "internal name {internal} leaked: {text}"
    );

    // slow: the threshold set through the API (audited); only requests over it
    let v = admin
        .call(
            "PUT",
            "/v1/clusters/shop/slow_threshold",
            Some(&json!({"slow_threshold_ms": 1})),
        )
        .expect(200);
    assert_eq!(v["slow_threshold_ms"], json!(1));
    let audit = admin
        .call("GET", "/v1/audit?cluster=shop", None)
        .expect(200);
    assert!(
        audit.to_string().contains("cluster.slow_threshold"),
        "{audit}"
    );
    let mut lines = Vec::new();
    for i in 0..2000 {
        lines.push(json!({"index": {"_index": "site", "_id": i.to_string()}}));
        lines.push(json!({"title": "a page of the site with some words", "n": i}));
    }
    let r = edge.send(&t.ndjson("POST", "/_bulk?refresh=true", &lines));
    assert_eq!(r.status, 200);
    let slow = requests(admin, "shop", true);
    assert_eq!(slow["slow_threshold_ms"], json!(1));
    let s = list(&slow);
    assert!(
        s.iter().any(|e| e["path"] == json!("/_bulk?refresh=*")),
        "{slow:#}"
    );
    assert!(
        s.iter().all(|e| e["total_ms"].as_f64().unwrap() >= 1.0),
        "{slow:#}"
    );
    let n = s.len();
    let r = admin.call(
        "PUT",
        "/v1/clusters/shop/slow_threshold",
        Some(&json!({"slow_threshold_ms": 3_600_000})),
    );
    r.expect(200);
    let r = edge.send(&t.ndjson("POST", "/_bulk?refresh=true", &lines));
    assert_eq!(r.status, 200);
    assert_eq!(
        list(&requests(admin, "shop", true)).len(),
        n,
        "nothing is an hour slow"
    );
    let bad = admin.call(
        "PUT",
        "/v1/clusters/shop/slow_threshold",
        Some(&json!({"slow_threshold_ms": 0})),
    );
    assert_eq!(bad.status, 400, "{}", bad.reason());

    // bounded: the newest RECENT
    for i in 0..RECENT + 20 {
        let r = edge.send(&t.req("GET", &format!("/site/_doc/{i}")));
        assert!(r.status == 200 || r.status == 404, "{}", r.text());
    }
    let v = requests(admin, "shop", false);
    let l = list(&v);
    assert_eq!(l.len(), RECENT);
    assert_eq!(l[0]["path"], json!(format!("/site/_doc/{}", RECENT + 19)));

    // the CLI prints the same
    let out = cli(&edge, &["requests", "shop"]);
    assert!(out.contains("PATH") && out.contains("UPSTREAM MS"), "{out}");
    assert!(
        out.contains(&format!("/site/_doc/{}", RECENT + 19)),
        "{out}"
    );
    assert!(out.contains("100 requests of cluster shop"), "{out}");
    let out = cli(&edge, &["requests", "shop", "--slow"]);
    assert!(out.contains("/_bulk?refresh=*"), "{out}");
    assert!(
        out.contains("slow requests of cluster shop (slow: 3600000 ms or more)"),
        "{out}"
    );
}
