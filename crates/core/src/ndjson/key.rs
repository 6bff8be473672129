//! The first key of a `_bulk` action line, read as Elasticsearch's JSON parser (Jackson with
//! comments allowed) reads it: blank space and `/* */` comments before and after the `{`,
//! a UTF-8 byte order mark at the line's start, JSON escapes in the key decoded. Fed the
//! line in pieces (it may cross the chunks of a streamed body); it stops looking as soon as
//! the key is known, so only the first bytes of an action line are read here.
//!
//! Must not touch: the framing (`super`), the rest of the line (the consumers parse it).

/// What an action line's first key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKey {
    Index,
    Create,
    Update,
    /// The only action without a source line.
    Delete,
    /// A key that names no action (Elasticsearch refuses the request).
    Other,
    /// Not an object with a key (not JSON, a line comment, a key left open): Elasticsearch
    /// refuses the request; framed as an action with a source line, like the three above.
    Unreadable,
    /// A line that starts as UTF-16 or UTF-32 text would (a zero byte or a UTF-16 byte
    /// order mark where `{` or `"` must be), which Jackson decodes and this reader does
    /// not: framed as an action *without* a source line, so a count never falls short of
    /// what a decoding reader finds (the line after it counts as an action too).
    Wide,
}

impl ActionKey {
    /// Whether a source line follows an action line with this key.
    #[inline]
    pub fn has_source(self) -> bool {
        !matches!(self, ActionKey::Delete | ActionKey::Wide)
    }

    fn of_key(key: &[u8]) -> ActionKey {
        match key {
            b"index" => ActionKey::Index,
            b"create" => ActionKey::Create,
            b"update" => ActionKey::Update,
            b"delete" => ActionKey::Delete,
            _ => ActionKey::Other,
        }
    }
}

/// The four action keys as clients write them, compact and unescaped, decided from the
/// line's first nine bytes (one 8-byte compare): `None` sends the line to [`KeyReader`].
#[inline]
pub(super) fn quick_key(line: &[u8]) -> Option<ActionKey> {
    const DELETE: u64 = u64::from_le_bytes(*b"{\"delete");
    const INDEX: u64 = u64::from_le_bytes(*b"{\"index\"");
    const CREATE: u64 = u64::from_le_bytes(*b"{\"create");
    const UPDATE: u64 = u64::from_le_bytes(*b"{\"update");
    let (head, rest) = line.split_first_chunk::<8>()?;
    let quote = rest.first() == Some(&b'"');
    match u64::from_le_bytes(*head) {
        INDEX => Some(ActionKey::Index),
        DELETE if quote => Some(ActionKey::Delete),
        CREATE if quote => Some(ActionKey::Create),
        UPDATE if quote => Some(ActionKey::Update),
        _ => None,
    }
}

/// Raw key bytes kept: `"delete"` spelt with six-byte escapes is 36 bytes; a longer key
/// names no action.
const RAW: usize = 40;

/// Where the reader is in the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// At the line's first byte (where a byte order mark may stand).
    Start,
    /// Before the `{`.
    Brace,
    /// After the `{`, before the key's quote.
    Quote,
    /// `/` read where blank space may stand; `after` is where the comment began.
    Slash {
        after: After,
    },
    /// Inside `/* */`; `star`: the last byte was `*`.
    Comment {
        after: After,
        star: bool,
    },
    /// Inside the key; `escape`: the last byte was a backslash.
    Key {
        escape: bool,
    },
    /// The three bytes of a UTF-8 byte order mark, `n` of them read.
    Bom {
        n: u8,
    },
    Done(ActionKey),
}

/// The step a comment returns to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    Brace,
    Quote,
}

impl After {
    fn step(self) -> Step {
        match self {
            After::Brace => Step::Brace,
            After::Quote => Step::Quote,
        }
    }
}

/// Streaming reader of an action line's first key (module docs).
#[derive(Debug, Clone)]
pub(super) struct KeyReader {
    step: Step,
    raw: [u8; RAW],
    len: usize,
    escaped: bool,
}

impl Default for KeyReader {
    fn default() -> Self {
        KeyReader {
            step: Step::Start,
            raw: [0; RAW],
            len: 0,
            escaped: false,
        }
    }
}

impl KeyReader {
    /// Reads the next bytes of the line; the key once it is known.
    pub(super) fn feed(&mut self, bytes: &[u8]) -> Option<ActionKey> {
        for &b in bytes {
            if let Step::Done(k) = self.step {
                return Some(k);
            }
            self.step = self.byte(b);
        }
        match self.step {
            Step::Done(k) => Some(k),
            _ => None,
        }
    }

    /// The key at the line's end (a line that ended before its key did is unreadable).
    pub(super) fn finish(&mut self) -> ActionKey {
        match self.step {
            Step::Done(k) => k,
            _ => ActionKey::Unreadable,
        }
    }

    fn byte(&mut self, b: u8) -> Step {
        match self.step {
            Step::Start if b == 0xEF => Step::Bom { n: 1 },
            Step::Start | Step::Brace => match b {
                b'{' => Step::Quote,
                _ => self.between(b, After::Brace),
            },
            Step::Bom { n } => match (n, b) {
                (1, 0xBB) => Step::Bom { n: 2 },
                (2, 0xBF) => Step::Brace,
                _ => Step::Done(ActionKey::Unreadable),
            },
            Step::Quote => match b {
                b'"' => Step::Key { escape: false },
                _ => self.between(b, After::Quote),
            },
            Step::Slash { after } => match b {
                b'*' => Step::Comment { after, star: false },
                // A line comment hides the rest of the line: no key follows.
                _ => Step::Done(ActionKey::Unreadable),
            },
            Step::Comment { after, star } => match (star, b) {
                (true, b'/') => after.step(),
                (_, b'*') => Step::Comment { after, star: true },
                _ => Step::Comment { after, star: false },
            },
            Step::Key { escape } => self.key_byte(b, escape),
            Step::Done(k) => Step::Done(k),
        }
    }

    /// A byte where blank space may stand, before the `{` or the key.
    fn between(&self, b: u8, after: After) -> Step {
        match b {
            b' ' | b'\t' | b'\r' => after.step(),
            b'/' => Step::Slash { after },
            0 | 0xFE | 0xFF => Step::Done(ActionKey::Wide),
            _ => Step::Done(ActionKey::Unreadable),
        }
    }

    fn key_byte(&mut self, b: u8, escape: bool) -> Step {
        if self.len == RAW {
            return Step::Done(ActionKey::Other);
        }
        self.raw[self.len] = b;
        self.len += 1;
        match (escape, b) {
            (false, b'\\') => {
                self.escaped = true;
                Step::Key { escape: true }
            }
            (false, b'"') => Step::Done(self.decide()),
            _ => Step::Key { escape: false },
        }
    }

    /// The key is complete in `raw` (its closing quote last).
    fn decide(&self) -> ActionKey {
        let key = &self.raw[..self.len - 1];
        if !self.escaped {
            return ActionKey::of_key(key);
        }
        let mut quoted = Vec::with_capacity(self.len + 1);
        quoted.push(b'"');
        quoted.extend_from_slice(&self.raw[..self.len]);
        match serde_json::from_slice::<String>(&quoted) {
            Ok(k) => ActionKey::of_key(k.as_bytes()),
            Err(_) => ActionKey::Unreadable,
        }
    }
}
