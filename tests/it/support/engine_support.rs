//! Shared support of the engine's integration tests: the real `searchgate engine` binary on
//! 127.0.0.1:0 with a temporary data directory (killed on drop), and a raw HTTP/1.1 client
//! built on the crate's own response parser.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use searchgate::proto::{BodyCursor, HeadLimits, Method, ResponseHead, Step};
use serde_json::Value;

/// A running engine process.
pub struct Engine {
    pub child: Option<Child>,
    pub addr: SocketAddr,
    pub dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

impl Engine {
    /// Starts an engine on a fresh temporary data directory.
    pub fn start() -> Engine {
        let tmp = tempfile::tempdir().expect("temp dir");
        let mut e = Engine::start_in(tmp.path(), &[]);
        e._tmp = Some(tmp);
        e
    }

    /// Starts an engine on `dir` with extra arguments.
    pub fn start_in(dir: &Path, extra: &[&str]) -> Engine {
        Engine::start_on("127.0.0.1:0", dir, extra)
    }

    /// Starts an engine listening on `listen` (e.g. the port of one that was killed) on
    /// `dir` with extra arguments.
    pub fn start_on(listen: &str, dir: &Path, extra: &[&str]) -> Engine {
        let mut child = Command::new(env!("CARGO_BIN_EXE_searchgate"))
            .args(["engine", "--listen", listen, "--data-dir"])
            .arg(dir)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn searchgate engine");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the listening line");
        let addr = line
            .trim()
            .rsplit(' ')
            .next()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        Engine {
            child: Some(child),
            addr,
            dir: dir.to_path_buf(),
            _tmp: None,
        }
    }

    /// A new client connection.
    pub fn client(&self) -> Client {
        Client::connect(self.addr)
    }

    /// SIGKILL, as a crash.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().expect("kill -9");
            c.wait().expect("wait");
        }
    }

    /// SIGTERM and wait for a clean exit; returns whether it exited successfully.
    pub fn term(&mut self) -> bool {
        let Some(mut c) = self.child.take() else {
            return false;
        };
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
        unsafe {
            libc::kill(c.id() as i32, libc::SIGTERM);
        }
        c.wait().expect("wait").success()
    }

    /// Restarts on the same data directory (after `kill9` or `term`), keeping the temp dir.
    pub fn restart(mut self) -> Engine {
        self.kill9();
        let tmp = self._tmp.take();
        let mut e = Engine::start_in(&self.dir, &[]);
        e._tmp = tmp;
        e
    }

    /// Resident memory of the process in KB (from /proc).
    pub fn rss_kb(&self) -> u64 {
        let pid = self.child.as_ref().map(|c| c.id()).unwrap_or(0);
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A response read back.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    /// The body as JSON (panics with the body when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.text()))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A keep-alive HTTP/1.1 client on one connection.
pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

fn method_of(m: &str) -> Method {
    match m {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        _ => Method::Other,
    }
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    /// Sends raw bytes.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// Sends a request with a JSON (or NDJSON when the path has `_bulk`/`_msearch`) body.
    pub fn req(&mut self, method: &str, path: &str, body: Option<&str>) -> Resp {
        let ct = if path.contains("_bulk") || path.contains("_msearch") {
            "application/x-ndjson"
        } else {
            "application/json"
        };
        self.req_ct(method, path, body.map(str::as_bytes), ct)
    }

    pub fn req_ct(&mut self, method: &str, path: &str, body: Option<&[u8]>, ct: &str) -> Resp {
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n");
        if let Some(b) = body {
            head.push_str(&format!(
                "Content-Type: {ct}\r\nContent-Length: {}\r\n",
                b.len()
            ));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(body.unwrap_or_default());
        self.send_raw(&out);
        self.read_response(method_of(method))
    }

    pub fn get(&mut self, path: &str) -> Resp {
        self.req("GET", path, None)
    }

    /// Reads one response (skipping 100 Continue).
    pub fn read_response(&mut self, method: Method) -> Resp {
        let mut head = ResponseHead::new();
        loop {
            while !head
                .parse(&self.buf, method, &HeadLimits::default())
                .expect("response head")
            {
                if self.fill() == 0 {
                    panic!("connection closed before a response head");
                }
            }
            let len = head.len;
            if head.status >= 200 {
                let headers = head
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            String::from_utf8_lossy(h.name.of(&self.buf)).into_owned(),
                            String::from_utf8_lossy(h.value.of(&self.buf)).into_owned(),
                        )
                    })
                    .collect();
                let (status, framing) = (head.status, head.framing);
                self.buf.drain(..len);
                let body = self.read_body(BodyCursor::new(framing, u64::MAX, 0).unwrap());
                return Resp {
                    status,
                    headers,
                    body,
                };
            }
            self.buf.drain(..len);
        }
    }

    fn fill(&mut self) -> usize {
        let mut chunk = [0u8; 65536];
        let n = self.stream.read(&mut chunk).expect("read");
        self.buf.extend_from_slice(&chunk[..n]);
        n
    }

    fn read_body(&mut self, mut cur: BodyCursor) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            match cur.step(&self.buf).expect("response body") {
                Step::Piece(r) => out.extend_from_slice(&self.buf[r]),
                Step::Done => break,
                Step::NeedMore => {
                    self.buf.drain(..cur.pos());
                    cur.dropped(cur.pos());
                    if self.fill() == 0 {
                        assert!(
                            cur.complete_at_eof(),
                            "connection closed inside a response body"
                        );
                        break;
                    }
                }
            }
        }
        self.buf.drain(..cur.pos());
        out
    }

    /// True when the server closed the connection (reads EOF).
    pub fn is_closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        self.stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        matches!(self.stream.read(&mut b), Ok(0) | Err(_))
    }
}

/// NDJSON bulk body of `n` documents `{"n": i, "title": "doc i"}` for `index`.
pub fn bulk_body(index: &str, from: usize, n: usize) -> String {
    let mut s = String::new();
    for i in from..from + n {
        s.push_str(&format!("{{\"index\":{{\"_index\":\"{index}\",\"_id\":\"{i}\"}}}}\n{{\"n\":{i},\"title\":\"doc {i}\"}}\n"));
    }
    s
}
