//! End-to-end: the control plane's store is the truth (issue 11). A restart keeps every
//! change; kill -9 between the commit and the apply loses nothing that was committed (a
//! retry with the same Idempotency-Key gets the same cluster), and kill -9 before the
//! commit applies nothing, not even while the change is held. The failpoints
//! (`SEARCHGATE_FAILPOINT`) stop the writer at the exact step and print a line; the tests
//! wait for that line, never for a fixed time.

use crate::support::e2e;

use std::time::Duration;

use e2e::admin::{tenant_of as tenant, Admin};
use e2e::{es_error, Config, Edge, PlanSpec};
use serde_json::{json, Value};

fn config() -> Config {
    Config::new()
        .with_admin()
        .plan(PlanSpec::new("small"))
        .plan(PlanSpec::new("big").allowance(32, 64, "5s"))
}

/// Sends an admin request on its own thread (it may never be answered).
fn in_background(a: &Admin, method: &'static str, path: String, body: Value, key: &'static str) {
    let a = a.clone();
    std::thread::spawn(move || {
        let _ = std::panic::catch_unwind(|| {
            a.call_with(method, &path, Some(&body), &[("Idempotency-Key", key)])
        });
    });
}

// issue 11: a restart keeps clusters, credentials, modes, plans and the audit log.
#[test]
fn a_restart_keeps_everything() {
    let edge = Edge::start(config());
    let admin = edge.admin().clone();
    let created = admin.create(json!({"plan": "small", "name": "keep"}));
    let id = created["id"].as_str().unwrap().to_string();
    let rotated = admin
        .call(
            "POST",
            &format!("/v1/clusters/{id}/credentials/rotate"),
            Some(&json!({})),
        )
        .expect(200);
    let mode = json!({"mode": "read-only", "reason": "kept across restarts"});
    admin
        .call("PUT", &format!("/v1/clusters/{id}/mode"), Some(&mode))
        .expect(200);
    admin
        .call(
            "PUT",
            &format!("/v1/clusters/{id}/plan"),
            Some(&json!({"plan": "big"})),
        )
        .expect(200);
    let t = tenant(&rotated);
    assert_eq!(edge.send(&t.req("GET", "/")).status, 200);
    let dir = edge.stop();

    let edge = Edge::start_in(dir, config(), &[]);
    let admin = edge.admin();
    let shown = admin.show(&id);
    assert_eq!(
        (
            shown["plan"].as_str(),
            shown["mode"].as_str(),
            shown["version"].as_u64()
        ),
        (Some("big"), Some("read-only"), Some(4))
    );
    assert_eq!(shown["username"], rotated["username"]);
    assert_eq!(
        edge.send(&t.req("GET", "/")).status,
        200,
        "the rotated pair still works"
    );
    es_error(&edge.send(&tenant(&created).req("GET", "/")), 401);
    let (_, reason) = es_error(&edge.send(&t.req("PUT", "/books")), 403);
    assert!(reason.contains("kept across restarts"), "{reason}");
    let audit = admin
        .call("GET", &format!("/v1/audit?cluster={id}"), None)
        .expect(200);
    assert_eq!(audit["entries"].as_array().unwrap().len(), 4);
}

// issue 11: kill -9 after the commit, before the apply: the change is there after the
// restart, and a retry with the same Idempotency-Key gets the same cluster, not a second.
#[test]
fn kill_9_after_the_commit_loses_nothing() {
    let edge = Edge::start_in(
        tempfile::tempdir().unwrap(),
        config(),
        &[("SEARCHGATE_FAILPOINT", "after-commit")],
    );
    let admin = edge.admin().clone();
    let body = json!({"plan": "small", "name": "crash"});
    in_background(
        &admin,
        "POST",
        "/v1/clusters".into(),
        body.clone(),
        "k-after",
    );
    let held = edge
        .out
        .wait_for("failpoint after-commit", Duration::from_secs(20));
    assert!(held.is_some(), "{}", edge.out.text());
    let dir = edge.kill9();

    let edge = Edge::start_in(dir, config(), &[]);
    let admin = edge.admin();
    let list = admin.call("GET", "/v1/clusters", None).expect(200);
    let clusters = list["clusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 1, "committed, so kept: {list}");
    assert_eq!(clusters[0]["name"], "crash");
    let retry = admin.call_with(
        "POST",
        "/v1/clusters",
        Some(&body),
        &[("Idempotency-Key", "k-after")],
    );
    assert_eq!(retry.status, 201, "{}", retry.body);
    assert_eq!(retry.body["id"], clusters[0]["id"]);
    assert_eq!(retry.body["password"], "");
    let again = admin.call("GET", "/v1/clusters", None).expect(200);
    assert_eq!(
        again["clusters"].as_array().unwrap().len(),
        1,
        "no second cluster"
    );
    // The edge serves it: new credentials, then a request through the edge.
    let id = clusters[0]["id"].as_str().unwrap();
    let rotated = admin
        .call(
            "POST",
            &format!("/v1/clusters/{id}/credentials/rotate"),
            Some(&json!({})),
        )
        .expect(200);
    assert_eq!(edge.send(&tenant(&rotated).req("GET", "/")).status, 200);
}

// issue 11: kill -9 before the commit: nothing is applied while the change is held, and
// nothing after the restart.
#[test]
fn kill_9_before_the_commit_applies_nothing() {
    let edge = Edge::start(config());
    let admin = edge.admin().clone();
    let created = admin.create(json!({"plan": "small"}));
    let id = created["id"].as_str().unwrap().to_string();
    let t = tenant(&created);
    let dir = edge.stop();

    let edge = Edge::start_in(dir, config(), &[("SEARCHGATE_FAILPOINT", "before-commit")]);
    let admin = edge.admin().clone();
    let mode = json!({"mode": "disabled", "reason": "never committed"});
    in_background(
        &admin,
        "PUT",
        format!("/v1/clusters/{id}/mode"),
        mode,
        "k-before",
    );
    let held = edge
        .out
        .wait_for("failpoint before-commit", Duration::from_secs(20));
    assert!(held.is_some(), "{}", edge.out.text());
    let r = edge.send(&t.req("PUT", "/books"));
    assert_eq!(
        r.status,
        200,
        "not applied before it is committed: {}",
        r.text()
    );
    let dir = edge.kill9();

    let edge = Edge::start_in(dir, config(), &[]);
    let admin = edge.admin();
    let shown = admin.show(&id);
    assert_eq!(
        (shown["mode"].as_str(), shown["version"].as_u64()),
        (Some("normal"), Some(1))
    );
    assert_eq!(edge.send(&t.req("PUT", "/books2")).status, 200);
    let audit = admin
        .call("GET", &format!("/v1/audit?cluster={id}"), None)
        .expect(200);
    assert_eq!(
        audit["entries"].as_array().unwrap().len(),
        1,
        "only the create"
    );
}
