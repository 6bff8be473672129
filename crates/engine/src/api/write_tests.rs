//! API tests of the write endpoints (bulk, single documents), without a network.

use serde_json::json;

use super::tests::{call, call_ct, engine, put};
use searchgate_core::proto::Method;

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

/// serde_json gives two keys a meaning of their own when its `raw_value` or
/// `arbitrary_precision` feature is on: an object whose first key is
/// `$serde_json::private::RawValue` is read as the JSON text of its string value. With it
/// on, `{"docs":[{"$serde_json::private::RawValue":"{\"_index\":\"b\",\"_id\":\"1\"}"}]}`
/// sent to `/a/_mget` read index `b`'s document, while the edge's reader (and
/// Elasticsearch) see an object with one unknown key: a body the edge let through as data
/// could carry structure only the engine read (found by `fuzz/fuzz_targets/tenancy.rs`,
/// whose own serde_json read the edge's output that way). Both features stay off in every
/// build: the keys are plain keys, in requests and in stored documents.
#[test]
fn reads_serde_json_magic_keys_as_plain_keys() {
    const RAW: &str = "$serde_json::private::RawValue";
    const NUMBER: &str = "$serde_json::private::Number";
    // each token is special only as the first key of an object
    let raw: serde_json::Value = serde_json::from_str(&format!(r#"{{"{RAW}":"{{}}"}}"#)).unwrap();
    assert_eq!(raw, json!({RAW: "{}"}));
    let number: serde_json::Value =
        serde_json::from_str(&format!(r#"{{"{NUMBER}":"1"}}"#)).unwrap();
    assert_eq!(number, json!({NUMBER: "1"}));

    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    put(&e, "/a", json!({}));
    put(&e, "/b", json!({}));
    let secret = json!({"t": "secret-b"}).to_string();
    assert_eq!(
        call(&e, Method::Put, "/b/_doc/1?refresh=true", &secret).status,
        201
    );
    let smuggled = json!({RAW: json!({"_index": "b", "_id": "1"}).to_string()});
    let r = call(
        &e,
        Method::Post,
        "/a/_mget",
        &json!({ "docs": [smuggled] }).to_string(),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(!r.text().contains("secret-b"), "{}", r.text());
    let q = json!({"query": {RAW: json!({"match_all": {}}).to_string()}});
    let r = call(&e, Method::Post, "/a/_search", &q.to_string());
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.text().contains("unknown query [$serde_json"),
        "{}",
        r.text()
    );
    // a document with the keys keeps them, in a search hit and in a get
    let doc = json!({RAW: "{\"t\":1}", NUMBER: "2", "n": "x"});
    assert_eq!(
        call(&e, Method::Put, "/a/_doc/1?refresh=true", &doc.to_string()).status,
        201
    );
    let hits = call(&e, Method::Post, "/a/_search", "{}").json();
    assert_eq!(hits["hits"]["hits"][0]["_source"], doc, "{hits}");
    let got = call(&e, Method::Get, "/a/_doc/1", "").json();
    assert_eq!(got["_source"], doc, "{got}");
}

/// Elasticsearch 7.10 refuses a metadata field name (`_index`, `_id`, ...) as a field of a
/// document ("is a metadata field and cannot be added inside a document", `DocumentParser`)
/// and as a root property of a mapping ("is defined more than once", `MappingLookup`). The
/// engine mapped `{"_index":"~"}` as a text field `_index` (with `_index.keyword`), and field
/// patterns expanded over the mapping then reached the index-name target: `prefix` on
/// `_ind*`, or `query_string` with its default `*` fields (`q=<guess>*`), compared the
/// real index name with the caller's value. Through the multitenant edge, which forwards
/// documents unread and passes field names that are not `_index` (as Elasticsearch reads
/// them: no pattern expansion in term-level queries, no metadata in `*`), that was an
/// oracle on the tenant's secret prefix (attack18).
#[test]
fn metadata_fields_are_refused_in_documents_and_mappings() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    put(&e, "/sec-a", json!({}));
    for doc in [
        json!({"_index": "~"}),
        json!({"_id": "x"}),
        json!({"_routing": "r"}),
        json!({"_source": {"a": 1}}),
        json!({"_index.keyword": "~"}),
    ] {
        let r = call(
            &e,
            Method::Put,
            "/sec-a/_doc/1?refresh=true",
            &doc.to_string(),
        );
        assert_eq!(r.status, 400, "{doc}: {}", r.text());
        assert_eq!(
            r.json()["error"]["type"],
            "mapper_parsing_exception",
            "{}",
            r.text()
        );
    }
    let r = call(
        &e,
        Method::Put,
        "/sec-a/_doc/1",
        &json!({"_index": 1}).to_string(),
    );
    assert!(
        r.text()
            .contains("Field [_index] is a metadata field and cannot be added inside a document"),
        "{}",
        r.text()
    );
    // bulk items and updates are refused the same way
    let body = "{\"index\":{\"_id\":\"2\"}}\n{\"_index\":\"~\"}\n{\"update\":{\"_id\":\"3\"}}\n{\"doc\":{\"_index\":\"~\"},\"doc_as_upsert\":true}\n";
    let r = call_ct(
        &e,
        Method::Post,
        "/sec-a/_bulk?refresh=true",
        body,
        Some("application/x-ndjson"),
    );
    assert_eq!(r.json()["errors"], true, "{}", r.text());
    for item in r.json()["items"].as_array().unwrap() {
        let (_, i) = item.as_object().unwrap().iter().next().unwrap();
        assert_eq!(i["status"], 400, "{}", r.text());
    }
    // nested fields of that name are plain fields, as upstream
    let nested = json!({"o": {"_index": "~"}, "t": "plain"}).to_string();
    let r = call(&e, Method::Put, "/sec-a/_doc/4?refresh=true", &nested);
    assert_eq!(r.status, 201, "{}", r.text());
    for m in [
        json!({"properties": {"_index": {"type": "keyword"}}}),
        json!({"properties": {"_id": {"type": "keyword"}}}),
        json!({"properties": {"_index": {"properties": {"x": {"type": "keyword"}}}}}),
        json!({"properties": {"_index.x": {"type": "keyword"}}}),
    ] {
        let r = call(
            &e,
            Method::Put,
            "/sec-b",
            &json!({ "mappings": m }).to_string(),
        );
        assert_eq!(r.status, 400, "{m}: {}", r.text());
        let r = call(&e, Method::Put, "/sec-a/_mapping", &m.to_string());
        assert_eq!(r.status, 400, "{m}: {}", r.text());
    }
    // no field pattern reaches the index name: the guess would match `sec-a`
    for q in [
        json!({"prefix": {"_ind*": "sec"}}),
        json!({"wildcard": {"_i*": "sec*"}}),
        json!({"query_string": {"query": "sec*"}}),
        json!({"multi_match": {"query": "sec-a", "fields": ["*"]}}),
        json!({"exists": {"field": "_i*"}}),
    ] {
        let r = call(
            &e,
            Method::Post,
            "/sec-a/_search",
            &json!({ "query": q }).to_string(),
        );
        assert_eq!(r.status, 200, "{q}: {}", r.text());
        assert_eq!(r.json()["hits"]["total"]["value"], 0, "{q}: {}", r.text());
    }
}
