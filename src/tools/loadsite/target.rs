//! The cluster URL (spec 5): `https://user:pass@host[:port][/prefix]`, split into a base
//! address without userinfo, a Basic `Authorization` header value and a masked form for
//! display. The password never leaves this module except inside the header value, and no
//! `Debug` or `Display` impl here shows it.

use searchgate_core::percent::{self, Plus};
use std::fmt;

use base64::Engine as _;

/// Why a cluster URL was refused. Messages never contain the password.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Not `http://` or `https://`.
    #[error("the cluster URL must start with https:// (or http://): {0}")]
    Scheme(String),
    /// No host after the userinfo.
    #[error("the cluster URL has no host: {0}")]
    NoHost(String),
    /// A query string or fragment: the spec's base URL has none.
    #[error("the cluster URL must not carry a query or fragment: {0}")]
    QueryOrFragment(String),
    /// A `%` escape in the userinfo that is not two hex digits.
    #[error("the cluster URL has a malformed %-escape in its credentials: {0}")]
    Escape(String),
    /// The variable named by `--url-env` is unset or not UTF-8.
    #[error("environment variable {0} is not set (or not UTF-8)")]
    EnvMissing(String),
    /// Neither `--url` nor the environment variable gave a URL.
    #[error("no cluster URL: pass --url or set {0}")]
    Missing(String),
}

/// A string that holds a secret; `Debug` never shows it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretString(String);

impl SecretString {
    /// Wraps a secret.
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }
    /// The secret itself; call sites must not print it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"****\"")
    }
}

impl std::str::FromStr for SecretString {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self(s.to_owned()))
    }
}

/// A parsed cluster URL.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterUrl {
    /// `scheme://host[:port][/prefix]` without userinfo and without a trailing `/`.
    base: String,
    /// Username (decoded), shown in the masked form.
    user: Option<String>,
    /// `Basic base64(user:pass)`.
    authorization: Option<SecretString>,
}

impl ClusterUrl {
    /// Parses `raw`. Errors show the URL with its password masked.
    pub fn parse(raw: &str) -> Result<Self, UrlError> {
        let masked = mask(raw);
        let (scheme, rest) = raw
            .split_once("://")
            .filter(|(s, _)| s.eq_ignore_ascii_case("https") || s.eq_ignore_ascii_case("http"))
            .ok_or_else(|| UrlError::Scheme(masked.clone()))?;
        if rest.contains(['?', '#']) {
            return Err(UrlError::QueryOrFragment(masked));
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        let (userinfo, hostport) = match authority.rfind('@') {
            Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
            None => (None, authority),
        };
        if hostport.is_empty() || hostport.starts_with(':') {
            return Err(UrlError::NoHost(masked));
        }
        let (user, authorization) = match userinfo {
            None => (None, None),
            Some(ui) => {
                let (u, p) = ui.split_once(':').unwrap_or((ui, ""));
                let u = percent_decode(u).ok_or_else(|| UrlError::Escape(masked.clone()))?;
                let p = percent_decode(p).ok_or_else(|| UrlError::Escape(masked.clone()))?;
                let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
                (Some(u), Some(SecretString(format!("Basic {token}"))))
            }
        };
        let path = path.trim_end_matches('/');
        let base = format!("{}://{hostport}{path}", scheme.to_ascii_lowercase());
        Ok(Self {
            base,
            user,
            authorization,
        })
    }

    /// Picks the URL from `--url`, else from the environment variable `env_name`.
    pub fn from_sources(
        url: Option<&SecretString>,
        env_name: &str,
        explicit_env: bool,
    ) -> Result<Self, UrlError> {
        if let Some(u) = url {
            return Self::parse(u.expose());
        }
        match std::env::var(env_name) {
            Ok(v) => Self::parse(&v),
            Err(_) if explicit_env => Err(UrlError::EnvMissing(env_name.to_owned())),
            Err(_) => Err(UrlError::Missing(env_name.to_owned())),
        }
    }

    /// The address for a path that starts with `/`, without credentials.
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The `Authorization` header value, if the URL carried credentials.
    pub fn authorization(&self) -> Option<&SecretString> {
        self.authorization.as_ref()
    }

    /// Whether the scheme is `https`.
    pub fn is_https(&self) -> bool {
        self.base.starts_with("https://")
    }
}

impl fmt::Display for ClusterUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (scheme, rest) = self.base.split_once("://").unwrap_or(("", &self.base));
        match &self.user {
            Some(u) => write!(f, "{scheme}://{u}:****@{rest}"),
            None => f.write_str(&self.base),
        }
    }
}

