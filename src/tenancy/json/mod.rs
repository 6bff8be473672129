//! The one reading of a JSON body: a strict parser into a small value tree, and a compact
//! writer. Every multitenant body that can name an index (or the `_index` field) is read
//! here completely, rewritten as data (see `references`), and written again; the upstream
//! only ever receives bytes this writer produced.
//!
//! Why not `serde_json`: the edge must refuse what an upstream could read differently from
//! it, and must forward numbers exactly as sent. `serde_json::Value` keeps the last of two
//! duplicate keys (Jackson, in Elasticsearch, refuses them; other parsers keep the first),
//! and it rounds numbers through `f64`/`i64` unless its `arbitrary_precision` feature is on,
//! which would change `serde_json` for the whole crate (the engine depends on its number
//! behaviour). So this module is a small hand-written recursive-descent parser that:
//! - refuses duplicate keys at any depth, compared after unescaping;
//! - refuses invalid UTF-8, lone surrogate escapes, control characters in strings,
//!   comments, single quotes, unquoted keys, `NaN`/`Infinity`, leading `+` or zeros,
//!   trailing bytes after the root value (other than whitespace), and nesting deeper than
//!   [`MAX_DEPTH`];
//! - keeps each number as its validated token text ([`Number`]), so `1.0` stays `1.0` and
//!   a 30-digit integer stays exact.
//!
//! Allocation: one `String` per string value and key, one `Vec` per container; nothing
//! per byte. Errors carry the line and column, rendered as Elasticsearch's
//! `x_content_parse_exception` (`[line:col] what`).
//!
//! Must not touch: index names, the query DSL (see `references`), I/O.

mod parse;
#[cfg(test)]
mod tests;

use std::borrow::Cow;

use crate::errors::EdgeError;

mod strings;
pub(in crate::tenancy) use strings::StringState;

pub use parse::{parse, parse_opt, MAX_DEPTH};

/// A JSON number, as its token text (validated against the JSON grammar).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Number(Box<str>);

impl Number {
    /// The token text as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A number from an integer (for values the edge writes itself).
    pub fn from_u64(n: u64) -> Number {
        Number(n.to_string().into_boxed_str())
    }

    /// The value as an unsigned integer, when it is one.
    pub fn as_u64(&self) -> Option<u64> {
        self.0.parse().ok()
    }
}

/// A JSON value. Objects keep their keys in the order sent (no duplicates).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Value>),
    Object(Object),
}

/// A JSON object: keys in the order sent, each at most once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Object(Vec<(String, Value)>);

impl Object {
    /// An empty object.
    pub fn new() -> Object {
        Object(Vec::new())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.0.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Sets `key` (in place when present, appended otherwise).
    pub fn insert(&mut self, key: impl Into<String>, value: Value) {
        let key = key.into();
        match self.get_mut(&key) {
            Some(v) => *v = value,
            None => self.0.push((key, value)),
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(i).1)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&str, &mut Value)> {
        self.0.iter_mut().map(|(k, v)| (k.as_str(), v))
    }

    /// The entries, for renaming keys in place (the caller keeps them unique).
    pub fn entries_mut(&mut self) -> &mut Vec<(String, Value)> {
        &mut self.0
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }
}

impl FromIterator<(String, Value)> for Object {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Self {
        Object(iter.into_iter().collect())
    }
}

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The JSON type's name, for error messages (`START_OBJECT`-style as Elasticsearch).
    pub fn token_name(&self) -> &'static str {
        match self {
            Value::Null => "VALUE_NULL",
            Value::Bool(_) => "VALUE_BOOLEAN",
            Value::Number(_) => "VALUE_NUMBER",
            Value::String(_) => "VALUE_STRING",
            Value::Array(_) => "START_ARRAY",
            Value::Object(_) => "START_OBJECT",
        }
    }

    /// The compact serialisation.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        write(self, &mut out);
        out
    }
}

/// Why a body is not JSON the edge can read with certainty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    /// 1-based line and column of the offending byte.
    pub line: u32,
    pub column: u32,
    pub what: Cow<'static, str>,
}

impl From<JsonError> for EdgeError {
    fn from(e: JsonError) -> Self {
        EdgeError::Refused {
            status: 400,
            kind: "x_content_parse_exception",
            reason: format!("[{}:{}] {}", e.line, e.column, e.what),
        }
    }
}

/// Appends the compact serialisation of `v` to `out`.
pub fn write(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => out.extend_from_slice(n.as_str().as_bytes()),
        Value::String(s) => write_str(s, out),
        Value::Array(a) => {
            out.push(b'[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(e, out);
            }
            out.push(b']');
        }
        Value::Object(o) => {
            out.push(b'{');
            for (i, (k, e)) in o.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(k, out);
                out.push(b':');
                write(e, out);
            }
            out.push(b'}');
        }
    }
}

/// Appends `s` as a JSON string: `"` and `\` escaped, control characters as `\u00XX`
/// (or their short forms), everything else as UTF-8.
pub fn write_str(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[run..i]);
        run = i + 1;
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 15)]);
        } else {
            out.extend_from_slice(esc);
        }
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}
