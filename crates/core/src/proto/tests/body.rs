//! Body decoding (RFC 9112 6, 7) at every split point, limits at N and N+1, chunk encoding.

use super::*;

/// What a caller gets from feeding a body in the given pieces.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    payload: Vec<u8>,
    consumed: usize,
    done: bool,
}

/// Feeds `pieces` the way every reader does, through the one cursor: append to a pending
/// buffer, step until it needs more, drop what was consumed. Checks the ranges it returns.
fn drive<'a>(
    cur: &mut BodyCursor,
    pieces: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Outcome, ProtoError> {
    let mut pending = Vec::new();
    let mut dropped = 0;
    let mut out = Outcome {
        payload: Vec::new(),
        consumed: 0,
        done: false,
    };
    for piece in pieces {
        pending.extend_from_slice(piece);
        loop {
            match cur.step(&pending)? {
                Step::Piece(r) => {
                    assert!(r.start < r.end && r.end <= cur.pos() && cur.pos() <= pending.len());
                    out.payload.extend_from_slice(&pending[r]);
                }
                Step::Done => {
                    assert!(cur.is_done());
                    out.consumed = dropped + cur.pos();
                    out.done = true;
                    return Ok(out);
                }
                Step::NeedMore => {
                    let n = cur.pos();
                    pending.drain(..n);
                    cur.dropped(n);
                    dropped += n;
                    break;
                }
            }
        }
    }
    out.consumed = dropped + cur.pos();
    Ok(out)
}

/// Decodes `msg` whole, in two pieces split at every point, and one byte at a time; all
/// must agree. Returns the whole-message outcome.
fn decode_every_split(framing: Framing, limit: u64, msg: &[u8]) -> Result<Outcome, ProtoError> {
    let whole = drive(&mut BodyCursor::new(framing, limit, 0)?, [msg]);
    for cut in 0..=msg.len() {
        let split = drive(
            &mut BodyCursor::new(framing, limit, 0)?,
            [&msg[..cut], &msg[cut..]],
        );
        assert_eq!(split, whole, "split at {cut}");
    }
    let bytewise = drive(&mut BodyCursor::new(framing, limit, 0)?, msg.chunks(1));
    assert_eq!(bytewise, whole, "one byte at a time");
    whole
}

const CHUNKED: &[u8] = b"5\r\nhello\r\n6;name=value;flag\r\n world\r\nA \t; x=\"q\"\r\n, chunked!\r\n0\r\nX-Trailer: 1\r\nOther: two\r\n\r\n";

#[test]
fn chunked_body_at_every_split() {
    // RFC 9112 7.1: sizes in hex, extensions ignored, trailers read and discarded.
    let out = decode_every_split(Framing::Chunked, 1 << 20, CHUNKED).unwrap();
    assert_eq!(out.payload, b"hello world, chunked!");
    assert_eq!(out.consumed, CHUNKED.len());
    assert!(out.done);
}

#[test]
fn chunked_body_stops_at_its_end() {
    // Pipelined bytes after the body are left for the next request.
    let mut buf = CHUNKED.to_vec();
    buf.extend_from_slice(b"GET / HTTP/1.1\r\n");
    let out = drive(
        &mut BodyCursor::new(Framing::Chunked, 1 << 20, 0).unwrap(),
        [&buf[..]],
    )
    .unwrap();
    assert_eq!(out.consumed, CHUNKED.len());
}

#[test]
fn one_payload_range_per_call_and_framing_consumed_after_it() {
    let mut dec = BodyDecoder::new(Framing::Chunked, 100).unwrap();
    let input = b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    let d = dec.decode(input).unwrap();
    // First range, then its CRLF and the next size line are consumed too.
    assert_eq!(
        d,
        Decoded {
            consumed: 11,
            data: 3..6,
            done: false
        }
    );
    let d = dec.decode(&input[11..]).unwrap();
    assert_eq!(
        d,
        Decoded {
            consumed: input.len() - 11,
            data: 0..2,
            done: true
        }
    );
    assert_eq!(dec.total(), 5);
    assert_eq!(dec.remaining(), None);
    // Done stays done and consumes nothing more.
    assert_eq!(
        dec.decode(b"junk").unwrap(),
        Decoded {
            consumed: 0,
            data: 0..0,
            done: true
        }
    );
}

#[test]
fn partial_size_line_consumes_nothing() {
    let mut dec = BodyDecoder::new(Framing::Chunked, 100).unwrap();
    assert_eq!(
        dec.decode(b"1f;ext").unwrap(),
        Decoded {
            consumed: 0,
            data: 0..0,
            done: false
        }
    );
    assert_eq!(
        dec.decode(b"1f\r").unwrap(),
        Decoded {
            consumed: 0,
            data: 0..0,
            done: false
        }
    );
}

