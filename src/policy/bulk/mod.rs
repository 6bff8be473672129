//! Counting the actions of a `_bulk` body while it streams through (spec 7: "too many
//! documents in one bulk call" is 413), so the edge can refuse it before the chunk holding
//! the action over the limit is forwarded.
//!
//! An action line is `{"index"|"create"|"update"|"delete": ...}`; every action but `delete`
//! is followed by one source line. Blank lines are skipped, as Elasticsearch does. A line
//! that is not a recognisable action still counts as one (Elasticsearch rejects the whole
//! request for it anyway), so the count never under-states.
//!
//! Must not touch: I/O, the rest of the body (lines are scanned with memchr, not parsed).

/// What the next non-blank line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Action,
    Source,
}

/// The line being scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    Between,
    Action,
    Source,
}

/// Bytes of an action line kept to recognise its key.
const PREFIX: usize = 64;

/// Streaming action counter for `_bulk` bodies.
#[derive(Debug, Clone)]
pub struct BulkCounter {
    actions: u64,
    expect: Expect,
    line: Line,
    /// The current action line's key is known; `after` is what follows it.
    recognised: bool,
    after: Expect,
    prefix: [u8; PREFIX],
    prefix_len: usize,
}

impl Default for BulkCounter {
    fn default() -> Self {
        Self::new()
    }
}

impl BulkCounter {
    /// A counter at the start of a body.
    pub fn new() -> Self {
        BulkCounter {
            actions: 0,
            expect: Expect::Action,
            line: Line::Between,
            recognised: false,
            after: Expect::Source,
            prefix: [0; PREFIX],
            prefix_len: 0,
        }
    }

    /// Actions seen so far (an action counts from its first byte).
    pub fn actions(&self) -> u64 {
        self.actions
    }

    /// Feeds the next bytes of the body; returns the running action count.
    pub fn feed(&mut self, mut data: &[u8]) -> u64 {
        while !data.is_empty() {
            if self.line == Line::Between {
                match data
                    .iter()
                    .position(|b| !matches!(b, b'\n' | b'\r' | b' ' | b'\t'))
                {
                    None => return self.actions,
                    Some(i) => data = &data[i..],
                }
                self.start_line();
            }
            let end = memchr::memchr(b'\n', data);
            if self.line == Line::Action && !self.recognised {
                let line = &data[..end.unwrap_or(data.len())];
                let take = line.len().min(PREFIX - self.prefix_len);
                self.prefix[self.prefix_len..self.prefix_len + take].copy_from_slice(&line[..take]);
                self.prefix_len += take;
                self.recognise();
            }
            match end {
                Some(i) => {
                    self.end_line();
                    data = &data[i + 1..];
                }
                None => return self.actions,
            }
        }
        self.actions
    }

    fn start_line(&mut self) {
        if self.expect == Expect::Action {
            self.actions += 1;
            self.line = Line::Action;
            self.recognised = false;
            self.prefix_len = 0;
        } else {
            self.line = Line::Source;
        }
    }

    fn recognise(&mut self) {
        if let Some(is_delete) = action_is_delete(&self.prefix[..self.prefix_len]) {
            self.recognised = true;
            self.after = if is_delete {
                Expect::Action
            } else {
                Expect::Source
            };
        }
    }

    fn end_line(&mut self) {
        self.expect = match self.line {
            // An unrecognisable action line is assumed to carry a source line.
            Line::Action if self.recognised => self.after,
            Line::Action => Expect::Source,
            Line::Source | Line::Between => Expect::Action,
        };
        self.line = Line::Between;
    }
}

/// Whether the action line starting `line` is a `delete` (which has no source line), once
/// its first key is complete in `line`. Keys written with JSON escapes (`"\u0064elete"`)
/// are decoded, as the upstream decodes them.
fn action_is_delete(line: &[u8]) -> Option<bool> {
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < line.len() && matches!(line[*i], b' ' | b'\t' | b'\r') {
            *i += 1;
        }
    };
    skip_ws(&mut i);
    if line.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    skip_ws(&mut i);
    if line.get(i) != Some(&b'"') {
        return None;
    }
    let start = i;
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        match line.get(j)? {
            b'\\' => {
                escaped = true;
                j += 2;
            }
            b'"' => break,
            _ => j += 1,
        }
    }
    if !escaped {
        return Some(&line[start + 1..j] == b"delete");
    }
    let key: String = serde_json::from_slice(&line[start..=j]).ok()?;
    Some(key == "delete")
}

#[cfg(test)]
mod tests;
