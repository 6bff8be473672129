//! The peer messages after the handshake, sans I/O: encoders and parsers of a permit's
//! acquire and release, the verdicts, what a held permit's request did with its places, the
//! handover's counts and the outstanding permits' reports (integers big-endian, every length
//! checked before it is used).
//!
//! Must not touch: the handshake (`handshake`), sockets, clocks, the registry.

use crate::policy::shards::IndexShards;

use super::WireError;

/// Length of a verdict.
pub const VERDICT: usize = 9;

/// A release.
pub const RELEASE: u8 = b'R';

const ACQUIRE: u8 = b'A';

const HANDOVER: u8 = b'H';

const OUTSTANDING: u8 = b'P';

const REPORT: u8 = b'Q';

/// The longest outstanding question a node reads.
pub const MAX_OUTSTANDING: usize = 32 << 20;

/// Length of a counts message.
pub const COUNTS: usize = 13;

/// A request for a permit of cluster `id`'s allowance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acquire {
    pub cluster: String,
    /// The read lane (searches' allowance when the plan splits them).
    pub read: bool,
    /// What is left of the request's deadline when it was sent (time already spent
    /// counts), in ms.
    pub budget_ms: u32,
    /// The shards of an index the request creates, reserved against the plan's capacity
    /// before it queues (as on one node).
    pub index: Option<IndexShards>,
    /// Nonzero for a scroll or point-in-time open (the shard contexts it weighs on the
    /// requester): the home reserves the open's weight by its own ledger against the
    /// cluster's share of open contexts before it queues. 0: not an open.
    pub contexts: u32,
}

/// Length of an acquire before its id.
const ACQUIRE_HEAD: usize = 19;

/// Primaries that say "no index".
const NO_INDEX: u32 = u32::MAX;

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

impl Acquire {
    pub fn encode(&self, out: &mut Vec<u8>) {
        let id = &self.cluster.as_bytes()[..self.cluster.len().min(255)];
        out.push(ACQUIRE);
        out.push(u8::from(self.read));
        out.extend_from_slice(&self.budget_ms.to_be_bytes());
        let sat = |n: u64| u32::try_from(n).unwrap_or(NO_INDEX - 1);
        let (p, r) = self
            .index
            .map_or((NO_INDEX, 0), |i| (sat(i.primaries), sat(i.replicas)));
        out.extend_from_slice(&p.to_be_bytes());
        out.extend_from_slice(&r.to_be_bytes());
        out.extend_from_slice(&self.contexts.to_be_bytes());
        out.push(id.len() as u8);
        out.extend_from_slice(id);
    }

    /// Reads an acquire from `buf`: `Ok(None)` while incomplete; the bytes used.
    pub fn parse(buf: &[u8]) -> Result<Option<(Acquire, usize)>, WireError> {
        match buf.first() {
            None => return Ok(None),
            Some(&ACQUIRE) => {}
            Some(_) => return Err(WireError::Malformed),
        }
        if buf.len() < ACQUIRE_HEAD {
            return Ok(None);
        }
        let read = match buf[1] {
            0 => false,
            1 => true,
            _ => return Err(WireError::Malformed),
        };
        let budget_ms = be32(&buf[2..]);
        let index = match be32(&buf[6..]) {
            NO_INDEX => None,
            p => Some(IndexShards {
                primaries: u64::from(p),
                replicas: u64::from(be32(&buf[10..])),
            }),
        };
        let contexts = be32(&buf[14..]);
        let end = ACQUIRE_HEAD + usize::from(buf[ACQUIRE_HEAD - 1]);
        if buf.len() < end {
            return Ok(None);
        }
        let id = &buf[ACQUIRE_HEAD..end];
        let cluster = std::str::from_utf8(id).map_err(|_| WireError::Malformed)?;
        let a = Acquire {
            cluster: cluster.to_string(),
            read,
            budget_ms,
            index,
            contexts,
        };
        Ok(Some((a, end)))
    }
}

/// What a requester asks of a home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Acquire(Acquire),
    /// The sender is the cluster's new home (its peer listener at `peer`): stop admitting
    /// the cluster and count down what is in flight.
    Handover {
        cluster: String,
        peer: String,
    },
    /// The sender (its peer listener at `except`) took `clusters` over from a home that
    /// left the fleet: report the remote permits held here for them from other homes.
    Outstanding {
        except: String,
        clusters: Vec<String>,
    },
}