#[test]
fn content_length_body_at_every_split() {
    // RFC 9112 6.2.
    let msg = b"{\"query\":{\"match_all\":{}}}";
    let out = decode_every_split(Framing::Length(msg.len() as u64), 100, msg).unwrap();
    assert_eq!(
        (out.payload.as_slice(), out.consumed, out.done),
        (&msg[..], msg.len(), true)
    );
    // Bytes after the length belong to the next message.
    let mut dec = BodyDecoder::new(Framing::Length(3), 100).unwrap();
    assert_eq!(dec.remaining(), Some(3));
    let d = dec.decode(b"abcGET").unwrap();
    assert_eq!(
        d,
        Decoded {
            consumed: 3,
            data: 0..3,
            done: true
        }
    );
    assert_eq!((dec.total(), dec.remaining()), (3, Some(0)));
}

#[test]
fn length_remaining_counts_down() {
    let mut dec = BodyDecoder::new(Framing::Length(10), 10).unwrap();
    assert_eq!(dec.decode(b"abcd").unwrap().data, 0..4);
    assert_eq!(dec.remaining(), Some(6));
    assert!(!dec.complete_at_eof());
    assert_eq!(
        dec.decode(b"").unwrap(),
        Decoded {
            consumed: 0,
            data: 0..0,
            done: false
        }
    );
}

#[test]
fn empty_bodies_are_done_at_once() {
    for framing in [Framing::None, Framing::Length(0)] {
        let mut dec = BodyDecoder::new(framing, 0).unwrap();
        assert!(dec.is_done() && dec.complete_at_eof());
        assert_eq!(
            dec.decode(b"next").unwrap(),
            Decoded {
                consumed: 0,
                data: 0..0,
                done: true
            }
        );
    }
    let out = decode_every_split(Framing::Chunked, 0, b"0\r\n\r\n").unwrap();
    assert_eq!((out.payload.len(), out.done), (0, true));
}

#[test]
fn until_close_body() {
    // RFC 9112 6.3 rule 8: everything until the close is the body.
    let mut dec = BodyDecoder::new(Framing::UntilClose, 10).unwrap();
    assert_eq!(
        dec.decode(b"hello").unwrap(),
        Decoded {
            consumed: 5,
            data: 0..5,
            done: false
        }
    );
    assert!(dec.complete_at_eof());
    assert_eq!(dec.decode(b"world").unwrap().data, 0..5);
    assert_eq!(dec.decode(b"!"), Err(ProtoError::BodyTooLarge));
}

#[test]
fn content_length_limit_at_n_and_n_plus_one() {
    // spec 8: body over 40MB is 413; 41,943,040 passes, 41,943,041 is refused up front.
    const LIMIT: u64 = 40 * 1024 * 1024;
    assert!(BodyDecoder::new(Framing::Length(LIMIT), LIMIT).is_ok());
    assert_eq!(
        BodyDecoder::new(Framing::Length(LIMIT + 1), LIMIT).unwrap_err(),
        ProtoError::BodyTooLarge
    );
}

#[test]
fn chunked_limit_at_n_and_n_plus_one() {
    // spec 8: the running count of a chunked body; N bytes pass, N+1 are refused at the
    // size line that would pass the limit, before any of that chunk is returned.
    let body = b"4\r\nabcd\r\n6\r\nefghij\r\n0\r\n\r\n";
    let out = decode_every_split(Framing::Chunked, 10, body).unwrap();
    assert_eq!(out.payload, b"abcdefghij");
    assert_eq!(
        decode_every_split(Framing::Chunked, 9, body),
        Err(ProtoError::BodyTooLarge)
    );
    let mut dec = BodyDecoder::new(Framing::Chunked, 9).unwrap();
    assert_eq!(dec.decode(b"4\r\nabcd\r\n").unwrap().data, 3..7);
    assert_eq!(dec.decode(b"6\r\n"), Err(ProtoError::BodyTooLarge));
    assert_eq!(dec.total(), 4);
}

#[test]
fn chunk_size_hex_forms() {
    let out = decode_every_split(Framing::Chunked, 100, b"A\r\n0123456789\r\n0\r\n\r\n").unwrap();
    assert_eq!(out.payload, b"0123456789");
    let out =
        decode_every_split(Framing::Chunked, 100, b"000b\r\nhello world\r\n000\r\n\r\n").unwrap();
    assert_eq!(out.payload, b"hello world");
}

