//! Throughput of the multitenant rewriting: request paths (classify + plan, the query
//! string read and written again), bodies (a small search body and `_msearch` read
//! strictly and written again, `_bulk` framed line by line), and response un-rewriting.
//! The `_bulk` request filter and the `_bulk` response filter are also measured over the
//! 1MB body of `loadtest/bulk.lua` and an Elasticsearch 7.10 answer to it, next to the
//! single-tenant path's action counting over the same body, so the per-MB cost of the
//! multitenant path shows without a load test (tuning/multitenant-bulk.md), and over 1MB of
//! tiny documents (about 40 bytes, the action lines half the body).
//!
//! Run: `cargo bench --bench tenancy` (`-- tenancy_bulk` for the `_bulk` filters only).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use searchgate::config::ClusterClass;
use searchgate::policy::bulk::BulkCounter;
use searchgate::proto::Method;
use searchgate::request::classify::classify_request;
use searchgate::request::classify::BodyKind;
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
                    now_ms: 0,
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

/// `loadtest/bulk.lua`'s body of `size` bytes: `index` actions with `_index`, `_type` and
/// `_id`, each followed by a site-content document of about 1KB; the last document padded
/// so the body is exactly `size` bytes.
fn loadtest_bulk_body(size: usize) -> Vec<u8> {
    let words = "search cluster index mapping shard replica query analyzer token ";
    let mut b = Vec::with_capacity(size);
    for i in 1.. {
        let action = format!(
            "{{\"index\":{{\"_index\":\"site\",\"_type\":\"doc\",\"_id\":\"page-{i:06}\"}}}}\n"
        );
        let doc = format!(
            "{{\"objectID\":\"page-{i:06}\",\"date\":1714000000,\"description\":\"{d}\",\"dir\":\"docs/guide/\",\
             \"expirydate\":1893456000,\"fuzzywordcount\":1200,\"keywords\":[\"search\",\"hosting\"],\
             \"kind\":\"page\",\"lang\":\"en\",\"lastmod\":1714003600,\"permalink\":\"https://example.org/docs/guide/page-{i:06}/\",\
             \"publishdate\":\"2024-04-25T00:00:00Z\",\"readingtime\":6,\"relpermalink\":\"/docs/guide/page-{i:06}/\",\
             \"summary\":\"{s}\",\"title\":\"Guide page {i}\",\"type\":\"docs\",\"url\":\"/docs/guide/page-{i:06}/\",\
             \"weight\":{w},\"wordcount\":1187,\"section\":\"docs\",\"tags\":[\"guide\",\"search\"],\
             \"categories\":[\"documentation\"],\"authors\":[\"searchgate\"]}}\n",
            d = words.repeat(2),
            s = words.repeat(6),
            w = i % 100
        );
        if b.len() + action.len() + doc.len() + 256 > size {
            let head = format!("{action}{{\"objectID\":\"page-last\",\"summary\":\"");
            let pad = size - b.len() - head.len() - 3;
            b.extend_from_slice(head.as_bytes());
            b.resize(b.len() + pad, b'x');
            b.extend_from_slice(b"\"}\n");
            break;
        }
        b.extend_from_slice(action.as_bytes());
        b.extend_from_slice(doc.as_bytes());
    }
    b
}

/// About 1MB of tiny documents (`loadtest/run.py`'s `bulk_tiny` shape, issue 33): an
/// `index` action with `_index` and `_id`, then a document of about 40 bytes.
fn tiny_bulk_body() -> Vec<u8> {
    let mut b = Vec::new();
    let mut i = 0;
    while b.len() < 1 << 20 {
        b.extend_from_slice(
            format!("{{\"index\":{{\"_index\":\"logs\",\"_id\":\"{i}\"}}}}\n{{\"n\":{i},\"msg\":\"tiny event\",\"ok\":true}}\n")
                .as_bytes(),
        );
        i += 1;
    }
    b
}

fn rewrite_in_chunks(p: Prefix, body: &[u8], chunk: usize, out: &mut Vec<u8>) -> u64 {
    let mut rw = BulkRewriter::new(p, u64::MAX);
    out.clear();
    for piece in body.chunks(chunk) {
        rw.feed(piece, out).unwrap();
    }
    rw.finish(out).unwrap();
    rw.actions()
}

