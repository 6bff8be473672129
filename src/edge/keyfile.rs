//! The node's tenancy key in the data directory (`tenancy.key`, 64 hex digits, owner-only),
//! created on first start. Every edge node in front of the same shared upstreams must hold
//! the same key, and it must never change: the multitenant class's index names derive from it.
//! A node of a fleet ([`shared`]) takes the key from the shared store (the first node's
//! key) when it has none, and refuses to start when its own differs.
//!
//! Must not touch: anything but that file (and the store's `tenancy_key` value).

use std::io::Write;
use std::path::Path;

use crate::control::store::{Store, StoreError};
use crate::tenancy::TenancyKey;

/// File name inside the data directory.
pub const KEY_FILE: &str = "tenancy.key";

/// Reads the key, creating it when the file does not exist.
pub fn load_or_create(data_dir: &Path) -> Result<TenancyKey, String> {
    match read(data_dir)? {
        Some(key) => Ok(key),
        None => {
            let key = TenancyKey::generate();
            write(data_dir, &key)?;
            Ok(key)
        }
    }
}

/// The fleet's key, from the store `store` that the nodes share: this node's file
/// proposes its key (a new one when there is none) and the first proposal stored wins; a
/// node without a file keeps the fleet's key in it; a node whose file holds another key
/// refuses to start. While the store is unreachable, a node with a file starts with it
/// (it took the fleet's key, or was checked against it, when it first started).
pub fn shared(data_dir: &Path, store: &mut dyn Store) -> Result<TenancyKey, String> {
    let local = read(data_dir)?;
    let proposed = match &local {
        Some(k) => hex(k),
        None => hex(&TenancyKey::generate()),
    };
    let stored = match (store.shared_value(STORE_NAME, &proposed), &local) {
        (Ok(v), _) => v,
        // A node that started with the fleet before holds the fleet's key in its file.
        (Err(StoreError::Busy(_)), Some(own)) => return Ok(own.clone()),
        (Err(e), _) => return Err(format!("the fleet's tenancy key: {e}")),
    };
    let fleet = parse(&stored).ok_or("the store's tenancy key is not 64 hex digits")?;
    match local {
        Some(own) if own.to_bytes() != fleet.to_bytes() => Err(format!(
            "{}: this node's tenancy key differs from the fleet's (in the shared store): \
             its multitenant index names would not be the other nodes'; replace the file \
             with the fleet's key, or remove it to take the fleet's key",
            data_dir.join(KEY_FILE).display()
        )),
        Some(own) => Ok(own),
        None => {
            write(data_dir, &fleet)?;
            Ok(fleet)
        }
    }
}

/// The name of the key's value in a shared store.
const STORE_NAME: &str = "tenancy_key";

fn hex(key: &TenancyKey) -> String {
    key.to_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// The key in the data directory, if there is one.
fn read(data_dir: &Path) -> Result<Option<TenancyKey>, String> {
    let path = data_dir.join(KEY_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(text.trim())
            .map(Some)
            .ok_or_else(|| format!("{}: expected 64 hex digits", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Writes `key` to a new file in the data directory (owner-only).
fn write(data_dir: &Path, key: &TenancyKey) -> Result<(), String> {
    let path = data_dir.join(KEY_FILE);
    let hex = hex(key);
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
        .map_err(|e| format!("{}: {e}", path.display()))
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

    // issue 26: the first node's key is the fleet's; a node without one takes it, a node
    // with another one refuses to start (and the message says why).
    #[test]
    fn a_fleet_shares_the_first_nodes_key() {
        use crate::control::sqlite::{SqliteStore, DB_FILE};
        let db = tempfile::tempdir().unwrap();
        let mut store = SqliteStore::open(&db.path().join(DB_FILE)).unwrap();
        let (first, second, third) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let own = load_or_create(first.path()).unwrap();
        let a = shared(first.path(), &mut store).unwrap();
        assert_eq!(a.to_bytes(), own.to_bytes());
        let b = shared(second.path(), &mut store).unwrap();
        assert_eq!(b.to_bytes(), own.to_bytes());
        assert_eq!(
            load_or_create(second.path()).unwrap().to_bytes(),
            own.to_bytes(),
            "kept in the node's file"
        );
        load_or_create(third.path()).unwrap();
        let e = shared(third.path(), &mut store).unwrap_err();
        assert!(e.contains("differs from the fleet's"), "{e}");
        assert!(!e.contains(&hex(&own)), "no key in the message: {e}");
    }
}
