//! Pure decisions about a request: route (host -> cluster), authenticate (constant-time
//! Basic credentials), classify (read / update / not exposed), mode, admit (allowance),
//! shard capacity.
//!
//! Must not touch: sockets, monoio, the wall clock (callers pass time in), tantivy.

pub mod admit;
pub mod auth;
pub mod blocked;
pub mod bulk;
pub mod classify;
pub mod endpoints;
pub mod mode;
pub mod path;
pub mod route;
pub mod shards;
