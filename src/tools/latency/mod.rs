//! `searchgate latency`: prints a latency distribution (percentiles, HdrHistogram's
//! percentile table, or JSON) and draws it as SVG, from a running edge's admin API
//! (`searchgate latency CLUSTER_ID`: `GET /v1/clusters/{id}/latency?window=`, found like
//! `searchgate admin` finds it), from an interval log the edge wrote (`--from-log`), or
//! from a load test's latency counts (`--from-wrk`, the `value_us count` lines
//! `loadtest/common.lua` writes from wrk's histogram). The API's answer carries the
//! encoded histograms, so all three sources are rendered by the same code.
//!
//! A client of the admin API and of files only: renders with `metrics`' pure functions;
//! must not import `edge`, `engine`, `registry`, `policy` or `control`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::metrics::intervallog::read_log;
use crate::metrics::latency::{parse_window, LatencyReport};
use crate::metrics::plot::{svg, Series};
use crate::metrics::window::{new_histogram, record_n, IntervalCount, Metric};
use crate::tools::admin::client::AdminClient;
use searchgate_core::percent::encode_component as encode;

/// The window of a cluster's report when `--window` is not given.
pub const DEFAULT_WINDOW: &str = "5m";

/// `searchgate latency` options.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["cluster", "from_log", "from_wrk"])))]
pub struct LatencyArgs {
    /// A cluster's id: its latency over --window from the edge's admin API.
    #[arg(value_name = "CLUSTER_ID")]
    pub cluster: Option<String>,
    /// An interval log written by the edge (`<cluster>.hlog`).
    #[arg(long, value_name = "FILE")]
    pub from_log: Option<PathBuf>,
    /// A load test's latency counts: lines `value_us count`.
    #[arg(long, value_name = "FILE")]
    pub from_wrk: Option<PathBuf>,
    /// With CLUSTER_ID: the window before now (default 5m, at most 1h); with --from-log:
    /// only the intervals of this window before the log's last one.
    #[arg(long, value_name = "DURATION")]
    pub window: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Draw the percentile distribution into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Write HdrHistogram's percentile distribution text into this file.
    #[arg(long, value_name = "FILE")]
    pub hgrm: Option<PathBuf>,
    /// Name shown in the report and the plot's title (default: the cluster id or the file's name).
    #[arg(long)]
    pub name: Option<String>,
    /// With CLUSTER_ID: the admin API (default: the URL in ./data/admin.url, else http://127.0.0.1:9900).
    #[arg(long, requires = "cluster")]
    pub url: Option<String>,
    /// With CLUSTER_ID: file holding the admin token (default: ./data/admin.token).
    #[arg(long, value_name = "FILE", requires = "cluster")]
    pub token_file: Option<PathBuf>,
}

/// Runs the command.
pub fn run(args: LatencyArgs) -> ExitCode {
    match latency(&args) {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("searchgate latency: {e}");
            ExitCode::from(2)
        }
    }
}

/// The report of the files given, written where asked; returns what goes to stdout.
pub fn latency(args: &LatencyArgs) -> Result<String, String> {
    let window = args.window.as_deref().map(parse_window).transpose()?;
    let report = match (&args.cluster, &args.from_log, &args.from_wrk) {
        (Some(id), _, _) => from_api(args, id)?,
        (None, Some(p), _) => from_log(p, window, args.name.as_deref())?,
        (None, None, Some(p)) => {
            if window.is_some() {
                return Err(
                    "--window applies to CLUSTER_ID and --from-log, not to --from-wrk".into(),
                );
            }
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            let name = args.name.clone().unwrap_or_else(|| file_name(p));
            let histograms = [read_counts(&text)?, new_histogram(), new_histogram()];
            LatencyReport::from_histograms(&name, Duration::ZERO, None, histograms)
        }
        (None, None, None) => {
            return Err("give CLUSTER_ID, --from-log FILE or --from-wrk FILE".into())
        }
    };
    if let Some(out) = &args.plot {
        let series: Vec<Series> = Metric::ALL
            .iter()
            .filter(|m| !report.histogram(**m).is_empty())
            .map(|m| Series::of_histogram(m.name(), report.histogram(*m)))
            .collect();
        let title = format!(
            "{}: latency by percentile ({} requests)",
            report.cluster, report.total.count
        );
        write(out, &svg(&title, &series))?;
    }
    if let Some(out) = &args.hgrm {
        write(out, report.percentile_table())?;
    }
    if args.json {
        return serde_json::to_string_pretty(&report)
            .map(|s| s + "\n")
            .map_err(|e| e.to_string());
    }
    Ok(format!(
        "{}\n{}",
        report.summary_table(),
        report.percentile_table()
    ))
}

