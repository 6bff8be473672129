//! Index names: validation (Elasticsearch 7.10 rules), wildcard patterns, the automatic
//! index creation whitelist, and generated document ids and index uuids.
//!
//! Pure functions; must not touch the store or I/O.

use std::sync::atomic::{AtomicU64, Ordering};

use super::error::EngineError;

/// Characters Elasticsearch forbids in index names.
const FORBIDDEN: &[char] = &['\\', '/', '*', '?', '"', '<', '>', '|', ' ', ',', '#', ':'];

/// Checks an index name for creation, as `MetadataCreateIndexService.validateIndexOrAliasName`.
pub fn validate_index_name(name: &str) -> Result<(), EngineError> {
    let bad = |reason: String| EngineError::InvalidIndexName {
        name: name.to_string(),
        reason,
    };
    if name.is_empty() {
        return Err(bad("must not be empty".into()));
    }
    if let Some(c) = name.chars().find(|c| FORBIDDEN.contains(c)) {
        let list = "[ , \", *, \\, <, |, ,, >, /, ?]";
        if c == '#' {
            return Err(bad("must not contain '#'".into()));
        }
        if c == ':' {
            return Err(bad("must not contain ':'".into()));
        }
        return Err(bad(format!(
            "must not contain the following characters {list}"
        )));
    }
    if name.starts_with(['_', '-', '+']) {
        return Err(bad("must not start with '_', '-', or '+'".into()));
    }
    if name == "." || name == ".." {
        return Err(bad("must not be '.' or '..'".into()));
    }
    if name.chars().any(|c| c.is_uppercase()) {
        return Err(bad("must be lowercase".into()));
    }
    if name.len() > 255 {
        return Err(bad("index name is too long, (".to_string()
            + &name.len().to_string()
            + " > 255)"));
    }
    Ok(())
}

/// Simple wildcard match: `*` matches any run of characters (Elasticsearch `Regex.simpleMatch`).
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    while ti < t.len() {
        if pi < p.len() && p[pi] != '*' && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// The `action.auto_create_index` setting: `true`, `false`, or a comma list of patterns, each
/// optionally prefixed with `+` (allow) or `-` (deny); the first matching pattern decides.
#[derive(Debug, Clone, PartialEq)]
pub enum AutoCreate {
    All,
    None,
    Patterns(Vec<(bool, String)>),
}

/// The default whitelist of spec 2.2.
pub const DEFAULT_AUTO_CREATE: &str = "logstash*,requests*,events*,.kibana*,kibana-int*";

impl AutoCreate {
    /// Parses the setting value.
    pub fn parse(value: &str) -> Result<Self, String> {
        match value.trim() {
            "true" => return Ok(AutoCreate::All),
            "false" | "" => return Ok(AutoCreate::None),
            _ => {}
        }
        let mut out = Vec::new();
        for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (allow, pat) = match part.as_bytes()[0] {
                b'+' => (true, &part[1..]),
                b'-' => (false, &part[1..]),
                _ => (true, part),
            };
            if pat.is_empty() {
                return Err(format!("empty pattern in auto-create setting [{value}]"));
            }
            out.push((allow, pat.to_string()));
        }
        Ok(AutoCreate::Patterns(out))
    }

    /// The setting's value as text.
    pub fn to_setting(&self) -> String {
        match self {
            AutoCreate::All => "true".into(),
            AutoCreate::None => "false".into(),
            AutoCreate::Patterns(p) => p
                .iter()
                .map(|(allow, pat)| format!("{}{pat}", if *allow { "+" } else { "-" }))
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    /// Whether a write may create `index` automatically.
    pub fn allows(&self, index: &str) -> bool {
        match self {
            AutoCreate::All => true,
            AutoCreate::None => false,
            AutoCreate::Patterns(pats) => pats
                .iter()
                .find(|(_, p)| wildcard_match(p, index))
                .is_some_and(|(allow, _)| *allow),
        }
    }
}

static ID_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A 20-character URL-safe id, time-based like Elasticsearch's auto-generated ids.
pub fn generate_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let seq = ID_COUNTER.fetch_add(1, Ordering::Relaxed);
    let salt: u32 = rand::random();
    let mut bytes = [0u8; 15];
    bytes[..6].copy_from_slice(&now.to_be_bytes()[2..]);
    bytes[6..11].copy_from_slice(&seq.to_be_bytes()[3..]);
    bytes[11..].copy_from_slice(&salt.to_be_bytes());
    base64url(&bytes)
}

/// A 22-character random index uuid.
pub fn generate_uuid() -> String {
    let bytes: [u8; 16] = rand::random();
    let mut s = base64url(&bytes);
    s.truncate(22);
    s
}

fn base64url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names_pass() {
        for n in ["books", "logs-2024.01.01", ".kibana", "a_b", "x+y", "é"] {
            assert!(validate_index_name(n).is_ok(), "{n}");
        }
    }

    #[test]
    fn invalid_names_are_refused_with_reason() {
        let cases = [
            ("Books", "must be lowercase"),
            ("_x", "must not start with"),
            ("-x", "must not start with"),
            ("+x", "must not start with"),
            ("a b", "must not contain"),
            ("a,b", "must not contain"),
            ("a*", "must not contain"),
            ("a#b", "must not contain '#'"),
            ("a:b", "must not contain ':'"),
            (".", "must not be '.' or '..'"),
            ("..", "must not be '.' or '..'"),
            ("", "must not be empty"),
        ];
        for (name, why) in cases {
            let err = validate_index_name(name).unwrap_err();
            let body = err.body();
            assert_eq!(body.kind, "invalid_index_name_exception");
            assert!(body.reason.contains(why), "{name}: {}", body.reason);
            assert_eq!(body.status, 400);
        }
    }

    #[test]
    fn name_length_limit_is_255_bytes() {
        assert!(validate_index_name(&"a".repeat(255)).is_ok());
        assert!(validate_index_name(&"a".repeat(256)).is_err());
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match("log*", "logstash-1"));
        assert!(wildcard_match("*", ""));
        assert!(wildcard_match("a*b*c", "aXbYc"));
        assert!(!wildcard_match("a*b*c", "aXbY"));
        assert!(wildcard_match("exact", "exact"));
        assert!(!wildcard_match("exact", "exactly"));
        assert!(wildcard_match("*ly", "exactly"));
    }

    // spec 2.2: the whitelist of automatically created index names
    #[test]
    fn default_whitelist() {
        let a = AutoCreate::parse(DEFAULT_AUTO_CREATE).unwrap();
        for n in [
            "logstash-2024.01.01",
            "requests",
            "events-x",
            ".kibana_1",
            "kibana-int-a",
        ] {
            assert!(a.allows(n), "{n}");
        }
        for n in ["books", "kibana", "request", "xlogstash"] {
            assert!(!a.allows(n), "{n}");
        }
    }

    #[test]
    fn first_matching_pattern_decides() {
        let a = AutoCreate::parse("-logs-secret*,+logs*").unwrap();
        assert!(!a.allows("logs-secret-1"));
        assert!(a.allows("logs-1"));
        assert!(!a.allows("other"));
        assert_eq!(AutoCreate::parse("true").unwrap(), AutoCreate::All);
        assert_eq!(AutoCreate::parse("false").unwrap(), AutoCreate::None);
        assert!(AutoCreate::parse("+,a").is_err());
    }

    #[test]
    fn generated_ids_are_distinct_and_url_safe() {
        let a = generate_id();
        let b = generate_id();
        assert_eq!(a.len(), 20);
        assert_ne!(a, b);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert_eq!(generate_uuid().len(), 22);
    }
}
