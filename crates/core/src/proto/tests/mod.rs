//! Tests of the HTTP/1.1 codec. Every message is fed at every split point (a peer may send
//! a head or a body in any number of pieces, RFC 9112 2.2); smuggling cases have one test
//! each; limits are tested at N and N+1.

mod body;
mod limits;
mod request;
mod response;
mod smuggling;
mod write;

use super::*;

/// Parses `msg` as a request head fed at every split point, then whole.
///
/// Every proper prefix must ask for more bytes, or (for a message that fails) fail with the
/// same error as the whole; a prefix that already holds the whole head must give the same
/// head length. Returns the head parsed from the whole message.
pub(super) fn parse_request_split(
    msg: &[u8],
    limits: &HeadLimits,
) -> Result<RequestHead, ProtoError> {
    let mut whole = RequestHead::new();
    let result = whole.parse(msg, limits);
    let mut head = RequestHead::new();
    for cut in 0..msg.len() {
        match (&result, head.parse(&msg[..cut], limits)) {
            (_, Ok(false)) => {}
            (Ok(true), Ok(true)) => {
                assert!(
                    cut >= whole.len,
                    "complete after {cut} of {} bytes",
                    whole.len
                );
                assert_eq!(head.len, whole.len);
            }
            (Err(e), Err(p)) => assert_eq!(*e, p, "prefix of {cut} bytes"),
            (want, got) => panic!("prefix of {cut} bytes gave {got:?}, the whole {want:?}"),
        }
    }
    match result {
        Ok(true) => Ok(whole),
        Ok(false) => panic!("message incomplete: {:?}", String::from_utf8_lossy(msg)),
        Err(e) => Err(e),
    }
}

/// As [`parse_request_split`] with the default limits (spec 8: 16KB).
pub(super) fn req(msg: &[u8]) -> Result<RequestHead, ProtoError> {
    parse_request_split(msg, &HeadLimits::default())
}

/// Parses `msg` as a response head (to a `method` request) fed at every split point.
pub(super) fn parse_response_split(msg: &[u8], method: Method) -> Result<ResponseHead, ProtoError> {
    let limits = HeadLimits::default();
    let mut whole = ResponseHead::new();
    let result = whole.parse(msg, method, &limits);
    let mut head = ResponseHead::new();
    for cut in 0..msg.len() {
        match (&result, head.parse(&msg[..cut], method, &limits)) {
            (_, Ok(false)) => {}
            (Ok(true), Ok(true)) => {
                assert!(
                    cut >= whole.len,
                    "complete after {cut} of {} bytes",
                    whole.len
                );
                assert_eq!(head.len, whole.len);
            }
            (Err(e), Err(p)) => assert_eq!(*e, p, "prefix of {cut} bytes"),
            (want, got) => panic!("prefix of {cut} bytes gave {got:?}, the whole {want:?}"),
        }
    }
    match result {
        Ok(true) => Ok(whole),
        Ok(false) => panic!("message incomplete: {:?}", String::from_utf8_lossy(msg)),
        Err(e) => Err(e),
    }
}

/// The text of a span, for readable assertions.
pub(super) fn text(buf: &[u8], span: Span) -> &str {
    std::str::from_utf8(span.of(buf)).unwrap()
}

/// A head from a request line and header lines (CRLF added), ending with the empty line.
pub(super) fn head_of(request_line: &str, headers: &[&str]) -> Vec<u8> {
    let mut out = format!("{request_line}\r\n").into_bytes();
    for h in headers {
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}