impl fmt::Debug for ClusterUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClusterUrl({self})")
    }
}

/// Masks the password of any `scheme://user:pass@...` in `raw` (also for unparsable input).
pub fn mask(raw: &str) -> String {
    let Some((scheme, rest)) = raw.split_once("://") else {
        return if raw.contains('@') {
            "****".into()
        } else {
            raw.to_owned()
        };
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    match authority.rfind('@') {
        Some(at) => {
            let user = authority[..at].split(':').next().unwrap_or("");
            format!("{scheme}://{user}:****@{}", &rest[at + 1..])
        }
        None => raw.to_owned(),
    }
}

/// A userinfo component decoded once (`+` stays `+`); `None` for a bad escape or bytes
/// that are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = percent::decode(s.as_bytes(), Plus::Literal).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_credentials_from_the_base() {
        let u = ClusterUrl::parse("https://ab12:Secr3tPw@c1.eu.example.net/").unwrap();
        assert_eq!(u.endpoint("/_bulk"), "https://c1.eu.example.net/_bulk");
        // base64("ab12:Secr3tPw")
        assert_eq!(
            u.authorization().unwrap().expose(),
            "Basic YWIxMjpTZWNyM3RQdw=="
        );
        assert_eq!(u.to_string(), "https://ab12:****@c1.eu.example.net");
        assert!(!format!("{u:?}").contains("Secr3tPw"));
        assert!(u.is_https());
    }

    #[test]
    fn keeps_port_and_path_prefix_and_decodes_escapes() {
        let u = ClusterUrl::parse("http://us%40r:p%3Ass@127.0.0.1:9200/es/").unwrap();
        assert_eq!(u.endpoint("/x"), "http://127.0.0.1:9200/es/x");
        let expected = base64::engine::general_purpose::STANDARD.encode("us@r:p:ss");
        assert_eq!(
            u.authorization().unwrap().expose(),
            format!("Basic {expected}")
        );
        assert!(!u.is_https());
    }

    #[test]
    fn no_userinfo_means_no_header() {
        let u = ClusterUrl::parse("https://host.example").unwrap();
        assert!(u.authorization().is_none());
        assert_eq!(u.to_string(), "https://host.example");
    }

    #[test]
    fn errors_never_show_the_password() {
        for bad in [
            "ftp://u:topsecret@h",
            "https://u:topsecret@",
            "https://u:topsecret@h/?q=1",
            "https://u:top%zzsecret@h",
            "u:topsecret@h",
        ] {
            let err = ClusterUrl::parse(bad).unwrap_err().to_string();
            assert!(!err.contains("topsecret"), "{bad} -> {err}");
            assert!(!err.contains("secret"), "{bad} -> {err}");
        }
    }

    #[test]
    fn mask_handles_at_signs_in_passwords() {
        assert_eq!(mask("https://u:p@ss@h/x"), "https://u:****@h/x");
        assert_eq!(mask("https://h/x@y"), "https://h/x@y");
        assert_eq!(format!("{:?}", SecretString::new("pw")), "\"****\"");
    }

    #[test]
    fn env_source_is_used_when_no_flag() {
        let name = "SEARCHGATE_TEST_URL_ENV_UNIT";
        std::env::set_var(name, "https://u:pw@h");
        let u = ClusterUrl::from_sources(None, name, true).unwrap();
        assert_eq!(u.endpoint("/"), "https://h/");
        std::env::remove_var(name);
        let missing = ClusterUrl::from_sources(None, name, true).unwrap_err();
        assert_eq!(missing, UrlError::EnvMissing(name.into()));
        let flag = SecretString::new("https://a:b@flag");
        let u = ClusterUrl::from_sources(Some(&flag), name, false).unwrap();
        assert_eq!(u.endpoint(""), "https://flag");
    }
}
