//! `POST /_bulk` (spec 4, 4.1): NDJSON bodies (action line + source line, each ending in a
//! newline, sent as bytes with `Content-Type: application/x-ndjson`), batches bounded by
//! documents and bytes, halving on 413 down to a single document (spec 7), retrying items
//! the server rejected with 429, and per-item results reported by page.

use serde::Serialize;
use serde_json::Value;

use super::http::{Client, RetryPolicy};
use super::report::Report;

/// The NDJSON content type the spec requires for bulk bodies.
pub const NDJSON: &str = "application/x-ndjson";

/// What an action does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `index` with a source line.
    Index,
    /// `delete` (used by `--prune`).
    Delete,
}

/// One action, encoded once.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The page, for reports.
    pub label: String,
    /// The `_id`.
    pub id: String,
    /// The action line and, for `index`, the source line; each ends with `\n`.
    pub bytes: Vec<u8>,
}

#[derive(Serialize)]
struct Meta<'a> {
    _index: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    _type: Option<&'a str>,
    _id: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
enum Action<'a> {
    Index(Meta<'a>),
    Delete(Meta<'a>),
}

/// Encodes an action (and its source) as NDJSON lines.
pub fn encode<T: Serialize>(
    op: Op,
    index: &str,
    doc_type: Option<&str>,
    id: &str,
    source: Option<&T>,
) -> Vec<u8> {
    let meta = Meta {
        _index: index,
        _type: doc_type,
        _id: id,
    };
    let action = match op {
        Op::Index => Action::Index(meta),
        Op::Delete => Action::Delete(meta),
    };
    // serde_json's compact output escapes control characters, so a line never breaks early.
    let mut out = serde_json::to_vec(&action).unwrap_or_default();
    out.push(b'\n');
    if let Some(src) = source {
        out.extend(serde_json::to_vec(src).unwrap_or_default());
        out.push(b'\n');
    }
    out
}

/// Bounds on one bulk request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Actions per request.
    pub max_docs: usize,
    /// Body bytes per request (a single larger action is still sent alone).
    pub max_bytes: usize,
}

/// The end (exclusive) of the batch that starts at `start`.
pub fn next_batch(entries: &[Entry], start: usize, limits: Limits) -> usize {
    let mut end = start;
    let mut bytes = 0;
    while end < entries.len() && end - start < limits.max_docs.max(1) {
        let len = entries[end].bytes.len();
        if end > start && bytes + len > limits.max_bytes {
            break;
        }
        bytes += len;
        end += 1;
    }
    end
}

/// How many of the entries `part` names, from its start, fit in one request.
fn fitting(entries: &[Entry], part: &[usize], limits: Limits) -> usize {
    let mut bytes = 0;
    for (n, &i) in part.iter().enumerate() {
        bytes += entries[i].bytes.len();
        if n > 0 && (n >= limits.max_docs.max(1) || bytes > limits.max_bytes) {
            return n;
        }
    }
    part.len()
}

/// The result of one action, read from a bulk response item.
#[derive(Debug, PartialEq, Eq)]
pub enum ItemResult {
    /// Stored (or, for a delete, gone).
    Ok,
    /// Rejected for load (429): worth sending again.
    Retry(String),
    /// Failed for good.
    Failed(String),
}

/// Reads the per-item results of a bulk response for `ids`, in order.
pub fn item_results(response: &Value, ids: &[&str], op: Op) -> Result<Vec<ItemResult>, String> {
    let items = response["items"]
        .as_array()
        .ok_or("bulk response without \"items\"")?;
    if items.len() != ids.len() {
        return Err(format!(
            "bulk response has {} items for {} actions",
            items.len(),
            ids.len()
        ));
    }
    let results = items.iter().zip(ids).map(|(item, id)| {
        let body = item
            .as_object()
            .and_then(|o| o.values().next())
            .cloned()
            .unwrap_or(Value::Null);
        let status = body["status"].as_u64().unwrap_or(0);
        if body["_id"].as_str().is_some_and(|got| got != *id) {
            return ItemResult::Failed(format!("response item out of order (_id {})", body["_id"]));
        }
        let gone = op == Op::Delete && status == 404;
        if (200..300).contains(&status) || gone {
            return ItemResult::Ok;
        }
        let reason = match &body["error"] {
            Value::Object(e) => {
                let mut r = format!(
                    "{}: {}",
                    e.get("type").and_then(Value::as_str).unwrap_or("error"),
                    e.get("reason").and_then(Value::as_str).unwrap_or("")
                );
                if let Some(c) = e.get("caused_by").filter(|c| c.is_object()) {
                    r.push_str(&format!(
                        " (caused by {}: {})",
                        c["type"].as_str().unwrap_or(""),
                        c["reason"].as_str().unwrap_or("")
                    ));
                }
                r
            }
            Value::String(s) => s.clone(),
            _ => "no error detail".to_owned(),
        };
        let reason = format!("HTTP {status}: {reason}");
        if status == 429 {
            ItemResult::Retry(reason)
        } else {
            ItemResult::Failed(reason)
        }
    });
    Ok(results.collect())
}

