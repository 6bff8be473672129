//! Clients for the edge's tests: a connection over plain TCP or TLS (rustls, trusting the
//! edge's generated CA) that sends raw bytes and reads responses one at a time (so pipelined
//! answers can be read in order), a request builder, and checks of Elasticsearch-shaped
//! error bodies (spec 7).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// How long a test waits for any answer before failing.
pub const READ_TIMEOUT: Duration = Duration::from_secs(15);

trait Stream: Read + Write + Send {
    fn tcp(&self) -> &TcpStream;
}

impl Stream for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Stream for rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    fn tcp(&self) -> &TcpStream {
        &self.sock
    }
}

/// A client connection to the edge.
pub struct Conn {
    stream: Box<dyn Stream>,
    buf: Vec<u8>,
    eof: bool,
}

/// A response as read from the edge.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// `0` for HTTP/1.0, `1` for HTTP/1.1.
    pub version: u8,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body came chunked.
    pub chunked: bool,
    /// The body was delimited by the connection closing.
    pub until_close: bool,
}

impl Response {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (panics with the body when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {:?} (status {})",
                String::from_utf8_lossy(&self.body),
                self.status
            )
        })
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// True when the edge said it will close the connection.
    pub fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }

    /// Asserts an Elasticsearch-shaped error of `status` (spec 7): JSON with `status` equal
    /// to the HTTP status and `error.root_cause[].type/reason`, `error.type`, `error.reason`.
    /// Returns `error.type`.
    pub fn assert_es_error(&self, status: u16) -> String {
        assert_eq!(self.status, status, "status; body {}", self.text());
        let ct = self.header("content-type").unwrap_or("");
        assert!(ct.starts_with("application/json"), "content type {ct:?}");
        let v = self.json();
        assert_eq!(v["status"], status, "status field in {v}");
        let err = &v["error"];
        let kind = err["type"].as_str().expect("error.type").to_string();
        assert!(!kind.is_empty());
        assert!(err["reason"].as_str().is_some_and(|r| !r.is_empty()), "{v}");
        let root = err["root_cause"].as_array().expect("error.root_cause");
        assert!(!root.is_empty(), "{v}");
        assert_eq!(root[0]["type"], err["type"], "{v}");
        assert!(root[0]["reason"].is_string(), "{v}");
        kind
    }
}

