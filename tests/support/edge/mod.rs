//! Shared helpers of the edge's end-to-end tests (`tests/edge_*.rs`): a mock upstream that
//! records what reaches it ([`mock`]), a guard that runs `searchgate serve` with a temp
//! config ([`server`]), and plain/TLS clients that read responses byte-exactly ([`client`]).
//!
//! Include with `#[path = "support/edge/mod.rs"] mod edge;`.
#![allow(dead_code)]

pub mod client;
pub mod mock;
pub mod server;

#[allow(unused_imports)]
pub use client::{basic, chunk_encode, Conn, Req, Response};
#[allow(unused_imports)]
pub use mock::Mock;
#[allow(unused_imports)]
pub use server::{ClusterSpec, Server, Setup, HOST, PASS, USER};

/// A mock upstream and an edge in front of it with the default setup changed by `f`.
pub fn start_with(f: impl FnOnce(Setup) -> Setup) -> (Mock, Server) {
    let mock = Mock::start();
    let server = f(Setup::new(mock.addr)).start();
    (mock, server)
}

/// A mock upstream and an edge in front of it, defaults only.
pub fn start() -> (Mock, Server) {
    start_with(|s| s)
}
