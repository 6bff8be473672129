//! Custom routing as Elasticsearch 7.10 routes documents (issue 30; errors in spec 7's
//! shape): `routing` on writes, reads, `_bulk`, `_mget`, searches, counts and by-query
//! requests selects shards with the same hash as Elasticsearch; `_routing` is stored and
//! shown; `_routing.required` refuses what has none; aliases' `routing`, `index_routing`
//! and `search_routing` apply through the alias.

use serde_json::{json, Value};

use super::audit_tests::{get, kind, post, reason};
use super::tests::{call, call_ct, engine, put, Reply};
use super::*;
use crate::store::routing::shard_for;

/// The first `<prefix><n>` that routes to shard `want` of `shards`.
fn on_shard(prefix: &str, shards: u32, want: u16) -> String {
    (0..)
        .map(|i| format!("{prefix}{i}"))
        .find(|v| shard_for(v, shards) == want)
        .expect("some value lands on every shard")
}

/// `r`: two shards, keyword `k`.
fn two_shards(e: &Engine, name: &str, mappings: Value) -> Reply {
    put(
        e,
        &format!("/{name}"),
        json!({"settings": {"number_of_shards": 2, "number_of_replicas": 0},
               "mappings": mappings}),
    )
}

fn ndjson(e: &Engine, target: &str, body: &str) -> Value {
    let r = call_ct(e, Method::Post, target, body, Some("application/x-ndjson"));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn hits_ids(v: &Value) -> Vec<String> {
    let mut ids: Vec<String> = v["hits"]["hits"]
        .as_array()
        .unwrap_or(&vec![])
        .iter()
        .map(|h| h["_id"].as_str().unwrap_or_default().to_string())
        .collect();
    ids.sort();
    ids
}

/// The values the end-to-end tests (tests/it/engine_routing.rs) rely on, computed by an
/// independent murmur3 implementation.
#[test]
fn routing_values_of_the_end_to_end_tests() {
    assert_eq!(shard_for("a", 2), 0);
    assert_eq!(shard_for("b", 2), 1);
    assert_eq!(shard_for("doc-1", 2), 0);
}

#[test]
fn a_routed_document_lives_on_its_routings_shard() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    assert_eq!(two_shards(&e, "r", json!({})).status, 200);
    let (r0, r1) = (on_shard("u", 2, 0), on_shard("u", 2, 1));
    // the id alone routes to shard 0; the routing puts the document on shard 1
    let id = on_shard("doc", 2, 0);
    let w = put(&e, &format!("/r/_doc/{id}?routing={r1}"), json!({"k": "v"}));
    assert_eq!(w.status, 201, "{}", w.text());
    // realtime: read back from the log before any refresh, with its routing
    let v = get(&e, &format!("/r/_doc/{id}?routing={r1}")).json();
    assert_eq!(
        (v["found"].clone(), v["_routing"].clone()),
        (json!(true), json!(r1)),
        "{v}"
    );
    // without routing, or with a routing of the other shard: not found, as in Elasticsearch
    assert_eq!(get(&e, &format!("/r/_doc/{id}")).status, 404);
    assert_eq!(get(&e, &format!("/r/_doc/{id}?routing={r0}")).status, 404);
    post(&e, "/r/_refresh", json!({}));
    let v = get(&e, &format!("/r/_doc/{id}?routing={r1}")).json();
    assert_eq!(v["_routing"], json!(r1), "after refresh: {v}");
    // searches with routing read the shards the values select only
    let s = get(&e, &format!("/r/_search?routing={r0}")).json();
    assert_eq!(
        (s["_shards"]["total"].clone(), hits_ids(&s).len()),
        (json!(1), 0),
        "{s}"
    );
    let s = get(&e, &format!("/r/_search?routing={r1}")).json();
    assert_eq!(s["_shards"]["total"], 1, "{s}");
    assert_eq!(s["hits"]["hits"][0]["_routing"], json!(r1), "{s}");
    let s = get(&e, &format!("/r/_search?routing={r0},{r1}")).json();
    assert_eq!(
        (s["_shards"]["total"].clone(), hits_ids(&s)),
        (json!(2), vec![id.clone()])
    );
    let c = get(&e, &format!("/r/_count?routing={r0}")).json();
    assert_eq!(
        (c["count"].clone(), c["_shards"]["total"].clone()),
        (json!(0), json!(1))
    );
    let c = get(&e, "/r/_count").json();
    assert_eq!(
        (c["count"].clone(), c["_shards"]["total"].clone()),
        (json!(1), json!(2))
    );
    // an update keeps the routing; a delete without it misses the document
    let u = post(
        &e,
        &format!("/r/_update/{id}?routing={r1}&refresh=true"),
        json!({"doc": {"k": "w"}}),
    );
    assert_eq!(u.status, 200, "{}", u.text());
    let s = get(&e, &format!("/r/_search?routing={r1}")).json();
    assert_eq!(s["hits"]["hits"][0]["_routing"], json!(r1), "{s}");
    assert_eq!(s["hits"]["hits"][0]["_source"]["k"], "w", "{s}");
    let del = call(&e, Method::Delete, &format!("/r/_doc/{id}"), "");
    assert_eq!(del.json()["result"], "not_found", "{}", del.text());
    let del = call(
        &e,
        Method::Delete,
        &format!("/r/_doc/{id}?routing={r1}"),
        "",
    );
    assert_eq!(del.json()["result"], "deleted", "{}", del.text());
}

