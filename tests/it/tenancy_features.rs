//! End-to-end (issue 10 §3): the multitenant class gets what the single-tenant class has,
//! confined to the tenant. Two multitenant clusters on the embedded engine behind
//! `searchgate serve`, a marker document each, over the plain and the TLS listener: scroll
//! (sealed ids, clear), point in time (open, search, close), `_delete_by_query`,
//! `_update_by_query`, `_reindex` within the tenant, aliases (`_aliases` actions, `PUT
//! /<index>/_alias/<name>`, `GET /_alias`), legacy, composable and component templates,
//! `_resolve/index`. Each works for the tenant and cannot reach the other: every response
//! is checked on its raw bytes (no marker of the other tenant, no prefix of either), and
//! the other tenant's data is read back unchanged at the end.

use crate::support::attacks;
use crate::support::e2e;

use e2e::{prefix_of, Edge, Req, Response, Tenant};
use serde_json::{json, Value};

/// One tenant's side of the test, on one listener.
struct Side<'a> {
    edge: &'a Edge,
    t: Tenant,
    tls: bool,
    /// Strings no response to this tenant may contain.
    secrets: Vec<String>,
}

impl Side<'_> {
    fn send(&self, req: &Req) -> Response {
        let r = if self.tls {
            self.edge.send_tls(req)
        } else {
            self.edge.send(req)
        };
        let secrets: Vec<&str> = self.secrets.iter().map(String::as_str).collect();
        attacks::confined(req, &r, &secrets);
        r
    }

    fn get(&self, target: &str) -> Response {
        self.send(&self.t.req("GET", target))
    }

    fn json(&self, method: &str, target: &str, body: Value) -> Response {
        self.send(&self.t.json(method, target, &body))
    }

    /// `method target body`, which must answer 2xx; its JSON.
    fn ok(&self, method: &str, target: &str, body: Option<Value>) -> Value {
        let r = match body {
            Some(b) => self.json(method, target, b),
            None => self.send(&self.t.req(method, target)),
        };
        assert!(
            (200..300).contains(&r.status),
            "{method} {target}: {}",
            r.text()
        );
        r.json()
    }
}

fn marker(me: &str) -> String {
    format!("{me}marker")
}

/// The documents `me` indexes into `books`: five, the first one its marker.
fn seed(s: &Side<'_>, me: &str) {
    s.ok("PUT", "/books", None);
    s.ok("PUT", &format!("/{me}-only"), None);
    for n in 0..5 {
        let who = if n == 0 {
            marker(me)
        } else {
            format!("{me} page")
        };
        s.ok(
            "PUT",
            &format!("/books/_doc/{n}"),
            Some(json!({"who": who, "n": n, "tag": "t"})),
        );
    }
    s.ok("POST", "/books/_refresh", None);
}

fn hit_ids(v: &Value) -> Vec<String> {
    v["hits"]["hits"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|h| h["_id"].as_str().unwrap().to_string())
        .collect()
}

fn total(v: &Value) -> u64 {
    v["hits"]["total"]["value"]
        .as_u64()
        .or_else(|| v["hits"]["total"].as_u64())
        .unwrap_or_else(|| panic!("a total: {v}"))
}

fn missing_context(r: &Response, what: &str) {
    assert_eq!(r.status, 404, "{what}: {}", r.text());
    let v = r.json();
    let caused = v["error"]["caused_by"]["type"].as_str().unwrap_or("");
    let root = v["error"]["root_cause"][0]["type"].as_str().unwrap_or("");
    assert!(
        caused == "search_context_missing_exception" || root == "search_context_missing_exception",
        "{what}: {v}"
    );
}

/// A token with one character of its sealed part changed.
fn tampered(token: &str) -> String {
    let mut b = token.as_bytes().to_vec();
    let i = b.len() - 3;
    b[i] = if b[i] == b'A' { b'B' } else { b'A' };
    String::from_utf8(b).unwrap()
}

