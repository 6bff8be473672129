//! The Prometheus text exposition (format 0.0.4) of the hub's figures, the registry's
//! allowance gauges and the process figures: [`prometheus`] is a pure function of its
//! inputs; [`scrape`] gathers them now. The one renderer of `GET /metrics`, on the admin
//! listener (bearer token) and on the unauthenticated `[edge] metrics` listener alike.
//!
//! Labels are bounded: `cluster` (the registry's cluster id), `code` (status class) and
//! `core` (worker number); never index names, paths or anything a client chooses. The
//! three latency histograms share one bucket set from 1 ms to 60 s (`buckets`).
//!
//! Must not touch: the hub's internals (it renders a [`HubSnapshot`]), sockets.

use std::fmt::Write as _;
use std::time::{Instant, SystemTime};

use super::buckets::Buckets;
use super::faults::PanicSite;
use super::hub::{ClusterTotals, HubSnapshot, MetricsHub};
use super::process::ProcessFigures;
use crate::nodes::resolve::NameView;
use crate::nodes::{NodeBook, NodeView, RetryReason};
use crate::policy::admit::Limit;
use crate::registry::Snapshot;

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

const CLASSES: [(usize, &str); 6] = [
    (1, "1xx"),
    (2, "2xx"),
    (3, "3xx"),
    (4, "4xx"),
    (5, "5xx"),
    (0, "other"),
];

/// The exposition now: the hub's figures (samples handed over so far counted first), the
/// registry's allowance gauges, the process figures read from `/proc`.
pub fn scrape(hub: &MetricsHub, registry: &Snapshot, nodes: &NodeBook) -> String {
    let mut text = prometheus(
        &hub.snapshot(SystemTime::now()),
        registry,
        &ProcessFigures::read(),
    );
    text.push_str(&node_figures(
        &nodes.views(Instant::now()),
        &nodes.retries(),
    ));
    text.push_str(&name_figures(&nodes.names()));
    text
}

/// Renders every family but the upstream nodes' (see [`node_figures`]).
pub fn prometheus(hub: &HubSnapshot, registry: &Snapshot, process: &ProcessFigures) -> String {
    let mut out = Out(String::with_capacity(4096 + hub.clusters.len() * 6000));
    cluster_counters(&mut out, hub);
    cluster_histograms(&mut out, hub);
    allowance_gauges(&mut out, registry);
    core_figures(&mut out, hub);
    process_figures(&mut out, hub, process);
    fault_counts(&mut out, hub);
    if let Some(f) = &hub.fleet {
        fleet_figures(&mut out, f);
    }
    if let Some(p) = &hub.peers {
        peer_figures(&mut out, p);
    }
    out.0
}

/// The upstream nodes' health (one gauge per node and state), ejections, failed checks,
/// and the retries made by reason.
pub fn node_figures(views: &[NodeView], retries: &[(RetryReason, u64)]) -> String {
    let mut out = Out(String::with_capacity(256 + views.len() * 400));
    out.family(
        "searchgate_upstream_node_up",
        "gauge",
        "1 when requests may go to the upstream node (health checks pass, not ejected).",
    );
    for v in views {
        let labels = format!("node=\"{}\",state=\"{}\"", v.addr, v.state());
        out.sample(
            "searchgate_upstream_node_up",
            &labels,
            u64::from(v.state() == "up"),
        );
    }
    type Figure = fn(&NodeView) -> u64;
    let counters: [(&str, &str, Figure); 2] = [
        (
            "searchgate_upstream_node_ejections_total",
            "Times the node was ejected after failed requests.",
            |v| v.ejections,
        ),
        (
            "searchgate_upstream_node_checks_failed_total",
            "Active health checks of the node that failed.",
            |v| v.checks_failed,
        ),
    ];
    for (name, help, value) in counters {
        out.family(name, "counter", help);
        for v in views {
            out.sample(name, &format!("node=\"{}\"", v.addr), value(v));
        }
    }
    out.family(
        "searchgate_upstream_retries_total",
        "counter",
        "Requests tried a second time, by why the first try failed.",
    );
    for (why, n) in retries {
        let labels = format!("reason=\"{}\"", why.label());
        out.sample("searchgate_upstream_retries_total", &labels, *n);
    }
    out.0
}

