//! What upstream health costs a request on the hot path (issue 28): choosing one node of a
//! pool (`NodeBook::pick`: each node's state read from atomics, power of two choices), the
//! request counted in flight there, the per-core retry budget, and the answer reported to
//! the book (`NodeBook::report`, lock-free while the node is healthy); for a single-node
//! cluster (the edge skips the choice: the baseline), a pool of 3 healthy nodes, and a pool
//! of 3 with one ejected. Run: `cargo bench --bench nodes`.

use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use searchgate::config::HealthSettings;
use searchgate::nodes::{NodeBook, Passive, RetryBudget};

fn pool(n: u16) -> Vec<SocketAddr> {
    (0..n)
        .map(|i| SocketAddr::from(([127, 0, 0, 1], 9300 + i)))
        .collect()
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// One request's bookkeeping as the edge does it: pick, enter, budget, report, leave.
fn request(book: &NodeBook, nodes: &[SocketAddr], budget: &mut RetryBudget, rng: &mut u64) {
    let now = Instant::now();
    let addr = match nodes {
        [one] => *one,
        _ => book
            .pick(nodes, None, now, (xorshift(rng), xorshift(rng)))
            .expect("a node"),
    };
    let guard = book.node(addr).map(|n| n.enter());
    budget.on_request();
    book.report(addr, Passive::Answered, nodes, now);
    drop(black_box(guard));
}

fn bookkeeping(c: &mut Criterion) {
    let settings = Arc::new(HealthSettings {
        passive_failures: 1,
        ..HealthSettings::default()
    });
    let mut g = c.benchmark_group("health_per_request");
    for (name, n, eject) in [
        ("1_node", 1, false),
        ("3_nodes", 3, false),
        ("3_nodes_1_ejected", 3, true),
    ] {
        let book = NodeBook::new(HealthSettings::default());
        let nodes = pool(n);
        book.sync(nodes.iter().map(|a| (*a, settings.clone())));
        if eject {
            book.report(nodes[0], Passive::ConnectionFailed, &nodes, Instant::now());
            assert!(!book.usable(nodes[0], Instant::now()).0, "ejected");
        }
        let mut budget = RetryBudget::new(20, 10);
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        g.bench_function(name, |b| {
            b.iter(|| request(&book, black_box(&nodes), &mut budget, &mut rng))
        });
    }
    // the choice alone, for a pool of 3
    let book = NodeBook::new(HealthSettings::default());
    let nodes = pool(3);
    book.sync(nodes.iter().map(|a| (*a, settings.clone())));
    let mut rng = 1u64;
    g.bench_function("pick_of_3", |b| {
        b.iter(|| {
            let r = (xorshift(&mut rng), xorshift(&mut rng));
            book.pick(black_box(&nodes), None, Instant::now(), r)
        })
    });
    g.finish();
}

criterion_group!(benches, bookkeeping);
criterion_main!(benches);