// issue 10 §3: scroll (helpers.scan's requests), bound to the cluster that opened it.
fn scroll(a: &Side<'_>, b: &Side<'_>) {
    let first = a.ok("GET", "/books/_search?scroll=1m&size=2", None);
    let mut token = first["_scroll_id"]
        .as_str()
        .expect("a scroll id")
        .to_string();
    assert!(token.starts_with("sg1."), "sealed: {token}");
    let mut ids = hit_ids(&first);
    loop {
        let page = a.ok(
            "POST",
            "/_search/scroll",
            Some(json!({"scroll": "1m", "scroll_id": token})),
        );
        token = page["_scroll_id"]
            .as_str()
            .expect("a scroll id")
            .to_string();
        let got = hit_ids(&page);
        if got.is_empty() {
            break;
        }
        ids.extend(got);
    }
    ids.sort();
    assert_eq!(ids, ["0", "1", "2", "3", "4"], "each own document once");
    // the same id as a parameter and in the path
    let r = a.get(&format!("/_search/scroll?scroll=1m&scroll_id={token}"));
    assert_eq!(r.status, 200, "{}", r.text());
    // the other cluster's tenant, a tampered token, a raw id: a missing context
    let r = b.json("POST", "/_search/scroll", json!({"scroll_id": token}));
    missing_context(&r, "another cluster's scroll id");
    let r = a.json(
        "POST",
        "/_search/scroll",
        json!({"scroll_id": tampered(&token)}),
    );
    missing_context(&r, "a tampered scroll id");
    let r = a.json(
        "POST",
        "/_search/scroll",
        json!({"scroll_id": "DXF1ZXJ5QW5kRmV0Y2gBAAAAAAAAAAEWb"}),
    );
    missing_context(&r, "a raw upstream id");
    let r = b.json("DELETE", "/_search/scroll", json!({"scroll_id": token}));
    missing_context(&r, "clearing another cluster's scroll");
    let cleared = a.ok(
        "DELETE",
        "/_search/scroll",
        Some(json!({"scroll_id": [token]})),
    );
    assert_eq!(cleared["succeeded"], true, "{cleared}");
    // clearing every scroll of the upstream is not for one tenant
    assert_eq!(
        a.send(&a.t.req("DELETE", "/_search/scroll/_all")).status,
        501
    );
}

// issue 10 §3: point in time, bound to the cluster that opened it.
fn pit(a: &Side<'_>, b: &Side<'_>) {
    let opened = a.ok("POST", "/books/_pit?keep_alive=1m", None);
    let id = opened["id"].as_str().expect("a pit id").to_string();
    assert!(id.starts_with("sg1."), "sealed: {id}");
    let page = a.ok(
        "POST",
        "/_search",
        Some(json!({"pit": {"id": id, "keep_alive": "1m"}, "size": 100, "sort": [{"n": "asc"}]})),
    );
    assert_eq!(hit_ids(&page), ["0", "1", "2", "3", "4"]);
    let again = page["pit_id"].as_str().expect("a pit id in the response");
    assert!(again.starts_with("sg1."), "sealed: {again}");
    // search_after within the point in time: the sort values of the last hit seen, as
    // clients send them (with a point in time the upstream adds the `_shard_doc`
    // tiebreaker, so a hit's `sort` holds one value more than the request's `sort`)
    let after = page["hits"]["hits"][1]["sort"].clone();
    assert!(after.is_array(), "{page}");
    let next = a.ok(
        "POST",
        "/_search",
        Some(
            json!({"pit": {"id": again}, "size": 2, "sort": [{"n": "asc"}], "search_after": after}),
        ),
    );
    assert_eq!(hit_ids(&next), ["2", "3"]);
    let r = b.json("POST", "/_search", json!({"pit": {"id": id}}));
    missing_context(&r, "another cluster's pit id");
    let r = a.json("POST", "/books/_search", json!({"pit": {"id": id}}));
    assert_eq!(r.status, 400, "an index with a pit: {}", r.text());
    let r = b.json("DELETE", "/_pit", json!({"id": id}));
    missing_context(&r, "closing another cluster's pit");
    let closed = a.ok("DELETE", "/_pit", Some(json!({"id": id})));
    assert_eq!(closed["succeeded"], true, "{closed}");
}

