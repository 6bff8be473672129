//! API tests of the issue 14 audit, from the Elasticsearch 7.10 reference: URL parameters
//! of every endpoint (unknown ones named, `expand_wildcards`, hidden indices), cluster
//! health waits, filtered aliases through points in time and by-query requests, single
//! document reads (aliases, closed indices, `version`, `stored_fields`, `_mget` routing),
//! templates on index creation, alias actions, `_cat` columns, `_stats` levels. The search
//! side of the audit is in `search_audit_tests`.

use serde_json::{json, Value};

use super::tests::{call, call_ct, engine, put, Reply};
use super::*;

pub(super) fn post(e: &Engine, t: &str, b: Value) -> Reply {
    call(e, Method::Post, t, &b.to_string())
}

pub(super) fn get(e: &Engine, t: &str) -> Reply {
    call(e, Method::Get, t, "")
}

pub(super) fn reason(r: &Reply) -> String {
    r.json()["error"]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub(super) fn kind(r: &Reply) -> String {
    r.json()["error"]["type"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub(super) fn bulk(e: &Engine, index: &str, docs: &[Value]) {
    let mut body = String::new();
    for d in docs {
        let id = d["id"].as_str().unwrap();
        body.push_str(&format!(
            "{{\"index\":{{\"_index\":\"{index}\",\"_id\":\"{id}\"}}}}\n{d}\n"
        ));
    }
    let r = call_ct(
        e,
        Method::Post,
        "/_bulk?refresh=true",
        &body,
        Some("application/x-ndjson"),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["errors"], false, "{}", r.text());
}

/// `a` (2 shards, keyword `color`) with 6 documents, 2 of them red.
fn colors(e: &Engine) {
    let r = put(
        e,
        "/a",
        json!({"settings": {"number_of_shards": 2, "number_of_replicas": 0},
               "mappings": {"properties": {"color": {"type": "keyword"}}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let docs: Vec<Value> = (0..6)
        .map(|i| json!({"id": i.to_string(), "color": if i < 2 { "red" } else { "blue" }}))
        .collect();
    bulk(e, "a", &docs);
}

/// An engine in a fresh directory, with `colors`.
fn with_colors() -> (tempfile::TempDir, Engine) {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    colors(&e);
    (d, e)
}

/// Creates `name` with one shard and no replica.
fn plain(e: &Engine, name: &str) {
    let r = put(
        e,
        &format!("/{name}"),
        json!({"settings": {"number_of_replicas": 0}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

fn total(r: &Reply) -> u64 {
    r.json()["hits"]["total"]["value"]
        .as_u64()
        .unwrap_or_else(|| panic!("{}", r.text()))
}

#[test]
fn every_endpoint_names_parameters_it_does_not_take() {
    let (_d, e) = with_colors();
    let r = post(&e, "/a/_refresh?refersh=true", json!({}));
    assert_eq!(r.status, 400);
    assert_eq!(kind(&r), "illegal_argument_exception");
    assert_eq!(
        reason(&r),
        "request [/a/_refresh] contains unrecognized parameter: [refersh]"
    );
    let r = get(&e, "/a/_count?size=1");
    assert_eq!(r.status, 400, "_count has no size");
    let r = get(&e, "/a/_search?terminate_after=1");
    assert!(
        reason(&r).contains("[terminate_after=1] is not supported"),
        "{}",
        r.text()
    );
    let r = get(&e, "/a/_search?sise=1");
    assert!(
        reason(&r).ends_with("[sise] -> did you mean [size]?"),
        "{}",
        r.text()
    );
    assert_eq!(get(&e, "/a/_search?format=yaml").status, 400);
    assert_eq!(get(&e, "/a/_settings?include_defaults=true").status, 400);
    assert_eq!(get(&e, "/a/_settings?include_defaults=false").status, 200);
    assert_eq!(
        put(&e, "/a/_doc/9?pipeline=p", json!({"color": "x"})).status,
        400
    );
    assert_eq!(
        get(&e, "/a/_doc/9").json()["found"],
        false,
        "the refused write did nothing"
    );
    let flat = get(&e, "/a/_settings?flat_settings=true").json();
    assert_eq!(
        flat["a"]["settings"]["index.number_of_shards"], "2",
        "{flat}"
    );
    let nested = get(&e, "/a").json();
    assert_eq!(nested["a"]["settings"]["index"]["number_of_shards"], "2");
    let stats = get(&e, "/a/_stats?level=cluster").json();
    assert!(stats.get("indices").is_none(), "{stats}");
    assert_eq!(stats["_all"]["primaries"]["docs"]["count"], 6);
    assert_eq!(get(&e, "/a/_stats?level=shards").status, 400);
}

#[test]
fn expand_wildcards_closed_and_hidden_indices() {
    let (_d, e) = with_colors();
    plain(&e, "b");
    let r = put(
        &e,
        "/.h",
        json!({"settings": {"index.hidden": true, "number_of_replicas": 0}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    bulk(&e, ".h", &[json!({"id": "h1", "color": "red"})]);
    assert_eq!(post(&e, "/b/_close", json!({})).status, 200);
    let r = get(&e, "/*/_search");
    assert_eq!(total(&r), 6, "hidden and closed indices are skipped by *");
    let r = get(&e, "/*/_search?expand_wildcards=open,hidden");
    assert_eq!(total(&r), 7);
    let r = get(&e, "/.h*/_search");
    assert_eq!(total(&r), 1, "a dot pattern reaches a hidden dot index");
    let r = get(&e, "/*/_search?expand_wildcards=all");
    assert_eq!(r.status, 400);
    assert_eq!(kind(&r), "index_closed_exception");
    let r = get(
        &e,
        "/*/_search?expand_wildcards=all&ignore_unavailable=true",
    );
    assert_eq!(total(&r), 7);
    assert_eq!(
        get(&e, "/*/_search?expand_wildcards=none").json()["hits"]["total"]["value"],
        0
    );
    assert_eq!(get(&e, "/*/_search?expand_wildcards=sometimes").status, 400);
    let cat = get(&e, "/_cat/indices?h=index&s=index&expand_wildcards=open").text();
    assert_eq!(cat, "a\n");
    let cat = get(&e, "/_cat/indices?h=index&s=index").text();
    assert_eq!(
        cat, "a\nb\n",
        "closed indices are listed by default, hidden ones not"
    );
    // _open expands to closed indices by default
    assert_eq!(post(&e, "/b*/_open", json!({})).status, 200);
    assert_eq!(get(&e, "/b/_count").json()["count"], 0);
}

#[test]
fn cluster_health_waits_and_times_out() {
    let (_d, e) = with_colors();
    assert_eq!(
        put(&e, "/r", json!({"settings": {"number_of_replicas": 1}})).status,
        200
    );
    let r = get(&e, "/_cluster/health/a?wait_for_status=green&timeout=5s");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"], "green");
    assert_eq!(r.json()["timed_out"], false);
    // one node: a replica is never assigned, so green never comes
    let r = get(&e, "/_cluster/health?wait_for_status=green&timeout=50ms");
    assert_eq!(r.status, 408);
    assert_eq!(r.json()["timed_out"], true);
    assert_eq!(r.json()["status"], "yellow");
    let r = get(&e, "/_cluster/health?wait_for_active_shards=all&timeout=0s");
    assert_eq!(r.status, 408);
    let r = get(
        &e,
        "/_cluster/health?wait_for_active_shards=3&wait_for_nodes=>=1",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    // a missing index is red and waited for
    let r = get(&e, "/_cluster/health/nope?timeout=0s");
    assert_eq!(r.status, 408);
    assert_eq!(r.json()["status"], "red");
    let r = get(&e, "/_cluster/health/a,r?level=shards");
    let v = r.json();
    assert_eq!(v["indices"]["r"]["status"], "yellow", "{v}");
    assert_eq!(v["indices"]["a"]["shards"]["1"]["primary_active"], true);
    assert_eq!(v["indices"]["r"]["unassigned_shards"], 1);
    assert_eq!(get(&e, "/_cluster/health?level=nodes").status, 400);
    assert_eq!(get(&e, "/_cluster/health?wait_for_status=blue").status, 400);
}

#[test]
fn filtered_aliases_hold_through_points_in_time_and_by_query() {
    let (_d, e) = with_colors();
    let r = post(
        &e,
        "/_aliases",
        json!({"actions": [{"add": {"index": "a", "alias": "reds", "filter": {"term": {"color": "red"}}}}]}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let id = post(&e, "/reds/_pit?keep_alive=1m", json!({})).json()["id"].clone();
    let r = post(
        &e,
        "/_search",
        json!({"pit": {"id": id}, "sort": [{"_shard_doc": "asc"}]}),
    );
    assert_eq!(total(&r), 2, "{}", r.text());
    let sort = &r.json()["hits"]["hits"][0]["sort"];
    assert_eq!(
        sort.as_array().map(Vec::len),
        Some(1),
        "explicit _shard_doc: {sort}"
    );
    let r = post(
        &e,
        "/reds/_update_by_query?refresh=true",
        json!({"script": "ctx._source.seen = true"}),
    );
    assert_eq!(r.json()["updated"], 2, "{}", r.text());
    let r = post(
        &e,
        "/reds/_delete_by_query?refresh=true",
        json!({"query": {"match_all": {}}}),
    );
    assert_eq!(r.json()["deleted"], 2, "{}", r.text());
    assert_eq!(
        get(&e, "/a/_count").json()["count"],
        4,
        "only the alias's documents went"
    );
    // keep-alive: over 24h is refused; a short one runs out
    assert_eq!(post(&e, "/a/_pit?keep_alive=25h", json!({})).status, 400);
    let short = post(&e, "/a/_pit?keep_alive=1ms", json!({})).json()["id"].clone();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let r = post(&e, "/_search", json!({"pit": {"id": short}}));
        if r.status == 404 {
            assert_eq!(
                r.json()["error"]["root_cause"][0]["type"],
                "search_context_missing_exception"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the point in time never expired"
        );
        std::thread::yield_now();
    }
}

#[test]
fn single_document_reads() {
    let (_d, e) = with_colors();
    assert_eq!(
        put(&e, "/a/_doc/r1?routing=zz", json!({"color": "green"})).status,
        201
    );
    let r = post(
        &e,
        "/_aliases",
        json!({"actions": [{"add": {"index": "a", "alias": "one"}}]}),
    );
    assert_eq!(r.status, 200);
    let v = get(&e, "/one/_doc/3").json();
    assert_eq!(v["_index"], "a", "{v}");
    assert_eq!(v["_source"]["color"], "blue");
    let r = get(&e, "/a/_doc/3?version=2");
    assert_eq!(r.status, 409);
    assert_eq!(kind(&r), "version_conflict_engine_exception");
    assert_eq!(get(&e, "/a/_doc/3?version=1").status, 200);
    let v = get(&e, "/a/_doc/3?stored_fields=color").json();
    assert!(v.get("_source").is_none(), "{v}");
    assert_eq!(v["found"], true);
    let v = get(&e, "/a/_source/3?_source_includes=nothing").json();
    assert_eq!(v, json!({}));
    let v = get(&e, "/a/_doc/r1?routing=zz&refresh=true").json();
    assert_eq!(v["found"], true);
    let m = post(
        &e,
        "/_mget",
        json!({"docs": [{"_index": "a", "_id": "r1", "routing": "zz", "_source": false},
                        {"_index": "one", "_id": "0"},
                        {"_index": "nope", "_id": "0"}]}),
    )
    .json();
    assert_eq!(m["docs"][0]["found"], true, "{m}");
    assert!(m["docs"][0].get("_source").is_none());
    assert_eq!(m["docs"][1]["_source"]["color"], "red");
    assert_eq!(m["docs"][2]["error"]["type"], "index_not_found_exception");
    assert_eq!(
        post(
            &e,
            "/_mget",
            json!({"docs": [{"_index": "a", "_id": "0", "zz": 1}]})
        )
        .status,
        400
    );
    assert_eq!(post(&e, "/a/_close", json!({})).status, 200);
    let r = get(&e, "/a/_doc/3");
    assert_eq!(r.status, 400);
    assert_eq!(kind(&r), "index_closed_exception");
}

#[test]
fn templates_apply_on_creation_and_refuse_ambiguity() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let r = put(
        &e,
        "/_component_template/shards",
        json!({"template": {"settings": {"number_of_shards": 3}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = put(
        &e,
        "/_index_template/logs",
        json!({"index_patterns": ["logs*"], "priority": 10, "composed_of": ["shards"],
               "template": {"mappings": {"properties": {"level": {"type": "keyword"}}},
                            "aliases": {"all-logs": {}}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = put(
        &e,
        "/_template/legacy",
        json!({"index_patterns": ["logs*", "other*"], "order": 1,
        "settings": {"number_of_shards": 5}}),
    );
    assert_eq!(r.status, 200);
    // a write to a whitelisted name creates the index from the composable template
    let r = put(&e, "/logstash-1/_doc/1", json!({"level": "info"}));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = put(&e, "/logs-x", json!({}));
    assert_eq!(r.status, 200);
    let v = get(&e, "/logs-x").json();
    assert_eq!(
        v["logs-x"]["settings"]["index"]["number_of_shards"], "3",
        "{v}"
    );
    assert_eq!(
        v["logs-x"]["mappings"]["_doc"]["properties"]["level"]["type"], "keyword",
        "{v}"
    );
    assert!(v["logs-x"]["aliases"].get("all-logs").is_some(), "{v}");
    let v = get(&e, "/logstash-1").json();
    assert_eq!(
        v["logstash-1"]["settings"]["index"]["number_of_shards"], "3",
        "{v}"
    );
    assert_eq!(put(&e, "/other-1", json!({})).status, 200);
    let v = get(&e, "/other-1/_settings").json();
    assert_eq!(
        v["other-1"]["settings"]["index"]["number_of_shards"], "5",
        "legacy template"
    );
    let r = put(
        &e,
        "/_index_template/clash",
        json!({"index_patterns": ["*-x"], "priority": 10}),
    );
    assert_eq!(r.status, 400);
    assert!(reason(&r).contains("same priority [10]"), "{}", r.text());
    let r = put(
        &e,
        "/_index_template/ds",
        json!({"index_patterns": ["ds*"], "data_stream": {}}),
    );
    assert_eq!(r.status, 400);
    let r = put(
        &e,
        "/_template/bad",
        json!({"index_patterns": ["z*"], "priority": 1}),
    );
    assert_eq!(kind(&r), "parse_exception");
}

#[test]
fn alias_actions_and_cat_columns() {
    let (_d, e) = with_colors();
    plain(&e, "b");
    let r = post(
        &e,
        "/_aliases",
        json!({"actions": [{"remove": {"index": "a", "alias": "x", "filter": {}}}]}),
    );
    assert_eq!(r.status, 400);
    assert_eq!(reason(&r), "[filter] is unsupported for [remove]");
    let r = post(
        &e,
        "/_aliases",
        json!({"actions": [
        {"add": {"index": "a", "alias": "w"}}, {"add": {"index": "b", "alias": "w"}}]}),
    );
    assert_eq!(r.status, 200);
    let r = put(&e, "/w/_doc/1", json!({"color": "x"}));
    assert_eq!(r.status, 400, "two indices, no write index");
    assert!(reason(&r).contains("no write index is defined for alias [w]"));
    let r = post(
        &e,
        "/_aliases",
        json!({"actions": [{"add": {"index": "b", "alias": "w", "is_write_index": true}}]}),
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        put(&e, "/w/_doc/1?refresh=true", json!({"color": "x"})).status,
        201
    );
    assert_eq!(get(&e, "/b/_count").json()["count"], 1);
    let r = call(&e, Method::Delete, "/w/_doc/1?refresh=true", "");
    assert_eq!(
        r.status,
        200,
        "a delete goes to the write index too: {}",
        r.text()
    );
    assert_eq!(get(&e, "/b/_count").json()["count"], 0);
    assert_eq!(post(&e, "/b/_close", json!({})).status, 200);
    let r = call(&e, Method::Delete, "/b/_doc/1", "");
    assert_eq!(kind(&r), "index_closed_exception");
    let r = get(&e, "/_cat/indices?h=index,search.query_total");
    assert_eq!(
        r.status, 400,
        "a column Elasticsearch has and this engine does not keep"
    );
    assert_eq!(
        get(&e, "/_cat/indices?h=index,nonsense&s=index").text(),
        "a\nb\n"
    );
    let t = get(&e, "/_cat/health?ts=false&h=status").text();
    assert_eq!(t, "green\n");
    let j = get(&e, "/_cat/indices/a?format=json&bytes=b&h=i,dc,ss").json();
    assert_eq!(j[0]["i"], "a");
    assert_eq!(j[0]["dc"], "6");
    assert!(j[0]["ss"].as_str().unwrap().parse::<u64>().is_ok(), "{j}");
}

#[test]
fn write_blocks_refuse_writes_until_reset() {
    let (_d, e) = with_colors();
    let r = put(&e, "/a/_settings", json!({"index.blocks.write": true}));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = put(&e, "/a/_doc/7", json!({"color": "x"}));
    assert_eq!(r.status, 403);
    assert_eq!(kind(&r), "cluster_block_exception");
    assert_eq!(
        reason(&r),
        "index [a] blocked by: [FORBIDDEN/8/index write (api)];"
    );
    let body = "{\"delete\":{\"_index\":\"a\",\"_id\":\"1\"}}\n";
    let b = call_ct(
        &e,
        Method::Post,
        "/_bulk",
        body,
        Some("application/x-ndjson"),
    )
    .json();
    assert_eq!(b["items"][0]["delete"]["status"], 403, "{b}");
    assert_eq!(get(&e, "/a/_count").json()["count"], 6);
    let r = put(
        &e,
        "/a/_settings",
        json!({"index": {"blocks": {"write": null}}}),
    );
    assert_eq!(r.status, 200);
    assert!(
        get(&e, "/a/_settings?flat_settings=true").json()["a"]["settings"]
            .get("index.blocks.write")
            .is_none()
    );
    assert_eq!(put(&e, "/a/_doc/7", json!({"color": "x"})).status, 201);
    assert_eq!(
        put(&e, "/a/_settings", json!({"index.blocks.read": true})).status,
        400
    );
}
