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

use crate::tools::out::errln;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::metrics::intervallog::read_log;
use crate::metrics::latency::{format_rate, format_secs, parse_window, LatencyReport};
use crate::metrics::plot::{svg, Series, Stroke};
use crate::metrics::window::{new_histogram, record_n, IntervalCount, Metric};
use crate::tools::admin::client::AdminClient;
use searchgate_core::percent::encode_component as encode;

/// The window of a cluster's report when `--window` is not given.
pub const DEFAULT_WINDOW: &str = "5m";

/// `searchgate latency` options.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("source").required(true).multiple(true).args(["cluster", "from_log", "from_wrk"])))]
pub struct LatencyArgs {
    /// Clusters' ids: their latency over --window from the edge's admin API (several: one
    /// chart, one report each).
    #[arg(value_name = "CLUSTER_ID")]
    pub cluster: Vec<String>,
    /// Interval logs written by the edge (`<cluster>.hlog`).
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub from_log: Vec<PathBuf>,
    /// Load tests' latency counts (lines `value_us count`, as loadtest/common.lua writes them).
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub from_wrk: Vec<PathBuf>,
    /// With CLUSTER_ID: the last DURATION (whole minutes, 1m to 60m; default 5m); with
    /// --from-log: the intervals of the last DURATION of the log. The output says which span it covers.
    #[arg(long, value_name = "DURATION")]
    pub window: Option<String>,
    /// Print the report as JSON (an array of reports when there are several inputs).
    #[arg(long)]
    pub json: bool,
    /// Draw the percentile distributions of every input into this SVG file, on one chart.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Write HdrHistogram's percentile distribution text into this file (one input only).
    #[arg(long, value_name = "FILE")]
    pub hgrm: Option<PathBuf>,
    /// Name shown in the report and the plot (one input only; default: the cluster id or
    /// the file's name).
    #[arg(long)]
    pub name: Option<String>,
    /// With CLUSTER_ID: the admin API (default: the URL in ./data/admin.url, else http://127.0.0.1:9900).
    #[arg(long, requires = "cluster")]
    pub url: Option<String>,
    /// With CLUSTER_ID: file holding the admin token (default: ./data/admin.token).
    #[arg(long, value_name = "FILE", requires = "cluster")]
    pub token_file: Option<PathBuf>,
}

/// Where a report came from: a load test's counts have whole-request times only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Api,
    Log,
    Wrk,
}

/// Runs the command.
pub fn run(args: LatencyArgs) -> ExitCode {
    match latency(&args) {
        Ok(out) => {
            crate::tools::out::out(&out);
            ExitCode::SUCCESS
        }
        Err(e) => {
            errln!("searchgate latency: {e}");
            ExitCode::from(2)
        }
    }
}

/// The reports of the inputs given, written where asked; returns what goes to stdout.
pub fn latency(args: &LatencyArgs) -> Result<String, String> {
    let window = args.window.as_deref().map(parse_window).transpose()?;
    let inputs = args.cluster.len() + args.from_log.len() + args.from_wrk.len();
    if window.is_some() && args.cluster.is_empty() && args.from_log.is_empty() {
        return Err("--window applies to CLUSTER_ID and --from-log, not to --from-wrk".into());
    }
    if inputs > 1 && args.name.is_some() {
        return Err("--name names one input; with several, each is named by its id or file".into());
    }
    if inputs > 1 && args.hgrm.is_some() {
        return Err("--hgrm writes one input's distribution; give one input".into());
    }
    let mut reports: Vec<(LatencyReport, Source)> = Vec::new();
    for id in &args.cluster {
        reports.push((from_api(args, id)?, Source::Api));
    }
    for p in &args.from_log {
        reports.push((from_log(p, window)?, Source::Log));
    }
    for p in &args.from_wrk {
        reports.push((from_wrk(p)?, Source::Wrk));
    }
    if let (Some(name), [(r, _)]) = (&args.name, reports.as_mut_slice()) {
        r.cluster = name.clone();
    }
    if let Some(out) = &args.plot {
        write(out, &plot(&reports))?;
    }
    if let (Some(out), [(r, _)]) = (&args.hgrm, reports.as_slice()) {
        write(out, r.percentile_table())?;
    }
    if args.json {
        let all: Vec<&LatencyReport> = reports.iter().map(|(r, _)| r).collect();
        let text = match all.as_slice() {
            [one] => serde_json::to_string_pretty(one),
            many => serde_json::to_string_pretty(many),
        };
        return text.map(|s| s + "\n").map_err(|e| e.to_string());
    }
    let texts: Vec<String> = reports
        .iter()
        .map(|(r, _)| {
            format!(
                "{}\n\n{}\n{}",
                r.header().join("\n"),
                r.summary_table(),
                r.percentile_table()
            )
        })
        .collect();
    Ok(texts.join("\n"))
}

