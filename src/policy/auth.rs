//! Authentication: HTTP Basic credentials checked in constant time (spec 5), against
//! passwords kept only as salted hashes ([`PasswordHash`], [`Credential`]).
//!
//! Why a fast keyed hash and not a password KDF: cluster passwords are generated, 24 random
//! alphanumeric characters (about 143 bits), never chosen by a person, so there is no
//! dictionary to slow down; and the check sits on every request of every client. A slow
//! KDF (bcrypt, scrypt, Argon2: tens of milliseconds by design) would cost more than the
//! request itself and would make every request a denial-of-service lever. HMAC-SHA256 keyed
//! with a per-credential random salt (ring, precomputed key state) costs two SHA-256 blocks;
//! a leaked store gives no password back and no two stores share a hash. `benches/policy.rs`
//! (`basic_auth/*`) measures it.
//!
//! Must not touch: logging of any kind (credentials never leave this module's callers'
//! stack buffers), sockets, the registry's storage.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use rand::distr::{Alphanumeric, SampleString};
use ring::hmac;
use subtle::ConstantTimeEq;

/// Room for decoded `username:password`; longer credentials are refused.
pub const MAX_CREDENTIALS: usize = 384;

/// Decodes an `Authorization: Basic <base64>` value into `scratch`, returning
/// `(username, password)`. `None` when the scheme is not Basic or the value is malformed.
pub fn parse_basic<'a>(
    value: &[u8],
    scratch: &'a mut [u8; MAX_CREDENTIALS],
) -> Option<(&'a [u8], &'a [u8])> {
    let value = trim(value);
    if value.len() < 6 || !value[..6].eq_ignore_ascii_case(b"basic ") {
        return None;
    }
    let encoded = trim(&value[6..]);
    if encoded.len() > MAX_CREDENTIALS / 3 * 4 {
        return None;
    }
    let n = STANDARD.decode_slice(encoded, &mut scratch[..]).ok()?;
    let decoded = &scratch[..n];
    let colon = memchr::memchr(b':', decoded)?;
    Some((&decoded[..colon], &decoded[colon + 1..]))
}

/// True when both parts match, compared in constant time (for equal lengths).
pub fn credentials_match(user: &[u8], pass: &[u8], want_user: &[u8], want_pass: &[u8]) -> bool {
    let u = user.ct_eq(want_user);
    let p = pass.ct_eq(want_pass);
    bool::from(u & p)
}

/// Length of a generated username (lowercase alphanumeric).
pub const USERNAME_LEN: usize = 16;
/// Length of a generated password (mixed-case alphanumeric, about 143 bits).
pub const PASSWORD_LEN: usize = 24;
const SALT_LEN: usize = 16;
const TAG_LEN: usize = 32;
const SCHEME: &str = "hmac-sha256";

/// A fresh random username (lowercase alphanumeric, so it fits anywhere a host name does).
pub fn generate_username() -> String {
    Alphanumeric
        .sample_string(&mut rand::rng(), USERNAME_LEN)
        .to_ascii_lowercase()
}

/// A fresh random password (alphanumeric).
pub fn generate_password() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), PASSWORD_LEN)
}

/// A password as it is stored: HMAC-SHA256 of the password keyed with a random salt.
/// Text form (store, files): `hmac-sha256$<salt>$<tag>` (base64url, no padding).
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash {
    salt: [u8; SALT_LEN],
    tag: [u8; TAG_LEN],
}

impl PasswordHash {
    /// Hashes `password` with a fresh random salt.
    pub fn new(password: &[u8]) -> Self {
        let salt: [u8; SALT_LEN] = rand::random();
        let key = hmac::Key::new(hmac::HMAC_SHA256, &salt);
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(hmac::sign(&key, password).as_ref());
        PasswordHash { salt, tag }
    }

    /// Whether `password` is the one hashed (constant time).
    pub fn verify(&self, password: &[u8]) -> bool {
        self.checker().verify(password)
    }

    /// The precomputed form used on the request path.
    pub fn checker(&self) -> Checker {
        Checker {
            key: hmac::Key::new(hmac::HMAC_SHA256, &self.salt),
            tag: self.tag,
        }
    }

    /// The text form `hmac-sha256$<salt>$<tag>`.
    pub fn to_text(&self) -> String {
        format!(
            "{SCHEME}${}${}",
            URL_SAFE_NO_PAD.encode(self.salt),
            URL_SAFE_NO_PAD.encode(self.tag)
        )
    }

    /// Parses the text form; `None` when it is not one.
    pub fn from_text(text: &str) -> Option<Self> {
        let mut parts = text.split('$');
        if parts.next()? != SCHEME {
            return None;
        }
        let salt = URL_SAFE_NO_PAD.decode(parts.next()?).ok()?;
        let tag = URL_SAFE_NO_PAD.decode(parts.next()?).ok()?;
        if parts.next().is_some() {
            return None;
        }
        Some(PasswordHash {
            salt: salt.try_into().ok()?,
            tag: tag.try_into().ok()?,
        })
    }
}

impl std::fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PasswordHash(***)")
    }
}

impl serde::Serialize for PasswordHash {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_text())
    }
}

impl<'de> serde::Deserialize<'de> for PasswordHash {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        PasswordHash::from_text(&text)
            .ok_or_else(|| serde::de::Error::custom("not an hmac-sha256 password hash"))
    }
}

/// A stored password with its HMAC key state precomputed (what the request path holds).
#[derive(Clone)]
pub struct Checker {
    key: hmac::Key,
    tag: [u8; TAG_LEN],
}

