//! `searchgate load-site` against a local mock cluster (tests/it/support/mock_es.rs): 413 above a
//! byte limit and seeded random 429s (spec 7), per-item errors, index creation and mapping
//! conflicts (spec 2.2, 4), prune and idempotent re-runs.

use crate::support::hugo as support;
use crate::support::mock_es;
use crate::support::records;

use std::collections::HashSet;

use mock_es::{MockConfig, MockEs};
use records::{auth, record, run, write_records, PASS, USER};
use serde_json::{json, Value};
use support::{bulk_pairs, ensure_hugo, fixture_site, load_site, load_site_env, text};

#[test]
fn halves_on_413_and_retries_429_until_every_page_is_indexed_once() {
    let tmp = tempfile::tempdir().unwrap();
    let records: Vec<Value> = (0..300)
        .map(|i| record(i, "posts", 200 + (i * 37) % 900))
        .collect();
    let file = write_records(&tmp, "pages.json", &records);
    let max_body = 40_000;
    let mock = MockEs::start(MockConfig {
        max_body,
        p429: 0.3,
        seed: 42,
        auth: auth(),
        ..Default::default()
    });
    let (code, stdout, stderr) = run(
        &mock,
        &file,
        &["--batch-docs", "200", "--max-retries", "40"],
    );
    assert_eq!(code, Some(0), "{stderr}");

    let st = mock.state();
    assert!(
        st.answered_413 > 0 && st.answered_429 > 0,
        "413s {} 429s {}",
        st.answered_413,
        st.answered_429
    );
    assert_eq!(st.indexed.len(), 300);
    assert!(
        st.indexed.values().all(|&n| n == 1),
        "a page was indexed more than once"
    );
    for r in &records {
        assert!(st.docs.contains_key(r["objectID"].as_str().unwrap()));
    }
    let bulks: Vec<_> = st.requests.iter().filter(|r| r.path == "/_bulk").collect();
    for b in &bulks {
        // spec 4 / 4.1: NDJSON content type, newline-terminated line pairs, Basic credentials.
        assert_eq!(b.header("content-type"), Some("application/x-ndjson"));
        assert!(b.body.ends_with(b"\n"));
        assert_eq!(b.header("authorization"), auth().as_deref());
        if b.status == 200 {
            assert!(b.body.len() <= max_body);
            bulk_pairs(std::str::from_utf8(&b.body).unwrap());
        }
    }
    let halvings = st.answered_413;
    assert!(stdout.contains("indexed 300, failed 0"), "{stdout}");
    assert!(stdout.contains(&format!("halvings {halvings}")), "{stdout}");
    // A batch is one body (each half after a 413 is its own); retries of a body are not.
    let batches = bulks.len() as u32 - st.answered_429;
    assert!(stdout.contains(&format!("batches {batches}")), "{stdout}");
    assert!(
        stdout.contains(&format!("retries {}", st.answered_429)),
        "{stdout}"
    );
    assert!(stderr.contains("413 for"), "plain progress lines: {stderr}");
}

#[test]
fn large_bodies_ask_first_so_an_early_413_still_halves() {
    // Bodies from 1 MiB on carry `Expect: 100-continue`; the mock answers 413 before the
    // upload and closes the connection, and the loader still halves instead of failing.
    let tmp = tempfile::tempdir().unwrap();
    let records: Vec<Value> = (0..6).map(|i| record(i, "posts", 400_000)).collect();
    let file = write_records(&tmp, "pages.json", &records);
    let mock = MockEs::start(MockConfig {
        max_body: 1_000_000,
        ..Default::default()
    });
    let (code, stdout, stderr) = run(&mock, &file, &["--max-retries", "0"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("indexed 6, failed 0"), "{stdout}");
    let st = mock.state();
    assert!(st.early_413 > 0);
    assert!(st.indexed.values().all(|&n| n == 1) && st.indexed.len() == 6);
    for r in st
        .requests
        .iter()
        .filter(|r| r.path == "/_bulk" && r.status == 200)
    {
        assert!(r.body.len() <= 1_000_000);
        let expect = r.header("expect").is_some();
        assert_eq!(expect, r.body.len() >= 1024 * 1024);
    }
}

#[test]
fn gateway_and_server_errors_are_retried() {
    // spec 7: 500, 502, 503 and 504 say "retry"; 429 says to slow down.
    let tmp = tempfile::tempdir().unwrap();
    let file = write_records(
        &tmp,
        "pages.json",
        &[record(1, "posts", 10), record(2, "posts", 10)],
    );
    let statuses = vec![502, 503, 504, 500, 429];
    let mock = MockEs::start(MockConfig {
        first_bulk_statuses: statuses.clone(),
        ..Default::default()
    });
    let (code, stdout, stderr) = run(&mock, &file, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("indexed 2, failed 0"), "{stdout}");
    assert!(
        stdout.contains("batches 1, halvings 0, retries 5"),
        "{stdout}"
    );
    let st = mock.state();
    let seen: Vec<u16> = st
        .requests
        .iter()
        .filter(|r| r.path == "/_bulk")
        .map(|r| r.status)
        .collect();
    assert_eq!(seen, [&statuses[..], &[200]].concat());

    // When retries run out, the pages of the batch fail with the last status.
    let mock = MockEs::start(MockConfig {
        first_bulk_statuses: vec![503; 3],
        ..Default::default()
    });
    let (code, _, stderr) = run(&mock, &file, &["--max-retries", "2"]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("failed: /posts/p1/ [en]: HTTP 503: scripted: scripted failure"),
        "{stderr}"
    );
}

#[test]
fn retry_after_is_honoured() {
    // The backoff base is 1 ms; only the server's `Retry-After: 1` can make the loader wait.
    let tmp = tempfile::tempdir().unwrap();
    let file = write_records(&tmp, "pages.json", &[record(1, "posts", 10)]);
    let mock = MockEs::start(MockConfig {
        first_bulk_statuses: vec![429],
        scripted_retry_after: "1".into(),
        ..Default::default()
    });
    let started = std::time::Instant::now();
    let (code, stdout, stderr) = run(&mock, &file, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("retries 1"), "{stdout}");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(1),
        "waited {:?}",
        started.elapsed()
    );
}

