//! End-to-end: every admin API operation, seen through the edge by the cluster's clients
//! (issue 11; spec 1.1, 1.8, 3, 4 "dashboard functions", 5.4, 7). The edge runs with the
//! embedded engine and its admin listener; clients use the address and credentials the
//! API returned, on keep-alive connections opened before each change.

use crate::support::e2e;

use std::time::Duration;

use e2e::admin::tenant_of as tenant;
use e2e::mock::Mock;
use e2e::{engine_indices, es_error, eventually, held, Config, Edge, PlanSpec, Response};
use serde_json::json;

fn not_found(r: &Response, what: &str) {
    let (kind, reason) = es_error(r, 404);
    assert_eq!(kind, "cluster_not_found_exception", "{what}");
    assert!(reason.starts_with("Cluster Not Found"), "{what}: {reason}");
}

fn config() -> Config {
    Config::new()
        .with_admin()
        .plan(PlanSpec::new("small").shards(4))
        .plan(PlanSpec::new("tiny").shards(2))
}

// spec 1.1, 3, 4: create (idempotently), use, then delete: 404 on the next request, also on
// a kept-alive connection, and its indices gone from the shared engine.
#[test]
fn create_use_and_delete_through_the_edge() {
    let edge = Edge::start(config());
    let admin = edge.admin();
    let key = [("Idempotency-Key", "create-1")];
    let body = json!({"plan": "small", "name": "Shop"});
    let first = admin
        .call_with("POST", "/v1/clusters", Some(&body), &key)
        .expect(201);
    let again = admin.call_with("POST", "/v1/clusters", Some(&body), &key);
    assert_eq!(again.status, 201);
    assert_eq!(again.body["id"], first["id"], "the same cluster");
    assert_eq!(again.body["password"], "", "no second set of credentials");
    let other = json!({"plan": "tiny"});
    let reused = admin.call_with("POST", "/v1/clusters", Some(&other), &key);
    assert_eq!(reused.status, 422, "{}", reused.body);
    let list = admin.call("GET", "/v1/clusters", None).expect(200);
    assert_eq!(list["clusters"].as_array().unwrap().len(), 1);

    let id = first["id"].as_str().unwrap();
    let t = tenant(&first);
    let url = first["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("http://{}:{}@", t.user, t.pass)),
        "{url}"
    );
    let mut c = edge.client();
    let r = c.send(&t.json(
        "PUT",
        "/books",
        &json!({"settings": {"number_of_shards": 1, "number_of_replicas": 0}}),
    ));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.send(&t.json(
        "POST",
        "/books/_doc/1?refresh=true",
        &json!({"title": "Dune"}),
    ));
    assert_eq!(r.status, 201, "{}", r.text());
    let engine = edge.engine();
    let before = engine_indices(engine).len();
    assert!(before >= 1);

    let gone = admin
        .call("DELETE", &format!("/v1/clusters/{id}"), None)
        .expect(200);
    assert_eq!(gone["state"], "destroyed");
    not_found(
        &c.send(&t.req("GET", "/books/_search")),
        "deleted, kept-alive connection",
    );
    not_found(&edge.send(&t.req("GET", "/")), "deleted, new connection");
    assert_eq!(c.opened, 1, "one connection throughout");
    let purged = edge.out.wait_for(
        &format!("cluster {id}: its 1 index(es) were deleted"),
        Duration::from_secs(20),
    );
    assert!(purged.is_some(), "{}", edge.out.text());
    assert_eq!(engine_indices(engine).len(), before - 1);
    let shown = admin.show(id);
    assert_eq!(shown["state"], "destroyed");
    let listed = admin
        .call("GET", "/v1/clusters?state=destroyed", None)
        .expect(200);
    assert_eq!(listed["clusters"][0]["id"], id);
}

// spec 3, 7: the operator's mode with its reason in the 403 body; maintenance with `until`
// ends by itself; If-Match refuses a conflicting update.
#[test]
fn modes_with_reasons_until_and_if_match() {
    let edge = Edge::start(config());
    let admin = edge.admin();
    let created = admin.create(json!({"plan": "small"}));
    let id = created["id"].as_str().unwrap().to_string();
    let t = tenant(&created);
    let mut c = edge.client();
    assert_eq!(c.send(&t.req("PUT", "/books")).status, 200);

    let path = format!("/v1/clusters/{id}/mode");
    let v1 = admin.call("GET", &format!("/v1/clusters/{id}"), None);
    let etag = v1.etag.clone().expect("an ETag");
    let ro = json!({"mode": "read-only", "reason": "billing review, contact support"});
    let set = admin.call_with("PUT", &path, Some(&ro), &[("If-Match", &etag)]);
    assert_eq!(set.status, 200, "{}", set.body);
    let normal = json!({"mode": "normal"});
    let stale = admin.call_with("PUT", &path, Some(&normal), &[("If-Match", &etag)]);
    assert_eq!(
        stale.status, 412,
        "the second dashboard is refused: {}",
        stale.body
    );
    assert_eq!(admin.show(&id)["mode"], "read-only", "not overwritten");

    let (kind, reason) = es_error(&c.send(&t.req("PUT", "/books2")), 403);
    assert_eq!(kind, "cluster_block_exception");
    assert!(
        reason.starts_with("Cluster Read-only: billing review, contact support"),
        "{reason}"
    );
    assert_eq!(
        c.send(&t.req("GET", "/books/_search")).status,
        200,
        "reads pass"
    );

    // Long enough that the next request, on a loaded machine too, falls in the window.
    let maint = json!({"mode": "maintenance", "reason": "upgrading the nodes", "until": "6s"});
    admin.call("PUT", &path, Some(&maint)).expect(200);
    let r = c.send(&t.req("PUT", "/books3"));
    let (_, reason) = es_error(&r, 403);
    assert!(
        reason.starts_with("Maintenance: upgrading the nodes"),
        "{reason}"
    );
    assert!(r.header("retry-after").is_some());
    let done = eventually(
        "the maintenance window to end",
        Duration::from_secs(20),
        || {
            let r = c.send(&t.req("PUT", "/books4"));
            (r.status == 200).then_some(r)
        },
    );
    assert_eq!(done.status, 200);
    // Requests see the end at `until`; the control loop records it in the store right after.
    eventually("the end to be recorded", Duration::from_secs(10), || {
        (admin.show(&id)["mode"] == "normal").then_some(())
    });
    assert_eq!(c.opened, 1);
    let audit = admin
        .call("GET", &format!("/v1/audit?cluster={id}"), None)
        .expect(200);
    let last = &audit["entries"][0];
    assert_eq!(
        (last["actor"].as_str(), last["action"].as_str()),
        (Some("system"), Some("cluster.mode"))
    );
}

