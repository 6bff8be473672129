//! End-to-end: the file's plans and clusters are a seed applied through the control
//! plane's commands (issue 11). A reload that is refused changes nothing: not the
//! allowance of a live cluster, not its readiness, not its upstream. File and admin API
//! never disagree silently: an API change stays until the file changes that field, and
//! every reload says so.

use crate::support::e2e;

use std::time::Duration;

use e2e::mock::Mock;
use e2e::{es_error, held, ClusterSpec, Config, Edge, PlanSpec};
use serde_json::json;

// issue 11: "a reload that is refused can still resize live allowances and mark live
// clusters not ready": no more. The refused file raises the plan's allowance and moves the
// cluster to another upstream, and is refused for a third reason.
#[test]
fn a_refused_reload_changes_nothing() {
    let (a, b) = (Mock::start(), Mock::start());
    let mut config = Config::new()
        .with_admin()
        .plan(PlanSpec::new("one").allowance(1, 8, "15s"))
        .cluster(ClusterSpec::multitenant("shared", "one"))
        .cluster(ClusterSpec::single("solo", "one", a.addr));
    let mut edge = Edge::start(config.clone());
    let t = edge.tenant("solo");
    let up = edge
        .out
        .wait_for("cluster solo is up", Duration::from_secs(20));
    assert!(up.is_some(), "{}", edge.out.text());
    assert_eq!(edge.send(&t.req("GET", "/ready")).status, 200);

    let mut refused = config.clone();
    refused.plan_mut("one").concurrency = 3;
    refused.get_mut("solo").upstream = Some(b.addr);
    // A single-tenant cluster on the embedded engine, which multitenant ones share: refused.
    refused = refused.cluster(ClusterSpec::multitenant("bad", "one"));
    refused.get_mut("bad").multitenant = false;
    let skip = edge.out.len();
    std::fs::write(&edge.path, refused.toml(edge.dir.path())).unwrap(); // the watcher sees it
    let said = edge.out.wait_for_after(
        skip,
        "refused, keeping the running config",
        Duration::from_secs(15),
    );
    let said = said.unwrap_or_else(|| panic!("{}", edge.out.text()));
    assert!(said.contains("cannot share its upstream"), "{said}");

    // Still ready, still on `a`, still an allowance of 1.
    let first = held(&edge, &t, "/one/_search");
    a.wait_in_flight(1);
    let second = held(&edge, &t, "/two/_search");
    let admin = edge.admin().clone();
    e2e::eventually(
        "the second request to queue",
        Duration::from_secs(10),
        || (admin.show("solo")["usage"]["requests_queued"] == 1).then_some(()),
    );
    assert_eq!(a.in_flight(), 1, "the allowance was not resized");
    assert_eq!(admin.show("solo")["state"], "running", "still ready");
    a.release();
    for h in [first, second] {
        assert_eq!(h.join().unwrap().status, 200);
    }
    assert!(
        b.requests().is_empty(),
        "never moved to the refused upstream"
    );
    assert_eq!(a.max_in_flight(), 1);

    // The same change without the refused part applies.
    config.plan_mut("one").concurrency = 3;
    edge.reload(config);
    assert_eq!(edge.send(&t.req("GET", "/after")).status, 200);
}

// issue 11: the file's seed and the API: the API's change stays until the file changes
// the same field; each reload says so; the file's change then wins, and says so.
#[test]
fn file_and_api_never_disagree_silently() {
    let config = Config::new()
        .with_admin()
        .cluster(ClusterSpec::multitenant("filed", "p"));
    let mut edge = Edge::start(config.clone());
    let admin = edge.admin().clone();
    let t = edge.tenant("filed");
    let maint = json!({"mode": "maintenance", "reason": "set through the API"});
    admin
        .call("PUT", "/v1/clusters/filed/mode", Some(&maint))
        .expect(200);
    let shown = admin.show("filed");
    assert_eq!(shown["source"], "file");
    assert_eq!(shown["differs_from_file"], json!(["mode"]));

    let skip = edge.out.len();
    edge.reload_by_sighup(config.clone());
    let note = edge.out.wait_for_after(
        skip,
        "mode was changed through the admin API",
        Duration::ZERO,
    );
    assert!(note.is_some(), "{}", edge.out.text());
    let (_, reason) = es_error(&edge.send(&t.req("PUT", "/books")), 403);
    assert!(
        reason.starts_with("Maintenance: set through the API"),
        "{reason}"
    );

    let mut changed = config;
    changed.get_mut("filed").mode = "read-only".into();
    let skip = edge.out.len();
    edge.reload(changed);
    let note = edge.out.wait_for_after(
        skip,
        "replaces the value set through the admin API",
        Duration::ZERO,
    );
    assert!(note.is_some(), "{}", edge.out.text());
    assert_eq!(admin.show("filed")["mode"], "read-only");
    let audit = admin
        .call("GET", "/v1/audit?cluster=filed", None)
        .expect(200);
    let entry = &audit["entries"][0];
    assert_eq!(
        (entry["actor"].as_str(), entry["action"].as_str()),
        (Some("file"), Some("cluster.mode"))
    );
    assert_eq!(entry["before"]["mode"], "maintenance");
    assert_eq!(entry["after"]["mode"], "read-only");
}
