//! The admin API's read-only views of what the edge measures (issue 13): `GET /metrics`,
//! the Prometheus exposition (`metrics::expose::scrape`, the same renderer as the
//! `[edge] metrics` listener), and `GET /v1/clusters/{id}/latency?window=5m`, a cluster's
//! latency report (`metrics::latency::report`: percentiles, HdrHistogram's percentile
//! distribution, requests per interval, the encoded histograms). Both sit behind the admin
//! token like every other route (`api::handle` checks it first).
//!
//! Kept apart from the change endpoints: these read the hub and the registry's published
//! snapshot, never the plane (a scrape does not wait for a commit).
//!
//! Must not touch: sockets, the plane, the hub's internals.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use super::{method_name, Api, ApiError, Request, Response};
use crate::metrics::latency::{parse_window, report};
use crate::metrics::{expose, MetricsHub};
use crate::nodes::NodeBook;
use crate::proto::Method;
use crate::registry::Registry;

/// The window of a latency report when the request names none.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(300);

/// What these routes read: the edge's metrics hub, the registry the edge routes by, and
/// the upstream nodes' health.
#[derive(Debug, Clone)]
pub struct Observe {
    pub hub: Arc<MetricsHub>,
    pub registry: Arc<Registry>,
    pub nodes: Arc<NodeBook>,
}

/// The answer when `req` is one of these routes; `None` lets the other routes answer.
pub(super) fn route(api: &Api, req: &Request) -> Option<Result<Response, ApiError>> {
    let segs: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    let answer = match (req.method, segs.as_slice()) {
        (Method::Get, ["metrics"]) => metrics(&api.observe, req),
        (Method::Get, ["v1", "clusters", id, "latency"]) => latency(&api.observe, req, id),
        (Method::Get, ["v1", "pools"]) => pools(&api.observe, req),
        (m, ["metrics"] | ["v1", "clusters", _, "latency"] | ["v1", "pools"]) => {
            Err(ApiError::new(
                405,
                "method_not_allowed",
                format!("{} is not allowed on {}", method_name(m), req.path),
            ))
        }
        _ => return None,
    };
    Some(answer)
}

/// Refuses query parameters other than `known` (a parameter this does not implement is
/// never ignored silently).
fn only_params(req: &Request, known: &[&str]) -> Result<(), ApiError> {
    for (name, _) in &req.params {
        if !known.contains(&name.as_str()) {
            let allowed = if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            };
            return Err(ApiError::bad_request(format!(
                "query parameter `{name}` is not supported on {} (supported: {allowed})",
                req.path
            )));
        }
    }
    Ok(())
}

fn metrics(o: &Observe, req: &Request) -> Result<Response, ApiError> {
    only_params(req, &[])?;
    let text = expose::scrape(&o.hub, &o.registry.load(), &o.nodes);
    Ok(Response::text(200, expose::CONTENT_TYPE, text))
}

fn latency(o: &Observe, req: &Request, id: &str) -> Result<Response, ApiError> {
    only_params(req, &["window"])?;
    let window = match req.param("window") {
        None => DEFAULT_WINDOW,
        Some(w) => parse_window(&w).map_err(|e| ApiError::bad_request(format!("`window`: {e}")))?,
    };
    // Clusters the catalog knows (destroyed ones too: their figures stay until restart).
    if !o.registry.load().catalog.clusters.contains_key(id) {
        return Err(ApiError::not_found(format!("no cluster `{id}`")));
    }
    let r = report(&o.hub, id, window, SystemTime::now());
    let body = serde_json::to_value(&r).map_err(|e| {
        ApiError::new(
            500,
            "internal",
            format!("the latency report of `{id}`: {e}"),
        )
    })?;
    Ok(Response::ok(200, body))
}

/// The upstream pools: the named ones (`[[upstream_pools]]`, used or not), then each
/// distinct list of nodes the other live clusters use (unnamed); the clusters on each, and
/// each node's health. Nodes nobody checks (a cluster's only node) are `unchecked`.
fn pools(o: &Observe, req: &Request) -> Result<Response, ApiError> {
    only_params(req, &[])?;
    let snap = o.registry.load();
    let mut named: Vec<(&str, Vec<String>)> = snap
        .pools
        .iter()
        .map(|(p, _)| (p.name.as_str(), Vec::new()))
        .collect();
    let mut lists: Vec<(Vec<SocketAddr>, Vec<String>)> = Vec::new();
    for c in snap.clusters() {
        if let Some(ids) = c
            .pool
            .as_deref()
            .and_then(|p| named.iter_mut().find(|(n, _)| *n == p).map(|(_, ids)| ids))
        {
            ids.push(c.id.clone());
            continue;
        }
        match lists.iter_mut().find(|(nodes, _)| *nodes == c.upstreams) {
            Some((_, ids)) => ids.push(c.id.clone()),
            None => lists.push((c.upstreams.clone(), vec![c.id.clone()])),
        }
    }
    let views = o.nodes.views(Instant::now());
    let node = |a: &SocketAddr| match views.iter().find(|v| v.addr == *a) {
        Some(v) => json!({
            "address": a.to_string(),
            "state": v.state(),
            "ejected_for_ms": v.ejected_for.map(|d| d.as_millis() as u64),
            "ejections": v.ejections,
            "checks_failed": v.checks_failed,
            "in_flight": v.in_flight,
        }),
        None => json!({"address": a.to_string(), "state": "unchecked"}),
    };
    let mut list: Vec<Value> = snap
        .pools
        .iter()
        .zip(&named)
        .map(|((spec, addrs), (_, ids))| {
            json!({
                "name": spec.name,
                "hosts": spec.nodes,
                "clusters": ids,
                "nodes": addrs.iter().map(node).collect::<Vec<_>>(),
                "check": {
                    "path": spec.health.path,
                    "interval_ms": spec.health.interval.as_millis() as u64,
                    "timeout_ms": spec.health.timeout.as_millis() as u64,
                    "rise": spec.health.rise,
                    "fall": spec.health.fall,
                },
            })
        })
        .collect();
    list.extend(lists.iter().map(|(nodes, ids)| {
        json!({
            "name": null,
            "clusters": ids,
            "nodes": nodes.iter().map(node).collect::<Vec<_>>(),
        })
    }));
    Ok(Response::ok(200, json!({ "pools": list })))
}

#[cfg(test)]
#[path = "observe_tests.rs"]
mod tests;
