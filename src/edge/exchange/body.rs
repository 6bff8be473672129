//! Admission, the body's part: before a slot is awaited, a body that must be seen whole is
//! read (inflated first when compressed), checked against a key limited to indices,
//! transformed by `filter::whole_body`, and an index creation's shards are reserved against
//! the plan (400 before anything reaches the upstream); a search context's place too (429).
//!
//! Must not touch: the allowance and the fleet's home (`slot`), the upstream (`tries`), the
//! filters' rules (`filter`).

use std::sync::Arc;

use crate::edge::buffered;
use crate::edge::contexts::Counted;
use crate::edge::filter::whole_body;
use crate::edge::io::Transport;
use crate::edge::outcome::SendFail;
use crate::errors::EdgeError;
use crate::policy::decide::{BodyPlan, Reservation};
use crate::policy::keys::{check_body, BodyRefusal};
use crate::policy::shards::{create_index_shards, ShardDefaults};
use crate::proto::Framing;
use crate::registry::{Cluster, ShardReservation};

use super::Exchange;

impl<'d, T: Transport> Exchange<'_, 'd, T> {
    /// Before a slot is awaited: a body that must be seen whole is read and transformed,
    /// the shards an index creation asks for are reserved (spec 2.2, 8: 400 before
    /// anything reaches the upstream), and so is the place of a search context it opens
    /// (429). A compressed body the edge reads is inflated first. Returns the shards
    /// reserved, held until the answer (released on drop).
    pub(super) async fn prepare(&mut self) -> Result<Option<ShardReservation<'d>>, SendFail> {
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
            Err(e) => Err(SendFail::Refuse(crate::edge::precreate::index_refused(
                cluster, asked, e,
            ))),
        }
    }
}
