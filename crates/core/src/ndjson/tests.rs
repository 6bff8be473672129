//! The framer: tables of bodies (Elasticsearch 7.10's readings), every split point, the
//! first-key reader, and random bodies in random pieces against a plain whole-body reading.

use super::*;
use proptest::prelude::*;

/// What a body frames into: (role, line number, the line's bytes, key) per line, and how
/// it ended.
type Framed = (Vec<(Role, usize, Vec<u8>, Option<ActionKey>)>, End, u64);

fn frame(format: Format, body: &[u8], cuts: &[usize]) -> Framed {
    let mut fr = Framer::new(format);
    let mut lines: Vec<(Role, usize, Vec<u8>, Option<ActionKey>)> = Vec::new();
    let mut open = false;
    let mut last = 0;
    for &cut in cuts.iter().chain(std::iter::once(&body.len())) {
        let r: Result<(), ()> = fr.feed(&body[last..cut], |s| {
            if s.first {
                assert!(!open, "a line began before the last one ended");
                lines.push((s.role, s.line, Vec::new(), None));
            }
            let cur = lines.last_mut().expect("a line");
            assert_eq!((cur.0, cur.1), (s.role, s.line));
            cur.2.extend_from_slice(s.bytes());
            if let Some(w) = s.whole() {
                assert_eq!(w, s.bytes());
            }
            assert_eq!(s.with_newline().last() == Some(&b'\n'), s.end);
            open = !s.end;
            cur.3 = s.key;
            assert_eq!(s.key.is_some(), s.end && s.role == Role::Action);
            Ok(())
        });
        r.unwrap();
        last = cut;
    }
    (lines, fr.finish(), fr.actions())
}

fn bulk(body: &str) -> Framed {
    frame(Format::Bulk, body.as_bytes(), &[])
}

use ActionKey::*;
use Role::{Action as A, Source as S};

fn l(
    role: Role,
    n: usize,
    text: &str,
    key: Option<ActionKey>,
) -> (Role, usize, Vec<u8>, Option<ActionKey>) {
    (role, n, text.as_bytes().to_vec(), key)
}

// spec 4.1 (bulk): action and source lines; `delete` has none; blank action lines skipped.
#[test]
fn bulk_table() {
    let i = r#"{"index":{"_index":"a"}}"#;
    let d = r#"{"delete":{"_id":"1"}}"#;
    let table: Vec<(String, Framed)> = vec![
        (String::new(), (vec![], End::Complete, 0)),
        ("\n \n\t\r\n".into(), (vec![], End::Complete, 0)),
        (
            format!("{i}\n{{}}\n"),
            (
                vec![l(A, 1, i, Some(Index)), l(S, 2, "{}", None)],
                End::Complete,
                1,
            ),
        ),
        (
            format!("\n  {d}\r\n{i}\n\n"),
            (
                vec![
                    l(A, 2, &format!("{d}\r"), Some(Delete)),
                    l(A, 3, i, Some(Index)),
                    // a blank source line is the source: the framing does not shift
                    l(S, 4, "", None),
                ],
                End::Complete,
                2,
            ),
        ),
        (
            format!("{i}\n"),
            (
                vec![l(A, 1, i, Some(Index))],
                End::MissingSource { line: 1 },
                1,
            ),
        ),
        (
            format!("{i}\n{{}}"),
            (
                vec![l(A, 1, i, Some(Index)), l(S, 2, "{}", None)],
                End::Unterminated,
                1,
            ),
        ),
        (
            format!("{d}\n  "),
            (vec![l(A, 1, d, Some(Delete))], End::Unterminated, 1),
        ),
        (
            "not json\nsource\n{\"delete\":{}}\n".into(),
            (
                vec![
                    l(A, 1, "not json", Some(Unreadable)),
                    l(S, 2, "source", None),
                    l(A, 3, "{\"delete\":{}}", Some(Delete)),
                ],
                End::Complete,
                2,
            ),
        ),
    ];
    for (body, want) in table {
        for cut in 0..=body.len() {
            assert_eq!(
                frame(Format::Bulk, body.as_bytes(), &[cut]),
                want,
                "{body:?} cut at {cut}"
            );
        }
        let every: Vec<usize> = (1..body.len()).collect();
        assert_eq!(
            frame(Format::Bulk, body.as_bytes(), &every),
            want,
            "{body:?} byte by byte"
        );
    }
}

