//! The edge's per-request decisions, each on its own: routing over a registry snapshot of
//! 100k clusters (by Host and by username), the Basic credentials check (plain comparison
//! as the baseline, and the salted HMAC-SHA256 of the stored hash the edge now does), the allowance
//! (acquire and release, alone and with another thread on the same counter), and counting
//! the actions of a 5MB `_bulk` body as the edge does for single-tenant clusters
//! (`policy::bulk::BulkCounter`); and the whole `policy::decide` of one small search (route,
//! credentials, classification, mode, forward target), as the edge takes it per request;
//! and what a cluster key adds to it (issue 29): the role from the table, the index
//! expression confined to the key's patterns, a browser origin looked up; and the map
//! the request path looks clusters up in, against the single map it replaced (`lookup_100k`).
//! Run: `cargo bench --bench policy`.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use searchgate::policy::admit::{Admission, Allowance};
use searchgate::policy::auth::{credentials_match, parse_basic, MAX_CREDENTIALS};
use searchgate::policy::bulk::BulkCounter;
use searchgate::policy::cors::listed;
use searchgate::policy::decide::{decide, Listener, Targets};
use searchgate::policy::keys::{permits, scope_path, Role};
use searchgate::policy::route::{normalize_host, route};
use searchgate::proto::Method;
use searchgate::proto::{HeadLimits, RequestHead};
use searchgate::request::classify::{classify_request, ClusterClass};

mod support;
use support::snapshot;

const CLUSTERS: usize = 100_000;

fn routing(c: &mut Criterion) {
    let snap = snapshot(CLUSTERS);
    let hosts: Vec<Vec<u8>> = (0..1024)
        .map(|i| format!("C{}-X7F3.us-east-1.search.example:9243", i * 97 % CLUSTERS).into_bytes())
        .collect();
    let users: Vec<Vec<u8>> = (0..1024)
        .map(|i| format!("user{}", i * 89 % CLUSTERS).into_bytes())
        .collect();
    let mut group = c.benchmark_group("route_100k_clusters");
    group.throughput(Throughput::Elements(1));
    let mut i = 0usize;
    group.bench_function("by_host", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            let mut scratch = [0u8; 253];
            let host = normalize_host(black_box(&hosts[i]), &mut scratch).expect("host");
            black_box(route(&snap, host, None).expect("routed").id.len())
        })
    });
    let mut by_user = snapshot(CLUSTERS);
    by_user.route_by_username = true;
    group.bench_function("by_username", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            let user = black_box(&users[i][..]);
            black_box(
                route(&by_user, "localhost", Some(user))
                    .expect("routed")
                    .id
                    .len(),
            )
        })
    });
    group.bench_function("unknown_host", |b| {
        b.iter(|| {
            let mut scratch = [0u8; 253];
            let host = normalize_host(black_box(b"nope.us-east-1.search.example"), &mut scratch)
                .expect("host");
            black_box(route(&snap, host, None).is_err())
        })
    });
    group.finish();
}

