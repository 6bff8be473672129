//! End-to-end: cluster keys (issue 29; spec 5, 7) through `searchgate serve` with the
//! embedded engine, on both classes: a multitenant cluster on the embedded engine and a
//! single-tenant cluster on a standalone engine, both made through the admin API. A search
//! key limited to `site*` sees only `site*` (wildcards, comma lists, `_msearch` headers,
//! `_mget` docs, terms lookups), writes nothing; a read key reads everything and changes
//! nothing; a full key limited to indices writes only there; revocation applies to the next
//! request on a kept-alive connection; expiry; the audit log and the access log.

use crate::support::e2e;

use std::process::{Command, Output};
use std::time::Duration;

use e2e::admin::{tenant_of, Admin};
use e2e::{eventually, Client, Config, Edge, Engine, PlanSpec, Tenant};
use serde_json::{json, Value};

pub(crate) fn config() -> Config {
    Config::new()
        .with_admin()
        .plan(PlanSpec::new("small").shards(20))
        .edge("access_log", "\"access.log\"")
}

/// A key of cluster `id` (201), as a client of the cluster's address.
pub(crate) fn key(admin: &Admin, id: &str, body: Value, host: &str) -> (Value, Tenant) {
    let k = admin
        .call("POST", &format!("/v1/clusters/{id}/keys"), Some(&body))
        .expect(201);
    let t = Tenant {
        host: host.to_string(),
        user: k["username"].as_str().unwrap().into(),
        pass: k["password"].as_str().unwrap().into(),
    };
    (k, t)
}

/// Indices `site1`, `site2`, `secret`, two documents each, searchable.
pub(crate) fn fill(c: &mut Client, t: &Tenant) {
    for index in ["site1", "site2", "secret"] {
        let settings = json!({"settings": {"number_of_shards": 1, "number_of_replicas": 0}});
        let r = c.send(&t.json("PUT", &format!("/{index}"), &settings));
        assert_eq!(r.status, 200, "{}", r.text());
        for id in ["1", "2"] {
            let doc = json!({"title": format!("{index} page {id}"), "tag": "a"});
            let path = format!("/{index}/_doc/{id}?refresh=true");
            let r = c.send(&t.json("PUT", &path, &doc));
            assert_eq!(r.status, 201, "{}", r.text());
        }
    }
}

