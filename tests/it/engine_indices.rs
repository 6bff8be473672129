//! Index endpoints over HTTP: create, exists, get, delete, mapping, settings, refresh,
//! cluster health, `_cat/indices`, and their errors (spec 2.2, 2.3, 4, 7).

use crate::support::engine_support;

use engine_support::Engine;
use serde_json::json;

#[test]
fn put_index_with_settings_and_typed_mappings() {
    let e = Engine::start();
    let mut c = e.client();
    let body = json!({"settings": {"index": {"number_of_shards": 3, "number_of_replicas": 2}},
        "mappings": {"doc": {"properties": {"title": {"type": "text"}, "n": {"type": "integer"}}}}});
    let r = c.req("PUT", "/books", Some(&body.to_string()));
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"acknowledged": true, "shards_acknowledged": true, "index": "books"})
    );
    let g = c.get("/books").json();
    assert_eq!(g["books"]["settings"]["index"]["number_of_shards"], "3");
    assert_eq!(g["books"]["settings"]["index"]["number_of_replicas"], "2");
    assert_eq!(
        g["books"]["mappings"]["doc"]["properties"]["n"]["type"],
        "integer"
    );
}

#[test]
fn put_index_without_body_and_with_typeless_mappings() {
    let e = Engine::start();
    let mut c = e.client();
    assert_eq!(c.req("PUT", "/plain", None).status, 200);
    assert_eq!(
        c.get("/plain/_mapping").json(),
        json!({"plain": {"mappings": {}}})
    );
    let r = c.req(
        "PUT",
        "/typeless",
        Some(r#"{"mappings":{"properties":{"a":{"type":"keyword"}}}}"#),
    );
    assert_eq!(r.status, 200);
    let m = c.get("/typeless/_mapping").json();
    assert_eq!(
        m["typeless"]["mappings"]["_doc"]["properties"]["a"]["type"],
        "keyword"
    );
}

// spec 7 + Elasticsearch name rules
#[test]
fn invalid_index_names() {
    let e = Engine::start();
    let mut c = e.client();
    for name in ["Upper", "_under", "-dash", "a%20b", "a,b", "a%23b"] {
        let r = c.req("PUT", &format!("/{name}"), None);
        assert_eq!(r.status, 400, "{name}");
        assert_eq!(
            r.json()["error"]["type"],
            "invalid_index_name_exception",
            "{name}: {}",
            r.text()
        );
    }
}

#[test]
fn index_already_exists() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/dup", None);
    let r = c.req("PUT", "/dup", None);
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["error"]["type"], "resource_already_exists_exception");
    assert_eq!(v["error"]["index"], "dup");
}

#[test]
fn bad_settings_and_mappings() {
    let e = Engine::start();
    let mut c = e.client();
    let cases = [
        (
            r#"{"settings":{"number_of_shards":0}}"#,
            "illegal_argument_exception",
        ),
        (
            r#"{"settings":{"index.foo":1}}"#,
            "illegal_argument_exception",
        ),
        (
            r#"{"mappings":{"properties":{"a":{"type":"strange"}}}}"#,
            "mapper_parsing_exception",
        ),
        (
            r#"{"mappings":{"properties":{"a":{"type":"long","bogus":1}}}}"#,
            "mapper_parsing_exception",
        ),
        (r#"{"other":{}}"#, "parsing_exception"),
        ("{broken", "x_content_parse_exception"),
    ];
    for (i, (body, kind)) in cases.iter().enumerate() {
        let r = c.req("PUT", &format!("/bad{i}"), Some(body));
        assert_eq!(r.status, 400, "{body}");
        assert_eq!(r.json()["error"]["type"], *kind, "{body}");
        assert_eq!(
            c.req("HEAD", &format!("/bad{i}"), None).status,
            404,
            "not created: {body}"
        );
    }
}

#[test]
fn head_and_delete_index() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/h1", None);
    c.req("PUT", "/h2", None);
    assert_eq!(c.req("HEAD", "/h1", None).status, 200);
    assert_eq!(c.req("HEAD", "/h3", None).status, 404);
    assert_eq!(c.req("DELETE", "/h*", None).json()["acknowledged"], true);
    assert_eq!(c.req("HEAD", "/h1", None).status, 404);
    let r = c.req("DELETE", "/h1", None);
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["type"], "index_not_found_exception");
}

