//! `_bulk` over HTTP: the three paths, the four actions, per-item errors, request-level
//! errors, and large streamed bodies (spec 4, 4.1, 7).

use crate::support::engine_support;

use engine_support::{bulk_body, Engine};

// spec 4.1: action line `{"index": {"_index", "_type", "_id"}}` then the source line
#[test]
fn spec_bulk_shape() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/site", None);
    let body = "{\"index\":{\"_index\":\"site\",\"_type\":\"doc\",\"_id\":\"/about/\"}}\n{\"objectID\":\"/about/\",\"title\":\"About\",\"date\":1700000000,\"tags\":[\"a\",\"b\"]}\n";
    let r = c.req("POST", "/_bulk", Some(body));
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["errors"], false);
    let item = &v["items"][0]["index"];
    assert_eq!(
        (
            item["_index"].as_str(),
            item["_type"].as_str(),
            item["_id"].as_str()
        ),
        (Some("site"), Some("doc"), Some("/about/"))
    );
    assert_eq!(item["status"], 201);
    let m = c.get("/site/_mapping").json();
    assert_eq!(
        m["site"]["mappings"]["doc"]["properties"]["date"]["type"],
        "long"
    );
    assert_eq!(
        m["site"]["mappings"]["doc"]["properties"]["tags"]["type"],
        "text"
    );
}

#[test]
fn index_and_typed_paths_supply_defaults() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/p", None);
    let r = c
        .req(
            "POST",
            "/p/_bulk",
            Some("{\"index\":{\"_id\":\"1\"}}\n{}\n{\"create\":{}}\n{}\n"),
        )
        .json();
    assert_eq!(r["items"][0]["index"]["_index"], "p");
    assert_eq!(r["items"][1]["create"]["status"], 201);
    let r = c
        .req(
            "PUT",
            "/p/doc/_bulk",
            Some("{\"index\":{\"_id\":\"2\"}}\n{}\n"),
        )
        .json();
    assert_eq!(r["items"][0]["index"]["_type"], "doc");
}

#[test]
fn all_four_actions_and_item_errors() {
    let e = Engine::start();
    let mut c = e.client();
    c.req(
        "PUT",
        "/a",
        Some(r#"{"mappings":{"properties":{"n":{"type":"long"}}}}"#),
    );
    let body = concat!(
        "{\"index\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"n\":1}\n",
        "{\"create\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"n\":1}\n",
        "{\"update\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"doc\":{\"m\":2}}\n",
        "{\"update\":{\"_index\":\"a\",\"_id\":\"2\"}}\n{\"doc\":{\"m\":2}}\n",
        "{\"delete\":{\"_index\":\"a\",\"_id\":\"1\"}}\n",
        "{\"index\":{\"_index\":\"a\",\"_id\":\"3\"}}\n{\"n\":\"three\"}\n",
        "{\"index\":{\"_index\":\"nope\",\"_id\":\"4\"}}\n{\"n\":4}\n",
    );
    let v = c.req("POST", "/_bulk?refresh=wait_for", Some(body)).json();
    assert_eq!(v["errors"], true);
    let statuses: Vec<u64> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            i.as_object().unwrap().values().next().unwrap()["status"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(statuses, vec![201, 409, 200, 404, 200, 400, 404]);
    assert_eq!(
        v["items"][3]["update"]["error"]["type"],
        "document_missing_exception"
    );
    assert_eq!(
        v["items"][5]["index"]["error"]["caused_by"]["type"],
        "number_format_exception"
    );
    assert!(v["items"][6]["index"]["error"]["reason"]
        .as_str()
        .unwrap()
        .ends_with("create it first with PUT /nope"));
    // issue 30: item errors name the item's id
    assert_eq!(v["items"][6]["index"]["_id"], "4");
    assert_eq!(c.get("/a/_count").json()["count"], 0);
}

#[test]
fn request_level_errors() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/b", None);
    let cases = [
        (
            "{\"index\":{\"_index\":\"b\"}}\n{\"a\":1}",
            "must be terminated by a newline",
        ),
        (
            "{\"explode\":{\"_index\":\"b\"}}\n{}\n",
            "Malformed action/metadata line [1]",
        ),
        (
            "{\"index\":{\"_index\":\"b\",\"bogus\":1}}\n{}\n",
            "unknown parameter [bogus]",
        ),
        ("{\"index\":{}}\n{}\n", "index is missing"),
        ("{\"delete\":{\"_index\":\"b\"}}\n", "id is missing"),
        ("\n", "no requests added"),
    ];
    for (body, msg) in cases {
        let r = c.req("POST", "/_bulk", Some(body));
        assert_eq!(r.status, 400, "{body:?}");
        assert!(
            r.json()["error"]["reason"].as_str().unwrap().contains(msg),
            "{body:?}: {}",
            r.text()
        );
    }
    let r = c.req("POST", "/_bulk", Some("not json\n"));
    assert_eq!(r.status, 400);
    c.req("POST", "/b/_refresh", None);
    assert_eq!(c.get("/b/_count").json()["count"], 0);
}

#[test]
fn vnd_ndjson_content_type() {
    let e = Engine::start();
    let mut c = e.client();
    let body = bulk_body("logstash-v", 0, 3);
    let r = c.req_ct(
        "POST",
        "/_bulk",
        Some(body.as_bytes()),
        "application/vnd.elasticsearch+x-ndjson; compatible-with=8",
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("Content-Type"),
        Some("application/vnd.elasticsearch+json;compatible-with=8")
    );
    assert_eq!(r.json()["items"].as_array().unwrap().len(), 3);
}

// a 40MB bulk streams through: all items answered, memory does not grow by the body size
#[test]
fn forty_megabyte_bulk_streams() {
    let e = Engine::start();
    let mut c = e.client();
    c.req(
        "PUT",
        "/big",
        Some(r#"{"settings":{"number_of_replicas":0}}"#),
    );
    let filler = "x".repeat(2000);
    let mut body = String::with_capacity(41 << 20);
    let mut n = 0;
    while body.len() < 40 << 20 {
        body.push_str(&format!(
            "{{\"index\":{{\"_id\":\"{n}\"}}}}\n{{\"n\":{n},\"pad\":\"{filler}\"}}\n"
        ));
        n += 1;
    }
    let before = e.rss_kb();
    let r = c.req("POST", "/big/_bulk", Some(&body));
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["errors"], false);
    assert_eq!(v["items"].as_array().unwrap().len(), n);
    let grown = e.rss_kb().saturating_sub(before);
    eprintln!(
        "40MB bulk of {n} documents: rss grew by {} MB",
        grown / 1024
    );
    c.req("POST", "/big/_refresh", None);
    assert_eq!(c.get("/big/_count").json()["count"], n);
}