/// The index names of a search's hits, sorted.
pub(crate) fn hit_indices(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["_index"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

/// 403 `security_exception` naming the key and the action; the reason.
pub(crate) fn forbidden(r: &e2e::Response, key: &str, action: &str) -> String {
    let kind = r.assert_es_error(403);
    assert_eq!(kind, "security_exception", "{}", r.text());
    let reason = r.json()["error"]["reason"].as_str().unwrap().to_string();
    assert!(
        reason.contains(&format!("key [{key}]")) && reason.contains(&format!("[{action}]")),
        "{reason}"
    );
    reason
}

/// What a search key limited to `site*` can and cannot do on the cluster `master` fills.
fn search_key_on(c: &mut Client, s: &Tenant, master: &Tenant) {
    let all = json!({"query": {"match_all": {}}, "size": 50});
    for path in ["/*/_search", "/_search", "/_all/_search", "/s*/_search"] {
        let r = c.send(&s.json("POST", path, &all));
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        let want = ["site1", "site1", "site2", "site2"];
        assert_eq!(hit_indices(&r.json()), want, "{path}");
    }
    let r = c.send(&s.req("GET", "/_count"));
    assert_eq!(r.json()["count"], 4, "{}", r.text());
    let r = c.send(&s.req("GET", "/site1/_doc/1"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.send(&s.req("GET", "/")).status, 200);

    forbidden(
        &c.send(&s.req("GET", "/secret/_search")),
        "web",
        "GET _search",
    );
    forbidden(
        &c.send(&s.req("GET", "/site1,secret/_search")),
        "web",
        "GET _search",
    );
    forbidden(&c.send(&s.req("GET", "/*t/_search")), "web", "GET _search");
    forbidden(&c.send(&s.req("GET", "/secret/_doc/1")), "web", "GET _doc");
    let doc = json!({"title": "x"});
    forbidden(
        &c.send(&s.json("PUT", "/site1/_doc/9", &doc)),
        "web",
        "PUT _doc",
    );
    forbidden(&c.send(&s.req("DELETE", "/site1")), "web", "DELETE index");
    forbidden(
        &c.send(&s.req("GET", "/site1/_mapping")),
        "web",
        "GET _mapping",
    );
    let bulk = [
        json!({"index": {"_index": "site1", "_id": "9"}}),
        json!({"a": 1}),
    ];
    forbidden(
        &c.send(&s.ndjson("POST", "/_bulk", &bulk)),
        "web",
        "POST _bulk",
    );

    // _msearch headers
    let lines = [
        json!({"index": "site1"}),
        json!({}),
        json!({"index": "secret"}),
        json!({}),
    ];
    forbidden(
        &c.send(&s.ndjson("POST", "/_msearch", &lines)),
        "web",
        "POST _msearch",
    );
    let lines = [
        json!({"index": "site2"}),
        json!({}),
        json!({}),
        json!({"size": 50}),
    ];
    let r = c.send(&s.ndjson("POST", "/_msearch", &lines));
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(hit_indices(&v["responses"][0]), ["site2", "site2"]);
    assert_eq!(hit_indices(&v["responses"][1]).len(), 4, "no index: site*");
    // _mget docs
    let docs = json!({"docs": [{"_index": "site1", "_id": "1"}, {"_index": "secret", "_id": "1"}]});
    forbidden(
        &c.send(&s.json("POST", "/_mget", &docs)),
        "web",
        "POST _mget",
    );
    let docs = json!({"docs": [{"_index": "site1", "_id": "1"}, {"_index": "site2", "_id": "2"}]});
    let r = c.send(&s.json("POST", "/_mget", &docs));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["docs"][1]["found"], true, "{}", r.text());
    // a terms lookup reading another index
    let lookup =
        json!({"query": {"terms": {"tag": {"index": "secret", "id": "1", "path": "tag"}}}});
    forbidden(
        &c.send(&s.json("POST", "/site1/_search", &lookup)),
        "web",
        "POST _search",
    );
    // malformed body: 400, as Elasticsearch answers it
    let r = c.send(
        &s.req("POST", "/site1/_search")
            .header("Content-Type", "application/json")
            .body(&b"{nope"[..]),
    );
    assert_eq!(
        r.assert_es_error(400),
        "x_content_parse_exception",
        "{}",
        r.text()
    );

    // the master pair still sees everything
    let r = c.send(&master.json("POST", "/*/_search", &all));
    assert_eq!(hit_indices(&r.json()).len(), 6, "{}", r.text());
}

fn read_and_full_keys_on(c: &mut Client, r: &Tenant, f: &Tenant, master: &Tenant) {
    let resp = c.send(&r.req("GET", "/secret/_mapping"));
    assert_eq!(resp.status, 200, "{}", resp.text());
    let resp = c.send(&r.req("GET", "/secret/_search"));
    assert_eq!(resp.json()["hits"]["hits"].as_array().unwrap().len(), 2);
    forbidden(&c.send(&r.req("PUT", "/newindex")), "reader", "PUT index");
    let alias = json!({"actions": [{"add": {"index": "site1", "alias": "a1"}}]});
    forbidden(
        &c.send(&r.json("POST", "/_aliases", &alias)),
        "reader",
        "POST _aliases",
    );
    let t = json!({"index_patterns": ["x*"]});
    forbidden(
        &c.send(&r.json("PUT", "/_template/t1", &t)),
        "reader",
        "PUT _template",
    );

    // full key limited to site*: writes there, not elsewhere (the body's actions checked)
    let ok = [
        json!({"index": {"_index": "site1", "_id": "3"}}),
        json!({"title": "new"}),
    ];
    let resp = c.send(&f.ndjson("POST", "/_bulk?refresh=true", &ok));
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.json()["errors"], false, "{}", resp.text());
    let bad = [
        json!({"index": {"_index": "site1", "_id": "4"}}),
        json!({"title": "new"}),
        json!({"delete": {"_index": "secret", "_id": "1"}}),
    ];
    forbidden(
        &c.send(&f.ndjson("POST", "/_bulk?refresh=true", &bad)),
        "writer",
        "POST _bulk",
    );
    let resp = c.send(&master.req("GET", "/secret/_count"));
    assert_eq!(resp.json()["count"], 2, "nothing of a refused bulk applied");
    let resp = c.send(&master.req("GET", "/site1/_doc/4"));
    assert_eq!(resp.status, 404, "not even its allowed part");
    forbidden(
        &c.send(&f.req("DELETE", "/secret")),
        "writer",
        "DELETE index",
    );
}

/// The whole flow on a cluster made through the API (`created`: its create answer).
fn keys_on(edge: &Edge, created: &Value) {
    let admin = edge.admin();
    let id = created["id"].as_str().unwrap();
    let master = tenant_of(created);
    let mut c = edge.client();
    fill(&mut c, &master);

    let (k, s) = key(
        admin,
        id,
        json!({"name": "web", "role": "search", "indices": ["site*"]}),
        &master.host,
    );
    assert_eq!(k["role"], "search");
    assert_eq!(k["indices"], json!(["site*"]));
    let url = k["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("http://{}:{}@", s.user, s.pass)),
        "{url}"
    );
    assert!(url.contains(&master.host), "{url}");
    let (_, r) = key(
        admin,
        id,
        json!({"name": "reader", "role": "read"}),
        &master.host,
    );
    let (_, f) = key(
        admin,
        id,
        json!({"name": "writer", "role": "full", "indices": ["site*"]}),
        &master.host,
    );

    // the list: no secrets
    let list = admin
        .call("GET", &format!("/v1/clusters/{id}/keys"), None)
        .expect(200);
    let keys = list["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 3);
    let text = list.to_string();
    assert!(
        !text.contains(&s.pass) && !text.contains("password") && !text.contains("hmac"),
        "{text}"
    );

    search_key_on(&mut c, &s, &master);
    read_and_full_keys_on(&mut c, &r, &f, &master);

    // revoked: 401 on the very next request of a kept-alive connection
    let mut kept = edge.client();
    assert_eq!(kept.send(&s.req("GET", "/site1/_search")).status, 200);
    let key_id = k["id"].as_str().unwrap();
    let gone = admin
        .call("DELETE", &format!("/v1/clusters/{id}/keys/{key_id}"), None)
        .expect(200);
    assert_eq!(gone["revoked"], true);
    assert_eq!(kept.send(&s.req("GET", "/site1/_search")).status, 401);
    assert_eq!(kept.opened, 1, "the same connection");
    let again = admin.call("DELETE", &format!("/v1/clusters/{id}/keys/{key_id}"), None);
    assert_eq!(again.status, 404, "{}", again.body);
    assert_eq!(
        c.send(&master.req("GET", "/site1/_search")).status,
        200,
        "the master pair stays"
    );

    // audit: every key change, never a secret
    let audit = admin
        .call("GET", &format!("/v1/audit?cluster={id}"), None)
        .expect(200);
    let actions: Vec<&str> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions.iter().filter(|a| **a == "key.create").count(),
        3,
        "{actions:?}"
    );
    assert_eq!(
        actions.iter().filter(|a| **a == "key.revoke").count(),
        1,
        "{actions:?}"
    );
    let text = audit.to_string();
    assert!(
        !text.contains("hmac-sha256") && !text.contains(&s.pass),
        "{text}"
    );
}

// issue 29: keys on both classes, end to end.
#[test]
fn keys_on_both_classes() {
    let engine = Engine::start();
    let edge = Edge::start(config());
    let admin = edge.admin();
    let mt = admin.create(json!({"plan": "small", "name": "shop"}));
    keys_on(&edge, &mt);

    let body = json!({"plan": "small", "class": "single-tenant", "upstream": engine.addr.to_string(), "name": "own"});
    let st = admin.create(body);
    let id = st["id"].as_str().unwrap().to_string();
    eventually(
        "the cluster to be provisioned",
        Duration::from_secs(20),
        || (admin.show(&id)["state"] == "running").then_some(()),
    );
    keys_on(&edge, &st);

    // the access log names the key of each request
    let log = eventually(
        "the access log to name a key",
        Duration::from_secs(10),
        || {
            let text = std::fs::read_to_string(edge.dir.path().join("access.log")).ok()?;
            text.lines()
                .any(|l| l.contains(" 403 ") && l.ends_with(" key=web"))
                .then_some(text)
        },
    );
    assert!(
        log.lines()
            .any(|l| l.contains(" 200 ") && l.ends_with(" key=reader")),
        "{log}"
    );
}

// issue 29: a key that expires opens the cluster until then, and nothing after.
#[test]
fn keys_expire() {
    let edge = Edge::start(config());
    let admin = edge.admin();
    let created = admin.create(json!({"plan": "small"}));
    let id = created["id"].as_str().unwrap();
    let master = tenant_of(&created);
    let (k, t) = key(
        admin,
        id,
        json!({"name": "brief", "role": "search", "expires_at": "2s"}),
        &master.host,
    );
    assert!(k["expires_at"].as_str().unwrap().ends_with('Z'), "{k}");
    let mut c = edge.client();
    assert_eq!(c.send(&t.req("GET", "/")).status, 200, "before it expires");
    eventually("the key to expire", Duration::from_secs(10), || {
        (c.send(&t.req("GET", "/")).status == 401).then_some(())
    });
    assert_eq!(c.send(&master.req("GET", "/")).status, 200);
}

// issue 29: what the API refuses (400, 404, 409, 410), at N and N+1 of its limits.
#[test]
fn key_requests_are_checked() {
    let edge = Edge::start(config());
    let admin = edge.admin();
    let created = admin.create(json!({"plan": "small"}));
    let id = created["id"].as_str().unwrap().to_string();
    let path = format!("/v1/clusters/{id}/keys");
    let post = |body: Value| admin.call("POST", &path, Some(&body));
    for (body, why) in [
        (json!({"name": "a", "role": "admin"}), "role `admin`"),
        (json!({"role": "search"}), "name"),
        (json!({"name": "", "role": "search"}), "`name`"),
        (
            json!({"name": "a", "role": "search", "secret": 1}),
            "secret",
        ),
        (
            json!({"name": "a", "role": "search", "indices": ["Site"]}),
            "`indices`",
        ),
        (
            json!({"name": "a", "role": "search", "indices": ["a,b"]}),
            "`indices`",
        ),
        (
            json!({"name": "a", "role": "search", "indices": ["_all"]}),
            "`indices`",
        ),
        (
            json!({"name": "a", "role": "search", "allowed_ips": ["10.0.0.1/33"]}),
            "`allowed_ips`",
        ),
        (
            json!({"name": "a", "role": "search", "allowed_ips": ["10.0.0.1/8"]}),
            "`allowed_ips`",
        ),
        (
            json!({"name": "a", "role": "search", "allowed_origins": ["*"]}),
            "`allowed_origins`",
        ),
        (
            json!({"name": "a", "role": "search", "allowed_origins": ["https://a.example/path"]}),
            "`allowed_origins`",
        ),
        (
            json!({"name": "a", "role": "search", "expires_at": "2001-01-01T00:00:00Z"}),
            "past",
        ),
        (
            json!({"name": "a", "role": "search", "expires_at": "soon"}),
            "`expires_at`",
        ),
    ] {
        let a = post(body.clone());
        assert_eq!(a.status, 400, "{body}: {}", a.body);
        assert!(a.reason().contains(why), "{body}: {}", a.reason());
    }
    let raw = admin.call_with("POST", &path, None, &[]);
    assert_eq!(raw.status, 400, "no body: no name nor role");
    // N and N+1 entries of a list
    let fifty: Vec<String> = (0..50).map(|i| format!("idx{i}")).collect();
    post(json!({"name": "fifty", "role": "search", "indices": fifty})).expect(201);
    let mut more = fifty.clone();
    more.push("idx50".into());
    let a = post(json!({"name": "fifty-one", "role": "search", "indices": more}));
    assert_eq!(a.status, 400, "{}", a.body);
    let dup = post(json!({"name": "fifty", "role": "read"}));
    assert_eq!(dup.status, 409, "{}", dup.body);
    // N and N+1 keys of a cluster
    for i in 1..100 {
        post(json!({"name": format!("k{i}"), "role": "search"})).expect(201);
    }
    let over = post(json!({"name": "k100", "role": "search"}));
    assert_eq!(over.status, 400, "{}", over.body);
    assert!(over.reason().contains("100 keys"), "{}", over.reason());
    let list = admin.call("GET", &path, None).expect(200);
    assert_eq!(list["keys"].as_array().unwrap().len(), 100);

    assert_eq!(
        admin.call("GET", "/v1/clusters/nope/keys", None).status,
        404
    );
    assert_eq!(
        admin.call("DELETE", &format!("{path}/knope"), None).status,
        404
    );
    assert_eq!(admin.call("PUT", &path, None).status, 405);
    admin
        .call("DELETE", &format!("/v1/clusters/{id}"), None)
        .expect(200);
    assert_eq!(admin.call("GET", &path, None).status, 410);
}

/// Runs `searchgate admin --url .. --token-file .. <args>`.
fn cli(edge: &Edge, args: &[&str]) -> Output {
    let admin = edge.admin();
    let token = edge.dir.path().join("edge").join("admin.token");
    Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .args(["admin", "--url", &admin.url, "--token-file"])
        .arg(&token)
        .args(args)
        .current_dir(edge.dir.path())
        .output()
        .expect("run searchgate admin")
}

// issue 29: `searchgate admin keys create|list|delete`.
#[test]
fn the_cli_manages_keys() {
    let edge = Edge::start(config());
    let created = edge.admin().create(json!({"plan": "small"}));
    let id = created["id"].as_str().unwrap();
    let master = tenant_of(&created);
    let out = cli(
        &edge,
        &[
            "keys",
            "create",
            id,
            "--name",
            "site search",
            "--role",
            "search",
            "--indices",
            "site*,docs",
            "--allowed-origins",
            "https://blog.example",
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let k: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(k["indices"], json!(["site*", "docs"]));
    assert_eq!(k["allowed_origins"], json!(["https://blog.example"]));
    let t = Tenant {
        host: master.host.clone(),
        user: k["username"].as_str().unwrap().into(),
        pass: k["password"].as_str().unwrap().into(),
    };
    assert_eq!(edge.send(&t.req("GET", "/")).status, 200);

    let out = cli(&edge, &["keys", "list", id]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("site search") && text.contains("site*,docs"),
        "{text}"
    );
    assert!(!text.contains(&t.pass), "{text}");

    let key_id = k["id"].as_str().unwrap();
    let out = cli(&edge, &["keys", "delete", id, key_id]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("revoked"), "{text}");
    assert_eq!(edge.send(&t.req("GET", "/")).status, 401);

    let out = cli(
        &edge,
        &["keys", "create", id, "--name", "x", "--role", "owner"],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("role `owner`"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The client address a key is checked against: the socket's, or a trusted proxy's
/// `X-Forwarded-For` (issue 29, "IP allowlists").
fn ip_allowlists_with(trusted: bool) {
    let mut cfg = config();
    if trusted {
        cfg = cfg.edge("trusted_proxies", "[\"127.0.0.1/32\", \"10.0.0.0/8\"]");
    }
    let edge = Edge::start(cfg);
    let admin = edge.admin();
    let created = admin.create(json!({"plan": "small"}));
    let id = created["id"].as_str().unwrap();
    let master = tenant_of(&created);
    let local = json!({"name": "local", "role": "search", "allowed_ips": ["127.0.0.1", "::1/128"]});
    let (_, local) = key(admin, id, local, &master.host);
    let office = json!({"name": "office", "role": "search", "allowed_ips": ["198.51.100.0/24", "2001:db8::/32"]});
    let (_, office) = key(admin, id, office, &master.host);
    let xff = |t: &Tenant, v: &str| edge.send(&t.req("GET", "/").header("X-Forwarded-For", v));
    let refused_as = |r: &e2e::Response, key: &str, addr: &str| {
        let reason = forbidden(r, key, "use");
        assert!(
            reason.contains(addr) && reason.contains("allowed_ips"),
            "{reason}"
        );
    };
    let refused = |r: &e2e::Response, addr: &str| refused_as(r, "office", addr);
    // from this test, with no proxy in between: the socket's address
    assert_eq!(edge.send(&local.req("GET", "/")).status, 200);
    refused(&edge.send(&office.req("GET", "/")), "127.0.0.1");
    // the address is checked before the password: a wrong one from outside is still a 403
    let wrong = Tenant {
        pass: "wrong".into(),
        ..office.clone()
    };
    refused(&edge.send(&wrong.req("GET", "/")), "127.0.0.1");
    let wrong = Tenant {
        pass: "wrong".into(),
        ..local.clone()
    };
    assert_eq!(edge.send(&wrong.req("GET", "/")).status, 401);
    // the master pair has no allowlist
    assert_eq!(xff(&master, "203.0.113.5").status, 200);
    if trusted {
        assert_eq!(xff(&office, "198.51.100.7").status, 200);
        assert_eq!(
            xff(&office, "203.0.113.5, 198.51.100.7, 10.1.2.3").status,
            200
        );
        assert_eq!(xff(&office, "2001:db8::7").status, 200);
        refused(&xff(&office, "198.51.100.7, 203.0.113.5"), "203.0.113.5");
        refused_as(&xff(&local, "198.51.100.7"), "local", "198.51.100.7");
        let r = xff(&local, "not-an-address");
        assert_eq!(
            r.assert_es_error(400),
            "illegal_argument_exception",
            "{}",
            r.text()
        );
    } else {
        // from an untrusted peer the header says nothing
        refused(&xff(&office, "198.51.100.7"), "127.0.0.1");
        assert_eq!(xff(&local, "198.51.100.7").status, 200);
        assert_eq!(xff(&local, "not-an-address").status, 200);
    }
}

// issue 29: IP allowlists of keys, without a trusted proxy.
#[test]
fn ip_allowlists_from_the_socket() {
    ip_allowlists_with(false);
}

// issue 29: IP allowlists of keys behind a trusted proxy.
#[test]
fn ip_allowlists_behind_a_trusted_proxy() {
    ip_allowlists_with(true);
}

/// A request through a connection that starts with `preamble`, over TLS or not.
fn after_preamble(edge: &Edge, preamble: &[u8], tls: bool, req: &e2e::Req) -> e2e::Response {
    let host = req.host.clone().unwrap();
    let mut c = if tls {
        let config = e2e::client::tls_client_config(&edge.ca());
        e2e::Conn::tls_after(edge.https.unwrap(), config, &host, preamble)
    } else {
        e2e::Conn::plain_after(edge.http, preamble)
    };
    e2e::exchange(&mut c, req)
}

fn proxy_header(source: &str) -> Vec<u8> {
    let source: std::net::SocketAddr = source.parse().unwrap();
    let destination = if source.is_ipv4() {
        "10.0.0.1:9243"
    } else {
        "[2001:db8::1]:9243"
    };
    searchgate::proxy_v2::header_for(source, destination.parse().unwrap())
}

// issue 29: IP allowlists behind a load balancer in TCP mode that sends the PROXY protocol
// v2 header (HAProxy's `send-proxy-v2`): from a trusted peer the header names the client,
// on both listeners, for every request of the connection; without a header the socket's
// address stands; a header that cannot be read closes the connection unanswered; from an
// untrusted peer the header is not believed (400, nothing granted).
#[test]
fn ip_allowlists_behind_a_proxy_protocol_balancer() {
    let cfg = config()
        .edge("trusted_proxies", "[\"127.0.0.1/32\"]")
        .edge("https", "\"127.0.0.1:0\"");
    let edge = Edge::start(cfg);
    let admin = edge.admin();
    let created = admin.create(json!({"plan": "small"}));
    let id = created["id"].as_str().unwrap();
    let master = tenant_of(&created);
    let local = json!({"name": "local", "role": "search", "allowed_ips": ["127.0.0.1"]});
    let (_, local) = key(admin, id, local, &master.host);
    let office = json!({"name": "office", "role": "search", "allowed_ips": ["198.51.100.0/24", "2001:db8::/32"]});
    let (_, office) = key(admin, id, office, &master.host);
    let refused_as = |r: &e2e::Response, key: &str, addr: &str| {
        let reason = forbidden(r, key, "use");
        assert!(reason.contains(addr), "{reason}");
    };
    for tls in [false, true] {
        let via = |t: &Tenant, source: Option<&str>| {
            let pre = source.map(proxy_header).unwrap_or_default();
            after_preamble(&edge, &pre, tls, &t.req("GET", "/"))
        };
        assert_eq!(
            via(&office, Some("198.51.100.7:40000")).status,
            200,
            "tls {tls}"
        );
        assert_eq!(via(&office, Some("[2001:db8::7]:40000")).status, 200);
        refused_as(
            &via(&office, Some("203.0.113.5:40000")),
            "office",
            "203.0.113.5",
        );
        refused_as(
            &via(&local, Some("198.51.100.7:1")),
            "local",
            "198.51.100.7",
        );
        // no header from the trusted peer: its own address (X-Forwarded-For still read)
        refused_as(&via(&office, None), "office", "127.0.0.1");
        assert_eq!(via(&local, None).status, 200);
        // the balancer's own health checks (LOCAL): the socket's address
        let mut local_cmd = proxy_header("198.51.100.7:1");
        local_cmd[12] = 0x20;
        let r = after_preamble(&edge, &local_cmd, tls, &office.req("GET", "/"));
        refused_as(&r, "office", "127.0.0.1");
    }
    // every request of a kept-alive connection is the header's client's
    let mut c = e2e::Conn::plain_after(edge.http, &proxy_header("198.51.100.9:2"));
    for _ in 0..3 {
        assert_eq!(e2e::exchange(&mut c, &office.req("GET", "/")).status, 200);
    }
    // the header's client is not a trusted proxy: its X-Forwarded-For says nothing
    let xff = office
        .req("GET", "/")
        .header("X-Forwarded-For", "198.51.100.7");
    let r = after_preamble(&edge, &proxy_header("203.0.113.5:1"), false, &xff);
    refused_as(&r, "office", "203.0.113.5");
    // the request log shows the header's client
    let log = admin
        .call("GET", &format!("/v1/clusters/{id}/requests"), None)
        .expect(200);
    let clients: Vec<&str> = log["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["client"].as_str())
        .collect();
    assert!(clients.contains(&"198.51.100.9"), "{clients:?}");
    // a header that cannot be read (version 1 in the binary form): closed unanswered
    let mut bad = proxy_header("198.51.100.7:1");
    bad[12] = 0x11;
    for tls in [false, true] {
        let addr = if tls { edge.https.unwrap() } else { edge.http };
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        use std::io::{Read, Write};
        s.write_all(&bad).unwrap();
        let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        assert!(got.is_empty(), "{}", String::from_utf8_lossy(&got));
    }

    // an edge that trusts no proxy: the header is bytes of a malformed request
    let edge = Edge::start(config());
    let admin = edge.admin();
    let created = admin.create(json!({"plan": "small"}));
    let id = created["id"].as_str().unwrap();
    let master = tenant_of(&created);
    let office = json!({"name": "office", "role": "search", "allowed_ips": ["198.51.100.0/24"]});
    let (_, office) = key(admin, id, office, &master.host);
    let r = after_preamble(
        &edge,
        &proxy_header("198.51.100.7:1"),
        false,
        &office.req("GET", "/"),
    );
    assert_eq!(r.status, 400, "{}", r.text());
}
