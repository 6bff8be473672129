//! End-to-end attack suite of issue 10 (§4a), through `searchgate serve` with two
//! multitenant clusters on one embedded engine, a marker document each:
//!
//! - the whole suite (`support/attacks/`: every family of the reference table), over
//!   the plain and the TLS listener, asserting on the raw bytes of every response that no
//!   tenant's prefix and no other tenant's marker appears, and that nothing is written
//!   outside the tenants;
//! - the three attacks the issue found against the old byte scanner, compared with a
//!   single-tenant cluster alone on its own engine: each is now refused, or answered
//!   exactly as the cluster alone answers it (so nothing about any prefix shows);
//! - the `_bulk` rewriter's own attack pass (issue 25 #4).

use crate::support::attacks;
use crate::support::e2e;

use attacks::World;
use e2e::answers::{all_bytes, contains, normalize};
use e2e::{
    direct, engine_indices, prefix_of, ClusterSpec, Config, Edge, Engine, Req, Response, Tenant,
};
use serde_json::{json, Value};

// issue 10 §4a: every family of the reference table, both listeners.
#[test]
fn the_attack_suite_over_both_listeners() {
    let edge = Edge::start(attacks::two_tenants(None, true));
    let mut w = World::seeded(&edge, edge.engine());
    for (tls, suffix) in [(false, ""), (true, "-tls")] {
        (w.tls, w.suffix) = (tls, suffix);
        attacks::core(&w);
        attacks::victim_intact(&w);
    }
    attacks::nothing_outside(&w);
    assert!(
        w.checked.get() > 200,
        "{} responses checked",
        w.checked.get()
    );
}

// issue 25 #4: the in-place multitenant `_bulk` rewriter attacked as a tenant would
// (support/attacks/bulk.rs): nothing reaches the other tenant or outside the tenants, and
// a body is read the same however its chunks cut it.
#[test]
fn the_bulk_rewriter_under_attack() {
    let edge = Edge::start(attacks::two_tenants(None, false));
    let w = World::seeded(&edge, edge.engine());
    attacks::bulk::bulk_rewriter(&w);
    attacks::victim_intact(&w);
    attacks::nothing_outside(&w);
    assert!(
        w.checked.get() > 200,
        "{} responses checked",
        w.checked.get()
    );
}

fn doc(me: &str, i: u32) -> Value {
    json!({"title": format!("{me} book {i}"), "body": format!("{me}secret{i} shared words"), "n": i})
}

/// An `_msearch` of `t` with `body`.
fn msearch(edge: &Edge, t: &Tenant, body: &str) -> Response {
    edge.send(&raw(
        t,
        "POST",
        "/_msearch",
        "application/x-ndjson",
        body.as_bytes(),
    ))
}

/// Sends `body` with `ct` as `t`.
fn raw(t: &Tenant, method: &str, target: &str, ct: &str, body: &[u8]) -> Req {
    t.req(method, target)
        .header("Content-Type", ct)
        .body(body.to_vec())
}

/// Nothing of the other tenant (its marker, its prefix) and no prefix at all in `r`.
fn confined(r: &Response, what: &str, own: &str, other: &str) {
    let bytes = all_bytes(r);
    let text = String::from_utf8_lossy(&bytes);
    for secret in ["bravosecret", other, own] {
        assert!(
            !contains(&bytes, secret),
            "{what}: [{secret}] shown:\n{text}"
        );
    }
}

