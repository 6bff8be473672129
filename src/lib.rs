//! searchgate: the edge for hosted search clusters.
//!
//! # The workspace
//! ```text
//! crates/core    searchgate-core: sans-IO HTTP/1.1 (`proto`) and the one renderer of
//!                Elasticsearch-shaped errors (`errors`); depends on no sibling
//! crates/engine  searchgate-engine: the embedded Elasticsearch-compatible engine on tantivy;
//!                depends on searchgate-core only
//! .              searchgate (this library): the edge, control plane and tools; depends on
//!                searchgate-core, never on the engine (it reaches upstreams over HTTP)
//! crates/cli     the `searchgate` binary (subcommands -> library calls) and the integration
//!                tests (tests/it); the only crate that sees both the edge and the engine
//! ```
//!
//! # Layout of this library
//! ```text
//! config/    TOML file format -> validated `Config`; secrets masked in Debug
//! registry/  plans and clusters as pure data (`apply`, `diff`), runtime state beside it,
//!            the edge's immutable `Snapshot`, swapped atomically
//! control/   the control plane: durable store (SQLite), the one writer of snapshots, the
//!            file's seed, the admin API on its own listener
//! policy/    pure decisions: route, auth, classify, mode, admit, and `decide` (all of them for
//!            one request -> `Decision`); the clock is passed in
//! request/   the request vocabulary below policy and tenancy: canonical paths, the endpoint
//!            table, blocked endpoints, classification (read / update / not exposed)
//! tenancy/   index-name namespacing for the multitenant class (requests in, responses out)
//! metrics/   per-core recording, the hub (counters, buckets, latency window), renderers
//! edge/      thread-per-core runtime, listeners, TLS, the request pipeline (session ->
//!            exchange -> send / relay), upstream pools (all edge I/O); docs/request-path.md
//! fleet/     one allowance per cluster across a fleet: live nodes, rendezvous homes, the
//!            peer protocol and the home's peer listener (the requester's side is edge/peer)
//! tools/     operator tools, clients of public APIs (bulk loader, admin CLI, planner, latency)
//! proto, errors  re-exported from searchgate-core
//! ```
//!
//! # Dependency rules
//! - `proto`, `errors` (the core crate), `registry`, `policy` and `tenancy` do no I/O and
//!   know nothing of sockets, monoio or tantivy.
//! - `edge` uses them. The engine is not a dependency of this crate at all: the compiler
//!   refuses any import of it, so real Elasticsearch/OpenSearch nodes can replace it.
//! - `tools` never imports `edge`, `control`, `registry` or `policy`.
//! - `control` never imports `edge`; `edge::start` opens it. `fleet` never imports `edge`,
//!   and `control` never imports `fleet`.
//! - `policy` imports nothing of `registry`: it sees clusters through `policy::view`'s
//!   traits, which the registry implements (the registry uses policy's allowance,
//!   credential comparison and modes).
//! - No module imports another in a cycle, at any level. `tests/it/layout.rs` checks these
//!   rules on the source.
#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_debug_implementations)]

pub mod calendar;
pub mod config;
pub mod control;
pub mod edge;
pub mod fleet;
pub mod metrics;
pub mod nodes;
pub mod outbound;
pub mod policy;
pub mod registry;
pub mod request;
pub mod tenancy;
pub mod tools;

/// The sans-IO core crate's modules, under the names the edge has always used.
pub use searchgate_core::{cidr, errors, ndjson, params, percent, proto, proxy_v2};
