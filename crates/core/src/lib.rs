//! searchgate's sans-IO core, shared by the edge (the `searchgate` crate) and the embedded
//! engine (`searchgate-engine`).
//!
//! Owns the HTTP/1.1 codec (`proto`: heads on httparse, body framing with limits, writers)
//! and the one renderer of Elasticsearch-shaped error bodies (`errors`), with the one
//! mapping from protocol errors to answers, and the one percent-decoder and encoder
//! (`percent`); the one blocking head-reading loop of the thread-per-connection servers
//! (`blocking`, generic over `std::io::Read`); and the one reading of parameter values
//! (`params`: time values, byte sizes, booleans, integers, comma lists, query strings);
//! address ranges for allowlists (`cidr`); the one framing of NDJSON bodies (`ndjson`:
//! `_bulk` and `_msearch` lines, the `_bulk` action count); and the PROXY protocol v2
//! header a trusted load balancer puts before a connection's bytes (`proxy_v2`).
//!
//! Must not touch: sockets, threads, files, clocks, tenants, clusters or any engine
//! internals. It depends on none of its sibling crates, so the compiler keeps it a leaf.
#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_debug_implementations)]

pub mod blocking;
pub mod cidr;
pub mod errors;
pub mod ndjson;
pub mod params;
pub mod percent;
pub mod proto;
pub mod proxy_v2;