// issue 10: the three attacks found against the byte scanner, end to end through
// `searchgate serve` (two tenants with a marker document each, one engine): each is now
// refused or confined to the tenant, and answers as a cluster alone would.
#[test]
fn issue_10_attacks_are_refused_or_confined() {
    let solo = Engine::start();
    let config = Config::new()
        .cluster(ClusterSpec::multitenant("alpha", "p"))
        .cluster(ClusterSpec::multitenant("bravo", "p"))
        .cluster(ClusterSpec::single("soloa", "p", solo.addr));
    let edge = Edge::start(config);
    let engine = edge.engine();
    let (alpha, bravo, soloa) = (
        edge.tenant("alpha"),
        edge.tenant("bravo"),
        edge.tenant("soloa"),
    );
    for (t, me) in [(&alpha, "alpha"), (&bravo, "bravo"), (&soloa, "alpha")] {
        for (index, i) in [("books", 1), (&*format!("{me}-only"), 2)] {
            let r = edge.send(&t.json(
                "PUT",
                &format!("/{index}/_doc/{i}?refresh=true"),
                &doc(me, i),
            ));
            assert!(r.status < 300 || r.status == 404, "{}", r.text());
            if r.status == 404 {
                assert_eq!(edge.send(&t.req("PUT", &format!("/{index}"))).status, 200);
                let r = edge.send(&t.json(
                    "PUT",
                    &format!("/{index}/_doc/{i}?refresh=true"),
                    &doc(me, i),
                ));
                assert!(r.status < 300, "{}", r.text());
            }
        }
    }
    let pa = prefix_of(engine, "alpha-only");
    let pb = prefix_of(engine, "bravo-only");

    // 1. `_msearch` with blank or whitespace-only lines before a header naming `*`.
    for blank in [" ", "\r", "\t", "  \t"] {
        let body =
            format!("{{}}\n{{\"size\":100}}\n{blank}\n{{\"index\":\"*\"}}\n{{\"size\":100}}\n");
        let r = msearch(&edge, &alpha, &body);
        confined(&r, &format!("msearch with {blank:?}"), &pa, &pb);
        assert!(r.status == 400 || r.status == 200, "{}", r.text());
        // a blank header line is an empty header: the same as `{}`
        let body = format!("{blank}\n{{\"size\":100}}\n{{\"index\":\"*\"}}\n{{\"size\":100}}\n");
        let r = msearch(&edge, &alpha, &body);
        confined(&r, "msearch blank header", &pa, &pb);
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(r.text().contains("alphasecret"), "{}", r.text());
    }
    for body in ["{}\r\n{\"size\":100}\r\n", "\n{}\n{\"size\":100}\n"] {
        let r = msearch(&edge, &alpha, body);
        assert_eq!(r.status, 200, "{body:?}: {}", r.text());
        confined(&r, "msearch", &pa, &pb);
    }

    // 2. Queries on `_index` compared with the tenant's values: answered as a cluster alone
    // answers them (so nothing about the prefix shows), or refused.
    let mut probes: Vec<Value> = vec![
        json!({"query": {"prefix": {"_index": "a"}}, "size": 100}),
        json!({"query": {"prefix": {"_index": "books"}}, "size": 100}),
        json!({"query": {"wildcard": {"_index": "*only"}}, "size": 100}),
        json!({"query": {"term": {"_index": "books"}}, "size": 100}),
        json!({"query": {"terms": {"_index": ["books", "alpha-only"]}}, "size": 100}),
        json!({"query": {"bool": {"must_not": {"prefix": {"_index": "b"}}}}, "size": 100}),
    ];
    for i in 1..=3 {
        probes.push(json!({"query": {"prefix": {"_index": &pa[..i]}}, "size": 100}));
        probes.push(json!({"query": {"prefix": {"_index": &pb[..i]}}, "size": 100}));
    }
    for q in &probes {
        let mt = edge.send(&alpha.json("POST", "/_search", q));
        let alone = edge.send(&soloa.json("POST", "/*/_search", q));
        confined(&mt, &q.to_string(), &pa, &pb);
        assert_eq!(normalize(&mt), normalize(&alone), "{q}");
    }
    for (target, body) in [
        (
            "/_search",
            json!({"query": {"query_string": {"query": "_index:a*"}}}),
        ),
        (
            "/_search",
            json!({"query": {"query_string": {"query": "\\_index:a*"}}}),
        ),
        ("/_search", json!({"query": {"fuzzy": {"_index": "books"}}})),
        (
            "/_search",
            json!({"query": {"range": {"_index": {"gte": "a"}}}}),
        ),
    ] {
        let r = edge.send(&alpha.json("POST", target, &body));
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        confined(&r, &body.to_string(), &pa, &pb);
    }
    for q in ["_index:a*", "_index%20:a*", "%5C_index:b*"] {
        let r = edge.send(&alpha.req("GET", &format!("/_search?q={q}")));
        assert_eq!(r.status, 400, "{q}: {}", r.text());
    }

    // 3. An escaped `aliases` key in an index creation names an alias in the other
    // tenant's namespace: read as `aliases` now, so the alias lands in the tenant's own.
    let body = format!("{{\"\\u0061liases\":{{\"{pb}bravo-only\":{{}}}}}}");
    let r = edge.send(&raw(
        &alpha,
        "PUT",
        "/planted",
        "application/json",
        body.as_bytes(),
    ));
    confined(&r, "escaped aliases", &pa, &pb);
    let dup = "{\"aliases\":{},\"\\u0061liases\":{\"x\":{}}}";
    let r = edge.send(&raw(
        &alpha,
        "PUT",
        "/planted2",
        "application/json",
        dup.as_bytes(),
    ));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["type"], "x_content_parse_exception");
    for i in engine_indices(engine) {
        assert!(
            i.name.starts_with(&pa) || i.name.starts_with(&pb),
            "{}",
            i.name
        );
    }
    let aliases = direct(engine, "GET", "/_alias", None);
    if aliases.status == 200 {
        for (index, v) in aliases.json().as_object().into_iter().flatten() {
            for alias in v["aliases"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
            {
                let owner = if index.starts_with(&pa) { &pa } else { &pb };
                assert!(
                    alias.starts_with(owner.as_str()),
                    "{index} got alias {alias}"
                );
            }
        }
    }
    // bravo's data is untouched and never shown to alpha
    let r = edge.send(&bravo.req("GET", "/bravo-only/_doc/2"));
    assert!(r.text().contains("bravosecret2"), "{}", r.text());
}

