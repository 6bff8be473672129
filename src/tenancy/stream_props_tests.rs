//! Differential property tests of the two streaming response filters a tenant's answer goes
//! through (spec 2.3, 4; attacks-16, review of 55be524): the prefix [`Stripper`] and the
//! [`SnippetRedactor`], each against a naive oracle written from its definition, over random
//! byte streams built from the pieces that stress a streaming searcher (whole patterns,
//! adjacent ones, proper starts and ends of the pattern, escapes) cut into random chunks
//! (empty ones included). Also the two composed as [`ResponseRewriter`] runs them, and the
//! shared static searcher of the redactor used from many threads at once.

use std::sync::Arc;

use proptest::prelude::*;
use proptest::sample::Index;

use super::prefix::tests::strip_stream as strip_chunks;
use super::prefix::{Prefix, Stripper, TenancyKey, PREFIX_LEN};
use super::response::{ResponsePlan, ResponseRewriter};
use super::snippets::SnippetRedactor;
use crate::request::classify::ResponseKind;

const MARKER: &[u8] = b"[Source: ";
const REPLACEMENT: &[u8] = b"[Source: REDACTED]";

/// Every occurrence of `p` removed, leftmost first, non-overlapping (not recursive: bytes
/// that come together around a removed occurrence are not searched again).
fn strip_oracle(p: &[u8], input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < input.len() {
        if input[i..].starts_with(p) {
            i += p.len();
        } else {
            out.push(input[i]);
            i += 1;
        }
    }
    out
}

/// From each `[Source: ` to the first `"` not escaped by a backslash after it, replaced by
/// `[Source: REDACTED]` (the quote kept); a snippet with no end drops the rest of the body.
fn redact_oracle(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < input.len() {
        if !input[i..].starts_with(MARKER) {
            out.push(input[i]);
            i += 1;
            continue;
        }
        let mut j = i + MARKER.len();
        let mut escaped = false;
        loop {
            match input.get(j) {
                None => return out,
                Some(_) if escaped => escaped = false,
                Some(b'\\') => escaped = true,
                Some(b'"') => break,
                Some(_) => {}
            }
            j += 1;
        }
        out.extend_from_slice(REPLACEMENT);
        i = j;
    }
    out
}

/// `input` cut at the (sorted, possibly repeated: empty chunks) positions `cuts` picks.
fn chunks<'a>(input: &'a [u8], cuts: &[Index]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
    at.sort_unstable();
    let mut out = Vec::new();
    let mut from = 0;
    for k in at {
        out.push(&input[from..k]);
        from = k;
    }
    out.push(&input[from..]);
    out
}

fn redact_chunks(parts: &[&[u8]]) -> Vec<u8> {
    let mut r = SnippetRedactor::new();
    let mut out = Vec::new();
    for c in parts {
        r.feed(c, &mut out);
    }
    r.finish(&mut out);
    out
}

/// Real derived prefixes and valid prefixes whose characters repeat (the carry's release
/// loop is exercised by a pattern whose starts recur inside it).
fn prefix() -> impl Strategy<Value = Prefix> {
    const FIXED: &[&str] = &[
        "aaaaaaaaaaaaaaaaaaaa-",
        "abababababababababab-",
        "aabaabaabaabaabaabaa-",
        "abcabcabcabcabcabcab-",
        "aaaaaaaaaaaaaaaaaaab-",
    ];
    prop_oneof![
        any::<u8>().prop_map(|n| Prefix::derive(&TenancyKey::from_bytes([n; 32]), "t")),
        proptest::sample::select(FIXED).prop_map(|s| Prefix::from_bytes(s.as_bytes()).unwrap()),
    ]
}

