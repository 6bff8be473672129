//! End-to-end: routing (spec 2.1, 3, 7: 404 Cluster Not Found; username routing on
//! `localhost`; SNI and Host must agree, 421) and authentication (spec 5: Basic credentials
//! on every request, 401 with `WWW-Authenticate`), plus what the edge changes in the
//! forwarded head (issue 2: credentials removed, `X-Forwarded-*` set, hop-by-hop removed),
//! over plain HTTP and TLS, against a mock upstream that records what reaches it.

use crate::support::edge;

use edge::{start, start_with, ClusterSpec, Conn, Req, Response, HOST, PASS, USER};

/// Sends `req` on `conn` and reads the answer.
fn roundtrip(conn: &mut Conn, req: &Req) -> Response {
    conn.send(&req.bytes());
    conn.response()
}

// spec 7: an address that matches no cluster answers 404 Cluster Not Found, with or
// without credentials, over HTTP and HTTPS; nothing reaches any upstream.
#[test]
fn unknown_host_is_cluster_not_found() {
    let (mock, server) = start();
    for host in [
        "nope-1234.us-east-1.localhost",
        "acme-7f3k.eu-west-1.localhost",
        "acme-7f3k.us-east-1.example.org",
        "x.acme-7f3k.us-east-1.localhost",
    ] {
        let with = Req::new("GET", "/").host(host).auth(USER, PASS);
        let r = server.send(&with);
        assert_eq!(
            r.assert_es_error(404),
            "cluster_not_found_exception",
            "{host}"
        );
        let r = server.send(&with.clone().no_auth());
        r.assert_es_error(404);
    }
    let mut tls = server.tls("nope-1234.us-east-1.localhost");
    let r = roundtrip(
        &mut tls,
        &Req::new("GET", "/")
            .host("nope-1234.us-east-1.localhost")
            .auth(USER, PASS),
    );
    r.assert_es_error(404);
    assert_eq!(mock.connections(), 0, "nothing may reach the upstream");
}

// spec 3: a cluster not provisioned yet, or destroyed, answers 404 Cluster Not Found, also
// with its own correct credentials and when routed by username.
#[test]
fn provisioning_and_destroyed_clusters_are_not_found() {
    let (mock, server) = start_with(|s| {
        let up = s.clusters[0].upstream;
        s.cluster(ClusterSpec::new("fresh", up).mode("provisioning"))
            .cluster(ClusterSpec::new("gone", up).mode("destroyed"))
    });
    for c in &server.setup.clusters[1..] {
        let by_host = Req::new("GET", "/")
            .host(&c.host())
            .auth(&c.username, &c.password);
        server.send(&by_host).assert_es_error(404);
        let by_user = Req::new("GET", "/")
            .host("localhost")
            .auth(&c.username, &c.password);
        server.send(&by_user).assert_es_error(404);
    }
    assert_eq!(mock.connections(), 0);
    // The normal cluster next to them works.
    assert_eq!(server.send(&server.req("GET", "/")).status, 200);
}

// spec 3: a single-tenant cluster whose upstream has not answered yet is not provisioned
// yet: 404 Cluster Not Found; once its upstream answers, it becomes reachable (normal).
#[test]
fn cluster_becomes_reachable_when_its_upstream_answers() {
    let held = edge::mock::HeldPort::new();
    let port = held.addr();
    let (_mock, server) = start_with(|s| s.cluster(ClusterSpec::new("later", port)));
    let later = server.setup.clusters[1].clone();
    let req = Req::new("GET", "/")
        .host(&later.host())
        .auth(&later.username, &later.password);
    server.send(&req).assert_es_error(404);
    let upstream = edge::Mock::start_in(held);
    let up = server
        .out
        .wait_for("cluster later is up", std::time::Duration::from_secs(10));
    assert!(up.is_some(), "{}", server.out.text());
    let r = server.send(&req);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(upstream.requests().len(), 1);
}

