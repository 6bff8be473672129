//! The node's tenancy key in the data directory (`tenancy.key`, 64 hex digits, owner-only),
//! created on first start. Every edge node in front of the same shared upstreams must hold
//! the same key, and it must never change: the multitenant class's index names derive from it.
//!
//! Must not touch: anything but that file.

use std::io::Write;
use std::path::Path;

use crate::tenancy::TenancyKey;

/// File name inside the data directory.
pub const KEY_FILE: &str = "tenancy.key";

/// Reads the key, creating it when the file does not exist.
pub fn load_or_create(data_dir: &Path) -> Result<TenancyKey, String> {
    let path = data_dir.join(KEY_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            parse(text.trim()).ok_or_else(|| format!("{}: expected 64 hex digits", path.display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = TenancyKey::generate();
            let hex: String = key.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                opts.mode(0o600);
            }
            let mut f = opts
                .open(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            writeln!(f, "{hex}")
                .and_then(|_| f.sync_all())
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(key)
        }
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn parse(hex: &str) -> Option<TenancyKey> {
    if hex.len() != 64 {
        return None;
    }
    let mut bytes = [0u8; 32];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(TenancyKey::from_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_then_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_or_create(dir.path()).unwrap();
        let b = load_or_create(dir.path()).unwrap();
        assert_eq!(a.to_bytes(), b.to_bytes());
        std::fs::write(dir.path().join(KEY_FILE), "xyz").unwrap();
        assert!(load_or_create(dir.path())
            .unwrap_err()
            .contains("64 hex digits"));
    }
}
