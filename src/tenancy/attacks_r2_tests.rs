//! Second-round attacks on the multitenant rewriting (docs/reviews/2026-11-24-tenancy10-attacks-r2.md):
//! one test per confirmed finding, against the pure layers (request planning, body
//! rewriting, response filters, forwarded heads, request headers). A test marked `#[ignore = "attack r2 #N:
//! open"]` demonstrates a finding the code does not yet close; run them with
//! `cargo test --release --lib attacks_r2_tests -- --include-ignored`.

use super::headers::{check_request_headers, FORWARDED};
use super::prefix::{Prefix, TenancyKey};
use super::request::plan_request;
use super::response::{ResponsePlan, ResponseRewriter};
use super::rewrite_json_body;
use super::Tenant;
use super::{BulkRewriter, IdSealer};
use crate::errors::EdgeError;
use crate::proto::{
    write_forward_request, ForwardHeaders, ForwardRequest, HeadLimits, Method, RequestHead,
};
use crate::request::classify::{classify_request, BodyKind, ClusterClass, ResponseKind};

/// The tenant under attack (A) and another tenant of the same upstream (B).
const P: &str = "abcdefghijklmnopqrst-";
const OTHER: &str = "bbbbbbbbbbbbbbbbbbbb-";
/// The 20 secret characters of A's prefix: what must never reach A, whole or cut short.
const SECRET: &str = "abcdefghijklmnopqrst";

fn prefix() -> Prefix {
    Prefix::from_bytes(P.as_bytes()).unwrap()
}

fn sealer() -> IdSealer {
    IdSealer::new(&TenancyKey::from_bytes([7; 32]))
}