// issue 2: with route_by_username, Host `localhost` or an IP literal (any port) routes by
// the username; an unknown username there is a credentials problem (401), not 404.
#[test]
fn localhost_and_ip_literals_route_by_username() {
    let (mock, server) = start();
    let port = server.http.port();
    for host in [
        "localhost".to_string(),
        format!("localhost:{port}"),
        "127.0.0.1".into(),
        format!("127.0.0.1:{port}"),
        "[::1]".into(),
    ] {
        let r = server.send(&Req::new("GET", "/x").host(&host).auth(USER, PASS));
        assert_eq!(r.status, 200, "{host}: {}", r.text());
        assert_eq!(r.header("x-upstream"), Some("mock"));
        let r = server.send(&Req::new("GET", "/x").host(&host).auth("nobody1", PASS));
        r.assert_es_error(401);
        assert!(r.header("www-authenticate").is_some());
    }
    // Over TLS: SNI `localhost`, and an IP literal (rustls sends no SNI for an IP).
    for sni in ["localhost", "127.0.0.1"] {
        let mut c = server.tls(sni);
        let r = roundtrip(&mut c, &Req::new("GET", "/x").host(sni).auth(USER, PASS));
        assert_eq!(r.status, 200, "{sni}: {}", r.text());
    }
    assert_eq!(mock.requests().len(), 7);
}

// issue 2: over TLS the SNI and the Host header must name the same host: 421 otherwise.
// The port in Host is ignored, and case does not matter.
#[test]
fn sni_and_host_must_agree() {
    let (mock, server) = start_with(|s| {
        let up = s.clusters[0].upstream;
        s.cluster(ClusterSpec::new("other", up))
    });
    let other = server.setup.clusters[1].clone();
    let mut c = server.tls(HOST);
    let port = server.https.port();
    let ok = roundtrip(
        &mut c,
        &Req::new("GET", "/")
            .host(&format!("ACME-7f3k.us-east-1.localhost:{port}"))
            .auth(USER, PASS),
    );
    assert_eq!(ok.status, 200, "{}", ok.text());
    // Same connection, Host of another cluster (with that cluster's credentials): 421.
    let r = roundtrip(
        &mut c,
        &Req::new("GET", "/")
            .host(&other.host())
            .auth(&other.username, &other.password),
    );
    assert_eq!(r.assert_es_error(421), "misdirected_request_exception");
    // SNI `localhost` with the cluster's own name in Host: also a mismatch.
    let mut c = server.tls("localhost");
    let r = roundtrip(&mut c, &server.req("GET", "/"));
    r.assert_es_error(421);
    assert_eq!(
        mock.requests().len(),
        1,
        "only the agreeing request reached the upstream"
    );
}

fn assert_401(r: &Response) {
    assert_eq!(r.assert_es_error(401), "security_exception");
    let www = r
        .header("www-authenticate")
        .expect("WWW-Authenticate on 401");
    assert!(www.to_ascii_lowercase().starts_with("basic"), "{www}");
}

// spec 5.1, 5.3, 7: missing, wrong, malformed or another cluster's credentials: 401 with
// WWW-Authenticate; nothing reaches the upstream.
#[test]
fn missing_or_wrong_credentials_get_401() {
    let (mock, server) = start_with(|s| {
        let up = s.clusters[0].upstream;
        s.cluster(ClusterSpec::new("other", up))
    });
    let base = Req::new("GET", "/_search").host(HOST);
    let cases = [
        base.clone(),
        base.clone().auth(USER, "wrongpass1"),
        base.clone().auth("wronguser", PASS),
        base.clone().auth(USER, ""),
        base.clone().auth(USER, &format!("{PASS}x")),
        base.clone().auth("otheruser", "otherpass"),
        base.clone().header("Authorization", "Bearer abc"),
        base.clone().header("Authorization", "Basic !!!notbase64"),
        base.clone()
            .header("Authorization", &format!("Basic {USER}:{PASS}")),
    ];
    for (i, req) in cases.iter().enumerate() {
        let r = server.send(req);
        assert_eq!(r.status, 401, "case {i}: {}", r.text());
        assert_401(&r);
    }
    assert_eq!(mock.connections(), 0);
}

// spec 5.1, 5.4: credentials are checked on every request of a keep-alive connection, not
// only the first: good, bad, missing, good again on one connection (plain and TLS).
#[test]
fn credentials_checked_on_every_request_of_a_connection() {
    let (mock, server) = start();
    for tls in [false, true] {
        let mut c = if tls { server.tls(HOST) } else { server.conn() };
        let good = server.req("GET", "/a");
        let r = roundtrip(&mut c, &good);
        assert_eq!(r.status, 200, "tls={tls}");
        let r = roundtrip(&mut c, &good.clone().auth(USER, "badpass1"));
        assert_401(&r);
        assert!(!r.closes(), "a 401 without a body keeps the connection");
        let r = roundtrip(&mut c, &good.clone().no_auth());
        assert_401(&r);
        let r = roundtrip(&mut c, &good);
        assert_eq!(r.status, 200, "tls={tls}");
    }
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4, "only the good requests reached the upstream");
}

