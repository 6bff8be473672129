//! API tests without a network: requests go straight to `Engine::handle`.

use std::sync::Arc;

use serde_json::{json, Value};

use super::params::{segments, Params};
use super::*;
use crate::names::{AutoCreate, DEFAULT_AUTO_CREATE};
use crate::store::shard::WriterOptions;

pub(crate) fn engine(dir: &std::path::Path) -> Engine {
    let store = Store::open(
        dir,
        WriterOptions::default(),
        AutoCreate::parse(DEFAULT_AUTO_CREATE).unwrap(),
    )
    .unwrap();
    Engine {
        store: Arc::new(store),
        node: NodeInfo {
            name: "node-1".into(),
            cluster_name: "searchgate".into(),
            cluster_uuid: "u".into(),
        },
        max_body: 1 << 20,
        scrolls: Arc::new(crate::search::Scrolls::default()),
        pits: Arc::new(crate::search::Pits::default()),
    }
}

pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) content_type: String,
    pub(super) headers: Vec<(&'static str, String)>,
    pub(super) body: Vec<u8>,
}

impl Reply {
    pub(super) fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
    pub(super) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

pub(super) fn call_ct(
    e: &Engine,
    method: Method,
    target: &str,
    body: &str,
    ct: Option<&str>,
) -> Reply {
    call_full(e, method, target, body, ct, None)
}

/// A request with its Content-Type and Accept headers.
pub(super) fn call_full(
    e: &Engine,
    method: Method,
    target: &str,
    body: &str,
    ct: Option<&str>,
    accept: Option<&str>,
) -> Reply {
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let mut reader: &[u8] = body.as_bytes();
    let mut req = Request {
        method,
        path: path.to_string(),
        segments: segments(path.as_bytes()).unwrap(),
        params: Params::parse(query.map(str::as_bytes)).unwrap(),
        content_type: ct.map(String::from),
        accept: accept.map(String::from),
        has_body: !body.is_empty(),
        body: &mut reader,
        gone: &|| false,
    };
    let resp = e.handle(&mut req);
    let body = match resp.body {
        Body::Empty => vec![],
        Body::Bytes(b) => b,
        Body::Stream(f) => {
            let mut out = Vec::new();
            f(&mut out).unwrap();
            out
        }
    };
    Reply {
        status: resp.status,
        content_type: resp.content_type,
        headers: resp.headers,
        body,
    }
}

pub(super) fn call(e: &Engine, method: Method, target: &str, body: &str) -> Reply {
    call_ct(e, method, target, body, Some("application/json"))
}

pub(super) fn put(e: &Engine, t: &str, b: Value) -> Reply {
    call(e, Method::Put, t, &b.to_string())
}

#[test]
fn root_reports_version_7_10_2() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let r = call(&e, Method::Get, "/", "");
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["version"]["number"], "7.10.2");
    assert_eq!(v["version"]["build_flavor"], "default");
    assert_eq!(v["tagline"], "You Know, for Search");
    assert_eq!(r.content_type, JSON);
}

#[test]
fn media_types() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    for ct in [
        "application/vnd.elasticsearch+json; compatible-with=8",
        "application/vnd.elasticsearch+json;compatible-with=7",
    ] {
        let r = call_ct(&e, Method::Put, "/a", "{}", Some(ct));
        assert!(r.status == 200 || r.status == 400, "{ct}");
        assert!(
            r.content_type
                .starts_with("application/vnd.elasticsearch+json;compatible-with="),
            "{}",
            r.content_type
        );
    }
    let r = call_ct(&e, Method::Put, "/b", "{}", Some("text/plain"));
    assert_eq!(r.status, 406);
    let r = call_ct(
        &e,
        Method::Put,
        "/b",
        "{}",
        Some("application/vnd.elasticsearch+json; compatible-with=6"),
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "media_type_header_exception");
    let r = call_ct(
        &e,
        Method::Post,
        "/_bulk",
        "{\"index\":{\"_index\":\"logs-x\"}}\n{}\n",
        Some("application/x-ndjson"),
    );
    assert_eq!(r.status, 200);
}