/// A family of the host-name series: name, type, help, and its value for one name.
type NameFamily = (
    &'static str,
    &'static str,
    &'static str,
    fn(&NameView) -> u64,
);

/// The upstream host names: how many addresses each resolves to now, and failed lookups
/// (a name that stops resolving keeps its last addresses).
pub fn name_figures(names: &[NameView]) -> String {
    let mut out = Out(String::with_capacity(128 + names.len() * 200));
    let families: [NameFamily; 2] = [
        (
            "searchgate_upstream_name_addresses",
            "gauge",
            "Addresses an upstream host name resolves to (kept from the last answer when a lookup fails).",
            |n| n.addrs.len() as u64,
        ),
        (
            "searchgate_upstream_resolve_failures_total",
            "counter",
            "Lookups of an upstream host name that failed or found nothing.",
            |n| n.failures,
        ),
    ];
    for (family, kind, help, value) in families {
        out.family(family, kind, help);
        for n in names {
            let labels = format!("name=\"{}\"", escape(&n.name));
            out.sample(family, &labels, value(n));
        }
    }
    out.0
}

struct Out(String);

impl Out {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    /// One sample: `name{labels} value`; `labels` already rendered (may be empty).
    fn sample(&mut self, name: &str, labels: &str, value: impl std::fmt::Display) {
        if labels.is_empty() {
            let _ = writeln!(self.0, "{name} {value}");
        } else {
            let _ = writeln!(self.0, "{name}{{{labels}}} {value}");
        }
    }
}

/// A label value with `\`, `"` and newlines escaped as the format asks.
fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

fn cluster_label(id: &str) -> String {
    format!("cluster=\"{}\"", escape(id))
}

fn cluster_counters(out: &mut Out, hub: &HubSnapshot) {
    let name = "searchgate_requests_total";
    out.family(
        name,
        "counter",
        "Requests answered, by cluster and status class.",
    );
    for (id, t) in &hub.clusters {
        let c = cluster_label(id);
        for (i, class) in CLASSES {
            if i != 0 || t.status_classes[0] > 0 {
                out.sample(name, &format!("{c},code=\"{class}\""), t.status_classes[i]);
            }
        }
    }
    type Field = fn(&ClusterTotals) -> u64;
    let counters: [(&str, &str, Field); 5] = [
        (
            "searchgate_request_bytes_total",
            "Bytes received from clients (heads and bodies).",
            |t| t.bytes_in,
        ),
        (
            "searchgate_response_bytes_total",
            "Bytes sent to clients.",
            |t| t.bytes_out,
        ),
        (
            "searchgate_request_too_large_total",
            "Requests answered 413 Request Too Large.",
            |t| t.too_large,
        ),
        (
            "searchgate_too_many_requests_total",
            "Requests answered 429 Too Many Requests.",
            |t| t.too_many,
        ),
        (
            "searchgate_gateway_timeouts_total",
            "Requests answered 504 Gateway Timeout.",
            |t| t.timeouts,
        ),
    ];
    for (name, help, field) in counters {
        out.family(name, "counter", help);
        for (id, t) in &hub.clusters {
            out.sample(name, &cluster_label(id), field(t));
        }
    }
}

fn cluster_histograms(out: &mut Out, hub: &HubSnapshot) {
    type Field = fn(&ClusterTotals) -> &Buckets;
    let families: [(&str, &str, Field); 3] = [
        (
            "searchgate_request_duration_seconds",
            "Whole request at the edge, first byte of the head to the last byte answered.",
            |t| &t.total,
        ),
        (
            "searchgate_queue_wait_seconds",
            "Wait for a concurrency slot, of the requests that queued.",
            |t| &t.queue,
        ),
        (
            "searchgate_upstream_duration_seconds",
            "Time a request held its concurrency slot: upstream exchange and relay.",
            |t| &t.upstream,
        ),
    ];
    for (name, help, field) in families {
        out.family(name, "histogram", help);
        let (bucket, sum, count) = (
            format!("{name}_bucket"),
            format!("{name}_sum"),
            format!("{name}_count"),
        );
        for (id, t) in &hub.clusters {
            let c = cluster_label(id);
            let b = field(t);
            for (le, n) in b.cumulative() {
                out.sample(&bucket, &format!("{c},le=\"{le}\""), n);
            }
            out.sample(&sum, &c, b.sum_us as f64 / 1e6);
            out.sample(&count, &c, b.count());
        }
    }
}

