//! Interval logs: each closed minute of each cluster appended to `<dir>/<cluster>.hlog` in
//! HdrHistogram's interval log format (version 1.3, histograms V2 + deflate, base64), one
//! line per metric tagged `total`, `queue` or `upstream`, readable by HdrHistogram's Java
//! `HistogramLogReader` and the Rust crate's `IntervalLogIterator` (used by [`read_log`]).
//! Timestamps are absolute (seconds since the epoch), values µs (the max column too).
//!
//! The serialiser and the log line writer are the `hdrhistogram` crate's; this module only
//! decides files and headers. [`spawn`] runs a writer thread that follows the hub.
//!
//! Must not touch: the hub's internals, sockets. Writes only under the directory given.

use std::fs::OpenOptions;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;

use super::hub::{MetricsHub, SealedView};
use super::window::{new_histogram, Metric};

/// The legend line Java's `HistogramLogWriter` writes after the headers.
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

/// The log file of `cluster` under `dir` (cluster ids are DNS labels; anything else in a
/// name is replaced so a file never leaves `dir`).
pub fn log_path(dir: &Path, cluster: &str) -> PathBuf {
    let safe: String = cluster
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("{safe}.hlog"))
}

/// Follows the hub and appends each newly closed minute to the clusters' logs.
pub struct LogWriter {
    dir: PathBuf,
    /// Start of the last interval written.
    last_start_ms: Option<u64>,
    serializer: V2DeflateSerializer,
}

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("dir", &self.dir)
            .field("last_start_ms", &self.last_start_ms)
            .finish()
    }
}

impl LogWriter {
    /// A writer into `dir` (created when missing).
    pub fn new(dir: &Path) -> io::Result<LogWriter> {
        std::fs::create_dir_all(dir)?;
        Ok(LogWriter {
            dir: dir.to_path_buf(),
            last_start_ms: None,
            serializer: V2DeflateSerializer::new(),
        })
    }

    /// Writes every interval the hub closed since the last call; returns the lines written.
    pub fn write_new(&mut self, hub: &MetricsHub, now: SystemTime) -> io::Result<usize> {
        let mut lines = 0;
        for view in hub.sealed_since(self.last_start_ms, now) {
            lines += self.write_interval(&view)?;
            self.last_start_ms = Some(view.interval.start_ms);
        }
        Ok(lines)
    }

    fn write_interval(&mut self, view: &SealedView) -> io::Result<usize> {
        let iv = &view.interval;
        let start = Duration::from_millis(iv.start_ms);
        let length = Duration::from_millis(iv.end_ms - iv.start_ms);
        let mut lines = 0;
        for (number, id) in &view.clusters {
            let mut h = [new_histogram(), new_histogram(), new_histogram()];
            iv.add_to(*number, &mut h);
            let mut buf = Vec::new();
            {
                let mut w = IntervalLogWriterBuilder::new()
                    .begin_log_with(&mut buf, &mut self.serializer)?;
                for m in Metric::ALL {
                    if h[m as usize].is_empty() {
                        continue;
                    }
                    w.write_histogram(&h[m as usize], start, length, Tag::new(m.name()))
                        .map_err(|e| io::Error::other(e.to_string()))?;
                    lines += 1;
                }
            }
            append(&log_path(&self.dir, id), id, &buf)?;
        }
        Ok(lines)
    }
}

/// Appends `lines` to `path`, writing the headers first when the file is new.
fn append(path: &Path, cluster: &str, lines: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new().create(true).append(true).open(path)?;
    let mut out = Vec::with_capacity(lines.len() + 256);
    if f.metadata()?.len() == 0 {
        let mut ser = V2DeflateSerializer::new();
        let now = SystemTime::now();
        let _ = IntervalLogWriterBuilder::new()
            .add_comment(&format!(
                "searchgate latency of cluster {cluster}, values in microseconds"
            ))
            .add_comment("[Histogram log format version 1.3]")
            .with_start_time(now)
            .begin_log_with(&mut out, &mut ser)?;
        out.extend_from_slice(LEGEND.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(lines);
    f.write_all(&out)
}

/// Runs a [`LogWriter`] every `every` until `stop` is set; then closes the window's open
/// interval and writes it too, so a clean shutdown loses no sample already handed over.
/// Unpark the returned thread after setting `stop` to end it at once.
pub fn spawn(
    hub: Arc<MetricsHub>,
    dir: PathBuf,
    every: Duration,
    stop: Arc<AtomicBool>,
) -> io::Result<JoinHandle<()>> {
    let mut writer = LogWriter::new(&dir)?;
    std::thread::Builder::new()
        .name("latency-log".into())
        .spawn(move || loop {
            let stopping = stop.load(Ordering::Acquire);
            if stopping {
                hub.close_open_interval(SystemTime::now());
            }
            if let Err(e) = writer.write_new(&hub, SystemTime::now()) {
                eprintln!("searchgate: latency log in {}: {e}", dir.display());
            }
            if stopping {
                return;
            }
            std::thread::park_timeout(every);
        })
}

/// A histogram in the interval log's encoding: V2 with deflate, base64 (what the log's
/// `Interval_Compressed_Histogram` column holds, and what the latency report carries).
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut raw = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut raw)
        .expect("a histogram serialises into memory");
    base64::engine::general_purpose::STANDARD.encode(raw)
}

/// Reads a histogram of [`encode_histogram`]'s encoding (any V2 form HdrHistogram writes).
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, String> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("bad base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut raw.as_slice())
        .map_err(|e| format!("bad histogram: {e:?}"))
}

