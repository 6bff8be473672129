//! The edge: thread-per-core runtime, listeners, TLS, client connections, upstream pools.
//!
//! Process: `start` (start, signals, reload), `workers` (one pinned monoio runtime per
//! core, accept loops), `crew` (the workers supervised: one that dies is started again on
//! the same sockets), `faults` (a panic contained to its connection; the test-only fault
//! injection), `core` (what each core holds), `control` (readiness and metering),
//! `metrics_http` (the metrics listener), `engine_child` (the embedded engine as a
//! supervised process), `certs`, `keyfile`.
//!
//! A request's way (docs/request-path.md walks it file by file): `io` (the client
//! transport, over `tcp` or `tls`) -> `session` (the connection's request loop: read a
//! head, `policy::decide`, record) -> `exchange` (carry the decision out: admit, upstream,
//! relay) with its stages `buffered` (bodies read whole), `precreate` (indices created
//! first), `send` (the request upstream, the body through a `filter`), `upstream` (pools,
//! response heads) and `relay` (the response back, through a `filter`); `client` is the
//! client side every stage writes through, `outcome` the leaf types they hand back. No
//! stage imports the one that runs it, and there is no import cycle among these modules
//! (checked by `tests/it/layout.rs`).
//!
//! Must not import `engine`: every upstream, the embedded engine included, is reached over
//! HTTP, so real Elasticsearch/OpenSearch nodes can take its place.

pub mod accesslog;
mod buffered;
pub mod certs;
mod client;
mod contexts;
mod control;
mod core;
mod crew;
#[cfg(test)]
mod duplex;
mod engine_child;
mod exchange;
mod faults;
mod filter;
mod fleet_start;
mod io;
mod keyfile;
mod metrics_http;
mod outcome;
mod peer;
#[cfg(test)]
mod pipeline_tests;
mod preamble;
mod precreate;
mod relay;
mod send;
mod session;
mod sock;
mod start;
mod tcp;
mod timer;
mod tls;
mod upstream;
pub mod workers;

use std::path::PathBuf;
use std::process::ExitCode;

/// `searchgate serve` options.
#[derive(Debug, Default, clap::Args)]
pub struct ServeArgs {
    /// Configuration file (TOML). Absent: the embedded default kept in ./data.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// I/O driver: auto (io_uring, epoll where the kernel refuses it), uring or epoll.
    #[arg(long, default_value = "auto")]
    pub driver: String,
    /// Worker threads (default: one per core, each pinned).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Runs the edge until SIGTERM/SIGINT; exit status 0 after a clean drain.
pub fn serve(mut args: ServeArgs) -> ExitCode {
    if args.driver.is_empty() {
        args.driver = "auto".into();
    }
    match start::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("searchgate: {e}");
            ExitCode::FAILURE
        }
    }
}
