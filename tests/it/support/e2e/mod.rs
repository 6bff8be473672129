//! Support of the end-to-end tests of cluster lifecycle, plans and tenant isolation
//! (`tests/tenancy_*.rs`, `tests/lifecycle_*.rs`, issue 5): `searchgate serve` with a whole
//! config (several plans, multitenant and single-tenant clusters, the embedded engine as
//! its child), a standalone `searchgate engine` (the upstream of single-tenant clusters),
//! tenants as clients, and direct reads of an engine (to learn the real, prefixed index
//! names no client of the edge ever sees).
//!
//! Reuses the edge tests' client (raw requests, byte-exact responses) and mock upstream.
//! Include with `#[path = "support/e2e/mod.rs"] mod e2e;`.

pub mod admin;
pub mod answers;
pub use super::edge::client;
mod config;
pub mod fill;
pub mod first_run;
pub mod hook;
pub use super::edge::metrics;
pub use super::edge::mock;

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

pub use client::{Conn, Req, Response};
#[allow(unused_imports)] // not every test uses every part
pub use config::{ClusterSpec, Config, PlanSpec, DOMAIN};
use serde_json::Value;

/// Lines a child process prints (stdout and stderr together), with waits for a line.
pub struct Lines {
    lines: Mutex<Vec<String>>,
    changed: Condvar,
}

impl Lines {
    fn collect(pipes: Vec<Box<dyn Read + Send>>) -> Arc<Lines> {
        let out = Arc::new(Lines {
            lines: Mutex::new(Vec::new()),
            changed: Condvar::new(),
        });
        for pipe in pipes {
            let o = out.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    o.lines.lock().unwrap().push(line);
                    o.changed.notify_all();
                }
            });
        }
        out
    }

    /// The first line after the first `skip` lines that contains `needle`, waiting up to
    /// `timeout`.
    pub fn wait_for_after(&self, skip: usize, needle: &str, timeout: Duration) -> Option<String> {
        let end = Instant::now() + timeout;
        let mut lines = self.lines.lock().unwrap();
        loop {
            if let Some(l) = lines.iter().skip(skip).find(|l| l.contains(needle)) {
                return Some(l.clone());
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            lines = self.changed.wait_timeout(lines, left).unwrap().0;
        }
    }

    /// The first line containing `needle`, waiting up to `timeout`.
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> Option<String> {
        self.wait_for_after(0, needle, timeout)
    }

    /// Lines so far.
    pub fn len(&self) -> usize {
        self.lines.lock().unwrap().len()
    }

    /// Everything so far.
    pub fn text(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }
}

/// A running `searchgate serve` (with its engine child); stopped when dropped.
pub struct Edge {
    child: Child,
    pub http: SocketAddr,
    /// The HTTPS listener, when the config has `https` (its CA: [`Edge::ca`]).
    pub https: Option<SocketAddr>,
    /// The metrics listener (gauges to wait on).
    pub metrics: Option<SocketAddr>,
    /// The embedded engine's address (reached directly only by tests, never by clients).
    pub engine: Option<SocketAddr>,
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    pub config: Config,
    pub out: Arc<Lines>,
    /// The admin API, when the config has `[admin]`.
    pub admin: Option<admin::Admin>,
}

impl Edge {
    /// Writes `config` and starts the edge; returns once it listens (and has metered each
    /// cluster once, as it does at start).
    pub fn start(config: Config) -> Edge {
        Edge::start_in(tempfile::tempdir().expect("temp dir"), config, &[])
    }

    /// Starts the edge in `dir` (a restart when an edge ran there before: same data dir,
    /// same store) with extra environment variables.
    pub fn start_in(dir: tempfile::TempDir, config: Config, env: &[(&str, &str)]) -> Edge {
        Edge::start_exe(env!("CARGO_BIN_EXE_searchgate").as_ref(), dir, config, env)
    }

    /// [`Edge::start_in`] running the executable `exe` (e.g. a copy the test replaces).
    pub fn start_exe(
        exe: &std::path::Path,
        dir: tempfile::TempDir,
        config: Config,
        env: &[(&str, &str)],
    ) -> Edge {
        let path = dir.path().join("searchgate.toml");
        std::fs::write(&path, config.toml(dir.path())).unwrap();
        let args = [OsString::from("--config"), path.clone().into_os_string()];
        Edge::launch(exe, dir, path, config, &args, env)
    }