// spec 4 + 2.2: create, index (201 then 200), mapping under the type, search
#[test]
fn index_document_flow() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let r = put(
        &e,
        "/books",
        json!({"settings": {"number_of_shards": 2, "number_of_replicas": 0}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["acknowledged"], true);
    let r = call(
        &e,
        Method::Post,
        "/books/doc/1?pretty",
        &json!({"title": "Dune", "year": 1965}).to_string(),
    );
    assert_eq!(r.status, 201);
    assert!(r.text().contains("\n  \"_index\" : \"books\""));
    let v = r.json();
    assert_eq!(v["_index"], "books");
    assert_eq!(v["_type"], "doc");
    assert_eq!(v["_id"], "1");
    assert_eq!(v["_version"], 1);
    assert_eq!(v["created"], true);
    assert_eq!(v["result"], "created");
    assert_eq!(
        v["_shards"],
        json!({"total": 1, "successful": 1, "failed": 0})
    );
    let v = call(
        &e,
        Method::Post,
        "/books/doc/1",
        &json!({"title": "Dune", "year": 1966}).to_string(),
    );
    assert_eq!(v.status, 200);
    assert_eq!(v.json()["created"], false);
    assert_eq!(v.json()["_version"], 2);
    let m = call(&e, Method::Get, "/books/_mapping", "").json();
    assert_eq!(
        m["books"]["mappings"]["doc"]["properties"]["year"]["type"],
        "long"
    );
    assert_eq!(
        m["books"]["mappings"]["doc"]["properties"]["title"]["type"],
        "text"
    );
    let typeless = call(
        &e,
        Method::Get,
        "/books/_mapping?include_type_name=false",
        "",
    )
    .json();
    assert_eq!(
        typeless["books"]["mappings"]["properties"]["year"]["type"],
        "long"
    );
    // the typed forms 7.10 still takes: a type, `_all`, wildcards, comma lists, with or
    // without an index; a type no index has is a 404 naming it beside what was found
    for path in [
        "/books/_mapping/doc",
        "/books/_mapping/_all",
        "/books/_mapping/d*",
        "/_mapping/doc",
        "/_mapping/_all",
        "/books/_mapping/doc?include_type_name=true",
    ] {
        let r = call(&e, Method::Get, path, "");
        assert_eq!(r.status, 200, "{path}: {}", r.json());
        let year = &r.json()["books"]["mappings"]["doc"]["properties"]["year"]["type"];
        assert_eq!(year, "long", "{path}");
    }
    let r = call(&e, Method::Get, "/books/_mapping/doc,nope", "");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"], "type [nope] missing");
    assert_eq!(r.json()["status"], 404);
    assert_eq!(
        r.json()["books"]["mappings"]["doc"]["properties"]["year"]["type"],
        "long"
    );
    let r = call(&e, Method::Get, "/_mapping/nope,x*", "");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"], "types [nope,x*] missing");
    assert_eq!(r.json()["books"]["mappings"], serde_json::json!({}));
    let r = call(
        &e,
        Method::Get,
        "/books/_mapping/doc?include_type_name=false",
        "",
    );
    assert_eq!(r.status, 400);
    assert!(r
        .text()
        .contains("Types cannot be provided in get mapping requests"));
    let g = call(&e, Method::Get, "/books/doc/1", "").json();
    assert_eq!(g["found"], true);
    assert_eq!(g["_source"]["year"], 1966);
    assert_eq!(call(&e, Method::Post, "/books/_refresh", "").status, 200);
    let s = call(&e, Method::Get, "/books/_search?q=title:dune", "").json();
    assert_eq!(s["hits"]["total"]["value"], 1);
    assert_eq!(s["hits"]["hits"][0]["_type"], "doc");
}

// spec 7: unknown index on search and on write
#[test]
fn missing_index_errors() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    for (m, t) in [
        (Method::Get, "/nope/_search"),
        (Method::Post, "/nope/_doc/1"),
        (Method::Get, "/nope/_doc/1"),
        (Method::Get, "/nope/_mapping"),
        (Method::Delete, "/nope"),
        (Method::Get, "/nope"),
    ] {
        let r = call(&e, m, t, if m == Method::Post { "{}" } else { "" });
        assert_eq!(r.status, 404, "{t}");
        let v = r.json();
        assert_eq!(v["error"]["type"], "index_not_found_exception", "{t}");
        let reason = v["error"]["reason"].as_str().unwrap();
        if m == Method::Post {
            // issue 32: a write says why it did not create the index, and how to
            assert!(
                reason.contains("create it first with PUT /nope"),
                "{reason}"
            );
        } else {
            assert!(reason.starts_with("no such index ["), "{reason}");
        }
        assert_eq!(v["error"]["resource.type"], "index_or_alias");
        assert_eq!(v["error"]["resource.id"], "nope");
        assert_eq!(v["error"]["index"], "nope");
        assert_eq!(v["status"], 404);
    }
    assert_eq!(call(&e, Method::Head, "/nope", "").status, 404);
}

