//! Body framing: a decoder for Content-Length and chunked bodies with a running byte count
//! and a limit, and the chunk encoding helpers. Never copies payload bytes.

use memchr::memchr;

use super::{Framing, ProtoError};

/// The last chunk and empty trailer section of a chunked body.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Longest chunk-size line accepted, CRLF included (size, extensions).
pub const MAX_CHUNK_LINE: usize = 4096;

/// Longest trailer section accepted, its final CRLF included.
pub const MAX_TRAILERS: usize = 4096;

/// Writes the chunk-size line for a chunk of `len` bytes (`<hex>\r\n`) into `out`, returning
/// the bytes written. The chunk data and then `\r\n` follow it.
pub fn chunk_size_line(len: usize, out: &mut [u8; 18]) -> &[u8] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = if len == 0 {
        1
    } else {
        (usize::BITS - len.leading_zeros()).div_ceil(4) as usize
    };
    for i in 0..digits {
        out[digits - 1 - i] = HEX[(len >> (4 * i)) & 0xf];
    }
    out[digits] = b'\r';
    out[digits + 1] = b'\n';
    &out[..digits + 2]
}

/// Appends `data` to `out` as one chunk: size line, data, CRLF. Nothing for no data (an
/// empty chunk would end the body: that is [`LAST_CHUNK`]'s job).
pub fn push_chunk(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let mut line = [0u8; 18];
    out.extend_from_slice(chunk_size_line(data.len(), &mut line));
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// Room [`push_chunk_with`] keeps for a chunk-size line: the longest one.
const SIZE_LINE_ROOM: usize = 18;

/// Appends one chunk whose data `write` appends to `out` itself, so that data is written
/// once, in place, instead of being copied after its size line. Room for the size line is
/// kept before the data; once the length is known the line is written right-aligned in it
/// and what was staged before it (`out[*start..]`: a head, small chunks) moves up against
/// it, `*start` growing by the room left over: what goes out is `out[*start..]`. So the
/// cost is moving what was staged, never the data. Nothing is framed when `write` appends
/// nothing; on `Err`, `out` is as it was. `*start` must not be past the end of `out`.
pub fn push_chunk_with<E>(
    out: &mut Vec<u8>,
    start: &mut usize,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    let before = out.len();
    out.resize(before + SIZE_LINE_ROOM, 0);
    if let Err(e) = write(out) {
        out.truncate(before);
        return Err(e);
    }
    let len = out.len() - before - SIZE_LINE_ROOM;
    if len == 0 {
        out.truncate(before);
        return Ok(());
    }
    let mut line = [0u8; 18];
    let line = chunk_size_line(len, &mut line);
    let shift = SIZE_LINE_ROOM - line.len();
    out[before + shift..before + SIZE_LINE_ROOM].copy_from_slice(line);
    out.copy_within(*start..before, *start + shift);
    *start += shift;
    out.extend_from_slice(b"\r\n");
    Ok(())
}

/// What one call of [`BodyDecoder::decode`] found at the front of its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decoded {
    /// Input bytes consumed (framing and payload).
    pub consumed: usize,
    /// Payload bytes found, as a range of the input (empty when none).
    pub data: std::ops::Range<usize>,
    /// The body is complete (the last chunk and trailers, or the last byte of the length).
    pub done: bool,
}

/// Where the decoder is in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Content-Length: payload bytes still to come.
    Length(u64),
    /// Response body delimited by the connection closing: everything is payload.
    UntilClose,
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk's data: bytes still to come.
    Data(u64),
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    /// Inside the trailer section: bytes of it seen so far.
    Trailers(usize),
    Done,
}

/// Incremental body decoder with a payload limit.
#[derive(Debug, Clone)]
pub(crate) struct BodyDecoder {
    framing: Framing,
    state: State,
    total: u64,
    limit: u64,
}

impl BodyDecoder {
    /// A decoder for `framing` that refuses more than `limit` payload bytes.
    /// A Content-Length above `limit` is refused at once with `BodyTooLarge`.
    /// `Framing::None` and `Length(0)` are done at once.
    pub fn new(framing: Framing, limit: u64) -> Result<Self, ProtoError> {
        let state = match framing {
            Framing::None | Framing::Length(0) => State::Done,
            Framing::Length(n) if n > limit => return Err(ProtoError::BodyTooLarge),
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::Size,
            Framing::UntilClose => State::UntilClose,
        };
        Ok(BodyDecoder {
            framing,
            state,
            total: 0,
            limit,
        })
    }

