//! The edge: thread-per-core runtime, listeners, TLS, client sessions, upstream pools.
//!
//! Owns all of the edge's I/O. Must not import `engine`: every upstream is reached over HTTP.

use std::path::PathBuf;
use std::process::ExitCode;

/// `searchgate serve` options.
#[derive(Debug, Default, clap::Args)]
pub struct ServeArgs {
    /// Configuration file (TOML). Absent: the embedded default in ./data.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// I/O driver: auto (io_uring, epoll where refused), uring or epoll.
    #[arg(long, default_value = "auto")]
    pub driver: String,
    /// Worker threads (default: one per core, each pinned).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Runs the edge until SIGTERM/SIGINT.
pub fn serve(args: ServeArgs) -> ExitCode {
    let _ = args;
    eprintln!("searchgate serve: not built yet");
    ExitCode::FAILURE
}