/// A root store with the CA certificate at `ca`.
pub fn tls_client_config(ca: &Path) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).expect("read the edge's CA") {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

impl Conn {
    /// A plain TCP connection.
    pub fn plain(addr: SocketAddr) -> Conn {
        Conn::plain_after(addr, &[])
    }

    /// A plain TCP connection whose first bytes are `preamble` (a load balancer's PROXY
    /// header).
    pub fn plain_after(addr: SocketAddr, preamble: &[u8]) -> Conn {
        let mut tcp = TcpStream::connect(addr).expect("connect to the edge");
        tcp.write_all(preamble).unwrap();
        tcp.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        tcp.set_nodelay(true).unwrap();
        Conn {
            stream: Box::new(tcp),
            buf: Vec::new(),
            eof: false,
        }
    }

    /// A TLS connection sending `server_name` as SNI (an IP literal sends none); the
    /// handshake completes before this returns.
    pub fn tls(addr: SocketAddr, ca: &Path, server_name: &str) -> Conn {
        Conn::tls_with(addr, tls_client_config(ca), server_name)
    }

    /// As [`Conn::tls`] with a given client configuration.
    pub fn tls_with(
        addr: SocketAddr,
        config: Arc<rustls::ClientConfig>,
        server_name: &str,
    ) -> Conn {
        Conn::tls_after(addr, config, server_name, &[])
    }

    /// As [`Conn::tls_with`], the TLS handshake after `preamble` (a PROXY header).
    pub fn tls_after(
        addr: SocketAddr,
        config: Arc<rustls::ClientConfig>,
        server_name: &str,
        preamble: &[u8],
    ) -> Conn {
        let mut tcp = TcpStream::connect(addr).expect("connect to the edge");
        tcp.write_all(preamble).unwrap();
        tcp.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        tcp.set_nodelay(true).unwrap();
        let name = ServerName::try_from(server_name.to_string()).expect("a server name");
        let conn = rustls::ClientConnection::new(config, name).unwrap();
        let mut s = rustls::StreamOwned::new(conn, tcp);
        while s.conn.is_handshaking() {
            s.conn
                .complete_io(&mut s.sock)
                .expect("TLS handshake with the edge");
        }
        Conn {
            stream: Box::new(s),
            buf: Vec::new(),
            eof: false,
        }
    }

    /// The underlying socket.
    pub fn tcp(&self) -> &TcpStream {
        self.stream.tcp()
    }

    /// Sends bytes (panics on failure).
    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send to the edge");
        self.stream.flush().expect("flush to the edge");
    }

    /// Sends bytes; the error when the edge already closed.
    pub fn try_send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)?;
        self.stream.flush()
    }

    /// Reads more into the buffer; false at end of stream (a reset counts as the end).
    fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        let mut chunk = [0u8; 64 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) => {
                self.eof = true;
                Ok(false)
            }
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Ok(true)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::UnexpectedEof
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionAborted
                ) =>
            {
                self.eof = true;
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Reads one response (panics when none comes).
    pub fn response(&mut self) -> Response {
        self.try_response(false)
            .unwrap_or_else(|e| panic!("no response from the edge: {e}"))
    }

    /// Reads the response to a HEAD request (no body whatever the headers say).
    pub fn head_response(&mut self) -> Response {
        self.try_response(true)
            .unwrap_or_else(|e| panic!("no response from the edge: {e}"))
    }

    /// Reads one response; interim 1xx responses are returned too.
    pub fn try_response(&mut self, to_head: bool) -> io::Result<Response> {
        let (mut resp, head_len) = loop {
            if let Some(parsed) = parse_head(&self.buf)? {
                break parsed;
            }
            if !self.fill()? {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "connection closed; got {:?}",
                        String::from_utf8_lossy(&self.buf)
                    ),
                ));
            }
        };
        self.buf.drain(..head_len);
        if to_head || resp.status < 200 || resp.status == 204 || resp.status == 304 {
            return Ok(resp);
        }
        let te = resp
            .header("transfer-encoding")
            .map(str::to_ascii_lowercase);
        let cl = resp
            .header("content-length")
            .map(|v| v.trim().parse::<usize>());
        if te.as_deref() == Some("chunked") {
            resp.chunked = true;
            resp.body = self.read_chunked()?;
        } else if let Some(cl) = cl {
            let n = cl.map_err(|_| io::Error::other("bad Content-Length"))?;
            resp.body = self.read_exact_body(n)?;
        } else {
            resp.until_close = true;
            while self.fill()? {}
            resp.body = std::mem::take(&mut self.buf);
        }
        Ok(resp)
    }

    fn read_exact_body(&mut self, n: usize) -> io::Result<Vec<u8>> {
        while self.buf.len() < n {
            if !self.fill()? {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("body cut at {} of {n} bytes", self.buf.len()),
                ));
            }
        }
        Ok(self.buf.drain(..n).collect())
    }

    fn read_line(&mut self) -> io::Result<Vec<u8>> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = self.buf[..i].to_vec();
                self.buf.drain(..i + 2);
                return Ok(line);
            }
            if !self.fill()? {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "chunked body cut",
                ));
            }
        }
    }

    fn read_chunked(&mut self) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let line = self.read_line()?;
            let text = String::from_utf8_lossy(&line);
            let size = usize::from_str_radix(text.split(';').next().unwrap().trim(), 16)
                .map_err(|_| io::Error::other(format!("bad chunk size {text:?}")))?;
            if size == 0 {
                while !self.read_line()?.is_empty() {}
                return Ok(body);
            }
            body.extend(self.read_exact_body(size)?);
            if self.read_line()? != b"" {
                return Err(io::Error::other("chunk not followed by CRLF"));
            }
        }
    }

    /// True when the edge closes the connection (end of stream, or a reset) with no further
    /// byte, within the read timeout. Panics if bytes arrive.
    pub fn is_closed(&mut self) -> bool {
        match self.fill() {
            Ok(false) => self.buf.is_empty(),
            Ok(true) => panic!(
                "expected the connection to close, got {:?}",
                String::from_utf8_lossy(&self.buf)
            ),
            Err(_) => false,
        }
    }
}

