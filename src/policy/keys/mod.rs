//! Cluster keys on the request path (issue 29): what a key may do, decided from tables.
//!
//! A key is a named credential of a cluster besides its master pair, with a [`Role`]
//! (`full`: what the master pair can do; `read`: every read, no write and no index, alias or
//! template change; `search`: the search endpoints of [`SEARCH`]) and optionally a list of
//! index patterns it may name (`indices`). [`permits`] checks the role against a classified
//! request; [`scope_path`] confines the index expression of the path to the patterns (a
//! key for `site*` searching `*` searches `site*`: wildcards and comma lists are checked
//! item by item, and an item wider than the patterns is replaced by the patterns it
//! contains); [`check_body`] refuses a body that names an index outside them (`_msearch`
//! headers, `_mget` docs, `_bulk` actions, terms lookups, `_reindex` sources: every
//! `index`, `_index` or `indices` member, anywhere; and in bodies that create indices,
//! aliases or templates, the alias names and `index_patterns` they create).
//!
//! Pure: data in, decision out. The expiry instant comes with the grant; `now` is passed in.
//!
//! Must not touch: credentials (see `auth`), sockets, the registry's storage.

use std::borrow::Cow;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::proto::Method;
use crate::request::classify::{Class, Classified, Methods, Route, Seg, Tenancy};
use crate::request::path::encode_segment;

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Everything the cluster's master pair can do.
    Full,
    /// Every read API; no write, no index, alias or template change.
    Read,
    /// Searches, counts, document gets, field capabilities, scrolls, `GET /` (see [`SEARCH`]).
    Search,
}

impl Role {
    /// `full`, `read` or `search`.
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "full" => Some(Role::Full),
            "read" => Some(Role::Read),
            "search" => Some(Role::Search),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Full => "full",
            Role::Read => "read",
            Role::Search => "search",
        }
    }
}

/// The endpoints (route names of `request::endpoints`) a `search` key may call, and with
/// which methods.
pub const SEARCH: &[(&str, Methods)] = &[
    ("_search", Methods::ANY),
    ("_msearch", Methods::ANY),
    ("_count", Methods::ANY),
    ("_mget", Methods::ANY),
    ("_field_caps", Methods::ANY),
    // continuation (GET/POST) and clear (DELETE)
    ("_search/scroll", Methods::ANY),
    ("_doc", Methods::GET_HEAD),
    ("document", Methods::GET_HEAD),
    ("/", Methods::GET_HEAD),
];

/// Endpoints that name no index in their path and whose every index reference is checked
/// elsewhere (a body) or that reach no index data: what a key limited to `indices` may
/// still call without an index in the path.
pub const UNSCOPED: &[&str] = &["/", "_search/scroll", "_mget", "_bulk", "_pit"];

/// A key as the request path holds it (no secret: the password's hash stays with the
/// credential that checks it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyGrant {
    pub id: String,
    pub name: String,
    pub role: Role,
    /// Index patterns the key may name (empty: any index).
    pub indices: Vec<String>,
    /// When the key stops opening the cluster.
    pub expires: Option<Instant>,
    /// Origins a browser may call the cluster from with this key.
    pub allowed_origins: Vec<String>,
    /// Client addresses the key may be used from (empty: any).
    pub allowed_ips: Vec<crate::cidr::Cidr>,
}

impl KeyGrant {
    /// Whether the key still opens the cluster at `now`.
    pub fn live_at(&self, now: Instant) -> bool {
        self.expires.is_none_or(|e| now < e)
    }
}

/// Why credentials did not open a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthFail {
    /// Wrong, expired, revoked or missing: 401.
    Credentials,
    /// A key used from an address outside its `allowed_ips` (found before its password
    /// was compared): 403 naming the key.
    Address { key: String },
}

/// Who a request's credentials are: the cluster's master pair, or one of its keys.
#[derive(Debug, Clone, Copy)]
pub enum Principal<'a> {
    Master,
    Key(&'a KeyGrant),
}

/// Why a key may not do what it asked: the action as the refusal names it, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    pub action: String,
    pub why: Cow<'static, str>,
}

fn method_name(m: Method) -> &'static str {
    match m {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
        Method::Options => "OPTIONS",
        Method::Patch => "PATCH",
        Method::Other => "OTHER",
    }
}

