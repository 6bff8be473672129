//! The newcomer's first command, `searchgate serve` without `--config` (README "First run"):
//! the embedded default in `./data` with one demo cluster whose random credentials survive
//! restarts, a generated CA, the embedded engine, and a start banner whose URL and curl
//! line work as printed.
//!
//! Tests bind port 0 only: the default file is created first through the library (the same
//! function `serve` calls), its fixed ports are switched to port 0, and then `serve` runs
//! without `--config` in that directory and loads it, as it does on every later start.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::serve;

use base64::Engine as _;
use searchgate::config::embedded;
use serde_json::{json, Value};

/// `searchgate serve` in `dir` without `--config`; killed (SIGTERM, then SIGKILL) on drop.
struct Server {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Server {
    fn start(dir: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_searchgate"))
            .args(["serve", "--threads", "1"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start searchgate serve");
        let (tx, lines) = mpsc::channel();
        for pipe in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        Server {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The first line containing `needle` (waiting up to 60 s).
    fn wait_for(&mut self, needle: &str) -> String {
        let end = Instant::now() + Duration::from_secs(60);
        if let Some(l) = self.seen.iter().find(|l| l.contains(needle)) {
            return l.clone();
        }
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.contains(needle) {
                        return l;
                    }
                }
                Err(_) => panic!("no line with {needle:?}:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// SIGTERM and the exit status.
    fn stop(mut self) -> Option<i32> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The credentials in the default file.
fn credentials(file: &Path) -> (String, String) {
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let c = &v["clusters"][0];
    (
        c["username"].as_str().unwrap().to_string(),
        c["password"].as_str().unwrap().to_string(),
    )
}

/// `METHOD url` with the userinfo of `url` sent as Basic credentials (as curl does).
fn call(agent: &ureq::Agent, method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (userinfo, hostpath) = rest.split_once('@').unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode(userinfo);
    let target = format!("{scheme}://{hostpath}");
    let req = ureq::http::Request::builder()
        .method(method)
        .uri(&target)
        .header("Authorization", format!("Basic {auth}"))
        .header("Content-Type", "application/json");
    let body = body
        .map(|b| serde_json::to_vec(&b).unwrap())
        .unwrap_or_default();
    let mut resp = agent.run(req.body(body).unwrap()).expect("request");
    let status = resp.status().as_u16();
    let bytes = resp.body_mut().read_to_vec().unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// `searchgate admin ARGS` in `dir`, without `--url` or `--token-file`; its stdout.
fn admin(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .arg("admin")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run searchgate admin");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Creates `<dir>/data/searchgate.toml` as the first start does, on port 0.
fn create_default(dir: &Path) -> PathBuf {
    let (_, file, created) = embedded::load_or_create(&dir.join("data")).unwrap();
    assert!(created);
    let text = std::fs::read_to_string(&file).unwrap();
    for port in ["9243", "9200", "9201", "9900"] {
        assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    }
    let text = text
        .replace("127.0.0.1:9243", "127.0.0.1:0")
        .replace("127.0.0.1:9200", "127.0.0.1:0")
        .replace("127.0.0.1:9201", "127.0.0.1:0")
        .replace("127.0.0.1:9900", "127.0.0.1:0");
    std::fs::write(&file, text).unwrap();
    file
}

// spec 1.1, 1.2, 5: the demo cluster answers at the printed URL, over TLS with the printed
// CA, in front of the embedded engine; a restart keeps the credentials.
#[test]
fn serve_without_config_prints_a_working_url_and_keeps_its_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let file = create_default(dir.path());
    let (user, pass) = credentials(&file);
    assert!(user.len() == 16 && user.chars().all(|c| c.is_ascii_alphanumeric()));
    assert!(pass.len() == 24 && pass.chars().all(|c| c.is_ascii_alphanumeric()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the file holds a password: owner only");
    }

    let mut server = Server::start(dir.path());
    server.wait_for("searchgate: embedded engine on ");
    let by_host = server.wait_for("@demo.local.localhost:");
    assert!(by_host.contains(&format!("https://{user}:{pass}@demo.local.localhost:")));
    let try_line = server.wait_for("try: curl --cacert ");
    let url = try_line
        .split_whitespace()
        .find(|w| w.starts_with("https://"))
        .expect("a URL in the curl line")
        .trim_end_matches('/')
        .to_string();
    assert!(url.starts_with(&format!("https://{user}:{pass}@localhost:")));
    // The CA file the curl line names (relative to where serve runs) is the edge's CA.
    let named = try_line.split_whitespace().nth(3).expect("--cacert FILE");
    let ca = dir.path().join("data/ca.pem");
    assert_eq!(
        std::fs::canonicalize(dir.path().join(named)).unwrap(),
        std::fs::canonicalize(&ca).unwrap(),
        "{try_line}"
    );

    let a = serve::ca_agent(&ca);
    let (status, root) = call(&a, "GET", &format!("{url}/"), None);
    assert_eq!(status, 200, "{root}");
    assert_eq!(root["version"]["number"], "7.10.2");
    let (status, v) = call(&a, "PUT", &format!("{url}/books"), Some(json!({})));
    assert_eq!(status, 200, "{v}");
    let doc = json!({"title": "The Left Hand of Darkness", "year": 1969});
    let (status, v) = call(
        &a,
        "POST",
        &format!("{url}/books/_doc/1?refresh=true"),
        Some(doc),
    );
    assert_eq!(status, 201, "{v}");
    let (status, v) = call(&a, "GET", &format!("{url}/books/_search?q=darkness"), None);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["hits"]["total"]["value"], 1, "{v}");
    let wrong = url.replace(&pass, "wrongpassword");
    assert_eq!(call(&a, "GET", &format!("{wrong}/"), None).0, 401);

    // README: a second cluster with the CLI (no flags: it finds ./data/admin.url and
    // ./data/admin.token), then used with its credentials like the demo.
    let admin_line = server.wait_for("searchgate: admin API on http://127.0.0.1:");
    assert!(admin_line.contains("data/admin.token)"), "{admin_line}");
    let listed = admin(dir.path(), &["clusters", "list"]);
    assert!(
        listed.contains("demo") && listed.contains("running"),
        "{listed}"
    );
    let second: Value = serde_json::from_str(&admin(
        dir.path(),
        &["clusters", "create", "--plan", "sandbox", "--json"],
    ))
    .unwrap();
    let (u2, p2) = (
        second["username"].as_str().unwrap(),
        second["password"].as_str().unwrap(),
    );
    let port = url.rsplit(':').next().unwrap();
    let url2 = format!("https://{u2}:{p2}@localhost:{port}");
    let (status, v) = call(&a, "PUT", &format!("{url2}/books"), Some(json!({})));
    assert_eq!(status, 200, "{v}");
    let (status, v) = call(&a, "GET", &format!("{url2}/books/_search"), None);
    assert_eq!(
        (status, &v["hits"]["hits"]),
        (200, &json!([])),
        "its own, empty books: {v}"
    );
    assert_eq!(server.stop(), Some(0), "SIGTERM: a clean exit");

    // A restart keeps the file, the credentials and the data.
    let mut server = Server::start(dir.path());
    let try_line = server.wait_for("try: curl --cacert ");
    assert!(try_line.contains(&format!("https://{user}:{pass}@localhost:")));
    let url = try_line
        .split_whitespace()
        .find(|w| w.starts_with("https://"))
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let (status, v) = call(&a, "GET", &format!("{url}/books/_doc/1"), None);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["_source"]["year"], 1969);
    assert_eq!(credentials(&file), (user, pass));
    assert_eq!(server.stop(), Some(0));
}