fn bulk(c: &mut Criterion) {
    let p = prefix();
    let body = bulk_body();
    let mut g = c.benchmark_group("tenancy_bulk");
    g.throughput(Throughput::Bytes(body.len() as u64));
    let mut out = Vec::with_capacity(body.len() + body.len() / 4);
    g.bench_function("rewrite_1mb_64k_chunks", |b| {
        b.iter(|| black_box((rewrite_in_chunks(p, &body, 64 << 10, &mut out), out.len())))
    });
    // The load test's body: what the edge does per 1MB `_bulk` of `tenancy_bench.sh`.
    let lt = loadtest_bulk_body(1 << 20);
    g.throughput(Throughput::Bytes(lt.len() as u64));
    g.bench_function("loadtest_body_rewrite_1mb_whole", |b| {
        b.iter(|| black_box((rewrite_in_chunks(p, &lt, lt.len(), &mut out), out.len())))
    });
    g.bench_function("loadtest_body_rewrite_1mb_64k_chunks", |b| {
        b.iter(|| black_box((rewrite_in_chunks(p, &lt, 64 << 10, &mut out), out.len())))
    });
    // The single-tenant path over the same body: actions counted, bytes passed as they are.
    g.bench_function("loadtest_body_single_tenant_count_1mb", |b| {
        b.iter(|| {
            let mut counter = BulkCounter::new();
            black_box(counter.feed(black_box(&lt)))
        })
    });
    // Tiny documents: the action lines are half the body (issue 33).
    let tiny = tiny_bulk_body();
    g.throughput(Throughput::Bytes(tiny.len() as u64));
    g.bench_function("tiny_docs_rewrite_1mb_64k_chunks", |b| {
        b.iter(|| black_box((rewrite_in_chunks(p, &tiny, 64 << 10, &mut out), out.len())))
    });
    g.bench_function("tiny_docs_single_tenant_count_1mb", |b| {
        b.iter(|| {
            let mut counter = BulkCounter::new();
            black_box(counter.feed(black_box(&tiny)))
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
        now_ms: 0,
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

/// An Elasticsearch 7.10 answer to a `_bulk` of `index` actions, about 1MB: one item per
/// action, each with the prefixed `_index` the upstream echoes.
fn bulk_response(p: &Prefix) -> Vec<u8> {
    let mut body = b"{\"took\":30,\"errors\":false,\"items\":[".to_vec();
    let mut i = 0;
    while body.len() < 1 << 20 {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(
            format!(
                "{{\"index\":{{\"_index\":\"{}site\",\"_type\":\"_doc\",\"_id\":\"page-{i:06}\",\"_version\":1,\"result\":\"created\",\"_shards\":{{\"total\":2,\"successful\":1,\"failed\":0}},\"_seq_no\":{i},\"_primary_term\":1,\"status\":201}}}}",
                p.as_str()
            )
            .as_bytes(),
        );
        i += 1;
    }
    body.extend_from_slice(b"]}");
    body
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
        kind: searchgate::request::classify::ResponseKind::Strip,
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
    // One small search answer with the rewriter set up for it, as for every response of a
    // multitenant cluster: the per-response cost (tuning/multitenant-bulk.md).
    let small = &body[..body[400..].iter().position(|&c| c == b',').unwrap() + 400];
    g.throughput(Throughput::Bytes(small.len() as u64));
    g.bench_function("strip_small_search_response_with_setup", |b| {
        b.iter(|| {
            let mut rw = ResponseRewriter::new(p, plan, 200, Some(b"application/json"), None);
            out.clear();
            rw.feed(small, &mut out);
            rw.finish(&mut out);
            black_box(out.len());
        })
    });
    let bulk = bulk_response(&p);
    g.throughput(Throughput::Bytes(bulk.len() as u64));
    g.bench_function("strip_1mb_bulk_response_64k_chunks", |b| {
        b.iter(|| {
            let mut rw = ResponseRewriter::new(p, plan, 200, Some(b"application/json"), None);
            out.clear();
            for chunk in bulk.chunks(64 * 1024) {
                rw.feed(chunk, &mut out);
            }
            rw.finish(&mut out);
            black_box(out.len());
        })
    });
    g.finish();
}

/// What compression costs the multitenant class (issue 29): inflating a gzip `_bulk` body
/// of about 1MB (bounded by the body limit) and gzip-compressing a rewritten response of
/// the same size as it streams, in 32KB pieces.
fn compression(c: &mut Criterion) {
    use searchgate::tenancy::encoding::{inflate, Coding, GzipStream};
    let body = loadtest_bulk_body(1 << 20);
    let mut gz = GzipStream::default();
    let mut packed = Vec::new();
    for piece in body.chunks(32 << 10) {
        packed.extend_from_slice(gz.feed(piece));
    }
    packed.extend_from_slice(gz.finish());
    let mut group = c.benchmark_group("compression");
    group.throughput(Throughput::Bytes(body.len() as u64));
    let mut out = Vec::with_capacity(body.len());
    group.bench_function("inflate_gzip_bulk_1mb", |b| {
        b.iter(|| {
            inflate(Coding::Gzip, black_box(&packed), 40 << 20, &mut out).expect("inflates");
            black_box(out.len())
        })
    });
    group.bench_function("gzip_response_1mb_in_32kb_pieces", |b| {
        b.iter(|| {
            let mut gz = GzipStream::default();
            let mut n = 0;
            for piece in body.chunks(32 << 10) {
                n += gz.feed(black_box(piece)).len();
            }
            n + gz.finish().len()
        })
    });
    group.finish();
}

criterion_group!(benches, paths, bodies, bulk, response, compression);
criterion_main!(benches);