/// The request path's map alone, in one binary (so build and code layout weigh on each
/// alike): 100k `<hostname>.<region>` keys to a cluster, looked up in the order
/// `route_100k_clusters` uses. `single_map`: one std `HashMap` to an index into a `Vec` of
/// clusters (the snapshot before the catalog became persistent: every change rebuilt it
/// whole); `two_hashes`: 256 shards picked by an Fx hash of the key, each a std `HashMap`
/// that hashes the key again (the first persistent version); `lookup`: the snapshot's
/// `registry::lookup::Lookup` (one keyed hash picks the shard and finds the entry).
fn lookups(c: &mut Criterion) {
    use searchgate::registry::lookup::Lookup;
    use std::collections::HashMap;
    use std::hash::BuildHasher;
    let keys: Vec<String> = (0..CLUSTERS)
        .map(|i| format!("c{i}-x7f3.us-east-1"))
        .collect();
    let probes: Vec<String> = (0..1024).map(|i| keys[i * 97 % CLUSTERS].clone()).collect();
    let values: Vec<Arc<String>> = keys.iter().map(|k| Arc::new(k.clone())).collect();
    let single: HashMap<String, usize> = keys.iter().cloned().zip(0..).collect();
    let mut shards: Vec<Arc<HashMap<String, Arc<String>>>> =
        (0..256).map(|_| Arc::new(HashMap::new())).collect();
    let shard_of = |k: &str| rustc_hash::FxBuildHasher.hash_one(k) as usize % 256;
    let mut lookup = Lookup::default();
    for (k, v) in keys.iter().zip(&values) {
        Arc::make_mut(&mut shards[shard_of(k)]).insert(k.clone(), v.clone());
        lookup.insert(k.clone(), v.clone());
    }
    let mut group = c.benchmark_group("lookup_100k");
    group.throughput(Throughput::Elements(1));
    let mut i = 0usize;
    group.bench_function("single_map", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            let k = black_box(probes[i].as_str());
            black_box(single.get(k).map(|&n| values[n].len()))
        })
    });
    group.bench_function("two_hashes", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            let k = black_box(probes[i].as_str());
            black_box(shards[shard_of(k)].get(k).map(|v| v.len()))
        })
    });
    group.bench_function("lookup", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            let k = black_box(probes[i].as_str());
            black_box(lookup.get(k).map(|v| v.len()))
        })
    });
    group.finish();
}

fn basic_auth(c: &mut Criterion) {
    let value = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("user4242:pass4242x0123456789")
    );
    let mut group = c.benchmark_group("basic_auth");
    group.throughput(Throughput::Elements(1));
    group.bench_function("parse_and_check", |b| {
        b.iter(|| {
            let mut scratch = [0u8; MAX_CREDENTIALS];
            let (user, pass) =
                parse_basic(black_box(value.as_bytes()), &mut scratch).expect("credentials");
            black_box(credentials_match(
                user,
                pass,
                b"user4242",
                b"pass4242x0123456789",
            ))
        })
    });
    // What the edge does since passwords are stored hashed: `Cluster::accepts` (username
    // compared, salted HMAC-SHA256 of the password checked, both constant-time).
    let snap = snapshot(1);
    let cluster = snap.clusters().next().expect("a cluster").clone();
    let now = Instant::now();
    let one = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("user0:pass0x0123456789")
    );
    group.bench_function("parse_and_check_hashed", |b| {
        b.iter(|| {
            let mut scratch = [0u8; MAX_CREDENTIALS];
            let (user, pass) =
                parse_basic(black_box(one.as_bytes()), &mut scratch).expect("credentials");
            black_box(cluster.accepts(user, pass, now))
        })
    });
    group.bench_function("hashed_check_only", |b| {
        b.iter(|| {
            black_box(cluster.accepts(black_box(b"user0"), black_box(b"pass0x0123456789"), now))
        })
    });
    group.finish();
}

/// Acquire and release once; the permit is dropped at once.
fn acquire_release(a: &Arc<Allowance>) -> bool {
    match a.acquire() {
        Admission::Granted(p) => {
            drop(black_box(p));
            true
        }
        _ => false,
    }
}

fn allowance(c: &mut Criterion) {
    let mut group = c.benchmark_group("allowance");
    group.throughput(Throughput::Elements(1));
    let a = Arc::new(Allowance::new(64, 64));
    group.bench_function("uncontended", |b| b.iter(|| acquire_release(&a)));
    // Another thread acquires and releases the same allowance in a loop meanwhile (both
    // cores on one counter, as when one cluster's requests arrive on every core).
    group.bench_function("contended_2_threads", |b| {
        b.iter_custom(|iters| {
            let a = Arc::new(Allowance::new(64, 64));
            let stop = Arc::new(AtomicBool::new(false));
            let other = {
                let (a, stop) = (a.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        acquire_release(&a);
                    }
                })
            };
            std::thread::sleep(Duration::from_millis(1));
            let start = Instant::now();
            for _ in 0..iters {
                acquire_release(&a);
            }
            let took = start.elapsed();
            stop.store(true, Ordering::Relaxed);
            other.join().expect("the other thread ends");
            took
        })
    });
    group.finish();
}

