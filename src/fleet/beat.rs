//! The heartbeat: a thread that renews this node's registration in the store about every
//! second (on the store's clock) and publishes the live nodes it reads back as the next
//! [`View`]. A renewal that fails leaves the view's `valid_until` where it was, so this
//! node stops admitting as a home on its own before its registration can run out
//! ([`super::membership`]). It also counts, for `/metrics`, the clusters this node is home
//! of and the clusters it became home of since it started (handovers).
//!
//! A clean stop stops admitting, waits for the permits out to end (the edge stops the
//! heartbeat after its own requests ended; peers' end within the deadline), then removes
//! the registration (`Store::leave`): the node's clusters move at once.
//!
//! Must not touch: the request path (it publishes views only), the plane's store
//! connection (it has its own: a slow admin commit never delays a renewal).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::handover::{self, Asker, Charges};
use super::membership::{margin, Home, Member, Membership, View};
use super::orphans;
use crate::control::store::{NodeRow, Store};
use crate::metrics::MetricsHub;
use crate::registry::Registry;

/// Opens the heartbeat's own connection to the store.
pub type Opener = Box<dyn FnMut() -> Result<Box<dyn Store>, String> + Send>;

/// What the heartbeat needs.
#[derive(Debug)]
pub struct BeatSettings {
    pub peer: SocketAddr,
    pub lease: Duration,
    pub registry: Arc<Registry>,
    pub hub: Arc<MetricsHub>,
    /// How this node asks old homes for the clusters it takes over.
    pub asker: Asker,
}

/// The running heartbeat.
#[derive(Debug)]
pub struct Beat {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl Beat {
    /// Stops renewing and removes this node's registration.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        self.handle.thread().unpark();
        let _ = self.handle.join();
    }
}

/// How often the registration is renewed: every second, or a third of a shorter lease.
pub fn renew_every(lease: Duration) -> Duration {
    (lease / 3).min(Duration::from_secs(1))
}

/// The view made of the rows a renewal sent at `sent` read back.
pub fn view_of(me: &str, rows: &[NodeRow], sent: Instant, lease: Duration) -> View {
    let members = rows
        .iter()
        .filter_map(|r| {
            let peer = r.peer.parse().ok()?;
            Some(Member {
                node: r.node.clone(),
                peer,
            })
        })
        .collect();
    View {
        me: me.to_string(),
        members,
        valid_until: Some(sent + lease - margin(lease)),
        handed: Vec::new(),
    }
}

/// Starts the heartbeat of `membership`'s node.
pub fn spawn(
    mut open: Opener,
    membership: Arc<Membership>,
    s: BeatSettings,
) -> std::io::Result<Beat> {
    let stop = Arc::new(AtomicBool::new(false));
    let halt = stop.clone();
    let handle = std::thread::Builder::new()
        .name("fleet-beat".into())
        .spawn(move || {
            let me = membership.view().me.clone();
            s.hub.fleet.peers.on.store(true, Ordering::Relaxed);
            let ttl = i64::try_from(s.lease.as_millis()).unwrap_or(i64::MAX);
            let mut store: Option<Box<dyn Store>> = None;
            let mut homes: Option<HashSet<String>> = None;
            let mut up = true;
            while !halt.load(Ordering::Acquire) {
                let sent = Instant::now();
                let read = match store.as_mut() {
                    Some(st) => st.heartbeat(&me, &s.peer.to_string(), ttl).map_err(|e| e.to_string()),
                    None => open().and_then(|mut st| {
                        let r = st.heartbeat(&me, &s.peer.to_string(), ttl).map_err(|e| e.to_string());
                        store = Some(st);
                        r
                    }),
                };
                match read {
                    Ok(rows) => {
                        if !up {
                            println!("searchgate: fleet: registration renewed; {} live nodes", rows.len());
                        }
                        up = true;
                        let view = view_of(&me, &rows, sent, s.lease);
                        s.hub.fleet.peers.nodes.store(view.members.len() as u64, Ordering::Relaxed);
                        take_over(&membership.view(), &view, &s);
                        membership.publish(view, Instant::now());
                    }
                    Err(e) if up => {
                        up = false;
                        eprintln!("searchgate: fleet: cannot renew this node's registration ({e}); its clusters stop being admitted here before it runs out");
                    }
                    Err(_) => {}
                }
                homes = Some(count_homes(&membership, &s, homes));
                std::thread::park_timeout(renew_every(s.lease).saturating_sub(sent.elapsed()));
            }
            // A clean stop: this node admits nothing more (peers get `NotHome`, 503), the
            // permits it granted end, then its clusters move.
            membership.resign();
            drain(&s);
            if let Some(st) = store.as_mut() {
                let _ = st.leave(&me);
            }
        })?;
    Ok(Beat { stop, handle })
}

