//! Test helpers for `load-site`: make sure real Hugo is installed (installing Debian's
//! `hugo` package when missing, failing loudly otherwise), locate the fixture site, run the
//! `searchgate` binary, and snapshot a directory tree to prove nothing wrote into it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Once;
use std::time::SystemTime;

/// Returns the hugo executable, installing the `hugo` package when it is missing.
pub fn ensure_hugo() -> PathBuf {
    static INSTALL: Once = Once::new();
    let works = || {
        Command::new("hugo")
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    INSTALL.call_once(|| {
        if works() {
            return;
        }
        eprintln!("hugo is missing: installing it with apt-get");
        let apt = |args: &[&str]| {
            Command::new("apt-get")
                .arg("-oDPkg::Lock::Timeout=600") // wait for a lock another process holds
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .unwrap_or_else(|e| panic!("cannot run apt-get to install hugo: {e}"))
        };
        if !apt(&["install", "-y", "hugo"]).success() {
            let _ = apt(&["update"]);
            assert!(
                apt(&["install", "-y", "hugo"]).success(),
                "apt-get install -y hugo failed: these tests need real Hugo"
            );
        }
    });
    assert!(works(), "hugo is still not runnable after installing it");
    PathBuf::from("hugo")
}

/// The fixture site.
pub fn fixture_site() -> PathBuf {
    super::repo_root().join("tests/fixtures/hugo-site")
}

/// Runs `searchgate load-site ARGS` with `SEARCHGATE_URL` removed from the environment.
pub fn load_site(args: &[&str]) -> Output {
    load_site_env(args, &[])
}

/// As `load_site`, with extra environment variables.
pub fn load_site_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_searchgate"));
    cmd.arg("load-site").args(args).env_remove("SEARCHGATE_URL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run searchgate")
}

/// stdout and stderr as text.
pub fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every path under `dir` (hidden ones too) with its size and modification time.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, Option<SystemTime>)> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, (u64, Option<SystemTime>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            out.insert(entry.path(), (meta.len(), meta.modified().ok()));
            if meta.is_dir() {
                walk(&entry.path(), out);
            }
        }
    }
    let mut out = BTreeMap::new();
    out.insert(
        dir.to_owned(),
        (0, std::fs::metadata(dir).unwrap().modified().ok()),
    );
    walk(dir, &mut out);
    out
}

/// Splits an NDJSON bulk body into (action, source) pairs.
pub fn bulk_pairs(ndjson: &str) -> Vec<(serde_json::Value, serde_json::Value)> {
    assert!(
        ndjson.is_empty() || ndjson.ends_with('\n'),
        "bulk body must end with a newline"
    );
    let lines: Vec<&str> = ndjson.lines().collect();
    assert_eq!(lines.len() % 2, 0, "index actions come in line pairs");
    lines
        .chunks(2)
        .map(|p| {
            (
                serde_json::from_str(p[0]).unwrap(),
                serde_json::from_str(p[1]).unwrap(),
            )
        })
        .collect()
}
