//! The registry's snapshot as deciding sees it: `policy::view`'s traits implemented over
//! [`Snapshot`] and its clusters, through their public interface only.
//!
//! Must not touch: anything but reading; runtime state stays where it is.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use super::{Cluster, Snapshot};
use crate::config::{ClusterClass, Mode as ConfigMode};
use crate::policy::cors::listed;
use crate::policy::keys::{AuthFail, Principal};
use crate::policy::mode::ModeView;
use crate::policy::view::{ClusterView, Directory};
use crate::tenancy::Prefix;

impl Directory for Snapshot {
    type Cluster = Arc<Cluster>;

    fn domain(&self) -> &str {
        &self.domain
    }

    fn route_by_username(&self) -> bool {
        self.route_by_username
    }

    fn by_host(&self, hostname_region: &str) -> Option<&Arc<Cluster>> {
        Snapshot::by_host(self, hostname_region)
    }

    fn by_username(&self, username: &str) -> Option<&Arc<Cluster>> {
        Snapshot::by_username(self, username)
    }

    fn is_destroyed_username(&self, username: &str) -> bool {
        Snapshot::is_destroyed_username(self, username)
    }
}

impl ClusterView for Arc<Cluster> {
    fn id(&self) -> &str {
        &self.id
    }

    fn reachable(&self) -> bool {
        !matches!(self.mode, ConfigMode::Provisioning | ConfigMode::Destroyed)
            && self.state.is_ready()
    }

    fn authenticate(
        &self,
        user: &[u8],
        pass: &[u8],
        client: IpAddr,
        now: Instant,
    ) -> Result<Principal<'_>, AuthFail> {
        Cluster::authenticate(self, user, pass, client, now)
    }

    fn allows_origin(&self, origin: &[u8], now: Instant) -> bool {
        self.keys
            .values()
            .any(|k| k.grant.live_at(now) && listed(&k.grant.allowed_origins, origin))
    }

    fn class(&self) -> ClusterClass {
        self.class
    }

    fn mode(&self, now: Instant) -> ModeView {
        self.effective_mode_at(now)
    }

    fn prefix(&self) -> Option<Prefix> {
        self.prefix
    }

    fn max_bulk_actions(&self) -> u64 {
        self.plan.max_bulk_actions
    }
}
