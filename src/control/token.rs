//! The admin API's bearer token: from `[admin] token`, or generated on first start into
//! `<data_dir>/admin.token` (owner-only, mode 0600) and read from there afterwards. The
//! audit log names it by its id (`token:` and the first 12 hex digits of its SHA-256),
//! never by the token itself.
//!
//! Must not touch: anything but that file.

use std::path::Path;

use rand::distr::{Alphanumeric, SampleString};
use subtle::ConstantTimeEq;

use crate::config::embedded::write_private;

/// File name inside the data directory.
pub const TOKEN_FILE: &str = "admin.token";

/// The admin token.
#[derive(Clone)]
pub struct AdminToken {
    token: String,
    id: String,
}

impl std::fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AdminToken({})", self.id)
    }
}

impl AdminToken {
    /// A token with this text.
    pub fn new(token: &str) -> AdminToken {
        let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
        let hex: String = digest.as_ref()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        AdminToken {
            token: token.to_string(),
            id: format!("token:{hex}"),
        }
    }

    /// `token:<12 hex digits>`: who made a change, in the audit log.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether an `Authorization` header value is `Bearer <this token>` (constant time).
    pub fn accepts(&self, authorization: Option<&[u8]>) -> bool {
        let Some(v) = authorization else {
            return false;
        };
        if v.len() < 7 || !v[..7].eq_ignore_ascii_case(b"bearer ") {
            return false;
        }
        let given = v[7..].trim_ascii();
        bool::from(given.ct_eq(self.token.as_bytes()))
    }

    /// The configured token, or the one in `<data_dir>/admin.token` (created when missing).
    pub fn load_or_create(configured: Option<&str>, data_dir: &Path) -> Result<AdminToken, String> {
        if let Some(t) = configured {
            return Ok(AdminToken::new(t));
        }
        let path = data_dir.join(TOKEN_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) if text.trim().len() >= 16 => Ok(AdminToken::new(text.trim())),
            Ok(_) => Err(format!(
                "{}: the token is shorter than 16 characters",
                path.display()
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let token = Alphanumeric.sample_string(&mut rand::rng(), 40);
                write_private(&path, format!("{token}\n").as_bytes())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                Ok(AdminToken::new(&token))
            }
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_once_private_and_checked_as_bearer() {
        let dir = tempfile::tempdir().unwrap();
        let a = AdminToken::load_or_create(None, dir.path()).unwrap();
        let b = AdminToken::load_or_create(None, dir.path()).unwrap();
        assert_eq!(a.id(), b.id());
        assert!(a.id().starts_with("token:") && a.id().len() == 18);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(TOKEN_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let text = std::fs::read_to_string(dir.path().join(TOKEN_FILE)).unwrap();
        let header = format!("Bearer {}", text.trim());
        assert!(a.accepts(Some(header.as_bytes())));
        assert!(a.accepts(Some(format!("bearer  {} ", text.trim()).as_bytes())));
        for bad in [&b""[..], b"Bearer", b"Bearer x", b"Basic abc"] {
            assert!(!a.accepts(Some(bad)));
        }
        assert!(!a.accepts(None));
        assert!(!format!("{a:?}").contains(text.trim()));
    }

    #[test]
    fn a_configured_token_wins() {
        let dir = tempfile::tempdir().unwrap();
        let t = AdminToken::load_or_create(Some("0123456789abcdefXYZ"), dir.path()).unwrap();
        assert!(t.accepts(Some(b"Bearer 0123456789abcdefXYZ")));
        assert!(!dir.path().join(TOKEN_FILE).exists());
    }
}
