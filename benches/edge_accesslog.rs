//! Access-log line formatting: one line per request into the core's buffer, written out in
//! 32KB batches (here to /dev/null, so the figure is the formatting plus the amortised
//! write). Run: `cargo bench --bench edge_accesslog`.

use std::hint::black_box;
use std::time::{Duration, SystemTime};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use searchgate::edge::accesslog::{AccessLog, Entry};

fn access_log(c: &mut Criterion) {
    let mut log = AccessLog::open(Some("/dev/null")).expect("/dev/null opens");
    let now = SystemTime::UNIX_EPOCH + Duration::from_millis(1_763_780_000_123);
    let mut group = c.benchmark_group("access_log");
    group.throughput(Throughput::Elements(1));
    for (name, target) in [
        ("search", &b"/books/_search?q=title:rust&size=10"[..]),
        ("bulk", &b"/_bulk"[..]),
    ] {
        let entry = Entry {
            cluster: "acme",
            key: None,
            client: "10.1.2.3:52344".parse().expect("address"),
            method: b"POST",
            target,
            status: 200,
            bytes_in: 312,
            bytes_out: 4096,
            queue_us: 0,
            total_us: 1375,
        };
        group.bench_function(name, |b| b.iter(|| log.record(black_box(&entry), now)));
    }
    group.finish();
}

criterion_group!(benches, access_log);
criterion_main!(benches);
