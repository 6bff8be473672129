//! The load test's pure figures (`loadtest/figures.py`: paired per-round ratios, the
//! ceiling that `direct` sets on a two-core layout, goals above it marked as such) checked
//! by their Python table tests (`loadtest/test_figures.py`), so `cargo test` runs them.
//! python3 is installed with apt-get when missing, never a reason to skip.

use crate::support::installs;

use std::process::Command;

#[test]
fn load_test_figures_table_tests_pass() {
    installs::ensure_debian_packages("python3 -c 'import unittest'", &["python3"]);
    let script = crate::support::repo_root().join("loadtest/test_figures.py");
    let log = installs::run(
        Command::new("python3").arg(&script).arg("-v"),
        "python3 loadtest/test_figures.py",
    );
    // unittest reports on stderr; every case must have run.
    assert!(log.contains("Ran 8 tests"), "{log}");
    assert!(log.contains("\nOK"), "{log}");
}
