//! Attacks on cluster keys (issue 29; spec 5.5, 5.8, 7) by a holder of a restricted key,
//! through `searchgate serve` on both classes (a multitenant cluster on the embedded engine,
//! a single-tenant one on a standalone engine), each made through the admin API.
//!
//! Holes found and closed here:
//! - a `full` key limited to `site*` installed a template whose `index_patterns` reached
//!   `secret*` with an alias `site-all`: every `secret*` index the master created later
//!   was readable by any `site*` key as `site-all`. Names a body creates (`aliases`,
//!   `alias`, `index_patterns`) are now checked against the key's patterns like names it
//!   reads;
//! - a `search` or `read` key closed every scroll and point in time of the cluster
//!   (`DELETE /_search/scroll/_all`, `?scroll_id=_all`, `x,_all`, `{"scroll_id":["_all"]}`,
//!   `DELETE /_search/point_in_time/_all`): a restricted key closes only what it names;
//! - on the multitenant class, a key holding the master's scroll id over `secret` read
//!   `secret` through `_search/scroll`: tokens are now bound to the principal that opened
//!   them (the master pair, or one key), so a key continues only its own scrolls and points
//!   in time;
//! - on the single-tenant class, a key holding the master's raw scroll or point-in-time id
//!   continued, searched or closed it: a key's ids are now sealed and bound to the key
//!   there too (`tenancy::key_ids`), a raw id is a missing context for a key, and the
//!   places the edge would not read are refused to keys (a body in the query string,
//!   endpoints it does not know such as search templates, the list of every point in time;
//!   the list sealed the master's points in time for any key on the multitenant class);
//! - a key pattern full of stars (`*a*a…*b`) against a long name held a worker for good
//!   (the glob tried every split at every star): the match is now linear.
//!
//! What held (kept as regressions): path tricks (`//`, `..`, `%2F`, percent-encoding,
//! date math, `?index=`), comma lists, exclusions and wildcards, `_msearch` headers and
//! `_mget` docs in every spelling, two actions on one `_bulk` line, writes by `GET`,
//! `X-Forwarded-For` from an untrusted peer, CORS pre-checks from foreign origins, key API
//! inputs at and past their limits. Every test ends with another tenant still answered.

use crate::keys_e2e::{config, fill, forbidden, hit_indices, key};
use crate::support::e2e;

use std::time::Duration;

use e2e::admin::tenant_of;
use e2e::{eventually, Client, Edge, Engine, Tenant};
use serde_json::{json, Value};

/// A multitenant cluster, a second one (the bystander), and a single-tenant one on
/// `engine`, all made through the API: their create answers.
fn clusters(edge: &Edge, engine: &Engine) -> (Value, Value, Value) {
    let admin = edge.admin();
    let mt = admin.create(json!({"plan": "small", "name": "shop"}));
    let other = admin.create(json!({"plan": "small", "name": "bystander"}));
    let body = json!({"plan": "small", "class": "single-tenant",
        "upstream": engine.addr.to_string(), "name": "own"});
    let st = admin.create(body);
    let id = st["id"].as_str().unwrap().to_string();
    eventually(
        "the cluster to be provisioned",
        Duration::from_secs(20),
        || (admin.show(&id)["state"] == "running").then_some(()),
    );
    (mt, other, st)
}

