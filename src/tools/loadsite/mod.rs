//! `searchgate load-site`: bulk-load a Hugo site into a cluster (placeholder).

use std::path::PathBuf;
use std::process::ExitCode;

/// `searchgate load-site` options.
#[derive(Debug, clap::Args)]
pub struct LoadSiteArgs {
    /// The Hugo site directory.
    pub site_dir: Option<PathBuf>,
}

/// Runs the loader.
pub fn run(args: LoadSiteArgs) -> ExitCode {
    let _ = args;
    eprintln!("searchgate load-site: not built yet");
    ExitCode::FAILURE
}