/// An outstanding question (see [`Request::Outstanding`]).
pub fn outstanding(except: &str, clusters: &[&str]) -> Vec<u8> {
    let except = &except.as_bytes()[..except.len().min(255)];
    let mut rest = vec![except.len() as u8];
    rest.extend_from_slice(except);
    rest.extend_from_slice(&(clusters.len() as u32).to_be_bytes());
    for c in clusters {
        let id = &c.as_bytes()[..c.len().min(255)];
        rest.push(id.len() as u8);
        rest.extend_from_slice(id);
    }
    let mut out = vec![OUTSTANDING];
    out.extend_from_slice(&(rest.len() as u32).to_be_bytes());
    out.extend_from_slice(&rest);
    out
}

fn parse_outstanding(buf: &[u8]) -> Result<Option<(Request, usize)>, WireError> {
    let Some(len) = buf.get(1..5).map(be32) else {
        return Ok(None);
    };
    let len = len as usize;
    if len > MAX_OUTSTANDING {
        return Err(WireError::Malformed);
    }
    let Some(rest) = buf.get(5..5 + len) else {
        return Ok(None);
    };
    let text = |b: &[u8]| {
        std::str::from_utf8(b)
            .map(str::to_string)
            .map_err(|_| WireError::Malformed)
    };
    let field = |at: usize| -> Result<(String, usize), WireError> {
        let n = usize::from(*rest.get(at).ok_or(WireError::Malformed)?);
        let b = rest.get(at + 1..at + 1 + n).ok_or(WireError::Malformed)?;
        Ok((text(b)?, at + 1 + n))
    };
    let (except, mut at) = field(0)?;
    let count = rest.get(at..at + 4).map(be32).ok_or(WireError::Malformed)?;
    at += 4;
    let mut clusters = Vec::with_capacity((count as usize).min(len));
    for _ in 0..count {
        let (id, next) = field(at)?;
        clusters.push(id);
        at = next;
    }
    if at != len {
        return Err(WireError::Malformed);
    }
    Ok(Some((Request::Outstanding { except, clusters }, 5 + len)))
}

/// The remote permits a node holds for the clusters of an outstanding question, by their
/// place in the question (clusters with none left out).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report(pub Vec<(u32, Counts)>);

impl Report {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![REPORT];
        out.extend_from_slice(&(self.0.len() as u32).to_be_bytes());
        for (i, c) in &self.0 {
            out.extend_from_slice(&i.to_be_bytes());
            out.extend_from_slice(&c.encode()[1..]);
        }
        out
    }

    /// The number of entries a report's 5-byte head announces.
    pub fn parse_head(head: &[u8; 5]) -> Result<usize, WireError> {
        match head[0] {
            REPORT => Ok(be32(&head[1..]) as usize),
            _ => Err(WireError::Malformed),
        }
    }

    /// The entries (16 bytes each) after the head.
    pub fn parse_entries(b: &[u8]) -> Result<Report, WireError> {
        if b.len() % 16 != 0 {
            return Err(WireError::Malformed);
        }
        let entries = b.chunks(16).map(|e| {
            let n = |i: usize| be32(&e[4 + 4 * i..]);
            (be32(e), Counts([n(0), n(1), n(2)]))
        });
        Ok(Report(entries.collect()))
    }
}

/// A handover request of `cluster` to the node whose peer listener is `peer`.
pub fn handover(cluster: &str, peer: &str) -> Vec<u8> {
    let id = &cluster.as_bytes()[..cluster.len().min(255)];
    let peer = &peer.as_bytes()[..peer.len().min(255)];
    let mut out = vec![HANDOVER, id.len() as u8];
    out.extend_from_slice(id);
    out.push(peer.len() as u8);
    out.extend_from_slice(peer);
    out
}

