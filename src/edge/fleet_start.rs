//! Starting and stopping this node's part in admitting clusters at their homes
//! (`[fleet] peer_listen`, issue 27): the peer listener, the heartbeat (on its own store
//! connection) and the hook the workers read. The node waits for its first registration
//! before it serves, so its first requests already know their homes.
//!
//! Must not touch: request handling (`exchange` asks the hook), the plane.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::peer::FleetHook;
use crate::config::Config;
use crate::control::boot;
use crate::fleet::beat::{self, Beat, BeatSettings};
use crate::fleet::handover::Asker;
use crate::fleet::home::{self, HomeSettings, PeerListener};
use crate::fleet::membership::Membership;
use crate::fleet::outstanding::Outstanding;
use crate::fleet::wire::PeerSecret;
use crate::metrics::MetricsHub;
use crate::registry::Registry;
use crate::tenancy::TenancyKey;

/// The context of the fleet's peer secret under the tenancy key (see `fleet::wire`).
const PEER_SECRET_CONTEXT: &[u8] = b"searchgate fleet peers v1";

/// The running parts.
#[derive(Debug)]
pub struct FleetParts {
    pub hook: Arc<FleetHook>,
    listener: PeerListener,
    beat: Beat,
}

impl FleetParts {
    /// Leaves the fleet (after this node's own requests ended, and the permits it granted
    /// to peers), then stops serving peers.
    pub fn stop(self) {
        self.beat.stop();
        self.listener.stop();
    }
}

/// Starts the parts on `addr` (`config`'s `[fleet] peer_listen`).
pub fn start(
    config: &Config,
    addr: SocketAddr,
    key: &TenancyKey,
    registry: &Arc<Registry>,
    hub: &Arc<MetricsHub>,
) -> Result<FleetParts, String> {
    let me = config.fleet.node_id();
    let listener = TcpListener::bind(addr)
        .map_err(|e| format!("fleet.peer_listen: cannot listen on {addr}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("fleet.peer_listen: {e}"))?;
    let membership = Arc::new(Membership::new(me.clone()));
    let secret = PeerSecret::of(key.subkey(PEER_SECRET_CONTEXT));
    let outstanding = Arc::new(Outstanding::default());
    let settings = HomeSettings {
        secret: secret.clone(),
        registry: registry.clone(),
        membership: membership.clone(),
        hub: hub.clone(),
        max_hold: config.edge.deadline.0 + Duration::from_secs(5),
        lease: config.fleet.lease.0,
        outstanding: outstanding.clone(),
    };
    let listener = home::spawn(listener, Arc::new(settings))
        .map_err(|e| format!("fleet peer listener thread: {e}"))?;
    let lease = config.fleet.lease.0;
    let cfg = config.clone();
    let open: beat::Opener = Box::new(move || boot::open_store(&cfg));
    let s = BeatSettings {
        peer: bound,
        lease,
        registry: registry.clone(),
        hub: hub.clone(),
        asker: Asker {
            secret: secret.clone(),
            me: me.clone(),
            peer: bound,
            max_hold: config.edge.deadline.0 + Duration::from_secs(5),
            membership: membership.clone(),
            outstanding: outstanding.clone(),
        },
    };
    let beat = beat::spawn(open, membership.clone(), s)
        .map_err(|e| format!("fleet heartbeat thread: {e}"))?;
    let until = Instant::now() + lease;
    let view = membership.wait_for(until, |v| v.valid_until.is_some());
    match view.valid_until {
        Some(_) => println!(
            "searchgate: fleet: node {me} admits its clusters' requests for the fleet; peers on {bound}; {} live nodes",
            view.members.len()
        ),
        None => eprintln!(
            "searchgate: fleet: node {me} could not register yet; its clusters answer 503 until it does"
        ),
    }
    let hook = Arc::new(FleetHook {
        membership,
        secret,
        me,
        outstanding,
    });
    Ok(FleetParts {
        hook,
        listener,
        beat,
    })
}
