//! Real clients against the engine: `tests/clients/flow.py` with elasticsearch-py 8 and
//! opensearch-py, installed into a throwaway virtualenv under `target/` (reused when
//! present). Fails loudly when Python, venv or pip cannot provide them: never skips.

mod engine_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use engine_support::Engine;

fn venv() -> PathBuf {
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
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/flow.py");
    let out = Command::new(python)
        .arg(script)
        .args(["--url", url, "--client", client])
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
}

#[test]
fn elasticsearch_py_8_and_opensearch_py_flows() {
    let python = venv();
    let e = Engine::start();
    let url = format!("http://{}", e.addr);
    run_flow(&python, &url, "es");
    run_flow(&python, &url, "opensearch");
}