    /// `searchgate serve ARGS --threads 2` in `dir`; returns once it listens (and, with
    /// `config.engine` and `config.admin`, once those are up).
    fn launch(
        exe: &std::path::Path,
        dir: tempfile::TempDir,
        path: PathBuf,
        config: Config,
        args: &[OsString],
        env: &[(&str, &str)],
    ) -> Edge {
        let mut child = Command::new(exe)
            .envs(env.iter().copied())
            .arg("serve")
            .args(args)
            .args(["--threads", "2"])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start searchgate serve");
        let out = Lines::collect(vec![
            Box::new(child.stdout.take().unwrap()),
            Box::new(child.stderr.take().unwrap()),
        ]);
        let mut edge = Edge {
            child,
            http: "0.0.0.0:0".parse().unwrap(),
            https: None,
            metrics: None,
            engine: None,
            dir,
            path,
            config,
            out,
            admin: None,
        };
        let line = edge
            .out
            .wait_for("searchgate: listening", Duration::from_secs(60))
            .unwrap_or_else(|| panic!("searchgate did not start:\n{}", edge.out.text()));
        let http = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("http="));
        edge.http = http.expect("http=").parse().expect("http address");
        let https = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("https="));
        edge.https = https.and_then(|a| a.parse().ok());
        let metrics = edge.out.wait_for("searchgate: metrics ", Duration::ZERO);
        edge.metrics = metrics.map(|l| metrics::address_in(&l));
        if edge.config.engine {
            let line = edge
                .out
                .wait_for("searchgate: embedded engine on ", Duration::from_secs(10))
                .expect("the engine's address");
            edge.engine = Some(line.rsplit(' ').next().unwrap().parse().unwrap());
        }
        if edge.config.admin {
            let line = edge
                .out
                .wait_for("searchgate: admin API on ", Duration::from_secs(10))
                .expect("the admin API's address");
            let url = line.split_whitespace().nth(4).expect("a URL").to_string();
            let token = match line.split("token in ").nth(1) {
                // Relative to the edge's directory when the file names it so (`./data`).
                Some(file) => {
                    let file = edge.dir.path().join(file.trim_end_matches(')'));
                    std::fs::read_to_string(file).expect("the token file")
                }
                // `[admin] token = "..."` in the config.
                None => edge
                    .config
                    .admin_extra
                    .iter()
                    .find(|(k, _)| k == "token")
                    .map(|(_, v)| v.trim_matches('"').to_string())
                    .expect("a token in the file or in [admin]"),
            };
            edge.admin = Some(admin::Admin {
                url,
                token: token.trim().to_string(),
            });
        }
        edge
    }

    /// The admin API (panics when the config has none).
    pub fn admin(&self) -> &admin::Admin {
        self.admin.as_ref().expect("an edge with [admin]")
    }

    /// Kills the edge with SIGKILL (no cleanup at all) and hands back its directory, to
    /// start again in it.
    pub fn kill9(mut self) -> tempfile::TempDir {
        self.signal(libc::SIGKILL);
        let _ = self.child.wait();
        // The engine child gets SIGTERM from the kernel (PR_SET_PDEATHSIG): wait until it
        // is gone, so a restart's engine finds its data directory free.
        if let Some(engine) = self.engine {
            eventually("the engine child to exit", Duration::from_secs(20), || {
                std::net::TcpStream::connect(engine).is_err().then_some(())
            });
        }
        std::mem::replace(&mut self.dir, tempfile::tempdir().expect("temp dir"))
    }

    /// Stops the edge with SIGTERM, waits for it, and hands back its directory.
    pub fn stop(mut self) -> tempfile::TempDir {
        self.signal(libc::SIGTERM);
        let status = self.child.wait().expect("the edge exits");
        assert!(
            status.success(),
            "SIGTERM: exit {status:?}\n{}",
            self.out.text()
        );
        std::mem::replace(&mut self.dir, tempfile::tempdir().expect("temp dir"))
    }

    /// Waits until gauge `name` of `cluster` (e.g. `searchgate_queue_depth`) satisfies
    /// `pred`; returns its value.
    pub fn wait_gauge(
        &self,
        name: &str,
        cluster: &str,
        what: &str,
        pred: impl Fn(u64) -> bool,
    ) -> u64 {
        let addr = self.metrics.expect("a metrics listener");
        metrics::wait_for(addr, name, cluster, what, pred)
    }

    /// The embedded engine's address.
    pub fn engine(&self) -> SocketAddr {
        self.engine.expect("an edge with [engine]")
    }

    /// A plain connection (kept alive by the caller).
    pub fn conn(&self) -> Conn {
        Conn::plain(self.http)
    }

    /// The CA that signed the HTTPS listener's certificate (in the edge's data dir).
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("edge").join("ca.pem")
    }

    /// A TLS connection to the HTTPS listener for `host` (the SNI the edge checks against
    /// Host).
    pub fn tls_conn(&self, host: &str) -> Conn {
        Conn::tls(self.https.expect("an edge with https"), &self.ca(), host)
    }

    /// Sends `req` on a new connection over TLS (SNI: its Host) and reads the response.
    pub fn send_tls(&self, req: &Req) -> Response {
        let host = req.host.clone().unwrap_or_else(|| "localhost".into());
        let mut c = self.tls_conn(&host);
        exchange(&mut c, req)
    }

    /// A keep-alive client.
    pub fn client(&self) -> Client {
        Client::new(self.http)
    }

    /// Sends `req` on a new connection and reads the response.
    pub fn send(&self, req: &Req) -> Response {
        let mut c = self.conn();
        exchange(&mut c, req)
    }

    /// A client of cluster `id` with its current credentials.
    pub fn tenant(&self, id: &str) -> Tenant {
        self.config.get(id).tenant()
    }

    /// Rewrites the config file (atomically) and waits until the edge applied it (it
    /// watches the file).
    pub fn reload(&mut self, config: Config) {
        let skip = self.out.len();
        self.write(&config, None);
        self.config = config;
        self.wait_reloaded(skip, "file change");
    }

    /// Rewrites the config file keeping its modification time (the file watcher cannot see
    /// the change), then sends SIGHUP and waits until the edge applied it.
    pub fn reload_by_sighup(&mut self, config: Config) {
        let before = std::fs::metadata(&self.path).unwrap().modified().unwrap();
        self.write(&config, Some(before));
        self.config = config;
        // A reload by the file watcher (a bug: the modification time did not change) would
        // print "file change" first. The watcher looks at the file right after a signal's
        // reload, in the same round of the control loop, so a second SIGHUP (next round)
        // checks that it did nothing.
        for _ in 0..2 {
            let skip = self.out.len();
            self.signal(libc::SIGHUP);
            self.wait_reloaded(skip, "SIGHUP");
        }
    }

    fn write(&self, config: &Config, mtime: Option<SystemTime>) {
        let tmp = self.dir.path().join("searchgate.toml.new");
        std::fs::write(&tmp, config.toml(self.dir.path())).unwrap();
        if let Some(t) = mtime {
            let f = std::fs::File::options().write(true).open(&tmp).unwrap();
            f.set_modified(t).unwrap();
        }
        std::fs::rename(&tmp, &self.path).unwrap();
    }

    /// Waits for the first reload line printed after line `skip` (the control plane's own
    /// changes publish generations too, so the line, not a generation number, is awaited).
    fn wait_reloaded(&mut self, skip: usize, why: &str) {
        let line = self
            .out
            .wait_for_after(skip, "searchgate: reloaded (", Duration::from_secs(15))
            .unwrap_or_else(|| panic!("no reload ({why}):\n{}", self.out.text()));
        assert!(line.contains(&format!("reloaded ({why})")), "{line}");
    }

    /// Sends a signal to the edge.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the pid of our own child, not reaped yet (Drop reaps it); it
        // touches no memory.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
        assert_eq!(rc, 0, "kill({sig})");
    }
}