#[test]
fn a_page_too_large_alone_is_reported_and_the_rest_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let mut records: Vec<Value> = (0..20).map(|i| record(i, "posts", 100)).collect();
    records[7] = record(7, "posts", 50_000);
    let file = write_records(&tmp, "pages.json", &records);
    let mock = MockEs::start(MockConfig {
        max_body: 10_000,
        ..Default::default()
    });
    let (code, stdout, stderr) = run(&mock, &file, &[]);
    assert_eq!(
        code,
        Some(1),
        "a failed page makes the exit status non-zero"
    );
    assert!(
        stderr.contains("failed: /posts/p7/ [en]: too large"),
        "{stderr}"
    );
    assert!(stdout.contains("indexed 19, failed 1"), "{stdout}");
    let st = mock.state();
    assert_eq!(st.indexed.len(), 19);
    assert!(!st.indexed.contains_key("id-posts-0007"));
}

#[test]
fn per_item_errors_are_reported_by_page_and_item_429s_retried() {
    let tmp = tempfile::tempdir().unwrap();
    let records: Vec<Value> = (0..10).map(|i| record(i, "posts", 10)).collect();
    let file = write_records(&tmp, "pages.json", &records);
    let mock = MockEs::start(MockConfig {
        reject_ids: HashSet::from(["id-posts-0005".to_owned()]),
        item_429_once: HashSet::from(["id-posts-0007".to_owned()]),
        ..Default::default()
    });
    let (code, stdout, stderr) = run(&mock, &file, &[]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("failed: /posts/p5/ [en]: HTTP 400: mapper_parsing_exception: failed to parse field [weight] (caused by number_format_exception: bad number)"),
        "{stderr}"
    );
    assert!(stdout.contains("indexed 9, failed 1"), "{stdout}");
    assert_eq!(mock.state().indexed.get("id-posts-0007"), Some(&1));
}

#[test]
fn creates_the_index_and_a_rerun_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let records: Vec<Value> = (0..25).map(|i| record(i, "posts", 10)).collect();
    let file = write_records(&tmp, "pages.json", &records);
    let mock = MockEs::start(MockConfig::default());
    let (code, _, stderr) = run(&mock, &file, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let (first_docs, puts) = {
        let st = mock.state();
        let puts: Vec<_> = st
            .requests
            .iter()
            .filter(|r| r.method == "PUT")
            .cloned()
            .collect();
        (st.docs.clone(), puts)
    };
    // Elasticsearch 7: typed mapping with include_type_name; dates as epoch_second.
    assert_eq!(puts.len(), 1);
    assert_eq!(puts[0].path, "/site?include_type_name=true");
    let body: Value = serde_json::from_slice(&puts[0].body).unwrap();
    let props = &body["mappings"]["doc"]["properties"];
    assert_eq!(
        props["date"],
        json!({"type": "date", "format": "epoch_second||strict_date_optional_time"})
    );
    assert_eq!(props["lastmod"], props["date"]);
    assert_eq!(props["weight"]["type"], "integer");
    assert_eq!(props.as_object().unwrap().len(), 24);

    let (code, _, stderr) = run(&mock, &file, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let st = mock.state();
    let refresh = st
        .requests
        .iter()
        .find(|r| r.path == "/site/_refresh")
        .unwrap();
    assert_eq!(
        refresh.header("transfer-encoding"),
        None,
        "{:?}",
        refresh.headers
    );
    assert_eq!(
        st.requests.iter().filter(|r| r.method == "PUT").count(),
        1,
        "no second PUT"
    );
    assert_eq!(st.docs, first_docs, "same ids, same documents");
    assert!(st.indexed.values().all(|&n| n == 2));
}

#[test]
fn request_shapes_follow_the_server_version() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_records(&tmp, "pages.json", &[record(1, "posts", 10)]);
    for (version, put_path, typed) in [("6.8.23", "/site", true), ("8.15.0", "/site", false)] {
        let mock = MockEs::start(MockConfig {
            version: version.into(),
            ..Default::default()
        });
        let (code, _, stderr) = run(&mock, &file, &[]);
        assert_eq!(code, Some(0), "{stderr}");
        let st = mock.state();
        let put = st.requests.iter().find(|r| r.method == "PUT").unwrap();
        assert_eq!(put.path, put_path);
        let body: Value = serde_json::from_slice(&put.body).unwrap();
        assert_eq!(body["mappings"]["doc"].is_object(), typed, "{version}");
        let bulk = st.requests.iter().find(|r| r.path == "/_bulk").unwrap();
        let (action, _) = &bulk_pairs(std::str::from_utf8(&bulk.body).unwrap())[0];
        assert_eq!(action["index"].get("_type").is_some(), typed, "{version}");
    }
}