/// The action of a request as a refusal names it: `<METHOD> <endpoint>`.
pub fn action_of(method: Method, c: &Classified<'_>) -> String {
    let name = match c.route {
        Some(r) => r.name.to_string(),
        None => crate::request::classify::endpoint_name(&c.path),
    };
    format!("{} {name}", method_name(method))
}

/// Whether `role` lets a key make the request `c` (sent with `method`).
pub fn permits(role: Role, method: Method, c: &Classified<'_>) -> Result<(), Denied> {
    let ok = match role {
        Role::Full => true,
        Role::Read => c.class == Class::Read,
        Role::Search => {
            c.class == Class::Read
                && c.route.is_some_and(|r| {
                    SEARCH
                        .iter()
                        .any(|(name, m)| *name == r.name && m.has(method))
                })
        }
    };
    if ok {
        return Ok(());
    }
    Err(Denied {
        action: action_of(method, c),
        why: Cow::Owned(format!(
            "the key's role `{}` does not allow it",
            role.as_str()
        )),
    })
}

/// Whether the key is less than the master pair (a role other than `full`, or indices): it
/// may then continue and close only its own scrolls and points in time, never all of the
/// cluster's ([`clears_all`]).
pub fn restricted(k: &KeyGrant) -> bool {
    k.role != Role::Full || !k.indices.is_empty()
}

/// Why a restricted key may not close (or list) every context of the cluster.
const ALL_CONTEXTS: &str = "it reaches search contexts the key did not open (`_all`)";

/// A restricted key's request to an endpoint the edge does not know (`None`: a known
/// one): refused, since the edge cannot read what such a request names (a search
/// template's rendered body can carry another principal's point in time, an SQL cursor a
/// scroll; `tenancy::key_ids`).
pub fn unknown_denied(k: &KeyGrant, method: Method, c: &Classified<'_>) -> Option<Denied> {
    (restricted(k) && c.route.is_none()).then(|| Denied {
        action: action_of(method, c),
        why: Cow::Borrowed(
            "a restricted key may call the endpoints the edge reads only (it cannot check what this one names)",
        ),
    })
}

/// The refusal of a request that closes every scroll or point in time of the cluster.
pub fn all_contexts_denied(method: Method, c: &Classified<'_>) -> Denied {
    Denied {
        action: action_of(method, c),
        why: Cow::Borrowed(ALL_CONTEXTS),
    }
}

/// Whether the request (its path and query; the body is [`check_body`]'s) closes or lists
/// every scroll or point in time of the cluster: `/_search/point_in_time/_all` with any
/// method (a list seals every id for the key that asked), or a
/// `DELETE` of `_search/scroll` with `_all` among the ids of its path or of its
/// `scroll_id` parameter (any item of a comma list, encoded or not: the engine clears all
/// for each of these forms).
pub fn clears_all(method: Method, c: &Classified<'_>, query: Option<&[u8]>) -> bool {
    // Listing every point in time hands out ids the key did not open (sealed for it).
    if c.route.map(|r| r.name) == Some("_search/point_in_time/_all") {
        return true;
    }
    if method != Method::Delete {
        return false;
    }
    match c.route.map(|r| r.name) {
        Some("_search/point_in_time/_all") => true,
        Some("_search/scroll") => {
            let in_path = c.path.segments().skip(2).any(names_all);
            let in_query = query.is_some_and(|q| {
                crate::percent::raw_pairs(q).any(|p| {
                    let name = crate::percent::decode_str(p.name, crate::percent::Plus::Space);
                    let value = crate::percent::decode_str(p.value, crate::percent::Plus::Space);
                    name.is_ok_and(|n| n == "scroll_id")
                        && value.map_or(true, |v| names_all(v.as_bytes()))
                })
            });
            in_path || in_query
        }
        _ => false,
    }
}

/// Whether a comma list of ids holds `_all`.
fn names_all(ids: &[u8]) -> bool {
    ids.split(|&b| b == b',').any(|i| i.trim_ascii() == b"_all")
}

/// Whether a clear-scroll body's `scroll_id` (a string, a comma list, or a list of them)
/// holds `_all`.
fn body_names_all(v: &Value) -> bool {
    match v.get("scroll_id") {
        Some(Value::String(s)) => names_all(s.as_bytes()),
        Some(Value::Array(a)) => a
            .iter()
            .any(|i| i.as_str().is_some_and(|s| names_all(s.as_bytes()))),
        _ => false,
    }
}