/// One histogram read back from an interval log.
#[derive(Debug, Clone)]
pub struct LoggedInterval {
    pub tag: Option<String>,
    /// Seconds since the epoch (the log's timestamps are absolute).
    pub start: Duration,
    pub length: Duration,
    pub histogram: Histogram<u64>,
}

/// Reads every interval of a log (any tag); an error names the offset or line.
pub fn read_log(bytes: &[u8]) -> Result<Vec<LoggedInterval>, String> {
    let mut out = Vec::new();
    for entry in IntervalLogIterator::new(bytes) {
        let entry = entry.map_err(|e| format!("interval log: cannot parse: {e:?}"))?;
        let LogEntry::Interval(iv) = entry else {
            continue;
        };
        let histogram =
            decode_histogram(iv.encoded_histogram()).map_err(|e| format!("interval log: {e}"))?;
        out.push(LoggedInterval {
            tag: iv.tag().map(|t| t.as_str().to_string()),
            start: iv.start_timestamp(),
            length: iv.duration(),
            histogram,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{CoreMetrics, Sample};
    use std::time::UNIX_EPOCH;

    #[test]
    fn closed_minutes_round_trip_through_the_reader_per_cluster() {
        let dir = tempfile::tempdir().unwrap();
        let hub = MetricsHub::default();
        let mut core = CoreMetrics::default();
        let t0 = 1_700_000_040u64; // a minute boundary
        let mut exact = new_histogram();
        for i in 1..=500u64 {
            let total = 200 + i * 37 % 5000;
            core.record(
                "acme",
                &Sample {
                    status: 200,
                    total_us: total,
                    upstream_us: Some(total / 2),
                    ..Sample::default()
                },
            );
            exact.record(total).unwrap();
        }
        core.record(
            "beta",
            &Sample {
                status: 429,
                total_us: 7000,
                queued_us: Some(6000),
                ..Sample::default()
            },
        );
        hub.absorb_at(&mut core, UNIX_EPOCH + Duration::from_secs(t0 + 5));
        let mut w = LogWriter::new(dir.path()).unwrap();
        let at = |s: u64| UNIX_EPOCH + Duration::from_secs(s);
        assert_eq!(
            w.write_new(&hub, at(t0 + 30)).unwrap(),
            0,
            "the minute is still open"
        );
        // The next hand-over (in the next minute) closes it.
        core.record(
            "acme",
            &Sample {
                status: 200,
                total_us: 1,
                ..Sample::default()
            },
        );
        hub.absorb_at(&mut core, at(t0 + 61));
        assert_eq!(w.write_new(&hub, at(t0 + 61)).unwrap(), 4);
        assert_eq!(w.write_new(&hub, at(t0 + 62)).unwrap(), 0, "written once");

        let acme = std::fs::read(log_path(dir.path(), "acme")).unwrap();
        let text = String::from_utf8(acme.clone()).unwrap();
        assert!(text.starts_with("#searchgate latency of cluster acme"));
        assert!(text.contains("#[Histogram log format version 1.3]\n"));
        assert!(text.contains("#[StartTime: "));
        assert!(text.contains(LEGEND));
        let read = read_log(&acme).unwrap();
        let tags: Vec<_> = read.iter().map(|r| r.tag.as_deref().unwrap()).collect();
        assert_eq!(tags, ["total", "upstream"]);
        assert_eq!(read[0].start, Duration::from_secs(t0));
        assert_eq!(read[0].length, Duration::from_secs(60));
        let h = &read[0].histogram;
        assert_eq!(h.len(), 500);
        for q in [0.5, 0.99, 0.999, 1.0] {
            assert!(
                h.equivalent(h.value_at_quantile(q), exact.value_at_quantile(q)),
                "q {q}"
            );
        }
        let beta = read_log(&std::fs::read(log_path(dir.path(), "beta")).unwrap()).unwrap();
        let tags: Vec<_> = beta.iter().map(|r| r.tag.as_deref().unwrap()).collect();
        assert_eq!(tags, ["total", "queue"]);

        // A second minute is appended without a second header.
        hub.absorb_at(&mut core, at(t0 + 121));
        core.record(
            "acme",
            &Sample {
                status: 200,
                total_us: 5,
                ..Sample::default()
            },
        );
        hub.absorb_at(&mut core, at(t0 + 125));
        w.write_new(&hub, at(t0 + 125)).unwrap();
        let text = std::fs::read_to_string(log_path(dir.path(), "acme")).unwrap();
        assert_eq!(text.matches("#[StartTime").count(), 1);
        assert_eq!(read_log(text.as_bytes()).unwrap().len(), 3);
    }

    #[test]
    fn the_encoding_round_trips_and_garbage_is_named() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 13).unwrap();
        }
        let back = decode_histogram(&encode_histogram(&h)).unwrap();
        assert_eq!(back, h);
        assert!(decode_histogram("!!").unwrap_err().contains("base64"));
        assert!(decode_histogram("AAAA").unwrap_err().contains("histogram"));
    }

    #[test]
    fn file_names_stay_in_the_directory() {
        let d = Path::new("/logs");
        assert_eq!(log_path(d, "acme-1"), Path::new("/logs/acme-1.hlog"));
        assert_eq!(log_path(d, "../etc/x"), Path::new("/logs/___etc_x.hlog"));
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        assert!(read_log(b"not a log\n").is_err());
        assert!(read_log(b"0.000,60.000,5.0,!!!!\n")
            .unwrap_err()
            .contains("base64"));
        assert!(read_log(b"#just a comment\n").unwrap().is_empty());
    }
}
