//! The engine's readers of NDJSON bodies (`_bulk`, `_msearch`), streamed from any
//! `BufRead`: the framing is the core's one framer (`searchgate_core::ndjson::Framer`,
//! Elasticsearch 7.10's rules, shared with the edge), so the engine and the edge cannot
//! read a body's lines differently. What is the engine's own here is what Elasticsearch
//! does at the edges of that framing:
//!
//! - bytes after the last `\n` (even only blank space) are an error: "The bulk request
//!   must be terminated by a newline [\n]" (`_msearch` likewise);
//! - `_bulk`: a source line's one trailing `\r` is trimmed; an action that is the last
//!   line has no source and is dropped, as Elasticsearch drops it;
//! - `_msearch`: a header that is the last line is dropped.
//!
//! Must not touch: what the lines mean (the handlers in `api/` parse them).

use std::collections::VecDeque;
use std::io::BufRead;

use searchgate_core::ndjson::{ActionKey, End, Format, Framer};
use serde_json::Value;

use super::error::{EngineError, EngineResult};

fn unterminated(what: &str) -> EngineError {
    EngineError::IllegalArgument(format!(
        "The {what} request must be terminated by a newline [\\n]"
    ))
}

/// The first JSON value of a line (Elasticsearch's parser reads one value and stops).
pub fn first_value(line: &[u8]) -> Result<Option<Value>, serde_json::Error> {
    serde_json::Deserializer::from_slice(line)
        .into_iter::<Value>()
        .next()
        .transpose()
}

/// One framed line: its number, bytes (without `\n`) and, for an action, its first key.
#[derive(Debug)]
struct Line {
    n: usize,
    bytes: Vec<u8>,
    key: Option<ActionKey>,
}

/// The lines of a streamed body, framed by the core's framer, with a limit on the bytes.
#[derive(Debug)]
struct Lines {
    framer: Framer,
    what: &'static str,
    total: u64,
    limit: u64,
    /// Lines framed, not yet taken.
    ready: VecDeque<Line>,
    /// The line under way.
    cur: Vec<u8>,
    done: bool,
}

impl Lines {
    fn new(format: Format, what: &'static str, limit: u64) -> Lines {
        Lines {
            framer: Framer::new(format),
            what,
            total: 0,
            limit,
            ready: VecDeque::new(),
            cur: Vec::new(),
            done: false,
        }
    }

    /// The next line, or None at the end of the body.
    fn next(&mut self, body: &mut dyn BufRead) -> EngineResult<Option<Line>> {
        loop {
            if let Some(line) = self.ready.pop_front() {
                return Ok(Some(line));
            }
            if self.done {
                return Ok(None);
            }
            self.read_more(body)?;
        }
    }

    fn read_more(&mut self, body: &mut dyn BufRead) -> EngineResult<()> {
        let buf = body
            .fill_buf()
            .map_err(|e| EngineError::IllegalArgument(format!("failed to read the body: {e}")))?;
        if buf.is_empty() {
            self.done = true;
            return match self.framer.finish() {
                End::Unterminated => Err(unterminated(self.what)),
                End::Complete | End::MissingSource { .. } => Ok(()),
            };
        }
        let n = buf.len();
        self.total += n as u64;
        if self.total > self.limit {
            return Err(EngineError::BodyTooLarge(self.limit));
        }
        let (cur, ready) = (&mut self.cur, &mut self.ready);
        let framed: Result<(), std::convert::Infallible> = self.framer.feed(buf, |s| {
            cur.extend_from_slice(s.bytes());
            if s.end {
                ready.push_back(Line {
                    n: s.line,
                    bytes: std::mem::take(cur),
                    key: s.key,
                });
            }
            Ok(())
        });
        let Ok(()) = framed;
        body.consume(n);
        Ok(())
    }
}

/// A streamed `_bulk` body read item by item.
#[derive(Debug)]
pub struct BulkLines(Lines);

/// One streamed bulk item: the action line's number and bytes, and the source's bytes.
pub type BulkItemLines = (usize, Vec<u8>, Option<Vec<u8>>);

impl BulkLines {
    /// A reader refusing bodies over `limit` bytes.
    pub fn new(limit: u64) -> BulkLines {
        BulkLines(Lines::new(Format::Bulk, "bulk", limit))
    }

    /// The next item, or None at the end.
    pub fn next_item(&mut self, body: &mut dyn BufRead) -> EngineResult<Option<BulkItemLines>> {
        let Some(action) = self.0.next(body)? else {
            return Ok(None);
        };
        if !action.key.is_some_and(ActionKey::has_source) {
            return Ok(Some((action.n, action.bytes, None)));
        }
        let Some(mut source) = self.0.next(body)? else {
            return Ok(None);
        };
        if source.bytes.last() == Some(&b'\r') {
            source.bytes.pop();
        }
        Ok(Some((action.n, action.bytes, Some(source.bytes))))
    }
}

/// A streamed `_msearch` body read pair by pair.
#[derive(Debug)]
pub struct MsearchLines(Lines);

impl MsearchLines {
    /// A reader refusing bodies over `limit` bytes.
    pub fn new(limit: u64) -> MsearchLines {
        MsearchLines(Lines::new(Format::Msearch, "msearch", limit))
    }

