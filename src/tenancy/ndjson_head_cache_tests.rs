//! attack17: the `_bulk` head cache (`references::bulk_heads::HeadCache`) seen from the
//! body of a multitenant cluster (spec 1.6; spec 4.1, the `_bulk` body; spec 1.5, the
//! whitelisted auto-created names; the guide's "one reading of every byte"; the 413 at
//! the plan's `max_bulk_actions + 1`). Generated bodies, fed in random chunks, are rewritten
//! by the rewriter with the cache and by the same rewriter with it switched off: the two
//! must write the same bytes, refuse alike, count the same actions and report the same
//! auto-created names; and both must agree with the plain strict reading
//! (`tests::bulk_oracle_max`).
//!
//! The bodies are built to attack the cache: lines sharing a head, heads that are prefixes
//! of each other or longer than the cache keeps (256 bytes and around), heads whose
//! `_index` is refused (`_x`, `a,b`, `a:b`), duplicate keys after the head, values with
//! quotes, escapes, `}}`, control and non-ASCII bytes or a newline, `\r` variants, and
//! documents that are themselves action lines with the cached head (an index/delete
//! parity error would read one as an action).

use proptest::prelude::*;

use super::tests::{bulk_oracle_max, prefix};
use super::*;
use crate::tenancy::references::bulk_heads::tests as line_level;

/// A head of `len` bytes: `{"index":{"_index":"site","routing":"rrr…","_id":"`.
fn long_head(len: usize) -> String {
    let fixed = r#"{"index":{"_index":"site","routing":"","_id":""#.len();
    format!(
        r#"{{"index":{{"_index":"site","routing":"{}","_id":""#,
        "r".repeat(len - fixed)
    )
}