/// Waits until no permit of any cluster is out here (the edge's deadline at most), woken
/// each time a permit is released (`policy::admit::bell`).
fn drain(s: &BeatSettings) {
    let end = Instant::now() + s.asker.max_hold;
    crate::policy::admit::bell::wait_until(end, || {
        let snap = s.registry.load();
        let busy = snap.clusters().any(|c| {
            crate::policy::admit::Limit::ALL
                .iter()
                .any(|l| c.lanes.get(*l, &c.allowance).in_flight() > 0)
        });
        !busy
    });
}

/// Before `next` is published: the clusters this node becomes home of from a live node
/// are charged in full and asked for (see [`super::handover`]); those whose home left
/// are charged in full until the permits it granted end ([`super::orphans`]).
fn take_over(prev: &View, next: &View, s: &BeatSettings) {
    let snap = s.registry.load();
    let ids = snap.clusters().map(|c| c.id.as_str());
    for (id, from) in handover::takeovers(prev, next, ids) {
        let Some(cluster) = snap.by_id(id) else {
            continue;
        };
        let charges = Charges::full(cluster, &s.registry.read_soon);
        handover::start(s.asker.clone(), id.to_string(), from, charges);
    }
    let ids = snap.clusters().map(|c| c.id.as_str());
    let orphans: Vec<(String, Charges)> = orphans::orphaned(prev, next, ids)
        .into_iter()
        .filter_map(|id| {
            let c = snap.by_id(id)?;
            Some((id.to_string(), Charges::full(c, &s.registry.read_soon)))
        })
        .collect();
    let peers = next
        .members
        .iter()
        .filter(|m| m.node != next.me)
        .cloned()
        .collect();
    orphans::start(s.asker.clone(), orphans, peers);
}

/// Counts the clusters this node is home of now, and those it became home of since the
/// last count (handovers; none on the first count).
fn count_homes(
    m: &Membership,
    s: &BeatSettings,
    before: Option<HashSet<String>>,
) -> HashSet<String> {
    let view = m.view();
    let snap = s.registry.load();
    let now = Instant::now();
    let here: HashSet<String> = snap
        .clusters()
        .filter(|c| view.home(&c.id, now) == Home::Here)
        .map(|c| c.id.clone())
        .collect();
    if let Some(before) = before {
        let gained = here.difference(&before).count() as u64;
        s.hub
            .fleet
            .peers
            .handovers
            .fetch_add(gained, Ordering::Relaxed);
    }
    s.hub
        .fleet
        .peers
        .homes
        .store(here.len() as u64, Ordering::Relaxed);
    here
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renewal_is_trusted_until_the_margin_before_it_runs_out() {
        let t0 = Instant::now();
        let rows = vec![
            NodeRow {
                node: "a".into(),
                peer: "127.0.0.1:9301".into(),
            },
            NodeRow {
                node: "b".into(),
                peer: "not an address".into(),
            },
        ];
        let v = view_of("a", &rows, t0, Duration::from_secs(5));
        assert_eq!(
            v.members.len(),
            1,
            "a row whose address does not parse is left out"
        );
        assert_eq!(v.valid_until, Some(t0 + Duration::from_secs(4)));
        assert_eq!(renew_every(Duration::from_secs(5)), Duration::from_secs(1));
        assert_eq!(renew_every(Duration::from_secs(3)), Duration::from_secs(1));
        assert_eq!(
            renew_every(Duration::from_millis(1500)),
            Duration::from_millis(500)
        );
    }
}
