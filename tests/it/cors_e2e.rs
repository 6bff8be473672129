//! End-to-end: CORS at the edge (issue 29) through `searchgate serve`, with exact header
//! assertions as a browser checks them: the pre-check (an `OPTIONS` without credentials)
//! from an origin a key lists is answered 204 by the edge with no upstream call; the
//! search that follows, with the key's credentials, carries `Access-Control-Allow-Origin`
//! (that origin, never `*`) and `Vary: Origin`; other origins get no CORS header; a
//! multitenant cluster forwards `Origin` instead of dropping it.

use crate::support::e2e;

use std::time::Duration;

use e2e::admin::tenant_of;
use e2e::mock::Mock;
use e2e::{eventually, Config, Edge, PlanSpec, Req, Response, Tenant};
use serde_json::{json, Value};

const SITE: &str = "http://localhost:1313";

fn config() -> Config {
    Config::new().with_admin().plan(PlanSpec::new("small"))
}

fn preflight(host: &str, origin: &str, path: &str) -> Req {
    Req::new("OPTIONS", path)
        .host(host)
        .no_auth()
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "POST")
        .header(
            "Access-Control-Request-Headers",
            "authorization,content-type",
        )
}

/// The pre-check's answer as a browser checks it, for `origin`.
fn allowed_preflight(r: &Response, origin: &str) {
    assert_eq!(r.status, 204, "{:?} {}", r.headers, r.text());
    assert_eq!(r.header("access-control-allow-origin"), Some(origin));
    let methods = r.header("access-control-allow-methods").unwrap();
    assert!(methods.split(", ").any(|m| m == "POST"), "{methods}");
    let headers = r
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    assert!(
        headers.contains("authorization") && headers.contains("content-type"),
        "{headers}"
    );
    assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
    assert_eq!(r.header("access-control-max-age"), Some("600"));
    assert_eq!(r.header("vary"), Some("Origin"));
    assert!(r.body.is_empty(), "a pre-check returns no data");
}

fn no_cors(r: &Response) {
    for (k, _) in &r.headers {
        assert!(
            !k.to_ascii_lowercase().starts_with("access-control-"),
            "{:?}",
            r.headers
        );
    }
}

fn key(edge: &Edge, id: &str, body: Value, host: &str) -> (Value, Tenant) {
    let k = edge
        .admin()
        .call("POST", &format!("/v1/clusters/{id}/keys"), Some(&body))
        .expect(201);
    let t = Tenant {
        host: host.into(),
        user: k["username"].as_str().unwrap().into(),
        pass: k["password"].as_str().unwrap().into(),
    };
    (k, t)
}