/// The bystander tenant is still answered, and sees only its own index.
fn bystander_answers(c: &mut Client, other: &Tenant) {
    let r = c.send(&other.req("GET", "/_cat/indices?h=index"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text().trim(), "mine", "{}", r.text());
}

/// A key of the cluster `created` answered.
fn key_of(edge: &Edge, created: &Value, body: Value) -> Tenant {
    let id = created["id"].as_str().unwrap();
    key(edge.admin(), id, body, &tenant_of(created).host).1
}

/// `_scroll_id` of a search opening a scroll, by `t` on `path`.
fn open_scroll(c: &mut Client, t: &Tenant, path: &str) -> String {
    let r = c.send(&t.json("POST", &format!("{path}?scroll=5m&size=1"), &json!({})));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["_scroll_id"].as_str().unwrap().to_string()
}

/// The next page of scroll `id`, as `t`.
fn next_page(c: &mut Client, t: &Tenant, id: &str) -> e2e::Response {
    c.send(&t.json(
        "POST",
        "/_search/scroll",
        &json!({"scroll_id": id, "scroll": "1m"}),
    ))
}

fn setup() -> (Engine, Edge, Client, Vec<Value>, Tenant) {
    let engine = Engine::start();
    let edge = Edge::start(config());
    let (mt, other, st) = clusters(&edge, &engine);
    let mut c = edge.client();
    let bystander = tenant_of(&other);
    let r = c.send(&bystander.req("PUT", "/mine"));
    assert_eq!(r.status, 200, "{}", r.text());
    for created in [&mt, &st] {
        fill(&mut c, &tenant_of(created));
    }
    (engine, edge, c, vec![mt, st], bystander)
}

// Spec 5.5, 5.8 (issue 29): a key limited to `site*` creates no alias, and no template
// reaching beyond `site*`, through which another index would become readable by a
// `site*` key.
#[test]
fn keys_create_no_names_beyond_their_patterns() {
    let (_engine, edge, mut c, created, bystander) = setup();
    for cl in &created {
        let master = tenant_of(cl);
        let writer = key_of(
            &edge,
            cl,
            json!({"name": "writer", "role": "full", "indices": ["site*"]}),
        );
        let web = key_of(
            &edge,
            cl,
            json!({"name": "web", "role": "search", "indices": ["site*"]}),
        );
        let refused = [
            (
                "/_template/site-t",
                json!({"index_patterns": ["secret*"], "aliases": {"site-all": {}}}),
                "PUT _template",
            ),
            (
                "/_template/site-t",
                json!({"index_patterns": "*", "order": 9}),
                "PUT _template",
            ),
            (
                "/_index_template/site-t",
                json!({"index_patterns": ["site-y*"], "template": {"aliases": {"secret-y": {}}}}),
                "PUT _index_template",
            ),
            (
                "/_index_template/site-t",
                json!({"index_patterns": ["*"]}),
                "PUT _index_template",
            ),
            (
                "/site9",
                json!({"aliases": {"events-x": {"is_write_index": true}}}),
                "PUT index",
            ),
        ];
        for (path, body, action) in refused {
            let r = c.send(&writer.json("PUT", path, &body));
            let reason = forbidden(&r, "writer", action);
            let why = if action == "PUT index" {
                "outside the key's indices"
            } else {
                "cluster-level configuration"
            };
            assert!(reason.contains(why), "{reason}");
        }
        // templates are the cluster's configuration: not even within the patterns
        let ok = json!({"index_patterns": ["site-z*"], "aliases": {"site-z-all": {}}});
        let r = c.send(&writer.json("PUT", "/_template/site-z", &ok));
        forbidden(&r, "writer", "PUT _template");
        let ok = json!({"aliases": {"site8-all": {}}});
        let r = c.send(&writer.json("PUT", "/site8", &ok));
        assert_eq!(r.status, 200, "{}", r.text());

        // the master's next index is nobody's alias: the search key cannot reach it
        let doc = json!({"title": "secret page new"});
        let r = c.send(&master.req("PUT", "/secret-new"));
        assert_eq!(r.status, 200, "{}", r.text());
        let r = c.send(&master.json("PUT", "/secret-new/_doc/1?refresh=true", &doc));
        assert_eq!(r.status, 201, "{}", r.text());
        let r = c.send(&web.req("GET", "/site-all/_search"));
        assert_eq!(r.status, 404, "{}", r.text());
        let r = c.send(&web.json("POST", "/_search", &json!({"size": 50})));
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(!r.text().contains("secret page"), "{}", r.text());
        assert_eq!(
            c.send(&master.req("GET", "/_template/site-t")).status,
            404,
            "no refused template was installed"
        );
    }
    bystander_answers(&mut c, &bystander);
}

// Spec 5.8 (issue 29: a `search` key clears its own scrolls): a restricted key never
// closes every context of the cluster, in any spelling of `_all`; its own it closes.
#[test]
fn restricted_keys_never_close_all_contexts() {
    let (_engine, edge, mut c, created, bystander) = setup();
    for (cl, multitenant) in created.iter().zip([true, false]) {
        let master = tenant_of(cl);
        let search = key_of(&edge, cl, json!({"name": "search", "role": "search"}));
        let read = key_of(&edge, cl, json!({"name": "read", "role": "read"}));
        let masters = open_scroll(&mut c, &master, "/secret/_search");

        // blocked on the multitenant class before any key is looked at (501)
        let all = search.req("DELETE", "/_search/scroll/_all");
        let r = c.send(&all);
        if multitenant {
            r.assert_es_error(501);
        } else {
            forbidden(&r, "search", "DELETE _search/scroll");
        }
        for req in [
            search.req("DELETE", "/_search/scroll/x,_all"),
            search.req("DELETE", "/_search/scroll?scroll_id=%5Fall"),
            search.json("DELETE", "/_search/scroll", &json!({"scroll_id": ["_all"]})),
            search.json("DELETE", "/_search/scroll", &json!({"scroll_id": "x,_all"})),
        ] {
            let reason = forbidden(&c.send(&req), "search", "DELETE _search/scroll");
            assert!(reason.contains("did not open"), "{reason}");
        }
        let r = c.send(&read.req("DELETE", "/_search/point_in_time/_all"));
        if multitenant {
            r.assert_es_error(501);
        } else {
            forbidden(&r, "read", "DELETE _search/point_in_time/_all");
        }
        // the master's scroll survived all of it
        let r = next_page(&mut c, &master, &masters);
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(r.text().contains("secret page"), "{}", r.text());
        // the key closes its own
        let own = open_scroll(&mut c, &search, "/site1/_search");
        let r = c.send(&search.json("DELETE", "/_search/scroll", &json!({"scroll_id": own})));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["num_freed"], 1, "{}", r.text());
    }
    bystander_answers(&mut c, &bystander);
}

