//! Writers, compared byte for byte: forwarded requests (RFC 9110 7.6.1 hop-by-hop
//! removal), forwarded responses, simple responses, reason phrases.

use super::*;

fn parsed(msg: &[u8]) -> RequestHead {
    req(msg).unwrap()
}

fn fwd(target: &[u8], framing: Framing) -> ForwardRequest<'_> {
    ForwardRequest {
        target,
        framing,
        forwarded_for: b"203.0.113.7",
        forwarded_proto: b"https",
        strip_authorization: true,
        strip_expect: true,
        headers: ForwardHeaders::All,
    }
}

#[test]
fn forward_request_removes_hop_by_hop_and_sets_forwarding() {
    let msg = b"POST /logs/_bulk?refresh=true HTTP/1.1\r\n\
Host: acme-7f3k.us-east-1.localhost:9243\r\n\
Connection: keep-alive, X-Hop\r\n\
Authorization: Basic dXNlcjpwYXNz\r\n\
Content-Type: application/x-ndjson\r\n\
X-Hop: secret\r\n\
Keep-Alive: timeout=5\r\n\
Proxy-Connection: keep-alive\r\n\
Proxy-Authorization: Basic eDp5\r\n\
TE: trailers\r\n\
Trailer: X-Sum\r\n\
Upgrade: h2c\r\n\
Expect: 100-continue\r\n\
X-Forwarded-For: 10.9.9.9\r\n\
x-forwarded-proto: http\r\n\
content-length: 11\r\n\
User-Agent: elasticsearch-py/8.13\r\n\
X-Opaque-Id: Req-1\r\n\r\n";
    let head = parsed(msg);
    let mut out = Vec::new();
    write_forward_request(
        &mut out,
        &head,
        msg,
        &fwd(b"/logs/_bulk?refresh=true", head.framing),
    );
    let want = "POST /logs/_bulk?refresh=true HTTP/1.1\r\n\
Host: acme-7f3k.us-east-1.localhost:9243\r\n\
Content-Type: application/x-ndjson\r\n\
User-Agent: elasticsearch-py/8.13\r\n\
X-Opaque-Id: Req-1\r\n\
Content-Length: 11\r\n\
X-Forwarded-For: 203.0.113.7\r\n\
X-Forwarded-Proto: https\r\n\
Connection: keep-alive\r\n\r\n";
    assert_eq!(String::from_utf8(out).unwrap(), want);
}

#[test]
fn forward_request_keeps_authorization_and_expect_when_asked() {
    let msg = head_of(
        "PUT /i HTTP/1.1",
        &[
            "host: a",
            "authorization: Basic eDp5",
            "Expect: 100-continue",
            "Transfer-Encoding: chunked",
        ],
    );
    let head = parsed(&msg);
    let mut out = b"previous bytes|".to_vec();
    let f = ForwardRequest {
        strip_authorization: false,
        strip_expect: false,
        headers: ForwardHeaders::All,
        ..fwd(b"/t_i", Framing::Chunked)
    };
    write_forward_request(&mut out, &head, &msg, &f);
    let want = "previous bytes|PUT /t_i HTTP/1.1\r\n\
host: a\r\n\
authorization: Basic eDp5\r\n\
Expect: 100-continue\r\n\
Transfer-Encoding: chunked\r\n\
X-Forwarded-For: 203.0.113.7\r\n\
X-Forwarded-Proto: https\r\n\
Connection: keep-alive\r\n\r\n";
    assert_eq!(String::from_utf8(out).unwrap(), want);
}

#[test]
fn forward_request_http10_without_body_or_host() {
    // The upstream always gets HTTP/1.1 and no framing header for a body-less request.
    let msg = head_of(
        "GET /_cat/indices HTTP/1.0",
        &["Connection: close", "Accept: */*"],
    );
    let head = parsed(&msg);
    let mut out = Vec::new();
    write_forward_request(&mut out, &head, &msg, &fwd(b"/_cat/indices", Framing::None));
    let want = "GET /_cat/indices HTTP/1.1\r\nAccept: */*\r\n\
X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Proto: https\r\nConnection: keep-alive\r\n\r\n";
    assert_eq!(String::from_utf8(out).unwrap(), want);
}