// spec 5.4: rotation; the old pair gets 401 at once, or after the grace.
#[test]
fn rotation_with_and_without_grace() {
    let edge = Edge::start(config());
    let admin = edge.admin();
    let created = admin.create(json!({"plan": "small"}));
    let id = created["id"].as_str().unwrap().to_string();
    let old = tenant(&created);
    let mut c = edge.client();
    assert_eq!(c.send(&old.req("GET", "/")).status, 200);

    let rotate = format!("/v1/clusters/{id}/credentials/rotate");
    let now = admin.call("POST", &rotate, Some(&json!({}))).expect(200);
    let new = tenant(&now);
    es_error(&c.send(&old.req("GET", "/")), 401);
    assert_eq!(c.send(&new.req("GET", "/")).status, 200);

    let graced = admin
        .call("POST", &rotate, Some(&json!({"grace": "6s"}))) // room for a loaded machine
        .expect(200);
    let newest = tenant(&graced);
    assert!(graced["previous_credentials_valid_until"].is_string());
    assert_eq!(c.send(&new.req("GET", "/")).status, 200, "during the grace");
    assert_eq!(c.send(&newest.req("GET", "/")).status, 200);
    let expired = eventually("the grace to end", Duration::from_secs(20), || {
        let r = c.send(&new.req("GET", "/"));
        (r.status != 200).then_some(r)
    });
    es_error(&expired, 401);
    assert_eq!(c.send(&newest.req("GET", "/")).status, 200);
    assert_eq!(c.opened, 1, "one kept-alive connection throughout");
}

// spec 1.8, 3: a single-tenant cluster is provisioning (404) until its upstream answers; a
// plan change applies to the next request and to requests already queued; a downgrade its
// usage exceeds is refused with the numbers.
#[test]
fn single_tenant_provisioning_and_plan_changes() {
    let mock = Mock::start();
    let cfg = config()
        .plan(PlanSpec::new("one").allowance(1, 4, "15s"))
        .plan(PlanSpec::new("two").allowance(2, 4, "15s"));
    let edge = Edge::start(cfg);
    let admin = edge.admin();
    let body = json!({"plan": "one", "class": "single-tenant", "upstream": mock.addr.to_string()});
    let created = admin.create(body);
    let id = created["id"].as_str().unwrap().to_string();
    let t = tenant(&created);
    eventually(
        "the cluster to be provisioned",
        Duration::from_secs(20),
        || (admin.show(&id)["state"] == "running").then_some(()),
    );
    assert_eq!(edge.send(&t.req("GET", "/x/_search")).status, 200);

    let first = held(&edge, &t, "/a/_search");
    mock.wait_in_flight(1);
    let second = held(&edge, &t, "/b/_search");
    eventually(
        "the second request to queue",
        Duration::from_secs(10),
        || (admin.show(&id)["usage"]["requests_queued"] == 1).then_some(()),
    );
    assert_eq!(mock.in_flight(), 1);
    admin
        .call(
            "PUT",
            &format!("/v1/clusters/{id}/plan"),
            Some(&json!({"plan": "two"})),
        )
        .expect(200);
    mock.wait_in_flight(2); // the queued request got the new slot at once
    mock.release();
    for h in [first, second] {
        assert_eq!(h.join().unwrap().status, 200);
    }
}

// spec 8: a downgrade below what the cluster uses is refused with the numbers.
#[test]
fn a_downgrade_below_usage_is_refused_with_the_numbers() {
    let edge = Edge::start(config());
    let admin = edge.admin();
    let created = admin.create(json!({"plan": "small"}));
    let id = created["id"].as_str().unwrap().to_string();
    let t = tenant(&created);
    let three = json!({"settings": {"number_of_shards": 3, "number_of_replicas": 0}});
    assert_eq!(edge.send(&t.json("PUT", "/logs", &three)).status, 200);
    let refused = admin.call(
        "PUT",
        &format!("/v1/clusters/{id}/plan"),
        Some(&json!({"plan": "tiny"})),
    );
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(
        refused
            .reason()
            .contains("3 shards in use, the plan allows 2"),
        "{}",
        refused.reason()
    );
    assert_eq!(refused.body["error"]["shards_in_use"], 3);
    assert_eq!(admin.show(&id)["plan"], "small", "nothing changed");
}
