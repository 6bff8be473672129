//! The `searchgate` binary: parses the command line and hands each subcommand to the
//! library. Nothing else lives here.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use mimalloc::MiMalloc;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

/// The edge for hosted search clusters, its embedded engine and operator tools.
#[derive(Debug, Parser)]
#[command(name = "searchgate", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the edge (and the embedded engine when configured). The default command.
    Serve(searchgate::edge::ServeArgs),
    /// Run the embedded Elasticsearch-compatible engine alone (an upstream; no auth).
    Engine(searchgate_engine::EngineArgs),
    /// Bulk-load a Hugo site (or its generated JSON) into any cluster URL.
    LoadSite(Box<searchgate::tools::loadsite::LoadSiteArgs>),
    /// Capacity planner (spec 8.1): shards, disk, memory, connections and the plan that fits.
    Plan(Box<searchgate::tools::planner::PlanArgs>),
    /// Latency distribution of an interval log or a load test: percentiles, table, SVG plot.
    Latency(Box<searchgate::tools::latency::LatencyArgs>),
    /// The admin API from the command line: clusters, plans, modes, rotation, audit.
    Admin(searchgate::tools::admin::AdminArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => searchgate::edge::serve(searchgate::edge::ServeArgs::default()),
        Some(Command::Serve(args)) => searchgate::edge::serve(args),
        Some(Command::Engine(args)) => searchgate_engine::run(args),
        Some(Command::LoadSite(args)) => searchgate::tools::loadsite::run(*args),
        Some(Command::Plan(args)) => searchgate::tools::planner::run(*args),
        Some(Command::Latency(args)) => searchgate::tools::latency::run(*args),
        Some(Command::Admin(args)) => searchgate::tools::admin::run(args),
    }
}