#[test]
fn forward_request_absolute_form_host_from_target() {
    // RFC 9112 3.2.2: a proxy replaces Host with the target's authority.
    let msg = head_of(
        "GET http://a.example:9200/x?y HTTP/1.1",
        &["Host: b.example", "Accept: */*"],
    );
    let head = parsed(&msg);
    let mut out = Vec::new();
    write_forward_request(
        &mut out,
        &head,
        &msg,
        &fwd(head.path_and_query.of(&msg), Framing::None),
    );
    let want = "GET /x?y HTTP/1.1\r\nHost: a.example:9200\r\nAccept: */*\r\n\
X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Proto: https\r\nConnection: keep-alive\r\n\r\n";
    assert_eq!(String::from_utf8(out).unwrap(), want);
}

#[test]
fn forward_request_length_zero_is_written() {
    let msg = head_of("POST /_refresh HTTP/1.1", &["Host: a", "Content-Length: 0"]);
    let head = parsed(&msg);
    let mut out = Vec::new();
    write_forward_request(&mut out, &head, &msg, &fwd(b"/_refresh", head.framing));
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("\r\nContent-Length: 0\r\n"));
}

fn response(msg: &[u8], method: Method) -> ResponseHead {
    parse_response_split(msg, method).unwrap()
}

#[test]
fn forward_response_relays_end_to_end_headers() {
    let msg = b"HTTP/1.1 200 OK\r\nX-Elastic-Product: Elasticsearch\r\nConnection: keep-alive, X-Up\r\nX-Up: 1\r\nKeep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\ncontent-type: application/json\r\n\r\n";
    let head = response(msg, Method::Get);
    let mut out = Vec::new();
    let extra: &[(&str, &[u8])] = &[("X-Searchgate", b"1")];
    write_forward_response(
        &mut out,
        &head,
        msg,
        Version::Http11,
        Framing::Chunked,
        true,
        extra,
    );
    let want =
        "HTTP/1.1 200 OK\r\nX-Elastic-Product: Elasticsearch\r\ncontent-type: application/json\r\n\
Transfer-Encoding: chunked\r\nX-Searchgate: 1\r\n\r\n";
    assert_eq!(String::from_utf8(out).unwrap(), want);
}

#[test]
fn forward_response_to_http10_client() {
    // An HTTP/1.0 client gets a 1.0 status line, a length, and keep-alive said explicitly.
    let msg = b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n";
    let head = response(msg, Method::Put);
    let mut out = Vec::new();
    write_forward_response(
        &mut out,
        &head,
        msg,
        Version::Http10,
        Framing::Length(2),
        true,
        &[],
    );
    assert_eq!(
        out,
        b"HTTP/1.0 201 Created\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n"
    );
    out.clear();
    write_forward_response(
        &mut out,
        &head,
        msg,
        Version::Http10,
        Framing::UntilClose,
        false,
        &[],
    );
    assert_eq!(out, b"HTTP/1.0 201 Created\r\nConnection: close\r\n\r\n");
}

#[test]
fn forward_response_closing() {
    let msg = b"HTTP/1.1 404 \r\nContent-Length: 5\r\n\r\n";
    let head = response(msg, Method::Get);
    let mut out = Vec::new();
    write_forward_response(
        &mut out,
        &head,
        msg,
        Version::Http11,
        Framing::Length(5),
        false,
        &[],
    );
    // No reason from upstream: the standard one.
    assert_eq!(
        out,
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"
    );
}