/// A piece of a stream around prefix `p`: the whole prefix, a proper start or end of it, a
/// slice from its middle, or bytes from its alphabet, `-`, JSON punctuation and any byte.
fn prefix_piece(p: Prefix) -> impl Strategy<Value = Vec<u8>> {
    let b = p.as_bytes().to_vec();
    let (b1, b2, b3, b4) = (b.clone(), b.clone(), b.clone(), b.clone());
    prop_oneof![
        4 => Just(b.clone()),
        3 => (1..PREFIX_LEN).prop_map(move |k| b1[..k].to_vec()),
        3 => (1..PREFIX_LEN).prop_map(move |k| b2[k..].to_vec()),
        1 => (0..PREFIX_LEN, 0..PREFIX_LEN)
            .prop_map(move |(x, y)| b3[x.min(y)..x.max(y)].to_vec()),
        3 => proptest::collection::vec(proptest::sample::select(b4), 1..4),
        2 => proptest::collection::vec(
            proptest::sample::select(&b"-\"[]:,{} \n"[..]), 1..3),
        1 => proptest::collection::vec(any::<u8>(), 1..4),
    ]
}

fn prefix_stream() -> impl Strategy<Value = (Prefix, Vec<u8>)> {
    prefix().prop_flat_map(|p| {
        proptest::collection::vec(prefix_piece(p), 0..24).prop_map(move |v| (p, v.concat()))
    })
}

/// A piece of a stream with snippets: the marker, proper starts of it, quotes, backslashes
/// (escaping a quote, a backslash, or the marker's first byte), and ordinary text.
fn snippet_piece() -> impl Strategy<Value = Vec<u8>> {
    const SPECIAL: &[&[u8]] = &[
        b"\"",
        b"\\",
        b"\\\"",
        b"\\\\",
        b"\\\\\"",
        b"\\[",
        b"(String)\"",
        b"]",
        b"REDACTED",
    ];
    prop_oneof![
        4 => Just(MARKER.to_vec()),
        3 => (1..MARKER.len()).prop_map(|k| MARKER[..k].to_vec()),
        2 => (1..MARKER.len()).prop_map(|k| MARKER[k..].to_vec()),
        3 => proptest::sample::select(SPECIAL).prop_map(<[u8]>::to_vec),
        3 => proptest::collection::vec(
            proptest::sample::select(&b"[Source: \"\\ax;\n"[..]), 1..4),
        1 => proptest::collection::vec(any::<u8>(), 1..4),
    ]
}

fn snippet_stream() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(snippet_piece(), 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(4000))]

    /// The stripper over any chunking equals the oracle over the whole stream.
    #[test]
    fn stripper_over_random_chunks_equals_the_oracle(
        (p, input) in prefix_stream(),
        cuts in proptest::collection::vec(any::<Index>(), 0..8),
    ) {
        let want = strip_oracle(p.as_bytes(), &input);
        prop_assert_eq!(&strip_chunks(p, &chunks(&input, &cuts)), &want);
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        prop_assert_eq!(&strip_chunks(p, &bytes), &want);
        let mut one_shot = Vec::new();
        p.strip_into(&input, &mut one_shot);
        prop_assert_eq!(&one_shot, &want);
        let s = Stripper::new(p);
        prop_assert_eq!(s.contains(&input), input.windows(PREFIX_LEN).any(|w| w == p.as_bytes()));
    }

    /// The redactor over any chunking equals the oracle over the whole stream.
    #[test]
    fn snippet_redactor_over_random_chunks_equals_the_oracle(
        input in snippet_stream(),
        cuts in proptest::collection::vec(any::<Index>(), 0..8),
    ) {
        let want = redact_oracle(&input);
        prop_assert_eq!(&redact_chunks(&chunks(&input, &cuts)), &want);
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        prop_assert_eq!(&redact_chunks(&bytes), &want);
    }

    /// A stripping response rewriter redacts, then strips: the two oracles composed, for
    /// streams holding both markers and prefix pieces.
    #[test]
    fn response_rewriter_is_redaction_then_stripping(
        (p, stripped) in prefix_stream(),
        snippets in snippet_stream(),
        mix in proptest::collection::vec(any::<bool>(), 0..48),
        cuts in proptest::collection::vec(any::<Index>(), 0..8),
    ) {
        // interleave the two streams' bytes in runs chosen by `mix`
        let (mut a, mut b) = (stripped.as_slice(), snippets.as_slice());
        let mut input = Vec::new();
        for (i, from_a) in mix.iter().enumerate() {
            let n = 1 + i % 7;
            let src = if *from_a { &mut a } else { &mut b };
            let k = n.min(src.len());
            input.extend_from_slice(&src[..k]);
            *src = &src[k..];
        }
        input.extend_from_slice(a);
        input.extend_from_slice(b);
        let want = strip_oracle(p.as_bytes(), &redact_oracle(&input));
        let plan = ResponsePlan { kind: ResponseKind::Strip, verbose: false, help: false, ids: None };
        let mut rw = ResponseRewriter::new(p, plan, 400, Some(b"application/json"), None);
        let mut out = Vec::new();
        for c in chunks(&input, &cuts) {
            rw.feed(c, &mut out);
        }
        rw.finish(&mut out);
        prop_assert_eq!(out, want);
    }
}

