//! The one decision about a request, taken before any byte of it goes upstream: which
//! cluster it is for (route by Host, or by username on `localhost`), whether its
//! credentials open that cluster (authentication), what it is (the route table of
//! `classify`), whether the cluster's mode lets it through, and how the edge must carry it
//! out: the target to forward, what to do with the body, the `_bulk` action limit, the
//! shards to reserve, the multitenant plan.
//!
//! Pure: the clusters (a [`Directory`]), the parsed head, the listener's facts and the
//! clock come in; a [`Decision`] or the refusal comes out ([`Refused`]: the [`EdgeError`]
//! the edge renders, and the cluster when the credentials opened one, so the refusal counts
//! for it). Nothing is reserved, counted or sent here: `edge::exchange` does that with
//! the decision in hand. Tested from a table of raw heads against plain-data clusters
//! (`tests.rs`), without a socket.
//!
//! Order of the checks (each refusal is the first that applies):
//! 1. Host (400 when it is not a host name), TLS server name against Host (421);
//! 2. route (404 Cluster Not Found; 401 for an unknown username on `localhost`), then the
//!    credentials (401);
//! 3. a Content-Length over `max_body` (413), before any body byte is read;
//! 4. the path (400 when it does not decode), blocked endpoints and the mode (404, 403,
//!    501: `mode::decide`);
//! 5. the multitenant class: headers its rewriting depends on and identity headers
//!    (400, `tenancy::headers`), the target in the tenant's namespace (400 for names it cannot take, 501 for endpoints it cannot confine);
//! 6. the wait parameters (`timeout`, `master_timeout`) in canonical form, 400 for values
//!    the upstream would refuse (`request::waits`).
//!
//! Must not touch: sockets, the runtime state behind the clusters (allowance, shard
//! ledger), the wall clock (`now` is passed in).

use std::net::IpAddr;
use std::time::Instant;

use super::auth::{parse_basic, MAX_CREDENTIALS};
use super::cors;
use super::keys::{self, AuthFail, KeyGrant, Principal};
use super::mode;
use super::route::{normalize_host, route};
use super::view::{ClusterView, Directory};
use crate::errors::EdgeError;
use crate::proto::{Framing, RequestHead};
use crate::request::classify::{classify_request, BodyKind, Class, Classified, Route};
use crate::request::datemath;
use crate::request::waits;
use crate::tenancy::encoding::{accepts_gzip, Coding};
use crate::tenancy::{self, IdSealer, Prefix, RequestPlan, Tenant};

/// Largest index-creation body the edge reads whole to count its shards (they are small).
pub const MAX_INDEX_BODY: u64 = 1 << 20;

/// What the edge knows of the connection a request came on, and its own limits.
#[derive(Debug, Clone, Copy)]
pub struct Listener<'a> {
    /// The server name the client asked for in its TLS handshake (`None`: plain TCP, or no
    /// SNI). When both it and a Host header are there, they must name the same host.
    pub sni: Option<&'a str>,
    /// `[edge] max_body`: a Content-Length above it is refused before the body is read.
    pub max_body: u64,
    /// The node's sealer of the multitenant class's scroll and point-in-time ids (`None`:
    /// no sealed id opens, every one is a missing search context).
    pub ids: Option<&'a IdSealer>,
    /// The client's address: the socket's, or what a trusted proxy's `X-Forwarded-For`
    /// says (`cidr::client_address`). Keys' `allowed_ips` are checked against it.
    pub client: IpAddr,
    /// The wall clock at the request, ms since the epoch (UTC): date-math index names
    /// are resolved at it (`request::datemath`).
    pub wall_ms: i64,
}

/// Bytes a decision writes, into buffers the connection keeps from one request to the
/// next (so deciding allocates nothing per request).
#[derive(Debug, Default)]
pub struct Targets {
    /// The request-target to forward, origin form: the classified path in canonical form
    /// (with the tenant's index names on the multitenant class), then the query.
    pub target: Vec<u8>,
    /// The whitelisted index, as the client named it, that a document write may
    /// auto-create: the edge creates it first ([`Reservation::AutoCreate`]). Empty: none.
    pub auto_create: Vec<u8>,
}

