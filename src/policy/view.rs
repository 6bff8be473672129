//! What deciding sees of the clusters: two small traits, [`Directory`] (find a cluster by
//! host or username) and [`ClusterView`] (the facts of one cluster a decision reads).
//!
//! The registry's snapshot implements them (`registry/directory.rs`); the tables of
//! `decide`'s tests implement them with plain data. So `policy` names nothing of the
//! registry: the registry uses policy's building blocks (allowance, credential comparison,
//! modes), and policy sees the registry only through these traits, with no import circle
//! between the two.
//!
//! Must not touch: storage, sockets, runtime state (allowance counters, the shard ledger):
//! a view answers questions, it changes nothing.

use std::net::IpAddr;
use std::time::Instant;

use super::keys::{AuthFail, Principal};
use super::mode::ModeView;
use crate::config::ClusterClass;
use crate::tenancy::Prefix;

/// The clusters a request can be routed to.
pub trait Directory {
    /// One cluster as the directory hands it out.
    type Cluster: ClusterView;

    /// The service domain (`[edge] domain`), lowercase: hosts are
    /// `<hostname>.<region>.<domain>`.
    fn domain(&self) -> &str;

    /// Whether a Host of `localhost` or an IP literal routes by the request's username.
    fn route_by_username(&self) -> bool;

    /// The cluster at `<hostname>.<region>` (lowercase, the domain removed).
    fn by_host(&self, hostname_region: &str) -> Option<&Self::Cluster>;

    /// The cluster whose username (current, or rotated out and still in its grace) is
    /// `username`.
    fn by_username(&self, username: &str) -> Option<&Self::Cluster>;

    /// Whether `username` belonged to a cluster that was destroyed (and to no live one):
    /// routed by it, a request gets Cluster Not Found rather than a 401.
    fn is_destroyed_username(&self, _username: &str) -> bool {
        false
    }
}

/// The facts of one cluster that a decision reads.
pub trait ClusterView {
    /// The cluster's id (scroll and point-in-time ids of the multitenant class are bound
    /// to it).
    fn id(&self) -> &str;

    /// Requests reach it: provisioned, not destroyed, and (single tenant) its upstream has
    /// answered since it was added. Otherwise no cluster answers at its address (spec 3).
    fn reachable(&self) -> bool;

    /// Who `user:pass` is on this cluster at `now`: its master pair (rotated-out
    /// credentials during their grace included) or one of its live keys; `None` when
    /// neither (compared in constant time).
    /// A key used from an address outside its `allowed_ips` fails before its password is
    /// compared.
    fn authenticate(
        &self,
        user: &[u8],
        pass: &[u8],
        client: IpAddr,
        now: Instant,
    ) -> Result<Principal<'_>, AuthFail>;

    /// Whether a live key of the cluster lists browser origin `origin` (a CORS pre-check,
    /// which carries no credentials, is answered for it).
    fn allows_origin(&self, origin: &[u8], now: Instant) -> bool;

    /// Multitenant or single tenant.
    fn class(&self) -> ClusterClass;

    /// The mode requests see at `now` (an operator's mode with its reason, or metering's
    /// verdict; a maintenance window whose `until` passed counts as ended).
    fn mode(&self, now: Instant) -> ModeView;

    /// The namespace of the multitenant class's index names (`None`: single tenant).
    fn prefix(&self) -> Option<Prefix>;

    /// The plan's `max_bulk_actions`.
    fn max_bulk_actions(&self) -> u64;
}
