//! Pure decisions of the edge (no I/O): route, auth, classify, mode, admit, shard capacity.
//! The clock, when needed, is passed in.

pub mod blocked;
pub mod classify;
pub mod mode;
pub mod path;
pub mod shards;