// issue 10 §3: by-query jobs and reindex within the tenant.
fn jobs(a: &Side<'_>, suffix: &str) {
    let copy = format!("books-copy{suffix}");
    a.ok("PUT", &format!("/{copy}"), None);
    let r = a.ok(
        "POST",
        "/_reindex?refresh=true",
        Some(json!({"source": {"index": "books"}, "dest": {"index": copy}})),
    );
    assert_eq!(r["created"], 5, "{r}");
    let n = a.ok("GET", &format!("/{copy}/_count"), None);
    assert_eq!(n["count"], 5, "{n}");
    let r = a.ok(
        "POST",
        &format!("/{copy}/_update_by_query?refresh=true"),
        Some(json!({"query": {"term": {"n": 1}}, "script": {"source": "ctx._source.n += 100"}})),
    );
    assert_eq!(r["updated"], 1, "{r}");
    let r = a.ok(
        "POST",
        &format!("/{copy}/_delete_by_query?refresh=true"),
        Some(json!({"query": {"range": {"n": {"gte": 100}}}})),
    );
    assert_eq!(r["deleted"], 1, "{r}");
    // `*` is the tenant's own indices only
    let r = a.ok(
        "POST",
        "/*/_delete_by_query?refresh=true",
        Some(json!({"query": {"term": {"n": 4}}})),
    );
    assert_eq!(r["deleted"], 2, "books and the copy: {r}");
    let r = a.ok(
        "POST",
        &format!("/books,{copy}/_count"),
        Some(json!({"query": {"term": {"tag": "t"}}})),
    );
    assert_eq!(r["count"], 7, "{r}");
    // restore books' document 4 for the other listener's round
    a.ok(
        "PUT",
        "/books/_doc/4?refresh=true",
        Some(json!({"who": "page", "n": 4, "tag": "t"})),
    );
    // refused: a remote source, a job left running upstream
    let r = a.json(
        "POST",
        "/_reindex",
        json!({"source": {"index": "books", "remote": {"host": "http://127.0.0.1:9"}}, "dest": {"index": copy}}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    let r = a.json(
        "POST",
        "/_reindex?wait_for_completion=false",
        json!({"source": {"index": "books"}, "dest": {"index": copy}}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
}

// issue 10 §3: aliases point only at the tenant's own indices.
fn aliases(a: &Side<'_>, b: &Side<'_>, suffix: &str, other_full: &str) {
    let shelf = format!("shelf{suffix}");
    a.ok(
        "POST",
        "/_aliases",
        Some(json!({"actions": [{"add": {"index": "books", "alias": shelf}}]})),
    );
    let r = a.ok("GET", &format!("/{shelf}/_search"), None);
    assert_eq!(total(&r), 5, "{r}");
    assert!(r.to_string().contains("\"_index\":\"books\""), "{r}");
    let r = b.get(&format!("/{shelf}/_search"));
    assert_eq!(
        r.status,
        404,
        "the other tenant has no such alias: {}",
        r.text()
    );
    let put = format!("/books/_alias/{shelf}-put");
    a.ok("PUT", &put, Some(json!({"filter": {"term": {"n": 2}}})));
    let r = a.ok("GET", &format!("/{shelf}-put/_search"), None);
    assert_eq!(hit_ids(&r), ["2"], "a filtered alias");
    let all = a.ok("GET", "/_alias", None);
    assert!(all["books"]["aliases"][&shelf].is_object(), "{all}");
    // an alias naming the other tenant's index by its real name stays in the namespace:
    // there is no such index there
    let r = a.json(
        "POST",
        "/_aliases",
        json!({"actions": [{"add": {"index": other_full, "alias": format!("steal{suffix}")}}]}),
    );
    assert_eq!(r.status, 404, "{}", r.text());
    let r = a.json(
        "POST",
        "/_aliases",
        json!({"actions": [{"remove_index": {"index": "*"}}]}),
    );
    // deleting indices by a wildcard is not exposed, as `DELETE /<wildcard>` (501)
    r.assert_es_error(501);
    a.ok(
        "POST",
        "/_aliases",
        Some(json!({"actions": [{"remove": {"index": "books", "alias": format!("{shelf}*")}}]})),
    );
    let r = a.get(&format!("/{shelf}/_search"));
    assert_eq!(r.status, 404, "{}", r.text());
}

// issue 10 §3: index, component and legacy templates in the tenant's namespace.
fn templates(a: &Side<'_>, b: &Side<'_>, suffix: &str) {
    let c = format!("comp{suffix}");
    a.ok(
        "PUT",
        &format!("/_component_template/{c}"),
        Some(json!({"template": {"mappings": {"properties": {"k": {"type": "keyword"}}}}})),
    );
    a.ok(
        "PUT",
        &format!("/_index_template/it{suffix}"),
        Some(
            json!({"index_patterns": [format!("tpl{suffix}-*")], "composed_of": [c],
                    "template": {"aliases": {format!("tpl{suffix}-all"): {}}}}),
        ),
    );
    a.ok("PUT", &format!("/tpl{suffix}-1"), None);
    let m = a.ok("GET", &format!("/tpl{suffix}-1/_mapping"), None);
    assert!(
        m.to_string().contains("keyword"),
        "the template applied: {m}"
    );
    let r = a.ok("GET", &format!("/tpl{suffix}-all/_search"), None);
    assert_eq!(total(&r), 0, "{r}");
    // the other tenant's index of the same name gets none of it
    b.ok("PUT", &format!("/tpl{suffix}-1"), None);
    let m = b.ok("GET", &format!("/tpl{suffix}-1/_mapping"), None);
    assert!(!m.to_string().contains("keyword"), "{m}");
    let listed = a.ok("GET", "/_index_template", None);
    let names: Vec<&str> = listed["index_templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&format!("it{suffix}").as_str()), "{listed}");
    let theirs = b.ok("GET", "/_index_template", None);
    assert!(
        !theirs.to_string().contains(&format!("it{suffix}")),
        "{theirs}"
    );
    a.ok(
        "PUT",
        &format!("/_template/legacy{suffix}"),
        Some(json!({"index_patterns": [format!("leg{suffix}-*")], "mappings": {"properties": {"z": {"type": "keyword"}}}})),
    );
    let r = a.ok("GET", &format!("/_template/legacy{suffix}"), None);
    assert!(r[format!("legacy{suffix}")].is_object(), "{r}");
    // refused: a template that would bypass the plan's shard check
    let r = a.json(
        "PUT",
        &format!("/_index_template/shards{suffix}"),
        json!({"index_patterns": ["s-*"], "template": {"settings": {"number_of_shards": 50}}}),
    );
    assert_eq!(r.status, 400, "{}", r.text());
}

// issue 10 §3: `_resolve/index` lists the tenant's own indices and aliases only.
fn resolve(a: &Side<'_>, me: &str, other: &str) {
    let r = a.ok("GET", "/_resolve/index/*", None);
    let names: Vec<String> = r["indices"]
        .as_array()
        .expect("indices")
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"books".to_string()), "{r}");
    assert!(names.contains(&format!("{me}-only")), "{r}");
    assert!(!names.contains(&format!("{other}-only")), "{r}");
}

fn round(edge: &Edge, tls: bool, pa: &str, pb: &str) {
    let side = |me: &str, other: &str| Side {
        edge,
        t: edge.tenant(me),
        tls,
        secrets: vec![marker(other), pa[..20].to_string(), pb[..20].to_string()],
    };
    let (a, b) = (side("alpha", "bravo"), side("bravo", "alpha"));
    let suffix = if tls { "t" } else { "p" };
    scroll(&a, &b);
    scroll(&b, &a);
    pit(&a, &b);
    jobs(&a, suffix);
    aliases(&a, &b, suffix, &format!("{pb}bravo-only"));
    templates(&a, &b, suffix);
    resolve(&a, "alpha", "bravo");
    resolve(&b, "bravo", "alpha");
    // the other tenant's documents are untouched
    let r = b.ok("GET", "/books/_search?size=100", None);
    assert_eq!(total(&r), 5, "{r}");
    assert!(r.to_string().contains(&marker("bravo")), "{r}");
}

#[test]
fn the_multitenant_class_gets_scroll_pit_jobs_aliases_templates_resolve_confined() {
    let edge = Edge::start(attacks::two_tenants(None, true));
    let engine = edge.engine();
    for me in ["alpha", "bravo"] {
        let s = Side {
            edge: &edge,
            t: edge.tenant(me),
            tls: false,
            secrets: Vec::new(),
        };
        seed(&s, me);
    }
    let pa = prefix_of(engine, "alpha-only");
    let pb = prefix_of(engine, "bravo-only");
    round(&edge, false, &pa, &pb);
    round(&edge, true, &pa, &pb);
}