    /// The next (header, body) pair, or None at the end.
    pub fn next_pair(
        &mut self,
        body: &mut dyn BufRead,
    ) -> EngineResult<Option<(Vec<u8>, Vec<u8>)>> {
        let Some(header) = self.0.next(body)? else {
            return Ok(None);
        };
        let Some(b) = self.0.next(body)? else {
            return Ok(None);
        };
        Ok(Some((header.bytes, b.bytes)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::io::BufReader;

    fn bulk_streamed(body: &[u8], cap: usize) -> EngineResult<Vec<BulkItemLines>> {
        let mut r = BulkLines::new(u64::MAX);
        let mut rd = BufReader::with_capacity(cap, body);
        let mut out = Vec::new();
        while let Some(x) = r.next_item(&mut rd)? {
            out.push(x);
        }
        Ok(out)
    }

    fn msearch_streamed(body: &[u8], cap: usize) -> EngineResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut r = MsearchLines::new(u64::MAX);
        let mut rd = BufReader::with_capacity(cap, body);
        let mut out = Vec::new();
        while let Some(x) = r.next_pair(&mut rd)? {
            out.push(x);
        }
        Ok(out)
    }

    const I: &str = r#"{"index":{"_index":"a"}}"#;
    const D: &str = r#"{"delete":{"_index":"a","_id":"1"}}"#;

    // (body, expected (action, source) texts or the error) -- Elasticsearch 7.10's reading.
    #[test]
    fn bulk_table() {
        let ok = |v: &[(&str, Option<&str>)]| -> Result<Vec<(String, Option<String>)>, ()> {
            Ok(v.iter()
                .map(|(a, s)| (a.to_string(), s.map(String::from)))
                .collect())
        };
        type Framed = Result<Vec<(String, Option<String>)>, ()>;
        let table: Vec<(String, Framed)> = vec![
            (format!("{I}\n{{}}\n"), ok(&[(I, Some("{}"))])),
            (format!("\n  \n{I}\n{{}}\n"), ok(&[(I, Some("{}"))])),
            (
                format!("{I}\r\n{{\"a\":1}}\r\n"),
                ok(&[(&format!("{I}\r"), Some("{\"a\":1}"))]),
            ),
            (
                format!("{D}\n{I}\n{{}}\n"),
                ok(&[(D, None), (I, Some("{}"))]),
            ),
            (format!("{I}\n{{}}"), Err(())),
            (format!("{I}\n{{}}\n  "), Err(())),
            (format!("{I}\n"), ok(&[])),
            (format!("{I}\n\n"), ok(&[(I, Some(""))])),
            (String::new(), ok(&[])),
        ];
        for (body, want) in table {
            for cap in [1, 3, 8192] {
                let streamed = bulk_streamed(body.as_bytes(), cap).map(|v| {
                    v.into_iter()
                        .map(|(_, a, s)| {
                            (
                                String::from_utf8(a).unwrap(),
                                s.map(|s| String::from_utf8(s).unwrap()),
                            )
                        })
                        .collect::<Vec<_>>()
                });
                assert_eq!(streamed.map_err(|_| ()), want, "streamed {body:?} by {cap}");
            }
        }
    }

    #[test]
    fn msearch_table() {
        type Pairs<'a> = Result<Vec<(&'a str, &'a str)>, ()>;
        let table: Vec<(&str, Pairs<'_>)> = vec![
            ("{}\n{}\n", Ok(vec![("{}", "{}")])),
            ("\n{}\n{}\n", Ok(vec![("{}", "{}")])),
            // a whitespace-only line is an (empty) header: the pairing does not shift
            (
                "  \n{\"query\":{}}\n{\"index\":\"b\"}\n{}\n",
                Ok(vec![("  ", "{\"query\":{}}"), ("{\"index\":\"b\"}", "{}")]),
            ),
            ("\n\n{}\n", Ok(vec![("", "{}")])),
            ("{}\n{}", Err(())),
            ("{}\n{}\n ", Err(())),
            ("{}\n", Ok(vec![])),
            ("{}\n{}\n{}\n", Ok(vec![("{}", "{}")])),
        ];
        for (body, want) in table {
            for cap in [1, 2, 8192] {
                let streamed = msearch_streamed(body.as_bytes(), cap).map(|v| {
                    v.into_iter()
                        .map(|(h, b)| {
                            (String::from_utf8(h).unwrap(), String::from_utf8(b).unwrap())
                        })
                        .collect::<Vec<_>>()
                });
                let want_owned = want.clone().map(|v| {
                    v.into_iter()
                        .map(|(h, b)| (h.to_string(), b.to_string()))
                        .collect::<Vec<_>>()
                });
                assert_eq!(
                    streamed.map_err(|_| ()),
                    want_owned,
                    "streamed {body:?} by {cap}"
                );
            }
        }
    }

    #[test]
    fn first_value_ignores_what_follows() {
        assert_eq!(
            first_value(b" {\"a\":1} trailing").unwrap(),
            Some(serde_json::json!({"a":1}))
        );
        assert_eq!(first_value(b"   ").unwrap(), None);
        assert!(first_value(b"{nope").is_err());
    }
}
