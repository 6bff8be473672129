//! What the planner reads from a running edge's admin API: a cluster's measured peak
//! request rate and p99 (`--from-cluster ID`: `GET /v1/clusters/{id}/latency`), and the
//! plan catalog (`GET /v1/plans`) when the API is reachable.
//!
//! The peak is the busiest interval's mean rate over the window (the edge keeps one-minute
//! intervals, so a burst shorter than a minute is averaged over its minute); the p99 is the
//! upstream time's, the time a request holds a concurrency slot. Spec 8.1.4's connections
//! are those slots (Little's law: arrivals x time held); the queue wait in the whole
//! request's time is what too few of them cause, so counting it would size for the
//! shortage itself.
//!
//! Must not touch: the sizing rules (`rules`), the choice (`catalog`); HTTP only.

use crate::tools::out::errln;
use std::path::Path;

use serde::Serialize;

use super::catalog::Catalog;
use crate::metrics::latency::LatencyReport;
use crate::tools::admin::client::{AdminClient, CallError};
use searchgate_core::percent::encode_component as encode;

/// A cluster's figures as measured by the edge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measured {
    pub cluster: String,
    pub window_secs: u64,
    pub from_unix_ms: Option<u64>,
    pub to_unix_ms: Option<u64>,
    /// Requests in the window.
    pub requests: u64,
    /// The busiest interval's mean rate.
    pub peak_rps: f64,
    /// The upstream time's p99, ms.
    pub p99_ms: f64,
    /// Which time `p99_ms` is of.
    pub p99_of: &'static str,
}

/// The figures of cluster `id` over `window` (e.g. `1h`), from the admin API.
pub fn from_cluster(api: &AdminClient, id: &str, window: &str) -> Result<Measured, String> {
    let path = format!(
        "/v1/clusters/{}/latency?window={}",
        encode(id),
        encode(window)
    );
    let answer = api
        .get(&path)
        .map_err(|e| format!("--from-cluster {id}: {e}"))?;
    let report = LatencyReport::from_json(&answer.to_string())
        .map_err(|e| format!("--from-cluster {id}: {}{path}: {e}", api.url))?;
    measured(&report)
}

/// The figures of a report; an error when it has nothing to size from.
pub fn measured(r: &LatencyReport) -> Result<Measured, String> {
    let upstream = r.upstream.as_ref().filter(|u| u.count > 0);
    let (Some(peak_rps), Some(upstream)) = (r.peak_rps, upstream) else {
        return Err(format!(
            "--from-cluster {}: no request reached its upstream in the last {} s; measure under load, or pass --peak-rps and --p99-ms",
            r.cluster, r.window_secs
        ));
    };
    Ok(Measured {
        cluster: r.cluster.clone(),
        window_secs: r.window_secs,
        from_unix_ms: r.from_unix_ms,
        to_unix_ms: r.to_unix_ms,
        requests: r.total.count,
        peak_rps,
        p99_ms: upstream.p99,
        p99_of: "upstream",
    })
}

/// The catalog: `--config`'s plans; else the admin API's when it is reachable (an error
/// when `--admin-url` or `--token-file` named it and it is not); else the embedded
/// default's. An API that answers with an error is an error, never a silent fallback.
pub fn catalog(
    config: Option<&Path>,
    admin_url: Option<&str>,
    token_file: Option<&Path>,
) -> Result<Catalog, String> {
    if config.is_some() {
        return Catalog::load(config);
    }
    let named = admin_url.is_some() || token_file.is_some();
    let api = match AdminClient::find(admin_url, token_file) {
        Ok(api) => api,
        Err(e) if named => return Err(e.to_string()),
        Err(_) => return Catalog::load(None), // no token: no admin API to ask
    };
    match api.get("/v1/plans") {
        Ok(answer) => Catalog::from_api(&answer, &format!("the admin API at {}", api.url)),
        Err(CallError::Unreachable(e)) if !named => {
            let c = Catalog::load(None)?;
            errln!("searchgate plan: {e}; using the plans of {}", c.source);
            Ok(c)
        }
        Err(e) => Err(format!("the plan catalog: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::window::{new_histogram, IntervalCount};
    use std::time::Duration;

    fn report(upstream_ms: &[u64], requests: &[(u64, u64, u64)]) -> LatencyReport {
        let mut h = [new_histogram(), new_histogram(), new_histogram()];
        for &ms in upstream_ms {
            h[0].record(ms * 1000 + 300).unwrap(); // the whole request: a bit more
            h[2].record(ms * 1000).unwrap();
        }
        let requests = requests
            .iter()
            .map(|&(from, to, n)| IntervalCount {
                from_unix_ms: from,
                to_unix_ms: to,
                requests: n,
            })
            .collect();
        LatencyReport::from_histograms("acme", Duration::from_secs(3600), Some((0, 1)), h)
            .with_requests(requests)
    }

    #[test]
    fn the_peak_minute_and_the_upstream_p99() {
        let ms: Vec<u64> = (1..=100).collect();
        let r = report(&ms, &[(0, 60_000, 60), (60_000, 120_000, 40)]);
        let m = measured(&r).unwrap();
        assert_eq!(m.peak_rps, 1.0); // 60 requests in the busiest minute
        assert!((m.p99_ms - 99.0).abs() <= 1.0, "{}", m.p99_ms);
        assert_eq!(m.p99_of, "upstream");
        assert_eq!(m.requests, 100);
    }

    #[test]
    fn nothing_measured_is_an_error_that_says_what_to_do() {
        let e = measured(&report(&[], &[])).unwrap_err();
        assert!(e.contains("--peak-rps and --p99-ms"), "{e}");
    }

    #[test]
    fn a_named_but_missing_token_is_an_error_an_absent_one_is_not() {
        let e = catalog(None, None, Some(Path::new("/nonexistent/token"))).unwrap_err();
        assert!(e.contains("--token-file"), "{e}");
    }
}