/// What the edge does with the request body on its way upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyPlan {
    /// Forwarded as it comes (re-framed, never altered).
    Stream,
    /// Forwarded as it comes, `_bulk` actions counted: 413 above `max_actions`
    /// (single-tenant `_bulk`; spec 7).
    CountBulk { max_actions: u64 },
    /// Rewritten into the tenant's namespace as it streams (the multitenant class's NDJSON
    /// bodies: `_bulk`, with the same action limit, and `_msearch`); sent chunked, since
    /// its length changes.
    Rewrite { kind: BodyKind, max_actions: u64 },
    /// Read whole (at most `limit` bytes, 413 above) before anything is sent, then
    /// forwarded with its new length: index creation (its shards are counted against the
    /// plan), every JSON body of the multitenant class (parsed strictly, rewritten as data
    /// and written again by `tenancy`), a single-tenant `_reindex` (a remote source is
    /// refused).
    Whole { kind: BodyKind, limit: u64 },
}

/// Shards a request may add to the cluster; the edge reserves them against the plan's
/// capacity (400 when they do not fit) before the request is forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reservation {
    None,
    /// `PUT /<index>`: the shards its body asks for (read whole first: [`BodyPlan::Whole`]).
    CreateIndex,
    /// The upstream's default shards for [`Targets::auto_create`], which the edge creates
    /// before the write.
    AutoCreate,
}

/// How a multitenant request is rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantPlan {
    pub prefix: Prefix,
    pub plan: RequestPlan,
    /// The client accepts a gzip response: the rewritten body goes out compressed.
    pub gzip_response: bool,
}

/// A request the edge forwards, and how.
#[derive(Debug)]
pub struct Decision<'s, C> {
    /// The cluster it is for.
    pub cluster: &'s C,
    /// Read, update or index deletion (what the mode was checked against).
    pub class: Class,
    pub body: BodyPlan,
    pub reserve: Reservation,
    /// The multitenant class's plan (`None`: single tenant, forwarded as classified).
    pub tenant: Option<TenantPlan>,
    /// The key the request came with (`None`: the cluster's master pair).
    pub key: Option<&'s KeyGrant>,
    /// The request came from a browser origin its key lists: the response carries the
    /// CORS headers for it (`cors::response_headers`).
    pub cors: bool,
    /// A key limited to indices sent a body that may name indices: the edge reads it whole
    /// and checks it (`keys::check_body`) before anything is sent. The action, for the
    /// refusal.
    pub key_body: Option<KeyBody>,
    /// A key's request on the single-tenant class: the ids its response carries, sealed for
    /// the key (`tenancy::key_ids`). `None`: the response passes as it comes.
    pub seal: Option<tenancy::IdFields>,
    /// A key limited to indices sent a path that named no index and the edge put the key's
    /// patterns there: a point-in-time search takes them out again (its point in time,
    /// opened by the key within its patterns, names the indices).
    pub key_scoped: bool,
    /// The body came compressed and the edge reads it (every body of the multitenant
    /// class; on the single-tenant class one it checks: an index creation, a counted
    /// `_bulk`, a `_reindex`, a key's body): inflated first, bounded by the body limit,
    /// and forwarded plain. `None`: forwarded as it came.
    pub inflate: Option<Coding>,
}

/// What `keys::check_body` needs of the request, kept by the decision.
#[derive(Debug, Clone)]
pub struct KeyBody {
    pub kind: BodyKind,
    pub method: crate::proto::Method,
    /// The request's action, named in a refusal.
    pub action: String,
    /// A single-tenant key's body that may carry its scroll or point-in-time tokens: they
    /// are opened before it is forwarded (`tenancy::key_ids::open_body`).
    pub open_ids: bool,
}

impl<C> Decision<'_, C> {
    /// `max_bulk_actions` when the body is a `_bulk` body (counted or rewritten).
    pub fn bulk_limit(&self) -> Option<u64> {
        match self.body {
            BodyPlan::CountBulk { max_actions }
            | BodyPlan::Rewrite {
                kind: BodyKind::Bulk,
                max_actions,
            } => Some(max_actions),
            _ => None,
        }
    }
}

/// A refused request: the error to answer, and the cluster it was for when its credentials
/// opened one (a Content-Length over the limit, a blocked endpoint, a mode refusal), so the
/// refusal counts for that cluster. Before the credentials are checked nothing is
/// attributed: a client without them must not move another cluster's figures.
#[derive(Debug)]
pub struct Refused<'s, C> {
    pub error: EdgeError,
    pub cluster: Option<&'s C>,
    /// The key the credentials were, when they were one of the cluster's keys.
    pub key: Option<&'s KeyGrant>,
    /// The refusal goes to a browser origin the key lists (CORS headers on it, so the page
    /// can read why).
    pub cors: bool,
}