#[test]
fn index_errors() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let r = call(&e, Method::Put, "/Bad", "");
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "invalid_index_name_exception");
    assert_eq!(call(&e, Method::Put, "/ok", "").status, 200);
    let r = call(&e, Method::Put, "/ok", "");
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["type"],
        "resource_already_exists_exception"
    );
    let r = put(
        &e,
        "/x",
        json!({"mappings": {"properties": {"n": {"type": "nope"}}}}),
    );
    assert_eq!(r.json()["error"]["type"], "mapper_parsing_exception");
    let r = put(&e, "/y", json!({"setings": {}}));
    assert_eq!(r.status, 400);
    let r = call(&e, Method::Put, "/z", "{not json");
    assert_eq!(r.status, 400);
    assert_eq!(call(&e, Method::Head, "/ok", "").status, 200);
    assert_eq!(
        call(&e, Method::Delete, "/ok", "").json()["acknowledged"],
        true
    );
    assert_eq!(call(&e, Method::Head, "/ok", "").status, 404);
}

// spec 7: a string in a long field is 400 mapper_parsing_exception / number_format_exception
#[test]
fn type_mismatch_is_refused_and_not_stored() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    put(
        &e,
        "/m",
        json!({"mappings": {"properties": {"n": {"type": "long"}}}}),
    );
    let r = call(
        &e,
        Method::Put,
        "/m/_doc/1?refresh=true",
        &json!({"n": "abc"}).to_string(),
    );
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["error"]["type"], "mapper_parsing_exception");
    assert_eq!(v["error"]["caused_by"]["type"], "number_format_exception");
    assert_eq!(call(&e, Method::Get, "/m/_doc/1", "").status, 404);
    assert_eq!(call(&e, Method::Get, "/m/_count", "").json()["count"], 0);
}

#[test]
fn routing_errors() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let r = call(&e, Method::Get, "/_bulk", "");
    assert_eq!(r.status, 405);
    assert!(r
        .headers
        .iter()
        .any(|(k, v)| *k == "Allow" && v.contains("POST")));
    let r = call(&e, Method::Get, "/_snapshot/repo", "");
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("no handler found for uri"));
    assert_eq!(call(&e, Method::Patch, "/x", "").status, 405);
}

#[test]
fn search_count_msearch() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    put(&e, "/s0", json!({}));
    put(&e, "/s1", json!({}));
    for i in 0..5 {
        call(
            &e,
            Method::Put,
            &format!("/s{}/_doc/{i}", i % 2),
            &json!({"n": i, "t": "hello world"}).to_string(),
        );
    }
    call(&e, Method::Post, "/_refresh", "");
    let s = call(
        &e,
        Method::Post,
        "/s*/_search",
        &json!({"query": {"range": {"n": {"gte": 1}}}, "sort": ["n"]}).to_string(),
    )
    .json();
    assert_eq!(s["hits"]["total"]["value"], 4);
    assert_eq!(s["hits"]["hits"][0]["_id"], "1");
    assert_eq!(s["_shards"]["total"], 2);
    let c = call(&e, Method::Get, "/s0,s1/_count?q=t:hello", "").json();
    assert_eq!(c["count"], 5);
    let body = "{\"index\":\"s0\"}\n{\"query\":{\"match_all\":{}}}\n{}\n{\"size\":0}\n{\"index\":\"nope\"}\n{}\n";
    let m = call_ct(
        &e,
        Method::Post,
        "/_msearch",
        body,
        Some("application/x-ndjson"),
    )
    .json();
    assert_eq!(m["responses"][0]["hits"]["total"]["value"], 3);
    assert_eq!(m["responses"][0]["status"], 200);
    assert_eq!(m["responses"][1]["hits"]["total"]["value"], 5);
    assert_eq!(m["responses"][2]["status"], 404);
    let bad = call(
        &e,
        Method::Post,
        "/_search",
        &json!({"query": {"nope": {}}}).to_string(),
    );
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["error"]["type"], "parsing_exception");
    let all = call(&e, Method::Get, "/_search?size=0", "").json();
    assert_eq!(all["hits"]["total"]["value"], 5);
}

