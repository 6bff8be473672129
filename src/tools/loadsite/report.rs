//! Counting and telling: a progress bar (indicatif) when stderr is a terminal, plain lines
//! otherwise, per-page failures as they happen, and the summary at the end.

use crate::tools::out::errln;
use std::io::IsTerminal as _;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    /// A bar on a terminal, plain lines otherwise.
    Auto,
    /// Always the bar.
    Bar,
    /// One line per batch on stderr.
    Plain,
    /// Failures and the summary only.
    Off,
}

#[derive(Debug)]
enum Sink {
    Bar(ProgressBar),
    Plain,
    Off,
}

/// Counters of one run.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Page records read.
    pub seen: u64,
    /// Pages that became documents.
    pub included: u64,
    /// Pages excluded by the spec 2.4 rule (draft or private outside the root).
    pub skipped_rule: u64,
    /// Pages outside `--section` / `--kind`.
    pub skipped_filter: u64,
    /// Documents the server accepted.
    pub indexed: u64,
    /// Pages that failed (reported one by one).
    pub failed: u64,
    /// Stale documents deleted by `--prune`.
    pub pruned: u64,
    /// Bulk requests sent.
    pub batches: u64,
    /// Batches halved after a 413.
    pub halvings: u64,
    /// Retries (requests and rejected items).
    pub retries: u64,
    /// Bytes of bulk bodies the server accepted.
    pub bytes_accepted: u64,
}

/// Counts plus the way they are shown.
#[derive(Debug)]
pub struct Report {
    /// The counters.
    pub counts: Counts,
    /// Failures as (page, reason), in order.
    pub failures: Vec<(String, String)>,
    sink: Sink,
    started: Option<Instant>,
    load_time: Duration,
}

impl Report {
    /// A report that shows progress as `mode` says.
    pub fn new(mode: ProgressMode) -> Self {
        let sink = match mode {
            ProgressMode::Off => Sink::Off,
            ProgressMode::Plain => Sink::Plain,
            ProgressMode::Auto if !std::io::stderr().is_terminal() => Sink::Plain,
            ProgressMode::Auto | ProgressMode::Bar => Sink::Bar(ProgressBar::hidden()),
        };
        Self {
            counts: Counts::default(),
            failures: Vec::new(),
            sink,
            started: None,
            load_time: Duration::ZERO,
        }
    }

    /// Starts the clock (and the bar) for `total` documents.
    pub fn start_loading(&mut self, total: u64, what: &str) {
        self.started = Some(Instant::now());
        match &mut self.sink {
            Sink::Bar(bar) => {
                let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
                let style = ProgressStyle::with_template(
                    "{spinner} {msg} [{bar:30}] {pos}/{len} docs, {elapsed}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
                b.set_style(style);
                b.set_message(what.to_owned());
                *bar = b;
            }
            Sink::Plain => errln!("{what}: {total} documents"),
            Sink::Off => {}
        }
    }

    /// Stops the clock.
    pub fn finish_loading(&mut self) {
        if let Some(t) = self.started.take() {
            self.load_time += t.elapsed();
        }
        if let Sink::Bar(bar) = &self.sink {
            bar.finish_and_clear();
        }
    }

    /// A line of information (progress channel).
    pub fn note(&self, line: &str) {
        match &self.sink {
            Sink::Bar(bar) if !bar.is_hidden() => bar.println(line),
            Sink::Off => {}
            _ => errln!("{line}"),
        }
    }

    /// One bulk request was answered.
    pub fn batch(&mut self, docs: usize, bytes: usize, status: u16, accepted: bool) {
        self.counts.batches += 1;
        if accepted {
            self.counts.bytes_accepted += bytes as u64;
        }
        if matches!(self.sink, Sink::Plain) {
            errln!(
                "batch {}: {docs} docs, {} -> HTTP {status}",
                self.counts.batches,
                human_bytes(bytes as u64)
            );
        }
    }

    /// `n` documents were stored (or deleted when pruning).
    pub fn done(&mut self, n: u64, deleting: bool) {
        if deleting {
            self.counts.pruned += n;
        } else {
            self.counts.indexed += n;
        }
        if let Sink::Bar(bar) = &self.sink {
            bar.inc(n);
        }
    }

    /// A page failed; shown at once on stderr (never dropped).
    pub fn fail(&mut self, page: &str, reason: &str) {
        self.counts.failed += 1;
        let line = format!("failed: {page}: {reason}");
        match &self.sink {
            Sink::Bar(bar) if !bar.is_hidden() => bar.println(&line),
            _ => errln!("{line}"),
        }
        self.failures.push((page.to_owned(), reason.to_owned()));
        if let Sink::Bar(bar) = &self.sink {
            bar.inc(1);
        }
    }

    /// The summary lines.
    pub fn summary(&self) -> String {
        let c = &self.counts;
        let secs = self.load_time.as_secs_f64();
        let mb = c.bytes_accepted as f64 / 1e6;
        let rate = if secs > 0.0 { mb / secs } else { 0.0 };
        format!(
            "pages seen {}, included {}, skipped by rule {}, skipped by --section/--kind {}\n\
             indexed {}, failed {}, pruned {}\n\
             batches {}, halvings {}, retries {}, {mb:.2} MB in {secs:.2} s ({rate:.2} MB/s)",
            c.seen,
            c.included,
            c.skipped_rule,
            c.skipped_filter,
            c.indexed,
            c.failed,
            c.pruned,
            c.batches,
            c.halvings,
            c.retries,
        )
    }
}

/// `1.2 MB`, `512 B`.
pub fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        n if n >= 1_000 => format!("{:.1} kB", n as f64 / 1e3),
        n => format!("{n} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_names_every_counter() {
        let mut r = Report::new(ProgressMode::Off);
        r.counts = Counts {
            seen: 9,
            included: 7,
            skipped_rule: 1,
            skipped_filter: 1,
            indexed: 6,
            failed: 1,
            pruned: 2,
            batches: 3,
            halvings: 1,
            retries: 4,
            bytes_accepted: 2_000_000,
        };
        let s = r.summary();
        for part in [
            "pages seen 9",
            "included 7",
            "skipped by rule 1",
            "indexed 6",
            "failed 1",
            "pruned 2",
            "batches 3",
            "halvings 1",
            "retries 4",
            "2.00 MB",
            "MB/s",
        ] {
            assert!(s.contains(part), "{part} missing in {s}");
        }
    }

    #[test]
    fn failures_are_counted_and_kept() {
        let mut r = Report::new(ProgressMode::Off);
        r.fail("/a/ [en]", "too large");
        r.done(3, false);
        r.done(2, true);
        r.batch(5, 100, 200, true);
        r.batch(5, 100, 413, false);
        assert_eq!(r.counts.failed, 1);
        assert_eq!(
            r.failures,
            [("/a/ [en]".to_owned(), "too large".to_owned())]
        );
        assert_eq!(
            (
                r.counts.indexed,
                r.counts.pruned,
                r.counts.batches,
                r.counts.bytes_accepted
            ),
            (3, 2, 2, 100)
        );
        assert_eq!(human_bytes(1_500_000), "1.5 MB");
        assert_eq!(human_bytes(999), "999 B");
    }
}