impl<C> From<EdgeError> for Refused<'_, C> {
    fn from(error: EdgeError) -> Self {
        Refused {
            error,
            cluster: None,
            key: None,
            cors: false,
        }
    }
}

/// Decides what to do with the request whose head `head` was parsed from `buf`: forward it
/// (the [`Decision`], with the forward target written into `out`), or refuse it.
pub fn decide<'s, D: Directory>(
    clusters: &'s D,
    head: &RequestHead,
    buf: &[u8],
    listener: &Listener<'_>,
    now: Instant,
    out: &mut Targets,
) -> Result<Decision<'s, D::Cluster>, Refused<'s, D::Cluster>> {
    let (cluster, who) = authenticate(clusters, head, buf, listener, now)?;
    let key = match who {
        Principal::Master => None,
        Principal::Key(k) => Some(k),
    };
    let cors = key.is_some_and(|k| {
        head.header(buf, b"origin")
            .is_some_and(|o| cors::listed(&k.allowed_origins, o))
    });
    match decide_for(cluster, key, head, buf, listener, now, out) {
        Ok(d) => Ok(Decision { cors, ..d }),
        Err(error) => Err(Refused {
            error,
            cluster: Some(cluster),
            key,
            cors,
        }),
    }
}

/// A browser's CORS pre-check (`cors::is_preflight`) to a cluster with a live key that
/// lists its origin: the cluster (routed by Host; the edge answers 204 itself, nothing goes
/// upstream). `None`: not a pre-check, or not one the edge answers (decided as any other
/// request: 401 without credentials).
pub fn preflight<'s, D: Directory>(
    clusters: &'s D,
    head: &RequestHead,
    buf: &[u8],
    now: Instant,
) -> Option<&'s D::Cluster> {
    let origin = head.header(buf, b"origin")?;
    let asks = head.header(buf, b"access-control-request-method").is_some();
    if !cors::is_preflight(head.method, true, asks, head.authorization.is_some()) {
        return None;
    }
    let mut host_buf = [0u8; 253];
    let host = normalize_host(head.host?.of(buf), &mut host_buf)?;
    let cluster = route(clusters, host, None).ok()?;
    cluster.allows_origin(origin, now).then_some(cluster)
}

