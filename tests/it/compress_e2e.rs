//! End-to-end: compressed bodies (issue 29; spec 4, 7 (400, 413), 8 (body limit)) through
//! `searchgate serve` on both classes. The multitenant class inflates gzip and deflate
//! request bodies (bounded: the body limit applies to the inflated size, at N and N+1, and
//! a bomb is 413 at once), rewrites them as any other body, and gzip-compresses its
//! responses for a client that accepts gzip; the single-tenant class passes both through
//! to its upstream as before. elasticsearch-py with `http_compress=True` loads and searches
//! through both (a pinned virtualenv the test makes itself, `support/installs.rs`).

use crate::support::e2e;
use crate::support::installs;

use std::io::{Read, Write};
use std::process::Command;

use e2e::{ClusterSpec, Config, Edge, Engine, PlanSpec, Response, Tenant};
use flate2::read::MultiGzDecoder;
use flate2::write::{GzEncoder, ZlibEncoder};
use flate2::Compression;
use serde_json::{json, Value};

/// The edge's default body limit (`[edge] max_body`, 40mb).
const LIMIT: usize = 40 << 20;

pub(crate) fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

pub(crate) fn deflate(b: &[u8]) -> Vec<u8> {
    let mut e = ZlibEncoder::new(Vec::new(), Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    MultiGzDecoder::new(b).read_to_end(&mut out).unwrap();
    out
}

fn edge_with_both_classes(engine: &Engine) -> Edge {
    Edge::start(
        Config::new()
            .edge("route_by_username", "true")
            .plan(PlanSpec::new("p"))
            .cluster(ClusterSpec::multitenant("mt", "p"))
            .cluster(ClusterSpec::single("st", "p", engine.addr)),
    )
}

/// A search body of exactly `n` bytes (padded with whitespace, valid JSON).
fn search_body(n: usize) -> Vec<u8> {
    let mut b = br#"{"query":{"match_all":{}}}"#.to_vec();
    b.resize(n, b' ');
    b
}

fn compressed(t: &Tenant, method: &str, path: &str, coding: &str, body: Vec<u8>) -> e2e::Req {
    t.req(method, path)
        .header("Content-Type", "application/json")
        .header("Content-Encoding", coding)
        .body(body)
}

fn json_of(r: &Response) -> Value {
    let body = if r.header("Content-Encoding") == Some("gzip") {
        gunzip(&r.body)
    } else {
        r.body.clone()
    };
    serde_json::from_slice(&body).unwrap_or_else(|_| panic!("{}", r.text()))
}

// issue 29: gzip and deflate bulk and search bodies by hand on both classes; the
// multitenant class answers gzip to a client that accepts it
#[test]
fn gzip_and_deflate_bodies_on_both_classes() {
    let engine = Engine::start();
    let edge = edge_with_both_classes(&engine);
    for id in ["mt", "st"] {
        let t = edge.tenant(id);
        let r = edge.send(&t.json("PUT", "/docs", &json!({})));
        assert_eq!(r.status, 200, "{id}: {}", r.text());
        let mut lines = Vec::new();
        for i in 0..50 {
            lines.push(json!({"index": {"_index": "docs", "_id": i.to_string()}}));
            lines.push(json!({"title": format!("page {i}")}));
        }
        let bulk = e2e::ndjson(&lines);
        let req = t
            .req("POST", "/_bulk?refresh=true")
            .header("Content-Type", "application/x-ndjson")
            .header("Content-Encoding", "gzip")
            .body(gzip(&bulk));
        let r = edge.send(&req);
        assert_eq!(r.status, 200, "{id} gzip bulk: {}", r.text());
        assert_eq!(json_of(&r)["errors"], json!(false), "{id}: {}", r.text());
        let q = serde_json::to_vec(&json!({"query": {"match": {"title": "page"}}})).unwrap();
        for (coding, body) in [("gzip", gzip(&q)), ("deflate", deflate(&q))] {
            let req = compressed(&t, "POST", "/docs/_search", coding, body)
                .header("Accept-Encoding", "gzip");
            let r = edge.send(&req);
            assert_eq!(r.status, 200, "{id} {coding} search: {}", r.text());
            let v = json_of(&r);
            assert_eq!(v["hits"]["total"]["value"], json!(50), "{id} {coding}");
            assert_eq!(
                v["hits"]["hits"][0]["_index"],
                json!("docs"),
                "{id}: own names"
            );
            if id == "mt" {
                assert_eq!(r.header("Content-Encoding"), Some("gzip"), "{id}");
                assert_eq!(r.header("Vary"), Some("Accept-Encoding"), "{id}");
            }
        }
        // without Accept-Encoding: plain
        let r = edge.send(&t.req("GET", "/docs/_count"));
        assert_eq!(r.header("Content-Encoding"), None, "{id}");
        assert_eq!(r.json()["count"], json!(50), "{id}");
    }
}

// issue 29, spec 8: the body limit counts the inflated bytes: N passes, N+1 and a bomb are
// 413; a body that is not gzip is 400; a coding the edge does not read is 400
#[test]
fn the_body_limit_applies_to_the_inflated_size() {
    let engine = Engine::start();
    let edge = edge_with_both_classes(&engine);
    let t = edge.tenant("mt");
    let r = edge.send(&t.json("PUT", "/docs", &json!({})));
    assert_eq!(r.status, 200, "{}", r.text());
    let at = gzip(&search_body(LIMIT));
    assert!(at.len() < 1 << 20, "small on the wire: {}", at.len());
    let r = edge.send(&compressed(&t, "POST", "/docs/_search", "gzip", at));
    assert_eq!(r.status, 200, "N bytes inflated: {}", r.text());
    let over = gzip(&search_body(LIMIT + 1));
    let r = edge.send(&compressed(&t, "POST", "/docs/_search", "gzip", over));
    let reason = e2e::es_error(&r, 413).1;
    assert!(reason.contains(&LIMIT.to_string()), "{reason}");
    let bomb = gzip(&vec![b' '; 400 << 20]);
    let r = edge.send(&compressed(&t, "POST", "/docs/_search", "gzip", bomb));
    e2e::es_error(&r, 413);
    let r = edge.send(&compressed(
        &t,
        "POST",
        "/docs/_search",
        "gzip",
        b"{}".to_vec(),
    ));
    let reason = e2e::es_error(&r, 400).1;
    assert!(reason.contains("Content-Encoding"), "{reason}");
    let r = edge.send(&compressed(
        &t,
        "POST",
        "/docs/_search",
        "br",
        b"{}".to_vec(),
    ));
    let reason = e2e::es_error(&r, 400).1;
    assert!(reason.contains("gzip and deflate"), "{reason}");
    // the edge still answers
    assert_eq!(edge.send(&t.req("GET", "/docs/_count")).status, 200);
}

// issue 29: elasticsearch-py with http_compress=True, a gzip bulk load and a gzip search,
// through both classes
#[test]
fn elasticsearch_py_http_compress_on_both_classes() {
    let python = installs::venv("compress-es8", &["elasticsearch==8.19.3"]);
    let script = crate::support::repo_root().join("tests/clients/compress.py");
    let engine = Engine::start();
    let edge = edge_with_both_classes(&engine);
    for id in ["mt", "st"] {
        let t = edge.tenant(id);
        let url = format!("http://{}:{}@{}", t.user, t.pass, edge.http);
        let log = installs::run(
            Command::new(&python)
                .arg(&script)
                .args(["--url", &url, "--index", "compressed"]),
            &format!("compress.py on {id}"),
        );
        let line = log
            .lines()
            .find(|l| l.starts_with('{'))
            .expect("a JSON line");
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["bulk_ok"], json!(2000), "{id}: {v}");
        assert_eq!(v["bulk_errors"], json!(0), "{id}: {v}");
        assert_eq!(v["hits"], json!(2000), "{id}: {v}");
        assert_eq!(v["hit_index"], json!("compressed"), "{id}: {v}");
        if id == "mt" {
            assert_eq!(v["content_encoding"], json!("gzip"), "{id}: {v}");
        }
        eprintln!("{id}: elasticsearch-py http_compress: {v}");
    }
}
