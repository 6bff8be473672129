//! JSON helpers of the API: reading a request body as JSON (with the engine's size limit),
//! and `?pretty` as a streaming re-indenter that keeps key order and works on streamed
//! responses too (`"key" : value`, two-space indent, as Elasticsearch prints).

use std::io::{self, BufRead, Read, Write};

use serde_json::Value;

use crate::error::{EngineError, EngineResult};

/// Reads the whole body (at most `limit` bytes).
pub fn read_body(body: &mut dyn BufRead, limit: u64) -> EngineResult<Vec<u8>> {
    let mut out = Vec::new();
    body.take(limit + 1).read_to_end(&mut out).map_err(|e| {
        EngineError::IllegalArgument(format!("failed to read the request body: {e}"))
    })?;
    if out.len() as u64 > limit {
        return Err(EngineError::BodyTooLarge(limit));
    }
    crate::budget::charge(out.len() as u64, "<http_request>")?;
    Ok(out)
}

/// Parses a JSON body; empty (or whitespace) is `None`.
pub fn parse_body(bytes: &[u8]) -> EngineResult<Option<Value>> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    serde_json::from_slice(bytes)
        .map(Some)
        .map_err(|e| EngineError::NotJson(format!("Failed to parse the request body: {e}")))
}

/// Reads and parses a JSON body.
pub fn json_body(body: &mut dyn BufRead, limit: u64) -> EngineResult<Option<Value>> {
    let bytes = read_body(body, limit)?;
    let v = parse_body(&bytes)?;
    if let Some(v) = &v {
        crate::budget::charge(crate::budget::value_bytes(v), "<http_request>")?;
    }
    Ok(v)
}

/// A writer that re-indents the compact JSON written through it.
#[derive(Debug)]
pub struct Pretty<W: Write> {
    out: W,
    depth: usize,
    in_str: bool,
    escaped: bool,
    /// An opening bracket waits: newline+indent comes with the first value, or the bracket
    /// closes at once (`{ }`).
    open: bool,
}

impl<W: Write> Pretty<W> {
    /// Wraps `out`.
    pub fn new(out: W) -> Self {
        Pretty {
            out,
            depth: 0,
            in_str: false,
            escaped: false,
            open: false,
        }
    }

    fn newline(&mut self, buf: &mut Vec<u8>) {
        buf.push(b'\n');
        buf.extend(std::iter::repeat_n(b' ', self.depth * 2));
    }

    /// Writes the final newline.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.write_all(b"\n")?;
        Ok(self.out)
    }
}

impl<W: Write> Write for Pretty<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut buf = Vec::with_capacity(data.len() * 2);
        for &b in data {
            if self.in_str {
                buf.push(b);
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_str = false;
                }
                continue;
            }
            if b.is_ascii_whitespace() {
                continue;
            }
            if self.open {
                self.open = false;
                if b == b'}' || b == b']' {
                    self.depth -= 1;
                    buf.extend_from_slice(b" ");
                    buf.push(b);
                    continue;
                }
                self.newline(&mut buf);
            }
            match b {
                b'{' | b'[' => {
                    buf.push(b);
                    self.depth += 1;
                    self.open = true;
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    self.newline(&mut buf);
                    buf.push(b);
                }
                b',' => {
                    buf.push(b);
                    self.newline(&mut buf);
                }
                b':' => buf.extend_from_slice(b" : "),
                b'"' => {
                    self.in_str = true;
                    buf.push(b);
                }
                _ => buf.push(b),
            }
        }
        self.out.write_all(&buf)?;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Pretty-prints compact JSON bytes.
pub fn prettify(compact: &[u8]) -> Vec<u8> {
    let mut p = Pretty::new(Vec::with_capacity(compact.len() * 2));
    let _ = p.write_all(compact);
    p.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_keeps_order_and_strings() {
        let out = prettify(br#"{"b":1,"a":{"x":"a,b:{c}\"d"},"e":[],"f":{},"g":[1,2]}"#);
        let s = String::from_utf8(out).unwrap();
        assert_eq!(
            s,
            "{\n  \"b\" : 1,\n  \"a\" : {\n    \"x\" : \"a,b:{c}\\\"d\"\n  },\n  \"e\" : [ ],\n  \"f\" : { },\n  \"g\" : [\n    1,\n    2\n  ]\n}\n"
        );
        let v: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["a"]["x"], "a,b:{c}\"d");
    }

    #[test]
    fn pretty_works_across_split_writes() {
        let src = br#"{"k":"v\\\"","n":[{"a":1}]}"#;
        for split in 0..src.len() {
            let mut p = Pretty::new(Vec::new());
            p.write_all(&src[..split]).unwrap();
            p.write_all(&src[split..]).unwrap();
            let out = p.finish().unwrap();
            assert_eq!(out, prettify(src), "split at {split}");
        }
    }

    #[test]
    fn body_limits_and_parsing() {
        let mut r: &[u8] = b"{\"a\":1}";
        assert!(json_body(&mut r, 100).unwrap().is_some());
        let mut r: &[u8] = b"  \n";
        assert!(json_body(&mut r, 100).unwrap().is_none());
        let mut r: &[u8] = b"{nope";
        assert_eq!(json_body(&mut r, 100).unwrap_err().status(), 400);
        let mut r: &[u8] = b"0123456789";
        assert_eq!(read_body(&mut r, 9).unwrap_err().status(), 413);
        let mut r: &[u8] = b"0123456789";
        assert_eq!(read_body(&mut r, 10).unwrap().len(), 10);
    }
}
