//! What the metrics cost: recording one request on a core (`CoreMetrics::record`), the
//! hub counting a core's hand-over (per sample: cumulative buckets and the latency
//! window), and a Prometheus scrape (snapshot + rendering) with 1,000 clusters that all
//! had traffic. Then, outside criterion, the memory the hub holds after five minutes of
//! 100k requests per second spread over 1,000 and over 100,000 clusters (printed).
//! Run: `cargo bench --bench metrics`.

use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use searchgate::metrics::expose::prometheus;
use searchgate::metrics::process::ProcessFigures;
use searchgate::metrics::{CoreMetrics, MetricsHub, Sample};
mod support;
use support::snapshot;

/// A small search's sample with a latency that varies like a real one (0.3-3 ms).
fn sample(i: u64) -> Sample {
    let total = 300 + (i.wrapping_mul(2654435761) >> 7) % 2700;
    Sample {
        status: if i % 100 == 0 { 429 } else { 200 },
        bytes_in: 180,
        bytes_out: 420,
        queued_us: (i % 10 == 0).then_some(total / 3),
        upstream_us: Some(total * 2 / 3),
        total_us: total,
    }
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("c{i}")).collect()
}

fn recording(c: &mut Criterion) {
    let ids = names(1000);
    let mut g = c.benchmark_group("metrics");
    g.throughput(Throughput::Elements(1));
    g.bench_function("record_one_request", |b| {
        let mut core = CoreMetrics::default();
        let hub = MetricsHub::default();
        let mut i = 0u64;
        b.iter(|| {
            i += 1;
            core.record(black_box(&ids[(i % 1000) as usize]), &sample(i));
            if core.buffered() >= 100_000 {
                hub.absorb(&mut core); // as a core's housekeeping does, off this figure's path
            }
        });
    });
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("hub_counts_10k_samples_of_1000_clusters", |b| {
        let hub = MetricsHub::default();
        let mut core = CoreMetrics::default();
        let t = SystemTime::now();
        let mut i = 0u64;
        b.iter(|| {
            for _ in 0..10_000 {
                i += 1;
                core.record(&ids[(i % 1000) as usize], &sample(i));
            }
            hub.absorb_at(&mut core, t);
        });
    });
    g.finish();
}

fn scrape(c: &mut Criterion) {
    let registry = snapshot(1000);
    let hub = MetricsHub::default();
    let mut core = CoreMetrics::default();
    let ids = names(1000);
    for i in 0..200_000u64 {
        core.record(&ids[(i % 1000) as usize], &sample(i));
    }
    let now = SystemTime::now();
    hub.absorb_at(&mut core, now);
    let process = ProcessFigures::read();
    let text = prometheus(&hub.snapshot(now), &registry, &process);
    eprintln!(
        "scrape of 1000 clusters: {} bytes, {} lines",
        text.len(),
        text.lines().count()
    );
    let mut g = c.benchmark_group("metrics");
    g.sample_size(20);
    g.bench_function("scrape_1000_clusters", |b| {
        b.iter(|| prometheus(&hub.snapshot(now), &registry, &process).len());
    });
    g.bench_function("latency_report_5m", |b| {
        b.iter(|| {
            searchgate::metrics::latency::report(&hub, "c7", Duration::from_secs(300), now)
                .total
                .count
        });
    });
    g.finish();
}

/// Five minutes of `rate` requests/s over `clusters` clusters, handed over every 100 ms as
/// the cores do; prints what the hub holds.
fn memory(clusters: usize, rate: u64) {
    let hub = MetricsHub::default();
    let mut core = CoreMetrics::default();
    let ids = names(clusters);
    let t0 = 1_700_000_040u64 * 1000;
    let rss0 = ProcessFigures::read().resident_bytes.unwrap_or(0);
    let started = Instant::now();
    let mut i = 0u64;
    for tick in 0..(5 * 60 * 10) {
        for _ in 0..rate / 10 {
            i += 1;
            core.record(
                &ids[(i.wrapping_mul(2654435761) % clusters as u64) as usize],
                &sample(i),
            );
        }
        hub.absorb_at(
            &mut core,
            UNIX_EPOCH + Duration::from_millis(t0 + tick * 100),
        );
    }
    let snap = hub.snapshot(UNIX_EPOCH + Duration::from_millis(t0 + 300_000));
    let rss = ProcessFigures::read().resident_bytes.unwrap_or(0);
    eprintln!(
        "memory, 5 min of {rate} req/s over {clusters} clusters: window {:.1} MiB covering {} s \
         ({} minutes evicted), process RSS +{:.1} MiB; counted {} samples in {:.1} s",
        snap.window_bytes as f64 / (1 << 20) as f64,
        snap.window_covered_secs,
        snap.window_evicted,
        rss.saturating_sub(rss0) as f64 / (1 << 20) as f64,
        i,
        started.elapsed().as_secs_f64()
    );
}

fn memory_figures(_c: &mut Criterion) {
    memory(1_000, 100_000);
    memory(100_000, 100_000);
}

criterion_group!(benches, recording, scrape, memory_figures);
criterion_main!(benches);
