//! `searchgate plan`: the capacity planner of spec 8.1. From expected documents, shard
//! layout, bytes per document (given, or measured on a live cluster with a sample), peak
//! load and the features in use, it computes shards, disk with its 20% margin, a memory
//! range, connections needed, the smallest plan of the catalog that fits (and why the
//! smaller ones do not), and warns when the shards near the open-file budget. Prints a
//! table, or JSON with `--json`.
//!
//! `rules` is the arithmetic (pure), `catalog` the plans and the choice, `sample` the
//! bytes-per-document measurement, `measured` what a running edge's admin API says (a
//! cluster's peak rate and p99 for `--from-cluster`, the plans); this file parses flags
//! and renders.
//!
//! A client of the public HTTP APIs only: must not import `edge`, `engine`, `registry`,
//! `policy` or `tenancy`.

pub mod catalog;
pub mod measured;
pub mod rules;
pub mod sample;

use crate::tools::out::errln;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use crate::tools::admin::client::AdminClient;
use crate::tools::loadsite::http::TlsOptions;
use crate::tools::loadsite::SecretString;
use catalog::{Catalog, Choice};
use measured::Measured;
use rules::{Figures, Inputs, FEATURES};

/// `searchgate plan` options (names as issue 13 gives them).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 a plan fits; 1 no plan of the catalog fits; 2 bad input or a failed measurement."
)]
pub struct PlanArgs {
    /// Documents the cluster will hold (for time series: over the whole retention).
    #[arg(long, value_name = "N")]
    pub documents: u64,
    /// Primary bytes per document (or measure it with --sample and --url).
    #[arg(
        long,
        value_name = "B",
        required_unless_present = "sample",
        conflicts_with = "sample"
    )]
    pub bytes_per_doc: Option<f64>,
    /// File of sample documents, one JSON object per line, indexed into --url to measure bytes per document.
    #[arg(long, value_name = "FILE", requires = "url")]
    pub sample: Option<PathBuf>,
    /// Cluster URL for --sample, https://user:pass@host... (a scratch index is created and deleted).
    #[arg(long, value_name = "CLUSTER_URL", requires = "sample")]
    pub url: Option<SecretString>,
    /// Extra CA certificate (PEM) for --url.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Primary shards per index.
    #[arg(long, value_name = "P", default_value_t = 1)]
    pub primaries: u64,
    /// Replicas of each primary.
    #[arg(long, value_name = "R", default_value_t = 1)]
    pub replicas: u64,
    /// Time series: indices created per day.
    #[arg(long, value_name = "D", requires = "retention_days")]
    pub indices_per_day: Option<u64>,
    /// Time series: days an index is kept.
    #[arg(long, value_name = "K", requires = "indices_per_day")]
    pub retention_days: Option<u64>,
    /// Peak requests per second (size for peak, not average).
    #[arg(
        long,
        value_name = "X",
        required_unless_present = "from_cluster",
        requires = "p99_ms"
    )]
    pub peak_rps: Option<f64>,
    /// p99 latency in ms at that peak.
    #[arg(
        long,
        value_name = "Y",
        required_unless_present = "from_cluster",
        requires = "peak_rps"
    )]
    pub p99_ms: Option<f64>,
    /// Read peak req/s (the busiest minute) and p99 (upstream time) from a cluster's measured counts and histogram, through the admin API.
    #[arg(long, value_name = "ID", conflicts_with_all = ["peak_rps", "p99_ms"])]
    pub from_cluster: Option<String>,
    /// With --from-cluster: how far back to read (at most 1h, what the edge keeps).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "1h",
        requires = "from_cluster"
    )]
    pub window: String,
    /// The admin API, for --from-cluster and the plan catalog (default: ./data/admin.url, else http://127.0.0.1:9900).
    #[arg(long, value_name = "URL")]
    pub admin_url: Option<String>,
    /// File holding the admin token (default: ./data/admin.token).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Features that raise memory: highlighting, aggregations, scripting, geo, deep-paging, large-sorts, cache-evictions.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub features: Vec<String>,
    /// Open files a node allows (the budget the shard warning is judged against).
    #[arg(long, value_name = "N", default_value_t = rules::DEFAULT_OPEN_FILES)]
    pub open_files: u64,
    /// Config file whose [[plans]] are the catalog (default: the admin API's plans when it is reachable, else the embedded default's).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs the planner.
