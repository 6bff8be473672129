//! The embedded default a newcomer runs (`searchgate serve` without `--config`): a config
//! file kept in the data directory, created on first start with one demo cluster whose
//! random alphanumeric credentials survive restarts, and the admin API on 127.0.0.1:9900.
//! The demo cluster is of the multitenant class, so clusters created with `searchgate
//! admin clusters create` share the embedded engine with it.
//!
//! Must not touch: sockets or the running edge; it only reads and writes the file.

use std::io::Write;
use std::path::{Path, PathBuf};

use rand::distr::{Alphanumeric, SampleString};

use super::{Config, ConfigError};

/// File name of the embedded default config inside the data directory.
pub const FILE_NAME: &str = "searchgate.toml";

/// Loads `<data_dir>/searchgate.toml`, creating it (and the directory) on first start.
/// Returns the config, its path, and whether it was created now.
pub fn load_or_create(data_dir: &Path) -> Result<(Config, PathBuf, bool), ConfigError> {
    let path = data_dir.join(FILE_NAME);
    let err = |message: String| ConfigError {
        origin: path.display().to_string(),
        message,
    };
    if path.exists() {
        return Config::load(&path).map(|c| (c, path.clone(), false));
    }
    std::fs::create_dir_all(data_dir).map_err(|e| err(format!("cannot create data dir: {e}")))?;
    let text = default_text(data_dir);
    write_private(&path, text.as_bytes()).map_err(|e| err(format!("cannot write: {e}")))?;
    Config::load(&path).map(|c| (c, path.clone(), true))
}

/// The default file's text for `data_dir`, with fresh random credentials.
pub fn default_text(data_dir: &Path) -> String {
    let mut rng = rand::rng();
    let username = Alphanumeric
        .sample_string(&mut rng, 16)
        .to_ascii_lowercase();
    let password = Alphanumeric.sample_string(&mut rng, 24);
    let dir = data_dir.display().to_string().replace('\\', "/");
    format!(
        r#"# searchgate embedded default: created on first start, kept across restarts.
# Edit freely (see README, "Configuration"); the edge reloads it on SIGHUP or change.

[edge]
domain = "localhost"
https = "127.0.0.1:9243"
http = "127.0.0.1:9200"
data_dir = "{dir}"
route_by_username = true

[engine]
listen = "127.0.0.1:9201"
data_dir = "{dir}/engine"

# The admin API (searchgate admin ...): its token is written to {dir}/admin.token.
[admin]
listen = "127.0.0.1:9900"

[[plans]]
name = "sandbox"
concurrency = 4
queue_size = 64
queue_timeout = "10s"
shards = 20
disk = "1gb"
memory = "256mb"
max_bulk_actions = 10000
monthly_price_cents = 0

[[plans]]
name = "standard"
concurrency = 8
queue_size = 128
queue_timeout = "10s"
shards = 50
disk = "10gb"
memory = "1gb"
max_bulk_actions = 10000
monthly_price_cents = 2900

[[plans]]
name = "business"
concurrency = 16
queue_size = 256
queue_timeout = "10s"
shards = 100
disk = "50gb"
memory = "4gb"
max_bulk_actions = 10000
monthly_price_cents = 9900

[[clusters]]
id = "demo"
hostname = "demo"
region = "local"
class = "multitenant"
plan = "sandbox"
username = "{username}"
password = "{password}"
mode = "normal"
"#
    )
}

/// Creates a file readable by its owner only (mode 0600; it holds a secret), refusing to
/// overwrite one, and syncs it to disk.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_and_kept_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let (first, path, created) = load_or_create(&data).unwrap();
        assert!(created);
        assert!(path.exists());
        let (second, _, created_again) = load_or_create(&data).unwrap();
        assert!(!created_again);
        assert_eq!(
            first.clusters, second.clusters,
            "credentials survive a restart"
        );
        let demo = &first.clusters[0];
        assert!(demo.username.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(demo.password.expose().len(), 24);
        assert!(first.edge.route_by_username);
        assert!(first.engine.is_some());
    }

    #[cfg(unix)]
    #[test]
    fn file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (_, path, _) = load_or_create(dir.path()).unwrap();
        let mode = std::fs::metadata(path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0);
    }
}
