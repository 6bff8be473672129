//! Request metrics of the edge and what reads them.
//!
//! Owns: the per-core recording of each request ([`CoreMetrics`], `record`: lock-free, no
//! allocation on the request path), the [`MetricsHub`] where the cores' samples are
//! counted and merged (`hub`): cumulative per-cluster counters and fixed-bucket histograms
//! for Prometheus (`buckets`), and a one-hour ring of per-minute HdrHistograms per cluster
//! under a byte budget (`window`); and the pure renderers the admin API mounts: Prometheus
//! text (`expose`), the latency report with HdrHistogram's percentile distribution
//! (`latency`), the SVG plot (`plot`), interval logs (`intervallog`), and the process
//! figures read from `/proc` (`process`); and the counts of contained faults (`faults`).
//!
//! Must not touch: sockets and request handling (the edge records, the admin API serves),
//! the registry beyond reading allowance gauges for the exposition.

pub mod buckets;
pub mod distribution;
pub mod expose;
pub mod faults;
pub mod fleet;
pub mod hub;
pub mod intervallog;
pub mod latency;
pub mod plot;
pub mod process;
mod record;
pub mod window;

pub use hub::{ClusterTotals, CoreTotals, HubSnapshot, MetricsHub, WindowData};
pub use record::{CoreMetrics, Sample, MAX_BUFFERED};
pub use window::Metric;
