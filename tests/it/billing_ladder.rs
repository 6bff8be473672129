//! End-to-end: the overage ladder (spec 3 "usage overage", issue 12) with the control
//! plane's clock driven by the test: usage over the plan gives a notice at once; ten days
//! later read-only (deleting an index still passes, and clears it); fifteen more, disabled;
//! data deleted, normal again by itself. An operator's mode is never overridden. Every
//! step is in the audit log, in the 403 reason, and POSTed to the webhook, which is a local
//! receiver here that fails its first delivery.
//!
//! Usage is read from the embedded engine every 200 ms; the clock moves only when the test
//! moves it, so each step is waited for (the 403 it causes, the cluster's view), never
//! slept for.

use crate::support::e2e;

use std::time::Duration;

use e2e::fill::{fill_past, is_refused, probe_update};
use e2e::hook::{Hook, Reply};
use e2e::{direct, eventually, ClusterSpec, Config, Edge, PlanSpec, Tenant};
use serde_json::{json, Value};

const DISK: u64 = 64 * 1024;
const WAIT: Duration = Duration::from_secs(20);

fn advance(edge: &Edge, by: &str) {
    edge.admin()
        .call("POST", "/v1/test/clock", Some(&json!({ "advance": by })))
        .expect(200);
}

/// The overage step in the cluster's view (`None`: not over).
fn step(edge: &Edge, id: &str) -> Option<String> {
    edge.admin().show(id)["overage"]["step"]
        .as_str()
        .map(str::to_string)
}

fn wait_step(edge: &Edge, id: &str, want: &str) {
    eventually(&format!("{id} at step {want}"), WAIT, || {
        (step(edge, id).as_deref() == Some(want)).then_some(())
    });
}

fn wait_refused(edge: &Edge, t: &Tenant, reason: &str) {
    eventually(&format!("updates refused with {reason}"), WAIT, || {
        is_refused(&probe_update(edge, t), reason).then_some(())
    });
}

/// A 403's reason.
fn reason_of(edge: &Edge, t: &Tenant, method: &str, path: &str) -> String {
    let r = edge.send(&t.req(method, path));
    assert_eq!(r.status, 403, "{}", r.text());
    r.json()["error"]["reason"].as_str().unwrap().to_string()
}

