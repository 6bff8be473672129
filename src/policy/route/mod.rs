//! Routing: which cluster a request is for, from its Host (`<hostname>.<region>.<domain>`,
//! port ignored) or, when enabled and the Host is `localhost` or an IP literal, from its
//! username (spec 2.1; issue 2).
//!
//! Must not touch: credentials checking (see `auth`), sockets. Allocation-free.

use super::view::{ClusterView, Directory};
use crate::errors::EdgeError;

/// Longest host name considered (RFC 1035: 253).
const MAX_HOST: usize = 253;

/// The host part of a Host header value: port removed, lowercased into `scratch`, trailing
/// dot removed. `None` when it is not a plausible host.
pub fn normalize_host<'a>(value: &[u8], scratch: &'a mut [u8; MAX_HOST]) -> Option<&'a str> {
    let host = if let Some(rest) = value.strip_prefix(b"[") {
        // IPv6 literal: [::1]:9243
        let end = memchr::memchr(b']', rest)?;
        &value[..end + 2]
    } else {
        match memchr::memrchr(b':', value) {
            Some(i) if value[i + 1..].iter().all(u8::is_ascii_digit) => &value[..i],
            Some(_) => return None,
            None => value,
        }
    };
    let host = host.strip_suffix(b".").unwrap_or(host);
    if host.is_empty() || host.len() > MAX_HOST {
        return None;
    }
    for (dst, src) in scratch.iter_mut().zip(host) {
        *dst = src.to_ascii_lowercase();
    }
    std::str::from_utf8(&scratch[..host.len()]).ok()
}

/// True for `localhost` and IP literals: hosts that name no cluster.
pub fn is_anonymous_host(host: &str) -> bool {
    host == "localhost" || host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok()
}

/// Finds the cluster for a normalized `host` and the request's `username` (if any).
/// Clusters not provisioned yet or destroyed are not found (spec 3).
pub fn route<'s, D: Directory>(
    snap: &'s D,
    host: &str,
    username: Option<&[u8]>,
) -> Result<&'s D::Cluster, EdgeError> {
    let found = if snap.route_by_username() && is_anonymous_host(host) {
        let user = username.ok_or(EdgeError::AuthRequired)?;
        let user = std::str::from_utf8(user).map_err(|_| EdgeError::AuthRequired)?;
        // An unknown username is a credentials problem, not an address problem.
        let found = snap.by_username(user).ok_or_else(|| {
            if snap.is_destroyed_username(user) {
                EdgeError::ClusterNotFound
            } else {
                EdgeError::AuthRequired
            }
        })?;
        Some(found)
    } else {
        host.strip_suffix(snap.domain())
            .and_then(|h| h.strip_suffix('.'))
            .and_then(|hostname_region| snap.by_host(hostname_region))
    };
    match found {
        // Not provisioned yet, destroyed, or a new single-tenant cluster whose upstream has
        // not answered yet: no cluster answers here (spec 3).
        Some(c) if c.reachable() => Ok(c),
        _ => Err(EdgeError::ClusterNotFound),
    }
}

#[cfg(test)]
mod tests;