/// Sends entries in bounded batches and reports every page.
#[derive(Debug)]
pub struct Loader<'a> {
    client: &'a Client,
    limits: Limits,
    policy: RetryPolicy,
    op: Op,
}

impl<'a> Loader<'a> {
    /// A loader for `op` actions.
    pub fn new(client: &'a Client, limits: Limits, policy: RetryPolicy, op: Op) -> Self {
        Self {
            client,
            limits,
            policy,
            op,
        }
    }

    /// The limits after any halvings.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Sends every entry; each ends up stored or reported as failed.
    pub fn load(&mut self, entries: &[Entry], report: &mut Report) {
        let mut start = 0;
        while start < entries.len() {
            let end = next_batch(entries, start, self.limits);
            let batch: Vec<usize> = (start..end).collect();
            self.send_with_item_retries(entries, batch, report);
            start = end;
        }
    }

    fn send_with_item_retries(
        &mut self,
        entries: &[Entry],
        batch: Vec<usize>,
        report: &mut Report,
    ) {
        let mut todo = batch;
        let mut rng = rand::rng();
        for round in 0.. {
            let rejected = self.send_halving(entries, todo, report);
            if rejected.is_empty() {
                return;
            }
            if round >= self.policy.max_retries {
                for (i, reason) in rejected {
                    report.fail(
                        &entries[i].label,
                        &format!("{reason} (still rejected after {round} retries)"),
                    );
                }
                return;
            }
            report.counts.retries += 1;
            report.note(&format!(
                "{} items rejected with 429; retrying",
                rejected.len()
            ));
            std::thread::sleep(self.policy.delay(round, None, &mut rng));
            todo = rejected.into_iter().map(|(i, _)| i).collect();
        }
    }

    /// Sends `batch`, splitting it on 413; returns the items rejected with 429.
    fn send_halving(
        &mut self,
        entries: &[Entry],
        batch: Vec<usize>,
        report: &mut Report,
    ) -> Vec<(usize, String)> {
        let mut rejected = Vec::new();
        let mut stack = vec![batch];
        while let Some(part) = stack.pop() {
            // Parts queued before a later 413 lowered the limits are cut to the new limits.
            let fit = fitting(entries, &part, self.limits);
            if fit < part.len() {
                stack.push(part[fit..].to_vec());
                stack.push(part[..fit].to_vec());
                continue;
            }
            let mut body = Vec::with_capacity(part.iter().map(|&i| entries[i].bytes.len()).sum());
            for &i in &part {
                body.extend_from_slice(&entries[i].bytes);
            }
            let reply = match self.client.send("POST", "/_bulk", Some((NDJSON, &body))) {
                Ok(r) => r,
                Err(e) => {
                    for &i in &part {
                        report.fail(&entries[i].label, &e.to_string());
                    }
                    continue;
                }
            };
            report.batch(part.len(), body.len(), reply.status, reply.ok());
            if reply.status == 413 {
                if part.len() == 1 {
                    let why = format!(
                        "too large: {} bytes refused with 413 even alone",
                        body.len()
                    );
                    report.fail(&entries[part[0]].label, &why);
                    continue;
                }
                report.counts.halvings += 1;
                let mid = part.len() / 2;
                self.limits.max_docs = self.limits.max_docs.min(mid);
                self.limits.max_bytes = self.limits.max_bytes.min((body.len() / 2).max(1));
                report.note(&format!(
                    "413 for {} docs ({} bytes): halving",
                    part.len(),
                    body.len()
                ));
                stack.push(part[mid..].to_vec());
                stack.push(part[..mid].to_vec());
                continue;
            }
            if !reply.ok() {
                let why = format!("HTTP {}: {}", reply.status, reply.error_summary());
                for &i in &part {
                    report.fail(&entries[i].label, &why);
                }
                continue;
            }
            rejected.extend(self.record_items(entries, &part, &reply.json(), report));
        }
        rejected
    }

