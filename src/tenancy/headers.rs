//! Request headers of the multitenant class: the one table of what the edge does with each
//! header a tenant sends (attacks-10 r2 #5). Its upstream is shared, and may trust what
//! the edge sends it, so only headers that the official clients send and that carry a
//! request feature (or harmless client facts) are forwarded; identity and impersonation
//! headers are refused with 400 naming the header; every other header is left out.
//!
//! Why leave the rest out rather than refuse it: Elasticsearch implements no request
//! feature in a header outside this table (it ignores headers it does not know), so the
//! upstream's answer is the one the tenant would get anyway; and clients, browsers,
//! tracing libraries and the proxies between them add headers of their own (`Cookie`,
//! `Referer`, `X-Request-Id`, Kibana's and Logstash's `X-Elastic-Product-Origin`)
//! that a refusal would turn into failures the tenant cannot fix. Identity headers are the
//! exception: a client that sends one asks for something (another principal) that it will
//! not get, and must be told. The refusal is a courtesy, not the protection: an identity
//! header missing from [`REFUSED`] is still never forwarded, since only [`FORWARDED`] is.
//! `Origin` is forwarded: the edge answers CORS itself (`policy::cors`), the upstream may
//! log it.
//!
//! Single-tenant clusters own their upstream and forward every end-to-end header.
//!
//! Must not touch: I/O, the protocol writer (it takes [`FORWARDED`] as data), bodies.

use crate::errors::EdgeError;
use crate::proto::Pass;

/// What the multitenant class does with a request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Forwarded as sent.
    Forward,
    /// Forwarded with the tenant's prefix right before its value: the shared upstream's
    /// task list and logs then say whose it is, no tenant can pose as another's, and the
    /// upstream's echo of it comes back as sent (the prefix is stripped from response
    /// header values).
    Tag,
    /// Written (framing, `Connection`, `X-Forwarded-For`/`-Proto`) or consumed
    /// (`Authorization`, `Expect`) by the edge itself, on every cluster.
    Edge,
    /// Refused with 400 naming the header: it asks an upstream that trusts the edge for
    /// another identity. A name ending in `*` matches every header that starts with it.
    Refuse,
    /// Not forwarded, like every header the table does not name; listed with the reason.
    Drop,
}

/// Every request header the multitenant class knows, lowercase, with its rule and why.
pub const REQUEST_HEADERS: &[(&str, Rule, &str)] = &[
    ("host", Rule::Forward, "the cluster's own host name"),
    (
        "content-type",
        Rule::Forward,
        "checked first: JSON or NDJSON (media.rs)",
    ),
    (
        "accept",
        Rule::Forward,
        "checked first: JSON, NDJSON or text (media.rs)",
    ),
    ("user-agent", Rule::Forward, "every client sends it"),
    (
        "x-elastic-client-meta",
        Rule::Forward,
        "client telemetry (elasticsearch-py, -js)",
    ),
    (
        "traceparent",
        Rule::Forward,
        "checked first: a W3C trace context, nothing else",
    ),
    (
        "x-opaque-id",
        Rule::Tag,
        "lands in the shared task list and logs",
    ),
    ("content-length", Rule::Edge, "framing, re-serialised"),
    ("transfer-encoding", Rule::Edge, "framing, re-serialised"),
    (
        "connection",
        Rule::Edge,
        "hop-by-hop; the edge keeps its own upstream connections",
    ),
    ("keep-alive", Rule::Edge, "hop-by-hop"),
    ("expect", Rule::Edge, "the edge answers 100-continue itself"),
    (
        "authorization",
        Rule::Edge,
        "the cluster's credentials, checked and never forwarded",
    ),
    (
        "x-forwarded-for",
        Rule::Edge,
        "replaced by the client's address",
    ),
    (
        "x-forwarded-proto",
        Rule::Edge,
        "replaced by the listener's scheme",
    ),
    ("es-security-runas-user", Rule::Refuse, "x-pack run-as"),
    (
        "es-secondary-authorization",
        Rule::Refuse,
        "x-pack secondary credentials",
    ),
    (
        "es-client-authentication",
        Rule::Refuse,
        "x-pack JWT realm client secret",
    ),
    (
        "x-proxy-*",
        Rule::Refuse,
        "OpenSearch security proxy authentication (user, roles, ext)",
    ),
    (
        "opendistro_security_*",
        Rule::Refuse,
        "OpenSearch security impersonation",
    ),
    (
        "securitytenant",
        Rule::Refuse,
        "OpenSearch security tenant selection",
    ),
    (
        "security_tenant",
        Rule::Refuse,
        "OpenSearch security tenant selection",
    ),
    ("x-forwarded-user", Rule::Refuse, "authenticating proxies"),
    ("x-forwarded-email", Rule::Refuse, "authenticating proxies"),
    ("x-forwarded-groups", Rule::Refuse, "authenticating proxies"),
    ("x-remote-user", Rule::Refuse, "authenticating proxies"),
    ("remote-user", Rule::Refuse, "authenticating proxies"),
    (
        "x-auth-request-user",
        Rule::Refuse,
        "authenticating proxies",
    ),
    (
        "accept-encoding",
        Rule::Drop,
        "responses must come back uncompressed to be rewritten",
    ),
    (
        "content-encoding",
        Rule::Drop,
        "only `identity` passes the check: nothing to say",
    ),
    (
        "accept-charset",
        Rule::Drop,
        "Elasticsearch always answers UTF-8 and ignores it",
    ),
    (
        "tracestate",
        Rule::Drop,
        "vendor text; Elasticsearch reads only traceparent",
    ),
    (
        "x-elastic-product-origin",
        Rule::Drop,
        "marks Elastic's own products' requests",
    ),
    (
        "origin",
        Rule::Forward,
        "the edge answers CORS itself; the upstream may log it",
    ),
    ("cookie", Rule::Drop, "Elasticsearch's REST API reads none"),
];

