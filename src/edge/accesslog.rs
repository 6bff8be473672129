//! The access log: one line per request, buffered per core and appended to the log file
//! (or stderr) in batches, so the hot path never makes a system call for it.
//!
//! A line: `<UTC time> <cluster> <client> "<METHOD> <path>[?<names>]" <status> in=<bytes>
//! out=<bytes> queue_ms=<ms> total_ms=<ms>[ key=<name>]` (`key=`: the request came with one
//! of the cluster's keys, named). Query values are never written (they may hold
//! secrets), only their names; credentials are never written.
//!
//! Must not touch: anything but its buffer and its file.

use std::fmt::Write as _;
use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::time::SystemTime;

/// Flush when the buffer holds this much.
const FLUSH_AT: usize = 32 * 1024;

/// Where lines go.
#[derive(Debug)]
enum Sink {
    File(File),
    Stderr,
}

/// One core's access log buffer.
#[derive(Debug)]
pub struct AccessLog {
    sink: Option<Sink>,
    buf: String,
}

/// The facts of one request for its log line.
#[derive(Debug)]
pub struct Entry<'a> {
    pub cluster: &'a str,
    /// The name of the cluster key the request came with (`None`: the master pair).
    pub key: Option<&'a str>,
    pub client: SocketAddr,
    pub method: &'a [u8],
    pub target: &'a [u8],
    pub status: u16,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub queue_us: u64,
    pub total_us: u64,
}

impl AccessLog {
    /// Opens the log: `None` off, `"-"` stderr, else a file appended to.
    pub fn open(target: Option<&str>) -> std::io::Result<AccessLog> {
        let sink = match target {
            None => None,
            Some("-") => Some(Sink::Stderr),
            Some(path) => Some(Sink::File(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            )),
        };
        Ok(AccessLog {
            sink,
            buf: String::with_capacity(FLUSH_AT + 1024),
        })
    }

    /// Adds one line; flushes when the buffer is full.
    pub fn record(&mut self, e: &Entry<'_>, now: SystemTime) {
        if self.sink.is_none() {
            return;
        }
        write_time(&mut self.buf, now);
        let _ = write!(self.buf, " {} {} \"", e.cluster, e.client.ip());
        if e.method.is_empty() {
            self.buf.push_str("- -"); // no request line could be read
        } else {
            push_lossy(&mut self.buf, e.method);
            self.buf.push(' ');
            push_target(&mut self.buf, e.target);
        }
        let _ = write!(
            self.buf,
            "\" {} in={} out={} queue_ms={:.3} total_ms={:.3}",
            e.status,
            e.bytes_in,
            e.bytes_out,
            e.queue_us as f64 / 1000.0,
            e.total_us as f64 / 1000.0
        );
        if let Some(k) = e.key {
            self.buf.push_str(" key=");
            push_lossy(&mut self.buf, k.as_bytes());
        }
        self.buf.push('\n');
        if self.buf.len() >= FLUSH_AT {
            self.flush();
        }
    }

    /// Writes out what is buffered.
    pub fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let _ = match &mut self.sink {
            Some(Sink::File(f)) => f.write_all(self.buf.as_bytes()),
            Some(Sink::Stderr) => std::io::stderr().write_all(self.buf.as_bytes()),
            None => Ok(()),
        };
        self.buf.clear();
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.flush();
    }
}

fn push_lossy(out: &mut String, bytes: &[u8]) {
    for &b in bytes {
        out.push(if b.is_ascii_graphic() { b as char } else { '?' });
    }
}

/// The path as sent, then only the names of query parameters (the customer's request log
/// shows paths the same way).
pub(super) fn push_target(out: &mut String, target: &[u8]) {
    let (path, query) = match memchr::memchr(b'?', target) {
        Some(i) => (&target[..i], Some(&target[i + 1..])),
        None => (target, None),
    };
    push_lossy(out, path);
    if let Some(q) = query {
        out.push('?');
        for (i, pair) in q.split(|&b| b == b'&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            let name = pair.split(|&b| b == b'=').next().unwrap_or(b"");
            push_lossy(out, name);
            if pair.len() > name.len() {
                out.push_str("=*");
            }
        }
    }
}

/// RFC 3339 UTC time with milliseconds.
fn write_time(out: &mut String, now: SystemTime) {
    crate::calendar::write_rfc3339_millis(out, now);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_refused_head_is_logged_without_a_request_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        let mut log = AccessLog::open(Some(path.to_str().unwrap())).unwrap();
        let e = Entry {
            cluster: "-",
            key: None,
            client: "10.0.0.7:5555".parse().unwrap(),
            method: b"",
            target: b"",
            status: 400,
            bytes_in: 37,
            bytes_out: 300,
            queue_us: 0,
            total_us: 120,
        };
        log.record(&e, SystemTime::UNIX_EPOCH);
        drop(log);
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(
            text,
            "1970-01-01T00:00:00.000Z - 10.0.0.7 \"- -\" 400 in=37 out=300 queue_ms=0.000 total_ms=0.120\n"
        );
    }

    #[test]
    fn a_line_has_the_facts_and_no_query_values() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        let mut log = AccessLog::open(Some(path.to_str().unwrap())).unwrap();
        let e = Entry {
            cluster: "acme",
            key: None,
            client: "10.0.0.7:5555".parse().unwrap(),
            method: b"GET",
            target: b"/books/_search?q=secret-thing&pretty",
            status: 200,
            bytes_in: 120,
            bytes_out: 3456,
            queue_us: 1500,
            total_us: 2750,
        };
        log.record(
            &e,
            SystemTime::UNIX_EPOCH + Duration::from_millis(1_763_780_000_123),
        );
        drop(log);
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(
            text,
            "2025-11-22T02:53:20.123Z acme 10.0.0.7 \"GET /books/_search?q=*&pretty\" 200 in=120 out=3456 queue_ms=1.500 total_ms=2.750\n"
        );
    }
}
