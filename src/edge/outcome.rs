//! What a request ended with, and why a stage of its exchange failed: the small types the
//! pipeline's stages hand back to each other (`session` <- `exchange` <- `send`/`relay`).
//!
//! A leaf: imports nothing of the edge, so every stage can use it without a circle.
//! Must not touch: I/O, policy.

use crate::errors::EdgeError;
use crate::nodes::RetryReason;

/// What happens to the client connection after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Read the next request.
    KeepAlive,
    /// Close at once (the client is gone, or a response was cut).
    Close,
    /// Close politely: shut down writing, drain what the client still sends.
    Linger,
}

/// The result of one request, for the access log, the metrics and the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Outcome {
    pub status: u16,
    /// Body bytes received from the client (the head is counted by `session`).
    pub bytes_in: u64,
    /// Bytes written to the client, head included.
    pub bytes_out: u64,
    /// How long it waited for an allowance slot (µs; `None`: it never queued).
    pub queue_us: Option<u64>,
    /// How long it held its allowance slot (µs; `None`: it never got one).
    pub upstream_us: Option<u64>,
    pub next: Next,
}

impl Outcome {
    /// The client went away: nothing was sent, the connection closes (logged as 499).
    pub fn gone() -> Outcome {
        Outcome {
            status: 499,
            bytes_in: 0,
            bytes_out: 0,
            queue_us: None,
            upstream_us: None,
            next: Next::Close,
        }
    }
}

/// Why sending the request upstream (or reading the client's body for it) failed.
#[derive(Debug)]
pub(super) enum SendFail {
    /// The upstream connection failed.
    Upstream,
    /// The client went away mid-body.
    Client,
    /// Answer this error (400 bad chunk, 408, 413, 503, 504, a shard capacity 400).
    Refuse(EdgeError),
}

impl From<EdgeError> for SendFail {
    fn from(e: EdgeError) -> Self {
        SendFail::Refuse(e)
    }
}

/// Why the upstream's response head could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HeadFail {
    /// The upstream closed or failed before sending any byte (a reused connection that
    /// did so may be retried).
    NoBytes,
    /// Malformed or cut: 502.
    Bad(&'static str),
    /// The request's deadline passed: 504.
    Deadline,
    /// The client went away meanwhile: nobody to answer (the upstream connection is
    /// dropped, which ends the upstream's work).
    ClientGone,
    /// The node's health checks took it down while this waited for its answer.
    NodeDown,
}

impl HeadFail {
    /// What the client gets; `deadline_secs` is the edge's request deadline.
    pub fn answer(self, deadline_secs: u64) -> SendFail {
        SendFail::Refuse(match self {
            HeadFail::NoBytes => {
                EdgeError::BadGateway("the search engine closed the connection without answering")
            }
            HeadFail::Bad(why) => EdgeError::BadGateway(why),
            HeadFail::Deadline => EdgeError::GatewayTimeout(deadline_secs),
            HeadFail::NodeDown => Unanswered::NodeDown.error(),
            HeadFail::ClientGone => return SendFail::Client,
        })
    }
}

/// The response head is out; a failure now can only cut the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cut {
    Upstream,
    Client,
}

/// What one try of an exchange came to: an answer (relayed, or an error answered), or a
/// retry (nothing answered yet) and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tried {
    Done(Outcome),
    Retry(Retry),
}

/// How a try failed before any byte of the response came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unanswered {
    /// No connection could be made: nothing was sent.
    NotConnected,
    /// Writing the request failed: the upstream never had all of it, so it cannot have
    /// carried it out.
    NotSent,
    /// The whole request was written and the connection closed without an answer: the
    /// upstream may have carried it out before closing.
    NoAnswer,
    /// The whole request was written, and the node's health checks took it down before
    /// it answered (a node that accepts and never answers): given up on, and the
    /// connection closed. The node may have carried it out.
    NodeDown,
}

impl Unanswered {
    /// Why the retry is made (metrics).
    pub fn reason(self) -> RetryReason {
        match self {
            Unanswered::NotConnected => RetryReason::Connect,
            Unanswered::NotSent => RetryReason::NotSent,
            Unanswered::NoAnswer => RetryReason::NoAnswer,
            Unanswered::NodeDown => RetryReason::NodeDown,
        }
    }

