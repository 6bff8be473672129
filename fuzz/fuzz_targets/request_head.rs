//! Request head parsing: never panics; a complete head lies within the input and the
//! limits, every span lies within the head; the head alone parses the same; no proper
//! prefix of it is complete; the head the edge forwards (the target it forwards: the
//! classified path in canonical form and the query, `request::path::NormPath::write_target`)
//! parses again with the same framing and the same path and query.
//!
//! Findings kept as unit tests: `src/policy/path.rs` (`fuzz_findings_forward_and_parse_again`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use searchgate::request::path::NormPath;
use searchgate::proto::{
    write_forward_request, ForwardHeaders, ForwardRequest, HeadLimits, ProtoError, RequestHead, Span, Version,
};

fn in_head(span: Span, len: usize) {
    assert!(
        span.start <= span.end && span.end as usize <= len,
        "{span:?} beyond {len}"
    );
}

fuzz_target!(|data: &[u8]| {
    // Small limits, so the fuzzer reaches them.
    let limits = HeadLimits {
        max_head: 2048,
        max_auth: 512,
        max_headers: 32,
    };
    let mut head = RequestHead::new();
    match head.parse(data, &limits) {
        Ok(false) => assert!(data.len() <= limits.max_head + limits.max_auth),
        Err(_) => {}
        Ok(true) => {
            let len = head.len;
            assert!(len <= data.len() && len <= limits.max_head + limits.max_auth);
            assert!(head.counted_len <= len && head.counted_len <= limits.max_head);
            assert!(head.headers.len() <= limits.max_headers);
            for span in [head.method_span, head.target, head.path_and_query] {
                in_head(span, len);
            }
            for span in [head.host, head.authorization, head.content_type]
                .into_iter()
                .flatten()
            {
                in_head(span, len);
            }
            for h in &head.headers {
                in_head(h.name, len);
                in_head(h.value, len);
            }
            let _ = (
                head.path(data),
                head.query(data),
                head.header(data, b"host"),
            );

            let mut again = RequestHead::new();
            assert_eq!(again.parse(&data[..len], &limits), Ok(true));
            assert_eq!(
                (again.len, again.counted_len, again.framing),
                (len, head.counted_len, head.framing)
            );
            assert_ne!(
                RequestHead::new().parse(&data[..len - 1], &limits),
                Ok(true)
            );

            // A path the edge cannot decode is refused (400), never forwarded.
            let Ok(path) = NormPath::strict(head.path(data)) else {
                return;
            };
            let mut target = Vec::new();
            path.write_target(head.query(data), &mut target);
            let mut out = Vec::new();
            let fwd = ForwardRequest {
                target: &target,
                framing: head.framing,
                forwarded_for: b"192.0.2.1",
                forwarded_proto: b"https",
                strip_authorization: true,
                strip_expect: true,
                headers: ForwardHeaders::All,
            };
            write_forward_request(&mut out, &head, data, &fwd);
            let big = HeadLimits {
                max_head: 1 << 20,
                max_auth: 0,
                max_headers: 256,
            };
            let mut forwarded = RequestHead::new();
            match forwarded.parse(&out, &big) {
                Ok(true) => {
                    assert_eq!(forwarded.len, out.len());
                    assert_eq!(forwarded.framing, head.framing);
                    assert_eq!(forwarded.authorization, None);
                    assert!(forwarded.keep_alive);
                    assert!(!forwarded.is_absolute_form());
                    assert_eq!(forwarded.query(&out), head.query(data));
                    let again = NormPath::strict(forwarded.path(&out)).expect("canonical paths decode");
                    assert!(again.segments().eq(path.segments()), "the upstream sees the classified path");
                }
                // An HTTP/1.0 request without Host, or one whose Connection header named
                // Host, is forwarded without one.
                Err(ProtoError::Malformed("missing Host")) => {
                    assert!(
                        head.version == Version::Http10
                            || head.header(data, b"connection").is_some()
                    )
                }
                other => panic!("forwarded head did not parse: {other:?}"),
            }
        }
    }
});