/// An NDJSON bulk body of about `size` bytes whose documents are `doc` bytes long.
fn bulk_body(size: usize, doc: usize) -> Vec<u8> {
    let action = b"{\"index\":{\"_index\":\"books\"}}\n";
    let mut line = b"{\"title\":\"".to_vec();
    line.resize(doc - 3, b'x');
    line.extend_from_slice(b"\"}\n");
    let mut body = Vec::with_capacity(size + doc + action.len());
    while body.len() < size {
        body.extend_from_slice(action);
        body.extend_from_slice(&line);
    }
    body
}

fn bulk_counting(c: &mut Criterion) {
    let mut group = c.benchmark_group("bulk_count_5mb");
    for doc in [50usize, 300, 1000, 2000] {
        let body = bulk_body(5 << 20, doc);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(BenchmarkId::new("doc_bytes", doc), &body, |b, body| {
            b.iter(|| {
                let mut counter = BulkCounter::new();
                // In 64KB pieces, as the edge reads them.
                for piece in body.chunks(64 * 1024) {
                    counter.feed(black_box(piece));
                }
                counter.actions()
            })
        });
    }
    group.finish();
}

/// One small search, decided as the edge decides every request (the head parsed already).
fn deciding(c: &mut Criterion) {
    let snap = snapshot(CLUSTERS);
    let raw = format!(
        "GET /books/_search?q=title:dune HTTP/1.1\r\nHost: c4242-x7f3.us-east-1.search.example:9243\r\n\
         Authorization: Basic {}\r\nUser-Agent: bench\r\nAccept: application/json\r\n\r\n",
        base64::engine::general_purpose::STANDARD.encode("user4242:pass4242x0123456789")
    )
    .into_bytes();
    let mut head = RequestHead::new();
    assert_eq!(head.parse(&raw, &HeadLimits::default()), Ok(true));
    let listener = Listener {
        client: std::net::IpAddr::from([203, 0, 113, 7]),
        sni: None,
        max_body: 40 << 20,
        ids: None,
        wall_ms: 1_711_108_800_000,
    };
    let mut targets = Targets::default();
    let mut group = c.benchmark_group("decide_100k_clusters");
    group.throughput(Throughput::Elements(1));
    group.bench_function("small_search", |b| {
        b.iter(|| {
            let d = decide(
                &snap,
                black_box(&head),
                &raw,
                &listener,
                Instant::now(),
                &mut targets,
            )
            .expect("forwarded");
            black_box((d.cluster.id.len(), targets.target.len()))
        })
    });
    group.finish();
}

/// What a key adds to a decision: its role, its index patterns on a wildcard search (the
/// path confined and written again), the request's origin against its list.
fn key_checks(c: &mut Criterion) {
    let classified = classify_request(Method::Get, b"/*/_search", ClusterClass::SingleTenant)
        .expect("classified");
    let patterns = vec!["site*".to_string(), "docs".to_string()];
    let origins = vec![
        "http://localhost:1313".to_string(),
        "https://blog.example".to_string(),
    ];
    let mut group = c.benchmark_group("keys");
    group.throughput(Throughput::Elements(1));
    group.bench_function("role_and_indices", |b| {
        b.iter(|| {
            permits(Role::Search, Method::Get, black_box(&classified)).expect("allowed");
            let path = scope_path(&patterns, Method::Get, &classified).expect("confined");
            black_box(path)
        })
    });
    group.bench_function("origin", |b| {
        b.iter(|| black_box(listed(&origins, black_box(b"https://blog.example"))))
    });
    group.finish();
}

criterion_group!(
    benches,
    key_checks,
    lookups,
    routing,
    basic_auth,
    allowance,
    bulk_counting,
    deciding
);
criterion_main!(benches);