/// The decision for an authenticated request to `cluster` (checks 3 to 5).
fn decide_for<'s, C: ClusterView>(
    cluster: &'s C,
    key: Option<&'s KeyGrant>,
    head: &RequestHead,
    buf: &[u8],
    listener: &Listener<'_>,
    now: Instant,
    out: &mut Targets,
) -> Result<Decision<'s, C>, EdgeError> {
    if let Framing::Length(n) = head.framing {
        if n > listener.max_body {
            return Err(EdgeError::BodyTooLarge(listener.max_body));
        }
    }
    // Classify on the decoded path, apply the mode, and forward exactly what was classified
    // (for the multitenant class: with every index name in the tenant's namespace).
    let classified = classify_request(head.method, head.path(buf), cluster.class())?;
    // Date-math names resolved here, once: what follows reads concrete names.
    let resolved = datemath_path(&classified, listener.wall_ms)?;
    let classified = match &resolved {
        Some(path) => classify_request(head.method, path, cluster.class())?,
        None => classified,
    };
    mode::decide(cluster.mode(now), &classified.class)?;
    // A key: its role, then its indices (the path confined to them, classified again).
    let scoped = match key {
        Some(k) => key_scope(k, head.method, &classified, head.query(buf))?,
        None => None,
    };
    let key_scoped = scoped.is_some() && keys::inserts_patterns(&classified);
    let classified = match &scoped {
        Some(path) => classify_request(head.method, path, cluster.class())?,
        None => classified,
    };
    out.target.clear();
    out.auto_create.clear();
    let tenant = match cluster.prefix() {
        None => {
            match key {
                Some(k) => {
                    let bound = tenancy::ids_binding(cluster.id(), Some(k.id.as_str()));
                    let ids = tenancy::key_ids::KeyIds {
                        sealer: listener.ids,
                        binding: &bound,
                    };
                    let q = head.query(buf);
                    tenancy::key_ids::write_target(&ids, &classified, q, &mut out.target)?;
                }
                None => classified
                    .path
                    .write_target(head.query(buf), &mut out.target),
            }
            None
        }
        Some(prefix) => {
            let header = |name: &[u8]| head.header(buf, name);
            tenancy::check_headers(
                header(b"content-type"),
                header(b"content-encoding"),
                header(b"accept"),
                has_body(head),
            )?;
            let headers = head.headers.iter();
            tenancy::check_request_headers(headers.map(|h| (h.name.of(buf), h.value.of(buf))))?;
            let bound = tenancy::ids_binding(cluster.id(), key.map(|k| k.id.as_str()));
            let t = Tenant {
                prefix: &prefix,
                ids: listener.ids.map(|s| (s, bound.as_ref())),
                now_ms: listener.wall_ms,
            };
            let plan = tenancy::plan_request(&t, &classified, head.query(buf), &mut out.target)?;
            Some(TenantPlan {
                prefix,
                plan,
                gzip_response: accepts_gzip(header(b"accept-encoding")),
            })
        }
    };
    // The wait parameters the edge bounds by the deadline, in the form the upstream reads
    // as the edge does (400 for what it cannot read; `edge::exchange` caps them).
    waits::canonical(&mut out.target)?;
    // A write that auto-creates a whitelisted index: the edge creates it first, after the
    // plan's shard check (for either class).
    if let Some(name) = tenancy::auto_create_target(head.method, &classified) {
        out.auto_create.extend_from_slice(name);
    }
    let kind = classified.route.map_or(BodyKind::None, Route::body_kind);
    let body = body_plan(
        kind,
        tenant.is_some(),
        head,
        listener,
        cluster.max_bulk_actions(),
    );
    let reserve = if kind == BodyKind::CreateIndex {
        Reservation::CreateIndex
    } else if !out.auto_create.is_empty() {
        Reservation::AutoCreate
    } else {
        Reservation::None
    };
    // A restricted key's clear-scroll body is read for `_all` even without indices; a
    // single-tenant key's body that may carry its tokens, to open them.
    let open_ids = key.is_some() && tenant.is_none() && tenancy::key_ids::reads_body(kind);
    let key_body = key
        .filter(|k| {
            has_body(head)
                && ((!k.indices.is_empty() && keys::body_checked(kind))
                    || (keys::restricted(k) && kind == BodyKind::ClearScroll)
                    || open_ids)
        })
        .map(|_| KeyBody {
            kind,
            method: head.method,
            action: keys::action_of(head.method, &classified),
            open_ids,
        });
    let seal = match (key, &tenant) {
        (Some(_), None) => tenancy::key_ids::response_ids(&classified),
        _ => None,
    };
    let inflate = inflation(head, buf, tenant.is_some(), body, key_body.is_some())?;
    Ok(Decision {
        cluster,
        class: classified.class,
        body,
        reserve,
        tenant,
        key,
        cors: false,
        key_body,
        seal,
        key_scoped,
        inflate,
    })
}

/// Whether the edge inflates the body before reading it ([`Decision::inflate`]): when the
/// body came compressed and the edge reads it at all (every body of the multitenant class;
/// on the single-tenant class an index creation, a counted `_bulk`, a `_reindex`, a key's
/// body), so that what it checks is what the upstream gets. A coding it cannot inflate is
/// 400 then; a body the edge does not read passes as it came.
fn inflation(
    head: &RequestHead,
    buf: &[u8],
    tenant: bool,
    body: BodyPlan,
    key_body: bool,
) -> Result<Option<Coding>, EdgeError> {
    let reads =
        tenant || key_body || matches!(body, BodyPlan::Whole { .. } | BodyPlan::CountBulk { .. });
    if !reads || !has_body(head) {
        return Ok(None);
    }
    tenancy::encoding::request_coding(head.header(buf, b"content-encoding"))
}

/// A key's role checked against the request (a restricted key never closes all of the
/// cluster's contexts), and the path confined to its indices (`Some`: the path to classify
/// instead).
fn key_scope(
    k: &KeyGrant,
    method: crate::proto::Method,
    c: &Classified<'_>,
    query: Option<&[u8]>,
) -> Result<Option<Vec<u8>>, EdgeError> {
    let refuse = |d: keys::Denied| EdgeError::Forbidden {
        key: k.name.clone(),
        action: d.action,
        why: d.why.into_owned(),
    };
    keys::permits(k.role, method, c).map_err(refuse)?;
    if let Some(d) = keys::unknown_denied(k, method, c) {
        return Err(refuse(d));
    }
    if keys::restricted(k) && keys::clears_all(method, c, query) {
        return Err(refuse(keys::all_contexts_denied(method, c)));
    }
    if k.indices.is_empty() {
        return Ok(None);
    }
    keys::scope_path(&k.indices, method, c).map_err(refuse)
}

