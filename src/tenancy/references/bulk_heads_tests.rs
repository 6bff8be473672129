//! The head cache against the reader without it (issue 15, spec 1.6): along generated
//! bodies, line after line, [`bulk_action_fast_cached`] answers exactly what
//! [`bulk_action_fast_at`] answers (the same action, auto-created name, bytes taken, bytes
//! written, or the same `None` with `out` untouched), whether the cache answered or not.
//! The bodies mix lines sharing a few heads (compact, spaced, non-ASCII, heads that start
//! other heads) with ones that differ from them right after the head (quotes, escapes,
//! control and non-ASCII bytes, more keys, a second `_index`, spaces, cuts) and with the
//! general generator's lines.

use proptest::prelude::*;

use super::super::bulk_fast::bulk_action_fast_at;
use super::super::bulk_fast::tests::{line, line_end, tenant, tenant_prefix};
use super::super::docs::BulkAction;
use super::*;

/// Heads of action lines: kept ones (compact, spaced, non-ASCII, one starting another) and
/// lines the reader refuses or that have no head (refused names, duplicate keys).
fn head() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        8 => Just(r#"{"index":{"_index":"site","_type":"doc","_id":""#),
        3 => Just(r#"{"create":{"_index":"logstash-1","_id":""#),
        3 => Just(r#"{"delete":{"_index":"site","_id":""#),
        2 => Just(r#"{"update":{"_id":"1","routing":""#),
        2 => Just(r#"{"index":{"_id":""#),
        1 => Just(r#"{"index":{"_index":"café","_id":""#),
        1 => Just(r#"{ "index":{"_index":"site","_id":""#),
        1 => Just(r#"{"index": {"_index": "site", "_id": ""#),
        1 => Just("{\"index\":{\"_index\":\"site\",\t\"_id\":\""),
        1 => Just(r#"{"index":{"_id":"1","routing":""#),
        1 => Just(r#"{"index":{"_index":"_x","_id":""#),
        1 => Just(r#"{"index":{"_index":"a,b","_id":""#),
        1 => Just(r#"{"index":{"_index":""#),
        1 => Just(r#"{"index":{"_id":"1","_index":""#),
        1 => Just(r#"{"index":{"_index":"site","_id":"x","_id":""#),
        1 => Just(r#"{"index":{"_index":"site","version":1,"_id":""#),
    ]
}

/// The last value's bytes, mostly plain.
pub(crate) fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        20 => "[a-z0-9_.-]{0,14}",
        1 => Just("a\"b".to_string()),
        1 => Just("a\\\"b".to_string()),
        1 => Just("a\\nb".to_string()),
        1 => Just("a\u{1}b".to_string()),
        1 => Just("é".to_string()),
        1 => Just("\u{7f}".to_string()),
        1 => Just("a b".to_string()),
        1 => Just("a}}".to_string()),
        1 => Just("a\tb".to_string()),
    ]
}

/// What follows the last value.
pub(crate) fn after() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        20 => Just("\"}}"),
        1 => Just("\"} }"),
        1 => Just("\" }}"),
        1 => Just("\"}} "),
        1 => Just("\"}}}"),
        1 => Just("\"}"),
        1 => Just("\""),
        1 => Just(""),
        1 => Just("\",\"routing\":\"r\"}}"),
        1 => Just("\",\"_index\":\"other\"}}"),
        1 => Just("\",\"_id\":\"again\"}}"),
        1 => Just("\"},\"delete\":{}}"),
    ]
}

/// A body: lines (mostly sharing one of the body's three heads) with their ends, and
/// where each line starts.
fn body() -> impl Strategy<Value = (Vec<u8>, Vec<usize>)> {
    // A line: one of the body's three heads (the first most often) with a value and what
    // follows it, or a line of the general generator.
    let one = prop_oneof![
        12 => (0usize..4, value(), after())
            .prop_map(|(h, v, a)| (Some(h.min(2)), format!("{v}{a}").into_bytes())),
        1 => line().prop_map(|l| (None, l)),
    ];
    let ends = prop_oneof![
        8 => Just(&b"\n"[..]),
        2 => Just(&b"\r\n"[..]),
        1 => line_end(),
    ];
    let lines = proptest::collection::vec((one, ends), 1..16);
    (head(), head(), head(), lines).prop_map(|(h0, h1, h2, lines)| {
        let heads = [h0, h1, h2];
        let (mut body, mut starts) = (Vec::new(), Vec::new());
        for ((h, rest), end) in lines {
            starts.push(body.len());
            body.extend_from_slice(h.map_or("", |i| heads[i]).as_bytes());
            body.extend_from_slice(&rest);
            body.extend_from_slice(end);
        }
        (body, starts)
    })
}

/// Reads every line of `body` with and without the cache; returns how many lines the
/// cache answered.
fn walk(body: &[u8], starts: &[usize]) -> Result<usize, TestCaseError> {
    let p = tenant_prefix();
    let t = tenant(&p);
    let mut cache = HeadCache::default();
    let mut hits = 0;
    for &at in starts {
        let rest = &body[at..];
        let mut plain_out = b"before|".to_vec();
        let plain = bulk_action_fast_at(&t, rest, &mut plain_out);
        let mut probe = Vec::new();
        hits += usize::from(cache.read(rest, &mut probe).is_some());
        let mut cached_out = b"before|".to_vec();
        let cached = bulk_action_fast_cached(&t, rest, &mut cached_out, &mut cache);
        prop_assert_eq!(&cached, &plain, "{:?}", String::from_utf8_lossy(rest));
        prop_assert_eq!(
            &cached_out,
            &plain_out,
            "{:?}",
            String::from_utf8_lossy(rest)
        );
    }
    Ok(hits)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn the_cache_reads_every_line_as_the_reader_does((body, starts) in body()) {
        walk(&body, &starts)?;
    }
}

/// The generated bodies exercise the cache: it answers a good share of the lines, not all.
#[test]
fn the_generated_bodies_hit_and_miss_the_cache() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut hits, mut lines) = (0, 0);
    for _ in 0..1000 {
        let (body, starts) = body().new_tree(&mut runner).unwrap().current();
        hits += walk(&body, &starts).unwrap();
        lines += starts.len();
    }
    eprintln!("the cache answered {hits} of {lines} lines");
    assert!(hits * 10 > lines, "{hits} of {lines}");
    assert!(hits * 10 < lines * 9, "{hits} of {lines}");
}

/// The load test's lines: after the first, every one is answered from the cache, and
/// written as the reader writes it; a line with another head is read whole and becomes
/// the cached one; a line the reader leaves clears nothing it would not.
#[test]
fn consecutive_lines_with_one_head_are_read_from_the_cache() {
    let p = tenant_prefix();
    let t = tenant(&p);
    let mut cache = HeadCache::default();
    let table: &[(&str, bool, Option<&str>)] = &[
        // line (with its end), answered by the cache?, written
        (
            "{\"index\":{\"_index\":\"site\",\"_type\":\"doc\",\"_id\":\"page-1\"}}\n",
            false,
            Some(r#"{"index":{"_index":"P:site","_type":"doc","_id":"page-1"}}"#),
        ),
        (
            "{\"index\":{\"_index\":\"site\",\"_type\":\"doc\",\"_id\":\"page-2\"}}\r\n",
            true,
            Some(r#"{"index":{"_index":"P:site","_type":"doc","_id":"page-2"}}"#),
        ),
        // An escape in the value: the reader leaves it to the strict reader.
        (
            "{\"index\":{\"_index\":\"site\",\"_type\":\"doc\",\"_id\":\"a\\\"b\"}}\n",
            false,
            None,
        ),
        (
            "{\"index\":{\"_index\":\"site\",\"_type\":\"doc\",\"_id\":\"\"}}\n",
            true,
            Some(r#"{"index":{"_index":"P:site","_type":"doc","_id":""}}"#),
        ),
        // Another head (a delete): read whole, then cached.
        (
            "{\"delete\":{\"_index\":\"site\",\"_id\":\"9\"}}\n",
            false,
            Some(r#"{"delete":{"_index":"P:site","_id":"9"}}"#),
        ),
        (
            "{\"delete\":{\"_index\":\"site\",\"_id\":\"10\"}}\n",
            true,
            Some(r#"{"delete":{"_index":"P:site","_id":"10"}}"#),
        ),
        // A second `_index` after the head's keys: read whole, refused by the reader.
        (
            "{\"delete\":{\"_index\":\"site\",\"_id\":\"1\",\"_index\":\"x\"}}\n",
            false,
            None,
        ),
        // The first head is still kept.
        (
            "{\"index\":{\"_index\":\"site\",\"_type\":\"doc\",\"_id\":\"page-3\"}}\n",
            true,
            Some(r#"{"index":{"_index":"P:site","_type":"doc","_id":"page-3"}}"#),
        ),
        // Blank space as Python's json.dumps writes it: kept, written compact.
        (
            "{\"index\": {\"_index\": \"site\", \"_id\": \"1\"}}\n",
            false,
            Some(r#"{"index":{"_index":"P:site","_id":"1"}}"#),
        ),
        (
            "{\"index\": {\"_index\": \"site\", \"_id\": \"a b\"}}\n",
            true,
            Some(r#"{"index":{"_index":"P:site","_id":"a b"}}"#),
        ),
        // Blank space after the value: read whole.
        (
            "{\"index\": {\"_index\": \"site\", \"_id\": \"2\" }}\n",
            false,
            Some(r#"{"index":{"_index":"P:site","_id":"2"}}"#),
        ),
        // A fifth head pushes out the oldest (the first index head).
        (
            "{\"create\":{\"_index\":\"logstash-1\",\"_id\":\"1\"}}\n",
            false,
            Some(r#"{"create":{"_index":"P:logstash-1","_id":"1"}}"#),
        ),
        (
            "{\"update\":{\"_index\":\"site\",\"_id\":\"1\"}}\n",
            false,
            Some(r#"{"update":{"_index":"P:site","_id":"1"}}"#),
        ),
        (
            "{\"index\":{\"_index\":\"site\",\"_type\":\"doc\",\"_id\":\"page-4\"}}\n",
            false,
            Some(r#"{"index":{"_index":"P:site","_type":"doc","_id":"page-4"}}"#),
        ),
    ];
    for (line, from_cache, want) in table {
        let mut probe = Vec::new();
        assert_eq!(
            cache.read(line.as_bytes(), &mut probe).is_some(),
            *from_cache,
            "{line}"
        );
        let mut out = Vec::new();
        let got = bulk_action_fast_cached(&t, line.as_bytes(), &mut out, &mut cache);
        let written = String::from_utf8(out)
            .unwrap()
            .replace("abcdefghijklmnopqrst-", "P:");
        match want {
            Some(w) => {
                let (a, taken) = got.expect(line);
                assert_eq!(&written, w);
                assert_eq!(taken, line.len());
                let kind = [
                    ("{\"delete", BulkAction::Delete),
                    ("{\"index", BulkAction::Index),
                    ("{\"create", BulkAction::Create),
                    ("{\"update", BulkAction::Update),
                ];
                let want = kind.iter().find(|(k, _)| line.starts_with(k)).unwrap().1;
                assert_eq!(a.action, want, "{line}");
            }
            None => assert!(got.is_none() && written.is_empty(), "{line}"),
        }
    }
}

/// A name the body creates (a whitelisted, concrete `_index`) is reported from a cached
/// line as from a line read whole, borrowed from the line itself.
#[test]
fn auto_created_names_come_from_the_line_read() {
    let p = tenant_prefix();
    let t = tenant(&p);
    let mut cache = HeadCache::default();
    let first = b"{\"create\":{\"_index\":\"logstash-1\",\"_id\":\"1\"}}\n";
    let second = b"{\"create\":{\"_index\":\"logstash-1\",\"_id\":\"2\"}}\n";
    let mut out = Vec::new();
    let (a, _) = bulk_action_fast_cached(&t, first, &mut out, &mut cache).unwrap();
    let whole = a.auto_create.clone();
    assert!(cache.read(second, &mut Vec::new()).is_some());
    let (b, _) = bulk_action_fast_cached(&t, second, &mut out, &mut cache).unwrap();
    assert_eq!(b.auto_create, whole);
    let name = b.auto_create.expect("logstash-1 is created");
    assert!(
        std::ptr::eq(name.as_ptr(), second[21..].as_ptr()),
        "borrowed from the line"
    );
}

/// A kept head's written bytes as its bytes with the prefix put in (so the rewriter can
/// leave the line where it lies), or not that shape (blank space dropped).
#[test]
fn insertion_finds_where_the_written_head_adds_bytes() {
    type Row = (&'static str, &'static str, Option<(usize, usize)>);
    let rows: &[Row] = &[
        (
            r#"{"index":{"_id":""#,
            r#"{"index":{"_id":""#,
            Some((17, 0)),
        ),
        (
            r#"{"index":{"_index":"a","_id":""#,
            r#"{"index":{"_index":"PPa","_id":""#,
            Some((20, 2)),
        ),
        // The prefix starts with the name's first byte: another place, the same bytes.
        (
            r#"{"index":{"_index":"a","_id":""#,
            r#"{"index":{"_index":"aaa","_id":""#,
            Some((21, 2)),
        ),
        (
            r#"{"index": {"_index":"a","_id":""#,
            r#"{"index":{"_index":"PPa","_id":""#,
            None,
        ),
        (
            r#"{"index":{"_index":"a","_id":""#,
            r#"{"index":{"_index":"a""#,
            None,
        ),
    ];
    for &(head, written, want) in rows {
        let got = insertion(head.as_bytes(), written.as_bytes());
        assert_eq!(got, want, "{head} -> {written}");
        if let Some((at, len)) = got {
            let mut rebuilt = head.as_bytes()[..at].to_vec();
            rebuilt.extend_from_slice(&written.as_bytes()[at..at + len]);
            rebuilt.extend_from_slice(&head.as_bytes()[at..]);
            assert_eq!(rebuilt, written.as_bytes());
        }
    }
}
