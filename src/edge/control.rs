//! The control thread's periodic work, over plain HTTP to each cluster's upstream:
//! - readiness: a single-tenant cluster that is new (or moved) answers 404 until its
//!   upstream answers `GET /`; probed every half second; the first answer is recorded in
//!   the store (`provisioned`, actor `system`);
//! - purging: a destroyed multitenant cluster's indices are deleted from its shared
//!   upstream (retried until done, across restarts), then recorded (`purged`);
//! - metering: every `metering_interval`, each cluster's disk, shards and documents are read
//!   from `_cat/indices?bytes=b&format=json` (restricted to the cluster's own indices) and
//!   fed to the overage ladder (`control::overage`: notice, read-only, disabled, normal
//!   again, each step committed and audited). Steps are printed;
//! - usage history: every `[billing] usage_interval` of the control plane's clock, a sample
//!   of each metered cluster (its reading and the metrics hub's request and byte counters)
//!   is stored (`control::usage`), and once more when the thread stops.
//!
//! Must not touch: the cores' request path (it only writes `ClusterState` atomics, and
//! records through the control plane).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::config::{ClusterClass, Mode as ConfigMode};
use crate::control::clock::Clock;
use crate::control::overage::step_of;
use crate::control::plane::{lock, SharedPlane};
use crate::control::plane::{Change, Purge};
use crate::control::usage::{Counters, Flushes, Sampler};
use crate::metrics::MetricsHub;
use crate::nodes::NodeBook;
use crate::outbound::{self, Trust};
use crate::policy::shards::{
    index_names_from_cat_indices, open_contexts_from_stats, usage_from_cat_indices,
};
use crate::registry::{Cluster, Command, Registry, Snapshot};
use crate::tenancy::{self, Prefix};

/// How the control thread reaches upstreams.
fn agent() -> ureq::Agent {
    outbound::agent("metering", Duration::from_secs(3), Trust::BuiltIn)
}

/// What metering reads for a cluster: `_cat/indices` of its own indices only (on a shared
/// engine, those under its prefix).
pub fn usage_url(addr: SocketAddr, prefix: Option<&Prefix>) -> String {
    let mut target = Vec::with_capacity(128);
    tenancy::write_metering_target(prefix, &mut target);
    format!("http://{addr}{}", String::from_utf8_lossy(&target))
}

/// Settings of the control loop.
#[derive(Debug, Clone)]
pub struct ControlSettings {
    pub metering_interval: Duration,
    /// A usage sample of every metered cluster this often (the control plane's clock).
    pub usage_interval: Duration,
    /// Samples older than this are deleted.
    pub usage_retention: Duration,
    /// This node's name (`[fleet] node_id`): the usage batches it writes are named after it.
    pub node: String,
}

/// Probes every cluster whose upstream has not answered yet, once, and records the first
/// answer of each in the store. Returns how many are now ready.
pub fn probe_unready(registry: &Registry, plane: &SharedPlane) -> usize {
    let agent = agent();
    let snap = registry.load();
    let mut ready = Vec::new();
    for c in snap.clusters().filter(|c| !c.state.is_ready()) {
        let up = c
            .upstreams
            .iter()
            .any(|a| agent.get(&format!("http://{a}/")).call().is_ok());
        if up {
            c.state.set_ready(true);
            println!("searchgate: cluster {} is up: its upstream answers", c.id);
            ready.push(c.id.clone());
        }
    }
    let unrecorded: Vec<String> = snap
        .clusters()
        .filter(|c| c.state.is_ready() && c.record.provisioned_at.is_none())
        .map(|c| c.id.clone())
        .collect();
    if !unrecorded.is_empty() {
        if let Err(e) = lock(plane).mark_provisioned(&unrecorded) {
            eprintln!("searchgate: recording provisioned clusters: {e}");
        }
    }
    ready.len()
}

/// `name` for a URL path: unreserved bytes as they are, the rest percent-encoded.
fn path_segment(name: &str) -> String {
    searchgate_core::percent::encode_component(name)
}

/// Deletes a destroyed tenant's indices from its shared upstream (a usable node of it).
/// True when none is left.
fn purge(agent: &ureq::Agent, p: &Purge, nodes: &NodeBook) -> bool {
    let Some(upstream) = nodes.first_usable(&p.upstreams, Instant::now()) else {
        return false;
    };
    let url = usage_url(upstream, Some(&p.prefix));
    let Ok(mut resp) = agent.get(&url).call() else {
        return false;
    };
    let body = match resp.status().as_u16() {
        200 => resp.body_mut().read_to_vec().unwrap_or_default(),
        _ => return false,
    };
    let Ok(names) = index_names_from_cat_indices(&body) else {
        return false;
    };
    // Only names under the tenant's prefix, whatever the upstream answered.
    let names: Vec<&String> = names
        .iter()
        .filter(|n| n.as_bytes().starts_with(p.prefix.as_bytes()))
        .collect();
    for name in &names {
        let url = format!("http://{}/{}", upstream, path_segment(name));
        match agent.delete(&url).call() {
            Ok(r) if r.status() == 200 || r.status() == 404 => {}
            _ => return false,
        }
    }
    println!(
        "searchgate: cluster {}: its {} index(es) were deleted from {}",
        p.id,
        names.len(),
        upstream
    );
    true
}