impl Drop for Edge {
    fn drop(&mut self) {
        // SIGTERM so the edge stops its engine child, SIGKILL if it lingers (the engine then
        // gets SIGTERM from the kernel: it was started with PR_SET_PDEATHSIG).
        if matches!(self.child.try_wait(), Ok(None)) {
            self.signal(libc::SIGTERM);
            let end = Instant::now() + Duration::from_secs(15);
            while Instant::now() < end {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// A standalone `searchgate engine` (the upstream of a single-tenant cluster); killed when
/// dropped.
pub struct Engine {
    child: Child,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Engine {
    /// Starts an engine on 127.0.0.1:0 with a temp data dir.
    pub fn start() -> Engine {
        Engine::start_at("127.0.0.1:0".parse().unwrap())
    }

    /// Starts an engine listening on `addr`.
    pub fn start_at(addr: SocketAddr) -> Engine {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut child = Command::new(env!("CARGO_BIN_EXE_searchgate"))
            .args(["engine", "--listen", &addr.to_string(), "--data-dir"])
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start searchgate engine");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = lines
            .next()
            .and_then(Result::ok)
            .expect("the engine's listening line");
        // Keep reading so the engine never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let addr = line
            .rsplit(' ')
            .next()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        Engine {
            child,
            addr,
            _dir: dir,
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client of one cluster.
#[derive(Debug, Clone)]
pub struct Tenant {
    pub host: String,
    pub user: String,
    pub pass: String,
}

impl Tenant {
    /// A request with this tenant's Host and credentials.
    pub fn req(&self, method: &str, target: &str) -> Req {
        Req::new(method, target)
            .host(&self.host)
            .auth(&self.user, &self.pass)
    }

    /// A request with a JSON body.
    pub fn json(&self, method: &str, target: &str, body: &Value) -> Req {
        self.req(method, target)
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(body).unwrap())
    }

    /// A request with an NDJSON body (`_bulk`, `_msearch`): one line per value.
    pub fn ndjson(&self, method: &str, target: &str, lines: &[Value]) -> Req {
        self.req(method, target)
            .header("Content-Type", "application/x-ndjson")
            .body(ndjson(lines))
    }
}

/// NDJSON text of `lines`, each ending with a newline.
pub fn ndjson(lines: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend(serde_json::to_vec(l).unwrap());
        out.push(b'\n');
    }
    out
}

/// Sends `req` on `c` and reads the answer (HEAD answers have no body).
pub fn exchange(c: &mut Conn, req: &Req) -> Response {
    c.send(&req.bytes());
    if req.method == "HEAD" {
        c.head_response()
    } else {
        c.response()
    }
}

/// A keep-alive client connection that opens a new connection only when the edge closed
/// the previous one (it does after refusing a request whose body it did not read).
pub struct Client {
    addr: SocketAddr,
    conn: Option<Conn>,
    /// Connections opened so far.
    pub opened: usize,
}

impl Client {
    pub fn new(addr: SocketAddr) -> Client {
        Client {
            addr,
            conn: None,
            opened: 0,
        }
    }

    /// Sends `req` and reads the answer.
    pub fn send(&mut self, req: &Req) -> Response {
        let addr = self.addr;
        let opened = &mut self.opened;
        let c = self.conn.get_or_insert_with(|| {
            *opened += 1;
            Conn::plain(addr)
        });
        let r = exchange(c, req);
        if r.closes() {
            self.conn = None;
        }
        r
    }
}

/// Sends a request the mock upstream holds until released (`.mock("hold")`), on a
/// connection and thread of its own.
pub fn held(edge: &Edge, t: &Tenant, path: &str) -> std::thread::JoinHandle<Response> {
    let mut c = edge.client();
    let req = t.req("GET", path).mock("hold");
    std::thread::spawn(move || c.send(&req))
}

/// A request straight to an engine (no edge, no credentials).
pub fn direct(engine: SocketAddr, method: &str, target: &str, body: Option<&Value>) -> Response {
    let mut req = Req::new(method, target).host("engine");
    if let Some(b) = body {
        req = req
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(b).unwrap());
    }
    let mut c = Conn::plain(engine);
    exchange(&mut c, &req)
}

/// One index as an engine lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineIndex {
    pub name: String,
    pub docs: u64,
    pub bytes: u64,
    pub pri: u64,
    pub rep: u64,
}

/// Every index of an engine, its real names (read directly, not through the edge).
pub fn engine_indices(engine: SocketAddr) -> Vec<EngineIndex> {
    let r = direct(engine, "GET", "/_cat/indices?format=json&bytes=b", None);
    assert_eq!(r.status, 200, "{}", r.text());
    let num = |v: &Value| -> u64 {
        v.as_str()
            .and_then(|s| s.parse().ok())
            .or_else(|| v.as_u64())
            .unwrap_or_else(|| panic!("a number: {v}"))
    };
    let mut out: Vec<EngineIndex> = r
        .json()
        .as_array()
        .expect("an array")
        .iter()
        .map(|row| EngineIndex {
            name: row["index"].as_str().expect("index").to_string(),
            docs: num(&row["docs.count"]),
            bytes: num(&row["store.size"]),
            pri: num(&row["pri"]),
            rep: num(&row["rep"]),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The real prefix of the tenant that created an index named `name` on `engine` (the part
/// of its real name before `name`).
pub fn prefix_of(engine: SocketAddr, name: &str) -> String {
    let found: Vec<String> = engine_indices(engine)
        .into_iter()
        .filter_map(|i| i.name.strip_suffix(name).map(str::to_string))
        .filter(|p| !p.is_empty())
        .collect();
    assert_eq!(found.len(), 1, "one real index ends with {name}: {found:?}");
    found.into_iter().next().unwrap()
}

/// Polls `f` until it returns `Some`, up to `timeout` (panics with `what` after).
pub fn eventually<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `error.type` and `error.reason` of an Elasticsearch-shaped error of `status`
/// (spec 7), checked for shape first.
pub fn es_error(r: &Response, status: u16) -> (String, String) {
    let kind = r.assert_es_error(status);
    let reason = r.json()["error"]["reason"].as_str().unwrap().to_string();
    (kind, reason)
}
