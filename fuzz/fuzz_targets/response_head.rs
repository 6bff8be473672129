//! Response head parsing: never panics; spans lie within the head; the head alone parses
//! the same; bodiless responses have no framing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use searchgate::proto::{Framing, HeadLimits, Method, ResponseHead};

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
});
