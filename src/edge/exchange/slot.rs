//! Admission, the permit's part: a slot of the cluster's allowance, from this node's own
//! (FIFO across cores, queue timeout, deadline, client gone) or, in a fleet, from the
//! cluster's home node over the peer protocol (issue 27); where the home is, and what the
//! home is told about the places a request counted.
//!
//! Must not touch: the body (`body`), the upstream (`tries`), the allowance's accounting
//! (`policy::admit`).

use std::time::{Duration, Instant};

use crate::edge::contexts::Counted;
use crate::edge::io::Transport;
use crate::edge::outcome::SendFail;
use crate::edge::peer::{self, Asking, FleetHook, Refused, Slot};
use crate::errors::EdgeError;
use crate::fleet::membership::Home;
use crate::fleet::places::Held;
use crate::fleet::wire::{Acquire, Verdict};
use crate::policy::admit::{Admission, Limit, Permit};
use crate::policy::decide::Reservation;
use crate::policy::shards::IndexShards;
use crate::request::classify::Class;
use crate::tenancy::ContextUse;

use super::{Exchange, Refusal};

impl<'d, T: Transport> Exchange<'_, 'd, T> {
    /// In a fleet, a request that counts places besides its permit (an index creation's
    /// shards, a scroll or point in time's contexts) fixes where they are counted now: here
    /// when this node is the cluster's home, else at the home, with its permit (503 when no
    /// node can admit the cluster now).
    pub(super) fn pin_home(&mut self) -> Result<(), SendFail> {
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
    pub(super) async fn tell_home(&mut self, held: &Held) -> Option<Verdict> {
        let Some(Slot::Remote(p)) = self.slot.as_mut() else {
            return None;
        };
        let until = Instant::now() + self.client.core.shared.limits.connect_timeout;
        p.tell(&mut self.client.timer, held, until).await
    }

    /// A slot of the request's allowance: from this node's own allowance, or (in a fleet
    /// admitting at homes) from the cluster's home node.
    pub(super) async fn wait_for_slot(&mut self) -> Result<(Slot, Option<u64>), Refusal> {
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
        match got {
            Ok(p) => Ok((Slot::Remote(p), Some(waited_us))),
            Err(r) => Err(self.home_refused(r, limit, waited_us)),
        }
    }

    /// What the client is answered when the home did not give a permit (`waited_us`: how
    /// long the request waited for it).
    fn home_refused(&self, refused: Refused, limit: Limit, waited_us: u64) -> Refusal {
        let cluster = self.d.cluster;
        let e = match refused {
            Refused::Gone => return Refusal::Gone(waited_us),
            Refused::Unreachable | Refused::Verdict(Verdict::NotHome) => return self.unavailable(),
            Refused::Verdict(Verdict::Deadline | Verdict::Granted) => {
                EdgeError::GatewayTimeout(self.client.core.shared.limits.deadline.as_secs())
            }
            Refused::Verdict(Verdict::ShardCapacity { in_use }) => EdgeError::ShardCapacity {
                plan: cluster.plan.name.clone(),
                capacity: cluster.plan.shards,
                in_use: u64::from(in_use),
                asked: self.home_index.map_or(0, IndexShards::total),
            },
            Refused::Verdict(Verdict::Contexts { share, used }) => match &self.contexts {
                Some(c) => c.refused_at_home(share, used),
                None => self.unavailable_error(),
            },
            Refused::Verdict(Verdict::Full {
                concurrency,
                queue_size,
            }) => EdgeError::QueueFull {
                limit: limit.name(),
                concurrency,
                queue_size,
            },
            // The home counted the refusal on the allowance.
            Refused::Verdict(Verdict::QueueTimeout {
                concurrency,
                waited_ms,
            }) => EdgeError::QueueTimeout {
                limit: limit.name(),
                concurrency,
                waited_ms: u64::from(waited_ms),
            },
        };
        Refusal::Error(e, Some(waited_us))
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
}