fn file_name(p: &Path) -> String {
    p.file_stem().map_or_else(
        || p.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The report of cluster `id` from the admin API (its histograms rebuilt from the answer).
fn from_api(args: &LatencyArgs, id: &str) -> Result<LatencyReport, String> {
    let window = args.window.as_deref().unwrap_or(DEFAULT_WINDOW);
    let api = AdminClient::find(args.url.as_deref(), args.token_file.as_deref())?;
    let path = format!(
        "/v1/clusters/{}/latency?window={}",
        encode(id),
        encode(window)
    );
    let answer = api.get(&path)?;
    let mut report = LatencyReport::from_json(&answer.to_string())
        .map_err(|e| format!("{}{path}: {e}", api.url))?;
    if let Some(name) = &args.name {
        report.cluster = name.clone();
    }
    Ok(report)
}

/// The report of an interval log's intervals (all, or those of `window` before its end).
fn from_log(
    path: &Path,
    window: Option<Duration>,
    name: Option<&str>,
) -> Result<LatencyReport, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let intervals = read_log(&bytes)?;
    let end = intervals
        .iter()
        .map(|i| i.start + i.length)
        .max()
        .unwrap_or_default();
    let since = window.map_or(Duration::ZERO, |w| end.saturating_sub(w));
    let mut h = [new_histogram(), new_histogram(), new_histogram()];
    let mut span: Option<(u64, u64)> = None;
    let mut requests: Vec<IntervalCount> = Vec::new();
    for iv in intervals.iter().filter(|i| i.start + i.length > since) {
        let m = match iv.tag.as_deref() {
            Some("queue") => Metric::Queue,
            Some("upstream") => Metric::Upstream,
            _ => Metric::Total,
        };
        add(&mut h[m as usize], &iv.histogram);
        let (a, b) = (
            iv.start.as_millis() as u64,
            (iv.start + iv.length).as_millis() as u64,
        );
        if m == Metric::Total {
            requests.push(IntervalCount {
                from_unix_ms: a,
                to_unix_ms: b,
                requests: iv.histogram.len(),
            });
        }
        span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
    }
    let name = name.map_or_else(|| file_name(path), str::to_string);
    requests.sort_by_key(|r| r.from_unix_ms);
    let window = window.unwrap_or_default();
    Ok(LatencyReport::from_histograms(&name, window, span, h).with_requests(requests))
}

fn add(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    for v in from.iter_recorded() {
        record_n(into, v.value_iterated_to(), v.count_at_value());
    }
}

/// A histogram of `value_us count` lines (blank and `#` lines skipped).
pub fn read_counts(text: &str) -> Result<Histogram<u64>, String> {
    let mut h = new_histogram();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let bad = || format!("line {}: expected `value_us count`: {line}", i + 1);
        let (v, n) = t.split_once(char::is_whitespace).ok_or_else(bad)?;
        let v: u64 = v.trim().parse().map_err(|_| bad())?;
        let n: u64 = n.trim().parse().map_err(|_| bad())?;
        if n > 0 {
            record_n(&mut h, v.max(1), n);
        }
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_become_a_histogram_and_garbage_is_named() {
        let h = read_counts("# wrk\n100 3\n\n250 1\n1000000 0\n").unwrap();
        assert_eq!(h.len(), 4);
        assert!(h.equivalent(h.max(), 250));
        assert!(read_counts("100 x\n").unwrap_err().starts_with("line 1"));
        assert!(read_counts("100\n").is_err());
    }
}