// Spec 5.5, 5.8 (issue 29): on the multitenant class a scroll or point-in-time id opens
// only for the principal it was issued to: the master's scroll over `secret` is a missing
// context for a key limited to `site*`, and one key's scroll for another key.
#[test]
fn context_ids_open_only_for_their_principal() {
    let (_engine, edge, mut c, created, bystander) = setup();
    let cl = &created[0];
    let master = tenant_of(cl);
    let web = key_of(
        &edge,
        cl,
        json!({"name": "web", "role": "search", "indices": ["site*"]}),
    );
    let other = key_of(&edge, cl, json!({"name": "other", "role": "read"}));

    let masters = open_scroll(&mut c, &master, "/secret/_search");
    for t in [&web, &other] {
        let r = next_page(&mut c, t, &masters);
        assert_eq!(r.status, 404, "{}", r.text());
        let cause = &r.json()["error"]["root_cause"][0]["type"];
        assert_eq!(cause, "search_context_missing_exception", "{}", r.text());
        assert!(!r.text().contains("secret page"), "{}", r.text());
    }
    let r = next_page(&mut c, &master, &masters);
    assert_eq!(r.status, 200, "the master's own: {}", r.text());

    let webs = open_scroll(&mut c, &web, "/site1/_search");
    assert_eq!(next_page(&mut c, &web, &webs).status, 200);
    let r = next_page(&mut c, &other, &webs);
    assert_eq!(r.status, 404, "{}", r.text());
    let r = c.send(&other.json("DELETE", "/_search/scroll", &json!({"scroll_id": webs})));
    assert_eq!(
        r.status,
        404,
        "another key's scroll is not closed: {}",
        r.text()
    );
    assert_eq!(next_page(&mut c, &web, &webs).status, 200);

    // points in time alike
    let r = c.send(&master.req("POST", "/secret/_search/point_in_time?keep_alive=5m"));
    assert_eq!(r.status, 200, "{}", r.text());
    let pit = r.json()["pit_id"].as_str().unwrap().to_string();
    let search = json!({"pit": {"id": pit}, "size": 10});
    let r = c.send(&other.json("POST", "/_search", &search));
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(!r.text().contains("secret page"), "{}", r.text());
    let r = c.send(&master.json("POST", "/_search", &search));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(hit_indices(&r.json()), ["secret", "secret"]);
    // listing every point in time sealed the master's for the key that asked: refused
    let r = c.send(&other.req("GET", "/_search/point_in_time/_all"));
    let reason = forbidden(&r, "other", "GET _search/point_in_time/_all");
    assert!(reason.contains("did not open"), "{reason}");
    bystander_answers(&mut c, &bystander);
}

// Spec 5.8 (issue 29): a key limited to indices opens a point in time within its
// patterns (both forms), and not outside them; templates, the cluster's configuration,
// it neither reads nor writes, whatever their names (the master's template `site-t`
// holds the mappings and aliases of `secret*`), on both classes.
#[test]
fn index_limited_keys_open_points_in_time_and_reach_no_template() {
    let (_engine, edge, mut c, created, bystander) = setup();
    for cl in &created {
        let master = tenant_of(cl);
        let reader = key_of(
            &edge,
            cl,
            json!({"name": "reader", "role": "read", "indices": ["site*"]}),
        );
        let r = c.send(&reader.req("POST", "/site1/_pit?keep_alive=1m"));
        assert_eq!(r.status, 200, "{}", r.text());
        let pit = r.json()["id"].as_str().unwrap().to_string();
        let search = json!({"pit": {"id": pit}, "size": 10});
        let r = c.send(&reader.json("POST", "/_search", &search));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(hit_indices(&r.json()), ["site1", "site1"]);
        let r = c.send(&reader.req("POST", "/site2/_search/point_in_time?keep_alive=1m"));
        assert_eq!(r.status, 200, "{}", r.text());
        let r = c.send(&reader.req("POST", "/secret/_pit?keep_alive=1m"));
        forbidden(&r, "reader", "POST _pit");

        let t = json!({"index_patterns": ["secret*"], "aliases": {"secret-all": {}},
            "mappings": {"properties": {"salary": {"type": "long"}}}});
        let r = c.send(&master.json("PUT", "/_template/site-t", &t));
        assert_eq!(r.status, 200, "{}", r.text());
        for (path, action) in [
            ("/_template/site-t", "GET _template"),
            ("/_template/site*", "GET _template"),
            ("/_template", "GET _template"),
            ("/_index_template/site-t", "GET _index_template"),
            ("/_component_template/site-c", "GET _component_template"),
        ] {
            let r = c.send(&reader.req("GET", path));
            let reason = forbidden(&r, "reader", action);
            assert!(reason.contains("cluster-level"), "{reason}");
            assert!(!r.text().contains("salary"), "{}", r.text());
        }
        let r = c.send(&master.req("GET", "/_template/site-t"));
        assert_eq!(r.status, 200, "the master reads it: {}", r.text());
    }
    bystander_answers(&mut c, &bystander);
}

