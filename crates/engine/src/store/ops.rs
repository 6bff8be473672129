//! The vocabulary of shard writes: operations, concurrency conditions, outcomes.

use crate::error::EngineResult;
use crate::mapping::IndexedDoc;

/// Optimistic concurrency control of a write.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cond {
    pub if_seq_no: Option<i64>,
    pub if_primary_term: Option<u64>,
    /// External version (`version_type=external`, or `external_gte` when the flag is set).
    pub external: Option<(u64, bool)>,
    /// `require_alias`: the target must be an alias (bulk, index API).
    pub require_alias: bool,
}

/// What happened to a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocResult {
    Created,
    Updated,
    Deleted,
    NotFound,
    Noop,
}

impl DocResult {
    /// The `result` field.
    pub fn name(self) -> &'static str {
        match self {
            DocResult::Created => "created",
            DocResult::Updated => "updated",
            DocResult::Deleted => "deleted",
            DocResult::NotFound => "not_found",
            DocResult::Noop => "noop",
        }
    }
}

/// The outcome of one write.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    pub result: DocResult,
    pub version: u64,
    pub seq_no: i64,
}

/// What an update function decided.
#[derive(Debug)]
pub enum Update {
    Noop,
    Write {
        source: Vec<u8>,
        doc: IndexedDoc,
    },
    /// A script set `ctx.op = 'delete'`.
    Delete,
}

/// The update function: current source (None: missing) -> decision.
pub type Updater<'a> = dyn FnMut(Option<&[u8]>) -> EngineResult<Update> + 'a;

/// One write to a shard.
pub enum ShardOp<'a> {
    Index {
        id: &'a str,
        source: &'a [u8],
        doc: &'a IndexedDoc,
        create: bool,
        cond: Cond,
    },
    Delete {
        id: &'a str,
        cond: Cond,
    },
    Update {
        id: &'a str,
        cond: Cond,
        updater: &'a mut Updater<'a>,
    },
}

impl std::fmt::Debug for ShardOp<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShardOp::Index { id, create, .. } => write!(f, "Index({id}, create={create})"),
            ShardOp::Delete { id, .. } => write!(f, "Delete({id})"),
            ShardOp::Update { id, .. } => write!(f, "Update({id})"),
        }
    }
}

/// A stored document read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub version: u64,
    pub seq_no: i64,
    pub source: Vec<u8>,
    pub routing: Option<String>,
}