impl Checker {
    /// Whether `password` is the one hashed; the tags are compared in constant time.
    pub fn verify(&self, password: &[u8]) -> bool {
        hmac::verify(&self.key, password, &self.tag).is_ok()
    }
}

impl std::fmt::Debug for Checker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Checker(***)")
    }
}

/// A username and the hash of its password, ready for the request path.
#[derive(Debug, Clone)]
pub struct Credential {
    pub username: String,
    checker: Checker,
}

impl Credential {
    /// The credential `username` with password hash `hash`.
    pub fn new(username: &str, hash: &PasswordHash) -> Self {
        Credential {
            username: username.to_string(),
            checker: hash.checker(),
        }
    }

    /// True when `user:pass` is this credential. The password's HMAC is computed whether or
    /// not the username matched, and both comparisons are constant-time, so the time taken
    /// does not tell which part was wrong.
    pub fn matches(&self, user: &[u8], pass: &[u8]) -> bool {
        let u = user.ct_eq(self.username.as_bytes());
        let p = self.checker.verify(pass);
        bool::from(u) & p
    }
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(s: &str) -> Vec<u8> {
        format!("Basic {}", STANDARD.encode(s)).into_bytes()
    }

    // spec 5.1: username:password carried as Basic credentials
    #[test]
    fn decodes_basic_credentials() {
        let mut buf = [0; MAX_CREDENTIALS];
        let v = basic("alice:s3cret");
        assert_eq!(
            parse_basic(&v, &mut buf),
            Some((&b"alice"[..], &b"s3cret"[..]))
        );
        let mut buf = [0; MAX_CREDENTIALS];
        assert_eq!(
            parse_basic(b"bAsIc   YTpi  ", &mut buf),
            Some((&b"a"[..], &b"b"[..]))
        );
    }

    #[test]
    fn password_may_contain_colons() {
        let mut buf = [0; MAX_CREDENTIALS];
        let v = basic("u:p:q");
        assert_eq!(parse_basic(&v, &mut buf), Some((&b"u"[..], &b"p:q"[..])));
    }

    // spec 5.3: missing or malformed credentials are refused
    #[test]
    fn refuses_other_schemes_and_garbage() {
        let mut buf = [0; MAX_CREDENTIALS];
        for v in [
            &b"Bearer abc"[..],
            b"Basic",
            b"Basic !!!",
            b"Basic dXNlcg==",
            b"",
            b"Basi YTpi",
        ] {
            assert_eq!(
                parse_basic(v, &mut buf),
                None,
                "{:?}",
                String::from_utf8_lossy(v)
            );
        }
    }

    #[test]
    fn oversized_credentials_are_refused_at_n_plus_one() {
        let at_limit = format!("u:{}", "p".repeat(MAX_CREDENTIALS - 2));
        let mut buf = [0; MAX_CREDENTIALS];
        assert!(parse_basic(&basic(&at_limit), &mut buf).is_some());
        let over = format!("u:{}", "p".repeat(MAX_CREDENTIALS - 1));
        let mut buf = [0; MAX_CREDENTIALS];
        assert!(parse_basic(&basic(&over), &mut buf).is_none());
    }

    // spec 5.2: generated credentials are alphanumeric
    #[test]
    fn generated_credentials_are_alphanumeric_and_distinct() {
        let (u, p) = (generate_username(), generate_password());
        assert_eq!(u.len(), USERNAME_LEN);
        assert_eq!(p.len(), PASSWORD_LEN);
        assert!(u
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
        assert!(p.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(p, generate_password());
    }

    #[test]
    fn password_hashes_are_salted_and_verify_only_their_password() {
        let a = PasswordHash::new(b"s3cretPassw0rd");
        let b = PasswordHash::new(b"s3cretPassw0rd");
        assert_ne!(a, b, "a fresh salt each time");
        assert!(a.verify(b"s3cretPassw0rd") && b.verify(b"s3cretPassw0rd"));
        for wrong in [
            &b""[..],
            b"s3cretPassw0rd ",
            b"s3cretPassw0r",
            b"S3cretPassw0rd",
        ] {
            assert!(!a.verify(wrong), "{wrong:?}");
        }
        let text = a.to_text();
        assert!(text.starts_with("hmac-sha256$"), "{text}");
        assert!(!text.contains("s3cret"));
        assert_eq!(PasswordHash::from_text(&text), Some(a.clone()));
        for bad in ["", "md5$a$b", "hmac-sha256$AAAA$AAAA", &format!("{text}$x")] {
            assert_eq!(PasswordHash::from_text(bad), None, "{bad}");
        }
        assert_eq!(format!("{a:?}"), "PasswordHash(***)");
    }

    // spec 5.3: both parts of the pair must match
    #[test]
    fn credentials_match_user_and_hashed_password() {
        let c = Credential::new("alice", &PasswordHash::new(b"pw1"));
        assert!(c.matches(b"alice", b"pw1"));
        assert!(!c.matches(b"alice", b"pw2"));
        assert!(!c.matches(b"bob", b"pw1"));
        assert!(!c.matches(b"", b""));
        assert!(!c.matches(b"alicex", b"pw1"));
    }

    #[test]
    fn both_parts_must_match() {
        assert!(credentials_match(b"u", b"p", b"u", b"p"));
        assert!(!credentials_match(b"u", b"x", b"u", b"p"));
        assert!(!credentials_match(b"x", b"p", b"u", b"p"));
        assert!(!credentials_match(b"u", b"pp", b"u", b"p"));
        assert!(!credentials_match(b"", b"", b"u", b"p"));
    }
}