fn allowance_gauges(out: &mut Out, registry: &Snapshot) {
    type Field = fn(&crate::policy::admit::Allowance) -> u32;
    let gauges: [(&str, &str, Field); 3] = [
        (
            "searchgate_requests_in_flight",
            "Requests holding a concurrency slot now.",
            |a| a.in_flight(),
        ),
        (
            "searchgate_queue_depth",
            "Requests waiting for a concurrency slot now.",
            |a| a.queued(),
        ),
        (
            "searchgate_allowance",
            "The plan's concurrency allowance.",
            |a| a.limit(),
        ),
    ];
    for (name, help, field) in gauges {
        out.family(name, "gauge", help);
        for c in registry.clusters() {
            out.sample(name, &cluster_label(&c.id), field(&c.allowance));
        }
    }
    limit_figures(out, registry);
}

/// The same figures per limit (`shared`, and `search`/`write` where the plan gives them
/// their own allowance), with the 429s each limit answered.
fn limit_figures(out: &mut Out, registry: &Snapshot) {
    type Field = fn(&crate::policy::admit::Allowance) -> u64;
    let figures: [(&str, &str, &str, Field); 4] = [
        (
            "searchgate_limit_in_flight",
            "gauge",
            "Requests holding a slot of this limit now.",
            |a| u64::from(a.in_flight()),
        ),
        (
            "searchgate_limit_queue_depth",
            "gauge",
            "Requests waiting for a slot of this limit now.",
            |a| u64::from(a.queued()),
        ),
        (
            "searchgate_limit_concurrency",
            "gauge",
            "The plan's concurrency for this limit.",
            |a| u64::from(a.limit()),
        ),
        (
            "searchgate_limit_rejections_total",
            "counter",
            "Requests this limit answered 429 (queue full or queue timeout).",
            |a| a.refusals(),
        ),
    ];
    for (name, kind, help, field) in figures {
        out.family(name, kind, help);
        for c in registry.clusters() {
            for limit in Limit::ALL {
                let in_use = match limit {
                    Limit::Shared => true,
                    Limit::Search => c.plan.split.search.is_some(),
                    Limit::Write => c.plan.split.write.is_some(),
                };
                if in_use {
                    let labels = format!("{},limit=\"{}\"", cluster_label(&c.id), limit.name());
                    out.sample(name, &labels, field(c.lanes.get(limit, &c.allowance)));
                }
            }
        }
    }
}

fn core_figures(out: &mut Out, hub: &HubSnapshot) {
    type Field = fn(&super::hub::CoreTotals) -> u64;
    let figures: [(&str, &str, &str, Field); 4] = [
        (
            "searchgate_core_requests_total",
            "counter",
            "Requests answered by each worker core.",
            |c| c.requests,
        ),
        (
            "searchgate_core_unrouted_requests_total",
            "counter",
            "Requests refused before a cluster was known.",
            |c| c.unrouted,
        ),
        (
            "searchgate_core_connections",
            "gauge",
            "Open client connections per worker core.",
            |c| c.connections,
        ),
        (
            "searchgate_core_dropped_samples_total",
            "counter",
            "Metric samples lost to a full buffer.",
            |c| c.dropped,
        ),
    ];
    for (name, kind, help, field) in figures {
        out.family(name, kind, help);
        for (i, core) in hub.cores.iter().enumerate() {
            out.sample(name, &format!("core=\"{i}\""), field(core));
        }
    }
}

