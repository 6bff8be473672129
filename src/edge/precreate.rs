//! Whitelisted indices the edge creates before a write needs them (spec 1.5, 2.2): an
//! extra upstream request, `PUT /<index>`, ahead of the request that writes to it. On the
//! multitenant class the upstream's own whitelist cannot match prefixed names, so the edge
//! must; on both classes this is where the plan's shard capacity is checked for them
//! (with the upstream's default shards). `resource_already_exists_exception` counts as
//! success (so does an alias of that name, which the upstream refuses to shadow with an
//! index: the write then goes through the alias), and a core remembers for a short while the indices it found, so a stream of
//! writes makes one extra request, not one each.
//!
//! The extra request reads its answer through `UpstreamConn::read_head`, the same as the
//! main request (interim `100 Continue` heads skipped there, once for both).
//!
//! Must not touch: the client, the main request's upstream connection, the rules of the
//! whitelist (`tenancy`).

use std::net::SocketAddr;
use std::time::Instant;

use super::core::Core;
use super::outcome::SendFail;
use super::peer::RemotePermit;
use super::tcp::write_tcp;
use super::timer::Timer;
use crate::errors::EdgeError;
use crate::fleet::places::Held;
use crate::fleet::wire::Verdict;
use crate::policy::shards::{IndexShards, ShardDefaults};
use crate::proto::{BodyCursor, Method, ResponseHead, Step};
use crate::registry::{Cluster, IndexRefused};
use crate::request::path::encode_segment;
use crate::tenancy::{self, Prefix};

/// Largest upstream answer to an index creation the edge reads.
const SMALL_ANSWER: u64 = 64 * 1024;

/// Where the shards of an index the edge creates are counted.
pub(super) enum Ledger<'a> {
    /// In this node's ledger of the cluster.
    Here,
    /// At the cluster's home (issue 27), through the permit the request holds from it.
    Home(&'a mut RemotePermit, &'a mut Timer),
}

/// Makes sure the whitelisted index `name` (as the client named it) exists upstream,
/// creating it when this core has not seen it recently; `prefix`: the tenant's namespace;
/// its shards counted in `ledger`.
pub(super) async fn ensure_index(
    core: &Core,
    cluster: &Cluster,
    prefix: Option<&Prefix>,
    name: &[u8],
    deadline: Instant,
    mut ledger: Ledger<'_>,
) -> Result<(), SendFail> {
    let mut path = Vec::with_capacity(64);
    match prefix {
        Some(p) => tenancy::write_index_path(p, name, &mut path)?,
        None => {
            path.push(b'/');
            encode_segment(name, &mut path);
        }
    }
    if core.index_known(&path, Instant::now()) {
        return Ok(());
    }
    let d = ShardDefaults::ES7;
    let asked = IndexShards {
        primaries: d.primaries,
        replicas: d.replicas,
    };
    let plan = &cluster.plan;
    let refused = |in_use| index_refused(cluster, asked, IndexRefused::Capacity(in_use));
    let reserved = match &mut ledger {
        Ledger::Here => Some(
            cluster
                .state
                .reserve_index(asked, plan.shards)
                .map_err(|e| index_refused(cluster, asked, e))?,
        ),
        Ledger::Home(permit, timer) => {
            let until = deadline.min(Instant::now() + core.shared.limits.connect_timeout);
            match permit.tell(timer, &Held::ReserveIndex(asked), until).await {
                Some(Verdict::Granted) => None,
                Some(Verdict::ShardCapacity { in_use }) => {
                    return Err(refused(u64::from(in_use)).into())
                }
                _ => {
                    let e = EdgeError::ServiceUnavailable(
                        "the cluster's home node cannot admit requests now",
                    );
                    return Err(e.into());
                }
            }
        }
    };
    let mut req = Vec::with_capacity(128);
    req.extend_from_slice(b"PUT ");
    req.extend_from_slice(&path);
    req.extend_from_slice(b" HTTP/1.1\r\nHost: searchgate\r\nContent-Length: 0\r\n\r\n");
    let Some(addr) = core.choose_node(&cluster.upstreams, None) else {
        return Err(
            EdgeError::ServiceUnavailable("the cluster's search engine cannot be reached").into(),
        );
    };
    let answer = fetch(core, addr, req, Method::Put, deadline).await;
    let created = matches!(answer, Ok((200..=299, _)));
    match (reserved, ledger) {
        (Some(r), _) => r.finish(&path[1..], created),
        (None, Ledger::Home(permit, timer)) => {
            let until = Instant::now() + core.shared.limits.connect_timeout;
            let done = Held::Finished {
                name: path[1..].to_vec(),
                created,
            };
            permit.tell(timer, &done, until).await;
        }
        (None, Ledger::Here) => {}
    }
    let exists = match &answer {
        Ok((200..=299, _)) => true,
        // An alias of that name: the write goes through it (to its write index, or is
        // refused as Elasticsearch refuses it), nothing is created beside it.
        Ok((_, body)) => [
            "resource_already_exists_exception",
            "already exists as alias",
        ]
        .iter()
        .any(|m| memchr::memmem::find(body, m.as_bytes()).is_some()),
        Err(_) => false,
    };
    if exists {
        core.remember_index(path, Instant::now());
    }
    answer.map(|_| ())
}

