//! Throughput of the multitenant rewriting: request paths (classify + plan, the query
//! string read and written again), bodies (a small search body and `_msearch` read
//! strictly and written again, `_bulk` framed line by line), and response un-rewriting.
//!
//! Run: `cargo bench --bench tenancy`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use searchgate::config::ClusterClass;
use searchgate::policy::classify::classify_request;
use searchgate::policy::classify::BodyKind;
use searchgate::proto::Method;
use searchgate::tenancy::{
    plan_request, rewrite_json_body, BulkRewriter, MsearchRewriter, Prefix, ResponsePlan,
    ResponseRewriter, TenancyKey, Tenant,
};

const TARGETS: &[(Method, &str, Option<&str>)] = &[
    (Method::Get, "/books/_search", Some("q=title:rust&size=10")),
    (Method::Post, "/_bulk", None),
    (Method::Get, "/logs-*,-logs-old/_count", None),
    (Method::Get, "/_cat/indices", Some("v")),
    (Method::Put, "/books/_doc/42", Some("refresh=true")),
];

fn prefix() -> Prefix {
    Prefix::derive(&TenancyKey::from_bytes([7; 32]), "bench-cluster")
}

fn paths(c: &mut Criterion) {
    let p = prefix();
    let bytes: usize = TARGETS
        .iter()
        .map(|(_, path, q)| path.len() + q.map_or(0, str::len))
        .sum();
    let mut g = c.benchmark_group("tenancy_path");
    g.throughput(Throughput::Bytes(bytes as u64));
    let mut target = Vec::with_capacity(256);
    g.bench_function("classify_and_rewrite_5_targets", |b| {
        b.iter(|| {
            for (m, path, q) in TARGETS {
                let req = classify_request(*m, path.as_bytes(), ClusterClass::Multitenant).unwrap();
                target.clear();
                let t = Tenant {
                    prefix: &p,
                    ids: None,
                };
                let plan = plan_request(&t, &req, q.map(str::as_bytes), &mut target).unwrap();
                black_box((&target, plan));
            }
        })
    });
    g.bench_function("classify_only_5_targets_single_tenant", |b| {
        b.iter(|| {
            for (m, path, _) in TARGETS {
                black_box(
                    classify_request(*m, path.as_bytes(), ClusterClass::SingleTenant)
                        .unwrap()
                        .class,
                );
            }
        })
    });
    g.finish();
}

/// About 1MB of bulk: action lines with `_index`, ~230-byte documents, some deletes.
fn bulk_body() -> Vec<u8> {
    let mut b = Vec::new();
    let mut i = 0;
    while b.len() < 1 << 20 {
        if i % 10 == 9 {
            b.extend_from_slice(
                format!("{{\"delete\":{{\"_index\":\"books\",\"_id\":\"{i}\"}}}}\n").as_bytes(),
            );
        } else {
            b.extend_from_slice(
                format!(
                    "{{\"index\":{{\"_index\":\"books-{}\",\"_type\":\"doc\",\"_id\":\"{i}\"}}}}\n",
                    i % 3
                )
                .as_bytes(),
            );
            b.extend_from_slice(
                format!("{{\"title\":\"Page {i}\",\"url\":\"/posts/{i}/\",\"summary\":\"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua\",\"wordcount\":{i},\"tags\":[\"a\",\"b\"]}}\n")
                    .as_bytes(),
            );
        }
        i += 1;
    }
    b
}

fn bulk(c: &mut Criterion) {
    let p = prefix();
    let body = bulk_body();
    let mut g = c.benchmark_group("tenancy_bulk");
    g.throughput(Throughput::Bytes(body.len() as u64));
    let mut out = Vec::with_capacity(body.len() + body.len() / 4);
    g.bench_function("rewrite_1mb_64k_chunks", |b| {
        b.iter(|| {
            let mut rw = BulkRewriter::new(p, u64::MAX);
            out.clear();
            for chunk in body.chunks(64 * 1024) {
                rw.feed(chunk, &mut out).unwrap();
            }
            rw.finish(&mut out).unwrap();
            black_box((rw.actions(), out.len()));
        })
    });
    g.finish();
}

/// A typical small search body (about 300 bytes): a bool query, a sort, an aggregation.
const SEARCH: &str = r#"{"query":{"bool":{"must":[{"match":{"title":{"query":"rust edge proxy","operator":"and"}}}],"filter":[{"range":{"date":{"gte":"now-30d/d"}}},{"terms":{"tags":["a","b","c"]}}]}},"sort":[{"date":"desc"},"_score"],"size":10,"from":0,"aggs":{"tags":{"terms":{"field":"tags","size":10}}},"_source":["title","date"]}"#;

fn bodies(c: &mut Criterion) {
    let p = prefix();
    let t = Tenant {
        prefix: &p,
        ids: None,
    };
    let mut g = c.benchmark_group("tenancy_body");
    let mut out = Vec::with_capacity(4096);
    g.throughput(Throughput::Bytes(SEARCH.len() as u64));
    g.bench_function("search_body_small_read_and_written", |b| {
        b.iter(|| {
            out.clear();
            rewrite_json_body(&t, BodyKind::Search, SEARCH.as_bytes(), &mut out).unwrap();
            black_box(out.len());
        })
    });
    let mut ms = String::new();
    for i in 0..10 {
        ms.push_str(&format!("{{\"index\":\"books-{i}\"}}\n{SEARCH}\n"));
    }
    g.throughput(Throughput::Bytes(ms.len() as u64));
    g.bench_function("msearch_10_pairs", |b| {
        b.iter(|| {
            out.clear();
            let mut rw = MsearchRewriter::new(p);
            rw.feed(ms.as_bytes(), &mut out).unwrap();
            rw.finish(&mut out).unwrap();
            black_box(out.len());
        })
    });
    g.finish();
}

fn response(c: &mut Criterion) {
    let p = prefix();
    let mut body = Vec::new();
    let mut i = 0;
    while body.len() < 1 << 20 {
        body.extend_from_slice(
            format!("{{\"_index\":\"{}books\",\"_id\":\"{i}\",\"_score\":1.0,\"_source\":{{\"title\":\"Page {i}\",\"summary\":\"Lorem ipsum dolor sit amet, consectetur adipiscing elit\"}}}},", p.as_str())
                .as_bytes(),
        );
        i += 1;
    }
    let plan = ResponsePlan {
        kind: searchgate::policy::classify::ResponseKind::Strip,
        verbose: false,
        help: false,
        ids: None,
    };
    let mut g = c.benchmark_group("tenancy_response");
    g.throughput(Throughput::Bytes(body.len() as u64));
    let mut out = Vec::with_capacity(body.len());
    g.bench_function("strip_1mb_search_64k_chunks", |b| {
        b.iter(|| {
            let mut rw = ResponseRewriter::new(p, plan, 200, Some(b"application/json"), None);
            out.clear();
            for chunk in body.chunks(64 * 1024) {
                rw.feed(chunk, &mut out);
            }
            rw.finish(&mut out);
            black_box(out.len());
        })
    });
    g.finish();
}

criterion_group!(benches, paths, bodies, bulk, response);
criterion_main!(benches);