// issue 12: notice, read-only after the grace, disabled after the second period, back to
// normal when the data is deleted; the customer's way out of read-only; an operator's mode
// untouched; every step audited and delivered to the webhook despite a failed first try
#[test]
fn the_ladder_moves_read_only_then_disabled_and_back() {
    // The receiver fails its first delivery.
    let hook = Hook::start(vec![Reply::Status(500)]);
    let config = Config::new()
        .edge("metering_interval", "\"200ms\"")
        .admin_key("test_clock", "\"2030-03-01T00:00:00Z\"")
        .section(&format!("[billing]\nwebhook = \"{}\"\n", hook.url()))
        .plan(PlanSpec::new("tiny").disk("64kb"))
        .cluster(ClusterSpec::multitenant("a", "tiny"))
        .cluster(ClusterSpec::multitenant("b", "tiny"))
        .cluster(ClusterSpec::multitenant("c", "tiny"));
    let edge = Edge::start(config);
    let engine = edge.engine();
    let (a, b, c) = (edge.tenant("a"), edge.tenant("b"), edge.tenant("c"));
    // Each tenant's index has its own name, so its real (prefixed) name can be found.
    for (t, index) in [(&a, "logs-a"), (&b, "logs-b"), (&c, "logs-c")] {
        assert_eq!(edge.send(&t.req("PUT", &format!("/{index}"))).status, 200);
        let prefix = e2e::prefix_of(engine, index);
        fill_past(&edge, t, index, &prefix, DISK);
    }

    // Over the plan: a notice at once; the clusters stay writable.
    for id in ["a", "b", "c"] {
        wait_step(&edge, id, "notice");
    }
    assert_eq!(probe_update(&edge, &a).status, 404, "still normal");
    let view = edge.admin().show("a");
    assert_eq!(view["overage"]["since"], "2030-03-01T00:00:00Z");
    assert_eq!(view["overage"]["read_only_at"], "2030-03-11T00:00:00Z");
    assert_eq!(view["overage"]["disabled_at"], "2030-03-26T00:00:00Z");
    // The operator puts c in read-only themselves during its overage.
    edge.admin()
        .call(
            "PUT",
            "/v1/clusters/c/mode",
            Some(&json!({"mode": "read-only", "reason": "billing review"})),
        )
        .expect(200);

    // Ten days later: read-only, with the ladder's reason in the 403.
    advance(&edge, "10d");
    wait_refused(
        &edge,
        &a,
        "Cluster Read-only: usage over the plan since 2030-03-01T00:00:00Z",
    );
    wait_refused(&edge, &b, "Cluster Read-only: usage over the plan");
    let why = reason_of(&edge, &b, "PUT", "/probe-missing/doc/1");
    assert!(
        why.contains("read-only since 2030-03-11T00:00:00Z, disabled from 2030-03-26T00:00:00Z"),
        "{why}"
    );
    assert!(why.contains("the plan allows 65536"), "{why}");
    assert_eq!(
        edge.send(&a.req("GET", "/logs-a/_count")).status,
        200,
        "reads pass"
    );
    wait_step(&edge, "c", "read-only");
    assert!(is_refused(
        &probe_update(&edge, &c),
        "Cluster Read-only: billing review"
    ));
    let r = edge.send(&c.req("DELETE", "/logs-c"));
    assert!(
        is_refused(&r, "Cluster Read-only: billing review"),
        "an operator's read-only"
    );

    // a's customer deletes its index (read-only by overage allows it): normal by itself.
    let r = edge.send(&a.req("DELETE", "/logs-a"));
    assert_eq!(r.status, 200, "{}", r.text());
    eventually("a normal again", WAIT, || {
        (probe_update(&edge, &a).status == 404).then_some(())
    });
    assert_eq!(step(&edge, "a"), None);

    // Fifteen more days: b disabled; c keeps the operator's mode.
    advance(&edge, "15d");
    eventually("b disabled", WAIT, || {
        is_refused(
            &edge.send(&b.req("GET", "/logs-b/_count")),
            "Cluster Disabled",
        )
        .then_some(())
    });
    let why = reason_of(&edge, &b, "DELETE", "/logs-b");
    assert!(
        why.starts_with("Cluster Disabled: usage over the plan since 2030-03-01T00:00:00Z"),
        "{why}"
    );
    assert!(why.contains("disabled since 2030-03-26T00:00:00Z"), "{why}");
    wait_step(&edge, "c", "disabled");
    assert!(is_refused(
        &probe_update(&edge, &c),
        "Cluster Read-only: billing review"
    ));
    assert_eq!(edge.send(&c.req("GET", "/logs-c/_count")).status, 200);

    // b's data is deleted (by the operator on the engine: the customer cannot while
    // disabled): normal again by itself.
    let prefix = e2e::prefix_of(engine, "logs-b");
    assert_eq!(
        direct(engine, "DELETE", &format!("/{prefix}logs-b"), None).status,
        200
    );
    eventually("b normal again", WAIT, || {
        (probe_update(&edge, &b).status == 404).then_some(())
    });
    assert_eq!(edge.admin().show("b")["mode"], "normal");

    // Every step of b in the audit log, by the system, with the mode it left.
    let steps: Vec<(String, String)> = edge
        .admin()
        .overage_steps("b")
        .into_iter()
        .map(|(step, _, mode)| (step, mode))
        .collect();
    let want: Vec<(String, String)> = [
        ("notice", "normal"),
        ("read-only", "read-only"),
        ("disabled", "disabled"),
        ("normal", "normal"),
    ]
    .iter()
    .map(|(s, m)| (s.to_string(), m.to_string()))
    .collect();
    assert_eq!(steps, want);

    // The webhook got every step of every cluster, in order, the first one twice.
    let mut got: Vec<(Option<u16>, Value)> = Vec::new();
    let expected = 3 + 4 + 3 + 1; // a: 3, b: 4, c: 3, and the first one again
    while got.len() < expected {
        got.push(hook.got.recv_timeout(WAIT).expect("a notice"));
    }
    assert_eq!(got[0].0, Some(500));
    assert_eq!(got[1].0, Some(204));
    assert_eq!(
        got[0].1["notice_id"], got[1].1["notice_id"],
        "the same notice again"
    );
    let delivered = |id: &str| -> Vec<(String, bool)> {
        got.iter()
            .skip(1)
            .filter(|(_, n)| n["cluster"] == id)
            .map(|(_, n)| {
                (
                    n["step"].as_str().unwrap().to_string(),
                    n["mode_applied"] == true,
                )
            })
            .collect()
    };
    let s = |v: &[(&str, bool)]| -> Vec<(String, bool)> {
        v.iter().map(|(a, b)| (a.to_string(), *b)).collect()
    };
    assert_eq!(
        delivered("a"),
        s(&[("notice", true), ("read-only", true), ("normal", true)])
    );
    assert_eq!(
        delivered("b"),
        s(&[
            ("notice", true),
            ("read-only", true),
            ("disabled", true),
            ("normal", true)
        ])
    );
    assert_eq!(
        delivered("c"),
        s(&[("notice", true), ("read-only", false), ("disabled", false)])
    );
    let first = &got[1].1;
    assert_eq!(first["type"], "overage");
    assert_eq!(first["plan"], "tiny");
    assert_eq!(first["disk_allowed_bytes"], DISK);
    assert!(first["disk_bytes"].as_u64().unwrap() > DISK);
    assert!(edge
        .out
        .text()
        .contains("not delivered (the receiver answered 500)"));
}
