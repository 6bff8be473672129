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
//! Must not touch: the decision (taken in `session`; only what a whole body was found to
//! say is added to it), the wire format (`proto`), the filters' rules (`filter`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::buffered;
use super::client::Client;
use super::contexts::{Answered, Counted};
use super::faults::{self, Point};
use super::filter::{whole_body, RequestFilter, ResponseFilter};
use super::io::Transport;
use super::outcome::{
    retry_allowed, HeadFail, Outcome, Retry, RetryFacts, SendFail, Tried, Unanswered, Where,
};
use super::peer::{self, Asking, FleetHook, Refused, Slot};
use super::precreate;
use super::relay::Relaying;
use super::send::Sending;
use super::upstream::UpstreamConn;
use crate::errors::EdgeError;
use crate::fleet::membership::Home;
use crate::fleet::places::Held;
use crate::fleet::wire::{Acquire, Verdict};
use crate::nodes::Passive;
use crate::policy::admit::{Admission, Permit};
use crate::policy::decide::{created_index, BodyPlan, Decision, Reservation, Targets};
use crate::policy::keys::{check_body, BodyRefusal};
use crate::policy::shards::{create_index_shards, IndexShards, ShardDefaults};
use crate::proto::{Framing, ResponseHead};
use crate::registry::{Cluster, ShardReservation};
use crate::request::classify::Class;
use crate::request::waits;
use crate::tenancy::{ContextUse, IdKind};