// spec 4.1 (msearch): header and body lines alternate; a first `\n` is skipped.
#[test]
fn msearch_table() {
    use Role::{Body as B, Header as H};
    let table: Vec<(&str, Framed)> = vec![
        (
            "{}\n{}\n",
            (
                vec![l(H, 1, "{}", None), l(B, 2, "{}", None)],
                End::Complete,
                1,
            ),
        ),
        (
            "\n{}\n{}\n",
            (
                vec![l(H, 1, "{}", None), l(B, 2, "{}", None)],
                End::Complete,
                1,
            ),
        ),
        (
            "  \n{\"query\":{}}\n{\"index\":\"b\"}\n{}\n",
            (
                vec![
                    l(H, 1, "  ", None),
                    l(B, 2, "{\"query\":{}}", None),
                    l(H, 3, "{\"index\":\"b\"}", None),
                    l(B, 4, "{}", None),
                ],
                End::Complete,
                2,
            ),
        ),
        (
            "\n\n{}\n",
            (
                vec![l(H, 1, "", None), l(B, 2, "{}", None)],
                End::Complete,
                1,
            ),
        ),
        (
            "{}\n{}",
            (
                vec![l(H, 1, "{}", None), l(B, 2, "{}", None)],
                End::Unterminated,
                1,
            ),
        ),
        (
            "{}\n{}\n{}\n",
            (
                vec![
                    l(H, 1, "{}", None),
                    l(B, 2, "{}", None),
                    l(H, 3, "{}", None),
                ],
                End::MissingSource { line: 3 },
                2,
            ),
        ),
        ("\n", (vec![], End::Complete, 0)),
    ];
    for (body, want) in table {
        for cut in 0..=body.len() {
            assert_eq!(
                frame(Format::Msearch, body.as_bytes(), &[cut]),
                want,
                "{body:?} cut at {cut}"
            );
        }
    }
}

/// The key of one action line, read whole and byte by byte.
fn key_of(line: &[u8]) -> ActionKey {
    let whole = bulk(std::str::from_utf8(&[line, b"\n"].concat()).unwrap_or(""));
    let mut r = KeyReader::default();
    let mut got = None;
    for b in line {
        got = got.or(r.feed(std::slice::from_ref(b)));
    }
    let bytewise = got.unwrap_or_else(|| r.finish());
    if let Ok(text) = std::str::from_utf8(line) {
        assert_eq!(whole.0[0].3, Some(bytewise), "{text}");
    }
    bytewise
}

// The first key as Elasticsearch's parser (Jackson, comments allowed) reads it.
#[test]
fn first_key_table() {
    let table: &[(&[u8], ActionKey)] = &[
        (b"{\"index\":{}}", Index),
        (b"{\"create\":{}}", Create),
        (b"{\"update\":{}}", Update),
        (b"{\"delete\":{}}", Delete),
        (b"{\"deleted\":{}}", Other),
        (b"{\"delete\"", Delete),
        (b"{ \"delete\" : {}}", Delete),
        (b"\t{\r\"delete\":{}}", Delete),
        (b"{\"\\u0064elete\":{}}", Delete),
        (b"{\"d\\u0065l\\u0065t\\u0065\":{}}", Delete),
        (
            b"{\"\\u0064\\u0065\\u006c\\u0065\\u0074\\u0065\":{}}",
            Delete,
        ),
        (b"{\"a\\\"b\":{}}", Other),
        (b"{\"\\x\":{}}", Unreadable),
        (b"{/* c */\"delete\":{}}", Delete),
        (b"/**/{/***/\"delete\":{}}", Delete),
        (b"{/* \"index\" */\"delete\":{}}", Delete),
        (b"{// \"delete\":{}}", Unreadable),
        (b"\xEF\xBB\xBF{\"delete\":{}}", Delete),
        (b"\xEF\xBB{\"delete\":{}}", Unreadable),
        (b"\x00{\x00\"\x00d", Wide),
        (b"{\x00\"\x00d\x00", Wide),
        (b"\xFE\xFF\x00{", Wide),
        (b"[\"delete\"]", Unreadable),
        (b"{}", Unreadable),
        (b"{\"", Unreadable),
        (b"garbage", Unreadable),
        (b"{\"index\" x", Index),
    ];
    for (line, want) in table {
        assert_eq!(key_of(line), *want, "{}", String::from_utf8_lossy(line));
    }
    let long = format!("{{\"{}\":{{}}}}", "d".repeat(60));
    assert_eq!(key_of(long.as_bytes()), Other);
    let spaced = format!("{{{}\"delete\":{{}}}}", " ".repeat(200));
    assert_eq!(
        key_of(spaced.as_bytes()),
        Delete,
        "blank space of any length"
    );
}

// What follows a key: a source line for every key but delete (and a wide line).
#[test]
fn what_follows_each_key() {
    for (k, source) in [
        (Index, true),
        (Create, true),
        (Update, true),
        (Delete, false),
        (Other, true),
        (Unreadable, true),
        (Wide, false),
    ] {
        assert_eq!(k.has_source(), source, "{k:?}");
    }
}

