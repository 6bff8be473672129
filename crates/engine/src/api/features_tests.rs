//! API tests of the Elasticsearch 7.10 features of issue 14, written from the reference:
//! media types, `hits.total`, `search_after`, points in time, aliases, `_close`/`_open`,
//! cluster settings, `_cat/indices` options, `_msearch` framing and `_index` queries.

use serde_json::{json, Value};

use super::tests::{call, call_ct, engine, put, Reply};
use super::*;

fn post(e: &Engine, t: &str, b: Value) -> Reply {
    call(e, Method::Post, t, &b.to_string())
}

fn get(e: &Engine, t: &str) -> Reply {
    call(e, Method::Get, t, "")
}

fn ids(v: &Value) -> Vec<String> {
    v["hits"]["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no hits: {v}"))
        .iter()
        .map(|h| h["_id"].as_str().unwrap().to_string())
        .collect()
}

/// `books` (2 shards, keyword `tag`, long `n`) with ten documents "0".."9".
fn books(e: &Engine) {
    let r = put(
        e,
        "/books",
        json!({"settings": {"number_of_shards": 2, "number_of_replicas": 0},
               "mappings": {"properties": {"tag": {"type": "keyword"}, "n": {"type": "long"},
                                           "title": {"type": "text"}}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let mut bulk = String::new();
    for i in 0..10 {
        bulk.push_str(&format!(
            "{{\"index\":{{\"_index\":\"books\",\"_id\":\"{i}\"}}}}\n"
        ));
        let tag = if i % 2 == 0 { "even" } else { "odd" };
        bulk.push_str(&format!(
            "{{\"n\":{i},\"tag\":\"{tag}\",\"title\":\"book number {i} about a fox\"}}\n"
        ));
    }
    let r = call_ct(
        e,
        Method::Post,
        "/_bulk?refresh=true",
        &bulk,
        Some("application/x-ndjson"),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["errors"], false, "{}", r.text());
}

fn with_headers(
    e: &Engine,
    method: Method,
    target: &str,
    body: &str,
    ct: Option<&str>,
    accept: Option<&str>,
) -> Reply {
    super::tests::call_full(e, method, target, body, ct, accept)
}

// Issue 14: the Node.js client 9 sends a compatible-with list in Accept.
#[test]
fn node_client_media_types_are_answered_in_kind() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    books(&e);
    let ct = "application/vnd.elasticsearch+json; compatible-with=9";
    let accept = "application/vnd.elasticsearch+json; compatible-with=9,text/plain";
    let r = with_headers(
        &e,
        Method::Post,
        "/books/_search",
        "{\"size\":1}",
        Some(ct),
        Some(accept),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.content_type,
        "application/vnd.elasticsearch+json;compatible-with=9"
    );
    let r = with_headers(&e, Method::Get, "/_cat/indices", "", None, Some(accept));
    assert_eq!(
        r.json()[0]["index"],
        "books",
        "cat answers JSON to a JSON Accept"
    );
    let r = with_headers(
        &e,
        Method::Get,
        "/_cat/indices",
        "",
        None,
        Some("text/plain"),
    );
    assert!(r.text().contains("books"));
    assert!(r.content_type.starts_with("text/plain"));
    let r = with_headers(
        &e,
        Method::Post,
        "/books/_search",
        "{}",
        Some("application/vnd.elasticsearch+json; compatible-with=8"),
        Some("application/vnd.elasticsearch+json; compatible-with=7"),
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "media_type_header_exception");
}

#[test]
fn hits_total_forms() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    books(&e);
    let v = get(&e, "/books/_search").json();
    assert_eq!(v["hits"]["total"], json!({"value": 10, "relation": "eq"}));
    let v = get(&e, "/books/_search?rest_total_hits_as_int=true").json();
    assert_eq!(v["hits"]["total"], 10);
    let v = post(&e, "/books/_search", json!({"track_total_hits": 3})).json();
    assert_eq!(v["hits"]["total"], json!({"value": 3, "relation": "gte"}));
    let v = post(&e, "/books/_search", json!({"track_total_hits": false})).json();
    assert!(v["hits"].get("total").is_none(), "{v}");
    let r = post(
        &e,
        "/books/_search?rest_total_hits_as_int=true",
        json!({"track_total_hits": 3}),
    );
    assert_eq!(r.status, 400);
    let r = post(&e, "/books/_search", json!({"track_total_hits": -5}));
    assert_eq!(r.status, 400);
    let r = post(
        &e,
        "/books/_search?scroll=1m",
        json!({"track_total_hits": false}),
    );
    assert_eq!(r.status, 400);
    assert!(r
        .text()
        .contains("disabling [track_total_hits] is not allowed in a scroll context"));
    let m = call_ct(
        &e,
        Method::Post,
        "/_msearch?rest_total_hits_as_int=true",
        "{\"index\":\"books\"}\n{}\n",
        Some("application/x-ndjson"),
    )
    .json();
    assert_eq!(m["responses"][0]["hits"]["total"], 10);
}

// search_after with an `_id` tiebreaker pages through every document once.
#[test]
fn search_after_with_id_and_doc_tiebreakers() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    books(&e);
    let mut seen = Vec::new();
    let mut after: Option<Value> = None;
    loop {
        let mut body = json!({"size": 3, "sort": [{"tag": "asc"}, {"_id": "desc"}]});
        if let Some(a) = &after {
            body["search_after"] = a.clone();
        }
        let v = post(&e, "/books/_search", body).json();
        let hits = v["hits"]["hits"].as_array().unwrap().clone();
        if hits.is_empty() {
            break;
        }
        after = Some(hits.last().unwrap()["sort"].clone());
        seen.extend(ids(&v));
    }
    assert_eq!(seen, vec!["8", "6", "4", "2", "0", "9", "7", "5", "3", "1"]);
    let v = post(&e, "/books/_search", json!({"sort": ["_doc"], "size": 20})).json();
    let sorts: Vec<i64> = v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["sort"][0].as_i64().unwrap())
        .collect();
    assert_eq!(sorts.len(), 10);
    let r = post(
        &e,
        "/books/_search",
        json!({"sort": ["n"], "search_after": [1, 2]}),
    );
    assert_eq!(r.status, 400);
    let r = post(
        &e,
        "/books/_search",
        json!({"from": 2, "sort": ["n"], "search_after": [1]}),
    );
    assert_eq!(r.status, 400);
    let r = post(&e, "/books/_search", json!({"sort": ["_shard_doc"]}));
    assert_eq!(r.status, 400);
}

