//! Shared helpers of the edge's end-to-end tests (`tests/edge_*.rs`): a mock upstream that
//! records what reaches it ([`mock`]), a guard that runs `searchgate serve` with a temp
//! config ([`server`]), plain/TLS clients that read responses byte-exactly ([`client`]),
//! and the edge's own gauges to wait on ([`metrics`]).
//!
//! Include with `#[path = "support/edge/mod.rs"] mod edge;`.

pub mod client;
pub mod metrics;
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
    settle(&mock, &server);
    (mock, server)
}

/// Waits until the edge's control thread has metered every live cluster on `mock` once
/// (it does at start; tests set a long `metering_interval`), so its requests cannot
/// overlap what a test counts.
pub fn settle(mock: &Mock, server: &Server) {
    let live = server
        .setup
        .clusters
        .iter()
        .filter(|c| c.upstream == mock.addr)
        .filter(|c| !matches!(c.mode.as_str(), "provisioning" | "destroyed"))
        .count();
    let done = mock.wait_until(std::time::Duration::from_secs(10), |v| v.metered() >= live);
    assert!(
        done,
        "the edge did not meter its {live} cluster(s) at start"
    );
}

/// A mock upstream and an edge in front of it, defaults only.
pub fn start() -> (Mock, Server) {
    start_with(|s| s)
}