fn bad(body: &[u8]) -> ProtoError {
    decode_every_split(Framing::Chunked, u64::MAX, body).unwrap_err()
}

#[test]
fn chunk_size_overflow() {
    // 2^64 in hex: 17 digits.
    assert!(matches!(
        bad(b"10000000000000000\r\n"),
        ProtoError::BadChunk(_)
    ));
    // The largest size fits in u64 but not under the limit.
    let e = decode_every_split(Framing::Chunked, 1 << 30, b"ffffffffffffffff\r\n");
    assert_eq!(e, Err(ProtoError::BodyTooLarge));
}

#[test]
fn chunk_size_empty_or_not_hex() {
    for body in [
        &b"\r\nabc\r\n"[..],
        b";ext\r\n",
        b"0x5\r\nhello\r\n",
        b"-5\r\nhello\r\n",
        b"+5\r\nhello\r\n",
        b" 5\r\nhello\r\n",
        b"g\r\n",
        b"5 \r\nhello\r\n",
        b"5\t\r\nhello\r\n",
        b"5 x\r\nhello\r\n",
    ] {
        assert!(matches!(bad(body), ProtoError::BadChunk(_)), "{body:?}");
    }
}

#[test]
fn chunk_extension_with_bws_is_ignored() {
    // RFC 9112 7.1.1: chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] ).
    let out =
        decode_every_split(Framing::Chunked, 100, b"3 ; a = b\r\nxyz\r\n0;last\r\n\r\n").unwrap();
    assert_eq!(out.payload, b"xyz");
}

#[test]
fn chunk_extension_with_control_byte() {
    assert!(matches!(
        bad(b"3;a\x00b\r\nxyz\r\n"),
        ProtoError::BadChunk(_)
    ));
    assert!(matches!(bad(b"3;a\rb\r\nxyz\r\n"), ProtoError::BadChunk(_)));
}

#[test]
fn missing_crlf_after_chunk_data() {
    assert!(matches!(
        bad(b"5\r\nhelloX\r\n0\r\n\r\n"),
        ProtoError::BadChunk(_)
    ));
    assert!(matches!(
        bad(b"5\r\nhello\rX0\r\n\r\n"),
        ProtoError::BadChunk(_)
    ));
    assert!(matches!(
        bad(b"5\r\nhello\n0\r\n\r\n"),
        ProtoError::BadChunk(_)
    ));
    assert!(matches!(
        bad(b"3\r\nhello\r\n0\r\n\r\n"),
        ProtoError::BadChunk(_)
    ));
}

#[test]
fn bare_lf_in_chunk_framing() {
    assert!(matches!(
        bad(b"5\nhello\r\n0\r\n\r\n"),
        ProtoError::BadChunk(_)
    ));
    assert!(matches!(bad(b"0\r\nX: y\n\r\n"), ProtoError::BadChunk(_)));
    assert!(matches!(bad(b"0\r\n\n"), ProtoError::BadChunk(_)));
}

#[test]
fn invalid_trailer_lines() {
    for body in [
        &b"0\r\nno colon\r\n\r\n"[..],
        b"0\r\n: v\r\n\r\n",
        b"0\r\n folded: v\r\n\r\n",
        b"0\r\nX: a\x00b\r\n\r\n",
    ] {
        assert!(matches!(bad(body), ProtoError::BadChunk(_)), "{body:?}");
    }
}

#[test]
fn chunk_size_line_length_at_n_and_n_plus_one() {
    // A chunk-size line (extensions and CRLF included) may take 4096 bytes, not 4097.
    let line = |len: usize| {
        let mut l = b"3;x=".to_vec();
        l.resize(len - 2, b'y');
        l.extend_from_slice(b"\r\nabc\r\n0\r\n\r\n");
        l
    };
    let out = decode_every_split(Framing::Chunked, 100, &line(MAX_CHUNK_LINE)).unwrap();
    assert_eq!(out.payload, b"abc");
    assert!(matches!(
        decode_every_split(Framing::Chunked, 100, &line(MAX_CHUNK_LINE + 1)),
        Err(ProtoError::BadChunk(_))
    ));
}