    /// The answer when the retry cannot be made (no other node, or no budget left).
    pub fn error(self) -> EdgeError {
        match self {
            Unanswered::NotConnected => {
                EdgeError::ServiceUnavailable("the cluster's search engine cannot be reached")
            }
            Unanswered::NotSent | Unanswered::NoAnswer => {
                EdgeError::BadGateway("the search engine closed the connection without answering")
            }
            Unanswered::NodeDown => {
                EdgeError::BadGateway("the search engine node stopped answering before it answered")
            }
        }
    }
}

/// Where a retry goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Where {
    /// A fresh connection to the same node: a pooled connection the node had closed while
    /// idle (a keep-alive race, not the node's fault).
    SameNode,
    /// Another node of the cluster, if there is one and the retry budget allows.
    OtherNode,
}

/// A retry that was allowed: where it goes, and how the try failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Retry {
    pub to: Where,
    pub failed: Unanswered,
}

/// The facts a retry is decided on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RetryFacts {
    /// A failure of this try may still be tried again: the first try, or the fresh
    /// connection that replaced a pooled one the node had closed while idle (never a try
    /// on another node: at most one per request).
    pub first: bool,
    /// The connection came from the pool (a fresh one that fails is the upstream's fault,
    /// not a stale keep-alive connection's).
    pub reused: bool,
    /// The whole body is still in the client buffer, so it can be sent again.
    pub replayable: bool,
    /// The request changes no data (policy's `Class::Read`).
    pub read: bool,
}

/// Whether, and where, a try that failed this way is made again. Never a write twice: a
/// request that may have reached the upstream is retried only when it is a read (nginx's
/// `proxy_next_upstream` without `non_idempotent`, for the same reason). A connection that
/// could not be made carried nothing: any request goes to another node. A request that
/// failed on a fresh connection while being written is not retried (the node may have
/// started on it). A read given up on because its node went down goes to another node,
/// whatever connection it had.
pub(super) fn retry_allowed(failed: Unanswered, f: RetryFacts) -> Option<Where> {
    if !f.first {
        return None;
    }
    let to = if f.reused {
        Where::SameNode
    } else {
        Where::OtherNode
    };
    let allowed = match failed {
        Unanswered::NotConnected => return Some(Where::OtherNode),
        Unanswered::NotSent => f.reused && f.replayable,
        Unanswered::NoAnswer => f.replayable && f.read,
        Unanswered::NodeDown => return (f.replayable && f.read).then_some(Where::OtherNode),
    };
    allowed.then_some(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_that_may_have_arrived_is_never_sent_twice() {
        let facts = |first, reused, replayable, read| RetryFacts {
            first,
            reused,
            replayable,
            read,
        };
        use Unanswered::*;
        use Where::*;
        let table = [
            // failed, (first, reused, replayable, read) -> retry where
            (NotSent, facts(true, true, true, false), Some(SameNode)),
            (NotSent, facts(true, true, true, true), Some(SameNode)),
            (NoAnswer, facts(true, true, true, true), Some(SameNode)),
            (NoAnswer, facts(true, true, true, false), None),
            (NotSent, facts(false, true, true, true), None),
            (NoAnswer, facts(true, false, true, true), Some(OtherNode)),
            (NoAnswer, facts(true, false, true, false), None),
            (NoAnswer, facts(true, false, false, true), None),
            (NotSent, facts(true, false, true, true), None),
            (NotSent, facts(true, true, false, true), None),
            (
                NotConnected,
                facts(true, false, false, false),
                Some(OtherNode),
            ),
            (NotConnected, facts(false, false, true, true), None),
            (NodeDown, facts(true, true, true, true), Some(OtherNode)),
            (NodeDown, facts(true, false, true, true), Some(OtherNode)),
            (NodeDown, facts(true, false, true, false), None),
            (NodeDown, facts(true, true, true, false), None),
            (NodeDown, facts(true, false, false, true), None),
            (NodeDown, facts(false, false, true, true), None),
        ];
        for (failed, f, want) in table {
            assert_eq!(retry_allowed(failed, f), want, "{failed:?} {f:?}");
        }
    }
}