/// One chart of every input: with one input a colour per metric, with several a colour
/// per input and a line style per metric. Load tests measure whole requests only.
fn plot(reports: &[(LatencyReport, Source)]) -> String {
    let one = reports.len() == 1;
    let mut series = Vec::new();
    for (i, (r, source)) in reports.iter().enumerate() {
        let metrics: &[Metric] = if *source == Source::Wrk {
            &[Metric::Total]
        } else {
            &[Metric::Total, Metric::Upstream, Metric::Queue]
        };
        for (k, m) in metrics.iter().enumerate() {
            let name = if one {
                m.name().to_string()
            } else {
                format!("{} {}", r.cluster, m.name())
            };
            let stroke = [Stroke::Wide, Stroke::Dashed, Stroke::Dotted][k];
            let colour = if one { k } else { i };
            let label = format!("{name}: {}", legend_figures(r, *m));
            series.push(Series::of_histogram(&name, r.histogram(*m)).styled(label, colour, stroke));
        }
    }
    let title = match reports {
        [(r, _)] => {
            let mut t = r.header();
            t[0] = format!("Latency by percentile of {}", t[0]);
            t
        }
        _ => several_title(reports),
    };
    svg(&title, &series)
}

/// The legend's figures of one metric of a report.
fn legend_figures(r: &LatencyReport, m: Metric) -> String {
    let p = match m {
        Metric::Total => Some(&r.total),
        Metric::Queue => r.queue.as_ref(),
        Metric::Upstream => r.upstream.as_ref(),
    };
    let Some(p) = p else {
        return "not measured by this source".into();
    };
    if p.count == 0 {
        return match m {
            Metric::Queue => "no request waited for a concurrency slot".into(),
            _ => "no requests".into(),
        };
    }
    let what = match m {
        Metric::Total => "requests",
        Metric::Queue => "requests waited for a slot",
        Metric::Upstream => "requests reached the upstream",
    };
    let rate = match (m, r.mean_rps()) {
        (Metric::Total, Some(rps)) => format!(
            " in {} ({} req/s)",
            format_secs(r.span_secs().unwrap_or(0.0)),
            format_rate(rps)
        ),
        _ => String::new(),
    };
    format!(
        "{} {what}{rate}; ms: p50 {:.3}, p99 {:.3}, p99.9 {:.3}, max {:.3}",
        p.count, p.p50, p.p99, p.p99_9, p.max_ms
    )
}

/// The title of a chart of several inputs: how many, their common target, their span.
fn several_title(reports: &[(LatencyReport, Source)]) -> Vec<String> {
    let names: Vec<&str> = reports.iter().map(|(r, _)| r.cluster.as_str()).collect();
    let mut t = vec![match names_in_title(&names) {
        Some(names) => format!("Latency by percentile of {} inputs: {names}", reports.len()),
        None => format!(
            "Latency by percentile of {} inputs (named in the legend)",
            reports.len()
        ),
    }];
    let targets: Vec<Option<&String>> = reports.iter().map(|(r, _)| r.target.as_ref()).collect();
    if let Some(Some(first)) = targets.first() {
        if targets.iter().all(|t| *t == Some(*first)) {
            t.push(format!("all to {first}"));
        }
    }
    let from = reports.iter().filter_map(|(r, _)| r.from_unix_ms).min();
    let to = reports.iter().filter_map(|(r, _)| r.to_unix_ms).max();
    let total: u64 = reports.iter().map(|(r, _)| r.total.count).sum();
    let span = LatencyReport::from_histograms(
        "all",
        Duration::ZERO,
        from.zip(to),
        [new_histogram(), new_histogram(), new_histogram()],
    );
    match span.header().get(1) {
        Some(s) if from.is_some() => t.push(format!("{total} requests, {s}")),
        _ => t.push(format!("{total} requests")),
    }
    t
}

/// The longest title line of names that still reads on the chart.
const TITLE_NAMES: usize = 70;

/// Several inputs' names for a title: what they share at the start and the end (up to a
/// `-`) written once, `plain-{direct, nginx}-round1`; `None` when even that is too long
/// for one line (the legend names every input anyway).
fn names_in_title(names: &[&str]) -> Option<String> {
    let first = names.first()?;
    let common = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let pre = names.iter().fold(first.len(), |n, x| {
        n.min(common(first.as_bytes(), x.as_bytes()))
    });
    let pre = first[..pre].rfind('-').map_or(0, |i| i + 1);
    let rev = |s: &str| s.bytes().rev().collect::<Vec<u8>>();
    let suf = names
        .iter()
        .fold(first.len(), |n, x| n.min(common(&rev(first), &rev(x))));
    let tail = &first[first.len() - suf..];
    let suf = tail.find('-').map_or(0, |i| suf - i);
    let middles: Option<Vec<&str>> = names
        .iter()
        .map(|n| {
            n.get(pre..n.len().checked_sub(suf)?)
                .filter(|m| !m.is_empty())
        })
        .collect();
    let text = match middles {
        Some(m) if pre + suf > 0 => format!(
            "{}{{{}}}{}",
            &first[..pre],
            m.join(", "),
            &first[first.len() - suf..]
        ),
        _ => names.join(", "),
    };
    (text.chars().count() <= TITLE_NAMES).then_some(text)
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
    LatencyReport::from_json(&answer.to_string()).map_err(|e| format!("{}{path}: {e}", api.url))
}

