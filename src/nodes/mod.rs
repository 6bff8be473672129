//! Upstream nodes: their health (active checks and passive reports from real requests), and
//! which node of a cluster's list a request goes to (power of two choices among the usable
//! ones, a retry elsewhere within a budget). The edge's workers, the control plane's calls
//! to upstreams and the metrics all read the one [`NodeBook`].
//!
//! `health` and `choose` decide (pure, table-tested); `book` holds the shared state;
//! `checker` does the checks' I/O. Must not touch: requests, tenants, the registry's
//! contents (only the addresses in use are read).

pub mod book;
pub mod checker;
pub mod choose;
pub mod health;
pub mod resolve;

pub use book::{InFlight, Node, NodeBook, NodeView, RetryReason};
pub use choose::{choose, Candidate, RetryBudget};
pub use health::{may_eject, Change, Check, HealthSettings, NodeHealth, Passive};
pub use resolve::Resolver;