/// 404 `search_context_missing_exception`, nothing of `secret` in it.
fn missing_context(r: &e2e::Response) {
    assert_eq!(r.status, 404, "{}", r.text());
    let cause = &r.json()["error"]["root_cause"][0]["type"];
    assert_eq!(cause, "search_context_missing_exception", "{}", r.text());
    assert!(!r.text().contains("secret page"), "{}", r.text());
}

// Spec 5.5, 5.8 (issue 29): on the single-tenant class, where the master pair gets the
// engine's own ids, a key's ids are sealed and bound to the key: the master's raw scroll
// or point-in-time id, another key's token, a tampered one, are a missing context for a
// key, in the path, the query and the body; a key's own token works for it alone; the
// places the edge would not read (a body in the query string, endpoints it does not know,
// the list of every point in time) are refused to a key.
#[test]
fn single_tenant_context_ids_open_only_for_their_principal() {
    let (_engine, edge, mut c, created, bystander) = setup();
    let cl = &created[1];
    let master = tenant_of(cl);
    let web = key_of(
        &edge,
        cl,
        json!({"name": "web", "role": "search", "indices": ["site*"]}),
    );
    let other = key_of(&edge, cl, json!({"name": "other", "role": "read"}));

    let masters = open_scroll(&mut c, &master, "/secret/_search");
    assert!(
        !masters.starts_with("sg1."),
        "the master's ids are the engine's"
    );
    let r = c.send(&master.req("POST", "/secret/_pit?keep_alive=5m"));
    assert_eq!(r.status, 200, "{}", r.text());
    let master_pit = r.json()["id"].as_str().unwrap().to_string();
    for t in [&web, &other] {
        missing_context(&next_page(&mut c, t, &masters));
        let enc = masters.replace('=', "%3D");
        missing_context(&c.send(&t.req("GET", &format!("/_search/scroll/{enc}?scroll=1m"))));
        let q = format!("/_search/scroll?scroll=1m&scroll%5Fid={enc}");
        missing_context(&c.send(&t.req("GET", &q)));
        let r = c.send(&t.json(
            "DELETE",
            "/_search/scroll",
            &json!({"scroll_id": [masters]}),
        ));
        missing_context(&r);
        let pit = json!({"pit": {"id": master_pit}, "size": 10});
        missing_context(&c.send(&t.json("POST", "/_search", &pit)));
        let r = c.send(&t.json("DELETE", "/_pit", &json!({"id": master_pit})));
        if std::ptr::eq(t, &web) {
            forbidden(&r, "web", "DELETE _pit");
        } else {
            missing_context(&r);
        }
    }
    // the places the edge would not read
    let src = format!("/_search?source_content_type=application/json&source=%7B%22pit%22%3A%7B%22id%22%3A%22{master_pit}%22%7D%7D");
    c.send(&other.req("GET", &src)).assert_es_error(400);
    let tpl = json!({"source": {"pit": {"id": "{{id}}"}}, "params": {"id": master_pit}});
    for path in [
        "/_search/template",
        "/_msearch/template",
        "/_sql?format=json",
    ] {
        let r = c.send(&other.json("POST", path, &tpl));
        assert!(r.status == 403 || r.status == 501, "{path}: {}", r.text());
        assert!(!r.text().contains("secret page"), "{}", r.text());
    }
    let r = c.send(&other.req("GET", "/_search/point_in_time/_all"));
    forbidden(&r, "other", "GET _search/point_in_time/_all");
    let dup = format!(r#"{{"pit":{{"id":"x"}},"pit":{{"id":"{master_pit}"}}}}"#);
    let r = c.send(
        &other
            .req("POST", "/_search")
            .header("Content-Type", "application/json")
            .body(dup),
    );
    r.assert_es_error(400);
    // the master's contexts survived all of it
    assert_eq!(next_page(&mut c, &master, &masters).status, 200);
    let pit = json!({"pit": {"id": master_pit}, "size": 10});
    let r = c.send(&master.json("POST", "/_search", &pit));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(hit_indices(&r.json()), ["secret", "secret"]);

    // a key's own scroll: sealed, for it alone
    let webs = open_scroll(&mut c, &web, "/site1/_search");
    assert!(webs.starts_with("sg1."), "{webs}");
    let r = next_page(&mut c, &web, &webs);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json()["_scroll_id"],
        webs.as_str(),
        "one token per scroll"
    );
    missing_context(&next_page(&mut c, &other, &webs));
    let r = c.send(&other.json("DELETE", "/_search/scroll", &json!({"scroll_id": webs})));
    missing_context(&r);
    let mut tampered = webs.clone();
    let last = if tampered.ends_with('A') { 'B' } else { 'A' };
    tampered.pop();
    tampered.push(last);
    missing_context(&next_page(&mut c, &web, &tampered));
    let r = next_page(&mut c, &master, &webs);
    assert!(r.status >= 400 && r.status < 500, "{}", r.text());
    assert_eq!(next_page(&mut c, &web, &webs).status, 200);
    let r = c.send(&web.req("DELETE", &format!("/_search/scroll/{webs}")));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["num_freed"], 1, "{}", r.text());

    // a key's own point in time, both forms
    let r = c.send(&other.req("POST", "/site1/_pit?keep_alive=5m"));
    assert_eq!(r.status, 200, "{}", r.text());
    let own = r.json()["id"].as_str().unwrap().to_string();
    assert!(own.starts_with("sg1."), "{own}");
    let search = json!({"pit": {"id": own, "keep_alive": "1m"}, "size": 10});
    let r = c.send(&other.json("POST", "/_search", &search));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["pit_id"], own.as_str(), "{}", r.text());
    assert_eq!(hit_indices(&r.json()), ["site1", "site1"]);
    missing_context(&c.send(&web.json("POST", "/_search", &search)));
    let r = c.send(&other.req("POST", "/site2/_search/point_in_time?keep_alive=5m"));
    assert_eq!(r.status, 200, "{}", r.text());
    let os = r.json()["pit_id"].as_str().unwrap().to_string();
    assert!(os.starts_with("sg1."), "{os}");
    let r = c.send(&other.json("DELETE", "/_search/point_in_time", &json!({"pit_id": [os]})));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["pits"][0]["pit_id"], os.as_str(), "{}", r.text());
    let r = c.send(&other.json("DELETE", "/_pit", &json!({"id": own})));
    assert_eq!(r.status, 200, "{}", r.text());
    bystander_answers(&mut c, &bystander);
}

