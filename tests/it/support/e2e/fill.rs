//! Filling a tenant's indices past a disk size (metering, the overage ladder): text that
//! compresses badly, `_bulk` lines of it, the bytes a tenant's indices hold on the engine,
//! and the probes tests use to see a cluster's mode from outside.

use std::net::SocketAddr;

use serde_json::{json, Value};

use super::{engine_indices, Edge, Response, Tenant};

/// Bytes on the engine of the indices whose real names start with `prefix`.
pub fn usage(engine: SocketAddr, prefix: &str) -> u64 {
    engine_indices(engine)
        .iter()
        .filter(|i| i.name.starts_with(prefix))
        .map(|i| i.bytes)
        .sum()
}

/// Text that compresses badly (xorshift, hex), so the index grows with what is written.
pub struct Noise(pub u64);

impl Noise {
    pub fn text(&mut self, bytes: usize) -> String {
        let mut out = String::with_capacity(bytes);
        while out.len() < bytes {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            out.push_str(&format!("{:016x} ", self.0));
        }
        out
    }
}

/// `_bulk` lines indexing documents `first..first + n` of about `doc_bytes` each into
/// `index` (none: the path's index).
pub fn bulk_lines(
    index: &str,
    first: u32,
    n: u32,
    noise: &mut Noise,
    doc_bytes: usize,
) -> Vec<Value> {
    let mut lines = Vec::new();
    for i in first..first + n {
        let action = if index.is_empty() {
            json!({"index": {"_type": "doc", "_id": i.to_string()}})
        } else {
            json!({"index": {"_index": index, "_type": "doc", "_id": i.to_string()}})
        };
        lines.push(action);
        lines.push(json!({"n": i, "text": noise.text(doc_bytes)}));
    }
    lines
}

/// Writes documents into the tenant's `index` through the edge until the engine holds more
/// than `bytes` under `prefix` (or the edge refuses with 403). Returns the documents written.
pub fn fill_past(edge: &Edge, t: &Tenant, index: &str, prefix: &str, bytes: u64) -> u32 {
    fill_past_on(edge, edge.engine(), t, index, prefix, bytes)
}

/// [`fill_past`] through an edge whose upstream is `engine` (not its own).
pub fn fill_past_on(
    edge: &Edge,
    engine: SocketAddr,
    t: &Tenant,
    index: &str,
    prefix: &str,
    bytes: u64,
) -> u32 {
    let mut c = edge.client();
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
    let mut docs = 0u32;
    while usage(engine, prefix) <= bytes {
        assert!(
            docs < 4000,
            "usage stays at {} bytes",
            usage(engine, prefix)
        );
        let lines = bulk_lines(index, docs, 20, &mut noise, 400);
        let r = c.send(&t.ndjson("POST", "/_bulk?refresh=true", &lines));
        if r.status == 403 {
            break;
        }
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["errors"], false);
        docs += 20;
    }
    docs
}

/// An update that changes nothing: a write to a missing, non-whitelisted index (404 from
/// the engine when it passes, the mode's 403 when refused).
pub fn probe_update(edge: &Edge, t: &Tenant) -> Response {
    edge.send(&t.json("PUT", "/probe-missing/doc/1", &json!({"n": 0})))
}

/// A 403 whose reason starts with `reason`.
pub fn is_refused(r: &Response, reason: &str) -> bool {
    r.status == 403
        && r.json()["error"]["reason"]
            .as_str()
            .is_some_and(|s| s.starts_with(reason))
}
