//! The fast upstream of the load tests: a minimal HTTP/1.1 server that answers every
//! request with a fixed small JSON body (a search result, or a bulk result for paths ending
//! in `_bulk`), reads and discards request bodies of any size (Content-Length or chunked),
//! keeps connections alive and answers pipelined requests in order.
//!
//! It must never be the bottleneck of a proxy comparison: one thread, one monoio runtime
//! (epoll by default, `--driver uring` for io_uring), one 256KB buffer per connection, no
//! allocation per request, the response bytes built once at start.
//!
//! Run: `cargo run --release --example loadtest_upstream -- [--listen 127.0.0.1:0]
//! [--driver epoll|uring]`; it prints `upstream: listening ADDR` and serves until killed.
//!
//! Must not touch: the edge; it only uses the crate's sans-IO codec (`proto`).

use std::net::SocketAddr;

use monoio::buf::IoBufMut;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};
use searchgate::proto::{BodyCursor, Framing, HeadLimits, Method, RequestHead, Step};

const BUF: usize = 256 * 1024;

const SEARCH_BODY: &str = r#"{"took":1,"timed_out":false,"_shards":{"total":1,"successful":1,"skipped":0,"failed":0},"hits":{"total":1,"max_score":1.0,"hits":[{"_index":"books","_type":"_doc","_id":"1","_score":1.0,"_source":{"title":"The Rust Programming Language","year":2018}}]}}"#;
const BULK_BODY: &str = r#"{"took":3,"errors":false,"items":[]}"#;

fn response(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=UTF-8\r\nX-Elastic-Product: Elasticsearch\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

struct Responses {
    search: Vec<u8>,
    bulk: Vec<u8>,
    search_head_only: Vec<u8>,
}

fn main() {
    let mut listen: SocketAddr = "127.0.0.1:0".parse().expect("valid address");
    let mut driver = "epoll".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--listen" => {
                listen = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--listen ADDR")
            }
            "--driver" => driver = args.next().expect("--driver epoll|uring"),
            other => {
                eprintln!("upstream: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let std = std::net::TcpListener::bind(listen).expect("bind the upstream listener");
    std.set_nonblocking(true).expect("non-blocking listener");
    println!("upstream: listening {}", std.local_addr().expect("bound"));
    let search = response(SEARCH_BODY);
    let head_len = search.len() - SEARCH_BODY.len();
    let responses: &'static Responses = Box::leak(Box::new(Responses {
        search_head_only: search[..head_len].to_vec(),
        search,
        bulk: response(BULK_BODY),
    }));
    match driver.as_str() {
        "uring" => monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
            .with_entries(1024)
            .build()
            .expect("io_uring runtime")
            .block_on(serve(std, responses)),
        _ => monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .build()
            .expect("epoll runtime")
            .block_on(serve(std, responses)),
    }
}

async fn serve(std: std::net::TcpListener, responses: &'static Responses) {
    let listener = TcpListener::from_std(std).expect("monoio adopts the listener");
    loop {
        match listener.accept().await {
            Ok((tcp, _)) => {
                let _ = tcp.set_nodelay(true);
                monoio::spawn(connection(tcp, responses));
            }
            Err(e) => eprintln!("upstream: accept: {e}"),
        }
    }
}

/// Serves one connection until the peer closes it or sends something malformed.
async fn connection(mut tcp: TcpStream, responses: &'static Responses) {
    let limits = HeadLimits {
        max_head: 64 * 1024,
        max_auth: 16 * 1024,
        max_headers: 256,
    };
    let mut head = RequestHead::new();
    let mut buf: Vec<u8> = Vec::with_capacity(BUF);
    let mut out: Vec<u8> = Vec::with_capacity(64 * 1024);
    // The body being skipped and the response to send once it is complete.
    let mut body: Option<(BodyCursor, &'static [u8])> = None;
    loop {
        let mut pos = 0;
        // Everything complete in the buffer: skip bodies, queue responses.
        loop {
            if let Some((cur, resp)) = &mut body {
                match cur.step(&buf) {
                    Ok(Step::Piece(_)) => continue,
                    Ok(Step::NeedMore) => {
                        pos = cur.pos();
                        break;
                    }
                    Ok(Step::Done) => {}
                    Err(_) => return,
                }
                pos = cur.pos();
                out.extend_from_slice(resp);
                body = None;
                continue;
            }
            match head.parse(&buf[pos..], &limits) {
                Ok(true) => {}
                Ok(false) => break,
                Err(_) => return,
            }
            let path = head.path(&buf[pos..]);
            let resp: &'static [u8] = if path.ends_with(b"_bulk") {
                &responses.bulk
            } else if head.method == Method::Head {
                &responses.search_head_only
            } else {
                &responses.search
            };
            let framing = head.framing;
            pos += head.len;
            if matches!(framing, Framing::None | Framing::Length(0)) {
                out.extend_from_slice(resp);
            } else {
                match BodyCursor::new(framing, u64::MAX, pos) {
                    Ok(c) => body = Some((c, resp)),
                    Err(_) => return,
                }
            }
        }
        buf.drain(..pos);
        if let Some((cur, _)) = &mut body {
            cur.dropped(pos);
        }
        if !out.is_empty() {
            let (res, o) = tcp.write_all(out).await;
            out = o;
            out.clear();
            if res.is_err() {
                return;
            }
        }
        if buf.len() == buf.capacity() {
            return; // a head larger than the buffer: not a load-test client
        }
        let len = buf.len();
        let cap = buf.capacity();
        let (res, slice) = tcp.read(buf.slice_mut(len..cap)).await;
        buf = slice.into_inner();
        match res {
            Ok(n) if n > 0 => {}
            _ => return,
        }
    }
}