/// Reads a request from `buf`: `Ok(None)` while incomplete; the bytes used.
pub fn parse_request(buf: &[u8]) -> Result<Option<(Request, usize)>, WireError> {
    if buf.first() == Some(&ACQUIRE) {
        return Ok(Acquire::parse(buf)?.map(|(a, n)| (Request::Acquire(a), n)));
    }
    if buf.first() == Some(&OUTSTANDING) {
        return parse_outstanding(buf);
    }
    match buf.first() {
        None => return Ok(None),
        Some(&HANDOVER) => {}
        Some(_) => return Err(WireError::Malformed),
    }
    let text = |b: &[u8]| {
        std::str::from_utf8(b)
            .map(str::to_string)
            .map_err(|_| WireError::Malformed)
    };
    let Some(&len) = buf.get(1) else {
        return Ok(None);
    };
    let id_end = 2 + usize::from(len);
    let Some(&plen) = buf.get(id_end) else {
        return Ok(None);
    };
    let end = id_end + 1 + usize::from(plen);
    if buf.len() < end {
        return Ok(None);
    }
    let r = Request::Handover {
        cluster: text(&buf[2..id_end])?,
        peer: text(&buf[id_end + 1..end])?,
    };
    Ok(Some((r, end)))
}

/// An old home's requests in flight in each of a cluster's allowances (shared, search,
/// write).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts(pub [u32; 3]);

impl Counts {
    pub fn encode(self) -> [u8; COUNTS] {
        let mut out = [0u8; COUNTS];
        out[0] = b'C';
        for (i, n) in self.0.iter().enumerate() {
            out[1 + 4 * i..5 + 4 * i].copy_from_slice(&n.to_be_bytes());
        }
        out
    }

    pub fn parse(buf: &[u8; COUNTS]) -> Result<Counts, WireError> {
        if buf[0] != b'C' {
            return Err(WireError::Malformed);
        }
        let n = |i: usize| {
            u32::from_be_bytes([
                buf[1 + 4 * i],
                buf[2 + 4 * i],
                buf[3 + 4 * i],
                buf[4 + 4 * i],
            ])
        };
        Ok(Counts([n(0), n(1), n(2)]))
    }

    /// Nothing in flight any more.
    pub fn is_zero(self) -> bool {
        self.0 == [0; 3]
    }
}

/// The home's answer to an acquire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The permit is the requester's until it sends a release or the connection ends.
    Granted,
    /// The queue is full (429).
    Full { concurrency: u32, queue_size: u32 },
    /// Waited the plan's queue timeout (429).
    QueueTimeout { concurrency: u32, waited_ms: u32 },
    /// The request's deadline passed while it waited (504).
    Deadline,
    /// This node is not (or no longer, or not yet) the cluster's home, or does not know
    /// it (503: the requester tries again later).
    NotHome,
    /// The index's shards do not fit the plan's capacity: the shards in use (400).
    ShardCapacity { in_use: u32 },
    /// The open's shard contexts do not fit the cluster's share (429).
    Contexts { share: u32, used: u32 },
}

impl Verdict {
    pub fn encode(self) -> [u8; VERDICT] {
        let (tag, a, b) = match self {
            Verdict::Granted => (b'G', 0, 0),
            Verdict::Full {
                concurrency,
                queue_size,
            } => (b'F', concurrency, queue_size),
            Verdict::QueueTimeout {
                concurrency,
                waited_ms,
            } => (b'T', concurrency, waited_ms),
            Verdict::Deadline => (b'D', 0, 0),
            Verdict::NotHome => (b'N', 0, 0),
            Verdict::ShardCapacity { in_use } => (b'S', in_use, 0),
            Verdict::Contexts { share, used } => (b'X', share, used),
        };
        let mut out = [0u8; VERDICT];
        out[0] = tag;
        out[1..5].copy_from_slice(&a.to_be_bytes());
        out[5..9].copy_from_slice(&b.to_be_bytes());
        out
    }

    pub fn parse(buf: &[u8; VERDICT]) -> Result<Verdict, WireError> {
        let a = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]);
        let b = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]);
        Ok(match buf[0] {
            b'G' => Verdict::Granted,
            b'F' => Verdict::Full {
                concurrency: a,
                queue_size: b,
            },
            b'T' => Verdict::QueueTimeout {
                concurrency: a,
                waited_ms: b,
            },
            b'D' => Verdict::Deadline,
            b'N' => Verdict::NotHome,
            b'S' => Verdict::ShardCapacity { in_use: a },
            b'X' => Verdict::Contexts { share: a, used: b },
            _ => return Err(WireError::Malformed),
        })
    }
}