// issue 2: the customer's Authorization never reaches the upstream; X-Forwarded-For is the
// client address and X-Forwarded-Proto the scheme, replacing whatever the client sent.
#[test]
fn credentials_removed_and_forwarded_headers_set() {
    let (mock, server) = start();
    let spoof = server
        .req("GET", "/idx/_search")
        .header("X-Forwarded-For", "6.6.6.6")
        .header("X-Forwarded-Proto", "gopher");
    assert_eq!(server.send(&spoof).status, 200);
    let mut c = server.tls(HOST);
    assert_eq!(roundtrip(&mut c, &spoof).status, 200);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    for (r, proto) in reqs.iter().zip(["http", "https"]) {
        assert_eq!(r.count("authorization"), 0, "{:?}", r.headers);
        assert_eq!(r.count("x-forwarded-for"), 1);
        assert_eq!(r.header("x-forwarded-for"), Some("127.0.0.1"));
        assert_eq!(r.count("x-forwarded-proto"), 1);
        assert_eq!(r.header("x-forwarded-proto"), Some(proto));
        assert_eq!(r.target, "/idx/_search");
        assert_eq!(r.header("host"), Some(HOST));
        let joined = format!("{:?}", r.headers);
        assert!(
            !joined.contains(PASS),
            "the password reached the upstream: {joined}"
        );
    }
}

// RFC 9110 7.6.1, issue 2: hop-by-hop headers (Connection and what it names, Keep-Alive,
// Proxy-*, TE, Trailer, Upgrade) are not forwarded; end-to-end headers keep their case
// and order.
#[test]
fn hop_by_hop_headers_removed() {
    let (mock, server) = start();
    let req = server
        .req("POST", "/idx/_doc/1")
        .header("X-First", "1")
        .header("Connection", "keep-alive, X-Private-Hop")
        .header("X-Private-Hop", "secret")
        .header("Keep-Alive", "timeout=5")
        .header("Proxy-Authorization", "Basic Zm9vOmJhcg==")
        .header("Proxy-Connection", "keep-alive")
        .header("TE", "trailers")
        .header("Trailer", "X-T")
        .header("Upgrade", "websocket")
        .header("X-Second", "2")
        .header("Content-Type", "application/json")
        .body(&b"{\"a\":1}"[..]);
    let r = server.send(&req);
    assert_eq!(r.status, 200, "{}", r.text());
    let got = &mock.requests()[0];
    for h in [
        "x-private-hop",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
    ] {
        assert_eq!(got.count(h), 0, "{h} was forwarded: {:?}", got.headers);
    }
    let names: Vec<&str> = got.headers.iter().map(|(k, _)| k.as_str()).collect();
    let first = names
        .iter()
        .position(|n| *n == "X-First")
        .expect("X-First kept");
    let second = names
        .iter()
        .position(|n| *n == "X-Second")
        .expect("X-Second kept");
    assert!(first < second, "order kept: {names:?}");
    assert_eq!(got.body, b"{\"a\":1}");
    assert_eq!(got.header("content-length"), Some("7"));
    // The edge manages its own upstream connection: only its keep-alive.
    assert!(got
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("connection"))
        .all(|(_, v)| v.eq_ignore_ascii_case("keep-alive")));
}

// issue 2: TLS 1.2 and 1.3 are both served (rustls, ring).
#[test]
fn tls12_and_tls13_are_served() {
    let (_mock, server) = start();
    let ca = server.ca();
    for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
        let mut roots = rustls::RootCertStore::empty();
        use rustls::pki_types::pem::PemObject;
        for cert in rustls::pki_types::CertificateDer::pem_file_iter(&ca).unwrap() {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[version])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut c = Conn::tls_with(server.https, std::sync::Arc::new(config), HOST);
        let r = roundtrip(&mut c, &server.req("GET", "/"));
        assert_eq!(r.status, 200, "{version:?}");
    }
}