#[test]
fn forward_response_length_of_bodiless_responses_only_when_given() {
    // RFC 9110 8.6: for HEAD the length describes the representation; the writer never
    // copies the upstream's, so a caller passing it in `extra` gets exactly one.
    let msg = b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\nX-A: b\r\n\r\n";
    let head = response(msg, Method::Head);
    assert_eq!(head.content_length, Some(1234));
    let mut out = Vec::new();
    write_forward_response(
        &mut out,
        &head,
        msg,
        Version::Http11,
        Framing::None,
        true,
        &[],
    );
    assert_eq!(out, b"HTTP/1.1 200 OK\r\nX-A: b\r\n\r\n");
    out.clear();
    let extra: &[(&str, &[u8])] = &[("Content-Length", b"1234")];
    write_forward_response(
        &mut out,
        &head,
        msg,
        Version::Http11,
        Framing::None,
        true,
        extra,
    );
    assert_eq!(
        out,
        b"HTTP/1.1 200 OK\r\nX-A: b\r\nContent-Length: 1234\r\n\r\n"
    );
    // 204: nothing (RFC 9110 8.6: MUST NOT).
    let msg = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n";
    let head = response(msg, Method::Delete);
    out.clear();
    write_forward_response(
        &mut out,
        &head,
        msg,
        Version::Http11,
        Framing::None,
        true,
        &[],
    );
    assert_eq!(out, b"HTTP/1.1 204 No Content\r\n\r\n");
}

#[test]
fn simple_response_heads() {
    let mut out = Vec::new();
    let headers: &[(&str, &[u8])] = &[
        ("Content-Type", b"application/json"),
        ("X-Elastic-Product", b"Elasticsearch"),
    ];
    write_response_head(
        &mut out,
        Version::Http11,
        413,
        headers,
        Framing::Length(120),
        false,
    );
    assert_eq!(
        out,
        b"HTTP/1.1 413 Content Too Large\r\nContent-Type: application/json\r\nX-Elastic-Product: Elasticsearch\r\nContent-Length: 120\r\nConnection: close\r\n\r\n"
    );
    out.clear();
    write_response_head(&mut out, Version::Http11, 100, &[], Framing::None, true);
    assert_eq!(out, b"HTTP/1.1 100 Continue\r\n\r\n");
    out.clear();
    write_response_head(&mut out, Version::Http10, 200, &[], Framing::Chunked, true);
    assert_eq!(
        out,
        b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
    );
    out.clear();
    write_response_head(
        &mut out,
        Version::Http11,
        200,
        &[],
        Framing::Length(u64::MAX),
        true,
    );
    assert_eq!(
        out,
        b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\n"
    );
}

#[test]
fn reason_phrases_for_registered_codes() {
    // IANA HTTP Status Code Registry (RFC 9110 15).
    let registered: &[(u16, &str)] = &[
        (100, "Continue"),
        (101, "Switching Protocols"),
        (102, "Processing"),
        (103, "Early Hints"),
        (200, "OK"),
        (201, "Created"),
        (202, "Accepted"),
        (203, "Non-Authoritative Information"),
        (204, "No Content"),
        (205, "Reset Content"),
        (206, "Partial Content"),
        (207, "Multi-Status"),
        (208, "Already Reported"),
        (226, "IM Used"),
        (300, "Multiple Choices"),
        (301, "Moved Permanently"),
        (302, "Found"),
        (303, "See Other"),
        (304, "Not Modified"),
        (305, "Use Proxy"),
        (307, "Temporary Redirect"),
        (308, "Permanent Redirect"),
        (400, "Bad Request"),
        (401, "Unauthorized"),
        (402, "Payment Required"),
        (403, "Forbidden"),
        (404, "Not Found"),
        (405, "Method Not Allowed"),
        (406, "Not Acceptable"),
        (407, "Proxy Authentication Required"),
        (408, "Request Timeout"),
        (409, "Conflict"),
        (410, "Gone"),
        (411, "Length Required"),
        (412, "Precondition Failed"),
        (413, "Content Too Large"),
        (414, "URI Too Long"),
        (415, "Unsupported Media Type"),
        (416, "Range Not Satisfiable"),
        (417, "Expectation Failed"),
        (421, "Misdirected Request"),
        (422, "Unprocessable Content"),
        (423, "Locked"),
        (424, "Failed Dependency"),
        (425, "Too Early"),
        (426, "Upgrade Required"),
        (428, "Precondition Required"),
        (429, "Too Many Requests"),
        (431, "Request Header Fields Too Large"),
        (451, "Unavailable For Legal Reasons"),
        (500, "Internal Server Error"),
        (501, "Not Implemented"),
        (502, "Bad Gateway"),
        (503, "Service Unavailable"),
        (504, "Gateway Timeout"),
        (505, "HTTP Version Not Supported"),
        (506, "Variant Also Negotiates"),
        (507, "Insufficient Storage"),
        (508, "Loop Detected"),
        (510, "Not Extended"),
        (511, "Network Authentication Required"),
    ];
    for &(code, phrase) in registered {
        assert_eq!(reason_phrase(code), phrase, "{code}");
    }
    let known: Vec<u16> = registered.iter().map(|r| r.0).collect();
    for code in (100..600).filter(|c| !known.contains(c)) {
        assert_eq!(reason_phrase(code), "Unknown", "{code}");
    }
}

