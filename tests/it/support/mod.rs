//! The harness the integration tests share. Each part says what it starts or checks.

pub mod attacks;
pub mod docs;
pub mod e2e;
pub mod edge;
pub mod engine_support;
pub mod hugo;
pub mod installs;
pub mod mock_es;
pub mod pg;
pub mod prometheus;
pub mod records;
pub mod serve;

use std::path::PathBuf;

/// The workspace's top directory (README.md, docs/, loadtest/, tests/fixtures live there).
pub fn repo_root() -> PathBuf {
    let cli = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    cli.join("../..")
        .canonicalize()
        .expect("the workspace's top directory")
}
