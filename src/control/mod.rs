//! The control plane: the only writer of registry snapshots.
//!
//! Owns: the durable store ([`store`]: one small trait; [`sqlite`]: SQLite in WAL mode with
//! the migrations of `migrations/`), the writer that applies, commits, then publishes every
//! change ([`plane`]), the file's plans and clusters as a declarative seed ([`seed`]), the
//! admin API on its own listener with bearer-token auth, served on the project's own
//! sans-IO HTTP codec ([`api`]), and the admin token ([`token`]).
//!
//! Must not touch: the edge's request path (it reads snapshots the plane publishes), the
//! engine. `edge::start` opens the plane and starts the admin listener.

pub mod api;
pub mod boot;
pub mod plane;
pub mod seed;
pub mod sqlite;
pub mod store;
pub mod token;

pub use plane::{Change, ControlError, Outcome, Plane};