#[test]
fn forward_request_keeps_only_the_allow_list() {
    // The allow-list applies to every end-to-end header (Host and Content-Type too), names
    // compared without case; framing and forwarding headers are the writer's own as ever,
    // and a tagged header gets the tag right before its value.
    let msg = head_of(
        "POST /x HTTP/1.1",
        &[
            "Host: h",
            "Accept-Encoding: gzip",
            "accept: */*",
            "X-Proxy-User: admin",
            "Content-Type: application/json",
            "X-Opaque-Id: job-7",
            "Cookie: a=b",
            "Content-Length: 2",
            "X-Forwarded-For: 10.0.0.1",
        ],
    );
    let head = parsed(&msg);
    let allow: &[(&[u8], Pass)] = &[
        (b"accept", Pass::AsSent),
        (b"content-type", Pass::AsSent),
        (b"x-opaque-id", Pass::Tagged),
    ];
    let f = ForwardRequest {
        headers: ForwardHeaders::Only { allow, tag: b"t1-" },
        ..fwd(b"/x", head.framing)
    };
    let mut out = Vec::new();
    write_forward_request(&mut out, &head, &msg, &f);
    let want = "POST /x HTTP/1.1\r\n\
accept: */*\r\n\
Content-Type: application/json\r\n\
X-Opaque-Id: t1-job-7\r\n\
Content-Length: 2\r\n\
X-Forwarded-For: 203.0.113.7\r\n\
X-Forwarded-Proto: https\r\n\
Connection: keep-alive\r\n\r\n";
    assert_eq!(String::from_utf8(out).unwrap(), want);

    // An allow-list never brings back what the writer drops anyway.
    let f = ForwardRequest {
        headers: ForwardHeaders::Only {
            allow: &[
                (b"connection", Pass::AsSent),
                (b"x-forwarded-for", Pass::AsSent),
            ],
            tag: b"",
        },
        ..fwd(b"/x", head.framing)
    };
    let mut out = Vec::new();
    write_forward_request(&mut out, &head, &msg, &f);
    let text = String::from_utf8(out).unwrap();
    assert!(!text.contains("10.0.0.1"), "{text}");
    assert_eq!(text.matches("Connection").count(), 1, "{text}");
}

// issue 29: a body the edge inflated goes upstream without its Content-Encoding, every
// other header as sent
#[test]
fn forward_request_all_but_leaves_out_the_named_headers() {
    let msg = b"PUT /books HTTP/1.1\r\nHost: a\r\nContent-Encoding: gzip\r\nX-Other: 1\r\nContent-Length: 2\r\n\r\n{}";
    let head = parsed(msg);
    let mut f = fwd(b"/books", Framing::Length(2));
    f.headers = ForwardHeaders::AllBut(&[b"content-encoding"]);
    let mut out = Vec::new();
    write_forward_request(&mut out, &head, msg, &f);
    let text = String::from_utf8(out).unwrap();
    assert!(
        !text.to_ascii_lowercase().contains("content-encoding"),
        "{text}"
    );
    assert!(text.contains("\r\nX-Other: 1\r\n"), "{text}");
    assert!(text.contains("\r\nContent-Length: 2\r\n"), "{text}");
}