/// Whether `name` (no wildcard) matches `pattern` (`*` matches any run of characters).
///
/// Linear in `name` for every pattern: the text before the first `*` must start the name,
/// the text after the last `*` must end it, and each literal run between stars is found
/// leftmost in what is left (for `*`-only patterns the leftmost choice is never worse).
/// The recursive form tried every split at every `*`: a key pattern `*a*a…*b` against a
/// 60-byte name held a worker for good (attack: `tests/it/attack_keys.rs`).
pub fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
    let (Some(first), Some(last)) = (
        memchr::memchr(b'*', pattern),
        memchr::memrchr(b'*', pattern),
    ) else {
        return pattern == name;
    };
    let (head, tail) = (&pattern[..first], &pattern[last + 1..]);
    if name.len() < head.len() + tail.len() || !name.starts_with(head) || !name.ends_with(tail) {
        return false;
    }
    let mut rest = &name[head.len()..name.len() - tail.len()];
    // Between the first and the last star (nothing when they are one).
    let middle = pattern.get(first + 1..last).unwrap_or_default();
    for run in middle.split(|&b| b == b'*') {
        if run.is_empty() {
            continue;
        }
        match memchr::memmem::find(rest, run) {
            Some(i) => rest = &rest[i + run.len()..],
            None => return false,
        }
    }
    true
}

/// Whether every index name the expression item `item` can match is matched by
/// `pattern`: a plain name matched by it, the pattern itself, or (for a pattern
/// `<prefix>*` with no other wildcard) a wildcard item whose text before its first `*`
/// starts with the prefix.
pub fn contained(item: &[u8], pattern: &[u8]) -> bool {
    if item == pattern {
        return true;
    }
    let Some(star) = item.iter().position(|&b| b == b'*') else {
        return glob_match(pattern, item);
    };
    match pattern.split_last() {
        Some((b'*', prefix)) if !prefix.contains(&b'*') => item[..star].starts_with(prefix),
        _ => false,
    }
}

/// Characters an index expression item may not contain for a key limited to patterns:
/// date math (`<`), remote clusters (`:`).
fn opaque(item: &[u8]) -> bool {
    item.iter().any(|&b| matches!(b, b'<' | b'>' | b':' | b'{'))
}

/// The index expression `expr` (comma list, wildcards, `_all`) confined to `patterns`:
/// items within a pattern are kept, wider items are replaced by the patterns they contain;
/// an item that is neither is refused (its text in the error). Exclusions (`-name`) stay.
pub fn confine(expr: &[u8], patterns: &[String]) -> Result<Vec<u8>, String> {
    let mut out: Vec<u8> = Vec::with_capacity(expr.len());
    let push = |out: &mut Vec<u8>, item: &[u8]| {
        let dup = out.split(|&b| b == b',').any(|x| x == item);
        if !dup {
            if !out.is_empty() {
                out.push(b',');
            }
            out.extend_from_slice(item);
        }
    };
    for item in expr.split(|&b| b == b',') {
        let item: &[u8] = if item == b"_all" || item.is_empty() {
            b"*"
        } else {
            item
        };
        if item.starts_with(b"-") && !out.is_empty() {
            push(&mut out, item);
            continue;
        }
        if opaque(item) {
            return Err(String::from_utf8_lossy(item).into_owned());
        }
        if patterns.iter().any(|p| contained(item, p.as_bytes())) {
            push(&mut out, item);
            continue;
        }
        let inner: Vec<&String> = patterns
            .iter()
            .filter(|p| item.contains(&b'*') && contained(p.as_bytes(), item))
            .collect();
        if inner.is_empty() {
            return Err(String::from_utf8_lossy(item).into_owned());
        }
        for p in inner {
            push(&mut out, p.as_bytes());
        }
    }
    Ok(out)
}

/// Why [`check_body`] refused a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyRefusal {
    /// It names an index outside the key's patterns: 403.
    Denied(Denied),
    /// It is not the JSON (or NDJSON) its endpoint takes: 400, as the upstream would.
    Malformed,
}

