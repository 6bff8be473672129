//! The mock's side of the wire: reading request heads (httparse) and bodies
//! (Content-Length, chunked) from a connection, recording requests cut before their end.

use std::io::Read;
use std::net::TcpStream;

use super::{Cut, State};

/// Bytes read from a connection and not yet consumed.
pub(super) struct Reader<'a> {
    pub(super) conn: TcpStream,
    pub(super) buf: Vec<u8>,
    pub(super) st: &'a State,
}

impl Reader<'_> {
    /// Reads more; false at end of stream or error.
    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        match self.conn.read(&mut chunk) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    /// The next line (without CRLF), or None at end of stream.
    fn line(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = self.buf[..i].to_vec();
                self.buf.drain(..i + 2);
                return Some(line);
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// Exactly `n` bytes appended to `out`; false (with what came appended) at end of
    /// stream. `body`: they are a Content-Length body (counted as they come).
    fn exact(&mut self, n: usize, out: &mut Vec<u8>, body: bool) -> bool {
        let mut left = n;
        loop {
            let take = left.min(self.buf.len());
            out.extend_from_slice(&self.buf[..take]);
            self.buf.drain(..take);
            if body && take > 0 {
                self.st.update(|g| g.body_bytes += take);
            }
            left -= take;
            if left == 0 {
                return true;
            }
            if !self.fill() {
                return false;
            }
        }
    }
}

/// A request head as the mock parsed it.
pub(super) struct Head {
    pub(super) method: String,
    pub(super) target: String,
    pub(super) version: u8,
    pub(super) headers: Vec<(String, String)>,
}

impl Head {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads a head: `Ok(None)` at a clean end between requests, `Err(())` when cut.
fn read_head(r: &mut Reader) -> Result<Option<Head>, ()> {
    loop {
        if let Some(i) = r.buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let raw = r.buf[..i + 4].to_vec();
            r.buf.drain(..i + 4);
            let mut slots = [httparse::EMPTY_HEADER; 256];
            let mut req = httparse::Request::new(&mut slots);
            let status = req.parse(&raw).expect("the edge sent a valid head");
            assert!(status.is_complete());
            return Ok(Some(Head {
                method: req.method.unwrap().to_string(),
                target: req.path.unwrap().to_string(),
                version: req.version.unwrap(),
                headers: req
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect(),
            }));
        }
        if !r.fill() {
            return if r.buf.is_empty() { Ok(None) } else { Err(()) };
        }
    }
}

/// Reads a chunked body into `out`; false when the stream ended first.
fn read_chunked(r: &mut Reader, out: &mut Vec<u8>) -> bool {
    loop {
        let Some(line) = r.line() else { return false };
        let text = String::from_utf8_lossy(&line);
        let size_text = text.split(';').next().unwrap().trim();
        let size = usize::from_str_radix(size_text, 16).expect("the edge sent a valid chunk size");
        if size == 0 {
            // Trailers until the empty line.
            loop {
                match r.line() {
                    None => return false,
                    Some(l) if l.is_empty() => return true,
                    Some(_) => {}
                }
            }
        }
        if !r.exact(size, out, false) {
            return false;
        }
        let mut crlf = Vec::new();
        if !r.exact(2, &mut crlf, false) {
            return false;
        }
        assert_eq!(crlf, b"\r\n", "chunk data is followed by CRLF");
    }
}

/// Reads one request (head, decoded body, chunked?); `None` at the end of the connection,
/// recording a cut request when it ended in the middle of one.
pub(super) fn read_request(st: &State, r: &mut Reader) -> Option<(Head, Vec<u8>, bool)> {
    let head = match read_head(r) {
        Ok(Some(h)) => h,
        Ok(None) => return None,
        Err(()) => {
            st.update(|g| {
                g.cuts.push(Cut {
                    target: String::new(),
                    body_received: 0,
                })
            });
            return None;
        }
    };
    let mut body = Vec::new();
    let chunked = head
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let complete = if chunked {
        read_chunked(r, &mut body)
    } else {
        let len = head.header("content-length").map_or(0, |v| {
            v.trim().parse::<usize>().expect("a valid Content-Length")
        });
        r.exact(len, &mut body, true)
    };
    if !complete {
        st.update(|g| {
            g.cuts.push(Cut {
                target: head.target.clone(),
                body_received: body.len(),
            })
        });
        return None;
    }
    Some((head, body, chunked))
}