/// The body the edge forwards for a multitenant request planned as `kind`.
fn forwarded(kind: BodyKind, body: &str) -> Result<String, EdgeError> {
    let p = prefix();
    let s = sealer();
    let t = Tenant {
        prefix: &p,
        ids: Some((&s, "acme")),
        now_ms: 0,
    };
    let mut out = Vec::new();
    rewrite_json_body(&t, kind, body.as_bytes(), &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

/// The upstream target of a multitenant request (`Err`: the edge refuses it).
fn planned(method: Method, target: &str) -> Result<String, EdgeError> {
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q.as_bytes())),
        None => (target, None),
    };
    let req = classify_request(method, path.as_bytes(), ClusterClass::Multitenant)
        .map_err(EdgeError::from)?;
    let p = prefix();
    let s = sealer();
    let t = Tenant {
        prefix: &p,
        ids: Some((&s, "acme")),
        now_ms: 0,
    };
    let mut out = Vec::new();
    plan_request(&t, &req, query, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

/// What tenant A receives for an upstream error body (plain response plan, one chunk
/// and byte by byte: both must hold).
fn released(status: u16, body: &str) -> Vec<String> {
    let plan = ResponsePlan {
        kind: ResponseKind::Strip,
        verbose: false,
        help: false,
        ids: None,
    };
    let whole = {
        let mut r =
            ResponseRewriter::new(prefix(), plan, status, Some(&b"application/json"[..]), None);
        let mut out = Vec::new();
        r.feed(body.as_bytes(), &mut out);
        r.finish(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    let bytewise = {
        let mut r =
            ResponseRewriter::new(prefix(), plan, status, Some(&b"application/json"[..]), None);
        let mut out = Vec::new();
        for b in body.as_bytes().chunks(1) {
            r.feed(b, &mut out);
        }
        r.finish(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    vec![whole, bytewise]
}

fn refused_400(r: Result<String, EdgeError>, what: &str) {
    match r {
        Ok(fwd) => panic!("{what}: forwarded as {fwd}"),
        Err(e) => assert_eq!(e.status(), 400, "{what}: {e:?}"),
    }
}

/// The alias filter of finding 1a, padded so that `<P>` starts at character 480 of the
/// filter string the upstream re-serialises (`AliasActions.filter(Map)`).
fn alias_filter_body() -> String {
    format!(
        r#"{{"actions":[{{"add":{{"index":"books","alias":"a","filter":{{"bool":{{"filter":[{{"term":{{"t":"{}"}}}},{{"term":{{"_index":"x"}}}},{{"match":{{"t":{{"query":"x","max_expansions":99999999999999999999}}}}}}]}}}}}}}}]}}"#,
        "z".repeat(424)
    )
}

// r2 #1a: the edge forwards an alias filter holding `<P>x` and an int overflow; the upstream
// answers with Jackson's source snippet of the filter, cut at 500 characters right before the
// prefix's `-`: the 20 secret characters must not reach the tenant.
#[test]
fn r2_1a_truncated_prefix_in_a_jackson_snippet_is_not_released() {
    // What the edge forwards: the filter with the prefixed `_index` value and the big number.
    let fwd = forwarded(BodyKind::Aliases, &alias_filter_body()).expect("forwarded");
    let filter_start = fwd.find(r#"{"bool""#).unwrap();
    let filter = &fwd[filter_start..fwd.len() - "}}]}".len()];
    assert_eq!(
        filter.find(P),
        Some(480),
        "the prefix sits at character 480"
    );
    assert!(filter.contains("99999999999999999999"));
    // The upstream's 400 (ES 7.x AliasValidator + Jackson JsonLocation, JSON-escaped).
    let snippet = filter[..500].replace('"', "\\\"");
    let body = format!(
        r#"{{"error":{{"root_cause":[{{"type":"illegal_argument_exception","reason":"failed to parse filter for alias [{P}a]"}}],"type":"illegal_argument_exception","reason":"failed to parse filter for alias [{P}a]","caused_by":{{"type":"json_parse_exception","reason":"Numeric value (99999999999999999999) out of range of int\n at [Source: (String)\"{snippet}\"[truncated {} chars]; line: 1, column: 560]"}}}},"status":400}}"#,
        filter.len() - 500
    );
    assert!(body.contains(&format!("\\\"{SECRET}\\\"[truncated")));
    for out in released(400, &body) {
        assert!(!out.contains(SECRET), "the prefix leaks: {out}");
        assert!(
            out.contains("failed to parse filter for alias [a]"),
            "{out}"
        );
    }
}

// r2 #1b: a malformed bulk document is forwarded unread; Elasticsearch 7.10 answers with the
// first 500 bytes of the pooled buffer the document was parsed from (CVE-2021-22145): other
// tenants' requests. Neither B's prefix nor B's data may reach A.
#[test]
fn r2_1b_pooled_buffer_snippet_is_not_released() {
    // The edge forwards the malformed document line byte-exact.
    let mut bulk = BulkRewriter::new(prefix(), 100);
    let mut out = Vec::new();
    bulk.feed(b"{\"index\":{}}\n{\"a\":tru}\n", &mut out)
        .expect("the document is not read");
    bulk.finish(&mut out).unwrap();
    assert!(String::from_utf8_lossy(&out).contains("{\"a\":tru}\n"));
    // The upstream's item failure quoting someone else's request from the same buffer chunk.
    let stale = format!(
        r#"POST /{OTHER}payroll/_search HTTP/1.1\r\nHost: b\r\n\r\n{{\"query\":{{\"match\":{{\"ssn\":\"078-05-1120\"}}}}}}"#
    );
    let body = format!(
        r#"{{"took":3,"errors":true,"items":[{{"index":{{"_index":"{P}books","_type":"_doc","_id":"x","status":400,"error":{{"type":"mapper_parsing_exception","reason":"failed to parse","caused_by":{{"type":"json_parse_exception","reason":"Unrecognized token 'tru': was expecting ('true', 'false' or 'null')\n at [Source: (byte[])\"{stale}\"[truncated 16776716 bytes]; line: 1, column: 10]"}}}}}}}}]}}"#
    );
    for out in released(200, &body) {
        assert!(!out.contains(&OTHER[..20]), "B's prefix leaks: {out}");
        assert!(!out.contains("078-05-1120"), "B's data leaks: {out}");
        assert!(out.contains("\"_index\":\"books\""), "{out}");
    }
}

// r2 #2: replicas raised by a settings update are never counted against the plan (only
// `PUT /<index>` reserves shards); until they are, the multitenant class must refuse them.
#[test]
fn r2_2_replicas_in_a_settings_update_are_not_forwarded_uncounted() {
    for body in [
        r#"{"index":{"number_of_replicas":2999}}"#,
        r#"{"number_of_replicas":"2999"}"#,
        r#"{"settings":{"index.number_of_replicas":2999}}"#,
        r#"{"index.auto_expand_replicas":"0-all"}"#,
        r#"{"index":{"auto_expand_replicas":"0-999"}}"#,
    ] {
        refused_400(forwarded(BodyKind::Settings, body), body);
    }
    // other settings still pass
    assert!(forwarded(BodyKind::Settings, r#"{"index":{"refresh_interval":"5s"}}"#).is_ok());
}

// r2 #3: the upstream's per-index safety limits are not the tenant's to raise.
#[test]
fn r2_3_safety_limit_settings_are_refused() {
    let keys = [
        "max_rescore_window",
        "max_result_window",
        "max_inner_result_window",
        "max_terms_count",
        "max_regex_length",
        "max_ngram_diff",
        "max_shingle_diff",
        "max_docvalue_fields_search",
        "max_slices_per_scroll",
        "highlight.max_analyzed_offset",
        "mapping.total_fields.limit",
        "mapping.depth.limit",
        "mapping.nested_objects.limit",
        "translog.flush_threshold_size",
        "search.slowlog.threshold.query.warn",
        "indexing.slowlog.source",
    ];
    for key in keys {
        let flat = format!(r#"{{"index.{key}":"2147483647"}}"#);
        refused_400(forwarded(BodyKind::Settings, &flat), &flat);
        let created = format!(r#"{{"settings":{{"index.{key}":2147483647}}}}"#);
        refused_400(forwarded(BodyKind::CreateIndex, &created), &created);
        let template = format!(r#"{{"index_patterns":["b*"],"settings":{{"{key}":1}}}}"#);
        refused_400(forwarded(BodyKind::Template, &template), &template);
    }
}

#[test]
fn r2_3_rescore_window_is_capped() {
    let at = |n: u64| {
        format!(
            r#"{{"query":{{"match_all":{{}}}},"rescore":{{"window_size":{n},"query":{{"rescore_query":{{"match_all":{{}}}}}}}}}}"#
        )
    };
    assert!(forwarded(BodyKind::Search, &at(10_000)).is_ok());
    refused_400(forwarded(BodyKind::Search, &at(10_001)), "window 10001");
    refused_400(forwarded(BodyKind::Search, &at(500_000_000)), "window 5e8");
}

// r2 #4: throttled or sliced by-query jobs hold scroll contexts the ledger never sees, for
// as long as they run (they are not cancelled when the edge gives up on them).
#[test]
fn r2_4_throttled_and_sliced_jobs_are_refused() {
    for target in [
        "/books/_update_by_query?requests_per_second=0.0001",
        "/books/_delete_by_query?slices=500",
        "/books/_delete_by_query?slices=auto",
        "/_reindex?requests_per_second=1",
        "/_reindex?slices=20",
    ] {
        refused_400(planned(Method::Post, target), target);
    }
    for target in [
        "/books/_update_by_query?requests_per_second=-1",
        "/books/_delete_by_query?slices=1",
        "/_reindex",
    ] {
        assert!(planned(Method::Post, target).is_ok(), "{target}");
    }
}

// r2 #5: identity headers of security plugins reached the shared upstream as the tenant
// sent them (the edge dropped only `Accept-Encoding`). Now the edge refuses them (400 naming
// the header, before anything is forwarded), and the forwarded head carries only the
// multitenant table's headers, `X-Opaque-Id` tagged with the prefix: even a header that
// reached the writer would not go.
#[test]
fn r2_5_identity_headers_are_not_forwarded() {
    let msg = b"GET /books/_search HTTP/1.1\r\n\
Host: acme.example.test\r\n\
Authorization: Basic dXNlcjpwYXNz\r\n\
x-proxy-user: admin\r\n\
x-proxy-roles: all_access\r\n\
es-security-runas-user: elastic\r\n\
opendistro_security_impersonate_as: admin\r\n\
X-Opaque-Id: report-1\r\n\
Accept-Encoding: gzip\r\n\r\n";
    let mut head = RequestHead::new();
    assert!(head.parse(msg, &HeadLimits::default()).unwrap());
    let names = head
        .headers
        .iter()
        .map(|h| (h.name.of(msg), h.value.of(msg)));
    let refused = format!("{:?}", check_request_headers(names).unwrap_err());
    assert!(refused.contains("[x-proxy-user]"), "{refused}");
    let fwd = ForwardRequest {
        target: b"/abcdefghijklmnopqrst-books/_search",
        framing: head.framing,
        forwarded_for: b"203.0.113.7",
        forwarded_proto: b"https",
        strip_authorization: true,
        strip_expect: true,
        headers: ForwardHeaders::Only {
            allow: &FORWARDED,
            tag: P.as_bytes(),
        },
    };
    let mut out = Vec::new();
    write_forward_request(&mut out, &head, msg, &fwd);
    let out = String::from_utf8(out).unwrap().to_ascii_lowercase();
    assert!(!out.contains("authorization"), "{out}");
    for h in [
        "x-proxy-user",
        "x-proxy-roles",
        "es-security-runas-user",
        "opendistro_security_impersonate_as",
        "accept-encoding",
    ] {
        assert!(!out.contains(h), "{h} forwarded: {out}");
    }
    assert!(
        out.contains("\r\nx-opaque-id: abcdefghijklmnopqrst-report-1\r\n"),
        "{out}"
    );
    assert!(out.contains("\r\nhost: acme.example.test\r\n"), "{out}");
}
