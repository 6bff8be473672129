//! The engine's HTTP layer against the real binary: heads, framing, keep-alive, pipelining,
//! 100-continue, limits, malformed input, many connections.

use crate::support::engine_support;

use std::io::Read;

use engine_support::{Client, Engine};
use searchgate::proto::Method;

#[test]
fn root_get_and_head() {
    let e = Engine::start();
    let mut c = e.client();
    let r = c.get("/");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("X-Elastic-Product"), Some("Elasticsearch"));
    let v = r.json();
    assert_eq!(v["version"]["number"], "7.10.2");
    assert_eq!(v["tagline"], "You Know, for Search");
    let h = c.req("HEAD", "/", None);
    assert_eq!(h.status, 200);
    assert!(h.body.is_empty());
    assert_eq!(
        h.header("Content-Length")
            .unwrap()
            .parse::<usize>()
            .unwrap(),
        r.body.len()
    );
    // the connection still works after a HEAD
    assert_eq!(c.get("/").status, 200);
}

#[test]
fn every_response_names_the_product() {
    let e = Engine::start();
    let mut c = e.client();
    for (m, p) in [
        ("GET", "/missing/_search"),
        ("GET", "/_cat/indices"),
        ("PUT", "/a"),
        ("GET", "/_nope"),
    ] {
        let r = c.req(m, p, None);
        assert_eq!(
            r.header("X-Elastic-Product"),
            Some("Elasticsearch"),
            "{m} {p} -> {}",
            r.status
        );
    }
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let e = Engine::start();
    let mut c = e.client();
    c.send_raw(b"PUT /p HTTP/1.1\r\nHost: x\r\n\r\nGET /p HTTP/1.1\r\nHost: x\r\n\r\nDELETE /p HTTP/1.1\r\nHost: x\r\n\r\nHEAD /p HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.read_response(Method::Put).status, 200);
    assert!(c.read_response(Method::Get).json()["p"]["settings"].is_object());
    assert_eq!(c.read_response(Method::Delete).json()["acknowledged"], true);
    assert_eq!(c.read_response(Method::Head).status, 404);
}

#[test]
fn chunked_request_body() {
    let e = Engine::start();
    let mut c = e.client();
    let body = b"{\"index\":{\"_index\":\"logstash-1\",\"_id\":\"1\"}}\n{\"a\":1}\n";
    let (a, b) = body.split_at(20);
    let mut req = b"POST /_bulk HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    req.extend_from_slice(format!("{:x}\r\n", a.len()).as_bytes());
    req.extend_from_slice(a);
    req.extend_from_slice(format!("\r\n{:x}\r\n", b.len()).as_bytes());
    req.extend_from_slice(b);
    req.extend_from_slice(b"\r\n0\r\n\r\n");
    c.send_raw(&req);
    let r = c.read_response(Method::Post);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["items"][0]["index"]["status"], 201);
    assert_eq!(c.get("/logstash-1/_doc/1").json()["found"], true);
}

#[test]
fn expect_100_continue() {
    let e = Engine::start();
    let mut c = e.client();
    c.send_raw(b"PUT /x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
    let mut first = [0u8; 25];
    c.stream.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 100 Continue\r\n\r\n");
    c.send_raw(b"{}");
    assert_eq!(c.read_response(Method::Put).status, 200);
}

#[test]
fn malformed_head_is_400_and_closes() {
    let e = Engine::start();
    let mut c = e.client();
    c.send_raw(
        b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    let r = c.read_response(Method::Get);
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["status"], 400);
    assert!(c.is_closed());
    let mut c = e.client();
    c.send_raw(b"GARBAGE\r\n\r\n");
    assert_eq!(c.read_response(Method::Get).status, 400);
}

#[test]
fn oversized_head_is_413() {
    let e = Engine::start();
    let mut c = e.client();
    let big = "a".repeat(20 << 10);
    c.send_raw(format!("GET / HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n").as_bytes());
    let r = c.read_response(Method::Get);
    assert_eq!(r.status, 413);
    assert_eq!(
        r.json()["error"]["type"],
        "request_entity_too_large_exception"
    );
}

#[test]
fn body_over_the_limit_is_413() {
    let tmp = tempfile::tempdir().unwrap();
    let e = Engine::start_in(tmp.path(), &["--max-body-mb", "1"]);
    let mut c = e.client();
    c.send_raw(b"PUT /x/_doc/1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2000000\r\n\r\n");
    let r = c.read_response(Method::Put);
    assert_eq!(r.status, 413);
    assert!(c.is_closed());
    // chunked: refused when the decoded size passes the limit
    let mut c = e.client();
    c.send_raw(b"POST /_bulk HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n");
    let chunk = vec![b' '; 600_000];
    for _ in 0..2 {
        c.send_raw(format!("{:x}\r\n", chunk.len()).as_bytes());
        c.send_raw(&chunk);
        c.send_raw(b"\r\n");
    }
    c.send_raw(b"0\r\n\r\n");
    assert_eq!(c.read_response(Method::Post).status, 413);
}

#[test]
fn http_1_0_gets_a_closed_connection() {
    let e = Engine::start();
    let mut c = e.client();
    c.send_raw(b"GET / HTTP/1.0\r\n\r\n");
    let r = c.read_response(Method::Get);
    assert_eq!(r.status, 200);
    assert!(c.is_closed());
}

// spec 7: never an empty body; unknown endpoints 400, wrong methods 405
#[test]
fn unknown_endpoints_and_methods() {
    let e = Engine::start();
    let mut c = e.client();
    let r = c.get("/_nodes/hot_threads");
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "illegal_argument_exception");
    let r = c.get("/_bulk");
    assert_eq!(r.status, 405);
    assert!(r.header("Allow").unwrap().contains("POST"));
    assert_eq!(r.json()["status"], 405);
    let r = c.req("PATCH", "/idx", None);
    assert_eq!(r.status, 405);
}

