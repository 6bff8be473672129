//! Durability against the real binary: every write answered 2xx survives `kill -9` and a
//! restart (WAL replay); data, mappings and settings survive clean restarts.

use crate::support::engine_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine_support::{bulk_body, Client, Engine};
use serde_json::json;

#[test]
fn acknowledged_writes_survive_kill_9() {
    let e = Engine::start();
    let mut c = e.client();
    let create = json!({"settings": {"number_of_shards": 3, "number_of_replicas": 0},
        "mappings": {"doc": {"properties": {"n": {"type": "long"}, "tag": {"type": "keyword"}}}}});
    assert_eq!(
        c.req("PUT", "/books", Some(&create.to_string())).status,
        200
    );
    for i in 0..20 {
        let r = c.req(
            "PUT",
            &format!("/books/doc/single-{i}"),
            Some(&json!({"n": i, "tag": "s"}).to_string()),
        );
        assert_eq!(r.status, 201);
    }
    let r = c.req("POST", "/_bulk", Some(&bulk_body("books", 0, 3000)));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["errors"], false);
    assert_eq!(c.req("DELETE", "/books/_doc/7", None).status, 200);
    assert_eq!(
        c.req(
            "POST",
            "/books/_update/8",
            Some(r#"{"doc":{"tag":"updated"}}"#)
        )
        .json()["_version"],
        2
    );
    assert_eq!(
        c.req("PUT", "/books/doc/single-0", Some(r#"{"n":100}"#))
            .json()["_version"],
        2
    );
    let mut e = e;
    e.kill9();
    let e = e.restart();
    let mut c = e.client();
    assert_eq!(c.get("/books/_count").json()["count"], 3019);
    assert_eq!(c.get("/books/_doc/7").status, 404);
    let g = c.get("/books/_doc/8").json();
    assert_eq!(g["_source"]["tag"], "updated");
    assert_eq!(g["_version"], 2);
    let g = c.get("/books/doc/single-0").json();
    assert_eq!(
        (g["_source"]["n"].as_i64(), g["_version"].as_i64()),
        (Some(100), Some(2))
    );
    for i in [0, 1500, 2999] {
        assert_eq!(c.get(&format!("/books/_doc/{i}")).json()["_source"]["n"], i);
    }
    let m = c.get("/books/_mapping").json();
    assert_eq!(
        m["books"]["mappings"]["doc"]["properties"]["tag"]["type"],
        "keyword"
    );
    assert_eq!(
        m["books"]["mappings"]["doc"]["properties"]["title"]["type"],
        "text"
    );
    let s = c.get("/books/_settings").json();
    assert_eq!(s["books"]["settings"]["index"]["number_of_shards"], "3");
    // searches see everything after the restart
    let r = c
        .req(
            "GET",
            "/books/_search",
            Some(r#"{"query":{"term":{"tag":"s"}}}"#),
        )
        .json();
    assert_eq!(r["hits"]["total"]["value"], 19);
    // versions continue where they were
    assert_eq!(
        c.req("PUT", "/books/doc/single-0", Some("{}")).json()["_version"],
        3
    );
}

#[test]
fn clean_restart_keeps_data_mappings_settings() {
    let mut e = Engine::start();
    let mut c = e.client();
    c.req(
        "PUT",
        "/a",
        Some(r#"{"settings":{"number_of_replicas":0,"refresh_interval":"5s"}}"#),
    );
    c.req("PUT", "/a/_doc/1", Some(r#"{"when":"2020-01-01","v":1.5}"#));
    c.req(
        "PUT",
        "/logstash-1/_doc/1?refresh=true",
        Some(r#"{"x":true}"#),
    );
    assert!(e.term(), "SIGTERM exits cleanly");
    let e = e.restart();
    let mut c = e.client();
    let m = c.get("/a/_mapping").json();
    assert_eq!(
        m["a"]["mappings"]["_doc"]["properties"]["when"]["type"],
        "date"
    );
    assert_eq!(
        m["a"]["mappings"]["_doc"]["properties"]["v"]["type"],
        "double"
    );
    let s = c.get("/a/_settings").json();
    assert_eq!(s["a"]["settings"]["index"]["refresh_interval"], "5000ms");
    assert_eq!(c.get("/a/_doc/1").json()["_source"]["v"], 1.5);
    assert_eq!(c.get("/logstash-1/_count").json()["count"], 1);
    let cat = c.get("/_cat/indices?h=index,docs.count&s=index").text();
    assert_eq!(
        cat.split_whitespace().collect::<Vec<_>>(),
        vec!["a", "1", "logstash-1", "1"]
    );
}

#[test]
fn deleted_index_stays_deleted_after_a_crash() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/gone", None);
    c.req("POST", "/_bulk", Some(&bulk_body("gone", 0, 100)));
    assert_eq!(c.req("DELETE", "/gone", None).status, 200);
    c.req("PUT", "/gone2/_doc/1", Some("{}"));
    let e = e.restart();
    let mut c = e.client();
    assert_eq!(c.get("/gone/_count").status, 404);
    assert_eq!(c.req("HEAD", "/gone", None).status, 404);
    assert_eq!(c.get("/gone2/_count").status, 404);
}

#[test]
fn kill_9_under_concurrent_writes_loses_no_acknowledged_write() {
    let e = Engine::start();
    e.client()
        .req("PUT", "/w", Some(r#"{"settings":{"number_of_shards":2}}"#));
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let addr = e.addr;
    let workers: Vec<_> = (0..6)
        .map(|t| {
            let (acked, stop) = (acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let id = format!("t{t}-{i}");
                    let body = if t % 2 == 0 {
                        format!(
                            "{{\"index\":{{\"_index\":\"w\",\"_id\":\"{id}\"}}}}\n{{\"t\":{t}}}\n"
                        )
                    } else {
                        String::new()
                    };
                    let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        if t % 2 == 0 {
                            let r = c.req("POST", "/_bulk", Some(&body));
                            r.status == 200 && r.json()["errors"] == false
                        } else {
                            c.req(
                                "PUT",
                                &format!("/w/_doc/{id}"),
                                Some(&format!("{{\"t\":{t}}}")),
                            )
                            .status
                                == 201
                        }
                    }));
                    match ok {
                        Ok(true) => acked.lock().unwrap().push(id),
                        _ => break,
                    }
                    i += 1;
                }
            })
        })
        .collect();
    // Killed mid-stream, once a few hundred writes are acknowledged (not after a fixed time).
    let end = std::time::Instant::now() + Duration::from_secs(30);
    while acked.lock().unwrap().len() < 300 {
        assert!(
            std::time::Instant::now() < end,
            "writes are not acknowledged"
        );
        std::thread::yield_now();
    }
    let mut e = e;
    e.kill9();
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() > 50, "only {} writes acknowledged", acked.len());
    let e = e.restart();
    let mut c = e.client();
    for id in &acked {
        assert_eq!(
            c.get(&format!("/w/_doc/{id}")).status,
            200,
            "acknowledged {id} lost"
        );
    }
    let count = c.get("/w/_count").json()["count"].as_u64().unwrap();
    assert!(count >= acked.len() as u64);
}

#[test]
fn replay_is_idempotent_across_two_crashes() {
    let e = Engine::start();
    let mut c = e.client();
    c.req("PUT", "/r", None);
    c.req("POST", "/_bulk", Some(&bulk_body("r", 0, 500)));
    let e = e.restart();
    let mut c = e.client();
    c.req("POST", "/_bulk", Some(&bulk_body("r", 250, 500)));
    let e = e.restart();
    let mut c = e.client();
    assert_eq!(c.get("/r/_count").json()["count"], 750);
    assert_eq!(c.get("/r/_doc/300").json()["_version"], 2);
    assert_eq!(c.get("/r/_doc/100").json()["_version"], 1);
}