/// The requests by which a search key limited to `site*` tried to read `secret`, each
/// refused (403) and never answered with its data.
fn escapes(web: &Tenant) -> Vec<e2e::Req> {
    let mut out: Vec<e2e::Req> = [
        "/secret/_search",
        "/%73ecret/_search",
        "/site1%2Csecret/_search",
        "/site*,secret/_search",
        "/site1,-x,secret/_search",
        "/sec*/_search",
        "/-site1/_search",
        "/%3Csecret%3E/_search",
        "/%3Csecret%7Bnow%2Fd%7D%3E/_search",
        "/%3Csite%7Bnow%2Fd%7B'%2C%27%7D%7D%3E/_search",
        "//secret/_search",
        "/site1/../secret/_search",
        "/site1/%2E%2E/secret/_search",
        "/secret%2F_search",
        "/.secret/_search",
        "/secret/_doc/1",
        "/secret/_count",
        "/secret/_field_caps?fields=*",
        "/_cat/indices",
        "/_sql",
        "/_tasks",
        "/_nodes",
        "/_search/point_in_time/_all",
    ]
    .iter()
    .map(|p| web.req("GET", p))
    .collect();
    let msearch = [
        "{\"index\":[\"site1\",\"secret\"]}\n{}\n",
        "{\"indices\":\"secret\"}\n{}\n",
        "{\"ind\\u0065x\":\"secret\"}\n{}\n",
        "{\"index\":\"site1\",\"index\":\"secret\"}\n{}\n",
        "{\"index\":\"site1, secret\"}\n{}\n",
        "{\"index\":\"*,-site*\"}\n{}\n",
        "{\"index\":\"_all\"}\n{}\n",
        "{\"index\":\"site1\"}\n{\"query\":{\"terms\":{\"tag\":{\"index\":\"secret\",\"id\":\"1\",\"path\":\"tag\"}}}}\n",
    ];
    for body in msearch {
        out.push(
            web.req("POST", "/_msearch")
                .header("Content-Type", "application/x-ndjson")
                .body(body),
        );
    }
    for body in [
        json!({"docs": [{"_index": ["secret"], "_id": "1"}]}),
        json!({"docs": [{"_id": "1", "index": "secret"}]}),
        json!({"ids": ["1"], "docs": [{"_index": "secret", "_id": "1"}]}),
    ] {
        out.push(web.json("POST", "/site1/_mget", &body));
    }
    out
}