/// Sends one bodiless request of the edge's own and reads the whole answer (status, body).
pub(super) async fn fetch(
    core: &Core,
    addr: SocketAddr,
    req: Vec<u8>,
    method: Method,
    deadline: Instant,
) -> Result<(u16, Vec<u8>), SendFail> {
    let timeout = core.shared.limits.connect_timeout;
    let mut up = core
        .pool
        .checkout(addr, false, timeout, || core.take_upstream_buffer())
        .await
        .map_err(|_| {
            EdgeError::ServiceUnavailable("the cluster's search engine cannot be reached")
        })?;
    let len = req.len();
    let mut timer = Timer::new();
    match timer
        .run(deadline, write_tcp(&mut up.tcp, req, 0..len))
        .await
    {
        Some((Ok(()), _)) => {}
        _ => return Err(SendFail::Upstream),
    }
    let mut head = ResponseHead::default();
    up.read_head(&mut head, method, &mut timer, deadline, &|| false)
        .await
        .map_err(|_| SendFail::Upstream)?;
    let mut cur =
        BodyCursor::new(head.framing, SMALL_ANSWER, head.len).map_err(|_| SendFail::Upstream)?;
    let mut body = Vec::new();
    loop {
        match cur.step(&up.buf).map_err(|_| SendFail::Upstream)? {
            Step::Piece(r) => body.extend_from_slice(&up.buf[r]),
            Step::Done => break,
            Step::NeedMore => {
                up.buf.drain(..cur.pos());
                cur.dropped(cur.pos());
                match up.read_more(&mut timer, deadline).await {
                    Ok(n) if n > 0 => {}
                    _ if cur.complete_at_eof() => break,
                    _ => return Err(SendFail::Upstream),
                }
            }
        }
    }
    up.buf.drain(..cur.pos());
    if head.keep_alive && up.buf.is_empty() {
        core.pool.put(up, Instant::now());
    }
    Ok((head.status, body))
}

/// Why a cluster refuses work that counts in its ledgers while it moves to this node
/// (`registry::settling`).
pub(super) const MOVING: &str =
    "the cluster is moving to this edge node and its shards and open contexts are being counted";

/// The error of an index creation whose shards were not reserved.
pub(super) fn index_refused(cluster: &Cluster, asked: IndexShards, e: IndexRefused) -> EdgeError {
    match e {
        IndexRefused::Capacity(in_use) => EdgeError::ShardCapacity {
            plan: cluster.plan.name.clone(),
            capacity: cluster.plan.shards,
            in_use,
            asked: asked.total(),
        },
        IndexRefused::Moving => EdgeError::ServiceUnavailable(MOVING),
    }
}