#[test]
fn empty_pieces_change_nothing() {
    let body = b"{\"index\":{}}\n{}\n";
    let mut fr = Framer::new(Format::Msearch);
    assert_eq!(fr.count(b""), 0);
    assert_eq!(
        fr.count(b"\n"),
        0,
        "the first byte is still the body's first"
    );
    let mut fr = Framer::new(Format::Bulk);
    for piece in [&b""[..], &body[..5], b"", &body[5..], b""] {
        fr.count(piece);
    }
    assert_eq!(
        (fr.actions(), fr.finish(), fr.lines()),
        (1, End::Complete, 2)
    );
}

/// The plain reading of a whole body: split at `\n`, blank action lines skipped, each
/// action's key read from the whole line, the next line its source unless it has none.
fn reference(body: &[u8]) -> Framed {
    let mut lines = Vec::new();
    let mut parts: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    let tail = parts.pop().unwrap_or_default();
    let mut source = false;
    for (n, line) in parts.into_iter().enumerate() {
        if source {
            lines.push((S, n + 1, line.to_vec(), None));
            source = false;
            continue;
        }
        let Some(s) = line.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\r')) else {
            continue;
        };
        let mut r = KeyReader::default();
        let key = r.feed(&line[s..]).unwrap_or_else(|| r.finish());
        source = key.has_source();
        lines.push((A, n + 1, line[s..].to_vec(), Some(key)));
    }
    let n = body.iter().filter(|&&b| b == b'\n').count() + 1;
    let end = match (tail.is_empty(), source) {
        (false, _) => End::Unterminated,
        (true, true) => End::MissingSource {
            line: lines.last().map_or(0, |l| l.1),
        },
        (true, false) => End::Complete,
    };
    // An unterminated line is handed over as far as it goes (an action line from its
    // first byte that is not blank space), without a key.
    if source && !tail.is_empty() {
        lines.push((S, n, tail.to_vec(), None));
    } else if let Some(s) = tail.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\r')) {
        lines.push((A, n, tail[s..].to_vec(), None));
    }
    let actions = lines.iter().filter(|l| l.0 == A).count() as u64;
    (lines, end, actions)
}

fn line_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"{\"index\":{\"_id\":\"1\"}}\n".to_vec()),
        Just(b"{\"delete\":{\"_id\":\"1\"}}\n".to_vec()),
        Just(b"{\"create\":{}}\n".to_vec()),
        Just(b" { \"update\" : {} }\r\n".to_vec()),
        Just(b"{\"\\u0064elete\":{}}\n".to_vec()),
        Just(b"{/**/\"delete\":{}}\n".to_vec()),
        Just(b"{\"deleted\":{}}\n".to_vec()),
        Just(b"{\"delete\"\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b" \r\n".to_vec()),
        Just(b"\x00{\n".to_vec()),
        (0usize..300).prop_map(|n| [&b"{\"f\":\""[..], &vec![b'x'; n], b"\"}\n"].concat()),
        proptest::collection::vec(any::<u8>(), 0..40),
    ]
}

proptest! {
    /// Random bodies in random pieces: the streamed framing is the plain reading's.
    #[test]
    fn random_bodies_in_random_pieces(
        lines in proptest::collection::vec(line_strategy(), 0..30),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let body = lines.concat();
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(body.len() + 1)).collect();
        cuts.sort_unstable();
        let want = reference(&body);
        prop_assert_eq!(frame(Format::Bulk, &body, &cuts), want.clone());
        let mut fr = Framer::new(Format::Bulk);
        let mut last = 0;
        for &c in &cuts {
            fr.count(&body[last..c]);
            last = c;
        }
        prop_assert_eq!(fr.count(&body[last..]), want.2);
    }
}

#[test]
fn newline_masks_match_a_plain_scan() {
    use super::newlines::Newlines;
    let mut data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 13) as u8).collect();
    for (i, b) in data.iter_mut().enumerate() {
        if i % 13 == 0 || i % 64 == 63 {
            *b = b'\n';
        }
    }
    for start in [0, 1, 17, 63, 64, 500, 999, 1000] {
        let plain: Vec<usize> = (start..data.len()).filter(|&i| data[i] == b'\n').collect();
        assert_eq!(
            Newlines::new(&data, start).collect::<Vec<_>>(),
            plain,
            "from {start}"
        );
        let mut far = Newlines::new(&data, start);
        let mut got = Vec::new();
        while let Some(i) = far.next_far() {
            got.push(i);
        }
        assert_eq!(got, plain, "next_far from {start}");
    }
}