#[test]
fn a_conflicting_mapping_is_reported_and_nothing_is_sent() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_records(&tmp, "pages.json", &[record(1, "posts", 10)]);
    let existing =
        json!({"doc": {"properties": {"date": {"type": "text"}, "weight": {"type": "keyword"}}}});
    let mock = MockEs::start(MockConfig {
        existing: Some(("site".into(), existing)),
        ..Default::default()
    });
    let (code, _, stderr) = run(&mock, &file, &[]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("index site has a mapping that conflicts with site documents"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "date: mapped as text, needs date (format epoch_second||strict_date_optional_time)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("weight: mapped as keyword, needs integer"),
        "{stderr}"
    );
    assert!(mock.state().requests.iter().all(|r| r.path != "/_bulk"));
}

#[test]
fn prune_deletes_pages_that_no_longer_exist_within_the_selection() {
    let tmp = tempfile::tempdir().unwrap();
    let mut all: Vec<Value> = (0..10).map(|i| record(i, "posts", 10)).collect();
    all.extend((0..3).map(|i| record(i, "docs", 10)));
    let file = write_records(&tmp, "all.json", &all);
    let mock = MockEs::start(MockConfig::default());
    assert_eq!(run(&mock, &file, &[]).0, Some(0));
    assert_eq!(mock.state().docs.len(), 13);

    // posts 3 and 8 are gone; docs pages are outside --section posts and must stay.
    let fewer: Vec<Value> = all
        .iter()
        .filter(|r| r["section"] == "posts" && r["weight"] != 3 && r["weight"] != 8)
        .cloned()
        .collect();
    let file = write_records(&tmp, "fewer.json", &fewer);
    let (code, stdout, stderr) = run(&mock, &file, &["--prune", "--section", "posts"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("pruned 2"), "{stdout}");
    let st = mock.state();
    let ids: HashSet<&str> = st.docs.keys().map(String::as_str).collect();
    assert_eq!(ids.len(), 11);
    assert!(!ids.contains("id-posts-0003") && !ids.contains("id-posts-0008"));
    assert!(ids.contains("id-docs-0001"));
    // The deletes are followed by a refresh, so that counts and searches see them at once.
    let last_bulk = st
        .requests
        .iter()
        .rposition(|r| r.path == "/_bulk")
        .unwrap();
    assert!(st.requests[last_bulk..]
        .iter()
        .any(|r| r.path == "/site/_refresh"));
    drop(st);

    // Unchanged site: a second prune deletes nothing.
    let (code, stdout, _) = run(&mock, &file, &["--prune", "--section", "posts"]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("pruned 0"), "{stdout}");
}

#[test]
fn the_fixture_site_through_real_hugo_lands_in_the_mock() {
    ensure_hugo();
    let mock = MockEs::start(MockConfig {
        auth: auth(),
        ..Default::default()
    });
    let site = fixture_site();
    let url = mock.url(&format!("{USER}:{PASS}"), false);
    let out = load_site_env(
        &[
            site.to_str().unwrap(),
            "--index",
            "site",
            "--progress",
            "plain",
        ],
        &[("SEARCHGATE_URL", &url)],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("pages seen 24, included 20, skipped by rule 4"),
        "{stdout}"
    );
    assert!(stdout.contains("indexed 20, failed 0"), "{stdout}");
    let dry = load_site(&[
        site.to_str().unwrap(),
        "--index",
        "site",
        "--dry-run",
        "--progress",
        "off",
    ]);
    let expected = bulk_pairs(&text(&dry).0);
    let st = mock.state();
    assert_eq!(st.docs.len(), expected.len());
    for (action, doc) in expected {
        assert_eq!(
            st.docs.get(action["index"]["_id"].as_str().unwrap()),
            Some(&doc)
        );
    }
}
