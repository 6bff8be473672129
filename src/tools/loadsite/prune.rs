//! `--prune`: finds the documents of pages that no longer exist (site documents, within the
//! selected section and kinds, whose `_id` is not among this run's pages) with a plain
//! `_search` (a bool query with `must_not: ids`; works on Elasticsearch 6/7/8 and the
//! embedded engine) and deletes them through the bulk loader.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::bulk::{encode, Entry, Op};
use super::http::Client;
use super::page::Selection;

/// Hits fetched per search round.
pub const PAGE_SIZE: usize = 1000;

/// Why pruning could not find the stale documents.
#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    /// The search was refused.
    #[error("searching for stale documents: HTTP {0}: {1}")]
    Status(u16, String),
    /// Transport failure.
    #[error(transparent)]
    Http(#[from] super::http::HttpError),
    /// The same documents came back after being deleted.
    #[error("stale documents are still found after deleting them; giving up")]
    NoProgress,
}

/// The search body for stale documents.
pub fn stale_query(selection: &Selection, keep: &[&str], size: usize) -> Value {
    let mut filter = vec![json!({"exists": {"field": "objectID"}})];
    if let Some(section) = &selection.section {
        filter.push(json!({"term": {"section": section}}));
    }
    if !selection.kinds.is_empty() {
        filter.push(json!({"terms": {"kind": selection.kinds}}));
    }
    json!({
        "size": size,
        "_source": ["relpermalink", "lang"],
        "query": {"bool": {"filter": filter, "must_not": [{"ids": {"values": keep}}]}}
    })
}

/// The hits of a search answer as delete entries (skipping ids in `keep`, in case a server
/// ignores part of the query).
pub fn stale_entries(
    answer: &Value,
    keep: &HashSet<&str>,
    index: &str,
    doc_type: Option<&str>,
) -> Vec<Entry> {
    let hits = answer["hits"]["hits"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    hits.iter()
        .filter_map(|h| {
            let id = h["_id"].as_str()?;
            if keep.contains(id) {
                return None;
            }
            let src = &h["_source"];
            let label = match (src["relpermalink"].as_str(), src["lang"].as_str()) {
                (Some(p), Some(l)) => format!("{p} [{l}] (stale, id {id})"),
                _ => format!("stale document {id}"),
            };
            Some(Entry {
                label,
                id: id.to_owned(),
                bytes: encode::<Value>(Op::Delete, index, doc_type, id, None),
            })
        })
        .collect()
}

/// Best-effort `_refresh` so that searches see the latest writes (servers that lack the
/// endpoint still answer searches, only later).
pub fn refresh(client: &Client, index: &str) -> bool {
    client
        .send("POST", &format!("/{index}/_refresh"), None)
        .map(|r| r.ok())
        .unwrap_or(false)
}

/// Finds one round of stale documents (at most `PAGE_SIZE`). `seen` holds the ids returned
/// by earlier rounds: if they all come back, deletes are not taking effect.
pub fn find_stale(
    client: &Client,
    index: &str,
    doc_type: Option<&str>,
    selection: &Selection,
    keep: &HashSet<&str>,
    seen: &mut HashSet<String>,
) -> Result<Vec<Entry>, PruneError> {
    let mut keep_list: Vec<&str> = keep.iter().copied().collect();
    keep_list.sort_unstable();
    let body =
        serde_json::to_vec(&stale_query(selection, &keep_list, PAGE_SIZE)).unwrap_or_default();
    let reply = client.send(
        "POST",
        &format!("/{index}/_search"),
        Some(("application/json", &body)),
    )?;
    if !reply.ok() {
        return Err(PruneError::Status(reply.status, reply.error_summary()));
    }
    let entries = stale_entries(&reply.json(), keep, index, doc_type);
    if !entries.is_empty() && entries.iter().all(|e| seen.contains(&e.id)) {
        return Err(PruneError::NoProgress);
    }
    seen.extend(entries.iter().map(|e| e.id.clone()));
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_limits_to_site_documents_and_the_selection() {
        let sel = Selection::new(Some("posts"), &["page".to_owned()]);
        let q = stale_query(&sel, &["a", "b"], 10);
        assert_eq!(q["size"], 10);
        let filter = q["query"]["bool"]["filter"].as_array().unwrap();
        assert_eq!(filter[0], json!({"exists": {"field": "objectID"}}));
        assert_eq!(filter[1], json!({"term": {"section": "posts"}}));
        assert_eq!(filter[2], json!({"terms": {"kind": ["page"]}}));
        assert_eq!(
            q["query"]["bool"]["must_not"][0]["ids"]["values"],
            json!(["a", "b"])
        );
        let all = stale_query(&Selection::default(), &[], 10);
        assert_eq!(all["query"]["bool"]["filter"].as_array().unwrap().len(), 1);
        let root = stale_query(&Selection::new(Some("/"), &[]), &[], 10);
        assert_eq!(
            root["query"]["bool"]["filter"][1],
            json!({"term": {"section": ""}})
        );
    }

    #[test]
    fn hits_become_delete_entries_but_never_for_kept_ids() {
        let answer = json!({"hits": {"total": 2, "hits": [
            {"_id": "old", "_source": {"relpermalink": "/gone/", "lang": "en"}},
            {"_id": "keep-me", "_source": {}},
            {"_id": "bare"}
        ]}});
        let keep: HashSet<&str> = ["keep-me"].into_iter().collect();
        let e = stale_entries(&answer, &keep, "site", Some("doc"));
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].label, "/gone/ [en] (stale, id old)");
        assert_eq!(
            e[0].bytes,
            b"{\"delete\":{\"_index\":\"site\",\"_type\":\"doc\",\"_id\":\"old\"}}\n"
        );
        assert_eq!(e[1].label, "stale document bare");
    }
}
