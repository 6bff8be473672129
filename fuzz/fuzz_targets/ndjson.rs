//! The one NDJSON framer (`searchgate_core::ndjson`, through the edge's re-export
//! `searchgate::ndjson`) on arbitrary bytes, and its three users read against it: never
//! panics; the body fed whole, in three pieces at any cuts or byte by byte frames alike
//! (same lines, roles, keys, end, count); the edge's `_bulk` count is the framer's; the
//! engine's streamed `_bulk` items are the framed action/source pairs; and a body the
//! multitenant rewriter accepts has as many actions there as framed, and as many lines
//! out as framed lines.
#![no_main]

use std::io::BufReader;

use libfuzzer_sys::fuzz_target;
use searchgate::ndjson::{ActionKey, End, Format, Framer, Role};
use searchgate::policy::bulk::BulkCounter;
use searchgate::tenancy::{BulkRewriter, Prefix};
use searchgate_engine::ndjson::BulkLines;

type Line = (Role, usize, Vec<u8>, Option<ActionKey>);

fn frame(format: Format, pieces: &[&[u8]]) -> (Vec<Line>, End, u64) {
    let mut fr = Framer::new(format);
    let mut lines: Vec<Line> = Vec::new();
    for p in pieces {
        let r: Result<(), ()> = fr.feed(p, |s| {
            if s.first {
                lines.push((s.role, s.line, Vec::new(), None));
            }
            let cur = lines.last_mut().expect("a first segment");
            assert_eq!((cur.0, cur.1), (s.role, s.line));
            cur.2.extend_from_slice(s.bytes());
            cur.3 = s.key;
            Ok(())
        });
        r.unwrap();
    }
    (lines, fr.finish(), fr.actions())
}

fuzz_target!(|data: &[u8]| {
    let [mode, a, b, rest @ ..] = data else {
        return;
    };
    let format = if mode & 1 == 0 { Format::Bulk } else { Format::Msearch };
    let body = rest;
    let (mut x, mut y) = (usize::from(*a) % (body.len() + 1), usize::from(*b) % (body.len() + 1));
    if x > y {
        std::mem::swap(&mut x, &mut y);
    }
    let whole = frame(format, &[body]);
    assert_eq!(frame(format, &[&body[..x], &body[x..y], &body[y..]]), whole);
    if body.len() < 512 {
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(frame(format, &bytes), whole);
    }
    if format == Format::Msearch {
        return;
    }
    let mut counter = BulkCounter::new();
    counter.feed(&body[..x]);
    assert_eq!(counter.feed(&body[x..]), whole.2);

    // The engine: its items are the framed pairs (an action without its source dropped).
    if whole.1 != End::Unterminated {
        let mut items = Vec::new();
        let mut lines = BulkLines::new(u64::MAX);
        let mut rd = BufReader::with_capacity(usize::from(*a).max(1), body);
        while let Some(item) = lines.next_item(&mut rd).expect("a terminated body") {
            items.push(item);
        }
        let mut want = Vec::new();
        let mut it = whole.0.iter().peekable();
        while let Some((_, n, action, key)) = it.next() {
            if !key.expect("a key").has_source() {
                want.push((*n, action.clone(), None));
                continue;
            }
            let Some((_, _, source, _)) = it.next() else { break };
            let source = source.strip_suffix(b"\r").unwrap_or(source).to_vec();
            want.push((*n, action.clone(), Some(source)));
        }
        assert_eq!(items, want);
    }

    // The multitenant rewriter: what it accepts it read with the same lines.
    let prefix = Prefix::from_bytes(b"abcdefghijklmnopqrst-").unwrap();
    let mut rw = BulkRewriter::new(prefix, u64::MAX);
    let mut out = Vec::new();
    let accepted = rw.feed(&body[..x], &mut out).is_ok()
        && rw.feed(&body[x..], &mut out).is_ok()
        && rw.finish(&mut out).is_ok();
    if accepted {
        assert_eq!(whole.1, End::Complete);
        assert_eq!(rw.actions(), whole.2);
        assert_eq!(out.iter().filter(|&&c| c == b'\n').count(), whole.0.len());
    }
});
