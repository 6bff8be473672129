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
//! Files: `scope` (index patterns: matching, containment, the path's index expression
//! confined), `body` (the names a body reaches, checked against the patterns); this file holds
//! the roles, the grant, and what a role permits.
//!
//! Must not touch: credentials (see `auth`), sockets, the registry's storage.

mod body;
mod scope;

use std::borrow::Cow;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::proto::Method;
use crate::request::classify::{Class, Classified, Methods};

pub use body::{body_checked, check_body, BodyRefusal};
pub use scope::{confine, contained, glob_match, inserts_patterns, scope_path};

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

/// The refusal of a name outside the key's patterns.
fn outside(action: String, name: &str) -> Denied {
    Denied {
        action,
        why: Cow::Owned(format!("index `{name}` is outside the key's indices")),
    }
}

#[cfg(test)]
mod tests;
