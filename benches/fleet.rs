//! Permit or forward (issue 27): what a request away from its cluster's home costs under
//! each design, on loopback. `permit`: one remote permit as the edge takes it (acquire,
//! the home's decision on the real allowance behind its peer listener, the verdict, the
//! release) on a pooled, authenticated connection. `forward_hop`: what forwarding would add
//! to a request instead: its bytes through one more TCP hop (a relay that copies every byte
//! to the home), for a small search (300 bytes) and a 5MB bulk body. Run:
//! `cargo bench --bench fleet`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use searchgate::config::Config;
use searchgate::fleet::handover;
use searchgate::fleet::home::{self, HomeSettings};
use searchgate::fleet::membership::{Member, Membership, View};
use searchgate::fleet::wire::{Acquire, PeerSecret, Verdict, RELEASE, VERDICT};
use searchgate::metrics::MetricsHub;
use searchgate::registry::{Registry, Snapshot};
use searchgate::tenancy::TenancyKey;

const CONFIG: &str = r#"
[edge]
domain = "example.test"
http = "127.0.0.1:0"
access_log = "off"
[[plans]]
name = "p"
concurrency = 4
queue_size = 4
queue_timeout = "1s"
shards = 100
disk = "1gb"
memory = "1gb"
max_bulk_actions = 100
[[clusters]]
id = "acme"
hostname = "acme"
region = "r1"
class = "single-tenant"
plan = "p"
username = "acmeuser"
password = "acmepass"
upstream = ["127.0.0.1:9"]
"#;

/// A home on 127.0.0.1 serving cluster `acme`; a connection to it, through the handshake.
fn home() -> TcpStream {
    let config = Config::parse(CONFIG, "bench").unwrap();
    let key = TenancyKey::from_bytes([3; 32]);
    let snap = Snapshot::build(&config, None, 1, Instant::now(), &key).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let membership = Arc::new(Membership::new("h".into()));
    let view = View {
        me: "h".into(),
        members: vec![Member {
            node: "h".into(),
            peer: addr,
        }],
        valid_until: Some(Instant::now() + Duration::from_secs(3600)),
        handed: Vec::new(),
    };
    membership.publish(view, Instant::now());
    let secret = PeerSecret::of([9; 32]);
    let s = HomeSettings {
        secret: secret.clone(),
        registry: Arc::new(Registry::new(snap)),
        membership,
        hub: Arc::new(MetricsHub::default()),
        max_hold: Duration::from_secs(60),
        lease: Duration::from_secs(5),
        outstanding: Arc::default(),
    };
    std::mem::forget(home::spawn(listener, Arc::new(s)).unwrap());
    handover::connect(addr, &secret, "bench").unwrap()
}

fn permit(c: &mut Criterion) {
    let mut conn = home();
    let mut msg = Vec::new();
    Acquire {
        cluster: "acme".into(),
        read: true,
        budget_ms: 60_000,
        index: None,
        contexts: 0,
    }
    .encode(&mut msg);
    c.bench_function("fleet/permit_round_trip", |b| {
        b.iter(|| {
            conn.write_all(&msg).unwrap();
            let mut v = [0u8; VERDICT];
            conn.read_exact(&mut v).unwrap();
            assert_eq!(Verdict::parse(&v), Ok(Verdict::Granted));
            conn.write_all(&[RELEASE]).unwrap();
        })
    });
}

/// A sink that reads `len` bytes per request and answers one byte; a relay in front of it
/// that copies both ways (the extra hop forwarding adds). Returns the relay's address.
fn hop(len: usize) -> SocketAddr {
    let sink = TcpListener::bind("127.0.0.1:0").unwrap();
    let sink_addr = sink.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = sink.accept().unwrap();
        let mut buf = vec![0u8; len];
        while s.read_exact(&mut buf).is_ok() {
            s.write_all(b"k").unwrap();
        }
    });
    let relay = TcpListener::bind("127.0.0.1:0").unwrap();
    let relay_addr = relay.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut from, _) = relay.accept().unwrap();
        let mut to = TcpStream::connect(sink_addr).unwrap();
        to.set_nodelay(true).unwrap();
        from.set_nodelay(true).unwrap();
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let mut left = len;
            while left > 0 {
                let n = match from.read(&mut buf[..left.min(256 * 1024)]) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                to.write_all(&buf[..n]).unwrap();
                left -= n;
            }
            let mut k = [0u8; 1];
            to.read_exact(&mut k).unwrap();
            from.write_all(&k).unwrap();
        }
    });
    relay_addr
}

fn through(addr: SocketAddr, len: usize) -> impl FnMut() {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_nodelay(true).unwrap();
    let body = vec![b'x'; len];
    move || {
        conn.write_all(&body).unwrap();
        let mut k = [0u8; 1];
        conn.read_exact(&mut k).unwrap();
    }
}

fn forward(c: &mut Criterion) {
    for (name, len) in [("small_300B", 300), ("bulk_5MB", 5 << 20)] {
        let mut direct = {
            let sink = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = sink.local_addr().unwrap();
            std::thread::spawn(move || {
                let (mut s, _) = sink.accept().unwrap();
                let mut buf = vec![0u8; len];
                while s.read_exact(&mut buf).is_ok() {
                    s.write_all(b"k").unwrap();
                }
            });
            through(addr, len)
        };
        let mut relayed = through(hop(len), len);
        let mut g = c.benchmark_group(format!("fleet/forward_hop/{name}"));
        if len > 1 << 20 {
            g.sample_size(20);
        }
        g.bench_function("direct", |b| b.iter(&mut direct));
        g.bench_function("one_more_hop", |b| b.iter(&mut relayed));
        g.finish();
    }
}

criterion_group!(benches, permit, forward);
criterion_main!(benches);
