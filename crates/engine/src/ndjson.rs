//! NDJSON line framing of `_bulk` and `_msearch`, exactly as Elasticsearch 7.10 reads it
//! (`BulkRequestParser`, `MultiSearchRequest.readMultiLineFormat`):
//!
//! - lines end at `\n`; bytes after the last `\n` (even only whitespace) are an error: "The
//!   bulk request must be terminated by a newline [\n]" (`_msearch` likewise);
//! - `_bulk`: an action line that is empty or whitespace only is skipped (it still counts
//!   as a line for error messages); a `delete` action has no source line; any other action
//!   takes the next line as its source, with one trailing `\r` trimmed; an action that is
//!   the last line has no source and is dropped, as Elasticsearch drops it;
//! - `_msearch`: a `\n` as the very first byte is skipped; after that, lines strictly
//!   alternate header, body; an empty or whitespace-only header is an empty header (the
//!   path's defaults), never skipped; a header that is the last line is dropped.
//!
//! Pure functions over the whole body, for the edge's differential tests ("what would the
//! engine read?"). The engine's own handlers read bodies as streams with the same rules
//! (`BulkLines`, `MsearchLines` below, fed by any `BufRead`); tests check both agree.

use std::io::BufRead;
use std::ops::Range;

use serde_json::Value;

use super::error::{EngineError, EngineResult};

/// One `_bulk` item: its action line and, but for `delete`, its source line (byte ranges
/// into the body, without the `\n`; a source's trailing `\r` trimmed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkFrame {
    /// 1-based line number of the action line.
    pub line: usize,
    pub action: Range<usize>,
    pub source: Option<Range<usize>>,
}

/// One `_msearch` search: header and body line ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MsearchFrame {
    pub header: Range<usize>,
    pub body: Range<usize>,
}

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

/// The first key of a JSON object, the rest read without being kept.
struct FirstKey(Option<String>);

impl<'de> serde::Deserialize<'de> for FirstKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = FirstKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<FirstKey, A::Error> {
                let first: Option<String> = m.next_key()?;
                if first.is_some() {
                    m.next_value::<serde::de::IgnoredAny>()?;
                    while m
                        .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                        .is_some()
                    {}
                }
                Ok(FirstKey(first))
            }
        }
        d.deserialize_map(V)
    }
}

/// Whether a bulk action line is `delete` (its object's first key); anything that is not an
/// object is not (the handler reports it).
fn is_delete(action: &[u8]) -> bool {
    let mut de = serde_json::Deserializer::from_slice(action);
    matches!(<FirstKey as serde::Deserialize>::deserialize(&mut de), Ok(FirstKey(Some(k))) if k == "delete")
}

fn blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

fn next_marker(body: &[u8], from: usize, what: &str) -> EngineResult<Option<usize>> {
    match memchr::memchr(b'\n', &body[from..]) {
        Some(i) => Ok(Some(from + i)),
        None if from != body.len() => Err(unterminated(what)),
        None => Ok(None),
    }
}

/// Frames a whole `_bulk` body.
pub fn bulk_frames(body: &[u8]) -> EngineResult<Vec<BulkFrame>> {
    let (mut out, mut from, mut line) = (Vec::new(), 0, 0);
    while let Some(end) = next_marker(body, from, "bulk")? {
        line += 1;
        let action = from..end;
        from = end + 1;
        if blank(&body[action.clone()]) {
            continue;
        }
        let n = line;
        if is_delete(&body[action.clone()]) {
            out.push(BulkFrame {
                line: n,
                action,
                source: None,
            });
            continue;
        }
        let Some(end) = next_marker(body, from, "bulk")? else {
            break;
        };
        line += 1;
        let mut source = from..end;
        if body[source.clone()].last() == Some(&b'\r') {
            source.end -= 1;
        }
        from = end + 1;
        out.push(BulkFrame {
            line: n,
            action,
            source: Some(source),
        });
    }
    Ok(out)
}

/// Frames a whole `_msearch` body.
pub fn msearch_frames(body: &[u8]) -> EngineResult<Vec<MsearchFrame>> {
    let (mut out, mut from) = (Vec::new(), 0);
    while let Some(end) = next_marker(body, from, "msearch")? {
        if end == 0 {
            from = 1;
            continue;
        }
        let header = from..end;
        from = end + 1;
        let Some(end) = next_marker(body, from, "msearch")? else {
            break;
        };
        out.push(MsearchFrame {
            header,
            body: from..end,
        });
        from = end + 1;
    }
    Ok(out)
}

/// Reads one line of a streamed body into `line` (without its `\n`): Ok(false) at the end;
/// an unterminated last line is the error of `what`.
fn read_line(
    body: &mut dyn BufRead,
    line: &mut Vec<u8>,
    what: &str,
    limit: u64,
    total: &mut u64,
) -> EngineResult<bool> {
    line.clear();
    let n = body
        .read_until(b'\n', line)
        .map_err(|e| EngineError::IllegalArgument(format!("failed to read the body: {e}")))?;
    *total += n as u64;
    if *total > limit {
        return Err(EngineError::BodyTooLarge(limit));
    }
    if n == 0 {
        return Ok(false);
    }
    if line.last() != Some(&b'\n') {
        return Err(unterminated(what));
    }
    line.pop();
    Ok(true)
}