fn parse_head(buf: &[u8]) -> io::Result<Option<(Response, usize)>> {
    let mut slots = [httparse::EMPTY_HEADER; 128];
    let mut r = httparse::Response::new(&mut slots);
    match r.parse(buf) {
        Ok(httparse::Status::Partial) => Ok(None),
        Ok(httparse::Status::Complete(n)) => Ok(Some((
            Response {
                status: r.code.unwrap(),
                version: r.version.unwrap(),
                headers: r
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect(),
                body: Vec::new(),
                chunked: false,
                until_close: false,
            },
            n,
        ))),
        Err(e) => Err(io::Error::other(format!(
            "malformed response head ({e}): {:?}",
            String::from_utf8_lossy(buf)
        ))),
    }
}

/// `Basic base64(user:pass)`.
pub fn basic(user: &str, pass: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
    )
}

/// A request to serialise by hand (raw bytes, so tests control every header).
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    pub target: String,
    pub version: String,
    pub host: Option<String>,
    pub auth: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Send the body chunked, in pieces of this size.
    pub chunked: Option<usize>,
    /// Add `Content-Length` for a non-empty body (default true).
    pub content_length: bool,
}

impl Req {
    /// `METHOD target HTTP/1.1` with nothing else.
    pub fn new(method: &str, target: &str) -> Req {
        Req {
            method: method.into(),
            target: target.into(),
            version: "HTTP/1.1".into(),
            host: None,
            auth: None,
            headers: Vec::new(),
            body: Vec::new(),
            chunked: None,
            content_length: true,
        }
    }
    pub fn host(mut self, host: &str) -> Req {
        self.host = Some(host.into());
        self
    }
    pub fn auth(mut self, user: &str, pass: &str) -> Req {
        self.auth = Some(basic(user, pass));
        self
    }
    pub fn no_auth(mut self) -> Req {
        self.auth = None;
        self
    }
    pub fn header(mut self, name: &str, value: &str) -> Req {
        self.headers.push((name.into(), value.into()));
        self
    }
    pub fn mock(self, plan: &str) -> Req {
        self.header("X-Mock", plan)
    }
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Req {
        self.body = body.into();
        self
    }
    pub fn chunked(mut self, piece: usize) -> Req {
        self.chunked = Some(piece);
        self
    }
    pub fn http10(mut self) -> Req {
        self.version = "HTTP/1.0".into();
        self
    }

    /// The head (through the empty line).
    pub fn head_bytes(&self) -> Vec<u8> {
        let mut out = format!("{} {} {}\r\n", self.method, self.target, self.version);
        if let Some(h) = &self.host {
            out.push_str(&format!("Host: {h}\r\n"));
        }
        if let Some(a) = &self.auth {
            out.push_str(&format!("Authorization: {a}\r\n"));
        }
        for (k, v) in &self.headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        if self.chunked.is_some() {
            out.push_str("Transfer-Encoding: chunked\r\n");
        } else if self.content_length && !self.body.is_empty() {
            out.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        out.push_str("\r\n");
        out.into_bytes()
    }

    /// The body as sent (chunk-encoded when chunked).
    pub fn body_bytes(&self) -> Vec<u8> {
        match self.chunked {
            None => self.body.clone(),
            Some(piece) => chunk_encode(&self.body, piece),
        }
    }

    /// Head and body.
    pub fn bytes(&self) -> Vec<u8> {
        [self.head_bytes(), self.body_bytes()].concat()
    }
}

/// `body` in chunks of `piece` bytes, with the last chunk.
pub fn chunk_encode(body: &[u8], piece: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for p in body.chunks(piece.max(1)) {
        out.extend_from_slice(format!("{:x}\r\n", p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}