/// The path of `c` with the date-math items of its index and alias names resolved at
/// `wall_ms` (`request::datemath`), encoded; `None` when it has none.
fn datemath_path(c: &Classified<'_>, wall_ms: i64) -> Result<Option<Vec<u8>>, EdgeError> {
    let Some(route) = c.route else {
        return Ok(None);
    };
    let mut changed = false;
    let mut segs: Vec<Vec<u8>> = Vec::with_capacity(c.path.len());
    for (i, seg) in c.path.segments().enumerate() {
        let names = matches!(
            route.pattern.get(i),
            Some(crate::request::classify::Seg::Index | crate::request::classify::Seg::Alias)
        );
        match names
            .then(|| datemath::resolve_list(seg, wall_ms))
            .transpose()?
        {
            Some(Some(new)) => {
                changed = true;
                segs.push(new);
            }
            _ => segs.push(seg.to_vec()),
        }
    }
    if !changed {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(c.path.len() * 16 + 16);
    for s in &segs {
        out.push(b'/');
        crate::request::path::encode_segment(s, &mut out);
    }
    Ok(Some(out))
}

/// The request declared a body.
fn has_body(head: &RequestHead) -> bool {
    !matches!(head.framing, Framing::None | Framing::Length(0))
}

/// What the edge does with a body of `kind` (the route table's), on the multitenant class
/// (`tenant`) or not.
fn body_plan(
    kind: BodyKind,
    tenant: bool,
    head: &RequestHead,
    listener: &Listener<'_>,
    max_actions: u64,
) -> BodyPlan {
    let whole = BodyPlan::Whole {
        kind,
        limit: listener.max_body,
    };
    match kind {
        BodyKind::CreateIndex => BodyPlan::Whole {
            kind,
            limit: MAX_INDEX_BODY,
        },
        BodyKind::Bulk | BodyKind::Msearch if tenant => BodyPlan::Rewrite { kind, max_actions },
        BodyKind::Bulk => BodyPlan::CountBulk { max_actions },
        BodyKind::Document => BodyPlan::Stream,
        // No body, or one the endpoint does not take (refused unless blank).
        _ if !has_body(head) => BodyPlan::Stream,
        _ if tenant => whole,
        BodyKind::Reindex => whole,
        _ => BodyPlan::Stream,
    }
}

/// Route and authenticate (spec 2.1, 5): the cluster the request is for and who its Basic
/// credentials are there (its master pair or one of its keys).
fn authenticate<'s, D: Directory>(
    clusters: &'s D,
    head: &RequestHead,
    buf: &[u8],
    listener: &Listener<'_>,
    now: Instant,
) -> Result<(&'s D::Cluster, Principal<'s>), EdgeError> {
    let mut host_buf = [0u8; 253];
    let host = match head.host {
        Some(span) => normalize_host(span.of(buf), &mut host_buf)
            .ok_or(EdgeError::BadRequest("invalid Host header"))?,
        None => "localhost", // HTTP/1.0 without Host
    };
    if let (Some(sni), Some(_)) = (listener.sni, head.host) {
        if !sni.eq_ignore_ascii_case(host) {
            return Err(EdgeError::Misdirected);
        }
    }
    let mut cred_buf = [0u8; MAX_CREDENTIALS];
    let creds = head
        .authorization
        .and_then(|s| parse_basic(s.of(buf), &mut cred_buf));
    let cluster = route(clusters, host, creds.map(|c| c.0))?;
    let (user, pass) = creds.ok_or(EdgeError::AuthRequired)?;
    let who = cluster
        .authenticate(user, pass, listener.client, now)
        .map_err(|fail| match fail {
            AuthFail::Credentials => EdgeError::AuthRequired,
            AuthFail::Address { key } => EdgeError::Forbidden {
                key,
                action: "use".into(),
                why: format!(
                    "the client address {} is not in the key's allowed_ips",
                    listener.client
                ),
            },
        })?;
    Ok((cluster, who))
}

/// The index a forwarded `PUT /<index>` target creates: its first path segment, as
/// forwarded (the shard ledger matches it with what metering reads).
pub fn created_index(target: &[u8]) -> &[u8] {
    let path = target.strip_prefix(b"/").unwrap_or(target);
    let end = path
        .iter()
        .position(|&b| b == b'/' || b == b'?')
        .unwrap_or(path.len());
    &path[..end]
}

#[cfg(test)]
mod tests;
