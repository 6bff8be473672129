//! Document endpoints over HTTP: index (typed paths, `_doc`, `_create`, generated ids),
//! get, delete, update, `_source`, `_mget`, refresh semantics, the auto-create whitelist,
//! and the errors of spec 7.

use crate::support::engine_support;

use std::time::{Duration, Instant};

use engine_support::Engine;
use serde_json::json;

// spec 4: the index response
#[test]
fn index_response_has_the_spec_fields() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/site", None);
    let r = c.req(
        "POST",
        "/site/doc/page-1?pretty",
        Some(r#"{"title":"Home","weight":1}"#),
    );
    assert_eq!(r.status, 201);
    assert!(
        r.text().contains("\n  \"_index\" : \"site\",\n"),
        "pretty: {}",
        r.text()
    );
    let v = r.json();
    assert_eq!(v["_index"], "site");
    assert_eq!(v["_type"], "doc");
    assert_eq!(v["_id"], "page-1");
    assert!(v["_version"].is_u64());
    assert_eq!(
        v["_shards"],
        json!({"total": 2, "successful": 1, "failed": 0})
    );
    assert_eq!(v["created"], true);
    assert_eq!(v["result"], "created");
    assert_eq!(v["_seq_no"], 0);
    assert_eq!(v["_primary_term"], 1);
    let r = c.req("PUT", "/site/doc/page-1", Some(r#"{"title":"Home 2"}"#));
    assert_eq!(r.status, 200);
    assert_eq!(
        (r.json()["created"].as_bool(), r.json()["_version"].as_u64()),
        (Some(false), Some(2))
    );
}

#[test]
fn generated_ids_and_create() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/g", None);
    let r = c.req("POST", "/g/_doc", Some(r#"{"a":1}"#));
    assert_eq!(r.status, 201);
    let id = r.json()["_id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 20);
    assert_eq!(c.get(&format!("/g/_doc/{id}")).json()["_source"]["a"], 1);
    assert_eq!(c.req("PUT", "/g/_create/x", Some("{}")).status, 201);
    let r = c.req("PUT", "/g/_create/x", Some("{}"));
    assert_eq!(r.status, 409);
    assert_eq!(
        r.json()["error"]["type"],
        "version_conflict_engine_exception"
    );
    assert_eq!(
        c.req("PUT", "/g/_doc/y?op_type=create", Some("{}")).status,
        201
    );
    assert_eq!(
        c.req("PUT", "/g/_doc/y?op_type=create", Some("{}")).status,
        409
    );
    assert_eq!(c.req("POST", "/g/_doc/", Some("{}")).status, 201);
}

#[test]
fn realtime_get_before_refresh() {
    let e = Engine::start();
    let mut c = e.client();
    c.req(
        "PUT",
        "/rt",
        Some(r#"{"settings":{"refresh_interval":"-1"}}"#),
    );
    c.req("PUT", "/rt/_doc/1", Some(r#"{"v":"first"}"#));
    c.req("PUT", "/rt/_doc/1", Some(r#"{"v":"second"}"#));
    let g = c.get("/rt/_doc/1").json();
    assert_eq!(
        (g["_source"]["v"].as_str(), g["_version"].as_u64()),
        (Some("second"), Some(2))
    );
    assert_eq!(c.get("/rt/_doc/1?realtime=false").status, 404);
    assert_eq!(c.get("/rt/_count").json()["count"], 0);
    c.req("DELETE", "/rt/_doc/1", None);
    assert_eq!(c.get("/rt/_doc/1").status, 404);
}

#[test]
fn refresh_true_wait_for_and_interval() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/v", None);
    let r = c.req("PUT", "/v/_doc/1?refresh=true", Some("{}"));
    assert_eq!(r.json()["forced_refresh"], true);
    assert_eq!(c.get("/v/_count").json()["count"], 1);
    assert_eq!(
        c.req("PUT", "/v/_doc/2?refresh=wait_for", Some("{}"))
            .status,
        201
    );
    assert_eq!(c.get("/v/_count").json()["count"], 2);
    c.req("PUT", "/v/_doc/3", Some("{}"));
    let start = Instant::now();
    while c.get("/v/_count").json()["count"] != 3 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "not visible within the refresh interval"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        c.req("PUT", "/v/_doc/4?refresh=maybe", Some("{}")).status,
        400
    );
}

// spec 2.2 / 7: writes to missing indices, and the whitelist
#[test]
fn auto_create_whitelist() {
    let e = Engine::start();
    let mut c = e.client();
    for name in [
        "logstash-2024.01.01",
        "requests-a",
        "events",
        ".kibana_1",
        "kibana-int-x",
    ] {
        let r = c.req("PUT", &format!("/{name}/_doc/1"), Some(r#"{"n":1}"#));
        assert_eq!(r.status, 201, "{name}: {}", r.text());
    }
    let r = c.req("PUT", "/books/doc/1", Some(r#"{"n":1}"#));
    assert_eq!(r.status, 404);
    let v = r.json();
    assert_eq!(v["error"]["type"], "index_not_found_exception");
    let reason = v["error"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("no such index [books]"), "{reason}");
    assert!(
        reason.ends_with("create it first with PUT /books"),
        "{reason}"
    );
    assert_eq!(v["error"]["resource.type"], "index_or_alias");
    assert_eq!(v["error"]["resource.id"], "books");
    assert_eq!(v["error"]["index"], "books");
    assert_eq!(
        v["error"]["root_cause"][0]["type"],
        "index_not_found_exception"
    );
    assert_eq!(v["status"], 404);
    assert_eq!(c.req("HEAD", "/books", None).status, 404);
}

#[test]
fn custom_whitelist_setting() {
    let tmp = tempfile::tempdir().unwrap();
    let e = Engine::start_in(
        tmp.path(),
        &["--auto-create-index", "-logs-private*,logs-*"],
    );
    let mut c = e.client();
    assert_eq!(c.req("PUT", "/logs-a/_doc/1", Some("{}")).status, 201);
    assert_eq!(
        c.req("PUT", "/logs-private-a/_doc/1", Some("{}")).status,
        404
    );
    assert_eq!(c.req("PUT", "/logstash-a/_doc/1", Some("{}")).status, 404);
}

// spec 2.2 / 7: a value that does not fit its field
#[test]
fn mapping_conflicts_are_400_and_not_stored() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/t", Some(r#"{"mappings":{"properties":{"n":{"type":"long"},"d":{"type":"date"},"b":{"type":"boolean"}}}}"#));
    let r = c.req("PUT", "/t/_doc/1", Some(r#"{"n":"not a number"}"#));
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["error"]["type"], "mapper_parsing_exception");
    assert_eq!(v["error"]["caused_by"]["type"], "number_format_exception");
    assert_eq!(v["status"], 400);
    for body in [
        r#"{"d":"yesterday"}"#,
        r#"{"b":"maybe"}"#,
        r#"{"n":{"x":1}}"#,
        "[1,2]",
        "{oops",
    ] {
        let r = c.req("PUT", "/t/_doc/2", Some(body));
        assert_eq!(r.status, 400, "{body}");
        assert_eq!(
            r.json()["error"]["type"],
            "mapper_parsing_exception",
            "{body}"
        );
    }
    assert_eq!(c.get("/t/_doc/1").status, 404);
    assert_eq!(c.get("/t/_doc/2").status, 404);
    // dynamic: the first document fixes the type
    c.req("PUT", "/logstash-t/_doc/1", Some(r#"{"count":5}"#));
    let r = c.req("PUT", "/logstash-t/_doc/2", Some(r#"{"count":"five"}"#));
    assert_eq!(
        r.json()["error"]["caused_by"]["type"],
        "number_format_exception"
    );
}

#[test]
fn delete_document() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/d", None);
    c.req("PUT", "/d/doc/1", Some("{}"));
    let r = c.req("DELETE", "/d/doc/1", None);
    assert_eq!(r.status, 200);
    assert_eq!(
        (r.json()["result"].as_str(), r.json()["_version"].as_u64()),
        (Some("deleted"), Some(2))
    );
    let r = c.req("DELETE", "/d/doc/1", None);
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["result"], "not_found");
    assert_eq!(c.req("DELETE", "/missing/_doc/1", None).status, 404);
}

#[test]
fn update_document() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/u", None);
    c.req("PUT", "/u/_doc/1", Some(r#"{"a":1,"o":{"x":1}}"#));
    let r = c.req("POST", "/u/_update/1", Some(r#"{"doc":{"o":{"y":2}}}"#));
    assert_eq!(r.json()["result"], "updated");
    assert_eq!(
        c.get("/u/_doc/1").json()["_source"],
        json!({"a": 1, "o": {"x": 1, "y": 2}})
    );
    assert_eq!(
        c.req("POST", "/u/_update/1", Some(r#"{"doc":{"a":1}}"#))
            .json()["result"],
        "noop"
    );
    let r = c.req("POST", "/u/_update/2", Some(r#"{"doc":{"a":1}}"#));
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["type"], "document_missing_exception");
    let r = c.req(
        "POST",
        "/u/_doc/2/_update",
        Some(r#"{"doc":{"a":1},"doc_as_upsert":true}"#),
    );
    assert_eq!(r.status, 201);
    let r = c.req(
        "POST",
        "/u/_update/3",
        Some(r#"{"doc":{"a":1},"upsert":{"a":0}}"#),
    );
    assert_eq!(r.status, 201);
    assert_eq!(c.get("/u/_doc/3").json()["_source"]["a"], 0);
    assert_eq!(c.req("POST", "/u/_update/3", Some("{}")).status, 400);
}

#[test]
fn source_and_mget() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/s", None);
    c.req("PUT", "/s/_doc/1", Some(r#"{"a":"x","b":2}"#));
    assert_eq!(c.get("/s/_source/1").json(), json!({"a": "x", "b": 2}));
    assert_eq!(c.get("/s/_source/9").status, 404);
    assert_eq!(c.get("/s/_doc/1?_source=false").json().get("_source"), None);
    let r = c
        .req("POST", "/s/_mget", Some(r#"{"ids":["1","9"]}"#))
        .json();
    assert_eq!(
        (
            r["docs"][0]["found"].as_bool(),
            r["docs"][1]["found"].as_bool()
        ),
        (Some(true), Some(false))
    );
}

#[test]
fn optimistic_concurrency() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/o", None);
    let r = c.req("PUT", "/o/_doc/1", Some("{}")).json();
    let seq = r["_seq_no"].as_u64().unwrap();
    assert_eq!(
        c.req(
            "PUT",
            &format!("/o/_doc/1?if_seq_no={seq}&if_primary_term=1"),
            Some("{}")
        )
        .status,
        200
    );
    assert_eq!(
        c.req(
            "PUT",
            &format!("/o/_doc/1?if_seq_no={seq}&if_primary_term=1"),
            Some("{}")
        )
        .status,
        409
    );
    assert_eq!(
        c.req(
            "PUT",
            "/o/_doc/2?version=5&version_type=external",
            Some("{}")
        )
        .json()["_version"],
        5
    );
    assert_eq!(
        c.req(
            "PUT",
            "/o/_doc/2?version=4&version_type=external",
            Some("{}")
        )
        .status,
        409
    );
    assert_eq!(c.req("PUT", "/o/_doc/2?version=4", Some("{}")).status, 400);
}

#[test]
fn one_type_per_index() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/one", None);
    assert_eq!(c.req("PUT", "/one/doc/1", Some("{}")).status, 201);
    let r = c.req("PUT", "/one/other/1", Some("{}"));
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("more than 1 type"));
    assert_eq!(
        c.req("PUT", "/one/_doc/2", Some("{}")).json()["_type"],
        "doc"
    );
}