#[test]
fn point_in_time_sees_the_past() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    books(&e);
    let r = post(&e, "/books/_pit?keep_alive=1m", json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_string();
    assert_eq!(
        call(&e, Method::Delete, "/books/_doc/3?refresh=true", "").status,
        200
    );
    let v = post(
        &e,
        "/_search",
        json!({"pit": {"id": id, "keep_alive": "1m"}, "size": 100, "sort": ["n"]}),
    )
    .json();
    assert_eq!(v["pit_id"], id.as_str());
    assert_eq!(
        v["hits"]["total"]["value"], 10,
        "the deleted document is still seen"
    );
    let first = &v["hits"]["hits"][0]["sort"];
    assert_eq!(
        first.as_array().unwrap().len(),
        2,
        "implicit _shard_doc tiebreaker: {first}"
    );
    assert_eq!(
        get(&e, "/books/_search").json()["hits"]["total"]["value"],
        9
    );
    let r = post(&e, "/books/_search", json!({"pit": {"id": id}}));
    assert_eq!(r.status, 400, "indices with a pit");
    let r = call(&e, Method::Delete, "/_pit", &json!({"id": id}).to_string());
    // one search context per shard, as Elasticsearch counts them
    assert_eq!(r.json(), json!({"succeeded": true, "num_freed": 2}));
    let r = post(&e, "/_search", json!({"pit": {"id": id}}));
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json()["error"]["root_cause"][0]["type"],
        "search_context_missing_exception"
    );
    assert_eq!(
        post(&e, "/books/_pit", json!({})).status,
        400,
        "keep_alive is required"
    );
}

#[test]
fn aliases_filtered_and_write() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    books(&e);
    let r = call(
        &e,
        Method::Put,
        "/books/_alias/evens",
        &json!({"filter": {"term": {"tag": "even"}}}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        get(&e, "/evens/_search").json()["hits"]["total"]["value"],
        5
    );
    assert_eq!(get(&e, "/evens/_count").json()["count"], 5);
    assert_eq!(
        get(&e, "/books/_alias/evens").json()["books"]["aliases"]["evens"]["filter"],
        json!({"term": {"tag": "even"}})
    );
    // writes through an alias with one index go to it
    let r = call(
        &e,
        Method::Put,
        "/evens/_doc/42?refresh=true",
        "{\"n\":42,\"tag\":\"even\"}",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["_index"], "books");
    // atomic actions: a refused list changes nothing
    put(&e, "/shelf", json!({}));
    let bad = json!({"actions": [{"add": {"index": "shelf", "alias": "all"}}, {"remove": {"index": "books", "alias": "nope"}}]});
    assert_eq!(post(&e, "/_aliases", bad).status, 404);
    assert_eq!(get(&e, "/_alias/all").status, 404);
    let ok = json!({"actions": [{"add": {"index": "shelf", "alias": "all", "is_write_index": true}}, {"add": {"indices": ["books"], "alias": "all"}}]});
    assert_eq!(post(&e, "/_aliases", ok).status, 200);
    let r = call(&e, Method::Post, "/all/_doc/x", "{\"a\":1}");
    assert_eq!(r.json()["_index"], "shelf");
    let r = call(&e, Method::Put, "/books/_alias/shelf", "");
    assert_eq!(r.json()["error"]["type"], "invalid_alias_name_exception");
    let r = get(&e, "/_alias/nope");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"], "alias [nope] missing");
    assert_eq!(
        call(&e, Method::Delete, "/books/_alias/evens", "").status,
        200
    );
    assert_eq!(
        call(&e, Method::Delete, "/books/_alias/evens", "").status,
        404
    );
    assert_eq!(get(&e, "/evens/_search").status, 404);
    let cat = get(&e, "/_cat/aliases?format=json&s=alias").json();
    assert_eq!(cat[0]["alias"], "all");
}