/// The oracles themselves, on hand-made cases (so a wrong oracle cannot pass everything).
#[test]
fn the_oracles_agree_with_hand_made_cases() {
    let p = b"aaaaaaaaaaaaaaaaaaaa-";
    assert_eq!(strip_oracle(p, b"aaaaaaaaaaaaaaaaaaaaaa-x"), b"aax");
    assert_eq!(strip_oracle(b"ab-", b"ab-ab-aab-b"), b"ab");
    // removal is not recursive: the halves around a removed prefix stay
    assert_eq!(strip_oracle(b"ab-", b"aab-b-"), b"ab-");
    assert_eq!(
        redact_oracle(br#"x[Source: (String)\"a\\\"b\\"c"#),
        br#"x[Source: REDACTED]"c"#
    );
    assert_eq!(redact_oracle(br#"[Source: \"open"#), b"");
    assert_eq!(
        redact_oracle(br#"[Sour[Source: "" [Source"#),
        br#"[Sour[Source: REDACTED]"" [Source"#
    );
}

/// The redactor's searcher is one static shared by every response: redactors made and fed
/// on many threads at once all give the oracle's answer, and the filters stay `Send`.
#[test]
fn the_shared_marker_searcher_is_safe_across_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<SnippetRedactor>();
    send_sync::<Stripper>();
    send_sync::<ResponseRewriter>();
    let body: Arc<Vec<u8>> = Arc::new(
        br#"{"error":{"reason":"bad at [Source: (String)\"{\\\"q\\\":1}\"; line: 1]","x":"[Sour"}}"#
            .repeat(50),
    );
    let want = redact_oracle(&body);
    assert!(!want.windows(10).any(|w| w == b"(String)\\\""));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let body = Arc::clone(&body);
            std::thread::spawn(move || {
                (0..50)
                    .map(|i| {
                        let step = 1 + (t * 7 + i) % 37;
                        redact_chunks(&body.chunks(step).collect::<Vec<_>>())
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for t in threads {
        for got in t.join().unwrap() {
            assert_eq!(got, want);
        }
    }
}

/// `Debug` of the filters (which may reach a log) does not show snippet bytes, and the
/// redactor's shows the marker searcher as before the change (a reference prints as its
/// target).
#[test]
fn debug_output_of_the_filters() {
    let mut r = SnippetRedactor::new();
    let mut out = Vec::new();
    r.feed(br#"a [Source: (String)\"secret-snippet"#, &mut out);
    let shown = format!("{r:?}");
    assert!(!shown.contains("secret-snippet"), "{shown}");
    assert!(shown.contains("finder: Finder"), "{shown}");
    assert_eq!(out, b"a ");
}
