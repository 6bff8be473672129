//! The sizing rules of spec 8.1 as pure arithmetic: inputs in, figures out, each with the
//! reason a reader can check by hand. No I/O, no clock.
//!
//! Must not touch: the catalog (see `catalog`), the network (see `sample`).

use serde::Serialize;

/// Features that raise memory above the 10-30% band (spec 8.1.3).
pub const FEATURES: [&str; 7] = [
    "highlighting",
    "aggregations",
    "scripting",
    "geo",
    "deep-paging",
    "large-sorts",
    "cache-evictions",
];

/// Disk margin added to the data size (spec 8.1.2: about 20%).
pub const DISK_MARGIN_PERCENT: u64 = 20;
/// Memory as a share of data for about 95% of users (spec 8.1.3).
pub const MEMORY_PERCENT_95: (u64, u64) = (10, 30);
/// Memory as a share of data for over 99% of users (spec 8.1.3).
pub const MEMORY_PERCENT_99: u64 = 50;
/// What each listed feature adds to the upper memory bound beyond the first (our rule: the
/// spec says "more" without a number).
pub const MEMORY_PERCENT_PER_EXTRA_FEATURE: u64 = 10;
/// Open files one shard holds, as estimated here: a Lucene shard's segments (about ten of
/// them after merges, each a compound file plus its entries and deletes) with the
/// translog and state files come to a few dozen; 50 is a round upper estimate.
pub const FILES_PER_SHARD: u64 = 50;
/// Elasticsearch's bootstrap check asks at least this many open files per node.
pub const DEFAULT_OPEN_FILES: u64 = 65_535;
/// Warn when the shards' estimated files reach this share of the budget.
pub const OPEN_FILES_WARN_PERCENT: u64 = 75;

/// What the planner is told.
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    /// Documents the cluster holds (over the whole retention for time series).
    pub documents: u64,
    /// Primary bytes per document (given or measured).
    pub bytes_per_doc: f64,
    pub primaries: u64,
    pub replicas: u64,
    /// Time series: indices created per day and days kept (`None`: one index).
    pub time_series: Option<(u64, u64)>,
    pub peak_rps: f64,
    pub p99_ms: f64,
    /// Features from [`FEATURES`] (validated).
    pub features: Vec<String>,
    /// Open files per node the shards may use.
    pub open_files: u64,
}

/// One figure and why it is what it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    pub shards: u64,
    pub disk_bytes: u64,
    pub memory_bytes_min: u64,
    pub memory_bytes_max: u64,
    /// Memory for over 99% of users (50% of data), for comparison.
    pub memory_bytes_99: u64,
    pub connections: u64,
    /// Primary and replica data before the disk margin.
    pub data_bytes: u64,
    /// Estimated open files of all shards.
    pub open_files_estimate: u64,
    pub reasons: Reasons,
    pub warnings: Vec<String>,
}

/// The reason of each figure, in words and numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reasons {
    pub shards: String,
    pub disk_bytes: String,
    pub memory: String,
    pub connections: String,
}

/// Applies spec 8.1 to `i`.
pub fn figures(i: &Inputs) -> Figures {
    let per_index = i.primaries * (1 + i.replicas);
    let (shards, shards_why) = match i.time_series {
        Some((per_day, days)) => (
            per_index * per_day * days,
            format!(
                "p*(1+r) = {}*(1+{}) = {per_index} per index, x {per_day} indices/day x {days} days",
                i.primaries, i.replicas
            ),
        ),
        None => (
            per_index,
            format!("p*(1+r) = {}*(1+{}) for one index", i.primaries, i.replicas),
        ),
    };
    let data = (i.bytes_per_doc * i.documents as f64 * (1 + i.replicas) as f64).ceil() as u64;
    let disk = div_ceil(data * (100 + DISK_MARGIN_PERCENT), 100);
    let disk_why = format!(
        "{} B/doc x {} docs x (1+{}) = {data} B of data, + {DISK_MARGIN_PERCENT}%",
        trim(i.bytes_per_doc),
        i.documents,
        i.replicas
    );
    let (lo, hi) = memory_percent(i.features.len() as u64);
    let memory_why = if i.features.is_empty() {
        format!("{lo}-{hi}% of {data} B of data (about 95% of users; 50% suits over 99%)")
    } else {
        format!(
            "{lo}-{hi}% of {data} B of data: {} raise memory above the 10-30% band",
            i.features.join(", ")
        )
    };
    let connections = connections(i.peak_rps, i.p99_ms);
    let conn_why = format!(
        "peak {} req/s / (1000 / p99 {} ms) = {}, rounded up",
        trim(i.peak_rps),
        trim(i.p99_ms),
        trim(i.peak_rps * i.p99_ms / 1000.0)
    );
    let open_files_estimate = shards * FILES_PER_SHARD;
    let mut warnings = Vec::new();
    if open_files_estimate * 100 >= i.open_files * OPEN_FILES_WARN_PERCENT {
        warnings.push(format!(
            "{shards} shards x ~{FILES_PER_SHARD} open files each = {open_files_estimate}, {}% of the \
             {} open-file budget: a shard count this large can exhaust it (spec 8.1.5); use fewer \
             primaries, fewer indices per day or a shorter retention",
            open_files_estimate * 100 / i.open_files.max(1),
            i.open_files
        ));
    }
    Figures {
        shards,
        disk_bytes: disk,
        memory_bytes_min: div_ceil(data * lo, 100),
        memory_bytes_max: div_ceil(data * hi, 100),
        memory_bytes_99: div_ceil(data * MEMORY_PERCENT_99, 100),
        connections,
        data_bytes: data,
        open_files_estimate,
        reasons: Reasons {
            shards: shards_why,
            disk_bytes: disk_why,
            memory: memory_why,
            connections: conn_why,
        },
        warnings,
    }
}

