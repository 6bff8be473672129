//! The `_bulk` action count alone (the one NDJSON framer, `searchgate_core::ndjson`, as the
//! edge runs it for single-tenant clusters: `policy::bulk::BulkCounter`) against
//! `memchr::memchr_iter` over the same buffer (issue 33: within 2x of it), both as memchr's
//! own count of the `\n`s (`count()`, vectorised without stopping at a match: the floor)
//! and visiting every `\n` as a framer must (`memchr_iter_each`). Bodies of 1MB, fed in 64KB pieces as the
//! edge reads them; tiny documents (about 60 bytes, the load test's `bulk_tiny`) and 1KB
//! documents. Criterion reports bytes per second; bytes per cycle is that over the clock.
//! Run: `cargo bench --bench ndjson`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use searchgate::policy::bulk::BulkCounter;

const PIECE: usize = 64 * 1024;

/// A `_bulk` body of about `size` bytes: `index` actions naming an index and an id, each
/// with a document of `doc` bytes (its `\n` included).
fn bulk_body(size: usize, doc: usize) -> (Vec<u8>, u64) {
    let mut body = Vec::with_capacity(size + 2 * doc + 64);
    let mut actions = 0;
    while body.len() < size {
        body.extend_from_slice(
            format!("{{\"index\":{{\"_index\":\"logs\",\"_id\":\"{actions}\"}}}}\n").as_bytes(),
        );
        let start = body.len();
        body.extend_from_slice(b"{\"message\":\"");
        body.resize(start + doc - 3, b'x');
        body.extend_from_slice(b"\"}\n");
        actions += 1;
    }
    (body, actions)
}

fn count_vs_memchr(c: &mut Criterion) {
    let mut group = c.benchmark_group("bulk_count_1mb");
    for (name, doc) in [("tiny_60b", 60usize), ("docs_1kb", 1024)] {
        let (body, actions) = bulk_body(1 << 20, doc);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("memchr_iter_count", name),
            &body,
            |b, body| {
                b.iter(|| {
                    let mut lines = 0usize;
                    for piece in body.chunks(PIECE) {
                        lines += memchr::memchr_iter(b'\n', black_box(piece)).count();
                    }
                    assert_eq!(lines as u64, 2 * actions);
                    lines
                })
            },
        );
        // Every line end visited, as a framer must (`count()` alone is memchr's vectorised
        // count, which never stops at a match: the floor for counting lines, shown too).
        group.bench_with_input(
            BenchmarkId::new("memchr_iter_each", name),
            &body,
            |b, body| {
                b.iter(|| {
                    let (mut lines, mut last) = (0usize, 0usize);
                    for piece in body.chunks(PIECE) {
                        for nl in memchr::memchr_iter(b'\n', black_box(piece)) {
                            lines += 1;
                            last = nl;
                        }
                    }
                    assert_eq!(lines as u64, 2 * actions);
                    black_box(last);
                    lines
                })
            },
        );
        group.bench_with_input(BenchmarkId::new("framer_count", name), &body, |b, body| {
            b.iter(|| {
                let mut counter = BulkCounter::new();
                for piece in body.chunks(PIECE) {
                    counter.feed(black_box(piece));
                }
                assert_eq!(counter.actions(), actions);
                counter.actions()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, count_vs_memchr);
criterion_main!(benches);
