//! The wait parameters of a forwarded request, bounded by the request's deadline (spec 8:
//! 60 seconds, queue time included; issue 25: nothing upstream may outlive the request).
//!
//! Two pure steps over the forwarded target (origin form, `path?query`):
//! - [`canonical`] (when the edge decides): every time parameter the edge acts on
//!   (`timeout`, `master_timeout`) is read with the engine's reader (`params`) and
//!   re-serialised in canonical form, so the upstream cannot read it otherwise; what it
//!   cannot read is refused with Elasticsearch's 400, naming the parameter;
//! - [`cap`] (just before sending, with the time left): each of them becomes
//!   `min(value, left)` (a negative value, "wait forever", counts as longer), and a
//!   request with a `wait_for_*` condition but no `timeout` gets `timeout=<left>`, so the
//!   upstream answers (`timed_out`) before the edge would give up with 504.
//!
//! Only these parameters are rewritten; every other byte of the query is forwarded as it
//! was. Names are compared decoded (`time%6Fut` is `timeout` to the upstream too).
//!
//! Not bounded by a parameter: `wait_for_completion=true` on reindex and by-query jobs
//! (their `timeout` bounds each bulk, not the job); the multitenant class refuses
//! `wait_for_completion=false` (task ids are shared).
//!
//! Must not touch: the path, the body, clocks (the time left is passed in).

use std::time::Duration;

use crate::params::{self, ParamError, TimeValue};
use crate::percent::{self, encode_component, raw_pairs, Plus};

/// A query component decoded once, as Elasticsearch decodes it (400 for a bad escape).
fn decode(s: &[u8]) -> Result<String, ParamError> {
    percent::decode_str(s, Plus::Space).map_err(|e| ParamError::illegal(e.reason()))
}

/// Time parameters that bound a wait upstream.
pub const WAITS: &[&str] = &["timeout", "master_timeout"];

/// Left to the upstream to answer after its wait ended (the time left is reduced by it).
pub const ANSWER_MARGIN: Duration = Duration::from_secs(1);

/// Rewrites the wait parameters of `target` in canonical form; 400 for what the upstream
/// would refuse.
pub fn canonical(target: &mut Vec<u8>) -> Result<(), ParamError> {
    rewrite(target, None)
}

/// Bounds the wait parameters of `target` (already [`canonical`]) by `left`, the time the
/// request has before its deadline. A target the edge did not make canonical is left as
/// it is when it does not read.
pub fn cap(target: &mut Vec<u8>, left: Duration) {
    let cap = TimeValue::from_duration_millis(left.saturating_sub(ANSWER_MARGIN));
    let _ = rewrite(target, Some(cap));
}

fn rewrite(target: &mut Vec<u8>, cap: Option<TimeValue>) -> Result<(), ParamError> {
    let Some(q) = memchr::memchr(b'?', target) else {
        return Ok(());
    };
    let query = &target[q + 1..];
    let mut names = Vec::new();
    for p in raw_pairs(query) {
        names.push(decode(p.name)?);
    }
    let is_wait = |n: &str| WAITS.contains(&n);
    let conditional = names.iter().any(|n| n.starts_with("wait_for_"));
    let has_timeout = names.iter().any(|n| n == "timeout");
    let add_timeout = cap.is_some() && conditional && !has_timeout;
    if !names.iter().any(|n| is_wait(n)) && !add_timeout {
        return Ok(());
    }
    let mut out = Vec::with_capacity(target.len() + 24);
    out.extend_from_slice(&target[..=q]);
    for (p, name) in raw_pairs(query).zip(&names) {
        if out.len() > q + 1 {
            out.push(b'&');
        }
        if !is_wait(name) {
            out.extend_from_slice(p.name);
            if p.has_value {
                out.push(b'=');
                out.extend_from_slice(p.value);
            }
            continue;
        }
        let value = params::parse_time(&decode(p.value)?, name)?;
        let value = match cap {
            Some(c) if value.duration < 0 || value.longer_than(&c) => c,
            _ => value,
        };
        out.extend_from_slice(encode_component(name).as_bytes());
        out.push(b'=');
        out.extend_from_slice(encode_component(&value.to_string()).as_bytes());
    }
    if let (true, Some(c)) = (add_timeout, cap) {
        if out.len() > q + 1 {
            out.push(b'&');
        }
        out.extend_from_slice(b"timeout=");
        out.extend_from_slice(encode_component(&c.to_string()).as_bytes());
    }
    *target = out;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(t: &str) -> Result<String, String> {
        let mut v = t.as_bytes().to_vec();
        canonical(&mut v).map_err(|e| e.reason)?;
        Ok(String::from_utf8(v).unwrap())
    }

    fn capped(t: &str, left_ms: u64) -> String {
        let mut v = t.as_bytes().to_vec();
        cap(&mut v, Duration::from_millis(left_ms));
        String::from_utf8(v).unwrap()
    }

    // issue 25: one reading of the wait parameters, refused as Elasticsearch refuses them
    #[test]
    fn wait_parameters_are_forwarded_canonical() {
        for (target, want) in [
            ("/_cluster/health", Ok("/_cluster/health")),
            ("/_cluster/health?pretty", Ok("/_cluster/health?pretty")),
            ("/_cluster/health?timeout=1%20h", Ok("/_cluster/health?timeout=1h")),
            ("/_cluster/health?timeout=+1H&pretty", Ok("/_cluster/health?timeout=1h&pretty")),
            ("/x?time%6Fut=30S", Ok("/x?timeout=30s")),
            ("/x?a=1;master_timeout=-1&b", Ok("/x?a=1&master_timeout=-1&b")),
            ("/x?timeout=1.5h", Err("failed to parse [1.5h], fractional time values are not supported")),
            ("/x?master_timeout=abc", Err("failed to parse setting [master_timeout] with value [abc] as a time value: unit is missing or unrecognized")),
            ("/x?timeout=1%zz", Err("invalid escape sequence")),
        ] {
            assert_eq!(canon(target), want.map(String::from).map_err(String::from), "{target}");
        }
    }

    // issue 25 #4, spec 8: no wait outlives the request's deadline
    #[test]
    fn waits_are_capped_by_the_time_left() {
        for (target, left, want) in [
            (
                "/_cluster/health?timeout=1h",
                59_000,
                "/_cluster/health?timeout=58000ms",
            ),
            (
                "/_cluster/health?timeout=10s",
                59_000,
                "/_cluster/health?timeout=10s",
            ),
            ("/x?master_timeout=-1", 30_500, "/x?master_timeout=29500ms"),
            ("/x?timeout=150000000000000d", 2_000, "/x?timeout=1000ms"),
            ("/x?timeout=1h", 500, "/x?timeout=0ms"),
            (
                "/_cluster/health/x?wait_for_status=green",
                20_000,
                "/_cluster/health/x?wait_for_status=green&timeout=19000ms",
            ),
            ("/_search?q=a", 20_000, "/_search?q=a"),
            ("/_search", 20_000, "/_search"),
        ] {
            assert_eq!(capped(target, left), want, "{target}");
        }
    }
}
