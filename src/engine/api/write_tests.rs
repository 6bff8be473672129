//! API tests of the write endpoints (bulk, single documents), without a network.

use serde_json::json;

use super::tests::{call, call_ct, engine, put};
use crate::proto::Method;

#[test]
fn bulk_items_and_errors() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    put(
        &e,
        "/b",
        json!({"mappings": {"properties": {"n": {"type": "long"}}}}),
    );
    let body = concat!(
        "{\"index\":{\"_index\":\"b\",\"_type\":\"doc\",\"_id\":\"1\"}}\n{\"n\":1}\n",
        "{\"create\":{\"_index\":\"b\",\"_id\":\"1\"}}\n{\"n\":2}\n",
        "{\"index\":{\"_index\":\"b\",\"_id\":\"2\"}}\n{\"n\":\"x\"}\n",
        "{\"index\":{\"_index\":\"missing\",\"_id\":\"3\"}}\n{\"n\":3}\n",
        "{\"update\":{\"_index\":\"b\",\"_id\":\"1\"}}\n{\"doc\":{\"m\":true}}\n",
        "{\"delete\":{\"_index\":\"b\",\"_id\":\"9\"}}\n",
        "{\"index\":{\"_index\":\"events-1\"}}\n{\"a\":\"b\"}\n",
    );
    let r = call_ct(
        &e,
        Method::Post,
        "/_bulk?refresh=true",
        body,
        Some("application/x-ndjson"),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["errors"], true);
    let items = v["items"].as_array().unwrap();
    assert_eq!(items.len(), 7);
    assert_eq!(items[0]["index"]["status"], 201);
    assert_eq!(items[1]["create"]["status"], 409);
    assert_eq!(
        items[1]["create"]["error"]["type"],
        "version_conflict_engine_exception"
    );
    assert_eq!(items[2]["index"]["status"], 400);
    assert_eq!(
        items[2]["index"]["error"]["caused_by"]["type"],
        "number_format_exception"
    );
    assert_eq!(items[3]["index"]["status"], 404);
    assert_eq!(
        items[3]["index"]["error"]["type"],
        "index_not_found_exception"
    );
    assert_eq!(items[4]["update"]["status"], 200);
    assert_eq!(items[4]["update"]["_version"], 2);
    assert_eq!(items[5]["delete"]["status"], 404);
    assert_eq!(items[5]["delete"]["result"], "not_found");
    assert_eq!(items[6]["index"]["status"], 201);
    assert_eq!(items[6]["index"]["_id"].as_str().unwrap().len(), 20);
    assert!(v["took"].is_u64());
    let g = call(&e, Method::Get, "/b/_doc/1", "").json();
    assert_eq!(g["_source"], json!({"n": 1, "m": true}));
}

#[test]
fn bulk_malformed_bodies() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    put(&e, "/b", json!({}));
    let nd = |b: &str| call_ct(&e, Method::Post, "/_bulk", b, Some("application/x-ndjson"));
    let r = nd("{\"index\":{\"_index\":\"b\"}}\n{\"a\":1}");
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("must be terminated by a newline"));
    call(&e, Method::Post, "/b/_refresh", "");
    assert_eq!(call(&e, Method::Get, "/b/_count", "").json()["count"], 0);
    let r = nd("{\"frob\":{\"_index\":\"b\"}}\n{}\n");
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("Malformed action/metadata line [1]"));
    let r = nd("{\"index\":{}}\n{}\n");
    assert_eq!(
        r.json()["error"]["type"],
        "action_request_validation_exception"
    );
    let r = nd("not json\n");
    assert_eq!(r.status, 400);
    let r = nd("");
    assert_eq!(r.status, 400);
    let r = call_ct(
        &e,
        Method::Post,
        "/b/_bulk",
        "{\"index\":{}}\n{\"a\":1}\n",
        Some("application/x-ndjson"),
    );
    assert_eq!(r.json()["items"][0]["index"]["_index"], "b");
}

#[test]
fn get_delete_update_and_source() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    put(&e, "/i", json!({}));
    call(
        &e,
        Method::Put,
        "/i/_doc/1",
        &json!({"a": 1, "b": {"c": 2}}).to_string(),
    );
    let g = call(&e, Method::Get, "/i/_doc/1?_source_includes=b", "").json();
    assert_eq!(g["_source"], json!({"b": {"c": 2}}));
    let s = call(&e, Method::Get, "/i/_source/1", "");
    assert_eq!(s.json(), json!({"a": 1, "b": {"c": 2}}));
    assert_eq!(call(&e, Method::Get, "/i/_source/2", "").status, 404);
    assert_eq!(call(&e, Method::Head, "/i/_doc/1", "").status, 200);
    let u = call(
        &e,
        Method::Post,
        "/i/_update/1",
        &json!({"doc": {"a": 5}}).to_string(),
    );
    assert_eq!(u.json()["result"], "updated");
    let u = call(
        &e,
        Method::Post,
        "/i/_update/1",
        &json!({"doc": {"a": 5}}).to_string(),
    );
    assert_eq!(u.json()["result"], "noop");
    let u = call(
        &e,
        Method::Post,
        "/i/_update/7",
        &json!({"doc": {"a": 5}}).to_string(),
    );
    assert_eq!(u.status, 404);
    assert_eq!(u.json()["error"]["type"], "document_missing_exception");
    let u = call(
        &e,
        Method::Post,
        "/i/_update/7",
        &json!({"script": "x"}).to_string(),
    );
    assert_eq!(u.status, 400);
    let c = call(&e, Method::Put, "/i/_create/1", "{}");
    assert_eq!(c.status, 409);
    let c = call(
        &e,
        Method::Put,
        "/i/_doc/1?if_seq_no=99&if_primary_term=1",
        "{}",
    );
    assert_eq!(c.status, 409);
    let del = call(&e, Method::Delete, "/i/_doc/1", "");
    assert_eq!(del.json()["result"], "deleted");
    let del = call(&e, Method::Delete, "/i/_doc/1", "");
    assert_eq!(del.status, 404);
    let g = call(&e, Method::Get, "/i/_doc/1", "");
    assert_eq!(g.status, 404);
    assert_eq!(g.json()["found"], false);
    let mg = call(
        &e,
        Method::Post,
        "/_mget",
        &json!({"docs": [{"_index": "i", "_id": "1"}, {"_index": "zz", "_id": "1"}]}).to_string(),
    );
    assert_eq!(mg.json()["docs"][0]["found"], false);
    assert_eq!(
        mg.json()["docs"][1]["error"]["type"],
        "index_not_found_exception"
    );
    assert_eq!(call(&e, Method::Put, "/i/_doc/1", "").status, 400);
}
