//! Page records and a loader run for mock-cluster tests: records in the template's format
//! written to a file for `--from-json`, and the credentials the tests use.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{json, Value};

use super::hugo::{load_site, text};
use super::mock_es::MockEs;

pub const USER: &str = "loader7";
pub const PASS: &str = "Pw9secretXYZ";

pub fn record(i: usize, section: &str, body_len: usize) -> Value {
    json!({
        "objectID": format!("id-{section}-{i:04}"), "date": 1_700_000_000 + i as i64,
        "description": format!("page {i}"), "dir": format!("{section}/"),
        "expirydate": -62_135_596_800_i64, "fuzzywordcount": 100, "keywords": ["k"],
        "kind": "page", "lang": "en", "lastmod": 1_700_000_000, "permalink": format!("https://e.org/{section}/p{i}/"),
        "publishdate": 1_700_000_000, "readingtime": 1, "relpermalink": format!("/{section}/p{i}/"),
        "summary": "x".repeat(body_len), "title": format!("Page {i}"), "type": section,
        "url": format!("/{section}/p{i}/"), "weight": i, "wordcount": 1, "section": section,
        "tags": ["t"], "categories": [], "authors": null, "draft": false, "private": false
    })
}

pub fn write_records(dir: &tempfile::TempDir, name: &str, records: &[Value]) -> PathBuf {
    let path = dir.path().join(name);
    let doc = json!({"generator": "searchgate-load-site", "format": 1, "pages": records});
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

pub fn run(mock: &MockEs, records: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let url = mock.url(&format!("{USER}:{PASS}"), false);
    let mut args = vec![
        "--from-json",
        records.to_str().unwrap(),
        "--index",
        "site",
        "--url",
        &url,
        "--progress",
        "plain",
        "--retry-base-ms",
        "1",
    ];
    args.extend_from_slice(extra);
    let out = load_site(&args);
    let (o, e) = text(&out);
    (out.status.code(), o, e)
}

pub fn auth() -> Option<String> {
    Some(format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASS}"))
    ))
}
