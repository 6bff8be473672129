//! Reading the edge's metrics listener (`[edge] metrics`, Prometheus text), so tests wait
//! on the edge's own figures ("a request is queued", "nothing is in flight") instead of
//! sleeping.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The listener's address in the edge's `searchgate: metrics http://ADDR/metrics` line.
pub fn address_in(line: &str) -> SocketAddr {
    let url = line.rsplit(' ').next().unwrap();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/metrics");
    addr.parse().expect("the metrics listener's address")
}

/// The exposition text now.
pub fn scrape(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).expect("connect to the metrics listener");
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: metrics\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

/// The value of `name{cluster="..."}` in an exposition text.
pub fn sample(text: &str, name: &str, cluster: &str) -> Option<u64> {
    let prefix = format!("{name}{{cluster=\"{cluster}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// Waits until `name` of `cluster` satisfies `pred` (re-read on every scrape; 10 s at
/// most); returns the value.
pub fn wait_for(
    addr: SocketAddr,
    name: &str,
    cluster: &str,
    what: &str,
    pred: impl Fn(u64) -> bool,
) -> u64 {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let text = scrape(addr);
        if let Some(v) = sample(&text, name, cluster).filter(|v| pred(*v)) {
            return v;
        }
        assert!(Instant::now() < end, "{what}: never seen; last:\n{text}");
        std::thread::yield_now();
    }
}

/// The value of the series `series` (a name with its labels as written, e.g.
/// `searchgate_panics_total{component="edge"}`) in an exposition text.
pub fn series(text: &str, series: &str) -> Option<u64> {
    let prefix = format!("{series} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
}
