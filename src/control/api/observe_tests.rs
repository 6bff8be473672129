//! `GET /metrics` and `GET /v1/clusters/{id}/latency` without sockets: the token, the
//! exposition's content, the report's figures, and every refusal named.

use std::time::SystemTime;

use serde_json::{json, Value};

use super::super::tests::{api, create, req};
use super::super::{handle, Api, Response};
use crate::metrics::latency::LatencyReport;
use crate::metrics::{CoreMetrics, Sample};
use crate::proto::Method;

fn get(a: &Api, path: &str) -> Response {
    handle(a, &req(Method::Get, path, None))
}

/// Requests of cluster `id` handed to the hub: totals of `1..=n` ms, upstream half of it.
fn traffic(a: &Api, id: &str, n: u64) {
    let mut core = CoreMetrics::default();
    for i in 1..=n {
        let s = Sample {
            status: if i % 10 == 0 { 429 } else { 200 },
            total_us: i * 1000,
            upstream_us: Some(i * 500),
            bytes_in: 10,
            ..Sample::default()
        };
        core.record(id, &s);
    }
    a.observe.hub.absorb_at(&mut core, SystemTime::now());
}

/// A new cluster's id.
fn new_cluster(a: &Api) -> String {
    let r = create(a, json!({"plan": "small"}));
    r.body["id"].as_str().expect("an id").to_string()
}

fn reason(r: &Response) -> String {
    r.body["error"]["reason"]
        .as_str()
        .unwrap_or_default()
        .into()
}

// issue 13: the admin listener's exposition, behind the admin token
#[test]
fn metrics_need_the_token_and_render_the_hub_and_the_allowances() {
    let dir = tempfile::tempdir().unwrap();
    let a = api(dir.path());
    let id = new_cluster(&a);
    traffic(&a, &id, 100);
    let mut anonymous = req(Method::Get, "/metrics", None);
    anonymous.authorization = None;
    assert_eq!(handle(&a, &anonymous).status, 401);

    let r = get(&a, "/metrics");
    assert_eq!(r.status, 200);
    let (ct, text) = r.text.expect("a text body");
    assert_eq!(ct, "text/plain; version=0.0.4; charset=utf-8");
    let line = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
            .to_string()
    };
    let c = format!("cluster=\"{id}\"");
    assert_eq!(
        line(&format!("searchgate_requests_total{{{c},code=\"2xx\"}}")),
        format!("searchgate_requests_total{{{c},code=\"2xx\"}} 90")
    );
    assert!(line(&format!("searchgate_too_many_requests_total{{{c}}}")).ends_with(" 10"));
    assert!(line(&format!("searchgate_queue_depth{{{c}}}")).ends_with(" 0"));
    assert!(line(&format!("searchgate_allowance{{{c}}}")).ends_with(" 2"));
    assert!(line(&format!(
        "searchgate_request_duration_seconds_bucket{{{c},le=\"+Inf\"}}"
    ))
    .ends_with(" 100"));
    assert!(text.contains("# TYPE searchgate_requests_in_flight gauge\n"));
}

#[test]
fn metrics_refuse_parameters_and_other_methods() {
    let dir = tempfile::tempdir().unwrap();
    let a = api(dir.path());
    let r = get(&a, "/metrics?match[]=up");
    assert_eq!(r.status, 400);
    assert!(reason(&r).contains("`match[]`"), "{}", r.body);
    let r = handle(&a, &req(Method::Post, "/metrics", Some(json!({}))));
    assert_eq!(r.status, 405);
    assert_eq!(r.body["error"]["type"], "method_not_allowed");
}

// issue 13: percentiles and HdrHistogram's distribution of one cluster over a window
#[test]
fn the_latency_report_of_a_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let a = api(dir.path());
    let id = new_cluster(&a);
    traffic(&a, &id, 1000);
    let r = get(&a, &format!("/v1/clusters/{id}/latency?window=5m"));
    assert_eq!(r.status, 200, "{}", r.body);
    let b: &Value = &r.body;
    assert_eq!(b["cluster"], id.as_str());
    assert_eq!(b["window_secs"], 300);
    assert_eq!(b["total"]["count"], 1000);
    assert_eq!(b["upstream"]["count"], 1000);
    assert_eq!(b["queue"]["count"], 0);
    // 1..=1000 ms: p50 500 ms, p99 990 ms, max 1000 ms, within HdrHistogram's 1%.
    for (k, want) in [("p50", 500.0), ("p99", 990.0), ("max_ms", 1000.0)] {
        let got = b["total"][k].as_f64().unwrap();
        assert!((got - want).abs() <= want * 0.01, "{k}: {got}");
    }
    let p99_9 = b["upstream"]["p99.9"].as_f64().unwrap();
    assert!((p99_9 - 499.5).abs() <= 5.0, "{p99_9}");
    assert!(b["distribution"]
        .as_str()
        .unwrap()
        .starts_with("       Value     Percentile TotalCount 1/(1-Percentile)"));
    assert_eq!(b["requests"][0]["requests"], 1000);
    assert!(b["peak_rps"].as_f64().unwrap() > 0.0);
    // A client rebuilds the same report from the encoded histograms.
    let back = LatencyReport::from_json(&b.to_string()).unwrap();
    assert_eq!(back.total.p99, b["total"]["p99"].as_f64().unwrap());
    assert_eq!(back.distribution, b["distribution"].as_str().unwrap());

    // No window: five minutes. A cluster without traffic: an empty report.
    let r = get(&a, &format!("/v1/clusters/{id}/latency"));
    assert_eq!(r.body["window_secs"], 300);
    let quiet = new_cluster(&a);
    let r = get(&a, &format!("/v1/clusters/{quiet}/latency?window=1h"));
    assert_eq!(r.status, 200);
    assert_eq!(r.body["total"]["count"], 0);
    assert_eq!(r.body["peak_rps"], Value::Null);
}