#[test]
fn bulk_mget_msearch_and_by_query_requests_carry_routing() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    two_shards(&e, "r", json!({"properties": {"k": {"type": "keyword"}}}));
    let (r0, r1) = (on_shard("u", 2, 0), on_shard("u", 2, 1));
    let body = format!(
        "{{\"index\":{{\"_index\":\"r\",\"_id\":\"a\",\"routing\":\"{r0}\"}}}}\n{{\"k\":\"x\"}}\n\
         {{\"index\":{{\"_index\":\"r\",\"_id\":\"b\",\"_routing\":\"{r1}\"}}}}\n{{\"k\":\"x\"}}\n\
         {{\"create\":{{\"_index\":\"r\",\"_id\":\"c\"}}}}\n{{\"k\":\"x\"}}\n"
    );
    let v = ndjson(&e, &format!("/_bulk?refresh=true&routing={r1}"), &body);
    assert_eq!(v["errors"], false, "{v}");
    // `c` took the request's routing
    let m = post(
        &e,
        "/r/_mget",
        json!({"docs": [{"_id": "a", "routing": r0}, {"_id": "b", "routing": r1},
                        {"_id": "c", "routing": r1}, {"_id": "a", "routing": r1}]}),
    )
    .json();
    let routings: Vec<Value> = (0..4).map(|i| m["docs"][i]["_routing"].clone()).collect();
    assert_eq!(
        routings,
        vec![json!(r0), json!(r1), json!(r1), Value::Null],
        "{m}"
    );
    assert_eq!(m["docs"][3]["found"], false, "{m}");
    let ms = ndjson(
        &e,
        "/r/_msearch",
        &format!("{{\"routing\":\"{r1}\"}}\n{{}}\n{{}}\n{{}}\n"),
    );
    assert_eq!(hits_ids(&ms["responses"][0]), vec!["b", "c"], "{ms}");
    assert_eq!(hits_ids(&ms["responses"][1]).len(), 3, "{ms}");
    // update_by_query rewrites each document on its own shard, keeping its routing
    let u = post(
        &e,
        "/r/_update_by_query?refresh=true",
        json!({"script": {"source": "ctx._source.k = 'y'"}}),
    );
    assert_eq!(u.json()["updated"], 3, "{}", u.text());
    let v = get(&e, &format!("/r/_doc/a?routing={r0}")).json();
    assert_eq!(
        (v["_source"]["k"].clone(), v["_routing"].clone()),
        (json!("y"), json!(r0))
    );
    assert_eq!(get(&e, "/r/_count").json()["count"], 3);
    // delete_by_query with routing touches the selected shard only
    let dq = post(
        &e,
        &format!("/r/_delete_by_query?refresh=true&routing={r1}"),
        json!({"query": {"match_all": {}}}),
    );
    assert_eq!(dq.json()["deleted"], 2, "{}", dq.text());
    assert_eq!(hits_ids(&get(&e, "/r/_search").json()), vec!["a"]);
}