// The edge counts a tenant's open contexts from `_stats/search` (issue 27: a new home
// reads them): scrolls and points in time, in shard contexts, per index.
#[test]
fn search_stats_count_open_contexts_per_index() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let two = json!({"settings": {"number_of_shards": 2}});
    assert_eq!(call(&e, Method::Put, "/ctx2", &two.to_string()).status, 200);
    assert_eq!(call(&e, Method::Put, "/other", "{}").status, 200);
    let open =
        |path: &str| get(&e, path).json()["_all"]["total"]["search"]["open_contexts"].clone();
    assert_eq!(
        open("/ctx*/_stats/search?level=cluster&expand_wildcards=open,hidden"),
        0
    );
    let r = post(&e, "/ctx2/_search?scroll=1m", json!({"size": 1}));
    assert_eq!(r.status, 200, "{}", r.text());
    let scroll = r.json()["_scroll_id"].as_str().unwrap().to_string();
    assert_eq!(
        open("/ctx*/_stats/search?level=cluster&expand_wildcards=open,hidden"),
        2
    );
    let r = post(&e, "/ctx2,other/_pit?keep_alive=1m", json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(open("/ctx2/_stats/search"), 4);
    assert_eq!(open("/other/_stats/search"), 1);
    assert_eq!(open("/_stats/search"), 5);
    let s = get(&e, "/_stats/search").json();
    assert_eq!(s["indices"]["other"]["total"]["search"]["open_contexts"], 1);
    let r = call(
        &e,
        Method::Delete,
        "/_search/scroll",
        &json!({"scroll_id": scroll}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(open("/ctx2/_stats/search"), 2);
}

#[test]
fn close_open_stats_resolve_field_caps() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    books(&e);
    let r = post(&e, "/books/_close", json!({}));
    assert_eq!(r.json()["indices"]["books"]["closed"], true, "{}", r.text());
    let r = get(&e, "/books/_search");
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "index_closed_exception");
    assert_eq!(
        get(&e, "/_search").json()["hits"]["total"]["value"],
        0,
        "wildcards skip closed"
    );
    assert!(get(&e, "/_cat/indices?v").text().contains("close"));
    assert_eq!(call(&e, Method::Put, "/books/_doc/1", "{}").status, 400);
    assert_eq!(post(&e, "/books/_open", json!({})).status, 200);
    assert_eq!(
        get(&e, "/books/_search").json()["hits"]["total"]["value"],
        10
    );
    let s = get(&e, "/_stats").json();
    assert_eq!(s["_all"]["primaries"]["docs"]["count"], 10);
    assert_eq!(s["indices"]["books"]["total"]["docs"]["count"], 10);
    assert_eq!(
        get(&e, "/books/_stats/docs").json()["_all"]["total"]["docs"]["count"],
        10
    );
    assert_eq!(get(&e, "/_stats/indexing").status, 400);
    call(&e, Method::Put, "/books/_alias/b", "");
    let v = get(&e, "/_resolve/index/b*").json();
    assert_eq!(v["indices"][0]["name"], "books");
    assert_eq!(v["aliases"][0], json!({"name": "b", "indices": ["books"]}));
    let v = get(&e, "/books/_field_caps?fields=tag,n,title,nope").json();
    assert_eq!(v["fields"]["tag"]["keyword"]["aggregatable"], true);
    assert_eq!(v["fields"]["title"]["text"]["aggregatable"], false);
    assert!(v["fields"].get("nope").is_none());
    assert_eq!(get(&e, "/books/_field_caps").status, 400);
    assert_eq!(post(&e, "/b*/_flush", json!({})).status, 200);
}

