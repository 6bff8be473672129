//! The request-header table of the multitenant class (attacks-10 r2 #5), and what the
//! protocol writer forwards with it.

use super::*;
use crate::proto::{
    write_forward_request, ForwardHeaders, ForwardRequest, HeadLimits, RequestHead,
};

#[test]
fn the_table_is_lowercase_and_names_each_header_once() {
    for (i, (name, _, why)) in REQUEST_HEADERS.iter().enumerate() {
        assert_eq!(*name, name.to_ascii_lowercase(), "{name}");
        assert!(!why.is_empty(), "{name}: say why");
        for (other, _, _) in &REQUEST_HEADERS[i + 1..] {
            assert_ne!(name, other);
        }
    }
    let forwarded: Vec<&[u8]> = FORWARDED.iter().map(|(n, _)| *n).collect();
    let from_table: Vec<&[u8]> = REQUEST_HEADERS
        .iter()
        .filter(|(_, r, _)| matches!(r, Rule::Forward | Rule::Tag))
        .map(|(n, _, _)| n.as_bytes())
        .collect();
    assert_eq!(forwarded, from_table);
    assert!(FORWARDED.contains(&(&b"x-opaque-id"[..], Pass::Tagged)));
}

#[test]
fn rules_by_name_any_case() {
    let rows: &[(&str, Rule)] = &[
        ("Content-Type", Rule::Forward),
        ("USER-AGENT", Rule::Forward),
        ("X-Opaque-Id", Rule::Tag),
        ("Authorization", Rule::Edge),
        ("x-forwarded-for", Rule::Edge),
        ("es-security-runas-user", Rule::Refuse),
        ("ES-Security-RunAs-User", Rule::Refuse),
        ("x-proxy-user", Rule::Refuse),
        ("x-proxy-roles", Rule::Refuse),
        ("X-Proxy-Ext-Department", Rule::Refuse),
        ("opendistro_security_impersonate_as", Rule::Refuse),
        ("securitytenant", Rule::Refuse),
        ("x-forwarded-user", Rule::Refuse),
        ("accept-encoding", Rule::Drop),
        ("x-request-id", Rule::Drop),
        ("x-proxy", Rule::Drop),
        ("x-prox", Rule::Drop),
    ];
    for (name, want) in rows {
        assert_eq!(rule(name.as_bytes()), *want, "{name}");
    }
}

#[test]
fn identity_headers_are_refused_naming_the_header() {
    for name in [
        "es-security-runas-user",
        "x-proxy-user",
        "x-proxy-roles",
        "opendistro_security_impersonate_as",
        "securitytenant",
        "es-secondary-authorization",
    ] {
        let headers = [
            (&b"Content-Type"[..], &b"application/json"[..]),
            (name.as_bytes(), &b"admin"[..]),
        ];
        let e = check_request_headers(headers).unwrap_err();
        match e {
            EdgeError::Refused {
                status: 400,
                kind: "illegal_argument_exception",
                reason,
            } => assert!(reason.contains(&format!("[{name}]")), "{reason}"),
            other => panic!("{name}: {other:?}"),
        }
    }
    let clients = [
        (
            &b"User-Agent"[..],
            &b"elasticsearch-py/8.19.3 (Python/3.11.2; elastic-transport/8.17.1)"[..],
        ),
        (
            b"x-elastic-client-meta",
            b"es=8.19.3,py=3.11.2,t=8.17.1,ur=2.5.0",
        ),
        (b"X-Opaque-Id", b"job-1"),
        (b"Cookie", b"a=b"),
        (b"X-Elastic-Product-Origin", b"kibana"),
        (
            b"traceparent",
            b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ),
    ];
    assert!(check_request_headers(clients).is_ok());
}

#[test]
fn traceparent_is_a_w3c_trace_context_or_refused() {
    let good = [
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
        " 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 ",
        "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-later-fields",
    ];
    for v in good {
        assert!(is_traceparent(v.as_bytes()), "{v}");
        assert!(check_request_headers([(&b"traceparent"[..], v.as_bytes())]).is_ok());
    }
    let bad = [
        "",
        "hello",
        "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
        "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",
        "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",
        "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g",
    ];
    for v in bad {
        assert!(!is_traceparent(v.as_bytes()), "{v}");
        let e = check_request_headers([(&b"TraceParent"[..], v.as_bytes())]).unwrap_err();
        assert!(format!("{e:?}").contains("traceparent"), "{v}: {e:?}");
    }
}

/// What the writer forwards of `raw` with the table, for the tenant tagged `tag`.
fn forwarded(raw: &[u8], tag: &[u8]) -> String {
    let mut head = RequestHead::new();
    assert!(head.parse(raw, &HeadLimits::default()).unwrap());
    let fwd = ForwardRequest {
        target: b"/t-books/_search",
        framing: head.framing,
        forwarded_for: b"203.0.113.7",
        forwarded_proto: b"https",
        strip_authorization: true,
        strip_expect: true,
        headers: ForwardHeaders::Only {
            allow: &FORWARDED,
            tag,
        },
    };
    let mut out = Vec::new();
    write_forward_request(&mut out, &head, raw, &fwd);
    String::from_utf8(out).unwrap()
}

// What elasticsearch-js 9 sends for a search (its default headers, compression suggested):
// what the upstream needs goes, in order; the rest stays at the edge.
#[test]
fn a_client_search_keeps_what_the_upstream_reads() {
    let raw = b"POST /books/_search HTTP/1.1\r\n\
host: mt.example.test\r\n\
connection: keep-alive\r\n\
user-agent: elasticsearch-js/9.5.1 (linux 6.1; Node.js v20.19.2; Transport 9.0.0)\r\n\
x-elastic-client-meta: es=9.5.1,js=20.19.2,t=9.0.0,hc=20.19.2\r\n\
content-type: application/vnd.elasticsearch+json; compatible-with=9\r\n\
accept: application/vnd.elasticsearch+json; compatible-with=9,text/plain\r\n\
accept-encoding: gzip,deflate\r\n\
x-opaque-id: my-job\r\n\
authorization: Basic bXR1c2VyOnNlY3JldDE=\r\n\
origin: https://app.example\r\n\
content-length: 2\r\n\r\n";
    let want = "POST /t-books/_search HTTP/1.1\r\n\
host: mt.example.test\r\n\
user-agent: elasticsearch-js/9.5.1 (linux 6.1; Node.js v20.19.2; Transport 9.0.0)\r\n\
x-elastic-client-meta: es=9.5.1,js=20.19.2,t=9.0.0,hc=20.19.2\r\n\
content-type: application/vnd.elasticsearch+json; compatible-with=9\r\n\
accept: application/vnd.elasticsearch+json; compatible-with=9,text/plain\r\n\
x-opaque-id: t-my-job\r\n\
origin: https://app.example\r\n\
Content-Length: 2\r\n\
X-Forwarded-For: 203.0.113.7\r\n\
X-Forwarded-Proto: https\r\n\
Connection: keep-alive\r\n\r\n";
    assert_eq!(forwarded(raw, b"t-"), want);
}