#[test]
fn put_mapping_adds_fields_and_refuses_changes() {
    let e = Engine::start();
    let mut c = e.client();
    c.req(
        "PUT",
        "/m",
        Some(r#"{"mappings":{"properties":{"a":{"type":"long"}}}}"#),
    );
    let r = c.req(
        "PUT",
        "/m/_mapping",
        Some(r#"{"properties":{"b":{"type":"keyword"}}}"#),
    );
    assert_eq!(r.status, 200);
    let m = c.get("/m/_mapping").json();
    assert_eq!(
        m["m"]["mappings"]["_doc"]["properties"]["b"]["type"],
        "keyword"
    );
    let r = c.req(
        "PUT",
        "/m/_mapping",
        Some(r#"{"properties":{"a":{"type":"text"}}}"#),
    );
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["reason"],
        "mapper [a] cannot be changed from type [long] to [text]"
    );
    let all = c.get("/_mapping").json();
    assert!(all["m"]["mappings"].is_object());
}

#[test]
fn settings_get_and_update() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/s", None);
    let r = c.req(
        "PUT",
        "/s/_settings",
        Some(r#"{"index":{"number_of_replicas":0,"refresh_interval":"-1"}}"#),
    );
    assert_eq!(r.status, 200);
    let s = c.get("/s/_settings").json();
    assert_eq!(s["s"]["settings"]["index"]["number_of_replicas"], "0");
    assert_eq!(s["s"]["settings"]["index"]["refresh_interval"], "-1");
    let r = c.req("PUT", "/s/_settings", Some(r#"{"number_of_shards":4}"#));
    assert_eq!(r.status, 400);
}

#[test]
fn refresh_makes_writes_searchable() {
    let e = Engine::start();
    let mut c = e.client();
    c.req(
        "PUT",
        "/r",
        Some(r#"{"settings":{"refresh_interval":"-1"}}"#),
    );
    c.req("PUT", "/r/_doc/1", Some("{}"));
    assert_eq!(c.get("/r/_count").json()["count"], 0);
    let rr = c.req("POST", "/r/_refresh", None).json();
    assert_eq!(rr["_shards"]["successful"], 1);
    assert_eq!(c.get("/r/_count").json()["count"], 1);
    assert_eq!(c.req("POST", "/_refresh", None).status, 200);
    assert_eq!(c.req("POST", "/nope/_refresh", None).status, 404);
}

#[test]
fn cluster_health_statuses() {
    let e = Engine::start();
    let mut c = e.client();
    let h = c.get("/_cluster/health").json();
    assert_eq!(h["status"], "green");
    assert_eq!(h["number_of_nodes"], 1);
    c.req("PUT", "/rep", None);
    let h = c
        .get("/_cluster/health?wait_for_status=yellow&timeout=5s")
        .json();
    assert_eq!(
        (h["status"].as_str(), h["timed_out"].as_bool()),
        (Some("yellow"), Some(false))
    );
    assert_eq!(h["unassigned_shards"], 1);
    let r = c.get("/_cluster/health?wait_for_status=green&timeout=200ms");
    assert_eq!(r.status, 408);
    assert_eq!(r.json()["timed_out"], true);
    assert_eq!(c.get("/_cluster/health?wait_for_status=purple").status, 400);
    // a missing index is red and waited for, as Elasticsearch 7.10 does (not 404)
    let r = c.get("/_cluster/health/nope?timeout=100ms");
    assert_eq!(r.status, 408);
    let h = r.json();
    assert_eq!(
        (h["status"].as_str(), h["timed_out"].as_bool()),
        (Some("red"), Some(true))
    );
}

// spec 2.3: nine columns, in order, sizes with units
#[test]
fn cat_indices_table() {
    let e = Engine::start();
    let mut c = e.client();
    c.req(
        "PUT",
        "/cat1",
        Some(r#"{"settings":{"number_of_shards":2,"number_of_replicas":0}}"#),
    );
    c.req(
        "POST",
        "/_bulk?refresh=true",
        Some(&engine_support::bulk_body("cat1", 0, 50)),
    );
    c.req("DELETE", "/cat1/_doc/3?refresh=true", None);
    let t = c.get("/_cat/indices?v").text();
    let rows: Vec<Vec<&str>> = t.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        rows[0],
        [
            "health",
            "status",
            "index",
            "pri",
            "rep",
            "docs.count",
            "docs.deleted",
            "store.size",
            "pri.store.size"
        ]
    );
    assert_eq!(&rows[1][..6], ["green", "open", "cat1", "2", "0", "49"]);
    let size = rows[1][7];
    assert!(
        ["b", "kb", "mb"].iter().any(|u| size.ends_with(u))
            && size.chars().next().unwrap().is_ascii_digit(),
        "{size}"
    );
    let no_header = c.get("/_cat/indices/cat*").text();
    assert!(no_header.starts_with("green"));
    let j = c.get("/_cat/indices?format=json&bytes=b").json();
    assert!(j[0]["store.size"].as_str().unwrap().parse::<u64>().unwrap() > 100);
    assert_eq!(c.get("/_cat/indices/nope").status, 404);
    assert_eq!(c.get("/_cat/indices?format=yaml").status, 400);
}
