//! Response head parsing: never panics; spans lie within the head; the head alone parses
//! the same; bodiless responses have no framing. Then the head the edge writes to its
//! client for it (`write_forward_response`, as `src/edge/relay.rs` calls it for a response
//! it passes through) parses again, for the same request method, with the same status and
//! reason, the framing and keep-alive the edge chose, and for a HEAD request the
//! upstream's Content-Length: a client reads the response the way the edge did.
#![no_main]

use libfuzzer_sys::fuzz_target;
use searchgate::proto::{
    reason_phrase, write_forward_response, Framing, HeadLimits, Method, ResponseHead, Version,
};

/// The framing the edge gives the client for an upstream body passed through untouched
/// (`client_framing` in `src/edge/relay.rs`, `ResponseFilter::Pass`): a close-delimited
/// body is chunked for HTTP/1.1 clients; HTTP/1.0 clients get chunked and close-delimited
/// bodies close-delimited.
fn client_framing(upstream: Framing, version: Version) -> Framing {
    match (upstream, version) {
        (Framing::None, _) => Framing::None,
        (Framing::Chunked | Framing::UntilClose, Version::Http10) => Framing::UntilClose,
        (Framing::UntilClose, Version::Http11) => Framing::Chunked,
        (f, _) => f,
    }
}

fn forwarded_parses_again(head: &ResponseHead, data: &[u8], method: Method, selector: u8) {
    let version = if selector & 2 == 0 {
        Version::Http11
    } else {
        Version::Http10
    };
    let to = client_framing(head.framing, version);
    let keep = selector & 4 == 0 && to != Framing::UntilClose;
    let length = match (method, head.header(data, b"content-length")) {
        (Method::Head, Some(v)) => Some(("Content-Length", v)),
        _ => None,
    };
    let mut out = Vec::new();
    write_forward_response(&mut out, head, data, version, to, keep, length.as_slice());

    let big = HeadLimits {
        max_head: 1 << 20,
        max_auth: 0,
        max_headers: 256,
    };
    let mut again = ResponseHead::new();
    assert_eq!(again.parse(&out, method, &big), Ok(true), "{:?}", String::from_utf8_lossy(&out));
    assert_eq!(again.len, out.len());
    assert_eq!((again.status, again.version), (head.status, version));
    assert_eq!((again.framing, again.keep_alive), (to, keep));
    let reason = head.reason.of(data);
    let want = if reason.is_empty() {
        reason_phrase(head.status).as_bytes()
    } else {
        reason
    };
    assert_eq!(again.reason.of(&out), want);
    if method == Method::Head {
        assert_eq!(again.content_length, head.content_length);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, data)) = data.split_first() else {
        return;
    };
    let method = if selector & 1 == 0 {
        Method::Get
    } else {
        Method::Head
    };
    let limits = HeadLimits {
        max_head: 2048,
        max_auth: 0,
        max_headers: 32,
    };
    let mut head = ResponseHead::new();
    if head.parse(data, method, &limits) != Ok(true) {
        return;
    }
    let len = head.len;
    assert!(len <= data.len() && len <= limits.max_head);
    assert!((100..=999).contains(&head.status));
    assert!(head.reason.start <= head.reason.end && head.reason.end as usize <= len);
    for h in &head.headers {
        assert!(h.name.end as usize <= len && h.value.end as usize <= len);
    }
    if method == Method::Head || head.status < 200 || head.status == 204 || head.status == 304 {
        assert_eq!(head.framing, Framing::None);
    }
    if head.framing == Framing::UntilClose {
        assert!(!head.keep_alive);
    }
    let mut again = ResponseHead::new();
    assert_eq!(again.parse(&data[..len], method, &limits), Ok(true));
    assert_eq!(
        (again.len, again.framing, again.status),
        (len, head.framing, head.status)
    );
    forwarded_parses_again(&head, data, method, selector);
});