// spec 2.4: page dates are Unix seconds; a range on a field mapped `epoch_second` reads
// numeric bounds in seconds and string bounds with the field's format (or the query's).
#[test]
fn date_ranges_follow_the_fields_epoch_unit() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let mapping = json!({"mappings": {"properties": {
        "secs": {"type": "date", "format": "epoch_second"},
        "both": {"type": "date", "format": "epoch_second||strict_date_optional_time"},
        "millis": {"type": "date"}}}});
    assert_eq!(put(&e, "/dates", mapping).status, 200);
    let doc = json!({"secs": 1_700_000_000, "both": 1_700_000_000, "millis": 1_700_000_000_000i64});
    let r = call(
        &e,
        Method::Put,
        "/dates/_doc/1?refresh=true",
        &doc.to_string(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let hits = |field: &str, range: Value| -> Value {
        let q = json!({"query": {"range": {field: range}}});
        let r = call(&e, Method::Post, "/dates/_search", &q.to_string());
        assert_eq!(r.status, 200, "{field}: {}", r.text());
        r.json()["hits"]["total"]["value"].clone()
    };
    // At N and N+1 second, numbers and numeric strings alike.
    assert_eq!(
        hits("secs", json!({"gte": 1_700_000_000, "lte": 1_700_000_000})),
        1
    );
    assert_eq!(hits("secs", json!({"gt": 1_700_000_000})), 0);
    assert_eq!(hits("secs", json!({"gte": "1700000000"})), 1);
    assert_eq!(hits("secs", json!({"gte": "1700000001"})), 0);
    assert_eq!(
        hits("both", json!({"gte": 1_699_999_999, "lt": 1_700_000_001})),
        1
    );
    assert_eq!(
        hits("both", json!({"gte": "2023-11-14", "lt": "2023-11-15"})),
        1
    );
    assert_eq!(hits("both", json!({"gte": "2023-11-15"})), 0);
    assert_eq!(hits("millis", json!({"gte": 1_700_000_000_000i64})), 1);
    assert_eq!(hits("millis", json!({"gt": 1_700_000_000_000i64})), 0);
    // The query's own format wins over the field's.
    let iso = json!({"gte": "2023-11-14", "format": "strict_date_optional_time"});
    assert_eq!(hits("secs", iso), 1);
    // A string the field's format cannot read: 400 naming that format.
    let q = json!({"query": {"range": {"secs": {"gte": "2023-11-14"}}}});
    let r = call(&e, Method::Post, "/dates/_search", &q.to_string());
    assert_eq!(r.status, 400);
    assert!(
        r.text().contains("with format [epoch_second]"),
        "{}",
        r.text()
    );
    // `_all` is every index, as `*`.
    let all = call(&e, Method::Get, "/_all/_search", "").json();
    assert_eq!(all["hits"]["total"]["value"], 1);
    let m = call(&e, Method::Get, "/_all/_mapping", "").json();
    assert!(m["dates"]["mappings"].is_object(), "{m}");
}

// issue 32: `_cat/shards` lists every shard copy of the indices named, primaries with
// their figures, replicas (which one node cannot hold) unassigned
#[test]
fn cat_shards_lists_primaries_and_unassigned_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let settings = r#"{"settings":{"number_of_shards":2,"number_of_replicas":1}}"#;
    assert_eq!(call(&e, Method::Put, "/books", settings).status, 200);
    assert_eq!(call(&e, Method::Put, "/other", "").status, 200);
    let r = call(
        &e,
        Method::Post,
        "/books/_doc/1?refresh=true",
        r#"{"t":"x"}"#,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = call(
        &e,
        Method::Get,
        "/_cat/shards/books?v&h=index,shard,prirep,state,docs",
        "",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let rows: Vec<Vec<String>> = r
        .text()
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect();
    assert_eq!(rows[0], ["index", "shard", "prirep", "state", "docs"]);
    assert_eq!(rows.len(), 5, "{rows:?}");
    let primaries: Vec<&Vec<String>> = rows.iter().filter(|r| r[2] == "p").collect();
    assert_eq!(primaries.len(), 2);
    assert!(primaries
        .iter()
        .all(|r| r[0] == "books" && r[3] == "STARTED"));
    let docs: u64 = primaries.iter().map(|r| r[4].parse::<u64>().unwrap()).sum();
    assert_eq!(docs, 1);
    assert_eq!(
        rows.iter()
            .filter(|r| r.get(3).map(String::as_str) == Some("UNASSIGNED"))
            .count(),
        2
    );
    let all = call(&e, Method::Get, "/_cat/shards?format=json", "").json();
    assert!(all
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["index"] == "other"));
    assert_eq!(call(&e, Method::Get, "/_cat/shards/nope", "").status, 404);
}

// issue 32: an unknown `_cat` table is named without the pattern after it (on a
// multitenant cluster that pattern is the edge's rewriting, not the client's)
#[test]
fn an_unknown_cat_table_is_named_without_its_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let r = call(&e, Method::Get, "/_cat/segments/abc*", "");
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["reason"],
        "no handler found for uri [/_cat/segments] and method [GET]"
    );
    let r = call(&e, Method::Get, "/_nothing/here", "");
    assert!(r.json()["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("[/_nothing/here]"));
}