#[test]
fn unsupported_content_type_is_406() {
    let e = Engine::start();
    let mut c = e.client();
    let r = c.req_ct("PUT", "/x", Some(b"{}"), "text/plain");
    assert_eq!(r.status, 406);
    let r = c.req_ct(
        "PUT",
        "/x",
        Some(b"{}"),
        "application/vnd.elasticsearch+json; compatible-with=8",
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("Content-Type"),
        Some("application/vnd.elasticsearch+json;compatible-with=8")
    );
}

// Issue 14: @elastic/elasticsearch 9 sends a compatible-with list in Accept; it gets its
// media type back, and `_cat` answers JSON to it.
#[test]
fn node_client_accept_list_over_the_wire() {
    let e = Engine::start();
    let mut c = e.client();
    let accept = "application/vnd.elasticsearch+json; compatible-with=9,text/plain";
    let ct = "application/vnd.elasticsearch+json; compatible-with=9";
    let body = b"{\"settings\":{\"number_of_replicas\":0}}";
    let head = format!(
        "PUT /nodeidx HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut raw = head.into_bytes();
    raw.extend_from_slice(body);
    c.send_raw(&raw);
    let r = c.read_response(Method::Put);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("Content-Type"),
        Some("application/vnd.elasticsearch+json;compatible-with=9")
    );
    assert_eq!(r.header("X-Elastic-Product"), Some("Elasticsearch"));
    c.send_raw(
        format!("GET /_cat/indices HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\n\r\n").as_bytes(),
    );
    let r = c.read_response(Method::Get);
    assert_eq!(r.json()[0]["index"], "nodeidx", "{}", r.text());
    c.send_raw(b"GET /_search HTTP/1.1\r\nHost: x\r\nAccept: application/vnd.elasticsearch+json; compatible-with=6\r\n\r\n");
    let r = c.read_response(Method::Get);
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "media_type_header_exception");
}

#[test]
fn hundreds_of_concurrent_connections() {
    let e = Engine::start();
    let mut clients: Vec<Client> = (0..300).map(|_| e.client()).collect();
    for c in clients.iter_mut() {
        c.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    for c in clients.iter_mut() {
        assert_eq!(c.read_response(Method::Get).status, 200);
    }
    // all still alive for a second request
    for c in clients.iter_mut() {
        assert_eq!(c.get("/_cluster/health").status, 200);
    }
}

#[test]
fn dropped_connection_mid_body_does_not_hurt() {
    let e = Engine::start();
    {
        let mut c = e.client();
        c.send_raw(b"POST /_bulk HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nContent-Length: 100000\r\n\r\n{\"index\":{\"_index\":\"logstash-x\"}}\n");
        // The client's side ends mid-body; the engine is done with the connection once it
        // closes its own side (waited for, not slept on).
        c.stream.shutdown(std::net::Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        let _ = c.stream.read_to_end(&mut rest);
    }
    let mut c = e.client();
    assert_eq!(c.get("/").status, 200);
}

// Beats and Logstash 8 gzip their bulk bodies by default
#[test]
fn gzip_and_deflate_request_bodies() {
    use flate2::write::{GzEncoder, ZlibEncoder};
    use flate2::Compression;
    use std::io::Write;
    let e = Engine::start();
    let mut c = e.client();
    let body = engine_support::bulk_body("logstash-gz", 0, 100);
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(body.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let mut req = format!(
        "POST /_bulk?refresh=true HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
        gz.len()
    )
    .into_bytes();
    req.extend_from_slice(&gz);
    c.send_raw(&req);
    let r = c.read_response(Method::Post);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["items"].as_array().unwrap().len(), 100);
    let mut z = ZlibEncoder::new(Vec::new(), Compression::fast());
    z.write_all(br#"{"a":1}"#).unwrap();
    let z = z.finish().unwrap();
    let mut req = format!("PUT /logstash-gz/_doc/z HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Encoding: deflate\r\nContent-Length: {}\r\n\r\n", z.len()).into_bytes();
    req.extend_from_slice(&z);
    c.send_raw(&req);
    assert_eq!(c.read_response(Method::Put).status, 201);
    assert_eq!(c.get("/logstash-gz/_count").json()["count"], 100);
    // a coding the engine cannot read
    let mut c = e.client();
    c.send_raw(b"PUT /x/_doc/1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Encoding: br\r\nContent-Length: 2\r\n\r\n{}");
    assert_eq!(c.read_response(Method::Put).status, 400);
    // a gzip bomb is refused by its decoded size
    let tmp = tempfile::tempdir().unwrap();
    let small = Engine::start_in(tmp.path(), &["--max-body-mb", "1"]);
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(&vec![b' '; 8 << 20]).unwrap();
    let bomb = gz.finish().unwrap();
    let mut c = small.client();
    let mut req = format!("POST /_bulk HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n", bomb.len()).into_bytes();
    req.extend_from_slice(&bomb);
    c.send_raw(&req);
    assert_eq!(c.read_response(Method::Post).status, 413);
}
