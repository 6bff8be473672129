//! The control plane: the only writer of registry snapshots.
//!
//! Owns: the durable store ([`store`]: one small trait; [`schema`]: the tables, described
//! once for both back ends; [`sqlite`]: SQLite in WAL mode, the default; [`pg`]:
//! PostgreSQL, the store a fleet of nodes shares; [`lastknown`]: a fleet node's copy of the
//! catalog in its data directory), the writer that applies, commits, then publishes every
//! change ([`plane`]) on its own [`clock`], the file's plans and clusters as a declarative
//! seed ([`seed`]), the admin API on its own listener with bearer-token auth, served on the
//! project's own sans-IO HTTP codec ([`api`]), the admin token ([`token`]); and billing:
//! the overage ladder's steps ([`overage`]), their notices' delivery ([`webhook`]), usage
//! history ([`usage`]) and invoices ([`billing`]).
//!
//! Must not touch: the edge's request path (it reads snapshots the plane publishes), the
//! engine. `edge::start` opens the plane and starts the admin listener.

pub mod api;
pub mod bell;
pub mod billing;
pub mod boot;
pub mod clock;
pub mod follow;
pub mod lastknown;
pub mod lease;
pub mod overage;
pub mod pg;
mod pg_billing;
pub mod plane;
pub mod schema;
pub mod seed;
pub mod sqlite;
mod sqlite_billing;
pub mod store;
pub mod token;
pub mod usage;
pub mod webhook;

pub use plane::{Change, ControlError, Outcome, Plane};