    fn record_items(
        &self,
        entries: &[Entry],
        part: &[usize],
        json: &Value,
        report: &mut Report,
    ) -> Vec<(usize, String)> {
        let ids: Vec<&str> = part.iter().map(|&i| entries[i].id.as_str()).collect();
        let results = match item_results(json, &ids, self.op) {
            Ok(r) => r,
            Err(why) => {
                for &i in part {
                    report.fail(&entries[i].label, &why);
                }
                return Vec::new();
            }
        };
        let mut rejected = Vec::new();
        let mut ok = 0;
        for (&i, result) in part.iter().zip(results) {
            match result {
                ItemResult::Ok => ok += 1,
                ItemResult::Retry(why) => rejected.push((i, why)),
                ItemResult::Failed(why) => report.fail(&entries[i].label, &why),
            }
        }
        report.done(ok, self.op == Op::Delete);
        rejected
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(id: &str, len: usize) -> Entry {
        Entry {
            label: id.to_owned(),
            id: id.to_owned(),
            bytes: vec![b'x'; len],
        }
    }

    #[test]
    fn encoding_is_two_lines_each_with_a_newline() {
        let doc = json!({"title": "line one\nline two", "n": 1});
        let bytes = encode(Op::Index, "site", Some("doc"), "id-1", Some(&doc));
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.ends_with('\n'));
        let lines: Vec<&str> = text.trim_end_matches('\n').split('\n').collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            r#"{"index":{"_index":"site","_type":"doc","_id":"id-1"}}"#
        );
        assert_eq!(serde_json::from_str::<Value>(lines[1]).unwrap(), doc);
        let del = encode::<Value>(Op::Delete, "site", None, "id-2", None);
        assert_eq!(
            del,
            b"{\"delete\":{\"_index\":\"site\",\"_id\":\"id-2\"}}\n"
        );
    }

    #[test]
    fn batches_respect_docs_and_bytes_at_the_edges() {
        let entries: Vec<Entry> = (0..10).map(|i| entry(&i.to_string(), 10)).collect();
        let l = |d, b| Limits {
            max_docs: d,
            max_bytes: b,
        };
        assert_eq!(next_batch(&entries, 0, l(3, 1000)), 3);
        assert_eq!(next_batch(&entries, 0, l(100, 30)), 3); // exactly N bytes fit
        assert_eq!(next_batch(&entries, 0, l(100, 29)), 2); // N-1: one fewer
        assert_eq!(next_batch(&entries, 0, l(100, 31)), 3);
        assert_eq!(next_batch(&entries, 8, l(100, 1000)), 10);
        assert_eq!(next_batch(&entries, 0, l(100, 1)), 1); // an oversized action goes alone
        assert_eq!(next_batch(&entries, 0, l(0, 1000)), 1);
    }

    #[test]
    fn queued_parts_are_cut_to_lowered_limits() {
        let entries: Vec<Entry> = (0..10).map(|i| entry(&i.to_string(), 10)).collect();
        let part: Vec<usize> = (0..10).collect();
        let l = |d, b| Limits {
            max_docs: d,
            max_bytes: b,
        };
        assert_eq!(fitting(&entries, &part, l(100, 1000)), 10);
        assert_eq!(fitting(&entries, &part, l(4, 1000)), 4);
        assert_eq!(fitting(&entries, &part, l(100, 25)), 2);
        assert_eq!(fitting(&entries, &part, l(100, 1)), 1);
        assert_eq!(fitting(&entries, &part[7..], l(5, 1000)), 3);
    }

    #[test]
    fn item_results_by_position() {
        let resp = json!({"errors": true, "items": [
            {"index": {"_id": "a", "status": 201}},
            {"index": {"_id": "b", "status": 400, "error": {"type": "mapper_parsing_exception", "reason": "failed to parse field [weight]", "caused_by": {"type": "number_format_exception", "reason": "For input string"}}}},
            {"index": {"_id": "c", "status": 429, "error": {"type": "es_rejected_execution_exception", "reason": "queue full"}}},
            {"index": {"_id": "x", "status": 200}}
        ]});
        let r = item_results(&resp, &["a", "b", "c", "d"], Op::Index).unwrap();
        assert_eq!(r[0], ItemResult::Ok);
        assert_eq!(r[1], ItemResult::Failed("HTTP 400: mapper_parsing_exception: failed to parse field [weight] (caused by number_format_exception: For input string)".into()));
        assert!(matches!(&r[2], ItemResult::Retry(m) if m.contains("queue full")));
        assert!(matches!(&r[3], ItemResult::Failed(m) if m.contains("out of order")));
        assert!(item_results(&resp, &["a"], Op::Index)
            .unwrap_err()
            .contains("4 items for 1"));
        assert!(item_results(&json!({}), &[], Op::Index).is_err());
        let del =
            json!({"items": [{"delete": {"_id": "a", "status": 404, "result": "not_found"}}]});
        assert_eq!(
            item_results(&del, &["a"], Op::Delete).unwrap(),
            [ItemResult::Ok]
        );
        assert!(matches!(
            item_results(&del, &["a"], Op::Index).unwrap()[0],
            ItemResult::Failed(_)
        ));
    }
}