/// The refusal of a name outside the key's patterns.
fn outside(action: String, name: &str) -> Denied {
    Denied {
        action,
        why: Cow::Owned(format!("index `{name}` is outside the key's indices")),
    }
}

/// For a key limited to `patterns` (non-empty): the path to classify again instead of the
/// request's, with its index expression confined (`Ok(None)`: the path stays as it is).
pub fn scope_path(
    patterns: &[String],
    method: Method,
    c: &Classified<'_>,
) -> Result<Option<Vec<u8>>, Denied> {
    let Some(route) = c.route else {
        return Err(Denied {
            action: action_of(method, c),
            why: Cow::Borrowed("a key limited to indices may call known endpoints only"),
        });
    };
    if TEMPLATES.contains(&route.name) {
        return Err(Denied {
            action: action_of(method, c),
            why: Cow::Borrowed(TEMPLATE_WHY),
        });
    }
    let at = index_positions(route);
    let insert = match route.tenancy {
        Tenancy::Rewrite { all_at, .. } if at.is_empty() => all_at,
        _ => None,
    };
    if at.is_empty() && insert.is_none() {
        return if UNSCOPED.contains(&route.name) {
            Ok(None)
        } else {
            Err(Denied {
                action: action_of(method, c),
                why: Cow::Borrowed("it reaches beyond the key's indices"),
            })
        };
    }
    let mut segs: Vec<Vec<u8>> = c.path.segments().map(<[u8]>::to_vec).collect();
    for &i in &at {
        if let Some(seg) = segs.get_mut(i) {
            *seg = confine(seg, patterns).map_err(|n| outside(action_of(method, c), &n))?;
        }
    }
    if let Some(i) = insert {
        let all = confine(b"*", patterns).map_err(|n| outside(action_of(method, c), &n))?;
        segs.insert((i as usize).min(segs.len()), all);
    }
    let mut out = Vec::with_capacity(c.path.len() * 16 + 16);
    if segs.is_empty() {
        out.push(b'/');
    }
    for s in &segs {
        out.push(b'/');
        encode_segment(s, &mut out);
    }
    Ok(Some(out))
}

/// Endpoints of cluster-level configuration whose path names (templates) are not index
/// names: a key limited to indices neither reads nor writes them (a template named
/// `site-t` can hold settings, mappings and aliases of `secret*`; its name says nothing of
/// what its body reaches, and reading it back would show the master's configuration).
const TEMPLATES: &[&str] = &["_template", "_index_template", "_component_template"];

const TEMPLATE_WHY: &str = "templates are cluster-level configuration, beyond a key limited to indices (their names are not index names)";

/// Whether [`scope_path`] puts a key's patterns into the path of `c` (it names no index
/// and its endpoint reads all of them then).
pub fn inserts_patterns(c: &Classified<'_>) -> bool {
    c.route.is_some_and(|route| {
        index_positions(route).is_empty()
            && matches!(
                route.tenancy,
                Tenancy::Rewrite {
                    all_at: Some(_),
                    ..
                }
            )
    })
}

/// Positions of the path segments a row reads as index or alias names.
fn index_positions(route: &Route) -> Vec<usize> {
    route
        .pattern
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Seg::Index | Seg::Alias))
        .map(|(i, _)| i)
        .collect()
}

/// Object members that name indices in Elasticsearch request bodies.
const INDEX_KEYS: &[&str] = &["index", "_index", "indices"];

/// Every string under an `index`, `_index` or `indices` member of `v` must be within
/// `patterns` (`Err`: the first that is not).
fn check_value(v: &Value, patterns: &[String]) -> Result<(), String> {
    match v {
        Value::Object(o) => {
            for (k, v) in o {
                if INDEX_KEYS.contains(&k.as_str()) {
                    check_names(v, patterns)?;
                }
                check_value(v, patterns)?;
            }
            Ok(())
        }
        Value::Array(a) => a.iter().try_for_each(|v| check_value(v, patterns)),
        _ => Ok(()),
    }
}

fn check_names(v: &Value, patterns: &[String]) -> Result<(), String> {
    match v {
        Value::String(s) => {
            for item in s.split(',') {
                let item = item.trim();
                let ok = item.starts_with('-')
                    || (!opaque(item.as_bytes())
                        && patterns
                            .iter()
                            .any(|p| contained(item.as_bytes(), p.as_bytes())));
                if !ok {
                    return Err(item.to_string());
                }
            }
            Ok(())
        }
        Value::Array(a) => a.iter().try_for_each(|v| check_names(v, patterns)),
        // `"index": {...}` is a field or an action, not a name: its members are walked.
        _ => Ok(()),
    }
}

