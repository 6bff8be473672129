//! The strict recursive-descent parser of `json` (see the module docs for what it refuses).
//!
//! Must not touch: what the values mean.

use std::borrow::Cow;

use super::{JsonError, Number, Object, Value};

/// Deepest nesting of arrays and objects accepted.
pub const MAX_DEPTH: usize = 100;
/// Objects with more keys than this are checked for duplicates by sorting, not pairwise.
const PAIRWISE_KEYS: usize = 16;

/// Parses a whole body: one value, surrounded by whitespace only.
pub fn parse(bytes: &[u8]) -> Result<Value, JsonError> {
    match parse_opt(bytes)? {
        Some(v) => Ok(v),
        None => Err(Reader::new(bytes).error_at(bytes.len(), "no content to read")),
    }
}

/// Like [`parse`], but an empty or whitespace-only body is `None`.
pub fn parse_opt(bytes: &[u8]) -> Result<Option<Value>, JsonError> {
    let mut r = Reader::new(bytes);
    r.skip_ws();
    if r.pos == bytes.len() {
        return Ok(None);
    }
    let v = r.value(0)?;
    r.skip_ws();
    if r.pos != bytes.len() {
        return Err(r.error("unexpected content after the end of the root value"));
    }
    Ok(Some(v))
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Self {
        Reader { b, pos: 0 }
    }

    fn error(&self, what: impl Into<Cow<'static, str>>) -> JsonError {
        self.error_at(self.pos, what)
    }

    fn error_at(&self, pos: usize, what: impl Into<Cow<'static, str>>) -> JsonError {
        let before = &self.b[..pos.min(self.b.len())];
        let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
        let start = before
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |i| i + 1);
        JsonError {
            line: line as u32,
            column: (pos - start + 1) as u32,
            what: what.into(),
        }
    }

    fn unexpected(&self) -> JsonError {
        match self.b.get(self.pos) {
            None => self.error("unexpected end of input"),
            Some(&c) if c.is_ascii_graphic() => self.error(format!(
                "unexpected character ('{}' (code {c}))",
                char::from(c)
            )),
            Some(&c) => self.error(format!("unexpected character (code {c})")),
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.pos) {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, JsonError> {
        match self.b.get(self.pos) {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(Value::String),
            Some(b't') => self.literal(b"true", Value::Bool(true)),
            Some(b'f') => self.literal(b"false", Value::Bool(false)),
            Some(b'n') => self.literal(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number().map(Value::Number),
            _ => Err(self.unexpected()),
        }
    }

    fn literal(&mut self, word: &[u8], v: Value) -> Result<Value, JsonError> {
        if !self.b[self.pos..].starts_with(word) {
            return Err(self.unexpected());
        }
        self.pos += word.len();
        if self
            .b
            .get(self.pos)
            .is_some_and(|c| c.is_ascii_alphanumeric())
        {
            return Err(self.unexpected());
        }
        Ok(v)
    }

    fn number(&mut self) -> Result<Number, JsonError> {
        let start = self.pos;
        let digits = |r: &mut Self| {
            let s = r.pos;
            while r.b.get(r.pos).is_some_and(u8::is_ascii_digit) {
                r.pos += 1;
            }
            r.pos - s
        };
        if self.b[self.pos] == b'-' {
            self.pos += 1;
        }
        match self.b.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return Err(self.error("invalid number: expected a digit")),
        }
        if self.b.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if digits(self) == 0 {
                return Err(self.error("invalid number: expected a digit after the decimal point"));
            }
        }
        if let Some(b'e' | b'E') = self.b.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.b.get(self.pos) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Err(self.error("invalid number: expected a digit in the exponent"));
            }
        }
        if self
            .b
            .get(self.pos)
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'+' | b'-'))
        {
            return Err(self.error("invalid number"));
        }
        let text = std::str::from_utf8(&self.b[start..self.pos]).expect("ASCII digits");
        // Past a double's range (`1e999`): read as infinity by one engine, refused by
        // another, exact by a third. No client means it, so the edge does not guess.
        if !text.parse::<f64>().is_ok_and(f64::is_finite) {
            return Err(self.error("number out of range of a double"));
        }
        Ok(Number(text.into()))
    }

    fn array(&mut self, depth: usize) -> Result<Value, JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.b.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth)?);
            self.skip_ws();
            match self.b.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        let open = self.pos;
        self.pos += 1;
        let mut entries: Vec<(String, Value)> = Vec::new();
        self.skip_ws();
        if self.b.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(Value::Object(Object(entries)));
        }
        loop {
            self.skip_ws();
            if self.b.get(self.pos) != Some(&b'"') {
                return Err(match self.b.get(self.pos) {
                    Some(b'\'') => {
                        self.error("single quotes are not JSON: field names need double quotes")
                    }
                    Some(b'/') => self.error("comments are not JSON"),
                    Some(_) => self.error("expected a double-quoted field name"),
                    None => self.error("unexpected end of input"),
                });
            }
            let key_at = self.pos;
            let key = self.string()?;
            if entries.len() < PAIRWISE_KEYS && entries.iter().any(|(k, _)| *k == key) {
                return Err(self.error_at(key_at, format!("duplicate field [{key}]")));
            }
            self.skip_ws();
            if self.b.get(self.pos) != Some(&b':') {
                return Err(self.unexpected());
            }
            self.pos += 1;
            self.skip_ws();
            let v = self.value(depth)?;
            entries.push((key, v));
            self.skip_ws();
            match self.b.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(self.unexpected()),
            }
        }
        if entries.len() > PAIRWISE_KEYS {
            let mut keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
            keys.sort_unstable();
            if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
                return Err(self.error_at(open, format!("duplicate field [{}]", w[0])));
            }
        }
        Ok(Value::Object(Object(entries)))
    }

    /// A string from its opening quote; returns it unescaped.
    fn string(&mut self) -> Result<String, JsonError> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let rest = &self.b[self.pos..];
            let stop = rest
                .iter()
                .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                .ok_or_else(|| self.error_at(self.b.len(), "unterminated string"))?;
            let run = std::str::from_utf8(&rest[..stop]).map_err(|e| {
                self.error_at(self.pos + e.valid_up_to(), "invalid UTF-8 in a string")
            })?;
            out.push_str(run);
            self.pos += stop;
            match self.b[self.pos] {
                b'"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                b'\\' => self.escape(&mut out)?,
                c => {
                    return Err(self.error(format!(
                        "control character (code {c}) in a string: it must be escaped"
                    )))
                }
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), JsonError> {
        let at = self.pos;
        let c = match self.b.get(self.pos + 1) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                self.pos += 2;
                return self.unicode_escape(at, out);
            }
            _ => return Err(self.error("invalid escape in a string")),
        };
        out.push(c);
        self.pos += 2;
        Ok(())
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let h = self.b.get(at..at + 4)?;
        h.iter().try_fold(0u32, |acc, &c| {
            let d = char::from(c).to_digit(16)?;
            Some(acc << 4 | d)
        })
    }

    fn unicode_escape(&mut self, at: usize, out: &mut String) -> Result<(), JsonError> {
        let bad = |r: &Self| r.error_at(at, "invalid \\u escape in a string");
        let hi = self.hex4(self.pos).ok_or_else(|| bad(self))?;
        self.pos += 4;
        let cp = match hi {
            0xD800..=0xDBFF => {
                let lo = match self.b.get(self.pos..self.pos + 2) {
                    Some(b"\\u") => self.hex4(self.pos + 2),
                    _ => None,
                };
                let lo = lo
                    .filter(|lo| (0xDC00..=0xDFFF).contains(lo))
                    .ok_or_else(|| self.error_at(at, "lone surrogate escape in a string"))?;
                self.pos += 6;
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.error_at(at, "lone surrogate escape in a string")),
            cp => cp,
        };
        out.push(char::from_u32(cp).ok_or_else(|| bad(self))?);
        Ok(())
    }
}