// Spec 5.5, 5.8, 7 (issue 29): what held, kept so it keeps holding, on both classes.
#[test]
fn search_key_escapes_are_refused() {
    let (_engine, edge, mut c, created, bystander) = setup();
    for cl in &created {
        let master = tenant_of(cl);
        let web = key_of(
            &edge,
            cl,
            json!({"name": "web", "role": "search", "indices": ["site*"],
                "allowed_origins": ["https://good.example"]}),
        );
        for req in escapes(&web) {
            let r = c.send(&req);
            assert!(
                r.status == 403 || r.status == 400 || r.status == 501,
                "{}: {}",
                String::from_utf8_lossy(&req.head_bytes()),
                r.text()
            );
            assert!(!r.text().contains("secret page"), "{}", r.text());
        }
        for path in ["/_search?index=secret", "/site1/_search?index=secret"] {
            let r = c.send(&web.req("GET", path));
            r.assert_es_error(400);
        }
        // a bulk line with two actions is refused whoever sends it
        let writer = key_of(
            &edge,
            cl,
            json!({"name": "writer", "role": "full", "indices": ["site*"]}),
        );
        let two = "{\"index\":{\"_index\":\"secret\",\"_id\":\"9\"},\"delete\":{\"_index\":\"site1\",\"_id\":\"1\"}}\n{\"title\":\"x\"}\n";
        let r = c.send(
            &writer
                .req("POST", "/_bulk")
                .header("Content-Type", "application/x-ndjson")
                .body(two),
        );
        assert!(r.status == 403 || r.status == 400, "{}", r.text());
        // writes sent with GET by a read key change nothing
        let read = key_of(&edge, cl, json!({"name": "read", "role": "read"}));
        let doc = json!({"title": "pwned"});
        for path in [
            "/site1/_doc/9",
            "/site1/_update/1",
            "/site1/_create/9",
            "/site1/_close",
        ] {
            let r = c.send(&read.json("GET", path, &doc));
            assert!(
                r.status >= 400 || path == "/site1/_doc/9",
                "{path}: {}",
                r.text()
            );
        }
        let r = c.send(&master.req("GET", "/site1/_search?q=pwned"));
        assert_eq!(r.json()["hits"]["total"]["value"], 0, "{}", r.text());
        assert_eq!(c.send(&master.req("GET", "/site1/_count")).status, 200);

        // X-Forwarded-For counts only from a trusted proxy (none is configured)
        let ipk = key_of(
            &edge,
            cl,
            json!({"name": "office", "role": "search", "allowed_ips": ["10.0.0.0/8"]}),
        );
        for h in [
            ("X-Forwarded-For", "10.1.1.1"),
            ("X-Forwarded-For", "10.1.1.1, 127.0.0.1"),
            ("X-Real-IP", "10.1.1.1"),
            ("Forwarded", "for=10.1.1.1"),
        ] {
            let r = c.send(&ipk.req("GET", "/site1/_count").header(h.0, h.1));
            forbidden(&r, "office", "use");
        }

        // CORS: a foreign origin gets no CORS headers and no pre-check answer
        let pre = |origin: &str| {
            e2e::Req::new("OPTIONS", "/site1/_search")
                .host(&web.host)
                .no_auth()
                .header("Origin", origin)
                .header("Access-Control-Request-Method", "POST")
        };
        for origin in [
            "https://evil.example",
            "https://good.example.evil.example",
            "null",
            "https://good.example:8443",
        ] {
            let r = c.send(&pre(origin));
            assert_eq!(r.status, 401, "{origin}: {}", r.text());
            assert_eq!(r.header("access-control-allow-origin"), None, "{origin}");
            let r = c.send(&web.req("GET", "/site1/_count").header("Origin", origin));
            assert_eq!(r.status, 200);
            assert_eq!(r.header("access-control-allow-origin"), None, "{origin}");
        }
        let r = c.send(&pre("https://good.example"));
        assert_eq!(r.status, 204, "{}", r.text());
        assert!(r.body.is_empty(), "a pre-check returns no data");
        assert_eq!(
            r.header("access-control-allow-origin"),
            Some("https://good.example")
        );
    }
    bystander_answers(&mut c, &bystander);
}

