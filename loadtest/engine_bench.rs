//! The embedded engine's bench: starts `target/release/searchgate engine` on a free port
//! with a fresh data directory, bulk-loads N small documents (default one million) through
//! `_bulk` with acknowledged (fsynced) writes, then runs match queries from C concurrent
//! clients, and prints docs/s, search req/s, p50/p99/max latency and the engine's peak RSS.
//!
//! ```text
//! cargo build --release --bin searchgate
//! cargo run --release --example engine_bench -- [--docs 1000000] [--batch 5000]
//!     [--bulk-clients 2] [--search-clients 8] [--search-secs 30] [--shards 1]
//!     [--bin target/release/searchgate] [--engine-arg ARG]... [--addr HOST:PORT]
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use searchgate::proto::{BodyCursor, HeadLimits, Method, ResponseHead, Step};

struct Opts {
    docs: usize,
    batch: usize,
    bulk_clients: usize,
    search_clients: usize,
    search_secs: u64,
    shards: usize,
    bin: String,
    engine_args: Vec<String>,
    /// An engine already running (not started or stopped by the bench).
    addr: Option<SocketAddr>,
}

fn opts() -> Opts {
    let mut o = Opts {
        docs: 1_000_000,
        batch: 5000,
        bulk_clients: 2,
        search_clients: 8,
        search_secs: 30,
        shards: 1,
        bin: "target/release/searchgate".into(),
        engine_args: vec![],
        addr: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        let n = || {
            v.parse::<usize>()
                .unwrap_or_else(|_| panic!("{} wants a number", args[i]))
        };
        match args[i].as_str() {
            "--docs" => o.docs = n(),
            "--batch" => o.batch = n(),
            "--bulk-clients" => o.bulk_clients = n(),
            "--search-clients" => o.search_clients = n(),
            "--search-secs" => o.search_secs = n() as u64,
            "--shards" => o.shards = n(),
            "--bin" => o.bin = v.clone(),
            "--engine-arg" => o.engine_args.push(v.clone()),
            "--addr" => o.addr = Some(v.parse().expect("--addr host:port")),
            other => panic!("unknown option {other}"),
        }
        i += 2;
    }
    o
}

/// xorshift64*: a deterministic generator without dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// A word index with a Zipf-like skew (common words much more frequent).
    fn zipf(&mut self, n: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) - 1.0) as usize % n
    }
}

const VOCAB: usize = 20_000;
const TAGS: [&str; 12] = [
    "news", "sport", "tech", "science", "travel", "food", "music", "film", "books", "art",
    "health", "games",
];

fn word(i: usize) -> String {
    const SYL: [&str; 16] = [
        "ka", "lo", "mi", "ne", "ru", "sa", "ti", "po", "da", "fe", "gu", "ha", "jo", "be", "vi",
        "zo",
    ];
    let mut s = String::new();
    let mut x = i + 16;
    while x > 0 {
        s.push_str(SYL[x % 16]);
        x /= 16;
    }
    s
}

