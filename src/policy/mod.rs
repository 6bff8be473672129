//! Pure decisions about a request: route (host -> cluster), authenticate (constant-time
//! Basic credentials), mode, admit (allowance),
//! shard capacity; and `decide`, which takes them in order for one request and returns
//! what the edge must do with it. Also the control plane's pure rules: the overage
//! `ladder` (what a metering reading does to a cluster over its plan) and `pricing`
//! (prorated invoice lines).
//!
//! Sees the registry only through `view`'s traits (the registry implements them), so the
//! registry may use policy's building blocks without an import circle.
//!
//! The classification of a request (read / update / not exposed) and the endpoint table
//! are the shared request vocabulary, `crate::request`, below this module and `tenancy`.
//!
//! Must not touch: sockets, monoio, the wall clock (callers pass time in), tantivy.

pub mod admit;
pub mod auth;
pub mod bulk;
pub mod cors;
pub mod decide;
pub mod engine_room;
pub mod keys;
pub mod ladder;
pub mod mode;
pub mod pricing;
pub mod route;
pub mod shards;
pub mod view;
