//! The newcomer's edge: `searchgate serve` without `--config`, in a directory whose
//! `data/searchgate.toml` is the embedded default (README "First run"). The test creates
//! that file first through the library (the function `serve` calls on a first start),
//! switches its fixed ports to port 0 and may edit it (e.g. `[admin] test_clock`), then
//! runs `serve` there as a newcomer does; `searchgate admin` run in the same directory
//! finds the admin API without flags (`./data/admin.url`, `./data/admin.token`).

use std::path::Path;

use searchgate::config::embedded;

use super::{Config, Edge};

/// The fixed addresses of the embedded default (all switched to port 0).
const PORTS: [&str; 4] = [
    "127.0.0.1:9243",
    "127.0.0.1:9200",
    "127.0.0.1:9201",
    "127.0.0.1:9900",
];

impl Edge {
    /// Creates the embedded default in `dir/data` (ports 0, then `edit` applied to the
    /// file's text) and starts `searchgate serve` without `--config` in `dir`.
    pub fn first_run(dir: tempfile::TempDir, edit: impl FnOnce(String) -> String) -> Edge {
        let (_, file, created) =
            embedded::load_or_create(&dir.path().join("data")).expect("the embedded default");
        assert!(created, "a first start creates the file");
        let mut text = std::fs::read_to_string(&file).unwrap();
        for port in PORTS {
            assert!(text.contains(port), "{port} in the default:\n{text}");
            text = text.replace(port, "127.0.0.1:0");
        }
        std::fs::write(&file, edit(text)).unwrap();
        let config = Config {
            admin: true,
            plans: Vec::new(),
            ..Config::new()
        };
        let exe = env!("CARGO_BIN_EXE_searchgate").as_ref();
        Edge::launch(exe, dir, file, config, &[], &[])
    }

    /// The edge's directory, where `searchgate admin` finds the API without flags.
    pub fn cwd(&self) -> &Path {
        self.dir.path()
    }
}