fn words(rng: &mut Rng, vocab: &[String], n: usize) -> String {
    (0..n)
        .map(|_| vocab[rng.zipf(VOCAB)].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn bulk_body(rng: &mut Rng, vocab: &[String], from: usize, n: usize) -> Vec<u8> {
    let mut s = String::with_capacity(n * 220);
    for i in from..from + n {
        let nt = 3 + rng.below(4);
        let title = words(rng, vocab, nt);
        let nb = 8 + rng.below(8);
        let body = words(rng, vocab, nb);
        let tag = TAGS[rng.below(TAGS.len())];
        let price = rng.below(100_000) as f64 / 100.0;
        let day = 1 + rng.below(28);
        s.push_str(&format!(
            "{{\"index\":{{\"_id\":\"d{i}\"}}}}\n{{\"title\":\"{title}\",\"body\":\"{body}\",\"tag\":\"{tag}\",\"n\":{i},\"price\":{price},\"date\":\"2024-03-{day:02}\"}}\n"
        ));
    }
    s.into_bytes()
}

struct Client {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    fn new(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_nodelay(true).unwrap();
        Client {
            s,
            buf: Vec::with_capacity(1 << 16),
        }
    }

    fn req(&mut self, method: &str, path: &str, ct: &str, body: &[u8]) -> (u16, Vec<u8>) {
        let head = format!("{method} {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n", body.len());
        self.s.write_all(head.as_bytes()).unwrap();
        self.s.write_all(body).unwrap();
        let mut h = ResponseHead::new();
        let m = if method == "GET" {
            Method::Get
        } else {
            Method::Post
        };
        while !h.parse(&self.buf, m, &HeadLimits::default()).unwrap() {
            self.fill();
        }
        let (status, framing, len) = (h.status, h.framing, h.len);
        self.buf.drain(..len);
        let mut cur = BodyCursor::new(framing, u64::MAX, 0).unwrap();
        let mut out = Vec::new();
        loop {
            match cur.step(&self.buf).unwrap() {
                Step::Piece(r) => out.extend_from_slice(&self.buf[r]),
                Step::Done => break,
                Step::NeedMore => {
                    self.buf.drain(..cur.pos());
                    cur.dropped(cur.pos());
                    self.fill();
                }
            }
        }
        self.buf.drain(..cur.pos());
        (status, out)
    }

    fn fill(&mut self) {
        let mut chunk = [0u8; 65536];
        let n = self.s.read(&mut chunk).unwrap();
        assert!(n > 0, "engine closed the connection");
        self.buf.extend_from_slice(&chunk[..n]);
    }
}

fn start_engine(o: &Opts, dir: &std::path::Path) -> (Child, SocketAddr) {
    let mut child = Command::new(&o.bin)
        .args(["engine", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .args(&o.engine_args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {}: {e} (cargo build --release --bin searchgate)",
                o.bin
            )
        });
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line.trim().rsplit(' ').next().unwrap().parse().unwrap();
    (child, addr)
}

fn proc_kb(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// CPU seconds (user + system) used so far by process `pid`.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn bulk_phase(o: &Opts, addr: SocketAddr, vocab: &[String], pid: u32) -> f64 {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let batches: Vec<Vec<u8>> = (0..o.docs.div_ceil(o.batch))
        .map(|b| {
            bulk_body(
                &mut rng,
                vocab,
                b * o.batch,
                o.batch.min(o.docs - b * o.batch),
            )
        })
        .collect();
    let bytes: usize = batches.iter().map(Vec::len).sum();
    println!(
        "bulk: {} documents in {} requests of {} ({:.0} MB)",
        o.docs,
        batches.len(),
        o.batch,
        bytes as f64 / 1e6
    );
    let batches = Arc::new(batches);
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let cpu0 = cpu_secs(pid);
    let workers: Vec<_> = (0..o.bulk_clients)
        .map(|_| {
            let (batches, next) = (batches.clone(), next.clone());
            std::thread::spawn(move || {
                let mut c = Client::new(addr);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(b) = batches.get(i) else { break };
                    let (status, body) = c.req("POST", "/bench/_bulk", "application/x-ndjson", b);
                    assert_eq!(
                        status,
                        200,
                        "{}",
                        String::from_utf8_lossy(&body[..body.len().min(500)])
                    );
                    assert!(
                        body.starts_with(b"{\"took\":")
                            && !body[..40].windows(11).any(|w| w == b"errors\":tru"),
                        "bulk errors"
                    );
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    let rate = o.docs as f64 / secs;
    let cpu = cpu_secs(pid) - cpu0;
    println!("bulk: {secs:.1} s, {rate:.0} docs/s (acknowledged = fsynced)");
    if pid != 0 {
        let per_doc = cpu * 1e6 / o.docs as f64;
        println!("bulk: engine used {cpu:.1} CPU-s = {per_doc:.1} us per document ({:.0} docs per CPU-second)", o.docs as f64 / cpu);
    }
    rate
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64 / 1000.0
}

fn search_phase(o: &Opts, addr: SocketAddr, vocab: &[String], pid: u32) {
    let cpu0 = cpu_secs(pid);
    let stop = Arc::new(AtomicBool::new(false));
    let lat = Arc::new(Mutex::new(Vec::<u32>::new()));
    let hits = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..o.search_clients)
        .map(|t| {
            let (stop, lat, hits, vocab) =
                (stop.clone(), lat.clone(), hits.clone(), vocab.to_vec());
            std::thread::spawn(move || {
                let mut rng = Rng(0x1234_5678 + t as u64);
                let mut c = Client::new(addr);
                let mut mine = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let nq = 1 + rng.below(2);
                    let q = words(&mut rng, &vocab, nq);
                    let field = if rng.below(2) == 0 { "title" } else { "body" };
                    let body = format!("{{\"query\":{{\"match\":{{\"{field}\":\"{q}\"}}}}}}");
                    let t0 = Instant::now();
                    let (status, resp) = c.req(
                        "POST",
                        "/bench/_search",
                        "application/json",
                        body.as_bytes(),
                    );
                    mine.push(t0.elapsed().as_micros() as u32);
                    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&resp));
                    if resp.windows(8).any(|w| w == b"\"_id\":\"d") {
                        hits.fetch_add(1, Ordering::Relaxed);
                    }
                }
                lat.lock().unwrap().extend(mine);
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(o.search_secs));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    let cpu = cpu_secs(pid) - cpu0;
    let mut l = lat.lock().unwrap().clone();
    l.sort_unstable();
    if pid != 0 && !l.is_empty() {
        println!(
            "search: engine used {:.1} CPU-s = {:.2} ms per query",
            cpu,
            cpu * 1e3 / l.len() as f64
        );
    }
    println!(
        "search: {} match queries from {} clients in {} s: {:.0} req/s, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} with hits)",
        l.len(),
        o.search_clients,
        o.search_secs,
        l.len() as f64 / o.search_secs as f64,
        percentile(&l, 0.50),
        percentile(&l, 0.99),
        percentile(&l, 1.0),
        hits.load(Ordering::Relaxed)
    );
}

fn main() {
    let o = opts();
    let dir = std::env::temp_dir().join(format!("engine-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (mut child, addr) = match o.addr {
        Some(a) => (None, a),
        None => {
            let (c, a) = start_engine(&o, &dir);
            (Some(c), a)
        }
    };
    let pid = child.as_ref().map_or(0, |c| c.id());
    println!("engine {} on {addr}, data in {}", o.bin, dir.display());
    let vocab: Vec<String> = (0..VOCAB).map(word).collect();
    let mut c = Client::new(addr);
    let create = format!(
        "{{\"settings\":{{\"number_of_shards\":{},\"number_of_replicas\":0}},\"mappings\":{{\"properties\":{{\"tag\":{{\"type\":\"keyword\"}}}}}}}}",
        o.shards
    );
    let created = c
        .req("PUT", "/bench", "application/json", create.as_bytes())
        .0;
    assert!(
        created == 200 || o.addr.is_some(),
        "create index: {created}"
    );
    if o.docs > 0 {
        bulk_phase(&o, addr, &vocab, pid);
    }
    let t = Instant::now();
    c.req("POST", "/bench/_refresh", "application/json", b"");
    let (_, count) = c.req("GET", "/bench/_count", "application/json", b"");
    println!(
        "refresh {:.1} s; {}",
        t.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&count)
    );
    println!("rss after load: {} MB", proc_kb(pid, "VmRSS:") / 1024);
    search_phase(&o, addr, &vocab, pid);
    let (_, cat) = c.req("GET", "/_cat/indices?v", "application/json", b"");
    print!("{}", String::from_utf8_lossy(&cat));
    println!(
        "engine peak rss: {} MB, rss now: {} MB",
        proc_kb(pid, "VmHWM:") / 1024,
        proc_kb(pid, "VmRSS:") / 1024
    );
    if let Some(child) = child.as_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = std::fs::remove_dir_all(&dir);
}
