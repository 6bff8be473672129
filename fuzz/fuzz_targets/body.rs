//! Body decoding (chunked, Content-Length): never panics; every call consumes at most its
//! input and returns a payload range inside what it consumed; the running total matches
//! the payload returned and never passes the limit; feeding the input whole or in reads
//! of any size gives the same outcome.
#![no_main]

use libfuzzer_sys::fuzz_target;
use searchgate::proto::{BodyDecoder, Framing, ProtoError};

#[derive(Debug, PartialEq)]
struct Outcome {
    payload: Vec<u8>,
    consumed: usize,
    done: bool,
}

fn drive(framing: Framing, limit: u64, input: &[u8], read: usize) -> Result<Outcome, ProtoError> {
    let mut dec = BodyDecoder::new(framing, limit)?;
    let mut out = Outcome {
        payload: Vec::new(),
        consumed: 0,
        done: dec.is_done(),
    };
    let mut filled = 0;
    while !out.done && filled < input.len() {
        filled = (filled + read).min(input.len());
        loop {
            let avail = &input[out.consumed..filled];
            let d = dec.decode(avail)?;
            assert!(d.consumed <= avail.len());
            assert!(d.data.start <= d.data.end && d.data.end <= d.consumed);
            out.payload.extend_from_slice(&avail[d.data.clone()]);
            out.consumed += d.consumed;
            assert_eq!(dec.total(), out.payload.len() as u64);
            assert!(dec.total() <= limit);
            assert_eq!(d.done, dec.is_done());
            if d.done {
                out.done = true;
                let after = dec.decode(&input[out.consumed..]).unwrap();
                assert_eq!((after.consumed, after.data.len(), after.done), (0, 0, true));
                break;
            }
            if d.consumed == 0 {
                break;
            }
        }
    }
    Ok(out)
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
