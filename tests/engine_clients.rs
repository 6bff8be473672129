//! Real clients against the engine, and through the edge: `tests/clients/flow.py` with
//! elasticsearch-py 8 and opensearch-py, installed into a throwaway virtualenv under
//! `target/` (reused when present). Fails loudly when Python, venv or pip cannot provide
//! them: never skips.
//!
//! Through the edge the clients speak HTTPS to `searchgate serve` (its own CA, credentials
//! in the URL, routed by user name since `*.localhost` does not resolve in Python), once to
//! a multitenant cluster and once to a single-tenant one, both on the embedded engine
//! (spec 1.6, 4, 5). `helpers.scan` (scroll) runs against the engine and both clusters; on
//! the multitenant one through sealed scroll ids (issue 10).

mod engine_support;
#[path = "support/serve.rs"]
mod serve;

use std::path::{Path, PathBuf};
use std::process::Command;

use engine_support::Engine;

/// The virtualenv, made once per test binary (the tests of this file share it).
fn venv() -> PathBuf {
    static VENV: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    VENV.get_or_init(make_venv).clone()
}

fn make_venv() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("engine-clients-venv");
    let python = dir.join("bin/python");
    let ready = python.exists()
        && Command::new(&python)
            .args([
                "-c",
                "import elasticsearch, opensearchpy; assert elasticsearch.__version__[0] == 8",
            ])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
    if ready {
        return python;
    }
    let out = Command::new("python3")
        .args(["-m", "venv", "--clear"])
        .arg(&dir)
        .output()
        .expect("python3 is needed for the client test (apt-get install python3-venv)");
    assert!(
        out.status.success(),
        "python3 -m venv failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "elasticsearch>=8,<9",
            "opensearch-py",
        ])
        .output()
        .expect("run pip");
    assert!(
        out.status.success(),
        "pip could not install elasticsearch 8 and opensearch-py:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    python
}

fn run_flow(python: &Path, url: &str, client: &str) {
    run_flow_with(python, url, client, &[]);
}

fn run_flow_with(python: &Path, url: &str, client: &str, extra: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/flow.py");
    let out = Command::new(python)
        .arg(script)
        .args(["--url", url, "--client", client])
        .args(extra)
        .output()
        .expect("run the client flow");
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "client flow ({client}) failed:\n{log}"
    );
    assert!(log.contains("client flow: ok"), "{log}");
    let scan = log.contains("] scan: every document once");
    let refused = log.contains("] scroll is not exposed: the edge answers 501");
    if extra.contains(&"--no-scroll") {
        assert!(refused && !scan, "{log}");
    } else {
        assert!(scan && !refused, "helpers.scan did not run:\n{log}");
    }
}

#[test]
fn elasticsearch_py_8_and_opensearch_py_flows() {
    let python = venv();
    let e = Engine::start();
    let url = format!("http://{}", e.addr);
    run_flow(&python, &url, "es");
    run_flow(&python, &url, "opensearch");
}

/// The edge's config: HTTPS on port 0, routing by user name, the embedded engine with a
/// multitenant cluster, and a single-tenant cluster on its own engine at `single`.
fn edge_config(dir: &Path, single: std::net::SocketAddr) -> PathBuf {
    let data = dir.join("data");
    let mut text = format!(
        "[edge]\ndomain = \"localhost\"\nhttps = \"127.0.0.1:0\"\ndata_dir = {data:?}\n\
         route_by_username = true\naccess_log = \"off\"\n\n\
         [engine]\nlisten = \"127.0.0.1:0\"\ndata_dir = {engine:?}\n\n\
         [[plans]]\nname = \"small\"\nconcurrency = 4\nqueue_size = 64\n\
         queue_timeout = \"20s\"\nshards = 20\ndisk = \"1gb\"\nmemory = \"1gb\"\n\
         max_bulk_actions = 1000\n",
        data = data.display().to_string(),
        engine = data.join("engine").display().to_string(),
    );
    for (id, class, upstream) in [
        ("mt", "multitenant", String::new()),
        (
            "st",
            "single-tenant",
            format!("upstream = [\"{single}\"]\n"),
        ),
    ] {
        text.push_str(&format!(
            "\n[[clusters]]\nid = \"{id}\"\nhostname = \"{id}\"\nregion = \"local\"\n\
             class = \"{class}\"\nplan = \"small\"\nusername = \"{id}user\"\n\
             password = \"{id}Secret9\"\n{upstream}"
        ));
    }
    let path = dir.join("searchgate.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn elasticsearch_py_8_and_opensearch_py_through_the_edge() {
    let python = venv();
    let dir = tempfile::tempdir().unwrap();
    let single = Engine::start();
    let config = edge_config(dir.path(), single.addr);
    let edge = serve::Serve::start(&config, std::time::Duration::from_secs(60));
    let ca = dir.path().join("data/ca.pem");
    let ca = ca.to_str().unwrap();
    for id in ["mt", "st"] {
        let url = format!("https://{id}user:{id}Secret9@localhost:{}", edge.https_port);
        // Both clients on both classes: the multitenant cluster's index names are
        // prefixed upstream and the prefix is removed from every answer the clients parse.
        // helpers.scan reads every document back on both: on the multitenant cluster the
        // edge seals the scroll ids it returns and opens them when they come back
        // (issue 10).
        let args = vec!["--ca", ca];
        run_flow_with(&python, &url, "both", &args);
    }
    assert!(
        !edge.log_text().contains("mtSecret9") && !edge.log_text().contains("stSecret9"),
        "a password reached the edge's output:\n{}",
        edge.log_text()
    );
}
