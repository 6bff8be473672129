//! Starting `searchgate serve` for a test: a config written into a temp dir (ports 0, small
//! timeouts, one plan, clusters pointing at a mock upstream), the `listening` line read from
//! stdout, stdout and stderr collected, and the process killed when the [`Server`] guard is
//! dropped.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::client::{Conn, Req, Response};

/// The default cluster: `acme`, answering at [`HOST`] with [`USER`]:[`PASS`].
pub const HOST: &str = "acme-7f3k.us-east-1.localhost";
pub const USER: &str = "acmeuser1";
pub const PASS: &str = "acmepass1";

/// A cluster in the test config.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    pub id: String,
    pub hostname: String,
    pub region: String,
    pub username: String,
    pub password: String,
    pub mode: String,
    pub upstream: SocketAddr,
    /// Further nodes of its upstream, after `upstream`.
    pub more_nodes: Vec<SocketAddr>,
    /// The `[[upstream_pools]]` it names instead of listing nodes.
    pub pool: Option<String>,
}

impl ClusterSpec {
    /// A cluster `id` at `<id>-h.us-east-1.localhost` with `<id>user`:`<id>pass`.
    pub fn new(id: &str, upstream: SocketAddr) -> ClusterSpec {
        ClusterSpec {
            id: id.into(),
            hostname: format!("{id}-h"),
            region: "us-east-1".into(),
            username: format!("{id}user"),
            password: format!("{id}pass"),
            mode: "normal".into(),
            upstream,
            more_nodes: Vec::new(),
            pool: None,
        }
    }

    /// The same cluster on the pool `name` (its `upstream` names it; the nodes are unused).
    pub fn pool(mut self, name: &str) -> ClusterSpec {
        self.pool = Some(name.into());
        self
    }

    /// The same cluster with these nodes after `upstream`.
    pub fn nodes(mut self, more: &[SocketAddr]) -> ClusterSpec {
        self.more_nodes = more.to_vec();
        self
    }

    /// The Host it answers at.
    pub fn host(&self) -> String {
        format!("{}.{}.localhost", self.hostname, self.region)
    }

    pub fn mode(mut self, mode: &str) -> ClusterSpec {
        self.mode = mode.into();
        self
    }

    fn toml(&self) -> String {
        let nodes: Vec<String> = std::iter::once(&self.upstream)
            .chain(&self.more_nodes)
            .map(|a| format!("\"{a}\""))
            .collect();
        let upstream = match &self.pool {
            Some(p) => format!("\"{p}\""),
            None => format!("[{}]", nodes.join(", ")),
        };
        format!(
            "[[clusters]]\nid = \"{}\"\nhostname = \"{}\"\nregion = \"{}\"\nclass = \"single-tenant\"\n\
             plan = \"test\"\nusername = \"{}\"\npassword = \"{}\"\nmode = \"{}\"\nupstream = {}\n\n",
            self.id, self.hostname, self.region, self.username, self.password, self.mode, upstream
        )
    }
}

/// What to start: `[edge]` keys, the one plan `test`, the clusters, driver and threads.
#[derive(Debug, Clone)]
pub struct Setup {
    /// `[edge]` keys with TOML values, overriding the test defaults.
    pub edge: Vec<(String, String)>,
    pub concurrency: u32,
    pub queue_size: u32,
    pub queue_timeout: String,
    pub max_bulk_actions: u64,
    pub clusters: Vec<ClusterSpec>,
    pub driver: String,
    pub threads: usize,
    /// Further sections of the file, as written (e.g. `[upstream_health]`).
    pub sections: String,
    /// Environment variables the edge process gets besides the test's own.
    pub env: Vec<(String, String)>,
}

impl Setup {
    /// The default cluster `acme` ([`HOST`], [`USER`], [`PASS`]) in front of `upstream`,
    /// with a roomy plan and timeouts of a few seconds.
    pub fn new(upstream: SocketAddr) -> Setup {
        let acme = ClusterSpec {
            id: "acme".into(),
            hostname: "acme-7f3k".into(),
            region: "us-east-1".into(),
            username: USER.into(),
            password: PASS.into(),
            mode: "normal".into(),
            upstream,
            more_nodes: Vec::new(),
            pool: None,
        };
        Setup {
            edge: Vec::new(),
            concurrency: 16,
            queue_size: 64,
            queue_timeout: "5s".into(),
            max_bulk_actions: 10_000,
            clusters: vec![acme],
            // SEARCHGATE_TEST_DRIVER=epoll|uring runs every edge test on one driver.
            driver: std::env::var("SEARCHGATE_TEST_DRIVER").unwrap_or_else(|_| "auto".into()),
            threads: 2,
            sections: String::new(),
            env: Vec::new(),
        }
    }

