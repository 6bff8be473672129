//! Redaction of parser "source snippets" in upstream responses (attacks-10 r2 #1).
//!
//! Jackson (Elasticsearch's JSON parser) ends the message of a parse error with
//! `at [Source: (String)"<up to 500 characters of the input>"[truncated N chars]; line: L,
//! column: C]`, and Elasticsearch returns that message as an error `reason`. Two leaks follow:
//! the snippet is cut at 500 characters, so a prefix the edge put into the input can come back
//! cut short (its 20 secret characters without the final `-`, which the prefix stripper does
//! not recognise); and before Jackson 2.13 a parser over a slice of a byte array prints the
//! first 500 bytes of the *whole* array, which for Elasticsearch's pooled network buffers are
//! other requests' bytes (other tenants' names and data: CVE-2021-22145).
//!
//! So from `[Source: ` to the end of the JSON string it stands in, everything is replaced by
//! `[Source: REDACTED]`. The upstream writes the snippet JSON-escaped, so the first unescaped
//! `"` after the marker ends the string whatever the snippet holds (a planted `"; line:` is
//! `\"; line:` there). Streaming: chunks of any size, at most `MARKER.len() - 1` bytes held.
//!
//! Must not touch: prefixes (the stripper runs after this), I/O.

use memchr::memmem;
use std::sync::OnceLock;

/// What starts a snippet (Jackson 2.9+ `JsonLocation`: `[Source: (type)"…"`; older versions
/// print the content right after the space).
const MARKER: &[u8] = b"[Source: ";
const REPLACEMENT: &[u8] = b"[Source: REDACTED]";
static MARKER_FINDER: OnceLock<memmem::Finder<'static>> = OnceLock::new();

/// Removes source snippets from a response body fed in chunks.
#[derive(Debug)]
pub struct SnippetRedactor {
    /// Built once: a response filter is set up for every response of a multitenant
    /// cluster, and building a searcher cost more than scanning a small answer.
    finder: &'static memmem::Finder<'static>,
    /// A proper prefix of the marker, held back from the end of the last chunk.
    carry: Vec<u8>,
    /// Inside a snippet: dropping bytes until the unescaped `"` that ends its string.
    dropping: bool,
    /// The last dropped byte was an unescaped backslash.
    escaped: bool,
}

impl Default for SnippetRedactor {
    fn default() -> Self {
        SnippetRedactor {
            finder: MARKER_FINDER.get_or_init(|| memmem::Finder::new(MARKER)),
            carry: Vec::with_capacity(MARKER.len()),
            dropping: false,
            escaped: false,
        }
    }
}

impl SnippetRedactor {
    pub fn new() -> Self {
        Self::default()
    }

    /// Redacts `input`, appending the output to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        if self.carry.is_empty() {
            self.scan(input, out);
        } else {
            let mut joined = std::mem::take(&mut self.carry);
            joined.extend_from_slice(input);
            self.scan(&joined, out);
        }
    }

    /// Releases what is held back at the end of the body (a snippet still open is dropped).
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.carry);
    }

    fn scan(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        loop {
            if self.dropping {
                match self.end_of_string(input) {
                    Some(at) => {
                        self.dropping = false;
                        out.extend_from_slice(REPLACEMENT);
                        input = &input[at..]; // the closing quote is kept
                    }
                    None => return,
                }
            }
            match self.finder.find(input) {
                Some(m) => {
                    out.extend_from_slice(&input[..m]);
                    self.dropping = true;
                    self.escaped = false;
                    input = &input[m + MARKER.len()..];
                }
                None => {
                    let keep = held_back(input);
                    out.extend_from_slice(&input[..input.len() - keep]);
                    self.carry.extend_from_slice(&input[input.len() - keep..]);
                    return;
                }
            }
        }
    }

    /// The position of the unescaped `"` ending the snippet's string, following escapes
    /// across chunks.
    fn end_of_string(&mut self, input: &[u8]) -> Option<usize> {
        for (i, &b) in input.iter().enumerate() {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                return Some(i);
            }
        }
        None
    }
}

/// Length of the longest suffix of `hay` that is a proper prefix of the marker.
fn held_back(hay: &[u8]) -> usize {
    let max = (MARKER.len() - 1).min(hay.len());
    (1..=max)
        .rev()
        .find(|&k| hay[hay.len() - k..] == MARKER[..k])
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(chunks: &[&[u8]]) -> String {
        let mut r = SnippetRedactor::new();
        let mut out = Vec::new();
        for c in chunks {
            r.feed(c, &mut out);
        }
        r.finish(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn snippets_are_redacted_at_every_split_point() {
        let table = [
            (
                r#"{"reason":"Numeric value (9) out of range of int\n at [Source: (String)\"{\"a\":\"abcdefghijklmnopqrst\"[truncated 9 chars]; line: 1, column: 5]","x":1}"#,
                r#"{"reason":"Numeric value (9) out of range of int\n at [Source: REDACTED]","x":1}"#,
            ),
            // a planted terminator inside the snippet does not end the redaction
            (
                r#"{"r":"at [Source: (byte[])\"x\\\"; line: 1]\", \"leak\\\\\"[truncated 1 bytes]; line: 1, column: 2]"}"#,
                r#"{"r":"at [Source: REDACTED]"}"#,
            ),
            // two snippets, text around them kept
            (
                r#"["[Source: (String)\"a\"; line: 1]","b","[Source: (char[])\"c\"; line: 2]"]"#,
                r#"["[Source: REDACTED]","b","[Source: REDACTED]"]"#,
            ),
            // no marker: unchanged, including a partial marker at the end
            (r#"{"a":"[Source"}"#, r#"{"a":"[Source"}"#),
            (r#"{"a":"x"}[Sour"#, r#"{"a":"x"}[Sour"#),
        ];
        for (input, want) in table {
            let b = input.as_bytes();
            assert_eq!(redact(&[b]), want, "{input}");
            for i in 0..=b.len() {
                assert_eq!(redact(&[&b[..i], &b[i..]]), want, "{input} at {i}");
            }
            let bytes: Vec<&[u8]> = b.chunks(1).collect();
            assert_eq!(redact(&bytes), want, "{input} byte by byte");
        }
    }

    #[test]
    fn an_unterminated_snippet_is_dropped_to_the_end() {
        assert_eq!(
            redact(&[b"{\"r\":\"at [Source: (byte[])\\\"secret"]),
            "{\"r\":\"at "
        );
    }
}