/// Heads of action lines (the line's bytes up to its last value), learnable or not.
fn head() -> impl Strategy<Value = String> {
    let fixed = prop_oneof![
        8 => Just(r#"{"index":{"_index":"site","_type":"doc","_id":""#),
        3 => Just(r#"{"index":{"_index":"site","_id":""#),
        2 => Just(r#"{"index":{"_id":""#),
        1 => Just(r#"{"index":{"_id":"1","routing":""#),
        3 => Just(r#"{"delete":{"_index":"site","_id":""#),
        2 => Just(r#"{"update":{"_index":"site","_id":""#),
        2 => Just(r#"{"create":{"_index":"logstash-1","_id":""#),
        1 => Just(r#"{"create":{"_index":"logstash-2","_id":""#),
        1 => Just(r#"{"index":{"_index":"logstash-3","op_type":""#),
        1 => Just(r#"{"index":{"_index":"_x","_id":""#),
        1 => Just(r#"{"index":{"_index":"a,b","_id":""#),
        1 => Just(r#"{"index":{"_index":"a:b","_id":""#),
        1 => Just(r#"{"delete":{"_index":"site","_id":"1","_index":""#),
        1 => Just(r#"{"index":{"_index":""#),
        1 => Just(r#"{ "index":{"_index":"site","_id":""#),
        1 => Just(r#"{"index":{"_index":"café","_id":""#),
        1 => Just(r#"{"index":{"_index":"site","version":1,"_id":""#),
    ]
    .prop_map(str::to_string);
    prop_oneof![
        12 => fixed,
        1 => prop_oneof![Just(255usize), Just(256), Just(257), Just(300)].prop_map(long_head),
    ]
}

/// The last value's bytes: mostly plain, else the line-level tests' hostile ones, or a
/// newline (raw, or ending the line and starting a `delete`).
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        130 => "[a-z0-9_.-]{0,10}",
        20 => line_level::value(),
        1 => Just("a\nb".to_string()),
        1 => Just("a\"}}\n{\"delete\":{\"_index\":\"site\",\"_id\":\"b".to_string()),
    ]
}

/// What follows the last value on its line: mostly `"}}`, else the line-level tests'.
fn after() -> impl Strategy<Value = &'static str> {
    prop_oneof![130 => Just("\"}}"), 20 => line_level::after()]
}

fn eol() -> impl Strategy<Value = &'static str> {
    prop_oneof![24 => Just("\n"), 4 => Just("\r\n"), 1 => Just("\r\r\n"), 1 => Just("\n\n")]
}

/// An action line with `head`, its end included.
fn action_with(head: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    (head, value(), after(), eol()).prop_map(|(h, v, a, e)| format!("{h}{v}{a}{e}"))
}

/// An action line, its end included.
fn action() -> impl Strategy<Value = String> {
    action_with(head())
}

/// A source line: mostly a document, sometimes an action line sharing the body's heads.
fn source() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => (0u32..100, eol()).prop_map(|(i, e)| format!("{{\"title\":\"page {i}\"}}{e}")),
        3 => action(),
        2 => Just("{\"doc\":{\"a\":1}}\n".to_string()),
        1 => Just(" \n".to_string()),
        1 => Just("{\"a\":\"b\\r\"}\r\n".to_string()),
    ]
}

/// A body: action lines, mostly with one of the body's two heads, each followed by a
/// source line with probability 0.95 for index/create/update and 0.05 for delete (so
/// parity is mostly kept, sometimes broken), and a tail.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let tail = prop_oneof![
        8 => Just(String::new()),
        1 => Just("{\"index\":{}}".to_string()),
        1 => Just("\r".to_string()),
        1 => (head(), value()).prop_map(|(h, v)| format!("{h}{v}\"}}}}")),
    ];
    (head(), head(), tail).prop_flat_map(|(h0, h1, tail)| {
        let one = prop_oneof![
            8 => action_with(Just(h0.clone())),
            3 => action_with(Just(h1.clone())),
            1 => action(),
        ];
        let item = (one, source(), 0.0..1.0f64);
        proptest::collection::vec(item, 1..20).prop_map(move |items| {
            let mut body = String::new();
            for (a, s, p) in items {
                let delete = a.starts_with("{\"delete\"");
                body.push_str(&a);
                if (!delete && p < 0.95) || (delete && p < 0.05) {
                    body.push_str(&s);
                }
            }
            body.push_str(&tail);
            body.into_bytes()
        })
    })
}

/// What a rewriter did with a body: its result, the bytes written (even when it refused:
/// the same for one chunking with and without the cache; across chunkings they may differ,
/// the fast path writing a line before counting it, and the edge drops a refused chunk),
/// the actions counted, the names to auto-create, and the lines the cache answered.
#[derive(Debug, PartialEq)]
struct Outcome {
    result: Result<(), EdgeError>,
    out: Vec<u8>,
    actions: u64,
    candidates: Vec<Vec<u8>>,
    hits: usize,
}

fn rewrite(chunks: &[&[u8]], max_actions: u64, cache: bool) -> Outcome {
    let mut rw = BulkRewriter::new(prefix(), max_actions);
    rw.st.heads.off = !cache;
    let mut out = Vec::new();
    let result = chunks
        .iter()
        .try_for_each(|c| rw.feed(c, &mut out))
        .and_then(|()| rw.finish(&mut out));
    Outcome {
        result,
        out,
        actions: rw.actions(),
        candidates: rw.auto_create_candidates().to_vec(),
        hits: rw.st.heads.hits,
    }
}

fn chunked<'b>(body: &'b [u8], cuts: &[prop::sample::Index]) -> Vec<&'b [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(body.len() + 1)).collect();
    at.sort_unstable();
    let (mut chunks, mut from) = (Vec::new(), 0);
    for k in at {
        chunks.push(&body[from..k]);
        from = k;
    }
    chunks.push(&body[from..]);
    chunks
}

/// Compares the three readings of `body` cut at `cuts`; returns the cache's hits.
fn compare(
    body: &[u8],
    cuts: &[prop::sample::Index],
    max_actions: u64,
) -> Result<usize, TestCaseError> {
    let chunks = chunked(body, cuts);
    let with = rewrite(&chunks, max_actions, true);
    let mut without = rewrite(&chunks, max_actions, false);
    let shown = String::from_utf8_lossy(body);
    prop_assert_eq!(without.hits, 0);
    without.hits = with.hits;
    prop_assert_eq!(&with, &without, "{:?} in {} chunks", shown, chunks.len());
    let want = bulk_oracle_max(body, max_actions);
    let got = with.result.clone().map(|()| with.out.clone());
    prop_assert_eq!(got, want, "{:?} in {} chunks", shown, chunks.len());
    Ok(with.hits)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn attack17_bodies_read_alike_with_and_without_the_head_cache(
        body in body(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        max_actions in prop_oneof![3 => Just(1000u64), 1 => 1u64..12],
    ) {
        compare(&body, &cuts, max_actions)?;
    }
}

/// The generated bodies do exercise the cache: a good share of their action lines are
/// answered from it (a differential test that never hits proves nothing).
#[test]
fn attack17_generated_bodies_hit_the_cache() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut hits, mut bodies_hit) = (0, 0);
    for _ in 0..300 {
        let body = body().new_tree(&mut runner).unwrap().current();
        let h = compare(&body, &[], 1000).unwrap();
        hits += h;
        bodies_hit += usize::from(h > 0);
    }
    eprintln!("{hits} lines answered from the cache in {bodies_hit} of 300 bodies");
    assert!(bodies_hit > 100, "{bodies_hit} of 300 bodies hit the cache");
}

/// Edges, each at every split point and with the cache on and off (table):
/// the head at the cache's limit (256 bytes kept, 257 not), a refused `_index` in a head
/// that matches the cached one up to the name, a document line with the cached head
/// after an index action (a document, streamed as sent) and after a delete (an action,
/// rewritten), and the 413 counted on cached lines at N and N + 1.
#[test]
fn attack17_edges_of_the_head_cache() {
    let line = |head: &str, id: &str| format!("{head}{id}\"}}}}\n");
    let at256 = long_head(256);
    let at257 = long_head(257);
    let doc = "{\"index\":{\"_index\":\"site\",\"_id\":\"3\"}}\n";
    let del = "{\"delete\":{\"_index\":\"site\",\"_id\":\"";
    let cases: Vec<(String, u64, bool)> = vec![
        // body, max actions, whether the cache answers a line (with the body whole)
        (
            format!("{}{}", line(&at256, "1"), line(&at256, "2")).replace("\"}}\n", "\"}}\n{}\n"),
            1000,
            true,
        ),
        (
            format!("{}{}", line(&at257, "1"), line(&at257, "2")).replace("\"}}\n", "\"}}\n{}\n"),
            1000,
            false,
        ),
        (
            format!(
                "{}{}",
                line(del, "1"),
                line(r#"{"delete":{"_index":"s:te","_id":""#, "2")
            ),
            1000,
            false,
        ),
        (
            format!("{}{}{doc}", line(del, "1"), line(del, "2")),
            1000,
            true,
        ),
        (format!("{doc}{doc}{doc}{doc}"), 1000, true),
        (
            format!("{}{}{}", line(del, "1"), line(del, "2"), line(del, "3")),
            3,
            true,
        ),
        (
            format!("{}{}{}", line(del, "1"), line(del, "2"), line(del, "3")),
            2,
            true,
        ),
    ];
    for (body, max, hits) in &cases {
        let b = body.as_bytes();
        let whole = rewrite(&[b], *max, true);
        assert_eq!(whole.hits > 0, *hits, "{body:?}");
        assert_eq!(
            whole.result.clone().map(|()| whole.out.clone()),
            bulk_oracle_max(b, *max),
            "{body:?}"
        );
        for i in 0..=b.len() {
            for cache in [true, false] {
                let split = rewrite(&[&b[..i], &b[i..]], *max, cache);
                let got = split.result.map(|()| split.out);
                let want = whole.result.clone().map(|()| whole.out.clone());
                assert_eq!(got, want, "{body:?} split at {i}, cache {cache}");
                assert_eq!(split.actions, whole.actions, "{body:?} split at {i}");
                assert_eq!(split.candidates, whole.candidates, "{body:?} split at {i}");
            }
        }
    }
}

/// Lines read from kept heads through the rewriter: documents and action lines left where
/// they lie come out as the reader writes them, in one chunk and cut anywhere.
#[test]
fn lines_left_in_place_read_as_written() {
    let p = prefix();
    let body = "{\"index\":{\"_index\":\"site\",\"_id\":\"1\"}}\n{\"a\":1}\n\
                {\"index\":{\"_index\":\"site\",\"_id\":\"2\"}}\r\n{\"a\":2}\r\n\
                {\"delete\":{\"_index\":\"site\",\"_id\":\"3\"}}\n  \n\
                {\"index\":{\"_index\":\"site\",\"_id\":\"4\"}}\n{\"a\":4}\n";
    let mut want = String::new();
    for (id, doc) in [
        ("1", Some("1")),
        ("2", Some("2")),
        ("3", None),
        ("4", Some("4")),
    ] {
        let action = if doc.is_some() { "index" } else { "delete" };
        want.push_str(&format!(
            "{{\"{action}\":{{\"_index\":\"{}site\",\"_id\":\"{id}\"}}}}\n",
            p.as_str()
        ));
        if let Some(d) = doc {
            want.push_str(&format!("{{\"a\":{d}}}\n"));
        }
    }
    for cut in 0..=body.len() {
        let mut rw = BulkRewriter::new(p, 100);
        let mut out = Vec::new();
        rw.feed(&body.as_bytes()[..cut], &mut out).unwrap();
        rw.feed(&body.as_bytes()[cut..], &mut out).unwrap();
        rw.finish(&mut out).unwrap();
        if cut == 0 {
            assert_eq!(rw.st.heads.hits, 2, "lines 2 and 4 read from kept heads");
        }
        assert_eq!(String::from_utf8(out).unwrap(), want, "cut at {cut}");
    }
}