// attacks-10 #11 (issue 10 §2: no response shows any prefix): an upstream that quotes the
// request it received in its answer (here a mock echoing the body and target) must not
// show the prefix either: every form in which the edge writes it (names, exclusions, date
// math, `_index` values, the quoted literal of a confined regexp, NDJSON lines) keeps its
// 21 bytes contiguous, so the response stripper removes them.
#[test]
fn an_upstream_echoing_the_request_shows_no_prefix() {
    let mock = e2e::mock::Mock::start();
    mock.answer_all("echo"); // `X-Mock` is not a header the multitenant class forwards
    let edge = Edge::start(attacks::two_tenants(Some(mock.addr), false));
    let alpha = edge.tenant("alpha");
    let searches = [
        json!({"query": {"regexp": {"_index": "b.*"}}}),
        json!({"query": {"regexp": {"_index": {"value": "~(books)|a-z", "flags": "ALL"}}}}),
        json!({"aggs": {"i": {"terms": {"field": "_index", "include": "b.*", "exclude": ["x"]}}}}),
        json!({"query": {"bool": {"should": [{"prefix": {"_index": "b"}}, {"wildcard": {"_index": "b*k?"}},
            {"term": {"_index": "books"}}, {"terms": {"_index": ["a", "b"]}}]}}}),
        json!({"sort": [{"_index": "asc"}], "search_after": ["books"]}),
        json!({"indices_boost": [{"books": 2.0}]}),
    ];
    let mut reqs: Vec<Req> = searches
        .iter()
        .map(|b| alpha.json("POST", "/books/_search", b))
        .collect();
    for target in [
        "/%3Cbooks-%7Bnow%2Fd%7D%3E/_search",
        "/*,-books/_search",
        "/books,other/_mapping",
    ] {
        reqs.push(alpha.req("GET", target));
    }
    let lines = [
        ("/_msearch", "{\"index\":\"books\"}\n{}\n{}\n{}\n"),
        (
            "/_bulk",
            "{\"index\":{\"_index\":\"books\",\"_id\":\"1\"}}\n{\"n\":1}\n",
        ),
    ];
    for (target, body) in lines {
        reqs.push(raw(
            &alpha,
            "POST",
            target,
            "application/x-ndjson",
            body.as_bytes(),
        ));
    }
    for (target, body) in [
        ("/_mget", json!({"docs": [{"_index": "books", "_id": "1"}]})),
        (
            "/_aliases",
            json!({"actions": [{"add": {"index": "books", "alias": "b"}}]}),
        ),
        (
            "/_reindex",
            json!({"source": {"index": "books"}, "dest": {"index": "copy"}}),
        ),
    ] {
        reqs.push(alpha.json("POST", target, &body));
    }
    reqs.push(alpha.json(
        "PUT",
        "/_index_template/t",
        &json!({"index_patterns": ["b*"], "template": {"aliases": {"x": {}}}}),
    ));
    let mut prefix = String::new();
    for req in reqs {
        let r = edge.send(&req);
        assert_eq!(r.status, 200, "{} {}: {}", req.method, req.target, r.text());
        let got = mock.requests().pop().expect("forwarded");
        if prefix.is_empty() {
            // the first request searches `/books`: `/<prefix>books/_search` upstream
            prefix = got.target[1..22].to_string();
            assert!(prefix.ends_with('-'), "{}", got.target);
        }
        // the prefix went upstream (so the echo carries it) ...
        let sent = [got.target.as_bytes(), &got.body].concat();
        assert!(contains(&sent, &prefix), "{}: {:?}", req.target, got);
        assert!(r.json()["echo"].is_string(), "{}", r.text());
        // ... and came back stripped, in every form
        let bytes = all_bytes(&r);
        assert!(
            !contains(&bytes, &prefix[..20]),
            "{} {}: the prefix shown:\n{}\nforwarded: {}",
            req.method,
            req.target,
            String::from_utf8_lossy(&bytes),
            String::from_utf8_lossy(&got.body)
        );
    }
}