pub fn run(args: PlanArgs) -> ExitCode {
    match plan(&args) {
        Ok((out, fits)) => {
            crate::tools::out::out(&out);
            if fits {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            errln!("searchgate plan: {e}");
            ExitCode::from(2)
        }
    }
}

/// The rendered output and whether a plan fits.
pub fn plan(args: &PlanArgs) -> Result<(String, bool), String> {
    let measured = match &args.from_cluster {
        Some(id) => {
            let api = AdminClient::find(args.admin_url.as_deref(), args.token_file.as_deref())
                .map_err(|e| format!("--from-cluster {id}: the admin API: {e}"))?;
            let m = measured::from_cluster(&api, id, &args.window)?;
            errln!(
                "searchgate plan: cluster {id}: {} requests in the last {} s; busiest minute {} req/s; upstream p99 {} ms",
                m.requests,
                m.window_secs,
                rules::trim(m.peak_rps),
                rules::trim(m.p99_ms)
            );
            Some(m)
        }
        None => None,
    };
    let inputs = inputs(args, measured.as_ref())?;
    let catalog = measured::catalog(
        args.config.as_deref(),
        args.admin_url.as_deref(),
        args.token_file.as_deref(),
    )?;
    let figures = rules::figures(&inputs);
    let choice = catalog.choose(&figures);
    let fits = choice.plan.is_some();
    let out = if args.json {
        let mut v = to_json(&inputs, &figures, &choice, &catalog);
        v["inputs"]["measured"] = json!(measured);
        serde_json::to_string_pretty(&v).map_err(|e| e.to_string())? + "\n"
    } else {
        table(&figures, &choice, &catalog)
    };
    Ok((out, fits))
}

fn inputs(args: &PlanArgs, measured: Option<&Measured>) -> Result<Inputs, String> {
    let mut features = Vec::new();
    for f in &args.features {
        let f = f.trim().to_ascii_lowercase();
        if !FEATURES.contains(&f.as_str()) {
            return Err(format!(
                "--features: unknown feature `{f}` (known: {})",
                FEATURES.join(", ")
            ));
        }
        if !features.contains(&f) {
            features.push(f);
        }
    }
    if args.primaries == 0 {
        return Err("--primaries: an index has at least one primary shard".into());
    }
    if args.indices_per_day == Some(0) || args.retention_days == Some(0) {
        return Err("--indices-per-day and --retention-days must be at least 1".into());
    }
    let (peak_rps, p99_ms) = match (measured, args.peak_rps, args.p99_ms) {
        (Some(m), _, _) => (m.peak_rps, m.p99_ms),
        (None, Some(r), Some(p)) => (r, p),
        _ => return Err("give --peak-rps and --p99-ms (or --from-cluster)".into()),
    };
    for (name, v) in [("--peak-rps", peak_rps), ("--p99-ms", p99_ms)] {
        if !v.is_finite() || v < 0.0 {
            return Err(format!("{name}: must be a number at least 0"));
        }
    }
    let bytes_per_doc = match (args.bytes_per_doc, &args.sample, &args.url) {
        (Some(b), _, _) if b.is_finite() && b > 0.0 => b,
        (Some(_), _, _) => return Err("--bytes-per-doc: must be a number above 0".into()),
        (None, Some(file), Some(url)) => {
            let docs = sample::read_sample(file)?;
            let tls = TlsOptions {
                cacert: args.cacert.clone(),
                insecure: false,
            };
            let m = sample::measure(url.expose(), &tls, &docs)?;
            errln!(
                "searchgate plan: sample of {} documents took {} primary bytes: {} B/doc",
                m.documents,
                m.primary_bytes,
                rules::trim(m.bytes_per_doc)
            );
            m.bytes_per_doc
        }
        _ => return Err("give --bytes-per-doc, or --sample FILE with --url CLUSTER_URL".into()),
    };
    Ok(Inputs {
        documents: args.documents,
        bytes_per_doc,
        primaries: args.primaries,
        replicas: args.replicas,
        time_series: args.indices_per_day.zip(args.retention_days),
        peak_rps,
        p99_ms,
        features,
        open_files: args.open_files.max(1),
    })
}

fn plan_reason(choice: &Choice, catalog: &Catalog, f: &Figures) -> String {
    match &choice.plan {
        Some(p) => format!(
            "smallest of the {} plans of {} that fits: shards {} <= {}, disk {} <= {}, memory {} >= {}, connections {} <= {}",
            catalog.plans().len(),
            catalog.source,
            f.shards,
            p.shards,
            f.disk_bytes,
            p.disk_bytes,
            p.memory_bytes,
            f.memory_bytes_min,
            f.connections,
            p.concurrency
        ),
        None => format!("none of the {} plans of {} fits", catalog.plans().len(), catalog.source),
    }
}

fn to_json(i: &Inputs, f: &Figures, choice: &Choice, catalog: &Catalog) -> serde_json::Value {
    json!({
        "shards": f.shards,
        "disk_bytes": f.disk_bytes,
        "memory_bytes_min": f.memory_bytes_min,
        "memory_bytes_max": f.memory_bytes_max,
        "connections": f.connections,
        "plan": choice.plan.as_ref().map(|p| p.name.clone()),
        "memory_bytes_99": f.memory_bytes_99,
        "data_bytes": f.data_bytes,
        "open_files_estimate": f.open_files_estimate,
        "reasons": {
            "shards": f.reasons.shards,
            "disk_bytes": f.reasons.disk_bytes,
            "memory": f.reasons.memory,
            "connections": f.reasons.connections,
            "plan": plan_reason(choice, catalog, f),
        },
        "rejected": choice.rejected,
        "warnings": f.warnings,
        "catalog": catalog.source,
        "inputs": {
            "documents": i.documents,
            "bytes_per_doc": i.bytes_per_doc,
            "primaries": i.primaries,
            "replicas": i.replicas,
            "indices_per_day": i.time_series.map(|t| t.0),
            "retention_days": i.time_series.map(|t| t.1),
            "peak_rps": i.peak_rps,
            "p99_ms": i.p99_ms,
            "features": i.features,
            "open_files": i.open_files,
        },
    })
}

/// Bytes in a human unit (binary, as the config file's sizes) with the exact count.
fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {} ({bytes} B)", UNITS[u])
}

fn table(f: &Figures, choice: &Choice, catalog: &Catalog) -> String {
    let plan = choice
        .plan
        .as_ref()
        .map_or("(none)".to_string(), |p| p.name.clone());
    let rows = [
        ("shards", f.shards.to_string(), f.reasons.shards.clone()),
        ("disk", human(f.disk_bytes), f.reasons.disk_bytes.clone()),
        (
            "memory",
            format!(
                "{} .. {}",
                human(f.memory_bytes_min),
                human(f.memory_bytes_max)
            ),
            f.reasons.memory.clone(),
        ),
        (
            "connections",
            f.connections.to_string(),
            f.reasons.connections.clone(),
        ),
        ("plan", plan, plan_reason(choice, catalog, f)),
    ];
    let width = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    let mut s = String::new();
    for (name, value, why) in rows {
        s.push_str(&format!("{name:<12} {value:<width$}  {why}\n"));
    }
    for r in &choice.rejected {
        s.push_str(&format!("  not {}: {}\n", r.plan, r.why.join("; ")));
    }
    for w in &f.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}