#[test]
fn trailer_section_length_at_n_and_n_plus_one() {
    // The trailer section (final CRLF included) may take 4096 bytes, not 4097.
    let body = |len: usize| {
        let mut b = b"1\r\na\r\n0\r\nX-T: ".to_vec();
        let start = b.len() - "X-T: ".len();
        b.resize(start + len - 4, b'v');
        b.extend_from_slice(b"\r\n\r\n");
        b
    };
    let out = decode_every_split(Framing::Chunked, 100, &body(MAX_TRAILERS)).unwrap();
    assert_eq!((out.payload.as_slice(), out.done), (&b"a"[..], true));
    assert!(matches!(
        decode_every_split(Framing::Chunked, 100, &body(MAX_TRAILERS + 1)),
        Err(ProtoError::BadChunk(_))
    ));
}

#[test]
fn cut_chunked_body_is_not_complete_at_eof() {
    let mut dec = BodyDecoder::new(Framing::Chunked, 100).unwrap();
    dec.decode(b"5\r\nhel").unwrap();
    assert!(!dec.is_done() && !dec.complete_at_eof());
}

#[test]
fn push_chunk_frames_data_and_skips_nothing() {
    let mut out = Vec::new();
    push_chunk(&mut out, b"hello");
    push_chunk(&mut out, b"");
    push_chunk(&mut out, &[b'x'; 16]);
    out.extend_from_slice(LAST_CHUNK);
    let mut want = b"5\r\nhello\r\n10\r\n".to_vec();
    want.extend_from_slice(&[b'x'; 16]);
    want.extend_from_slice(b"\r\n0\r\n\r\n");
    assert_eq!(
        out, want,
        "an empty piece adds no chunk (it would end the body)"
    );
}

// In-place chunks frame exactly as push_chunk does, after whatever was staged (a head,
// other chunks, in-place or not), for data at the size-line digit boundaries.
#[test]
fn chunks_written_in_place_frame_like_copied_ones() {
    let staged: [&[u8]; 3] = [b"", b"POST /_bulk HTTP/1.1\r\n\r\n", b"3\r\nabc\r\n"];
    for before in staged {
        for len in [1, 15, 16, 255, 256, 4095, 4096, 65535, 65536, 1 << 20] {
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut want = before.to_vec();
            push_chunk(&mut want, &data);
            push_chunk(&mut want, b"tail");
            let (mut out, mut start) = (before.to_vec(), 0);
            push_chunk_with(&mut out, &mut start, |o| {
                o.extend_from_slice(&data);
                Ok::<_, ()>(())
            })
            .unwrap();
            push_chunk_with(&mut out, &mut start, |o| {
                o.extend_from_slice(b"tail");
                Ok::<_, ()>(())
            })
            .unwrap();
            assert_eq!(&out[start..], &want[..], "{len} after {before:?}");
            // Nothing written: no chunk (an empty one would end the body).
            let (n, s) = (out.len(), start);
            push_chunk_with(&mut out, &mut start, |_| Ok::<_, ()>(())).unwrap();
            assert_eq!((out.len(), start), (n, s));
        }
    }
}

#[test]
fn a_failed_in_place_chunk_leaves_the_staged_bytes() {
    let mut out = b"head".to_vec();
    let mut start = 0;
    let r = push_chunk_with(&mut out, &mut start, |o| {
        o.extend_from_slice(b"partial");
        Err("refused")
    });
    assert_eq!(r, Err("refused"));
    assert_eq!((&out[..], start), (&b"head"[..], 0));
}

#[test]
fn chunk_size_line_encoding() {
    let mut out = [0u8; 18];
    assert_eq!(chunk_size_line(0, &mut out), b"0\r\n");
    assert_eq!(chunk_size_line(1, &mut out), b"1\r\n");
    assert_eq!(chunk_size_line(15, &mut out), b"f\r\n");
    assert_eq!(chunk_size_line(16, &mut out), b"10\r\n");
    assert_eq!(chunk_size_line(65536, &mut out), b"10000\r\n");
    assert_eq!(chunk_size_line(0xabcdef, &mut out), b"abcdef\r\n");
    assert_eq!(
        chunk_size_line(usize::MAX, &mut out),
        b"ffffffffffffffff\r\n"
    );
    assert_eq!(LAST_CHUNK, b"0\r\n\r\n");
}

#[test]
fn encoded_chunks_decode_back() {
    // Round trip: what the edge writes upstream is what the decoder reads.
    let payload: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    let mut wire = Vec::new();
    let mut line = [0u8; 18];
    for piece in payload.chunks(777) {
        wire.extend_from_slice(chunk_size_line(piece.len(), &mut line));
        wire.extend_from_slice(piece);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(LAST_CHUNK);
    let out = decode_every_split(Framing::Chunked, payload.len() as u64, &wire).unwrap();
    assert_eq!(out.payload, payload);
    assert_eq!(out.consumed, wire.len());
}