/// The report of an interval log's intervals (all, or those of `window` before its end).
fn from_log(path: &Path, window: Option<Duration>) -> Result<LatencyReport, String> {
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
    requests.sort_by_key(|r| r.from_unix_ms);
    let window = window.unwrap_or_default();
    Ok(LatencyReport::from_histograms(&file_name(path), window, span, h).with_requests(requests))
}

fn add(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    for v in from.iter_recorded() {
        record_n(into, v.value_iterated_to(), v.count_at_value());
    }
}

/// The report of a load test's counts: its span and target from the `# key=value`
/// header `loadtest/common.lua` writes (`end_unix_s`, `duration_us`, `target`).
fn from_wrk(path: &Path) -> Result<LatencyReport, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let counts = read_counts(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let meta = |k: &str| {
        counts
            .meta
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    let num = |k: &str| meta(k).and_then(|v| v.parse::<u64>().ok());
    let span = match (num("end_unix_s"), num("duration_us")) {
        (Some(end), Some(d)) => Some((end * 1000 - (d / 1000).min(end * 1000), end * 1000)),
        _ => None,
    };
    let name = meta("label").unwrap_or_else(|| file_name(path));
    let histograms = [counts.histogram, new_histogram(), new_histogram()];
    let mut r = LatencyReport::from_histograms(&name, Duration::ZERO, span, histograms)
        .whole_requests_only()
        .with_target(meta("target"));
    r.duration_us = num("duration_us");
    Ok(r)
}

/// A load test's counts: the histogram and the header's `key=value` pairs.
#[derive(Debug)]
pub struct Counts {
    pub histogram: Histogram<u64>,
    pub meta: Vec<(String, String)>,
}

/// `value_us count` lines (blank lines skipped; `#` lines are comments, and `key=value`
/// words in them are the run's facts).
pub fn read_counts(text: &str) -> Result<Counts, String> {
    let mut h = new_histogram();
    let mut meta = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(comment) = t.strip_prefix('#') {
            for word in comment.split_whitespace() {
                if let Some((k, v)) = word.split_once('=') {
                    meta.push((k.to_string(), v.to_string()));
                }
            }
            continue;
        }
        if t.is_empty() {
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
    Ok(Counts { histogram: h, meta })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_names_share_their_common_start_and_end_in_a_title() {
        let t = |names: &[&str]| names_in_title(names);
        assert_eq!(
            t(&[
                "plain-direct-round1",
                "plain-nginx-round1",
                "plain-sg-uring-round1"
            ])
            .unwrap(),
            "plain-{direct, nginx, sg-uring}-round1"
        );
        assert_eq!(
            t(&["bulk-target-round1", "bulk-target-round2"]).unwrap(),
            "bulk-target-{round1, round2}"
        );
        assert_eq!(
            t(&["demo", "cq3k9x0m2a7bz"]).unwrap(),
            "demo, cq3k9x0m2a7bz"
        );
        assert_eq!(t(&["a-b", "a-b-c"]).unwrap(), "a-{b, b-c}");
        // Start and end overlap in a name: the names as they are.
        assert_eq!(t(&["x-a-y", "x-y"]).unwrap(), "x-a-y, x-y");
        let long: Vec<String> = (0..12).map(|i| format!("cluster{i:02}x")).collect();
        let long: Vec<&str> = long.iter().map(String::as_str).collect();
        assert_eq!(t(&long), None, "too long for a line: the legend names them");
    }

    #[test]
    fn counts_become_a_histogram_and_garbage_is_named() {
        let c = read_counts("# wrk target=http://x/ end_unix_s=5\n100 3\n\n250 1\n1000000 0\n")
            .unwrap();
        let h = c.histogram;
        assert_eq!(h.len(), 4);
        assert!(h.equivalent(h.max(), 250));
        assert_eq!(
            c.meta,
            [
                ("target".to_string(), "http://x/".to_string()),
                ("end_unix_s".to_string(), "5".to_string())
            ]
        );
        assert!(read_counts("100 x\n").unwrap_err().starts_with("line 1"));
        assert!(read_counts("100\n").is_err());
    }
}
