//! HdrHistogram's percentile distribution as text: the four columns `Value Percentile
//! TotalCount 1/(1-Percentile)` with its `#[Mean …]` footer, as Java's
//! `outputPercentileDistribution` prints it and HdrHistogram's plotter reads it, and the
//! reading of such a text back into rows (the CLI and the tests read files with it).
//!
//! Must not touch: what is recorded or reported (`latency`, `window`), I/O.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

/// Reporting points per halving of the distance to 100% (Java's default).
pub const TICKS_PER_HALF_DISTANCE: u32 = 5;

/// HdrHistogram's percentile distribution of `h`, values divided by `scale`.
pub fn percentile_distribution(h: &Histogram<u64>, scale: f64) -> String {
    let mut s = format!(
        "{:>12} {:>14} {:>10} {:>14}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    if !h.is_empty() {
        let mut total = 0u64;
        for v in h.iter_quantiles(TICKS_PER_HALF_DISTANCE) {
            total += v.count_since_last_iteration();
            let value = v.value_iterated_to() as f64 / scale;
            let q = v.quantile_iterated_to();
            if q < 1.0 {
                let _ = writeln!(
                    s,
                    "{value:12.3} {q:2.12} {total:10} {:14.2}",
                    1.0 / (1.0 - q)
                );
            } else {
                let _ = writeln!(s, "{value:12.3} {q:2.12} {total:10}");
            }
        }
    }
    let (mean, sd, max) = if h.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        (h.mean() / scale, h.stdev() / scale, h.max() as f64 / scale)
    };
    let buckets = u64::from(h.buckets());
    let sub_buckets = 2 * h.distinct_values() as u64 / (buckets + 1);
    let _ = write!(
        s,
        "#[Mean    = {mean:12.3}, StdDeviation   = {sd:12.3}]\n\
         #[Max     = {max:12.3}, Total count    = {:12}]\n\
         #[Buckets = {buckets:12}, SubBuckets     = {sub_buckets:12}]\n",
        h.len()
    );
    // The summary's percentiles (`Percentiles::of`, the same quantiles of the same
    // histogram), so the file says what the report and the load test print.
    let at = |q: f64| {
        if h.is_empty() {
            0.0
        } else {
            h.value_at_quantile(q) as f64 / scale
        }
    };
    let _ = writeln!(
        s,
        "#[p50 = {:.3}, p90 = {:.3}, p99 = {:.3}, p99.9 = {:.3}, p99.99 = {:.3}, p99.999 = {:.3}]",
        at(0.5),
        at(0.9),
        at(0.99),
        at(0.999),
        at(0.9999),
        at(0.99999)
    );
    s
}

/// One row of a percentile distribution read back from its text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DistributionRow {
    pub value: f64,
    pub quantile: f64,
    pub total_count: u64,
}

/// Reads the rows of a percentile distribution text (header, footer and blank lines
/// skipped); an error names the first line that is not a row.
pub fn parse_distribution(text: &str) -> Result<Vec<DistributionRow>, String> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with("Value") {
            continue;
        }
        let cols: Vec<&str> = t.split_whitespace().collect();
        let bad = || format!("line {}: not a distribution row: {line}", i + 1);
        if !(3..=4).contains(&cols.len()) {
            return Err(bad());
        }
        rows.push(DistributionRow {
            value: cols[0].parse().map_err(|_| bad())?,
            quantile: cols[1].parse().map_err(|_| bad())?,
            total_count: cols[2].parse().map_err(|_| bad())?,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::window::new_histogram;

    /// Values shown in milliseconds, as the latency report shows them.
    const MS: f64 = 1000.0;

    #[test]
    fn an_empty_histogram_prints_header_and_footer_only() {
        let text = percentile_distribution(&new_histogram(), MS);
        assert!(parse_distribution(&text).unwrap().is_empty());
        assert!(text.contains("Total count    =            0]"));
    }

    #[test]
    fn a_row_that_is_not_a_row_is_named() {
        let e = parse_distribution("Value Percentile\n\n1.0 0.5 3 2.0\nbogus line here now x\n")
            .unwrap_err();
        assert!(e.starts_with("line 4"), "{e}");
    }
}