// attacks-10 r2 #5 (spec 1.6): what the shared upstream actually receives of a tenant's
// headers. Identity and impersonation headers are refused (400 naming the header) and
// nothing reaches the upstream; of what the official clients send, only the multitenant
// table's headers arrive, `X-Opaque-Id` with the tenant's prefix before it (and the
// upstream's echo of it comes back as the client sent it). A single-tenant cluster owns
// its upstream: every header arrives as sent.
#[test]
fn identity_headers_never_reach_the_shared_upstream() {
    let mock = e2e::mock::Mock::start();
    let solo_mock = e2e::mock::Mock::start();
    let mut config = attacks::two_tenants(Some(mock.addr), false);
    config = config.cluster(ClusterSpec::single("solo", "p", solo_mock.addr));
    config.engine = false;
    let edge = Edge::start(config);
    let (alpha, solo) = (edge.tenant("alpha"), edge.tenant("solo"));

    let identity = [
        ("es-security-runas-user", "elastic"),
        ("x-proxy-user", "admin"),
        ("X-Proxy-Roles", "all_access"),
        ("x-proxy-ext-department", "ops"),
        ("opendistro_security_impersonate_as", "admin"),
        ("securitytenant", "global_tenant"),
        ("es-secondary-authorization", "ApiKey eDp5"),
        ("x-forwarded-user", "admin"),
        ("traceparent", "not a trace context"),
    ];
    for (name, value) in identity {
        let r = edge.send(&alpha.req("GET", "/books/_search").header(name, value));
        assert_eq!(r.status, 400, "{name}: {}", r.text());
        let v = r.json();
        assert_eq!(v["error"]["type"], "illegal_argument_exception", "{v}");
        let reason = v["error"]["reason"].as_str().unwrap().to_ascii_lowercase();
        assert!(
            reason.contains(&name.to_ascii_lowercase()),
            "{name}: {reason}"
        );
    }
    assert!(mock.requests().is_empty(), "{:?}", mock.requests());

    // What elasticsearch-js sends (and a few headers proxies and browsers add).
    let trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let client = |req: Req| {
        req.header("User-Agent", "elasticsearch-js/9.5.1 (linux; Node.js v20)")
            .header("x-elastic-client-meta", "es=9.5.1,js=20,t=9.0.0,hc=20")
            .header("Accept", "application/json")
            .header("Accept-Encoding", "gzip,deflate")
            .header("X-Opaque-Id", "nightly-report")
            .header("traceparent", trace)
            .header("Cookie", "session=abc")
            .header("Origin", "https://app.example")
            .header("X-Request-Id", "r-1")
            .header("X-Elastic-Product-Origin", "kibana")
    };
    let r = edge.send(&client(alpha.req("GET", "/books/_search")));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("x-opaque-id"),
        Some("nightly-report"),
        "{:?}",
        r.headers
    );
    let got = mock.requests().pop().expect("forwarded");
    let prefix = &got.target[1..22];
    assert!(prefix.ends_with('-'), "{}", got.target);
    let names: Vec<String> = got
        .headers
        .iter()
        .map(|(k, _)| k.to_ascii_lowercase())
        .collect();
    assert_eq!(
        names,
        [
            "host",
            "user-agent",
            "x-elastic-client-meta",
            "accept",
            "x-opaque-id",
            "traceparent",
            "origin",
            "x-forwarded-for",
            "x-forwarded-proto",
            "connection",
        ],
        "{:?}",
        got.headers
    );
    assert_eq!(
        got.header("x-opaque-id"),
        Some(&*format!("{prefix}nightly-report"))
    );
    assert_eq!(got.header("traceparent"), Some(trace));

    // The single-tenant cluster forwards everything, identity headers included.
    let r = edge.send(&client(solo.req("GET", "/books/_search")).header("x-proxy-user", "me"));
    assert_eq!(r.status, 200, "{}", r.text());
    let got = solo_mock.requests().pop().expect("forwarded");
    for (name, value) in [
        ("x-proxy-user", "me"),
        ("cookie", "session=abc"),
        ("x-opaque-id", "nightly-report"),
        ("accept-encoding", "gzip,deflate"),
        ("x-request-id", "r-1"),
    ] {
        assert_eq!(got.header(name), Some(value), "{name}: {:?}", got.headers);
    }
}