    /// Sets an environment variable of the edge process.
    pub fn env(mut self, key: &str, value: &str) -> Setup {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Sets an `[edge]` key to a TOML value (strings quoted by the caller).
    pub fn edge(mut self, key: &str, toml_value: &str) -> Setup {
        self.edge.retain(|(k, _)| k != key);
        self.edge.push((key.into(), toml_value.into()));
        self
    }

    /// The plan's allowance, queue size and queue timeout.
    pub fn plan(mut self, concurrency: u32, queue_size: u32, queue_timeout: &str) -> Setup {
        self.concurrency = concurrency;
        self.queue_size = queue_size;
        self.queue_timeout = queue_timeout.into();
        self
    }

    pub fn bulk_actions(mut self, n: u64) -> Setup {
        self.max_bulk_actions = n;
        self
    }

    pub fn cluster(mut self, c: ClusterSpec) -> Setup {
        self.clusters.push(c);
        self
    }

    pub fn driver(mut self, d: &str) -> Setup {
        self.driver = d.into();
        self
    }

    pub fn threads(mut self, n: usize) -> Setup {
        self.threads = n;
        self
    }

    /// Appends `toml` (whole sections) to the file.
    pub fn section(mut self, toml: &str) -> Setup {
        self.sections.push_str(toml);
        self.sections.push('\n');
        self
    }

    /// The config file text for data dir `dir`.
    pub fn toml(&self, dir: &Path) -> String {
        let mut edge: Vec<(String, String)> = [
            ("domain", "\"localhost\"".to_string()),
            ("http", "\"127.0.0.1:0\"".into()),
            ("https", "\"127.0.0.1:0\"".into()),
            ("data_dir", format!("{:?}", dir.join("data"))),
            ("route_by_username", "true".into()),
            // Short enough that nothing waits long, long enough for a loaded 2-core machine
            // (tests of these limits set their own).
            ("deadline", "\"10s\"".into()),
            ("head_timeout", "\"5s\"".into()),
            ("body_timeout", "\"5s\"".into()),
            ("idle_timeout", "\"10s\"".into()),
            ("connect_timeout", "\"2s\"".into()),
            ("shutdown_grace", "\"5s\"".into()),
            ("access_log", format!("{:?}", dir.join("access.log"))),
            // Metering reads each upstream once at start, then not during a test.
            ("metering_interval", "\"1h\"".into()),
            // Gauges the tests wait on (queue depth, requests in flight).
            ("metrics", "\"127.0.0.1:0\"".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        for (k, v) in &self.edge {
            edge.retain(|(key, _)| key != k);
            edge.push((k.clone(), v.clone()));
        }
        let mut out = String::from("[edge]\n");
        for (k, v) in edge {
            out.push_str(&format!("{k} = {v}\n"));
        }
        out.push_str(&format!(
            "\n[[plans]]\nname = \"test\"\nconcurrency = {}\nqueue_size = {}\nqueue_timeout = \"{}\"\n\
             shards = 10\ndisk = \"1gb\"\nmemory = \"256mb\"\nmax_bulk_actions = {}\n\n",
            self.concurrency, self.queue_size, self.queue_timeout, self.max_bulk_actions
        ));
        for c in &self.clusters {
            out.push_str(&c.toml());
        }
        out.push_str(&self.sections);
        out
    }

    /// Writes the config and starts the edge; returns once it is listening.
    pub fn start(self) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("searchgate.toml");
        std::fs::write(&config, self.toml(dir.path())).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_searchgate"))
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .arg("--driver")
            .arg(&self.driver)
            .arg("--threads")
            .arg(self.threads.to_string())
            .current_dir(dir.path())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start searchgate");
        let out = Output::collect(child.stdout.take().unwrap());
        let err = Output::collect(child.stderr.take().unwrap());
        let mut server = Server {
            child,
            http: "0.0.0.0:0".parse().unwrap(),
            https: "0.0.0.0:0".parse().unwrap(),
            metrics: None,
            dir,
            config,
            setup: self,
            out,
            err,
            exited: None,
        };
        let line = server
            .out
            .wait_for("searchgate: listening", Duration::from_secs(20))
            .unwrap_or_else(|| {
                panic!(
                    "searchgate did not start; stdout {:?} stderr {:?}",
                    server.out.text(),
                    server.err.text()
                )
            });
        let metrics = server.out.wait_for("searchgate: metrics ", Duration::ZERO);
        server.metrics = metrics.map(|l| super::metrics::address_in(&l));
        for word in line.split_whitespace() {
            if let Some(a) = word.strip_prefix("http=") {
                server.http = a.parse().expect("http address");
            } else if let Some(a) = word.strip_prefix("https=") {
                server.https = a.parse().expect("https address");
            }
        }
        server
    }
}

/// Lines a child writes, collected by a thread, with a wait for a line.
pub struct Output {
    lines: Mutex<Vec<String>>,
    changed: Condvar,
}

impl Output {
    fn collect(pipe: impl Read + Send + 'static) -> Arc<Output> {
        let out = Arc::new(Output {
            lines: Mutex::new(Vec::new()),
            changed: Condvar::new(),
        });
        let o = out.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                o.lines.lock().unwrap().push(line);
                o.changed.notify_all();
            }
        });
        out
    }

    /// The first line containing `needle`, waiting up to `timeout` for it.
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> Option<String> {
        let end = Instant::now() + timeout;
        let mut lines = self.lines.lock().unwrap();
        loop {
            if let Some(l) = lines.iter().find(|l| l.contains(needle)) {
                return Some(l.clone());
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            lines = self.changed.wait_timeout(lines, left).unwrap().0;
        }
    }

    /// Everything so far.
    pub fn text(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }
}

