//! searchgate: the edge for hosted search clusters.
//!
//! # Layout
//! ```text
//! config/    TOML file format -> validated `Config`; secrets masked in Debug
//! registry/  plans and clusters as pure data (`apply`, `diff`), runtime state beside it,
//!            the edge's immutable `Snapshot`, swapped atomically
//! control/   the control plane: durable store (SQLite), the one writer of snapshots, the
//!            file's seed, the admin API on its own listener
//! proto/     sans-IO HTTP/1.1: heads (httparse), body framing (length, chunked), limits, writers
//! policy/    pure decisions: route, auth, classify, mode, admit, and `decide` (all of them for
//!            one request -> `Decision`); the clock is passed in
//! tenancy/   index-name namespacing for the multitenant class (requests in, responses out)
//! errors     the one place that renders Elasticsearch-shaped error JSON for the edge
//! metrics/   per-core recording, the hub (counters, buckets, latency window), renderers
//! edge/      thread-per-core runtime, listeners, TLS, the request pipeline (session ->
//!            exchange -> send / relay), upstream pools (all edge I/O); docs/request-path.md
//! engine/    embedded Elasticsearch-compatible server on tantivy (reached over HTTP only)
//! tools/     operator tools, clients of public APIs (bulk loader, admin CLI, planner, latency)
//! ```
//!
//! # Dependency rules
//! - `proto`, `registry`, `policy`, `tenancy` and `errors` do no I/O and know nothing of
//!   sockets, monoio or tantivy.
//! - `edge` uses them; `edge` never imports `engine` (it reaches every upstream over HTTP,
//!   so real Elasticsearch/OpenSearch nodes can replace the embedded engine).
//! - `engine` and `tools` never import `edge`, `control`, `registry` or `policy`.
//! - `control` never imports `edge` or `engine`; `edge::start` opens it.
//! - `policy` imports nothing of `registry`: it sees clusters through `policy::view`'s
//!   traits, which the registry implements (the registry uses policy's allowance,
//!   credential comparison and modes). The modules of `edge` import each other without a
//!   cycle. Both are checked by `tests/layout.rs`.
#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_debug_implementations)]

pub mod config;
pub mod control;
pub mod edge;
pub mod engine;
pub mod errors;
pub mod metrics;
pub mod policy;
pub mod proto;
pub mod registry;
pub mod tenancy;
pub mod tools;