// Issue 29: the keys API at and past its limits; the edge answers afterwards.
#[test]
fn key_inputs_past_their_limits() {
    let edge = Edge::start(config());
    let admin = edge.admin();
    let created = admin.create(json!({"plan": "small"}));
    let id = created["id"].as_str().unwrap().to_string();
    let path = format!("/v1/clusters/{id}/keys");
    let post = |body: Value| admin.call("POST", &path, Some(&body));
    for body in [
        json!({"name": "a".repeat(101), "role": "search"}),
        json!({"name": "a".repeat(100_000), "role": "search"}),
        json!({"name": "x\u{0}y", "role": "search"}),
        json!({"name": "a", "role": "search", "expires_at": -1}),
        json!({"name": "a", "role": "search", "expires_at": "-5m"}),
        json!({"name": "a", "role": "search", "expires_at": "99999999999999999999d"}),
        json!({"name": "a", "role": "search", "expires_at": "213503982334601d"}),
        json!({"name": "a", "role": "search", "expires_at": "+275760-09-13T00:00:00Z"}),
        json!({"name": "a", "role": "search", "expires_at": "1900-01-01T00:00:00Z"}),
        json!({"name": "a", "role": "search", "expires_at": 1e308}),
        json!({"name": "a", "role": "search", "allowed_ips": ["10.0.0.0/255"]}),
        json!({"name": "a", "role": "search", "allowed_ips": ["fe80::1%eth0"]}),
        json!({"name": "a", "role": "search", "allowed_origins": ["*"]}),
        json!({"name": "a", "role": "search", "allowed_origins": ["https://a.example\r\nX: 1"]}),
        json!({"name": "a", "role": "search", "indices": ["*".repeat(5000)]}),
    ] {
        let a = post(body.clone());
        assert_eq!(a.status, 400, "{body}: {}", a.body);
    }
    let master = tenant_of(&created);
    let far = post(json!({"name": "ключ😀", "role": "search",
        "expires_at": "9000-01-01T00:00:00Z"}))
    .expect(201);
    let t = Tenant {
        host: master.host.clone(),
        user: far["username"].as_str().unwrap().into(),
        pass: far["password"].as_str().unwrap().into(),
    };
    let mut c = edge.client();
    assert_eq!(
        c.send(&t.req("GET", "/")).status,
        200,
        "a key of the year 9000"
    );
    assert_eq!(c.send(&master.req("GET", "/")).status, 200);
}

// Issue 25 rule (no tenant makes another fail), issue 29: a key whose pattern is full of
// stars (`*a*a…*b`, which the keys API takes) against long names held the worker that
// matched them for good; four such requests at once left no worker for anyone else. Each
// is now answered (403), and the bystander with them.
#[test]
fn starred_key_patterns_hold_no_worker() {
    let edge = Edge::start(config());
    let admin = edge.admin();
    let created = admin.create(json!({"plan": "small"}));
    let other = admin.create(json!({"plan": "small"}));
    let bystander = tenant_of(&other);
    let mut c = edge.client();
    assert_eq!(c.send(&bystander.req("PUT", "/mine")).status, 200);
    let pattern = "*a".repeat(60) + "*b";
    let starred = key_of(
        &edge,
        &created,
        json!({"name": "starred", "role": "search", "indices": [pattern]}),
    );
    let long = "a".repeat(200);
    let workers: Vec<_> = (0..4)
        .map(|i| {
            let mut c = edge.client();
            let (req, action) = if i % 2 == 0 {
                (
                    starred.req("GET", &format!("/{long}/_search")),
                    "GET _search",
                )
            } else {
                let body = format!("{{\"index\":\"{long}\"}}\n{{}}\n");
                let req = starred
                    .req("POST", "/_msearch")
                    .header("Content-Type", "application/x-ndjson")
                    .body(body);
                (req, "POST _msearch")
            };
            std::thread::spawn(move || (c.send(&req), action))
        })
        .collect();
    bystander_answers(&mut c, &bystander);
    for w in workers {
        let (r, action) = w.join().unwrap();
        forbidden(&r, "starred", action);
    }
    let ok = format!("/{}b/_search", "a".repeat(200));
    let r = c.send(&starred.req("GET", &ok));
    assert_eq!(
        r.status,
        404,
        "within the pattern, no such index: {}",
        r.text()
    );
}

