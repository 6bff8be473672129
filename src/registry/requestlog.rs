//! A cluster's customer-visible request log (issue 29): two bounded rings, the most recent
//! requests and the most recent slow ones (whole time at or over the cluster's threshold),
//! each entry what a customer needs to find a request again: when, which key, from where,
//! the method and the path in the tenant's own index names (query values never kept, only
//! their names), the status, the time queued and upstream, the bytes each way.
//!
//! Memory is bounded per cluster: at most [`RECENT`] + [`SLOW`] entries, each path cut at
//! [`MAX_PATH`] bytes and each key name at [`MAX_KEY`]; nothing is allocated for a cluster
//! until its first request. The edge pushes (one short lock per request); the admin API
//! reads.
//!
//! Must not touch: I/O, the clock (the caller passes the wall-clock time in), the
//! tenant-prefixed names the upstream sees (the edge passes the path as the client sent it).

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::Mutex;

/// Most recent requests kept.
pub const RECENT: usize = 100;
/// Most recent slow requests kept.
pub const SLOW: usize = 50;
/// Longest path kept (bytes; longer ones end with `...`).
pub const MAX_PATH: usize = 256;
/// Longest key name kept.
pub const MAX_KEY: usize = 64;
/// The slow threshold of a cluster that sets none (ms).
pub const DEFAULT_SLOW_MS: u64 = 1000;

/// One request, as the customer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestEntry {
    /// Wall-clock time the request arrived, ms since the Unix epoch.
    pub at_ms: i64,
    /// The key it came with (`None`: the cluster's master pair).
    pub key: Option<String>,
    pub client: IpAddr,
    pub method: String,
    /// The path as the client sent it, query parameter names only.
    pub path: String,
    pub status: u16,
    /// Time waiting for an allowance slot (µs; `None`: it never queued).
    pub queue_us: Option<u64>,
    /// Time holding the slot: upstream exchange and relay (µs; `None`: never got one).
    pub upstream_us: Option<u64>,
    /// Whole time at the edge (µs).
    pub total_us: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

impl RequestEntry {
    /// Cuts the path and the key name to their bounds (at a character boundary).
    fn bounded(mut self) -> RequestEntry {
        cut(&mut self.path, MAX_PATH);
        if let Some(k) = self.key.as_mut() {
            cut(k, MAX_KEY);
        }
        cut(&mut self.method, 16);
        self
    }
}

fn cut(s: &mut String, max: usize) {
    if s.len() > max {
        let mut end = max - 3;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push_str("...");
    }
}

#[derive(Debug, Default)]
struct Rings {
    recent: VecDeque<RequestEntry>,
    slow: VecDeque<RequestEntry>,
}

/// The two rings of one cluster.
#[derive(Debug, Default)]
pub struct RequestLog {
    rings: Mutex<Rings>,
}

impl RequestLog {
    /// Records `e`; also as slow when its whole time is at least `slow_ms`.
    pub fn push(&self, e: RequestEntry, slow_ms: u64) {
        let e = e.bounded();
        let slow = e.total_us >= slow_ms.saturating_mul(1000);
        let mut r = self.rings.lock().unwrap_or_else(|p| p.into_inner());
        if slow {
            push_bounded(&mut r.slow, e.clone(), SLOW);
        }
        push_bounded(&mut r.recent, e, RECENT);
    }

    /// The recent requests (or the slow ones), newest first.
    pub fn list(&self, slow: bool) -> Vec<RequestEntry> {
        let r = self.rings.lock().unwrap_or_else(|p| p.into_inner());
        let ring = if slow { &r.slow } else { &r.recent };
        ring.iter().rev().cloned().collect()
    }
}

fn push_bounded(ring: &mut VecDeque<RequestEntry>, e: RequestEntry, cap: usize) {
    if ring.len() == cap {
        ring.pop_front();
    }
    ring.push_back(e);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: i64, total_ms: u64) -> RequestEntry {
        RequestEntry {
            at_ms: n,
            key: None,
            client: "127.0.0.1".parse().unwrap(),
            method: "GET".into(),
            path: format!("/site/_search?q#{n}"),
            status: 200,
            queue_us: None,
            upstream_us: Some(total_ms * 1000),
            total_us: total_ms * 1000,
            bytes_in: 1,
            bytes_out: 2,
        }
    }

    // issue 29: bounded rings, newest first; slow ones at or over the threshold
    #[test]
    fn rings_keep_the_newest_within_their_bounds() {
        let log = RequestLog::default();
        for n in 0..(RECENT as i64 + 30) {
            let ms = if n % 2 == 0 { 500 } else { 499 };
            log.push(entry(n, ms), 500);
        }
        let recent = log.list(false);
        assert_eq!(recent.len(), RECENT);
        assert_eq!(recent[0].at_ms, RECENT as i64 + 29, "newest first");
        assert_eq!(recent[RECENT - 1].at_ms, 30);
        let slow = log.list(true);
        assert_eq!(slow.len(), SLOW);
        assert!(slow.iter().all(|e| e.total_us >= 500_000));
        assert_eq!(slow[0].at_ms, RECENT as i64 + 28);
    }

    #[test]
    fn long_paths_and_key_names_are_cut() {
        let log = RequestLog::default();
        let mut e = entry(1, 1);
        e.path = format!("/{}", "é".repeat(400));
        e.key = Some("k".repeat(100));
        log.push(e, 1000);
        let got = &log.list(false)[0];
        assert!(
            got.path.len() <= MAX_PATH && got.path.ends_with("..."),
            "{}",
            got.path
        );
        assert_eq!(got.key.as_deref().map(str::len), Some(MAX_KEY));
        assert!(log.list(true).is_empty());
    }
}
