//! Measures primary bytes per document the way spec 8.1.2 says: index a sample into a
//! live cluster and read the primaries' size from `_cat/indices`. The sample goes into a
//! fresh index (one primary, no replica, so the size is the primaries' alone) that is
//! deleted afterwards, also when a step fails.
//!
//! A client of the public HTTP API only, through the load-site tool's client (Basic
//! credentials from the URL, `--cacert`, retries on 429/5xx, the password never printed).
//!
//! Must not touch: the sizing rules, the edge.

use std::path::Path;
use std::time::Duration;

use rand::distr::{Alphanumeric, SampleString};
use serde_json::Value;

use crate::tools::loadsite::http::{Client, RetryPolicy, TlsOptions};
use crate::tools::loadsite::target::ClusterUrl;

/// Largest `_bulk` body sent at once.
const BATCH_BYTES: usize = 4 << 20;

/// What the sample measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub index: String,
    pub documents: u64,
    pub primary_bytes: u64,
    pub bytes_per_doc: f64,
}

/// The sample's documents: one JSON object per line (blank lines skipped).
pub fn read_sample(path: &Path) -> Result<Vec<String>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("sample {}: {e}", path.display()))?;
    let mut docs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(_)) => docs.push(line.trim().to_string()),
            _ => {
                return Err(format!(
                    "sample {} line {}: not a JSON object (one document per line)",
                    path.display(),
                    i + 1
                ))
            }
        }
    }
    if docs.is_empty() {
        return Err(format!("sample {}: no documents", path.display()));
    }
    Ok(docs)
}

/// Indexes `docs` into a new index of the cluster at `url`, reads its primary size and
/// deletes it.
pub fn measure(url: &str, tls: &TlsOptions, docs: &[String]) -> Result<Measured, String> {
    let url = ClusterUrl::parse(url).map_err(|e| e.to_string())?;
    let policy = RetryPolicy {
        max_retries: 4,
        base: Duration::from_millis(200),
        cap: Duration::from_secs(5),
    };
    let client =
        Client::new(url, tls, policy, Duration::from_secs(120)).map_err(|e| e.to_string())?;
    let suffix = Alphanumeric
        .sample_string(&mut rand::rng(), 10)
        .to_ascii_lowercase();
    let index = format!("searchgate-plan-sample-{suffix}");
    let settings = br#"{"settings":{"number_of_shards":1,"number_of_replicas":0}}"#;
    expect_ok(
        &client,
        "PUT",
        &format!("/{index}"),
        Some(("application/json", settings)),
    )?;
    let measured = load_and_read(&client, &index, docs);
    let deleted = expect_ok(&client, "DELETE", &format!("/{index}"), None);
    let m = measured?;
    deleted.map_err(|e| format!("measured, but the sample index {index} was not deleted: {e}"))?;
    Ok(m)
}

fn load_and_read(client: &Client, index: &str, docs: &[String]) -> Result<Measured, String> {
    let action = format!("{{\"index\":{{\"_index\":\"{index}\",\"_type\":\"doc\"}}}}\n");
    let mut body = Vec::with_capacity(BATCH_BYTES);
    for (i, doc) in docs.iter().enumerate() {
        body.extend_from_slice(action.as_bytes());
        body.extend_from_slice(doc.as_bytes());
        body.push(b'\n');
        if body.len() >= BATCH_BYTES || i + 1 == docs.len() {
            let reply = expect_ok(
                client,
                "POST",
                "/_bulk",
                Some(("application/x-ndjson", &body)),
            )?;
            if reply["errors"] == Value::Bool(true) {
                let first = reply["items"]
                    .as_array()
                    .and_then(|items| {
                        items
                            .iter()
                            .find_map(|it| it["index"]["error"]["reason"].as_str())
                    })
                    .unwrap_or("unknown");
                return Err(format!("the sample was not indexed: {first}"));
            }
            body.clear();
        }
    }
    expect_ok(client, "POST", &format!("/{index}/_refresh"), None)?;
    let rows = expect_ok(
        client,
        "GET",
        &format!("/_cat/indices/{index}?bytes=b&format=json"),
        None,
    )?;
    let row = rows
        .as_array()
        .and_then(|r| r.iter().find(|row| row["index"] == index))
        .ok_or_else(|| format!("_cat/indices has no row for {index}"))?;
    let number = |k: &str| -> Result<u64, String> {
        row[k]
            .as_str()
            .and_then(|s| s.parse().ok())
            .or_else(|| row[k].as_u64())
            .ok_or_else(|| format!("_cat/indices: `{k}` is not a number: {}", row[k]))
    };
    let (count, bytes) = (number("docs.count")?, number("pri.store.size")?);
    if count == 0 {
        return Err(format!("_cat/indices counts no document in {index}"));
    }
    Ok(Measured {
        index: index.to_string(),
        documents: count,
        primary_bytes: bytes,
        bytes_per_doc: bytes as f64 / count as f64,
    })
}

fn expect_ok(
    client: &Client,
    method: &'static str,
    path: &str,
    body: Option<(&str, &[u8])>,
) -> Result<Value, String> {
    let reply = client.send(method, path, body).map_err(|e| e.to_string())?;
    if !reply.ok() {
        return Err(format!(
            "{method} {path}: {} {}",
            reply.status,
            reply.error_summary()
        ));
    }
    Ok(reply.json())
}