/// A streamed `_bulk` body read item by item with the rules of [`bulk_frames`].
#[derive(Debug)]
pub struct BulkLines {
    pub line: usize,
    total: u64,
    limit: u64,
}

/// One streamed bulk item: the action line's number and bytes, and the source's bytes.
pub type BulkItemLines = (usize, Vec<u8>, Option<Vec<u8>>);

impl BulkLines {
    /// A reader refusing bodies over `limit` bytes.
    pub fn new(limit: u64) -> BulkLines {
        BulkLines {
            line: 0,
            total: 0,
            limit,
        }
    }

    /// The next item, or None at the end.
    pub fn next_item(&mut self, body: &mut dyn BufRead) -> EngineResult<Option<BulkItemLines>> {
        let mut action = Vec::new();
        loop {
            if !read_line(body, &mut action, "bulk", self.limit, &mut self.total)? {
                return Ok(None);
            }
            self.line += 1;
            if !blank(&action) {
                break;
            }
        }
        let n = self.line;
        if is_delete(&action) {
            return Ok(Some((n, action, None)));
        }
        let mut source = Vec::new();
        if !read_line(body, &mut source, "bulk", self.limit, &mut self.total)? {
            return Ok(None);
        }
        self.line += 1;
        if source.last() == Some(&b'\r') {
            source.pop();
        }
        Ok(Some((n, action, Some(source))))
    }
}

/// A streamed `_msearch` body read pair by pair with the rules of [`msearch_frames`].
#[derive(Debug)]
pub struct MsearchLines {
    first: bool,
    total: u64,
    limit: u64,
}

impl MsearchLines {
    /// A reader refusing bodies over `limit` bytes.
    pub fn new(limit: u64) -> MsearchLines {
        MsearchLines {
            first: true,
            total: 0,
            limit,
        }
    }

    /// The next (header, body) pair, or None at the end.
    pub fn next_pair(
        &mut self,
        body: &mut dyn BufRead,
    ) -> EngineResult<Option<(Vec<u8>, Vec<u8>)>> {
        let mut header = Vec::new();
        if !read_line(body, &mut header, "msearch", self.limit, &mut self.total)? {
            return Ok(None);
        }
        if std::mem::take(&mut self.first)
            && header.is_empty()
            && !read_line(body, &mut header, "msearch", self.limit, &mut self.total)?
        {
            return Ok(None);
        }
        let mut b = Vec::new();
        if !read_line(body, &mut b, "msearch", self.limit, &mut self.total)? {
            return Ok(None);
        }
        Ok(Some((header, b)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk_streamed(body: &[u8]) -> EngineResult<Vec<BulkItemLines>> {
        let mut r = BulkLines::new(u64::MAX);
        let mut rd: &[u8] = body;
        let mut out = Vec::new();
        while let Some(x) = r.next_item(&mut rd)? {
            out.push(x);
        }
        Ok(out)
    }

    fn msearch_streamed(body: &[u8]) -> EngineResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut r = MsearchLines::new(u64::MAX);
        let mut rd: &[u8] = body;
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
            let framed = bulk_frames(body.as_bytes()).map(|v| {
                v.into_iter()
                    .map(|f| {
                        let t = |r: Range<usize>| {
                            String::from_utf8(body.as_bytes()[r].to_vec()).unwrap()
                        };
                        (t(f.action), f.source.map(t))
                    })
                    .collect::<Vec<_>>()
            });
            assert_eq!(
                framed.as_ref().map_err(|_| ()),
                want.as_ref().map_err(|_| ()),
                "{body:?}"
            );
            let streamed = bulk_streamed(body.as_bytes()).map(|v| {
                v.into_iter()
                    .map(|(_, a, s)| {
                        (
                            String::from_utf8(a).unwrap(),
                            s.map(|s| String::from_utf8(s).unwrap()),
                        )
                    })
                    .collect::<Vec<_>>()
            });
            assert_eq!(streamed.map_err(|_| ()), want, "streamed {body:?}");
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
            let framed = msearch_frames(body.as_bytes()).map(|v| {
                v.into_iter()
                    .map(|f| (&body[f.header], &body[f.body]))
                    .collect::<Vec<_>>()
            });
            assert_eq!(framed.map_err(|_| ()), want, "{body:?}");
            let streamed = msearch_streamed(body.as_bytes()).map(|v| {
                v.into_iter()
                    .map(|(h, b)| (String::from_utf8(h).unwrap(), String::from_utf8(b).unwrap()))
                    .collect::<Vec<_>>()
            });
            let want_owned = want.map(|v| {
                v.into_iter()
                    .map(|(h, b)| (h.to_string(), b.to_string()))
                    .collect::<Vec<_>>()
            });
            assert_eq!(streamed.map_err(|_| ()), want_owned, "streamed {body:?}");
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