#[test]
fn cluster_settings_drive_auto_creation() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    assert_eq!(call(&e, Method::Put, "/zz/_doc/1", "{}").status, 404);
    let r = call(
        &e,
        Method::Put,
        "/_cluster/settings",
        &json!({"transient": {"action.auto_create_index": "zz*"}}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["transient"]["action"]["auto_create_index"], "zz*");
    assert_eq!(call(&e, Method::Put, "/zz/_doc/1", "{}").status, 201);
    let r = call(
        &e,
        Method::Put,
        "/_cluster/settings",
        &json!({"persistent": {"nope": 1}}).to_string(),
    );
    assert_eq!(r.status, 400);
    assert!(r
        .text()
        .contains("persistent setting [nope], not recognized"));
    let v = get(
        &e,
        "/_cluster/settings?include_defaults=true&flat_settings=true",
    )
    .json();
    assert_eq!(v["transient"]["action.auto_create_index"], "zz*");
    assert!(v["defaults"]["action.auto_create_index"]
        .as_str()
        .unwrap()
        .contains("logstash*"));
}

#[test]
fn cat_indices_columns_and_filters() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    books(&e);
    put(&e, "/rep", json!({"settings": {"number_of_replicas": 1}}));
    let v = get(&e, "/_cat/indices?format=json&h=i,dc,health&s=i:desc").json();
    assert_eq!(v[0], json!({"i": "rep", "dc": "0", "health": "yellow"}));
    assert_eq!(v[1]["i"], "books");
    let v = get(&e, "/_cat/indices?format=json&health=green").json();
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(get(&e, "/_cat/indices?health=blue").status, 400);
    let t = get(&e, "/_cat/indices?v&h=index,docs.count&bytes=b").text();
    assert!(t.starts_with("index docs.count"), "{t}");
    let v = get(&e, "/_cat/indices/books?format=json&h=uuid,pri,rep").json();
    assert_eq!(v[0]["pri"], "2");
    assert_eq!(v[0]["uuid"].as_str().unwrap().len(), 22);
}

// The _msearch lines are paired as Elasticsearch 7.10 pairs them (issue 14).
#[test]
fn msearch_pairs_lines_like_elasticsearch() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    books(&e);
    put(&e, "/other", json!({}));
    let ms = |body: &str| {
        call_ct(
            &e,
            Method::Post,
            "/books/_msearch",
            body,
            Some("application/x-ndjson"),
        )
    };
    // a whitespace-only header is an empty header: the next line is its body
    let r = ms("  \n{\"query\":{\"term\":{\"tag\":\"odd\"}}}\n{\"index\":\"other\"}\n{}\n").json();
    assert_eq!(r["responses"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(r["responses"][0]["hits"]["total"]["value"], 5);
    assert_eq!(r["responses"][1]["hits"]["total"]["value"], 0);
    let r = ms("\n{}\n{\"size\":0}\n").json();
    assert_eq!(r["responses"][0]["hits"]["total"]["value"], 10);
    assert_eq!(ms("{}\n{}").status, 400);
    let r = ms("{\"bogus\":1}\n{}\n");
    assert!(r
        .text()
        .contains("key [bogus] is not supported in the metadata section"));
    assert_eq!(ms("{}\n\n").status, 400, "an empty body line");
}

// `_index` is a constant field, as in Elasticsearch 7.10.
#[test]
fn index_metadata_field_queries_aggs_and_sort() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    books(&e);
    put(&e, "/other", json!({}));
    call(&e, Method::Put, "/other/_doc/o1?refresh=true", "{\"n\":1}");
    let total = |q: Value| {
        post(&e, "/books,other/_search", json!({"query": q})).json()["hits"]["total"]["value"]
            .clone()
    };
    assert_eq!(total(json!({"term": {"_index": "other"}})), 1);
    assert_eq!(total(json!({"terms": {"_index": ["books", "nope"]}})), 10);
    assert_eq!(total(json!({"prefix": {"_index": "boo"}})), 10);
    assert_eq!(total(json!({"wildcard": {"_index": "o*r"}})), 1);
    assert_eq!(total(json!({"exists": {"field": "_index"}})), 11);
    assert_eq!(total(json!({"query_string": {"query": "_index:oth*"}})), 1);
    let r = post(
        &e,
        "/books/_search",
        json!({"query": {"regexp": {"_index": "b.*"}}}),
    );
    assert_eq!(r.status, 400);
    let v = post(
        &e,
        "/books,other/_search",
        json!({"size": 0, "aggs": {"i": {"terms": {"field": "_index"}}}}),
    )
    .json();
    assert_eq!(
        v["aggregations"]["i"]["buckets"],
        json!([{"key": "books", "doc_count": 10}, {"key": "other", "doc_count": 1}])
    );
    let v = post(
        &e,
        "/books,other/_search",
        json!({"size": 1, "sort": [{"_index": "desc"}]}),
    )
    .json();
    assert_eq!(v["hits"]["hits"][0]["_index"], "other");
    assert_eq!(v["hits"]["hits"][0]["sort"], json!(["other"]));
}