    /// Decodes from the front of `input`. Call again with the unconsumed rest (plus more
    /// bytes read) until `done`. Returns at most one payload range per call. When `input`
    /// holds only part of a chunk-size line, consumes nothing and returns no data: the caller
    /// reads more. A chunk-size line or trailer section longer than 4KB is `BadChunk`.
    ///
    /// For chunked bodies the framing that follows a payload range in `input` (the CRLF,
    /// the next size line, the trailers) is consumed in the same call, so `done` comes with
    /// the last payload when the whole end of the body is there. A chunk whose declared
    /// size would take the body past the limit is refused at its size line, before any of
    /// its bytes are returned.
    pub fn decode(&mut self, input: &[u8]) -> Result<Decoded, ProtoError> {
        match self.state {
            State::Length(remaining) => {
                let n = remaining.min(input.len() as u64);
                self.total += n;
                self.state = if n == remaining {
                    State::Done
                } else {
                    State::Length(remaining - n)
                };
                Ok(self.decoded(n as usize, 0..n as usize))
            }
            State::UntilClose => {
                self.total = self.total.saturating_add(input.len() as u64);
                if self.total > self.limit {
                    return Err(ProtoError::BodyTooLarge);
                }
                Ok(self.decoded(input.len(), 0..input.len()))
            }
            _ => self.decode_chunked(input),
        }
    }

    fn decoded(&self, consumed: usize, data: std::ops::Range<usize>) -> Decoded {
        Decoded {
            consumed,
            data,
            done: self.state == State::Done,
        }
    }

    /// Chunked decoding (RFC 9112 7.1): walks framing until one payload range is found
    /// and the framing after it is consumed, or the input runs out.
    fn decode_chunked(&mut self, input: &[u8]) -> Result<Decoded, ProtoError> {
        let mut pos = 0;
        let mut data = 0..0;
        loop {
            let rest = &input[pos..];
            let used = match self.state {
                State::Size => self.size_line(rest)?,
                State::Data(remaining) => {
                    if !data.is_empty() || rest.is_empty() {
                        break;
                    }
                    let n = remaining.min(rest.len() as u64);
                    self.total += n;
                    self.state = if n == remaining {
                        State::DataEnd
                    } else {
                        State::Data(remaining - n)
                    };
                    data = pos..pos + n as usize;
                    Some(n as usize)
                }
                State::DataEnd => data_end(rest)?.inspect(|_| self.state = State::Size),
                State::Trailers(seen) => self.trailer_line(rest, seen)?,
                _ => break,
            };
            match used {
                Some(n) => pos += n,
                None => break,
            }
        }
        Ok(self.decoded(pos, data))
    }

    /// Reads a chunk-size line: `1*HEXDIG *( BWS ";" ext ) CRLF`, extensions ignored.
    fn size_line(&mut self, rest: &[u8]) -> Result<Option<usize>, ProtoError> {
        let Some(lf) = memchr(b'\n', &rest[..rest.len().min(MAX_CHUNK_LINE)]) else {
            if rest.len() >= MAX_CHUNK_LINE {
                return Err(ProtoError::BadChunk("chunk-size line too long"));
            }
            return Ok(None);
        };
        if lf == 0 || rest[lf - 1] != b'\r' {
            return Err(ProtoError::BadChunk("chunk-size line without CRLF"));
        }
        let line = &rest[..lf - 1];
        let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if digits == 0 {
            return Err(ProtoError::BadChunk("missing chunk size"));
        }
        let mut size: u64 = 0;
        for &b in &line[..digits] {
            let d = (b as char).to_digit(16).unwrap_or(0);
            size = size
                .checked_mul(16)
                .map(|s| s + u64::from(d))
                .ok_or(ProtoError::BadChunk("chunk size overflow"))?;
        }
        check_extensions(&line[digits..])?;
        if size == 0 {
            self.state = State::Trailers(0);
        } else {
            match self.total.checked_add(size) {
                Some(t) if t <= self.limit => self.state = State::Data(size),
                _ => return Err(ProtoError::BodyTooLarge),
            }
        }
        Ok(Some(lf + 1))
    }

    /// Reads one trailer line (discarded) or the empty line that ends the body.
    fn trailer_line(&mut self, rest: &[u8], seen: usize) -> Result<Option<usize>, ProtoError> {
        let budget = MAX_TRAILERS - seen;
        let Some(lf) = memchr(b'\n', &rest[..rest.len().min(budget)]) else {
            if rest.len() >= budget {
                return Err(ProtoError::BadChunk("trailer section too long"));
            }
            return Ok(None);
        };
        if lf == 0 || rest[lf - 1] != b'\r' {
            return Err(ProtoError::BadChunk("trailer line without CRLF"));
        }
        let line = &rest[..lf - 1];
        if line.is_empty() {
            self.state = State::Done;
        } else {
            check_trailer(line)?;
            self.state = State::Trailers(seen + lf + 1);
        }
        Ok(Some(lf + 1))
    }

    /// True once the whole body has been decoded.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// True when the connection closing now ends the body properly: it is done, or it is
    /// delimited by the close. Otherwise the body was cut short.
    pub fn complete_at_eof(&self) -> bool {
        matches!(self.state, State::Done | State::UntilClose)
    }