#[test]
fn required_routing_refuses_what_has_none() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let r = two_shards(&e, "q", json!({"_routing": {"required": true}}));
    assert_eq!(r.status, 200, "{}", r.text());
    let m = get(&e, "/q/_mapping?include_type_name=false").json();
    assert_eq!(m["q"]["mappings"]["_routing"]["required"], true, "{m}");
    let w = put(&e, "/q/_doc/1", json!({"a": 1}));
    assert_eq!(w.status, 400, "{}", w.text());
    assert_eq!(kind(&w), "routing_missing_exception");
    assert_eq!(reason(&w), "routing is required for [q]/[_doc]/[1]");
    assert_eq!(w.json()["error"]["index"], "q", "{}", w.text());
    assert_eq!(put(&e, "/q/_doc/1?routing=x", json!({"a": 1})).status, 201);
    assert_eq!(kind(&get(&e, "/q/_doc/1")), "routing_missing_exception");
    assert_eq!(get(&e, "/q/_doc/1?routing=x").json()["_routing"], "x");
    let del = call(&e, Method::Delete, "/q/_doc/1", "");
    assert_eq!(
        (del.status, kind(&del)),
        (400, "routing_missing_exception".into())
    );
    let v = ndjson(
        &e,
        "/_bulk",
        "{\"index\":{\"_index\":\"q\",\"_id\":\"2\"}}\n{\"a\":1}\n\
         {\"index\":{\"_index\":\"q\",\"_id\":\"3\",\"routing\":\"x\"}}\n{\"a\":1}\n",
    );
    assert_eq!(v["errors"], true, "{v}");
    let item = &v["items"][0]["index"];
    assert_eq!(item["status"], 400, "{v}");
    assert_eq!(item["error"]["type"], "routing_missing_exception", "{v}");
    assert_eq!(item["_id"], "2", "{v}");
    assert_eq!(v["items"][1]["index"]["status"], 201, "{v}");
}

#[test]
fn routing_survives_a_restart_from_the_log() {
    let d = tempfile::tempdir().unwrap();
    let r1 = on_shard("u", 2, 1);
    let id = on_shard("doc", 2, 0);
    {
        let e = engine(d.path());
        two_shards(&e, "r", json!({}));
        let w = put(&e, &format!("/r/_doc/{id}?routing={r1}"), json!({"k": 1}));
        assert_eq!(w.status, 201);
    } // not refreshed: the document is in the log only
    let e = engine(d.path());
    let v = get(&e, &format!("/r/_doc/{id}?routing={r1}")).json();
    assert_eq!(v["_routing"], json!(r1), "replayed: {v}");
    let s = get(&e, &format!("/r/_search?routing={r1}")).json();
    assert_eq!(hits_ids(&s), vec![id], "{s}");
}