/// Members through which a body that creates indices, aliases or templates names what it
/// creates or what it will apply to: an index creation's and a template's `aliases` (their
/// member names are alias names), a template's `index_patterns`. A key limited to indices
/// must not name anything outside its patterns there either: a template `site-t` with
/// `index_patterns: ["secret*"]` and an alias `site-all` would put every index the master
/// creates later under a name the key may read (attack: `tests/it/attack_keys.rs`).
const CREATED_KEYS: &[&str] = &["aliases", "alias", "index_patterns"];

/// The body kinds whose bodies create names (see [`CREATED_KEYS`]).
fn creates_names(kind: crate::request::classify::BodyKind) -> bool {
    use crate::request::classify::BodyKind as B;
    matches!(
        kind,
        B::CreateIndex | B::Template | B::IndexTemplate | B::ComponentTemplate | B::PutAlias
    )
}

/// Every name under a [`CREATED_KEYS`] member of `v` must be within `patterns`: the member
/// names of an `aliases` object, the strings of an `alias`, `aliases` or `index_patterns`
/// member.
fn check_created(v: &Value, patterns: &[String]) -> Result<(), String> {
    match v {
        Value::Object(o) => {
            for (k, v) in o {
                if CREATED_KEYS.contains(&k.as_str()) {
                    match v {
                        Value::Object(names) => names
                            .keys()
                            .try_for_each(|n| check_names(&Value::String(n.clone()), patterns))?,
                        other => check_names(other, patterns)?,
                    }
                }
                check_created(v, patterns)?;
            }
            Ok(())
        }
        Value::Array(a) => a.iter().try_for_each(|v| check_created(v, patterns)),
        _ => Ok(()),
    }
}

/// The body kinds [`check_body`] reads for a key limited to indices (everything but
/// documents, which are data).
pub fn body_checked(kind: crate::request::classify::BodyKind) -> bool {
    use crate::request::classify::BodyKind as B;
    !matches!(kind, B::None | B::Document)
}

/// Checks a whole body of `kind` sent by a key limited to `patterns` (empty: a restricted
/// key without indices, whose clear-scroll body is read for `_all` only): JSON, or NDJSON
/// (`_bulk`: action lines only, the documents they carry are data; `_msearch`: every
/// line). `Err`: the refusal.
pub fn check_body(
    patterns: &[String],
    kind: crate::request::classify::BodyKind,
    body: &[u8],
    action: &str,
) -> Result<(), BodyRefusal> {
    use crate::request::classify::BodyKind as B;
    let malformed = || BodyRefusal::Malformed;
    let bad = |n: String| BodyRefusal::Denied(outside(action.to_string(), &n));
    match kind {
        B::Bulk | B::Msearch => {
            let mut skip_source = false;
            for line in body.split(|&b| b == b'\n') {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                if skip_source {
                    skip_source = false;
                    continue;
                }
                let v: Value = serde_json::from_slice(line).map_err(|_| malformed())?;
                if kind == B::Bulk {
                    let action = v.as_object().and_then(|o| o.iter().next());
                    let Some((name, meta)) = action else {
                        return Err(malformed());
                    };
                    skip_source = name != "delete";
                    check_value(meta, patterns).map_err(bad)?;
                } else {
                    check_value(&v, patterns).map_err(bad)?;
                }
            }
            Ok(())
        }
        _ if body.iter().all(u8::is_ascii_whitespace) => Ok(()),
        _ => {
            let v: Value = serde_json::from_slice(body).map_err(|_| malformed())?;
            if kind == B::ClearScroll && body_names_all(&v) {
                return Err(BodyRefusal::Denied(Denied {
                    action: action.to_string(),
                    why: Cow::Borrowed(ALL_CONTEXTS),
                }));
            }
            if patterns.is_empty() {
                return Ok(());
            }
            check_value(&v, patterns).map_err(bad)?;
            if creates_names(kind) {
                check_created(&v, patterns).map_err(bad)?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
