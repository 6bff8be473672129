//! What the tests install for themselves (a missing tool is installed, never a reason to
//! skip): Debian packages with apt-get, Python virtualenvs of pinned PyPI packages under
//! `target/tmp/` (made once per test binary, reused while their package list is the same).
//!
//! Include with `#[path = "support/installs.rs"] mod installs;`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The apt-get option that waits (up to 10 minutes) for the dpkg lock.
pub const APT_WAIT: &str = "-oDPkg::Lock::Timeout=600";

pub fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

pub fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run ({e}); the client tests need it installed"));
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{what} failed:\n{log}");
    log
}

/// The virtualenv `target/tmp/<name>` with `packages`, made once per test binary.
pub fn venv(name: &str, packages: &[&str]) -> PathBuf {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static MADE: Mutex<Option<HashMap<String, PathBuf>>> = Mutex::new(None);
    let mut made = MADE.lock().unwrap();
    let map = made.get_or_insert_with(HashMap::new);
    if let Some(p) = map.get(name) {
        return p.clone();
    }
    let dir = tmp(name);
    let python = dir.join("bin/python");
    let marker = dir.join("installed.txt");
    let wanted = packages.join(" ");
    let ready = python.exists() && std::fs::read_to_string(&marker).is_ok_and(|m| m == wanted);
    if !ready {
        ensure_debian_packages("python3 -c 'import ensurepip'", &["python3-venv"]);
        run(
            Command::new("python3")
                .args(["-m", "venv", "--clear"])
                .arg(&dir),
            "python3 -m venv (apt-get install python3-venv)",
        );
        run(
            Command::new(&python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(packages),
            &format!("pip install {wanted}"),
        );
        std::fs::write(&marker, &wanted).unwrap();
    }
    map.insert(name.to_string(), python.clone());
    python
}

/// Installs Debian `packages` with apt-get when `probe` (a shell command) fails, as the
/// tests do for hugo and prometheus: a missing tool is installed, never a reason to skip.
/// One install at a time in a test binary (tests run in parallel threads, and a second
/// apt-get fails at once on the lock the first holds); apt-get waits for a lock held by
/// another process (a fresh machine's own updates) instead of failing.
pub fn ensure_debian_packages(probe: &str, packages: &[&str]) {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let present = Command::new("sh")
        .args(["-c", &format!("{probe} >/dev/null 2>&1")])
        .status()
        .is_ok_and(|s| s.success());
    if present {
        return;
    }
    eprintln!("`{probe}` failed: installing {packages:?} with apt-get");
    let _ = Command::new("apt-get").args([APT_WAIT, "update"]).status();
    run(
        Command::new("apt-get")
            .args([APT_WAIT, "install", "-y", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive"),
        &format!("apt-get install {}", packages.join(" ")),
    );
}
