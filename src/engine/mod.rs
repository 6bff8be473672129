//! The embedded Elasticsearch-compatible engine on tantivy (placeholder).
//!
//! Must not import `edge`, `registry` or `policy`: the edge reaches it over HTTP only.

pub mod aggs;
pub mod error;
pub mod mapping;
pub mod names;
pub mod query;
pub mod search;
pub mod store;

use std::path::PathBuf;
use std::process::ExitCode;

/// `searchgate engine` options.
#[derive(Debug, clap::Args)]
pub struct EngineArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9201")]
    pub listen: String,
    /// Data directory.
    #[arg(long, default_value = "./data/engine")]
    pub data_dir: PathBuf,
}

/// Runs the engine until SIGTERM/SIGINT.
pub fn run(args: EngineArgs) -> ExitCode {
    let _ = args;
    eprintln!("searchgate engine: not built yet");
    ExitCode::FAILURE
}
