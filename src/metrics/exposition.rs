//! The metrics in Prometheus' text exposition format (version 0.0.4): per cluster, the
//! requests in flight at its upstream and the requests waiting for an allowance slot
//! (gauges read from the allowance's atomics at scrape time: recording them costs the hot
//! path nothing it does not already do), the allowance itself, and the requests answered
//! by status class (counters folded from the cores about every 100 ms).
//!
//! Pure: figures in, text out. Served by the edge's metrics listener (`[edge] metrics`).
//! Must not touch: sockets, the registry.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::ClusterTotals;

/// The live figures of one cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gauges<'a> {
    pub cluster: &'a str,
    /// Allowance permits out: requests at the upstream now.
    pub in_flight: u32,
    /// Requests waiting for a slot now.
    pub queued: u32,
    /// The plan's concurrency allowance.
    pub allowance: u32,
}

/// A gauge family: name, help text, and how to read it from a cluster's [`Gauges`].
type Family = (&'static str, &'static str, fn(&Gauges<'_>) -> u32);

/// Appends the exposition of `gauges` and the counters of `stats` to `out`.
pub fn render(gauges: &[Gauges<'_>], stats: &HashMap<String, ClusterTotals>, out: &mut String) {
    let families: [Family; 3] = [
        (
            "searchgate_requests_in_flight",
            "Requests of the cluster at its upstream now (allowance permits out).",
            |g| g.in_flight,
        ),
        (
            "searchgate_queue_depth",
            "Requests of the cluster waiting for an allowance slot now.",
            |g| g.queued,
        ),
        (
            "searchgate_allowance",
            "The cluster's concurrency allowance (its plan's).",
            |g| g.allowance,
        ),
    ];
    for (name, help, value) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for g in gauges {
            let _ = writeln!(
                out,
                "{name}{{cluster=\"{}\"}} {}",
                escape(g.cluster),
                value(g)
            );
        }
    }
    let name = "searchgate_requests_total";
    let _ = writeln!(
        out,
        "# HELP {name} Requests answered, by status class.\n# TYPE {name} counter"
    );
    let mut ids: Vec<&String> = stats.keys().collect();
    ids.sort();
    for id in ids {
        for (class, n) in stats[id].status_classes.iter().enumerate() {
            let code = match class {
                1..=5 => format!("{class}xx"),
                _ => "other".to_string(),
            };
            let _ = writeln!(
                out,
                "{name}{{cluster=\"{}\",code=\"{code}\"}} {n}",
                escape(id)
            );
        }
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The value of sample `name` with label `cluster` in an exposition text (for tests and
/// tools that read it back).
pub fn sample(text: &str, name: &str, cluster: &str) -> Option<u64> {
    let prefix = format!("{name}{{cluster=\"{}\"}} ", escape(cluster));
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{CoreMetrics, MetricsHub, Sample};

    #[test]
    fn gauges_and_counters_in_the_text_format() {
        let hub = MetricsHub::default();
        let mut core = CoreMetrics::default();
        for status in [200, 201, 429] {
            let s = Sample {
                status,
                ..Sample::default()
            };
            core.record("acme", &s);
        }
        hub.absorb(&mut core);
        let gauges = [
            Gauges {
                cluster: "acme",
                in_flight: 2,
                queued: 5,
                allowance: 2,
            },
            Gauges {
                cluster: "we\"ird",
                in_flight: 0,
                queued: 0,
                allowance: 1,
            },
        ];
        let mut out = String::new();
        render(&gauges, &hub.all(), &mut out);
        assert_eq!(
            sample(&out, "searchgate_requests_in_flight", "acme"),
            Some(2)
        );
        assert_eq!(sample(&out, "searchgate_queue_depth", "acme"), Some(5));
        assert_eq!(sample(&out, "searchgate_allowance", "we\"ird"), Some(1));
        assert!(out.contains("searchgate_queue_depth{cluster=\"we\\\"ird\"} 0\n"));
        assert!(out.contains("searchgate_requests_total{cluster=\"acme\",code=\"2xx\"} 2\n"));
        assert!(out.contains("searchgate_requests_total{cluster=\"acme\",code=\"4xx\"} 1\n"));
        assert!(out.contains("# TYPE searchgate_queue_depth gauge\n"));
        // Every line is a comment or `name{labels} value`.
        for line in out.lines() {
            assert!(
                line.starts_with("# ")
                    || line
                        .rsplit_once(' ')
                        .is_some_and(|(_, v)| v.parse::<u64>().is_ok()),
                "{line}"
            );
        }
    }
}
