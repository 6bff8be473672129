//! Comparing answers of the end-to-end tenancy tests: masking what legitimately differs
//! between two runs (timings, sizes, uuids, the order of equal scores), and every byte a
//! client received.

use serde_json::Value;

use super::client::Response;

/// JSON keys whose values legitimately differ between two runs of one script.
pub const VOLATILE: &[&str] = &[
    "took",
    "store.size",
    "pri.store.size",
    "uuid",
    "creation_date",
];

/// Hits of equal score come in no defined order (the engine's order among them depends on
/// its segments): order them by index and id, keeping the order by score.
pub fn order_ties(hits: &mut [Value]) {
    let key = |h: &Value| {
        (
            -h["_score"].as_f64().unwrap_or(0.0),
            h["_index"].as_str().unwrap_or("").to_string(),
            h["_id"].as_str().unwrap_or("").to_string(),
        )
    };
    hits.sort_by(|a, b| key(a).partial_cmp(&key(b)).unwrap());
}

pub fn strip_volatile(v: &mut Value) {
    if let Some(Value::Array(hits)) = v.pointer_mut("/hits/hits") {
        let unsorted = hits.iter().all(|h| h.get("sort").is_none());
        if unsorted {
            order_ties(hits);
        }
    }
    match v {
        Value::Object(m) => {
            for k in VOLATILE {
                if m.contains_key(*k) {
                    m.insert(k.to_string(), Value::from("*"));
                }
            }
            m.values_mut().for_each(strip_volatile);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_volatile),
        _ => {}
    }
}

/// Status, content type and the body with volatile parts masked: JSON re-serialised, a
/// `_cat/indices` text table as words per line with the two size columns masked.
pub fn normalize(r: &Response) -> String {
    let ct = r.header("content-type").unwrap_or("").to_string();
    let body = if r.body.is_empty() {
        String::new()
    } else if ct.starts_with("application/json") {
        let mut v = r.json();
        strip_volatile(&mut v);
        serde_json::to_string(&v).unwrap()
    } else {
        let mut out = String::new();
        for line in r.text().lines() {
            let mut words: Vec<&str> = line.split_whitespace().collect();
            if words.len() == 9 {
                words[7] = "*";
                words[8] = "*";
            }
            out.push_str(&words.join(" "));
            out.push('\n');
        }
        out
    };
    format!("{} {}\n{}", r.status, ct, body)
}

/// Every byte a tenant received (headers and body).
pub fn all_bytes(r: &Response) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in &r.headers {
        out.extend_from_slice(format!("{k}: {v}\n").as_bytes());
    }
    out.extend_from_slice(&r.body);
    out
}

pub fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}