// Issue 29 (compression on every class), spec 7 (400, 413): a compressed body is checked
// as it will be read, inflated, on both classes: a key's forbidden index or action inside
// a gzip or deflate body (every spelling of the coding) is refused as it is in plain
// text; a coding list the edge would not read, or a bomb, never reaches the engine.
#[test]
fn compressed_bodies_carry_no_forbidden_action() {
    use crate::compress_e2e::{deflate, gzip};
    let (_engine, edge, mut c, created, bystander) = setup();
    for (cl, multitenant) in created.iter().zip([true, false]) {
        let master = tenant_of(cl);
        let web = key_of(
            &edge,
            cl,
            json!({"name": "web", "role": "search", "indices": ["site*"]}),
        );
        let writer = key_of(
            &edge,
            cl,
            json!({"name": "writer", "role": "full", "indices": ["site*"]}),
        );
        let read = key_of(&edge, cl, json!({"name": "read", "role": "read"}));
        let packed = |t: &Tenant, path: &str, ct: &str, coding: &str, body: &[u8]| {
            let bytes = if coding == "deflate" {
                deflate(body)
            } else {
                gzip(body)
            };
            t.req("POST", path)
                .header("Content-Type", ct)
                .header("Content-Encoding", coding)
                .body(bytes)
        };
        let nd = "application/x-ndjson";
        let js = "application/json";
        for coding in ["gzip", "x-gzip", "GZIP", "deflate"] {
            let msearch = b"{\"index\":\"site1\"}\n{}\n{\"index\":\"secret\"}\n{}\n";
            let r = c.send(&packed(&web, "/_msearch", nd, coding, msearch));
            forbidden(&r, "web", "POST _msearch");
            let mget = br#"{"docs":[{"_index":"secret","_id":"1"}]}"#;
            let r = c.send(&packed(&web, "/site1/_mget", js, coding, mget));
            forbidden(&r, "web", "POST _mget");
            let bulk =
                b"{\"index\":{\"_index\":\"secret\",\"_id\":\"9\"}}\n{\"title\":\"pwned\"}\n";
            let r = c.send(&packed(&writer, "/_bulk?refresh=true", nd, coding, bulk));
            forbidden(&r, "writer", "POST _bulk");
            let all = br#"{"scroll_id":["_all"]}"#;
            let mut req = packed(&read, "/_search/scroll", js, coding, all);
            req.method = "DELETE".into();
            let r = c.send(&req);
            forbidden(&r, "read", "DELETE _search/scroll");
        }
        if multitenant {
            // the tenant's own gzip bodies stay in its namespace: the bystander's `mine`
            // is neither read nor written
            let bulk = b"{\"index\":{\"_index\":\"mine\",\"_id\":\"1\"}}\n{\"t\":\"x\"}\n";
            let r = c.send(&packed(&master, "/_bulk", nd, "gzip", bulk));
            assert!(r.status == 200 || r.status == 404, "{}", r.text());
            let msearch = b"{\"index\":\"mine\"}\n{}\n";
            let r = c.send(&packed(&master, "/_msearch", nd, "deflate", msearch));
            assert_eq!(r.status, 200, "{}", r.text());
            let by = c.send(&bystander.req("GET", "/mine/_count"));
            assert_eq!(by.json()["count"], 0, "{}", by.text());
        } else {
            let masters = open_scroll(&mut c, &master, "/secret/_search");
            let body = json!({"scroll_id": masters, "scroll": "1m"}).to_string();
            let r = c.send(&packed(
                &read,
                "/_search/scroll",
                js,
                "gzip",
                body.as_bytes(),
            ));
            missing_context(&r);
        }
        // two codings, or an identity that hides a gzip body: never read as the engine would
        let msearch = gzip(b"{\"index\":\"secret\"}\n{}\n");
        for coding in ["gzip, gzip", "identity, gzip", "br"] {
            let req = web
                .req("POST", "/_msearch")
                .header("Content-Type", nd)
                .header("Content-Encoding", coding)
                .body(msearch.clone());
            let r = c.send(&req);
            assert!(r.status == 400 || r.status == 403, "{coding}: {}", r.text());
            assert!(!r.text().contains("secret page"), "{}", r.text());
        }
        let req = web
            .req("POST", "/_msearch")
            .header("Content-Type", nd)
            .header("Content-Encoding", "identity")
            .header("Content-Encoding", "gzip")
            .body(msearch.clone());
        let r = c.send(&req);
        assert!(r.status == 400 || r.status == 403, "{}", r.text());
        assert!(!r.text().contains("secret page"), "{}", r.text());
        // a bomb: 64MB of spaces in well under 100KB
        let spaces = vec![b' '; 64 << 20];
        let bomb = packed(&web, "/_msearch", nd, "gzip", &spaces);
        assert!(bomb.body.len() < 100 << 10);
        let r = c.send(&bomb);
        assert_eq!(r.status, 413, "{}", r.text());
        // compressed twice: inflated once, it is not JSON
        let r = c.send(&packed(
            &web,
            "/_msearch",
            nd,
            "gzip",
            &gzip(
                b"{}
{}
",
            ),
        ));
        r.assert_es_error(400);
        // nothing was written, the master still reads its own
        let r = c.send(&master.req("GET", "/secret/_count"));
        assert_eq!(r.json()["count"], 2, "{}", r.text());
    }
    bystander_answers(&mut c, &bystander);
}
