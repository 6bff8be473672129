//! The request body as a `BufRead` over the socket: bytes are decoded in place by the one
//! body reader, `proto::BodyCursor` (Content-Length or chunked, with the engine's limit), so a handler
//! streams a body of any size through one read buffer. Bytes after the body (a pipelined
//! next request) stay in the buffer for the connection.

use std::io::{self, BufRead, Read};
use std::ops::Range;

use searchgate_core::proto::{BodyCursor, ProtoError, Step};

/// Socket reads grow the buffer by this much.
const READ_CHUNK: usize = 64 << 10;

/// A streaming request body.
#[derive(Debug)]
pub struct BodyReader<'a, S: Read> {
    stream: &'a mut S,
    buf: &'a mut Vec<u8>,
    cur: BodyCursor,
    /// Decoded payload waiting to be consumed (a range of `buf`).
    pending: Range<usize>,
    error: Option<ProtoError>,
}

impl<'a, S: Read> BodyReader<'a, S> {
    /// A reader of the body whose first bytes (if any) are where `cur` starts in `buf`.
    pub fn new(stream: &'a mut S, buf: &'a mut Vec<u8>, cur: BodyCursor) -> Self {
        BodyReader {
            stream,
            buf,
            cur,
            pending: 0..0,
            error: None,
        }
    }

    /// The framing error met while reading, if any (the connection must close).
    pub fn error(&self) -> Option<ProtoError> {
        self.error
    }

    /// Whether the whole body was read.
    pub fn is_done(&self) -> bool {
        self.cur.is_done() && self.pending.is_empty()
    }

    /// Reads and discards what the handler left of the body, up to `max` bytes. True when
    /// the body ended (the connection can carry another request).
    pub fn drain(&mut self, max: u64) -> bool {
        let mut left = max;
        loop {
            let n = match self.fill_buf() {
                Ok([]) => return self.is_done(),
                Ok(b) => b.len(),
                Err(_) => return false,
            };
            if n as u64 > left {
                return false;
            }
            left -= n as u64;
            self.consume(n);
        }
    }

    /// Bytes of `buf` that belong to the body (the rest is the next request).
    pub fn consumed(&self) -> usize {
        self.cur.pos()
    }

    fn read_more(&mut self) -> io::Result<()> {
        self.buf.drain(..self.cur.pos());
        self.cur.dropped(self.cur.pos());
        let old = self.buf.len();
        self.buf.resize(old + READ_CHUNK, 0);
        let n = loop {
            match self.stream.read(&mut self.buf[old..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.buf.truncate(old);
                    return Err(e);
                }
            }
        };
        self.buf.truncate(old + n);
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the client closed the connection inside the body",
            ));
        }
        Ok(())
    }
}

impl<S: Read> Read for BodyReader<'_, S> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(out.len());
        out[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<S: Read> BufRead for BodyReader<'_, S> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        loop {
            if !self.pending.is_empty() {
                return Ok(&self.buf[self.pending.clone()]);
            }
            if let Some(e) = self.error {
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
            match self.cur.step(self.buf) {
                Ok(Step::Piece(r)) => self.pending = r,
                Ok(Step::Done) => return Ok(&[]),
                Ok(Step::NeedMore) => self.read_more()?,
                Err(e) => self.error = Some(e),
            }
        }
    }

    fn consume(&mut self, amt: usize) {
        self.pending.start = (self.pending.start + amt).min(self.pending.end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use searchgate_core::proto::Framing;

    /// A stream that returns its bytes a few at a time.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn read_all(
        framing: Framing,
        already: &[u8],
        rest: &[u8],
        step: usize,
    ) -> (Result<Vec<u8>, String>, Vec<u8>) {
        let mut buf = already.to_vec();
        let mut s = Trickle(rest, step);
        let cur = BodyCursor::new(framing, 1000, 0).unwrap();
        let mut r = BodyReader::new(&mut s, &mut buf, cur);
        let mut out = Vec::new();
        let res = r
            .read_to_end(&mut out)
            .map(|_| out)
            .map_err(|e| e.to_string());
        let used = r.consumed();
        buf.drain(..used);
        (res, buf)
    }

    #[test]
    fn content_length_at_every_split() {
        let body = b"hello world";
        for split in 0..=body.len() {
            for step in [1, 3, 64] {
                let mut rest = body[split..].to_vec();
                rest.extend_from_slice(b"GET / HTTP/1.1\r\n");
                let (got, left) = read_all(Framing::Length(11), &body[..split], &rest, step);
                assert_eq!(got.unwrap(), body);
                assert!(b"GET / HTTP/1.1\r\n".starts_with(&left), "{left:?}");
            }
        }
    }

    #[test]
    fn chunked_at_every_split() {
        let wire = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nNEXT";
        for split in 0..wire.len() {
            for step in [1, 2, 7, 100] {
                let (got, left) = read_all(Framing::Chunked, &wire[..split], &wire[split..], step);
                assert_eq!(got.unwrap(), b"hello world", "split {split} step {step}");
                assert!(b"NEXT".starts_with(&left), "{left:?}");
            }
        }
    }

    #[test]
    fn errors_and_truncation() {
        let (got, _) = read_all(Framing::Chunked, b"", b"zz\r\n", 10);
        assert!(got.is_err());
        let (got, _) = read_all(Framing::Length(10), b"abc", b"", 10);
        assert!(got.unwrap_err().contains("closed"));
        let (got, _) = read_all(Framing::Chunked, b"", b"800\r\n", 10);
        assert!(got.is_err(), "a chunk over the limit is refused");
    }
}