    /// Payload bytes decoded so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// For `Length` framing, the payload bytes still to come.
    pub fn remaining(&self) -> Option<u64> {
        match (self.framing, self.state) {
            (Framing::Length(_), State::Length(n)) => Some(n),
            (Framing::Length(_) | Framing::None, _) => Some(0),
            _ => None,
        }
    }
}

/// What [`BodyCursor::step`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Payload bytes: this range of the buffer. The cursor has moved past them (and past
    /// the framing that followed them in the buffer).
    Piece(std::ops::Range<usize>),
    /// Nothing more can be decoded from what the buffer holds: read more after it. For a
    /// close-delimited body, the end of the input ends it ([`BodyCursor::complete_at_eof`]).
    NeedMore,
    /// The body is complete; what follows the cursor's position is not part of it.
    Done,
}

/// The one body reader of the workspace: a decoder and a position in the caller's buffer.
/// Every reader (the edge's forwarding and buffering, the relay of responses, the admin
/// API, the engine, the test clients) loops on [`BodyCursor::step`]: a piece to pass on,
/// "read more", or done; so framing, limits and errors are handled in one place and a body
/// read whole or streamed in pieces gets the same answer.
#[derive(Debug, Clone)]
pub struct BodyCursor {
    dec: BodyDecoder,
    pos: usize,
    /// The decoder reported done along with the last piece; the next step says so.
    done: bool,
}

impl BodyCursor {
    /// A cursor for a body framed by `framing` starting at `pos` of the caller's buffer,
    /// refusing more than `limit` payload bytes (a Content-Length above it at once).
    pub fn new(framing: Framing, limit: u64, pos: usize) -> Result<Self, ProtoError> {
        let dec = BodyDecoder::new(framing, limit)?;
        let done = dec.is_done();
        Ok(BodyCursor { dec, pos, done })
    }

    /// The next step over `buf` from the cursor's position.
    pub fn step(&mut self, buf: &[u8]) -> Result<Step, ProtoError> {
        loop {
            if self.done {
                return Ok(Step::Done);
            }
            let rest = buf.get(self.pos..).unwrap_or_default();
            let got = self.dec.decode(rest)?;
            let start = self.pos;
            self.pos += got.consumed;
            self.done = got.done;
            if !got.data.is_empty() {
                return Ok(Step::Piece(start + got.data.start..start + got.data.end));
            }
            if got.consumed == 0 && !got.done {
                return Ok(Step::NeedMore);
            }
        }
    }

    /// Where the cursor is in the buffer: everything before it has been decoded.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The caller removed the first `n` bytes of its buffer (`n` at most [`Self::pos`]),
    /// to make room before reading more.
    pub fn dropped(&mut self, n: usize) {
        self.pos -= n.min(self.pos);
    }

    /// True once the whole body has been decoded.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// True when the input ending now ends the body properly (it is done, or it is
    /// delimited by the close); otherwise the body was cut short.
    pub fn complete_at_eof(&self) -> bool {
        self.dec.complete_at_eof()
    }

    /// Payload bytes decoded so far.
    pub fn total(&self) -> u64 {
        self.dec.total()
    }

    /// For `Length` framing, the payload bytes still to come.
    pub fn remaining(&self) -> Option<u64> {
        self.dec.remaining()
    }
}

/// The CRLF after a chunk's data.
fn data_end(rest: &[u8]) -> Result<Option<usize>, ProtoError> {
    match rest {
        [b'\r', b'\n', ..] => Ok(Some(2)),
        [] | [b'\r'] => Ok(None),
        _ => Err(ProtoError::BadChunk("missing CRLF after chunk data")),
    }
}

/// After the size: nothing, or `BWS ";"` and extensions of visible characters, SP and HT
/// (RFC 9112 7.1.1); bare whitespace after the size is refused.
fn check_extensions(ext: &[u8]) -> Result<(), ProtoError> {
    if ext.is_empty() {
        return Ok(());
    }
    let ws = ext.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    if ext.get(ws) != Some(&b';') {
        return Err(ProtoError::BadChunk("invalid chunk size"));
    }
    if ext.iter().all(|&b| b == b'\t' || b >= 0x20 && b != 0x7f) {
        Ok(())
    } else {
        Err(ProtoError::BadChunk("invalid byte in chunk extension"))
    }
}

/// A trailer field line: a token name, a colon, a value without control bytes.
fn check_trailer(line: &[u8]) -> Result<(), ProtoError> {
    let colon = line.iter().position(|&b| b == b':').unwrap_or(0);
    let name_ok = colon > 0 && line[..colon].iter().all(|&b| is_tchar(b));
    let value_ok = line[colon..]
        .iter()
        .all(|&b| b == b'\t' || b >= 0x20 && b != 0x7f);
    if name_ok && value_ok {
        Ok(())
    } else {
        Err(ProtoError::BadChunk("invalid trailer field"))
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}