/// The number of forwarded rows of [`REQUEST_HEADERS`].
const FORWARDED_LEN: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < REQUEST_HEADERS.len() {
        if matches!(REQUEST_HEADERS[i].1, Rule::Forward | Rule::Tag) {
            n += 1;
        }
        i += 1;
    }
    n
};

/// The allow-list the edge passes to the protocol writer: the `Forward` and `Tag` rows of
/// [`REQUEST_HEADERS`] (the tag is the tenant's prefix).
pub const FORWARDED: [(&[u8], Pass); FORWARDED_LEN] = {
    let mut out: [(&[u8], Pass); FORWARDED_LEN] = [(b"", Pass::AsSent); FORWARDED_LEN];
    let (mut i, mut n) = (0, 0);
    while i < REQUEST_HEADERS.len() {
        let (name, rule, _) = REQUEST_HEADERS[i];
        match rule {
            Rule::Forward => {
                out[n] = (name.as_bytes(), Pass::AsSent);
                n += 1;
            }
            Rule::Tag => {
                out[n] = (name.as_bytes(), Pass::Tagged);
                n += 1;
            }
            _ => {}
        }
        i += 1;
    }
    out
};

/// The rule of header `name` (any case); `Drop` for a header the table does not name.
pub fn rule(name: &[u8]) -> Rule {
    REQUEST_HEADERS
        .iter()
        .find(|(row, _, _)| matches_row(row.as_bytes(), name))
        .map_or(Rule::Drop, |&(_, rule, _)| rule)
}

fn matches_row(row: &[u8], name: &[u8]) -> bool {
    match row.strip_suffix(b"*") {
        Some(start) => name.len() >= start.len() && name[..start.len()].eq_ignore_ascii_case(start),
        None => name.eq_ignore_ascii_case(row),
    }
}

/// Checks a multitenant request's headers (`(name, value)` in order): 400 naming the first
/// identity header ([`Rule::Refuse`]), and 400 for a `traceparent` that is not a W3C trace
/// context (its text would reach the shared upstream's task list and logs).
pub fn check_request_headers<'a>(
    headers: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
) -> Result<(), EdgeError> {
    for (name, value) in headers {
        match rule(name) {
            Rule::Refuse => {
                let name = String::from_utf8_lossy(name);
                return Err(refusal(format!(
                    "request header [{name}] is not allowed on this cluster: identity and \
                     impersonation headers are never forwarded to its shared upstream"
                )));
            }
            Rule::Forward
                if name.eq_ignore_ascii_case(b"traceparent") && !is_traceparent(value) =>
            {
                return Err(refusal(
                    "request header [traceparent] is not a W3C trace context \
                     (version-traceid-parentid-flags in lowercase hex)"
                        .into(),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

fn refusal(reason: String) -> EdgeError {
    EdgeError::Refused {
        status: 400,
        kind: "illegal_argument_exception",
        reason,
    }
}

/// A W3C `traceparent` (Trace Context, level 1): `00-<32 hex>-<16 hex>-<2 hex>`, lowercase,
/// ids not all zero; a later version (not `ff`) may add `-`-led fields after those 55 bytes.
pub fn is_traceparent(value: &[u8]) -> bool {
    let v = value.trim_ascii();
    if v.len() < 55 || (v.len() > 55 && (v[55] != b'-' || v.starts_with(b"00"))) {
        return false;
    }
    let hex = |s: &[u8]| s.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let nonzero = |s: &[u8]| s.iter().any(|&b| b != b'0');
    let (version, trace, parent, flags) = (&v[..2], &v[3..35], &v[36..52], &v[53..55]);
    hex(version)
        && version != b"ff"
        && [v[2], v[35], v[52]] == [b'-'; 3]
        && hex(trace)
        && nonzero(trace)
        && hex(parent)
        && nonzero(parent)
        && hex(flags)
}

#[cfg(test)]
#[path = "headers_tests.rs"]
mod tests;