/// Purges every destroyed tenant still pending, and records each one done.
fn purge_pending(agent: &ureq::Agent, plane: &SharedPlane, nodes: &NodeBook) {
    let pending = lock(plane).pending_purges();
    for p in pending {
        if purge(agent, &p, nodes) {
            let change = Change {
                actor: "system".into(),
                cmds: vec![Command::MarkPurged { id: p.id.clone() }],
                ..Change::default()
            };
            if let Err(e) = lock(plane).submit(change) {
                eprintln!("searchgate: recording the purge of {}: {e}", p.id);
            }
        }
    }
}

/// Reads one cluster's usage and feeds it to the overage ladder.
fn meter(agent: &ureq::Agent, snap: &Snapshot, c: &Cluster, plane: &SharedPlane, at: Metering) {
    if c.class == ClusterClass::Multitenant && c.prefix.is_none() {
        return; // never read a shared engine's totals for one tenant
    }
    let Some(addr) = at.nodes.first_usable(&c.upstreams, Instant::now()) else {
        return;
    };
    let clock = at.clock;
    let url = usage_url(addr, c.prefix.as_ref());
    // Creations that finish after this point may be missing from the answer.
    let reading = c.state.begin_reading();
    // The upstream's count of open contexts only when it can change the ledger.
    let moving = c.state.is_moving();
    let contexts = c
        .contexts
        .as_ref()
        .filter(|l| moving || l.with(|l| l.wants_reading(&c.id)))
        .map(|l| (l, l.with(|l| l.begin_reading())));
    let Some(body) = get_body(agent, &url) else {
        return;
    };
    let (Ok(usage), Ok(names)) = (
        usage_from_cat_indices(&body),
        index_names_from_cat_indices(&body),
    ) else {
        return;
    };
    let settles = c.state.settles_with(reading);
    if let Some((ledger, begun)) = contexts {
        let Some(counted) = open_contexts(agent, addr, c.prefix.as_ref()) else {
            if settles {
                return; // still moving: the next reading tries again
            }
            c.state.record_usage(reading, usage, &names);
            return;
        };
        let now = Instant::now();
        ledger.with(|l| l.record_reading(&c.id, begun, counted, settles, now));
    }
    c.state.record_usage(reading, usage, &names);
    // Most readings change nothing: look at the published snapshot first, lock the plane
    // (shared with the admin API) only for a step.
    let moves = snap
        .catalog
        .plans
        .get(&c.record.plan)
        .and_then(|p| step_of(&c.record, p, usage, clock.now_ms()))
        .is_some();
    if !moves {
        return;
    }
    match lock(plane).record_overage(&c.id, usage) {
        Ok(Some(line)) => println!("{line}"),
        Ok(None) => {}
        Err(e) => eprintln!("searchgate: cluster {}: recording its overage: {e}", c.id),
    }
}

/// The body of a 200 answer to `GET url`.
fn get_body(agent: &ureq::Agent, url: &str) -> Option<Vec<u8>> {
    let mut resp = agent.get(url).call().ok()?;
    if resp.status() != 200 {
        return None;
    }
    resp.body_mut().read_to_vec().ok()
}

/// The open search contexts (in shard contexts) the upstream at `addr` counts for the
/// indices under `prefix` (`_stats/search`).
fn open_contexts(agent: &ureq::Agent, addr: SocketAddr, prefix: Option<&Prefix>) -> Option<u64> {
    let mut target = Vec::with_capacity(128);
    tenancy::write_contexts_reading_target(prefix, &mut target);
    let url = format!("http://{addr}{}", String::from_utf8_lossy(&target));
    let body = get_body(agent, &url)?;
    open_contexts_from_stats(&body).ok()
}

/// Whether metering reads this cluster.
fn metered(c: &Cluster) -> bool {
    c.state.is_ready() && !matches!(c.mode, ConfigMode::Provisioning | ConfigMode::Destroyed)
}

