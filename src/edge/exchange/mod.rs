//! One request's exchange with its upstream, carrying out a `policy::decide` decision:
//!
//! 1. **admit**: a body that must be seen whole is read first (`buffered`, then
//!    `filter::whole_body`: what it finds can change the target and the response plan, a
//!    point in time); the shards an index creation adds are reserved against the plan
//!    (400 when they do not fit); then an allowance slot is awaited (FIFO across cores,
//!    queue timeout, deadline, client gone);
//! 2. **upstream**: `100 Continue` is answered, whitelisted indices the write needs are
//!    created (`precreate`, an extra request before the main one), a node is chosen
//!    (`Core::choose_node`: usable ones by health, the less busy of two), a pooled
//!    connection is taken, the request is sent (`send`, the body through the request
//!    filter), the response head read, and what the node did is reported to the node book.
//!    At most one retry, only when the request never reached the node or is a read
//!    (`outcome::retry_allowed`, never a write twice): on a fresh connection to the same
//!    node when a pooled one had gone stale, else on another node within the core's retry
//!    budget;
//! 3. **relay**: the response goes back through the response filter (`relay`).
//!
//! The permit is held until the upstream's response has been read to its end. Every
//! failure is answered here, through the client's error answers.
//!
//! Files: `body` and `slot` (admission), `tries` (the upstream and the relay); this file
//! holds the exchange's state and runs the three in order.
//!
//! Must not touch: the decision (taken in `session`; only what a whole body was found to
//! say is added to it), the wire format (`proto`), the filters' rules (`filter`).

mod body;
mod slot;
mod tries;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use super::client::Client;
use super::contexts::{Answered, Counted};
use super::io::Transport;
use super::outcome::Outcome;
use super::peer::Slot;
use crate::errors::EdgeError;
use crate::fleet::places::Held;
use crate::policy::decide::{created_index, Decision, Targets};
use crate::policy::shards::IndexShards;
use crate::proto::ResponseHead;
use crate::registry::{Cluster, ShardReservation};
use crate::tenancy::IdKind;

/// Buffers an exchange works in, kept by the connection from one request to the next.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// What goes to the upstream next.
    pub up_out: Vec<u8>,
    /// What the response filter rewrote.
    pub rewritten: Vec<u8>,
    /// The upstream's response head.
    pub rhead: ResponseHead,
}

/// The decision being carried out, and what it needs.
struct Exchange<'a, 'd, T> {
    client: &'a mut Client<T>,
    scratch: &'a mut Scratch,
    d: &'a mut Decision<'d, Arc<Cluster>>,
    targets: &'a mut Targets,
    deadline: Instant,
    /// The open search contexts the request counts (multitenant scroll and PIT).
    contexts: Option<Counted>,
    /// The upstream ids the response filter sealed.
    sealed: Vec<(IdKind, String)>,
    /// The shards the upstream said it searched (`_shards.total`), when the filter read it.
    shards_total: Option<u64>,
    /// In a fleet, where the cluster's home was when the request began counting places
    /// (an index's shards, an open's contexts): `Some(None)` here, `Some(Some(peer))`
    /// another node, which counts them (issue 27); `None`: it counts none.
    pinned: Option<Option<SocketAddr>>,
    /// The shards of an index created away from home (reserved by the home).
    home_index: Option<IndexShards>,
    /// The request's permit while its exchange runs (kept after it when the home must
    /// still be told what the request did with its places).
    slot: Option<Slot>,
}

/// Why a queued request did not get a slot, and how long it waited (µs; `None`: it was
/// never queued).
enum Refusal {
    Gone(u64),
    Error(EdgeError, Option<u64>),
}

/// Carries out decision `d` for the request whose head is in `client` (arrived at
/// `arrival`): admit, upstream, relay. Returns what happened, for the log and the
/// connection.
pub(super) async fn run<T: Transport>(
    client: &mut Client<T>,
    scratch: &mut Scratch,
    d: &mut Decision<'_, Arc<Cluster>>,
    targets: &mut Targets,
    arrival: Instant,
) -> Outcome {
    let deadline = arrival + client.core.shared.limits.deadline;
    let mut x = Exchange {
        client,
        scratch,
        d,
        targets,
        deadline,
        contexts: None,
        sealed: Vec::new(),
        shards_total: None,
        pinned: None,
        home_index: None,
        slot: None,
    };
    let reserved: Option<ShardReservation<'_>> = match x.prepare().await {
        Ok(n) => n,
        // Refused after the whole body was read, the connection can carry the next request.
        Err(fail) => return x.client.fail(fail).await,
    };
    let outcome = x.admitted().await;
    let mut tell = Vec::new();
    if let Some(counted) = x.contexts.take() {
        let answered = Answered {
            sealed: &x.sealed,
            shards: x.shards_total,
        };
        tell.extend(counted.settle(outcome.status, &answered));
    }
    // The real name of the index (the ledger matches it with metering's).
    let ok = (200..300).contains(&outcome.status);
    let name = created_index(&x.targets.target);
    if let Some(reserved) = reserved {
        reserved.finish(name, ok);
    } else if x.home_index.is_some() {
        tell.push(Held::Finished {
            name: name.to_vec(),
            created: ok,
        });
    }
    for held in &tell {
        x.tell_home(held).await;
    }
    x.slot = None;
    outcome
}

impl<'d, T: Transport> Exchange<'_, 'd, T> {
    async fn admitted(&mut self) -> Outcome {
        let (permit, queue_us) = match self.wait_for_slot().await {
            Ok(p) => p,
            Err(Refusal::Gone(waited)) => {
                return Outcome {
                    queue_us: Some(waited),
                    ..Outcome::gone()
                }
            }
            Err(Refusal::Error(e, waited)) => {
                let o = self.client.fail(e).await;
                return Outcome {
                    queue_us: waited,
                    ..o
                };
            }
        };
        let granted = Instant::now();
        let mut outcome = self.forward(permit).await;
        outcome.queue_us = queue_us;
        outcome.upstream_us = Some(granted.elapsed().as_micros() as u64);
        outcome
    }
}