/// The memory band in percent of data with `features` listed features.
pub fn memory_percent(features: u64) -> (u64, u64) {
    match features {
        0 => MEMORY_PERCENT_95,
        n => (
            MEMORY_PERCENT_95.1,
            (MEMORY_PERCENT_99 + MEMORY_PERCENT_PER_EXTRA_FEATURE * (n - 1)).min(100),
        ),
    }
}

/// Connections needed: peak rps / (1000 / p99 ms), rounded up (spec 8.1.4).
pub fn connections(peak_rps: f64, p99_ms: f64) -> u64 {
    let exact = peak_rps * p99_ms / 1000.0;
    // Products such as 0.1 * 30 land a hair above the integer they are: allow for it.
    let rounded = exact.round();
    if (exact - rounded).abs() < 1e-9 {
        rounded as u64
    } else {
        exact.ceil() as u64
    }
}

fn div_ceil(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

/// A number without a needless `.0`.
pub fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> Inputs {
        Inputs {
            documents: 10_000_000,
            bytes_per_doc: 1_000.0,
            primaries: 5,
            replicas: 1,
            time_series: None,
            peak_rps: 250.0,
            p99_ms: 120.0,
            features: Vec::new(),
            open_files: DEFAULT_OPEN_FILES,
        }
    }

    #[test]
    fn one_index_by_hand() {
        let f = figures(&inputs());
        // shards = p*(1+r) = 5*2 = 10
        assert_eq!(f.shards, 10);
        // data = 1000 B x 10,000,000 x (1+1) = 20,000,000,000 B; disk = x1.2 = 24,000,000,000
        assert_eq!(f.data_bytes, 20_000_000_000);
        assert_eq!(f.disk_bytes, 24_000_000_000);
        // memory 10-30% of 20 GB = 2,000,000,000 .. 6,000,000,000; 50% = 10,000,000,000
        assert_eq!(
            (f.memory_bytes_min, f.memory_bytes_max),
            (2_000_000_000, 6_000_000_000)
        );
        assert_eq!(f.memory_bytes_99, 10_000_000_000);
        // connections = 250 / (1000 / 120) = 250 / 8.333... = 30 exactly
        assert_eq!(f.connections, 30);
        assert!(f.warnings.is_empty());
        assert_eq!(f.reasons.shards, "p*(1+r) = 5*(1+1) for one index");
        assert!(
            f.reasons.connections.contains("= 30"),
            "{}",
            f.reasons.connections
        );
    }

    #[test]
    fn time_series_by_hand() {
        let i = Inputs {
            time_series: Some((2, 30)),
            primaries: 3,
            replicas: 2,
            documents: 1_000_000,
            bytes_per_doc: 512.5,
            peak_rps: 1_000.0,
            p99_ms: 45.5,
            ..inputs()
        };
        let f = figures(&i);
        // 3*(1+2) = 9 per index x 2/day x 30 days = 540
        assert_eq!(f.shards, 540);
        // 512.5 x 1,000,000 x 3 = 1,537,500,000; + 20% = 1,845,000,000
        assert_eq!(f.data_bytes, 1_537_500_000);
        assert_eq!(f.disk_bytes, 1_845_000_000);
        // 1000 x 45.5 / 1000 = 45.5 -> 46
        assert_eq!(f.connections, 46);
        // 540 x 50 = 27,000 files: 41% of 65,535, under the 75% warning
        assert_eq!(f.open_files_estimate, 27_000);
        assert!(f.warnings.is_empty());
    }

    #[test]
    fn features_move_memory_to_the_99_percent_band_and_beyond() {
        assert_eq!(memory_percent(0), (10, 30));
        assert_eq!(memory_percent(1), (30, 50));
        assert_eq!(memory_percent(3), (30, 70));
        assert_eq!(memory_percent(7), (30, 100));
        let i = Inputs {
            features: vec!["highlighting".into(), "aggregations".into()],
            ..inputs()
        };
        let f = figures(&i);
        // 30-60% of 20,000,000,000
        assert_eq!(
            (f.memory_bytes_min, f.memory_bytes_max),
            (6_000_000_000, 12_000_000_000)
        );
        assert!(f.reasons.memory.contains("highlighting, aggregations"));
    }

    #[test]
    fn connections_round_up_but_not_float_noise() {
        assert_eq!(connections(250.0, 120.0), 30);
        assert_eq!(connections(0.1, 30_000.0), 3); // 0.1*30000/1000 = 3.0000000000000004
        assert_eq!(connections(100.0, 15.0), 2); // 1.5 -> 2
        assert_eq!(connections(1.0, 1.0), 1); // 0.001 -> 1
        assert_eq!(connections(0.0, 100.0), 0);
    }

    #[test]
    fn the_open_file_warning_starts_at_75_percent_of_the_budget() {
        // 983 shards x 50 = 49,150 = 74.99% of 65,535: no warning; 984 x 50 = 49,200: warning.
        let below = Inputs {
            primaries: 983,
            replicas: 0,
            ..inputs()
        };
        assert!(figures(&below).warnings.is_empty());
        let at = Inputs {
            primaries: 984,
            replicas: 0,
            ..inputs()
        };
        let w = figures(&at).warnings;
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("984 shards x ~50 open files each = 49200, 75% of the 65535"),
            "{}",
            w[0]
        );
    }
}