/// How long the edge looks for an upstream's early answer after it stopped reading a body.
const EARLY_ANSWER_WAIT: Duration = Duration::from_secs(1);

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
    /// Before a slot is awaited: a body that must be seen whole is read and transformed,
    /// the shards an index creation asks for are reserved (spec 2.2, 8: 400 before
    /// anything reaches the upstream), and so is the place of a search context it opens
    /// (429). A compressed body the edge reads is inflated first. Returns the shards
    /// reserved, held until the answer (released on drop).
    async fn prepare(&mut self) -> Result<Option<ShardReservation<'d>>, SendFail> {
        self.pin_home()?;
        if let Some(coding) = self.d.inflate {
            let limit = self.client.core.shared.limits.max_body;
            buffered::inflate_body(self.client, self.deadline, limit, coding).await?;
        }
        self.check_key_body().await?;
        let shards = self.read_whole_body().await?;
        let body = self.client.buffered_body().unwrap_or_default();
        let at_home = matches!(self.pinned, Some(Some(_)));
        self.contexts = Counted::reserve(self.d, &self.targets.target, body, at_home)?;
        Ok(shards)
    }

    /// In a fleet, a request that counts places besides its permit (an index creation's
    /// shards, a scroll or point in time's contexts) fixes where they are counted now: here
    /// when this node is the cluster's home, else at the home, with its permit (503 when no
    /// node can admit the cluster now).
    fn pin_home(&mut self) -> Result<(), SendFail> {
        let core = self.client.core.clone();
        let Some(hook) = core.shared.fleet.as_deref() else {
            return Ok(());
        };
        let contexts = self
            .d
            .tenant
            .as_ref()
            .is_some_and(|t| t.plan.contexts != ContextUse::None);
        let counts = self.d.reserve == Reservation::CreateIndex
            || (contexts && self.d.cluster.contexts.is_some());
        if counts {
            match self.away(hook) {
                Ok(home) => self.pinned = Some(home),
                Err(Refusal::Error(e, _)) => return Err(SendFail::Refuse(e)),
                Err(Refusal::Gone(_)) => {
                    return Err(SendFail::Refuse(EdgeError::ServiceUnavailable(
                        "the cluster's home node cannot admit requests now",
                    )))
                }
            }
        }
        Ok(())
    }

    /// Tells the cluster's home `held` on the permit the request holds from it (nothing
    /// when the permit is this node's own); the home's answer.
    async fn tell_home(&mut self, held: &Held) -> Option<Verdict> {
        let Some(Slot::Remote(p)) = self.slot.as_mut() else {
            return None;
        };
        let until = Instant::now() + self.client.core.shared.limits.connect_timeout;
        p.tell(&mut self.client.timer, held, until).await
    }

    /// A key limited to indices sent a body that may name indices (`Decision::key_body`):
    /// read whole (as the client sent it, before any rewriting) and checked; 403 when it
    /// names an index outside the key's patterns. Nothing is sent before.
    async fn check_key_body(&mut self) -> Result<(), SendFail> {
        let (Some(kb), Some(key)) = (self.d.key_body.as_ref(), self.d.key) else {
            return Ok(());
        };
        let limit = match self.d.body {
            BodyPlan::Whole { limit, .. } => limit,
            _ => self.client.core.shared.limits.max_body,
        };
        let len = buffered::read_whole(self.client, self.deadline, limit).await?;
        let body = buffered::body(self.client, len);
        let refused = match check_body(&key.indices, kb.kind, body, &kb.action) {
            Ok(()) if kb.open_ids => {
                let bound = crate::tenancy::ids_binding(&self.d.cluster.id, Some(&key.id));
                let ids = crate::tenancy::key_ids::KeyIds {
                    sealer: Some(&*self.client.core.shared.sealer),
                    binding: &bound,
                };
                let opened = crate::tenancy::key_ids::open_body(&ids, kb.kind, body)?;
                if let Some(new) = opened.body {
                    self.client.replace_body(len, &new);
                }
                if opened.pit && self.d.key_scoped {
                    crate::tenancy::key_ids::drop_first_segment(&mut self.targets.target);
                }
                return Ok(());
            }
            Ok(()) => return Ok(()),
            Err(BodyRefusal::Denied(d)) => EdgeError::Forbidden {
                key: key.name.clone(),
                action: d.action,
                why: d.why.into_owned(),
            },
            Err(BodyRefusal::Malformed) => EdgeError::Refused {
                status: 400,
                kind: "x_content_parse_exception",
                reason: "the request body is not valid JSON".into(),
            },
        };
        Err(SendFail::Refuse(refused))
    }

    /// A `BodyPlan::Whole` body: read, transformed, and for an index creation its shards
    /// reserved. Returns the shards reserved.
    async fn read_whole_body(&mut self) -> Result<Option<ShardReservation<'d>>, SendFail> {
        let BodyPlan::Whole { kind, limit } = self.d.body else {
            return Ok(None);
        };
        let len = buffered::read_whole(self.client, self.deadline, limit).await?;
        let sealer = &self.client.core.shared.sealer;
        let key = self.d.key.map(|k| k.id.as_str());
        let bound = crate::tenancy::ids_binding(&self.d.cluster.id, key);
        let ids = (&**sealer, bound.as_ref());
        let body = buffered::body(self.client, len);
        let whole = whole_body(self.d.tenant.as_ref(), ids, kind, body)?;
        if let Some(new) = whole.body {
            self.client.replace_body(len, &new);
        }
        let key_scoped = self.d.key_scoped;
        if let Some(t) = self.d.tenant.as_mut() {
            t.plan.apply_body_facts(
                whole.facts,
                &t.prefix,
                &mut self.targets.target,
                key_scoped,
            )?;
        }
        if self.d.reserve != Reservation::CreateIndex {
            return Ok(None);
        }
        let len = match self.client.framing() {
            Framing::Length(n) => n as usize,
            _ => 0,
        };
        let asked = create_index_shards(buffered::body(self.client, len), ShardDefaults::ES7)?;
        if matches!(self.pinned, Some(Some(_))) {
            // The home reserves them with the permit.
            self.home_index = Some(asked);
            return Ok(None);
        }
        let cluster: &'d Arc<Cluster> = self.d.cluster;
        let plan = &cluster.plan;
        match cluster.state.reserve_index(asked, plan.shards) {
            Ok(r) => Ok(Some(r)),
            Err(e) => Err(SendFail::Refuse(super::precreate::index_refused(
                cluster, asked, e,
            ))),
        }
    }

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

    /// A slot of the request's allowance: from this node's own allowance, or (in a fleet
    /// admitting at homes) from the cluster's home node.
    async fn wait_for_slot(&mut self) -> Result<(Slot, Option<u64>), Refusal> {
        let core = self.client.core.clone();
        if let Some(hook) = core.shared.fleet.as_deref() {
            let home = match self.pinned {
                Some(home) => home,
                None => self.away(hook)?,
            };
            if let Some(peer) = home {
                return self.remote_slot(hook, peer).await;
            }
        }
        let (p, waited) = self.local_slot().await?;
        if let Some(hook) = core.shared.fleet.as_deref() {
            // Handed to a new home while this one waited: the permit goes back unused
            // (the handover counts what is in flight after it marked the cluster). Places
            // counted here are not counted again at the new home: 503.
            if let Some(peer) = self.away(hook)? {
                drop(p);
                if self.pinned.is_some() {
                    return Err(self.unavailable());
                }
                return self.remote_slot(hook, peer).await;
            }
        }
        Ok((Slot::Local(p), waited))
    }

    /// Where the cluster's home is now: `None` here, or the peer listener of another node;
    /// 503 when no node can admit it now.
    fn away(&self, hook: &FleetHook) -> Result<Option<std::net::SocketAddr>, Refusal> {
        match hook
            .membership
            .current()
            .home(&self.d.cluster.id, Instant::now())
        {
            Home::Here => Ok(None),
            Home::Peer(m) => Ok(Some(m.peer)),
            Home::Unavailable => Err(self.unavailable()),
        }
    }

    fn unavailable(&self) -> Refusal {
        Refusal::Error(self.unavailable_error(), None)
    }

    fn unavailable_error(&self) -> EdgeError {
        let peers = &self.client.core.shared.metrics.fleet.peers;
        peers
            .unavailable
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        EdgeError::ServiceUnavailable("the cluster's home node cannot admit requests now")
    }

    /// A permit from home `home` (issue 27): the home decides as [`Self::local_slot`] does
    /// here, with what is left of this request's deadline.
    async fn remote_slot(
        &mut self,
        hook: &FleetHook,
        home: std::net::SocketAddr,
    ) -> Result<(Slot, Option<u64>), Refusal> {
        let cluster = self.d.cluster;
        let read = matches!(self.d.class, Class::Read);
        let (_, limit) = cluster.allowance_for(read);
        let start = Instant::now();
        let budget = self.deadline.saturating_duration_since(start).as_millis();
        let contexts = self.contexts.as_ref().map_or(0, Counted::home_weight);
        let acquire = Acquire {
            cluster: cluster.id.clone(),
            read,
            budget_ms: u32::try_from(budget).unwrap_or(u32::MAX),
            index: self.home_index,
            contexts,
        };
        let client = &mut *self.client;
        let io = &client.io;
        let gone = || io.peer_closed();
        let asking = Asking {
            pool: &client.core.peers,
            hub: &client.core.shared.metrics,
            timer: &mut client.timer,
            gone: &gone,
            connect_timeout: client.core.shared.limits.connect_timeout,
        };
        let got = peer::acquire(asking, hook, home, &acquire, limit, self.deadline).await;
        let waited_us = start.elapsed().as_micros() as u64;
        let waited = Some(waited_us);
        let e = match got {
            Ok(p) => return Ok((Slot::Remote(p), waited)),
            Err(Refused::Gone) => return Err(Refusal::Gone(waited_us)),
            Err(Refused::Unreachable | Refused::Verdict(Verdict::NotHome)) => {
                return Err(self.unavailable())
            }
            Err(Refused::Verdict(Verdict::Deadline | Verdict::Granted)) => {
                EdgeError::GatewayTimeout(self.client.core.shared.limits.deadline.as_secs())
            }
            Err(Refused::Verdict(Verdict::ShardCapacity { in_use })) => EdgeError::ShardCapacity {
                plan: cluster.plan.name.clone(),
                capacity: cluster.plan.shards,
                in_use: u64::from(in_use),
                asked: self.home_index.map_or(0, IndexShards::total),
            },
            Err(Refused::Verdict(Verdict::Contexts { share, used })) => match &self.contexts {
                Some(c) => c.refused_at_home(share, used),
                None => self.unavailable_error(),
            },
            Err(Refused::Verdict(Verdict::Full {
                concurrency,
                queue_size,
            })) => EdgeError::QueueFull {
                limit: limit.name(),
                concurrency,
                queue_size,
            },
            // The home counted the refusal on the allowance.
            Err(Refused::Verdict(Verdict::QueueTimeout {
                concurrency,
                waited_ms,
            })) => EdgeError::QueueTimeout {
                limit: limit.name(),
                concurrency,
                waited_ms: u64::from(waited_ms),
            },
        };
        Err(Refusal::Error(e, waited))
    }

    async fn local_slot(&mut self) -> Result<(Permit, Option<u64>), Refusal> {
        let cluster = self.d.cluster;
        let plan = &cluster.plan;
        let (allowance, limit) = cluster.allowance_for(matches!(self.d.class, Class::Read));
        let mut ticket = match allowance.acquire() {
            Admission::Granted(p) => return Ok((p, None)),
            Admission::Full => {
                let e = EdgeError::QueueFull {
                    limit: limit.name(),
                    concurrency: allowance.limit(),
                    queue_size: plan.queue_size_of(limit),
                };
                return Err(Refusal::Error(e, None));
            }
            Admission::Queued(t) => t,
        };
        let start = Instant::now();
        let queue_end = (start + plan.queue_timeout).min(self.deadline);
        loop {
            let now = Instant::now();
            if now >= queue_end {
                let e = if now >= self.deadline {
                    EdgeError::GatewayTimeout(self.client.core.shared.limits.deadline.as_secs())
                } else {
                    allowance.note_refusal();
                    EdgeError::QueueTimeout {
                        limit: limit.name(),
                        concurrency: allowance.limit(),
                        waited_ms: start.elapsed().as_millis() as u64,
                    }
                };
                return Err(Refusal::Error(e, Some(start.elapsed().as_micros() as u64)));
            }
            // Wake at least every 50 ms to notice a client that went away while queued.
            let slice = (queue_end - now).min(Duration::from_millis(50));
            if let Some(p) = self.client.timer.run(now + slice, &mut ticket).await {
                return Ok((p, Some(start.elapsed().as_micros() as u64)));
            }
            if self.client.io.peer_closed() {
                return Err(Refusal::Gone(start.elapsed().as_micros() as u64));
            }
        }
    }

    /// Sends the request (retrying once when allowed) and relays the response.
    async fn forward(&mut self, permit: Slot) -> Outcome {
        faults::inject(self.client.hook, Point::Slot);
        self.slot = Some(permit);
        if !self.client.send_continue().await {
            return Outcome::gone();
        }
        if self.d.reserve == Reservation::AutoCreate {
            let prefix = self.d.tenant.as_ref().map(|t| &t.prefix);
            let name = &self.targets.auto_create;
            let core = &self.client.core;
            let ledger = match self.slot.as_mut() {
                Some(Slot::Remote(p)) => precreate::Ledger::Home(p, &mut self.client.timer),
                _ => precreate::Ledger::Here,
            };
            let made =
                precreate::ensure_index(core, self.d.cluster, prefix, name, self.deadline, ledger)
                    .await;
            if let Err(fail) = made {
                return self.client.fail(fail).await;
            }
        }
        let replayable = self.client.body_buffered();
        let core = self.client.core.clone();
        let nodes = &self.d.cluster.upstreams;
        let Some(first) = core.choose_node(nodes, None) else {
            let e = Unanswered::NotConnected.error(); // a cluster always has a node
            return self.client.fail(e).await;
        };
        core.on_upstream_request();
        let outcome = self.tries(first, replayable).await;
        // The permit goes back as the exchange ends, unless the home must still be told
        // what the request did with its places ([`run`] then gives it back).
        let tells = self.contexts.is_some() || self.home_index.is_some();
        if !(tells && matches!(self.slot, Some(Slot::Remote(_)))) {
            self.slot = None;
        }
        outcome
    }

    /// The tries of the exchange, from `first`: at most three (a pooled connection, a
    /// fresh one to the same node, another node), each only where [`retry_allowed`] says
    /// the failed one did no harm.
    async fn tries(&mut self, first: SocketAddr, replayable: bool) -> Outcome {
        let core = self.client.core.clone();
        let mut try_ = Try {
            node: first,
            pooled: true,
            may_retry: true,
        };
        loop {
            let r = match self.attempt(try_, replayable).await {
                Tried::Done(o) => return o,
                Tried::Retry(r) if try_.may_retry => r,
                // The last try allowed (`RetryFacts::first`) never asks for another.
                Tried::Retry(r) => return self.client.fail(r.failed.error()).await,
            };
            let Some(next) = self.retry_target(try_.node, r.to) else {
                return self.client.fail(r.failed.error()).await;
            };
            core.shared.nodes.count_retry(r.failed.reason());
            // A pooled connection the node had closed while idle says nothing about the
            // node: the fresh connection that replaces it keeps the right to one try on
            // another node.
            try_ = Try {
                node: next,
                pooled: false,
                may_retry: r.to == Where::SameNode,
            };
        }
    }

    /// The node a retry from `from` goes to: the same one for a stale pooled connection;
    /// another one (chosen as the first was) when there is one and the core's retry budget
    /// allows.
    fn retry_target(&self, from: SocketAddr, to: Where) -> Option<SocketAddr> {
        let core = &self.client.core;
        match to {
            Where::SameNode => Some(from),
            Where::OtherNode => core
                .choose_node(&self.d.cluster.upstreams, Some(from))
                .filter(|_| core.take_retry()),
        }
    }

    /// Tells the node book what a request learnt about `addr`.
    fn report(&self, addr: SocketAddr, p: Passive) {
        let nodes = &self.d.cluster.upstreams;
        self.client
            .core
            .shared
            .nodes
            .report(addr, p, nodes, Instant::now());
    }

    /// One try: connection, request, response head, relay; or a retry (see
    /// [`retry_allowed`]).
    async fn attempt(&mut self, t: Try, replayable: bool) -> Tried {
        let (addr, first) = (t.node, t.may_retry);
        let core = self.client.core.clone();
        let timeout = core.shared.limits.connect_timeout;
        let _in_flight = core.shared.nodes.node(addr).map(|n| n.enter());
        let checkout = core
            .pool
            .checkout(addr, !t.pooled, timeout, || core.take_upstream_buffer());
        let mut up = match checkout.await {
            Ok(c) => c,
            Err(_) => {
                self.report(addr, Passive::ConnectionFailed);
                let facts = RetryFacts {
                    first,
                    reused: false,
                    replayable,
                    read: matches!(self.d.class, Class::Read),
                };
                let failed = Unanswered::NotConnected;
                if let Some(to) = retry_allowed(failed, facts) {
                    return Tried::Retry(Retry { to, failed });
                }
                return Tried::Done(self.client.fail(failed.error()).await);
            }
        };
        let facts = RetryFacts {
            first,
            reused: up.reused,
            replayable,
            read: matches!(self.d.class, Class::Read),
        };
        self.client.rewind_body();
        let sent = self.send(&mut up).await;
        self.client.end_body_reads(); // the next request head is read as soon as any byte comes
        let body_bytes = match self.response_head(&mut up, sent, facts, addr).await {
            Ok(n) => n,
            Err(tried) => {
                if !up.reused {
                    self.report(addr, Passive::ConnectionFailed);
                }
                return tried;
            }
        };
        self.report(addr, passive_of(self.scratch.rhead.status));
        if let Some(held) = self
            .contexts
            .as_ref()
            .and_then(|c| c.on_head(self.scratch.rhead.status))
        {
            // Out of the home's count before the client hears of it.
            self.tell_home(&held).await;
        }
        let (o, reusable) = self.relay(&mut up).await;
        if reusable {
            core.pool.put(up, Instant::now());
        }
        faults::inject(self.client.hook, Point::Relay);
        Tried::Done(Outcome {
            bytes_in: body_bytes,
            ..o
        })
    }

    /// After sending (`sent`): the response head into `scratch.rhead`, and the body bytes
    /// the client sent; or what the try came to without a response head.
    async fn response_head(
        &mut self,
        up: &mut UpstreamConn,
        sent: Result<u64, SendFail>,
        facts: RetryFacts,
        addr: SocketAddr,
    ) -> Result<u64, Tried> {
        let method = self.client.method();
        let rhead = &mut self.scratch.rhead;
        match sent {
            Err(SendFail::Upstream) if retry_allowed(Unanswered::NotSent, facts).is_some() => {
                let to = retry_allowed(Unanswered::NotSent, facts).unwrap_or(Where::SameNode);
                Err(Tried::Retry(Retry {
                    to,
                    failed: Unanswered::NotSent,
                }))
            }
            Err(SendFail::Upstream) => {
                // The upstream may have answered before reading the whole body (a 413 of
                // its own) and stopped reading: relay that answer rather than a 502.
                let early = (Instant::now() + EARLY_ANSWER_WAIT).min(self.deadline);
                let timer = &mut self.client.timer;
                if up
                    .read_head(rhead, method, timer, early, &|| false)
                    .await
                    .is_err()
                {
                    let answered = self.client.fail(SendFail::Upstream).await;
                    return Err(Tried::Done(answered));
                }
                // Relayed; the connection is kept only if the client's body was all read.
                Ok(self.client.bytes_past_head())
            }
            Err(fail) => Err(Tried::Done(self.client.fail(fail).await)),
            Ok(n) => match self.head_unless_down(up, addr).await {
                Ok(()) => Ok(n),
                Err(f @ (HeadFail::NoBytes | HeadFail::NodeDown)) => {
                    let failed = match f {
                        HeadFail::NodeDown => Unanswered::NodeDown,
                        _ => Unanswered::NoAnswer,
                    };
                    match retry_allowed(failed, facts) {
                        Some(to) => Err(Tried::Retry(Retry { to, failed })),
                        None => {
                            let e = f.answer(self.client.core.shared.limits.deadline.as_secs());
                            Err(Tried::Done(self.client.fail(e).await))
                        }
                    }
                }
                Err(f) => {
                    let e = f.answer(self.client.core.shared.limits.deadline.as_secs());
                    Err(Tried::Done(self.client.fail(e).await))
                }
            },
        }
    }

    /// The response head from `addr` into `scratch.rhead`, given up on (`NodeDown`) when
    /// the node's health checks take it down meanwhile: a node that accepts and never
    /// answers costs its requests one check timeout, not the whole deadline, and frees
    /// their slots. A node already down when chosen (every node was) is waited for.
    async fn head_unless_down(
        &mut self,
        up: &mut UpstreamConn,
        addr: SocketAddr,
    ) -> Result<(), HeadFail> {
        let core = self.client.core.clone();
        let node = core.shared.nodes.node(addr);
        let downs = node.as_ref().map_or(0, |n| n.downs());
        let method = self.client.method();
        let rhead = &mut self.scratch.rhead;
        let client = &mut *self.client;
        let (timer, io) = (&mut client.timer, &client.io);
        let gone = || io.peer_closed();
        let mut read = std::pin::pin!(up.read_head(rhead, method, timer, self.deadline, &gone));
        loop {
            let bell = core.node_down_bell();
            monoio::select! {
                r = &mut read => return r,
                _ = bell.wait() => {
                    if node.as_ref().is_some_and(|n| n.downs() != downs) {
                        return Err(HeadFail::NodeDown);
                    }
                }
            }
        }
    }

    /// The request, head and body, through the decision's request filter; its wait
    /// parameters bounded by the time left before the deadline (`request::waits`).
    async fn send(&mut self, up: &mut UpstreamConn) -> Result<u64, SendFail> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        waits::cap(&mut self.targets.target, left);
        let mut filter = RequestFilter::for_decision(self.d);
        let mut sending = Sending {
            client: self.client,
            up,
            out: &mut self.scratch.up_out,
            out_start: 0,
            deadline: self.deadline,
            home: match self.slot.as_mut() {
                Some(Slot::Remote(p)) => Some(p),
                _ => None,
            },
        };
        sending
            .send(&mut filter, self.d, &self.targets.target)
            .await
    }

    /// The response whose head is in `scratch.rhead`, through the decision's response
    /// filter.
    async fn relay(&mut self, up: &mut UpstreamConn) -> (Outcome, bool) {
        let rh = &self.scratch.rhead;
        let core = &self.client.core;
        let cluster = self.d.cluster;
        let key = self.d.key.map(|k| k.id.as_str());
        let ids = || {
            let bound = crate::tenancy::ids_binding(&cluster.id, key);
            (core.shared.sealer.clone(), Arc::from(bound.as_ref()))
        };
        let mut filter = ResponseFilter::for_response(self.d, rh, &up.buf, ids);
        if let Some(owner) = super::contexts::pit_owner(self.d, self.contexts.as_ref()) {
            filter.set_pit_owner(owner);
        }
        let mut relaying = Relaying {
            client: self.client,
            up,
            rewritten: &mut self.scratch.rewritten,
            deadline: self.deadline,
        };
        let relayed = relaying.relay(rh, &mut filter).await;
        self.sealed.clear();
        self.sealed.extend_from_slice(filter.sealed());
        self.shards_total = filter.shards_total();
        relayed
    }
}

/// What an answer's status says about the node that sent it.
/// One try of an exchange: the node, whether a pooled connection may serve it (only the
/// first try's), and whether its failure may still be tried again.
#[derive(Debug, Clone, Copy)]
struct Try {
    node: SocketAddr,
    pooled: bool,
    may_retry: bool,
}

fn passive_of(status: u16) -> Passive {
    match status {
        429 => Passive::Overloaded,
        500 | 502 | 503 | 504 => Passive::ServerError,
        _ => Passive::Answered,
    }
}
