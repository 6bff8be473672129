//! API tests of the index listing (`_cat/indices`, spec 2.3) and of templates applied to
//! new indices (legacy and composable, as Logstash installs them).

use serde_json::json;

use super::tests::{call, engine, put};
use super::*;

// spec 2.3: the nine columns
#[test]
fn cat_indices_columns() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    put(&e, "/books", json!({"settings": {"number_of_replicas": 0}}));
    put(&e, "/logs", json!({}));
    call(&e, Method::Put, "/books/_doc/1?refresh=true", "{\"a\":1}");
    let t = call(&e, Method::Get, "/_cat/indices?v", "");
    assert!(t.content_type.starts_with("text/plain"));
    let lines: Vec<Vec<String>> = t
        .text()
        .lines()
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect();
    assert_eq!(
        lines[0],
        vec![
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
    assert_eq!(
        &lines[1][..7],
        &["green", "open", "books", "1", "0", "1", "0"]
    );
    assert_eq!(
        &lines[2][..7],
        &["yellow", "open", "logs", "1", "1", "0", "0"]
    );
    assert!(lines[1][7].ends_with("kb") || lines[1][7].ends_with('b'));
    let j = call(
        &e,
        Method::Get,
        "/_cat/indices/books?format=json&bytes=b",
        "",
    )
    .json();
    assert_eq!(j[0]["index"], "books");
    assert!(j[0]["store.size"].as_str().unwrap().parse::<u64>().unwrap() > 0);
    let h = call(&e, Method::Get, "/_cluster/health", "").json();
    assert_eq!(h["status"], "yellow");
    assert_eq!(h["number_of_nodes"], 1);
    let w = call(
        &e,
        Method::Get,
        "/_cluster/health?wait_for_status=green&timeout=100ms",
        "",
    );
    assert_eq!(w.status, 408);
    assert_eq!(w.json()["timed_out"], true);
    let ok = call(
        &e,
        Method::Get,
        "/_cluster/health/books?wait_for_status=green&timeout=1s",
        "",
    );
    assert_eq!(ok.status, 200);
    assert_eq!(
        call(
            &e,
            Method::Put,
            "/logs/_settings",
            "{\"index\":{\"number_of_replicas\":0}}"
        )
        .status,
        200
    );
    assert_eq!(
        call(
            &e,
            Method::Get,
            "/_cluster/health?wait_for_status=green&timeout=1s",
            ""
        )
        .json()["status"],
        "green"
    );
}

// Logstash installs a legacy template with a geo_point before writing to logstash-*
#[test]
fn templates_apply_to_new_indices() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path());
    let tpl = json!({"index_patterns": "logstash-*", "version": 60001, "order": 0,
        "settings": {"index.refresh_interval": "5s", "number_of_shards": 2},
        "mappings": {"dynamic_templates": [], "properties": {"@timestamp": {"type": "date"},
            "@version": {"type": "keyword"}, "geoip": {"dynamic": true, "properties": {"location": {"type": "geo_point"}}}}}});
    assert_eq!(
        call(&e, Method::Head, "/_template/logstash", "").status,
        404
    );
    assert_eq!(call(&e, Method::Get, "/_template/logstash", "").status, 404);
    assert_eq!(put(&e, "/_template/logstash", tpl).status, 200);
    assert_eq!(
        call(&e, Method::Head, "/_template/logstash", "").status,
        200
    );
    let g = call(&e, Method::Get, "/_template/logstash", "").json();
    assert_eq!(g["logstash"]["version"], 60001);
    let doc = json!({"@timestamp": "2024-01-01T00:00:00Z", "geoip": {"location": {"lat": 1.5, "lon": 2.5}}, "message": "hi"});
    let r = call(
        &e,
        Method::Post,
        "/logstash-2024.01.01/_doc",
        &doc.to_string(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let s = call(&e, Method::Get, "/logstash-2024.01.01/_settings", "").json();
    assert_eq!(
        s["logstash-2024.01.01"]["settings"]["index"]["number_of_shards"],
        "2"
    );
    let m = call(&e, Method::Get, "/logstash-2024.01.01/_mapping", "").json();
    let props = &m["logstash-2024.01.01"]["mappings"]["_doc"]["properties"];
    assert_eq!(
        props["geoip"]["properties"]["location"]["type"],
        "geo_point"
    );
    assert_eq!(props["message"]["type"], "text");
    let c = put(
        &e,
        "/_index_template/metrics",
        json!({"index_patterns": ["metrics-*"], "priority": 5,
        "template": {"settings": {"number_of_replicas": 0}}}),
    );
    assert_eq!(c.status, 200);
    assert_eq!(
        call(&e, Method::Get, "/_index_template/metrics", "").json()["index_templates"][0]["name"],
        "metrics"
    );
    assert_eq!(call(&e, Method::Put, "/metrics-a", "").status, 200);
    assert_eq!(
        call(&e, Method::Get, "/metrics-a/_settings", "").json()["metrics-a"]["settings"]["index"]
            ["number_of_replicas"],
        "0"
    );
    assert_eq!(
        call(&e, Method::Delete, "/_index_template/metrics", "").status,
        200
    );
    assert_eq!(
        call(&e, Method::Delete, "/_index_template/metrics", "").status,
        404
    );
    assert_eq!(
        put(&e, "/_template/bad", json!({"settings": {}})).status,
        400
    );
}
