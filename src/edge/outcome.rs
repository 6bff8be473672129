//! What a request ended with, and why a stage of its exchange failed: the small types the
//! pipeline's stages hand back to each other (`session` <- `exchange` <- `send`/`relay`).
//!
//! A leaf: imports nothing of the edge, so every stage can use it without a circle.
//! Must not touch: I/O, policy.

use crate::errors::EdgeError;

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
}

impl HeadFail {
    /// The answer to the client; `deadline_secs` is the edge's request deadline.
    pub fn error(self, deadline_secs: u64) -> EdgeError {
        match self {
            HeadFail::NoBytes => {
                EdgeError::BadGateway("the search engine closed the connection without answering")
            }
            HeadFail::Bad(why) => EdgeError::BadGateway(why),
            HeadFail::Deadline => EdgeError::GatewayTimeout(deadline_secs),
        }
    }
}

/// The response head is out; a failure now can only cut the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cut {
    Upstream,
    Client,
}

/// What one try of an exchange came to: an answer (relayed, or an error answered), or a
/// retry on a fresh connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tried {
    Done(Outcome),
    Retry,
}

/// How a try on a pooled connection failed before any byte of the response came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unanswered {
    /// Writing the request failed: the upstream never had all of it, so it cannot have
    /// carried it out.
    NotSent,
    /// The whole request was written and the connection closed without an answer: the
    /// upstream may have carried it out before closing.
    NoAnswer,
}

/// The facts a retry is decided on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RetryFacts {
    /// This was the first try (there is at most one retry).
    pub first: bool,
    /// The connection came from the pool (a fresh one that fails is the upstream's fault,
    /// not a stale keep-alive connection's).
    pub reused: bool,
    /// The whole body is still in the client buffer, so it can be sent again.
    pub replayable: bool,
    /// The request changes no data (policy's `Class::Read`).
    pub read: bool,
}

/// Whether a try that failed this way goes to a fresh connection. Never a write twice: a
/// request that may have reached the upstream is retried only when it is a read (nginx's
/// `proxy_next_upstream` without `non_idempotent`, for the same reason).
pub(super) fn retry_allowed(failed: Unanswered, f: RetryFacts) -> bool {
    let stale_pooled = f.first && f.reused && f.replayable;
    match failed {
        Unanswered::NotSent => stale_pooled,
        Unanswered::NoAnswer => stale_pooled && f.read,
    }
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
        let table = [
            // failed, first, reused, replayable, read -> retry
            (NotSent, facts(true, true, true, false), true),
            (NotSent, facts(true, true, true, true), true),
            (NoAnswer, facts(true, true, true, true), true),
            (NoAnswer, facts(true, true, true, false), false),
            (NotSent, facts(false, true, true, true), false),
            (NoAnswer, facts(true, false, true, true), false),
            (NotSent, facts(true, true, false, true), false),
        ];
        for (failed, f, want) in table {
            assert_eq!(retry_allowed(failed, f), want, "{failed:?} {f:?}");
        }
    }
}
