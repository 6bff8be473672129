//! The upstream's part of an exchange: `100 Continue`, indices created first (`precreate`),
//! a node chosen, at most three tries (pooled connection, fresh one, another node; each only
//! where `outcome::retry_allowed` says the failed one did no harm), the request sent through
//! the request filter (`send`), the response head read (given up when the node goes down)
//! and the response relayed through the response filter (`relay`).
//!
//! Must not touch: admission (`body`, `slot`), the retry rules themselves (`outcome`), the
//! wire format (`proto`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::edge::faults::{self, Point};
use crate::edge::filter::{RequestFilter, ResponseFilter};
use crate::edge::io::Transport;
use crate::edge::outcome::{
    retry_allowed, HeadFail, Outcome, Retry, RetryFacts, SendFail, Tried, Unanswered, Where,
};
use crate::edge::peer::Slot;
use crate::edge::precreate;
use crate::edge::relay::Relaying;
use crate::edge::send::Sending;
use crate::edge::upstream::UpstreamConn;
use crate::nodes::Passive;
use crate::policy::decide::Reservation;
use crate::request::classify::Class;
use crate::request::waits;

use super::Exchange;

/// How long the edge looks for an upstream's early answer after it stopped reading a body.
const EARLY_ANSWER_WAIT: Duration = Duration::from_secs(1);

impl<'d, T: Transport> Exchange<'_, 'd, T> {
    /// Sends the request (retrying once when allowed) and relays the response.
    pub(super) async fn forward(&mut self, permit: Slot) -> Outcome {
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
        if let Some(owner) = crate::edge::contexts::pit_owner(self.d, self.contexts.as_ref()) {
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

/// One try of an exchange: the node, whether a pooled connection may serve it (only the
/// first try's), and whether its failure may still be tried again.
#[derive(Debug, Clone, Copy)]
struct Try {
    node: SocketAddr,
    pooled: bool,
    may_retry: bool,
}

/// What an answer's status says about the node that sent it.
fn passive_of(status: u16) -> Passive {
    match status {
        429 => Passive::Overloaded,
        500 | 502 | 503 | 504 => Passive::ServerError,
        _ => Passive::Answered,
    }
}
