//! The one reading of the values a client sends in parameters and settings, shared by the
//! edge and the embedded engine so that the two can never read a value differently: time
//! values ([`parse_time`]), byte sizes ([`parse_bytes`]), booleans ([`parse_bool`]),
//! integers ([`parse_int`], [`parse_window`]) and comma lists ([`split_commas`]), each as
//! Elasticsearch 7.10 reads it (the grammar is worked out from Elasticsearch's source and
//! written down in each module's header; the query string itself is split and decoded by
//! `percent`), with a canonical form to forward (`Display`) and Elasticsearch's
//! error for what it refuses ([`ParamError`], naming the parameter).
//!
//! Every number read here is checked: conversions saturate or are refused, never wrap or
//! panic. A caller turning a value into an `Instant` uses checked arithmetic too.
//!
//! Must not touch: sockets, clocks, tenants, what a parameter means to an endpoint (the
//! edge's and the engine's parameter tables decide which reader a parameter takes).

mod bytes;
pub mod java;
mod list;
mod scalar;
pub mod table;
#[cfg(test)]
mod tests;
mod time;

pub use bytes::{parse_bytes, ByteSize, ByteUnit};
pub use list::{join_commas, split_commas};
pub use scalar::{negative, parse_bool, parse_int, parse_long, parse_window};
pub use time::{
    check_keep_alive, parse_time, TimeUnit, TimeValue, DEFAULT_KEEP_ALIVE, MAX_KEEP_ALIVE,
};

/// A value Elasticsearch would refuse: its error type and reason (always a 400; rendered
/// by `errors`, `ParamError::body`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    /// Elasticsearch's error type (`illegal_argument_exception`, `parse_exception`,
    /// `number_format_exception`).
    pub kind: &'static str,
    pub reason: String,
    /// `caused_by`, when Elasticsearch wraps a cause.
    pub cause: Option<(&'static str, String)>,
    /// Refused by a search's shards (a keep-alive past the maximum): rendered as the
    /// `search_phase_execution_exception` "all shards failed" Elasticsearch answers with.
    pub search_phase: bool,
}

impl ParamError {
    pub fn new(kind: &'static str, reason: impl Into<String>) -> ParamError {
        ParamError {
            kind,
            reason: reason.into(),
            cause: None,
            search_phase: false,
        }
    }

    /// `illegal_argument_exception`.
    pub fn illegal(reason: impl Into<String>) -> ParamError {
        ParamError::new("illegal_argument_exception", reason)
    }

    /// `parse_exception` (`ElasticsearchParseException`).
    pub fn parse(reason: impl Into<String>) -> ParamError {
        ParamError::new("parse_exception", reason)
    }

    /// An `illegal_argument_exception` raised by the shards of a search.
    pub fn search_phase(reason: impl Into<String>) -> ParamError {
        ParamError {
            search_phase: true,
            ..ParamError::illegal(reason)
        }
    }

    pub fn caused_by(mut self, kind: &'static str, reason: impl Into<String>) -> ParamError {
        self.cause = Some((kind, reason.into()));
        self
    }
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.reason)
    }
}

impl std::error::Error for ParamError {}
