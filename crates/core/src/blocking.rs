//! The one blocking loop that reads a request head, for the servers that give each
//! connection a thread (the admin API, the embedded engine): parse what is buffered, read
//! more, parse again. Generic over `std::io::Read`; it opens nothing and sets no timeouts
//! (the caller's socket carries them).
//!
//! Must not touch: what the head means, answers, bodies (see `proto::BodyCursor`).

use std::io::{ErrorKind, Read};

use crate::proto::{HeadLimits, ProtoError, RequestHead};

/// Reads from `r` into `buf` until a complete head is at the start of `buf` (`Ok(true)`),
/// or the peer closes or the read fails before one arrives (`Ok(false)`: close quietly).
/// A head the codec refuses is its error.
pub fn read_request_head<R: Read>(
    r: &mut R,
    buf: &mut Vec<u8>,
    head: &mut RequestHead,
    limits: &HeadLimits,
) -> Result<bool, ProtoError> {
    let mut chunk = [0u8; 16 << 10];
    loop {
        if !buf.is_empty() && head.parse(buf, limits)? {
            return Ok(true);
        }
        match r.read(&mut chunk) {
            Ok(0) => return Ok(false),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out its bytes a few at a time.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_head_in_pieces_a_close_and_a_refusal() {
        let limits = HeadLimits::default();
        let msg = b"GET /x HTTP/1.1\r\nHost: a\r\n\r\nnext";
        for step in [1, 5, 100] {
            let (mut buf, mut head) = (Vec::new(), RequestHead::new());
            let got = read_request_head(&mut Trickle(msg, step), &mut buf, &mut head, &limits);
            assert_eq!(got, Ok(true), "reads of {step}");
            assert_eq!(head.path(&buf), b"/x");
        }
        let (mut buf, mut head) = (Vec::new(), RequestHead::new());
        let cut = read_request_head(&mut Trickle(b"GET /x HT", 4), &mut buf, &mut head, &limits);
        assert_eq!(cut, Ok(false));
        let bad = b"GET /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        let (mut buf, mut head) = (Vec::new(), RequestHead::new());
        let refused = read_request_head(&mut Trickle(bad, 7), &mut buf, &mut head, &limits);
        assert!(refused.is_err());
    }
}
