//! Codec throughput: head parsing (small GET, a typical Elasticsearch client head, a head
//! with 4KB of headers), body decoding (5MB chunked and Content-Length bodies read in
//! 64KB pieces), and the forwarded request writer. Run: `cargo bench --bench proto`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use searchgate::proto::{
    chunk_size_line, write_forward_request, BodyCursor, ForwardHeaders, ForwardRequest, Framing,
    HeadLimits, Method, RequestHead, ResponseHead, Step, LAST_CHUNK,
};

const SMALL_GET: &[u8] = b"GET / HTTP/1.1\r\nHost: demo.local.localhost:9243\r\n\r\n";

const ES_CLIENT: &[u8] = b"POST /logs-2024.05/_search?typed_keys=true&size=20 HTTP/1.1\r\n\
Host: acme-7f3k.us-east-1.searchgate.example:9243\r\n\
User-Agent: elasticsearch-py/8.13.0 (Python/3.11.4; elastic-transport/8.13.0)\r\n\
Accept-Encoding: gzip\r\n\
Accept: application/vnd.elasticsearch+json; compatible-with=8\r\n\
Connection: keep-alive\r\n\
Authorization: Basic YWNtZS11c2VyLTlmMms6eDd2UXBMMm1OOHJUNHdaMWNFNmI=\r\n\
Content-Type: application/vnd.elasticsearch+json; compatible-with=8\r\n\
x-elastic-client-meta: es=8.13.0,py=3.11.4,t=8.13.0,ur=2.2.1\r\n\
X-Opaque-Id: dashboard-42\r\n\
Content-Length: 187\r\n\r\n";

/// A head with about 4KB of header lines (cookies, tracing), as some gateways send.
fn big_head() -> Vec<u8> {
    let mut msg = b"GET /catalog/_doc/123 HTTP/1.1\r\nHost: acme.us-east-1.localhost\r\n".to_vec();
    for i in 0..32 {
        msg.extend_from_slice(format!("X-Trace-{i:02}: {}\r\n", "t".repeat(112)).as_bytes());
    }
    msg.extend_from_slice(b"\r\n");
    msg
}

fn parse_heads(c: &mut Criterion) {
    let limits = HeadLimits::default();
    let big = big_head();
    let mut group = c.benchmark_group("parse_request_head");
    for (name, msg) in [
        ("small_get", SMALL_GET),
        ("es_client", ES_CLIENT),
        ("4kb_headers", &big[..]),
    ] {
        group.throughput(Throughput::Bytes(msg.len() as u64));
        group.bench_function(name, |b| {
            let mut head = RequestHead::new();
            b.iter(|| {
                assert!(head.parse(black_box(msg), &limits).unwrap());
                black_box(head.counted_len)
            })
        });
    }
    group.finish();

    // Reference: httparse alone on the same heads (no limits, checks or span table).
    let mut group = c.benchmark_group("httparse_baseline");
    for (name, msg) in [
        ("small_get", SMALL_GET),
        ("es_client", ES_CLIENT),
        ("4kb_headers", &big[..]),
    ] {
        group.throughput(Throughput::Bytes(msg.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut headers = [httparse::EMPTY_HEADER; 64];
                let mut req = httparse::Request::new(&mut headers);
                black_box(req.parse(black_box(msg)).unwrap().is_complete())
            })
        });
    }
    group.finish();

    let response = b"HTTP/1.1 200 OK\r\nX-elastic-product: Elasticsearch\r\ncontent-type: application/vnd.elasticsearch+json;compatible-with=8\r\ncontent-length: 1523\r\n\r\n";
    let mut group = c.benchmark_group("parse_response_head");
    group.throughput(Throughput::Bytes(response.len() as u64));
    group.bench_function("es_search", |b| {
        let mut head = ResponseHead::new();
        b.iter(|| {
            assert!(head
                .parse(black_box(response), Method::Post, &limits)
                .unwrap());
            black_box(head.framing)
        })
    });
    group.finish();
}

const BODY: usize = 5 * 1024 * 1024;
const READ: usize = 64 * 1024;

/// A 5MB body chunked as a client streaming `chunk`-byte writes would send it.
fn chunked_body(chunk: usize) -> Vec<u8> {
    let payload = vec![b'x'; BODY];
    let mut wire = Vec::with_capacity(BODY + BODY / 1000 + 16);
    let mut line = [0u8; 18];
    for piece in payload.chunks(chunk) {
        wire.extend_from_slice(chunk_size_line(piece.len(), &mut line));
        wire.extend_from_slice(piece);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(LAST_CHUNK);
    wire
}

/// Decodes `wire` as the edge does: each read adds up to 64KB after the unconsumed bytes.
fn decode_in_reads(framing: Framing, wire: &[u8]) -> u64 {
    let mut cur = BodyCursor::new(framing, 40 * 1024 * 1024, 0).unwrap();
    let mut filled = 0;
    let mut payload = 0u64;
    loop {
        match cur.step(&wire[..filled]).unwrap() {
            Step::Piece(r) => payload += r.len() as u64,
            Step::Done => return payload,
            Step::NeedMore => filled = (filled + READ).min(wire.len()),
        }
    }
}

fn decode_bodies(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode_body_5mb_in_64kb_reads");
    for (name, chunk) in [
        ("chunked_16kb_chunks", 16 * 1024),
        ("chunked_1kb_chunks", 1024),
    ] {
        let wire = chunked_body(chunk);
        group.throughput(Throughput::Bytes(wire.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                assert_eq!(
                    decode_in_reads(Framing::Chunked, black_box(&wire)),
                    BODY as u64
                )
            })
        });
    }
    let plain = vec![b'x'; BODY];
    group.throughput(Throughput::Bytes(plain.len() as u64));
    group.bench_function("content_length", |b| {
        b.iter(|| {
            let framing = Framing::Length(BODY as u64);
            assert_eq!(decode_in_reads(framing, black_box(&plain)), BODY as u64)
        })
    });
    group.finish();
}

fn write_heads(c: &mut Criterion) {
    let limits = HeadLimits::default();
    let mut head = RequestHead::new();
    assert!(head.parse(ES_CLIENT, &limits).unwrap());
    let mut out = Vec::with_capacity(4096);
    let mut group = c.benchmark_group("write_forward_request");
    group.throughput(Throughput::Bytes(ES_CLIENT.len() as u64));
    group.bench_function("es_client", |b| {
        b.iter(|| {
            out.clear();
            let fwd = ForwardRequest {
                target: head.target.of(ES_CLIENT),
                framing: head.framing,
                forwarded_for: b"203.0.113.7",
                forwarded_proto: b"https",
                strip_authorization: true,
                strip_expect: true,
                headers: ForwardHeaders::All,
            };
            write_forward_request(&mut out, &head, black_box(ES_CLIENT), &fwd);
            black_box(out.len())
        })
    });
    group.finish();
}

criterion_group!(benches, parse_heads, decode_bodies, write_heads);
criterion_main!(benches);
