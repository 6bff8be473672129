//! A real Prometheus server for tests: Debian's `prometheus` package, installed with
//! apt-get when missing (a missing tool fails the test, it never skips it), run on
//! 127.0.0.1 at a port that was free a moment before (started again on another if it
//! was taken), with its own config and storage in a
//! temp dir, waited for on its `/-/ready` endpoint, queried through its HTTP API, and
//! killed when dropped.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

use searchgate::percent::encode_component as encode;
use serde_json::Value;

/// Returns the prometheus executable, installing the `prometheus` package when missing.
pub fn ensure_prometheus() -> PathBuf {
    static INSTALL: Once = Once::new();
    let works = || {
        Command::new("prometheus")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    INSTALL.call_once(|| {
        if works() {
            return;
        }
        eprintln!("prometheus is missing: installing Debian's package with apt-get");
        let apt = |args: &[&str]| {
            Command::new("apt-get")
                .arg("-oDPkg::Lock::Timeout=600") // wait for a lock another process holds
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .unwrap_or_else(|e| panic!("cannot run apt-get to install prometheus: {e}"))
        };
        let install = ["install", "-y", "--no-install-recommends", "prometheus"];
        if !apt(&install).success() {
            let _ = apt(&["update"]);
            assert!(
                apt(&install).success(),
                "apt-get install prometheus failed: this test needs a real Prometheus"
            );
        }
    });
    assert!(
        works(),
        "prometheus is still not runnable after installing it"
    );
    PathBuf::from("prometheus")
}

/// A running Prometheus; killed when dropped.
pub struct Prometheus {
    child: Child,
    pub url: String,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts Prometheus with `config` (YAML) and waits until it is ready.
    ///
    /// Prometheus prints no bound address, so it gets a port that was free just now; in
    /// the moment before it binds, another socket may take that port, and Prometheus then
    /// exits at once: it is started again on another port (at most three times in all).
    pub fn start(config: &str) -> Prometheus {
        let bin = ensure_prometheus();
        let mut dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("prometheus.yml");
        std::fs::write(&file, config).unwrap();
        for attempt in 1..=3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let child = Command::new(&bin)
                .arg(format!("--config.file={}", file.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.path().join(format!("data{attempt}")).display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg("--log.level=warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("start prometheus");
            let mut p = Prometheus {
                child,
                url: format!("http://127.0.0.1:{port}"),
                _dir: dir,
            };
            let end = Instant::now() + Duration::from_secs(60);
            loop {
                if let Ok(Some(status)) = p.child.try_wait() {
                    assert!(
                        attempt < 3,
                        "prometheus exited at start {attempt}: {status}"
                    );
                    eprintln!("prometheus exited at start ({status}); again on another port");
                    break;
                }
                if p.fetch("/-/ready").is_some_and(|(status, _)| status == 200) {
                    return p;
                }
                assert!(
                    Instant::now() < end,
                    "timed out waiting for Prometheus to be ready"
                );
                std::thread::sleep(Duration::from_millis(200));
            }
            dir = p.into_dir();
        }
        unreachable!("the third start either returns or fails")
    }

    /// `GET path` (status and body), `None` when nothing answers yet.
    pub fn get(&mut self, path: &str) -> Option<(u16, String)> {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("prometheus exited: {status}");
        }
        self.fetch(path)
    }

    /// `GET path`, whether or not Prometheus still runs.
    fn fetch(&self, path: &str) -> Option<(u16, String)> {
        let agent =
            searchgate::outbound::agent("test", Duration::from_secs(10), Default::default());
        let mut resp = agent.get(format!("{}{path}", self.url)).call().ok()?;
        let status = resp.status().as_u16();
        Some((status, resp.body_mut().read_to_string().ok()?))
    }

    /// The `data.result` of an instant query through the HTTP API (`/api/v1/query`).
    pub fn query(&mut self, promql: &str) -> Vec<Value> {
        let path = format!("/api/v1/query?query={}", encode(promql));
        let (status, body) = self.get(&path).expect("prometheus answers");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("JSON: {body}"));
        assert_eq!(status, 200, "{promql}: {v}");
        assert_eq!(v["status"], "success", "{promql}: {v}");
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// The one value of an instant query's vector result (`None`: no series yet).
    pub fn scalar(&mut self, promql: &str) -> Option<f64> {
        let result = self.query(promql);
        assert!(
            result.len() <= 1,
            "{promql}: one series at most: {result:?}"
        );
        let v = result.first()?["value"][1].as_str()?.to_string();
        v.parse().ok()
    }

    /// Polls `f` until it gives `Some` (every 200 ms, Prometheus' own pace), up to `limit`.
    pub fn wait_for<T>(
        &mut self,
        what: &str,
        limit: Duration,
        mut f: impl FnMut(&mut Prometheus) -> Option<T>,
    ) -> T {
        let end = Instant::now() + limit;
        loop {
            if let Some(v) = f(self) {
                return v;
            }
            assert!(Instant::now() < end, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Prometheus {
    /// Stops this Prometheus (if it still runs) and gives back its temp dir.
    fn into_dir(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let dir = tempfile::tempdir().expect("temp dir");
        std::mem::replace(&mut self._dir, dir)
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