#[test]
fn latency_refusals_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let a = api(dir.path());
    let id = new_cluster(&a);
    let r = get(&a, "/v1/clusters/nosuch/latency?window=5m");
    assert_eq!(r.status, 404);
    assert_eq!(r.body["error"]["type"], "not_found");
    assert!(reason(&r).contains("nosuch"));
    for bad in ["five", "0s", "2h", "", "90s", "30s", "61m"] {
        let r = get(&a, &format!("/v1/clusters/{id}/latency?window={bad}"));
        assert_eq!(r.status, 400, "window={bad}: {}", r.body);
        assert!(reason(&r).starts_with("`window`: "), "{}", r.body);
        // What it suggests is accepted (it once offered `90s`, which it refuses).
        assert!(reason(&r).contains("whole minutes from 1m to 60m (1h), e.g. 5m"));
        assert!(!reason(&r).contains("90s or 1h"), "{}", r.body);
    }
    let r = get(
        &a,
        &format!("/v1/clusters/{id}/latency?window=5m&percentiles=99"),
    );
    assert_eq!(r.status, 400);
    assert!(reason(&r).contains("`percentiles`"), "{}", r.body);
    let r = handle(
        &a,
        &req(Method::Delete, &format!("/v1/clusters/{id}/latency"), None),
    );
    assert_eq!(r.status, 405);
}

// issue 28: `GET /v1/pools` lists each list of nodes the clusters use, its clusters, and
// the health of each node (a node the checker never saw is `unchecked`); a parameter or
// another method is refused
#[test]
fn pools_list_nodes_their_clusters_and_health() {
    let dir = tempfile::tempdir().unwrap();
    let a = api(dir.path());
    let (x, y) = (new_cluster(&a), new_cluster(&a));
    let r = get(&a, "/v1/pools");
    assert_eq!(r.status, 200, "{:?}", r.body);
    let pools = r.body["pools"].as_array().expect("pools");
    let of = |id: &str| {
        pools
            .iter()
            .find(|p| p["clusters"].as_array().unwrap().contains(&json!(id)))
            .cloned()
    };
    let (px, py) = (of(&x).expect("x's pool"), of(&y).expect("y's pool"));
    if px["nodes"] == py["nodes"] {
        assert_eq!(px, py, "on the same nodes: one pool");
    }
    assert_eq!(px["name"], Value::Null);
    let node = &px["nodes"][0];
    assert_eq!(node["state"], "unchecked");
    let addr: std::net::SocketAddr = node["address"].as_str().unwrap().parse().unwrap();
    a.observe.nodes.sync([(addr, Default::default())]);
    let r = get(&a, "/v1/pools");
    let pools = r.body["pools"].as_array().unwrap();
    let px = pools
        .iter()
        .find(|p| p["clusters"].as_array().unwrap().contains(&json!(x)));
    let node = &px.unwrap()["nodes"][0];
    assert_eq!(
        (node["state"].as_str(), node["ejections"].as_u64()),
        (Some("up"), Some(0))
    );
    assert_eq!(get(&a, "/v1/pools?x=1").status, 400);
    assert_eq!(
        handle(&a, &req(Method::Post, "/v1/pools", None)).status,
        405
    );
}

// issue 28: the admin API's `upstream` names a pool by a string; `GET /v1/pools` lists the
// named pools first (used or not) with their clusters, nodes and checks; an unknown pool
// or a pool's name in a list is refused and creates nothing
#[test]
fn clusters_name_pools_and_pools_are_listed_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let a = api(dir.path());
    let before = get(&a, "/v1/pools");
    assert_eq!(before.body["pools"][0]["name"], "main");
    assert_eq!(before.body["pools"][0]["clusters"], json!([]));
    let r = create(
        &a,
        json!({"plan": "small", "class": "single-tenant", "upstream": "main"}),
    );
    assert_eq!(r.status, 201, "{:?}", r.body);
    // shown as it was given: the pool's name, not a list of one node called "main"
    assert_eq!(r.body["upstream"], "main");
    let id = r.body["id"].as_str().unwrap().to_string();
    assert_eq!(
        get(&a, &format!("/v1/clusters/{id}")).body["upstream"],
        "main"
    );
    let pools = get(&a, "/v1/pools").body["pools"].clone();
    let main = &pools[0];
    assert_eq!(main["name"], "main");
    assert_eq!(main["clusters"], json!([id]));
    assert_eq!(main["hosts"], json!(["127.0.0.1:9555", "127.0.0.1:9556"]));
    let addrs: Vec<&str> = main["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["address"].as_str().unwrap())
        .collect();
    assert_eq!(addrs, ["127.0.0.1:9555", "127.0.0.1:9556"]);
    assert_eq!(main["check"]["path"], "/");
    let n = get(&a, "/v1/clusters").body["clusters"]
        .as_array()
        .unwrap()
        .len();
    let r = create(&a, json!({"plan": "small", "upstream": "nope"}));
    assert_eq!(r.status, 400);
    assert!(
        reason(&r).contains("no upstream pool named `nope`"),
        "{}",
        reason(&r)
    );
    let r = create(&a, json!({"plan": "small", "upstream": ["main"]}));
    assert_eq!(r.status, 400);
    assert!(reason(&r).contains("must be host:port"), "{}", reason(&r));
    let r = create(&a, json!({"plan": "small", "upstream": "Not A Pool"}));
    assert_eq!(r.status, 400);
    let after = get(&a, "/v1/clusters").body["clusters"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(after, n, "refused: nothing created");
}
