//! The edge: thread-per-core runtime, listeners, TLS, client sessions, upstream pools.
//!
//! Owns all of the edge's I/O: `start` (process start, signals, reload), `workers` (one
//! pinned monoio runtime per core, accept loops), `tls` and `io` (client transports),
//! `session` (request loop and policy chain), `exchange` (admission, upstream request),
//! `relay` (upstream response), `upstream` (per-core pools), `accesslog`, `certs`,
//! `engine_child` (the embedded engine as a supervised process).
//!
//! Must not import `engine`: every upstream, the embedded engine included, is reached over
//! HTTP, so real Elasticsearch/OpenSearch nodes can take its place.

pub mod accesslog;
mod buffered;
pub mod certs;
mod control;
mod core;
mod engine_child;
mod exchange;
mod io;
mod keyfile;
mod relay;
mod send;
mod session;
mod sock;
mod start;
mod tenant;
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