/// Takes a usage sample of every metered cluster that has a reading (when `take`), then
/// writes the batches waiting, oldest first (those the store did not take before too).
fn sample_usage(
    snap: &Snapshot,
    hub: &MetricsHub,
    (sampler, flushes): (&mut Sampler, &mut Flushes),
    plane: &SharedPlane,
    take: bool,
) {
    if take {
        let totals: HashMap<String, _> = hub
            .snapshot(SystemTime::now())
            .clusters
            .into_iter()
            .collect();
        let clusters: Vec<(String, _, Counters)> = snap
            .clusters()
            .filter(|c| metered(c) && c.state.readings() > 0)
            .map(|c| {
                let t = totals.get(&c.id);
                let counters = Counters {
                    requests: t.map_or(0, |t| t.requests),
                    bytes_in: t.map_or(0, |t| t.bytes_in),
                    bytes_out: t.map_or(0, |t| t.bytes_out),
                };
                (c.id.clone(), c.state.usage(), counters)
            })
            .collect();
        let now = lock(plane).now();
        let (samples, prune_before) = sampler.take(now, clusters);
        sampler.retain(|id| snap.by_id(id).is_some());
        flushes.push(samples, prune_before);
    }
    if flushes.is_empty() {
        return;
    }
    let waiting = flushes.len();
    let mut p = lock(plane);
    let out = flushes.write(|f| {
        p.store()
            .record_usage(Some(&f.name), &f.samples, f.prune_before)
    });
    match out {
        Err(e) if take => eprintln!(
            "searchgate: storing usage samples: {e} ({} batches kept, written when the store answers)",
            flushes.len()
        ),
        Err(_) => {}
        Ok(()) if waiting > 1 => {
            println!("searchgate: usage: {waiting} batches of samples kept while the store was unreachable are written")
        }
        Ok(()) => {}
    }
}

/// What metering reads a cluster's usage with: the plane's clock, and the node book (a
/// usable node of the cluster is asked, not always the first).
#[derive(Clone, Copy)]
struct Metering<'a> {
    clock: &'a Clock,
    nodes: &'a NodeBook,
}

fn at<'a>(clock: &'a Clock, nodes: &'a NodeBook) -> Metering<'a> {
    Metering { clock, nodes }
}

/// Reads the clusters `ids` now (takeovers that ended, `registry::settling`); one that
/// metering does not read is settled without.
fn read_now(
    agent: &ureq::Agent,
    registry: &Registry,
    ids: &[String],
    plane: &SharedPlane,
    m: Metering<'_>,
) {
    if ids.is_empty() {
        return;
    }
    let snap = registry.load();
    for c in ids.iter().filter_map(|id| snap.by_id(id)) {
        if metered(c) {
            meter(agent, &snap, c, plane, at(m.clock, m.nodes));
        } else {
            c.state.settle_unread();
        }
    }
}

/// Starts the control thread; it stops when `stop` is set.
pub fn spawn(
    plane: SharedPlane,
    settings: ControlSettings,
    hub: Arc<MetricsHub>,
    nodes: Arc<NodeBook>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    let registry: Arc<Registry> = lock(&plane).registry().clone();
    let clock = lock(&plane).clock().clone();
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    let mut sampler = Sampler::new(ms(settings.usage_interval), ms(settings.usage_retention));
    let started = crate::control::clock::system_ms();
    let mut flushes = Flushes::new(format!("{}/{started}", settings.node));
    std::thread::Builder::new()
        .name("control".into())
        .spawn(move || {
            let agent = agent();
            let mut next_metering = Instant::now();
            while !stop.load(Ordering::Acquire) {
                probe_unready(&registry, &plane);
                purge_pending(&agent, &plane, &nodes);
                if Instant::now() >= next_metering {
                    let snap = registry.load();
                    for c in snap.clusters() {
                        if metered(c) && !stop.load(Ordering::Acquire) {
                            meter(&agent, &snap, c, &plane, at(&clock, &nodes));
                        }
                    }
                    let due = sampler.due(clock.now_ms());
                    let usage = (&mut sampler, &mut flushes);
                    sample_usage(&snap, &hub, usage, &plane, due);
                    next_metering = Instant::now() + settings.metering_interval;
                }
                let soon = registry.read_soon.wait(Duration::from_millis(500));
                read_now(&agent, &registry, &soon, &plane, at(&clock, &nodes));
            }
            // The counts since the last sample, so a clean stop loses none.
            let usage = (&mut sampler, &mut flushes);
            sample_usage(&registry.load(), &hub, usage, &plane, true);
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenancy::TenancyKey;

    #[test]
    fn usage_urls_are_restricted_to_the_clusters_indices() {
        let a: SocketAddr = "127.0.0.1:9201".parse().unwrap();
        assert!(usage_url(a, None).starts_with("http://127.0.0.1:9201/_cat/indices?"));
        assert!(
            usage_url(a, None).contains("bytes=b") && usage_url(a, None).contains("format=json")
        );
        let p = Prefix::derive(&TenancyKey::from_bytes([1; 32]), "acme");
        let url = usage_url(a, Some(&p));
        assert!(
            url.starts_with(&format!(
                "http://127.0.0.1:9201/_cat/indices/{}*?",
                p.as_str()
            )),
            "{url}"
        );
    }
}