fn process_figures(out: &mut Out, hub: &HubSnapshot, p: &ProcessFigures) {
    let connections: u64 = hub.cores.iter().map(|c| c.connections).sum();
    out.family(
        "searchgate_connections",
        "gauge",
        "Open client connections.",
    );
    out.sample("searchgate_connections", "", connections);
    let figures = [
        ("process_open_fds", "Open file descriptors.", p.open_fds),
        (
            "process_max_fds",
            "Limit of open file descriptors.",
            p.max_fds,
        ),
        (
            "process_resident_memory_bytes",
            "Resident memory.",
            p.resident_bytes,
        ),
    ];
    for (name, help, value) in figures {
        if let Some(v) = value {
            out.family(name, "gauge", help);
            out.sample(name, "", v);
        }
    }
    let window = [
        (
            "searchgate_latency_window_bytes",
            "gauge",
            "Memory held by the latency window.",
            hub.window_bytes,
        ),
        (
            "searchgate_latency_window_covered_seconds",
            "gauge",
            "Span the latency window covers.",
            hub.window_covered_secs,
        ),
        (
            "searchgate_latency_window_evicted_total",
            "counter",
            "Window minutes dropped to stay within its budget.",
            hub.window_evicted,
        ),
    ];
    for (name, kind, help, value) in window {
        out.family(name, kind, help);
        out.sample(name, "", value);
    }
}

/// The faults the process contained: panics caught by component, restarts.
fn fault_counts(out: &mut Out, hub: &HubSnapshot) {
    let f = &hub.faults;
    out.family(
        "searchgate_panics_total",
        "counter",
        "Panics caught in a connection's task; the connection ended, the process lived on.",
    );
    for site in PanicSite::ALL {
        let labels = format!("component=\"{}\"", site.label());
        out.sample("searchgate_panics_total", &labels, f.panics(site));
    }
    let restarts = [
        (
            "searchgate_worker_restarts_total",
            "Edge worker threads started again after one died.",
            f.worker_restarts,
        ),
        (
            "searchgate_engine_restarts_total",
            "Times the supervised engine child was started again after it exited.",
            f.engine_restarts,
        ),
    ];
    for (name, help, value) in restarts {
        out.family(name, "counter", help);
        out.sample(name, "", value);
    }
}

/// This node's reading of the fleet's shared store (only on a node that follows one).
fn fleet_figures(out: &mut Out, f: &super::fleet::FleetFigures) {
    let gauges = [
        (
            "searchgate_store_up",
            "1 when this node's last read of the shared store succeeded, 0 while it cannot reach it.",
            f64::from(u8::from(f.store_up)),
        ),
        (
            "searchgate_feed_lag_seconds",
            "Seconds since this node last read the store's change feed to its end.",
            f.lag_seconds,
        ),
        (
            "searchgate_feed_applied_seq",
            "The last change of the store's feed this node applied.",
            f.applied_seq as f64,
        ),
    ];
    for (name, help, value) in gauges {
        out.family(name, "gauge", help);
        out.sample(name, "", value);
    }
}

/// This node's part in admitting each cluster at its home (issue 27).
fn peer_figures(out: &mut Out, p: &super::fleet::PeerFigures) {
    out.family(
        "searchgate_fleet_homes",
        "gauge",
        "Clusters this node is home of (it admits their requests for the whole fleet).",
    );
    out.sample("searchgate_fleet_homes", "", p.homes);
    out.family(
        "searchgate_fleet_nodes",
        "gauge",
        "Live nodes of the fleet in this node's view (itself included).",
    );
    out.sample("searchgate_fleet_nodes", "", p.nodes);
    let counters = [
        (
            "searchgate_fleet_handovers_total",
            "Clusters this node became home of since it started (a node joined, left or died).",
            p.handovers,
        ),
        (
            "searchgate_fleet_remote_permits_total",
            "Requests this node admitted with a permit from another node, their cluster's home.",
            p.remote_permits,
        ),
        (
            "searchgate_fleet_peer_grants_total",
            "Permits this node granted to other nodes as a cluster's home.",
            p.peer_grants,
        ),
        (
            "searchgate_fleet_unavailable_total",
            "Requests answered 503 because no home could admit them at that moment.",
            p.unavailable,
        ),
    ];
    for (name, help, value) in counters {
        out.family(name, "counter", help);
        out.sample(name, "", value);
    }
}

#[cfg(test)]
#[path = "expose_tests.rs"]
mod tests;
