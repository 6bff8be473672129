//! A cluster's request log, as its customer sees it (issue 29): `GET
//! /v1/clusters/{id}/requests` (the most recent requests, newest first) and `?slow=true`
//! (the most recent ones at or over the cluster's slow threshold), read from the rings the
//! edge of this process keeps (`registry::requestlog`); `PUT
//! /v1/clusters/{id}/slow_threshold` sets the threshold (`cluster.slow_threshold` in the
//! audit log, see `clusters::slow_threshold`).
//!
//! Must not touch: the rings' bounds (the registry's), the tenants' internal names (the
//! rings never hold them).

use serde_json::{json, Value};

use super::{Api, ApiError, Request, Response};
use crate::calendar::rfc3339_of_millis;
use crate::registry::requestlog::{RequestEntry, DEFAULT_SLOW_MS};

/// `GET /v1/clusters/{id}/requests[?slow=true]`.
pub(super) fn list(api: &Api, req: &Request, id: &str) -> Result<Response, ApiError> {
    let slow = match req.param("slow").as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "`slow`: true or false, not `{other}`"
            )))
        }
    };
    let plane = api.plane();
    let snap = plane.snapshot();
    let record = match snap.catalog.clusters.get(id) {
        Some(r) if r.is_live() => r.clone(),
        Some(_) => {
            return Err(ApiError::new(
                410,
                "gone",
                format!("cluster `{id}` was destroyed"),
            ))
        }
        None => return Err(ApiError::not_found(format!("no cluster `{id}`"))),
    };
    let entries = snap
        .by_id(id)
        .map(|c| c.state.requests.list(slow))
        .unwrap_or_default();
    let requests: Vec<Value> = entries.iter().map(entry).collect();
    Ok(Response::ok(
        200,
        json!({
            "cluster": id,
            "slow": slow,
            "slow_threshold_ms": record.slow_request_ms.unwrap_or(DEFAULT_SLOW_MS),
            "requests": requests,
        }),
    ))
}

/// One entry (times in ms, with µs precision).
fn entry(e: &RequestEntry) -> Value {
    let ms = |us: u64| us as f64 / 1000.0;
    json!({
        "time": rfc3339_of_millis(e.at_ms),
        "key": e.key,
        "client": e.client.to_string(),
        "method": e.method,
        "path": e.path,
        "status": e.status,
        "queue_ms": e.queue_us.map(ms),
        "upstream_ms": e.upstream_us.map(ms),
        "total_ms": ms(e.total_us),
        "bytes_in": e.bytes_in,
        "bytes_out": e.bytes_out,
    })
}