// issue 29: the browser flow on a single-tenant cluster; the mock upstream shows what the
// edge did not send.
#[test]
fn browser_flow_single_tenant() {
    let mock = Mock::start();
    let edge = Edge::start(config());
    let admin = edge.admin();
    let body =
        json!({"plan": "small", "class": "single-tenant", "upstream": mock.addr.to_string()});
    let created = admin.create(body);
    let id = created["id"].as_str().unwrap().to_string();
    eventually(
        "the cluster to be provisioned",
        Duration::from_secs(20),
        || (admin.show(&id)["state"] == "running").then_some(()),
    );
    let master = tenant_of(&created);
    let body =
        json!({"name": "web", "role": "search", "indices": ["site*"], "allowed_origins": [SITE]});
    let (k, t) = key(&edge, &id, body, &master.host);
    let before = mock.requests().len();

    // the pre-check: 204 by the edge, nothing upstream, on a kept-alive connection
    let mut c = edge.client();
    allowed_preflight(
        &c.send(&preflight(&master.host, SITE, "/site1/_search")),
        SITE,
    );
    // then the search, as fetch() sends it
    let search = t
        .json(
            "POST",
            "/site1/_search",
            &json!({"query": {"match_all": {}}}),
        )
        .header("Origin", SITE);
    let r = c.send(&search);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("access-control-allow-origin"), Some(SITE));
    assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
    assert_eq!(r.header("vary"), Some("Origin"));
    assert_eq!(c.opened, 1);
    let sent = mock.requests();
    assert_eq!(
        sent.len(),
        before + 1,
        "only the search went upstream: {sent:?}"
    );
    assert_eq!(sent.last().unwrap().method, "POST");

    // a refusal to the page carries the headers too, so the page can read it
    let write = t
        .json("PUT", "/site1/_doc/1", &json!({"a": 1}))
        .header("Origin", SITE);
    let r = c.send(&write);
    assert_eq!(r.assert_es_error(403), "security_exception");
    assert_eq!(r.header("access-control-allow-origin"), Some(SITE));

    // other origins: no CORS header anywhere; the pre-check is not answered
    let other = "https://evil.example";
    let r = edge.send(&preflight(&master.host, other, "/site1/_search"));
    assert_eq!(r.status, 401);
    no_cors(&r);
    let r = edge.send(&t.req("GET", "/site1/_search").header("Origin", other));
    assert_eq!(r.status, 200);
    no_cors(&r);
    // a pre-check with credentials is not a browser's pre-check: decided as any request
    let r = edge.send(&preflight(&master.host, SITE, "/site1/_search").auth(&t.user, &t.pass));
    assert_ne!(r.status, 204);
    // the master pair lists no origin
    let r = edge.send(&master.req("GET", "/site1/_search").header("Origin", SITE));
    assert_eq!(r.status, 200);
    no_cors(&r);
    // no Origin: no CORS header
    no_cors(&edge.send(&t.req("GET", "/site1/_search")));

    // revoked: the pre-check is no longer answered
    let key_id = k["id"].as_str().unwrap();
    admin
        .call("DELETE", &format!("/v1/clusters/{id}/keys/{key_id}"), None)
        .expect(200);
    let r = edge.send(&preflight(&master.host, SITE, "/site1/_search"));
    assert_eq!(r.status, 401);
    no_cors(&r);
}

// issue 29: multitenant: the same flow through the tenancy rewriting; `Origin` reaches the
// engine (not dropped), and the answer's headers are the tenant's.
#[test]
fn browser_flow_multitenant() {
    let edge = Edge::start(config());
    let created = edge.admin().create(json!({"plan": "small"}));
    let id = created["id"].as_str().unwrap().to_string();
    let master = tenant_of(&created);
    let mut c = edge.client();
    let settings = json!({"settings": {"number_of_shards": 1, "number_of_replicas": 0}});
    assert_eq!(c.send(&master.json("PUT", "/site1", &settings)).status, 200);
    let doc = json!({"title": "hello browser"});
    assert_eq!(
        c.send(&master.json("PUT", "/site1/_doc/1?refresh=true", &doc))
            .status,
        201
    );
    let body = json!({"name": "web", "role": "search", "indices": ["site*"], "allowed_origins": [SITE, "https://blog.example"]});
    let (_, t) = key(&edge, &id, body, &master.host);

    allowed_preflight(
        &c.send(&preflight(&master.host, "https://blog.example", "/_search")),
        "https://blog.example",
    );
    let q = json!({"query": {"match": {"title": "browser"}}});
    let r = c.send(&t.json("POST", "/_search", &q).header("Origin", SITE));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["hits"]["hits"][0]["_index"], "site1");
    assert_eq!(r.header("access-control-allow-origin"), Some(SITE));
    assert_eq!(r.header("vary"), Some("Origin"));
    let r = c.send(
        &t.req("GET", "/site1/_doc/1")
            .header("Origin", "https://other.example"),
    );
    assert_eq!(r.status, 200);
    no_cors(&r);
    // Origin is no longer a reason to drop anything: a client that sends it is served
    let r = c.send(
        &master
            .req("GET", "/site1/_count")
            .header("Origin", "https://other.example"),
    );
    assert_eq!(r.json()["count"], 1, "{}", r.text());
}
