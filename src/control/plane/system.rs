//! The changes the system makes on its own, through the same path as every other change
//! (actor `system`; in a fleet only the leader makes them): maintenance windows that ended,
//! clusters whose upstreams answered for the first time, and the destroyed multitenant
//! clusters whose indices are still to be deleted from their shared upstream.
//!
//! Must not touch: the store's format (`batch`), sockets (the purges are done by the edge's
//! control thread).

use std::net::SocketAddr;

use crate::config::{ClusterClass, Mode};
use crate::registry::{Command, Millis};
use crate::tenancy::Prefix;

use super::{Change, ControlError, Plane};

/// A destroyed multitenant cluster whose indices are still on its shared upstream.
#[derive(Debug, Clone)]
pub struct Purge {
    pub id: String,
    /// Its upstream's nodes (the purge goes to a usable one).
    pub upstreams: Vec<SocketAddr>,
    pub prefix: Prefix,
}

impl Plane {
    /// Ends maintenance windows whose `until` passed (actor `system`). Returns how many.
    /// In a fleet, only the leader does.
    pub fn expire_maintenance(&mut self) -> Result<usize, ControlError> {
        if !self.leads() {
            return Ok(0);
        }
        self.expire_maintenance_at(self.clock.now_ms())
    }

    /// Ends maintenance windows whose `until` is at or before `now`.
    pub fn expire_maintenance_at(&mut self, now: Millis) -> Result<usize, ControlError> {
        let snap = self.registry.load();
        let cmds: Vec<Command> = snap
            .catalog
            .live()
            .filter(|c| c.mode == Mode::Maintenance && c.mode_until.is_some_and(|u| u <= now))
            .map(|c| Command::SetMode {
                id: c.id.clone(),
                mode: Mode::Normal,
                reason: Some("the maintenance window ended".into()),
                until: None,
            })
            .collect();
        if cmds.is_empty() {
            return Ok(0);
        }
        let n = cmds.len();
        self.submit(Change {
            actor: "system".into(),
            cmds,
            ..Change::default()
        })?;
        Ok(n)
    }

    /// Records that these clusters' upstreams answered for the first time (in a fleet,
    /// the leader does; the others learn it from the feed).
    pub fn mark_provisioned(&mut self, ids: &[String]) -> Result<(), ControlError> {
        if !self.leads() {
            return Ok(());
        }
        let snap = self.registry.load();
        let cmds: Vec<Command> = ids
            .iter()
            .filter(|id| {
                snap.catalog
                    .clusters
                    .get(*id)
                    .is_some_and(|c| c.is_live() && c.provisioned_at.is_none())
            })
            .map(|id| Command::MarkProvisioned { id: id.clone() })
            .collect();
        if cmds.is_empty() {
            return Ok(());
        }
        self.submit(Change {
            actor: "system".into(),
            cmds,
            ..Change::default()
        })
        .map(drop)
    }

    /// The addresses of an `upstream` list (a pool's or its nodes'), those that resolve.
    fn upstreams_of(&self, list: &[String]) -> Vec<SocketAddr> {
        let names = match crate::config::pool_named(list) {
            Some(p) => self.settings.pool(p).map_or(&[][..], |p| &p.nodes[..]),
            None => list,
        };
        let mut out: Vec<SocketAddr> = Vec::new();
        for a in names
            .iter()
            .flat_map(|n| self.resolver.resolve(n).unwrap_or_default())
        {
            if !out.contains(&a) {
                out.push(a);
            }
        }
        out
    }

    /// Destroyed multitenant clusters whose indices are still to be deleted (none on a
    /// node that does not lead the fleet).
    pub fn pending_purges(&mut self) -> Vec<Purge> {
        if !self.leads() {
            return Vec::new();
        }
        let snap = self.registry.load();
        snap.catalog
            .clusters
            .values()
            .filter(|c| !c.is_live() && !c.purged && c.class == ClusterClass::Multitenant)
            .filter_map(|c| {
                let upstreams = match &c.upstream {
                    None => vec![self.settings.engine?],
                    Some(list) => self.upstreams_of(list),
                };
                if upstreams.is_empty() {
                    return None;
                }
                Some(Purge {
                    id: c.id.clone(),
                    upstreams,
                    prefix: Prefix::derive(&self.settings.key, &c.id),
                })
            })
            .collect()
    }
}