#[test]
fn alias_routing_applies_to_writes_reads_and_searches() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    two_shards(&e, "r", json!({}));
    let (r0, r1) = (on_shard("u", 2, 0), on_shard("u", 2, 1));
    let a = post(
        &e,
        "/_aliases",
        json!({"actions": [{"add": {"index": "r", "alias": "ra", "routing": r1}},
                           {"add": {"index": "r", "alias": "rs", "index_routing": r0,
                                    "search_routing": format!("{r0},{r1}")}}]}),
    );
    assert_eq!(a.status, 200, "{}", a.text());
    let v = get(&e, "/_alias/ra").json();
    assert_eq!(
        v["r"]["aliases"]["ra"],
        json!({"index_routing": r1, "search_routing": r1}),
        "{v}"
    );
    // a write through the alias takes its index routing
    let id = on_shard("doc", 2, 0);
    assert_eq!(
        put(&e, &format!("/ra/_doc/{id}?refresh=true"), json!({"k": 1})).status,
        201
    );
    let v = get(&e, &format!("/r/_doc/{id}?routing={r1}")).json();
    assert_eq!(v["_routing"], json!(r1), "{v}");
    assert_eq!(get(&e, &format!("/ra/_doc/{id}")).json()["found"], true);
    // a different request routing is refused with Elasticsearch's message
    let w = put(&e, &format!("/ra/_doc/x?routing={r0}"), json!({"k": 1}));
    assert_eq!(
        (w.status, kind(&w)),
        (400, "illegal_argument_exception".into())
    );
    assert_eq!(
        reason(&w),
        format!("Alias [ra] has index routing associated with it [{r1}], and was provided with routing value [{r0}], rejecting operation")
    );
    // searches: the alias's search routing, intersected with the request's
    let s = get(&e, "/ra/_search").json();
    assert_eq!(
        (s["_shards"]["total"].clone(), hits_ids(&s)),
        (json!(1), vec![id.clone()])
    );
    let s = get(&e, "/rs/_search").json();
    assert_eq!(s["_shards"]["total"], 2, "{s}");
    let s = get(&e, &format!("/rs/_search?routing={r0}")).json();
    assert_eq!(
        (s["_shards"]["total"].clone(), hits_ids(&s).len()),
        (json!(1), 0),
        "{s}"
    );
    // 7.10: an empty intersection leaves the index unrouted (every shard)
    let s = get(&e, &format!("/ra/_search?routing={r0}")).json();
    assert_eq!(s["_shards"]["total"], 2, "{s}");
    assert_eq!(get(&e, "/ra/_count").json()["_shards"]["total"], 1);
    // more than one index routing value is refused when the alias is defined
    let bad = post(
        &e,
        "/_aliases",
        json!({"actions": [{"add": {"index": "r", "alias": "two", "index_routing": "a,b"}}]}),
    );
    assert_eq!(bad.status, 400);
    assert_eq!(
        reason(&bad),
        "alias [two] has several index routing values associated with it"
    );
    assert_eq!(
        get(&e, "/_alias/two").status,
        404,
        "a refused change changes nothing"
    );
    let cat = get(&e, "/_cat/aliases/ra?h=alias,routing.index,routing.search").text();
    assert_eq!(
        cat.split_whitespace().collect::<Vec<_>>(),
        vec!["ra", &r1, &r1]
    );
}

#[test]
fn aliases_given_at_index_creation_keep_their_routing() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let r = put(
        &e,
        "/c",
        json!({"aliases": {"cr": {"routing": "1", "search_routing": "1,2"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let v = get(&e, "/_alias/cr").json();
    assert_eq!(
        v["c"]["aliases"]["cr"],
        json!({"index_routing": "1", "search_routing": "1,2"}),
        "{v}"
    );
    let bad = put(
        &e,
        "/c2",
        json!({"aliases": {"x": {"index_routing": "1,2"}}}),
    );
    assert_eq!(bad.status, 400, "{}", bad.text());
    assert_eq!(get(&e, "/c2").status, 404);
}

#[test]
fn a_point_in_time_search_refuses_routing() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    two_shards(&e, "r", json!({}));
    let s = post(
        &e,
        "/_search?routing=x",
        json!({"pit": {"id": "abc", "keep_alive": "1m"}}),
    );
    assert_eq!(s.status, 400, "{}", s.text());
    assert!(reason(&s).contains("[routing] cannot be used with point in time"));
}