/// A running `searchgate serve`; killed (SIGKILL) when dropped.
pub struct Server {
    child: Child,
    pub http: SocketAddr,
    pub https: SocketAddr,
    /// The metrics listener (`[edge] metrics`), when the setup has one (the default).
    pub metrics: Option<SocketAddr>,
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    pub setup: Setup,
    pub out: Arc<Output>,
    pub err: Arc<Output>,
    exited: Option<ExitStatus>,
}

impl Server {
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
        super::metrics::wait_for(addr, name, cluster, what, pred)
    }

    /// The generated CA certificate.
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("data").join("ca.pem")
    }

    /// A plain connection.
    pub fn conn(&self) -> Conn {
        Conn::plain(self.http)
    }

    /// A TLS connection with SNI `server_name`.
    pub fn tls(&self, server_name: &str) -> Conn {
        Conn::tls(self.https, &self.ca(), server_name)
    }

    /// A request to the default cluster with its Host and credentials.
    pub fn req(&self, method: &str, target: &str) -> Req {
        Req::new(method, target).host(HOST).auth(USER, PASS)
    }

    /// Sends `req` on a new plain connection and reads the response.
    pub fn send(&self, req: &Req) -> Response {
        let mut c = self.conn();
        c.send(&req.bytes());
        c.response()
    }

    /// Sends a signal (SIGTERM, SIGHUP, ...).
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) with the pid of our own child, which has not been reaped yet (the
        // guard owns it and waits only in `wait_exit`/Drop); no memory is involved.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
        assert_eq!(rc, 0, "kill({sig})");
    }

    /// Waits for the process to exit (panics after `timeout`).
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        if let Some(s) = self.exited {
            return s;
        }
        let end = Instant::now() + timeout;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                self.exited = Some(s);
                return s;
            }
            assert!(
                Instant::now() < end,
                "searchgate did not exit within {timeout:?}; stdout {:?}",
                self.out.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The access log's text (complete once the process has exited).
    pub fn access_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default()
    }

    /// Waits until the access log holds a line for which `pred` is true (the edge flushes
    /// its log about every 100 ms); panics after 10 s.
    pub fn wait_log_line(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(l) = self.access_log().lines().find(|l| pred(l)) {
                return l.to_string();
            }
            assert!(
                Instant::now() < end,
                "no access log line for {what}; log:\n{}",
                self.access_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Rewrites the config file from a changed setup (the edge reloads on SIGHUP or change).
    pub fn rewrite(&mut self, setup: Setup) {
        let text = setup.toml(self.dir.path());
        let tmp = self.dir.path().join("searchgate.toml.new");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &self.config).unwrap();
        self.setup = setup;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            let log = self.access_log();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!(
                "--- searchgate stdout ---\n{}\n--- stderr ---\n{}\n--- access log (last lines) ---\n{}",
                self.out.text(),
                self.err.text(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
    }
}
