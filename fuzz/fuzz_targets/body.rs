//! The one body reader (`BodyCursor` over chunked and Content-Length bodies): never panics;
//! every piece lies inside what the cursor has passed; the running total matches the
//! payload handed out and never passes the limit; once done it stays done; feeding the
//! input whole or in reads of any size gives the same outcome.
#![no_main]

use libfuzzer_sys::fuzz_target;
use searchgate::proto::{BodyCursor, Framing, ProtoError, Step};

#[derive(Debug, PartialEq)]
struct Outcome {
    payload: Vec<u8>,
    consumed: usize,
    done: bool,
}

fn drive(framing: Framing, limit: u64, input: &[u8], read: usize) -> Result<Outcome, ProtoError> {
    let mut cur = BodyCursor::new(framing, limit, 0)?;
    let mut payload = Vec::new();
    let mut filled = 0;
    loop {
        match cur.step(&input[..filled])? {
            Step::Piece(r) => {
                assert!(r.start < r.end && r.end <= cur.pos() && cur.pos() <= filled);
                payload.extend_from_slice(&input[r]);
                assert_eq!(cur.total(), payload.len() as u64);
                assert!(cur.total() <= limit);
            }
            Step::Done => {
                assert_eq!(cur.step(input).unwrap(), Step::Done);
                let consumed = cur.pos();
                return Ok(Outcome { payload, consumed, done: true });
            }
            Step::NeedMore if filled == input.len() => {
                let consumed = cur.pos();
                return Ok(Outcome { payload, consumed, done: false });
            }
            Step::NeedMore => filled = (filled + read).min(input.len()),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [mode, read_hi, read_lo, limit_byte, rest @ ..] = data else {
        return;
    };
    let read = usize::from(u16::from_be_bytes([*read_hi, *read_lo])).max(1);
    let limit = u64::from(*limit_byte) * 64;
    let framing = match mode % 3 {
        0 | 1 => Framing::Chunked,
        _ => Framing::Length(rest.len() as u64 / 2),
    };
    let whole = drive(framing, limit, rest, rest.len().max(1));
    let pieces = drive(framing, limit, rest, read);
    match (&whole, &pieces) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(_), Err(_)) => {}
        _ => panic!("whole {whole:?} vs reads of {read}: {pieces:?}"),
    }
});
