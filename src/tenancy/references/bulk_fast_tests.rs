//! The fast action-line reader against the strict one (spec 1.6, issue 15): for generated
//! lines, common shapes and near misses alike, the reader used by the edge
//! ([`bulk_action`]) writes the same bytes and refuses with the same error as the strict
//! parser alone; a line the fast reader takes gets exactly the strict reader's answer,
//! and a line it leaves is left with `out` untouched.

use proptest::prelude::*;

use super::super::docs::{bulk_action_strict, BulkAction};
use super::*;
use crate::tenancy::prefix::Prefix;

const P: &[u8; 21] = b"abcdefghijklmnopqrst-";

pub(in crate::tenancy::references) fn tenant_prefix() -> Prefix {
    Prefix::from_bytes(P).unwrap()
}

/// The tenant the readers are called with: the prefix `p`, no sealed ids.
pub(in crate::tenancy::references) fn tenant(p: &Prefix) -> Tenant<'_> {
    Tenant {
        prefix: p,
        ids: None,
        now_ms: 0,
    }
}

/// Both readers, and the combined one, on `line`: their outputs must agree.
fn compare(line: &[u8]) -> Result<bool, TestCaseError> {
    let p = tenant_prefix();
    let t = tenant(&p);
    let mut slow_out = b"before|".to_vec();
    let slow = bulk_action_strict(&t, line, 3, &mut slow_out);
    let mut fast_out = b"before|".to_vec();
    let fast = bulk_action_fast(&t, line, &mut fast_out);
    let took = fast.is_some();
    match fast {
        Some(a) => {
            prop_assert_eq!(Ok(a), slow.clone(), "{:?}", String::from_utf8_lossy(line));
            prop_assert_eq!(&fast_out, &slow_out);
        }
        None => prop_assert_eq!(&fast_out, b"before|"),
    }
    let mut out = b"before|".to_vec();
    let both = bulk_action(&t, line, 3, &mut out);
    prop_assert_eq!(both, slow);
    prop_assert_eq!(out, slow_out);
    Ok(took)
}

fn ws() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        40 => Just(""),
        6 => Just(" "),
        2 => Just("\t"),
        1 => Just("  \t"),
        1 => Just("\r"),
        1 => Just("\u{c}"),
        1 => Just("\u{a0}"),
    ]
}

fn action_name() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        6 => Just("index"),
        2 => Just("create"),
        2 => Just("update"),
        2 => Just("delete"),
        1 => Just("Index"),
        1 => Just("indexx"),
        1 => Just(""),
        1 => Just("\\u0069ndex"),
        1 => Just("pipeline"),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => Just("_index".to_string()),
        24 => proptest::sample::select(BULK_ACTION_KEYS).prop_map(str::to_string),
        1 => Just("pipeline".to_string()),
        1 => Just("unknown".to_string()),
        1 => Just("_ind\\u0065x".to_string()),
        1 => Just("_id\\\"".to_string()),
        1 => Just(String::new()),
    ]
}

fn index_value() -> impl Strategy<Value = String> {
    let names = prop_oneof![
        12 => Just("site"),
        4 => Just("logstash-2024.01.01"),
        2 => Just("events"),
        2 => Just(".kibana"),
        1 => Just("_x"),
        1 => Just("a,b"),
        1 => Just(""),
        1 => Just("*"),
        1 => Just("_all"),
        1 => Just("-x"),
        1 => Just("-"),
        1 => Just("+a"),
        1 => Just("<logs-{now/d}>"),
        1 => Just("<_x>"),
        1 => Just("r:x"),
        1 => Just("café"),
        1 => Just("a\\\"b"),
        1 => Just("a\\u0062"),
        1 => Just("a\\\\b"),
        1 => Just("tab\there"),
        1 => Just("del\u{7f}x"),
        1 => Just("Upper"),
    ];
    prop_oneof![
        40 => names.prop_map(|n| format!("\"{n}\"")),
        1 => (230usize..240).prop_map(|n| format!("\"{}\"", "a".repeat(n))),
        1 => Just("null".to_string()),
        1 => Just("7".to_string()),
        1 => Just("true".to_string()),
        1 => Just("[\"a\"]".to_string()),
        1 => Just("{\"a\":1}".to_string()),
    ]
}

fn other_value() -> impl Strategy<Value = String> {
    prop_oneof![
        30 => "[a-z0-9 _.-]{0,12}".prop_map(|s| format!("\"{s}\"")),
        1 => Just("\"é✓\"".to_string()),
        1 => Just("\"a\\nb\"".to_string()),
        1 => Just("\"a\u{1}b\"".to_string()),
        8 => (0u64..100_000).prop_map(|n| n.to_string()),
        1 => Just("01".to_string()),
        1 => Just("-1".to_string()),
        1 => Just("1.5".to_string()),
        1 => Just("1e3".to_string()),
        1 => Just("12a".to_string()),
        1 => Just("true".to_string()),
        1 => Just("false".to_string()),
        1 => Just("truex".to_string()),
        1 => Just("null".to_string()),
        1 => Just("{}".to_string()),
        1 => Just("{\"includes\":[\"_index\"]}".to_string()),
        1 => Just("[\"a\"]".to_string()),
        1 => Just("'x'".to_string()),
    ]
}

fn pair() -> impl Strategy<Value = String> {
    (key(), ws(), ws(), index_value(), other_value()).prop_map(|(k, w1, w2, iv, ov)| {
        let v = if k == "_index" { iv } else { ov };
        format!("\"{k}\"{w1}:{w2}{v}")
    })
}

/// An action line: mostly well-formed, sometimes broken by a cut, an inserted byte or a
/// dropped comma.
pub(in crate::tenancy::references) fn line() -> impl Strategy<Value = Vec<u8>> {
    let shape = (
        (ws(), ws(), action_name(), ws(), ws()),
        proptest::collection::vec((pair(), ws()), 0..4),
        (ws(), ws(), ws()),
    )
        .prop_map(|((w0, w1, a, w2, w3), pairs, (w4, w5, w6))| {
            let body: Vec<String> = pairs.iter().map(|(p, w)| format!("{p}{w}")).collect();
            format!(
                "{w0}{{{w1}\"{a}\"{w2}:{w3}{{{}}}{w4}{w5}}}{w6}",
                body.join(",")
            )
            .into_bytes()
        });
    let mutation = prop_oneof![
        8 => Just(None),
        1 => (any::<prop::sample::Index>(), Just(None)).prop_map(|(i, b)| Some((i, b))),
        1 => (any::<prop::sample::Index>(), prop_oneof![
            Just(Some(b'"')), Just(Some(b',')), Just(Some(b'}')), Just(Some(b'{')),
            Just(Some(b'\\')), Just(Some(0xff)), Just(Some(b'/')), Just(Some(0x00)),
        ]).prop_map(|(i, b)| Some((i, b))),
    ];
    (shape, mutation).prop_map(|(mut line, m)| {
        match m {
            Some((i, Some(b))) => line.insert(i.index(line.len() + 1), b),
            Some((i, None)) => line.truncate(i.index(line.len() + 1)),
            None => {}
        }
        line
    })
}

/// What may follow a line in a body.
pub(in crate::tenancy::references) fn line_end() -> impl Strategy<Value = &'static [u8]> {
    prop_oneof![
        6 => Just(&b"\n{}\n"[..]),
        2 => Just(&b"\r\n"[..]),
        1 => Just(&b"\n"[..]),
        1 => Just(&b""[..]),
        1 => Just(&b"\r"[..]),
        1 => Just(&b"\r\r\n"[..]),
        1 => Just(&b" \r\n"[..]),
        1 => Just(&b"\r \n"[..]),
        1 => Just(&b"x\n"[..]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn fast_reader_agrees_with_the_strict_reader(line in line()) {
        compare(&line)?;
    }

    // Reading a line to its end finds the end the framing finds (the first `\n`, one `\r`
    // before it trimmed) and writes what reading the cut line writes.
    #[test]
    fn a_line_read_to_its_end_is_the_line_cut_first(line in line(), end in line_end()) {
        let p = tenant_prefix();
        let t = tenant(&p);
        let rest = [&line[..], end].concat();
        let mut at_out = b"before|".to_vec();
        let at = bulk_action_fast_at(&t, &rest, &mut at_out);
        let cut = rest.iter().position(|&b| b == b'\n').map(|nl| {
            let l = &rest[..nl];
            (l.strip_suffix(b"\r").unwrap_or(l), nl + 1)
        });
        let mut cut_out = b"before|".to_vec();
        let by_cut = cut.and_then(|(l, taken)| {
            bulk_action_fast(&t, l, &mut cut_out).map(|a| (a, taken))
        });
        prop_assert_eq!(at, by_cut);
        prop_assert_eq!(at_out, cut_out);
    }
}

#[test]
fn the_generated_lines_exercise_both_readers() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut fast, mut total) = (0, 0);
    for _ in 0..2000 {
        let line = line().new_tree(&mut runner).unwrap().current();
        fast += usize::from(compare(&line).unwrap());
        total += 1;
    }
    eprintln!("fast reader took {fast} of {total} generated lines");
    assert!(fast * 10 > total, "fast {fast} of {total}");
    assert!(fast * 10 < total * 9, "fast {fast} of {total}");
}

/// The common shapes are taken by the fast reader (written as the strict reader would).
#[test]
fn common_shapes_are_read_fast() {
    let p = tenant_prefix();
    let t = tenant(&p);
    let table: &[(&str, &str, BulkAction, Option<&str>)] = &[
        (
            r#"{"index":{"_index":"site","_type":"doc","_id":"page-000001"}}"#,
            r#"{"index":{"_index":"P:site","_type":"doc","_id":"page-000001"}}"#,
            BulkAction::Index,
            None,
        ),
        (
            r#"{ "create" : { "_index" : "logstash-1", "_id" : "7" } }"#,
            r#"{"create":{"_index":"P:logstash-1","_id":"7"}}"#,
            BulkAction::Create,
            Some("logstash-1"),
        ),
        (
            r#"{"delete":{"_index":"logstash-1","_id":"é"}}"#,
            r#"{"delete":{"_index":"P:logstash-1","_id":"é"}}"#,
            BulkAction::Delete,
            None,
        ),
        (
            r#"{"update":{"_id":"1","retry_on_conflict":3,"if_seq_no":0,"require_alias":true}}"#,
            r#"{"update":{"_id":"1","retry_on_conflict":3,"if_seq_no":0,"require_alias":true}}"#,
            BulkAction::Update,
            None,
        ),
        (
            r#"{"index":{}}"#,
            r#"{"index":{}}"#,
            BulkAction::Index,
            None,
        ),
        (
            "\t{\"index\":{\"_index\":\"*\"}} ",
            r#"{"index":{"_index":"P:*"}}"#,
            BulkAction::Index,
            None,
        ),
    ];
    for (line, want, action, auto) in table {
        let mut out = Vec::new();
        let a = bulk_action_fast(&t, line.as_bytes(), &mut out).expect(line);
        let got = String::from_utf8(out)
            .unwrap()
            .replace("abcdefghijklmnopqrst-", "P:");
        assert_eq!(&got, want);
        assert_eq!(a.action, *action);
        assert_eq!(a.auto_create.as_deref(), *auto, "{line}");
    }
}

/// Lines outside the subset, or refused, are left to the strict reader.
#[test]
fn the_rest_is_left_to_the_strict_reader() {
    let p = tenant_prefix();
    let t = tenant(&p);
    for line in [
        r#"{"index":{"_index":"a\u0062"}}"#,
        r#"{"index":{"_index":null}}"#,
        r#"{"index":{"_index":"_x"}}"#,
        r#"{"index":{"_index":"a,b"}}"#,
        r#"{"index":{"_index":"r:x"}}"#,
        r#"{"index":{"_index":"a","_index":"b"}}"#,
        r#"{"index":{"_index":"a","pipeline":"p"}}"#,
        r#"{"index":{"_index":"a","x":1}}"#,
        r#"{"index":{"_index":"a","version":-1}}"#,
        r#"{"index":{"_index":"a","version":1.0}}"#,
        r#"{"index":{"_index":"a","_source":{"includes":["x"]}}}"#,
        r#"{"index":{"_index":"a"}} x"#,
        r#"{"index":{"_index":"a"},"delete":{}}"#,
        "{\"index\":{\"_index\":\"a\"}\r}",
        "\u{feff}{\"index\":{}}",
        r#"{"index":{"_index":"a",}}"#,
        r#"{"index":{"_id":01}}"#,
    ] {
        let mut out = b"x".to_vec();
        assert!(
            bulk_action_fast(&t, line.as_bytes(), &mut out).is_none(),
            "{line}"
        );
        assert_eq!(out, b"x", "{line}");
        compare(line.as_bytes()).unwrap();
    }
    let mut out = Vec::new();
    assert!(bulk_action_fast(&t, b"{\"index\":{\"_id\":\"\xff\"}}", &mut out).is_none());
}

/// attack15: an integer past a double's range (what `json::parse` refuses since 2e5f907)
/// in a key other than `_index`. The fast reader's `scalar` took any run of digits, so the
/// edge forwarded a line the strict reader refuses; since cdbeab2 it leaves integers of
/// more than 19 digits to the strict reader, and the two agree (regression test). At the
/// cut: 19 digits are still read fast, 20 are not.
#[test]
fn attack15_integer_past_double_range_is_not_taken_fast() {
    let big = format!("1{}", "0".repeat(400));
    for key in ["_id", "version", "if_seq_no", "routing", "_type"] {
        let line = format!("{{\"index\":{{\"_index\":\"a\",\"{key}\":{big}}}}}");
        assert!(
            !compare(line.as_bytes()).unwrap(),
            "{key}: left to the strict reader"
        );
    }
    for (digits, fast) in [(19, true), (20, false)] {
        let n = "9".repeat(digits);
        let line = format!("{{\"index\":{{\"_index\":\"a\",\"_id\":{n}}}}}");
        assert_eq!(compare(line.as_bytes()).unwrap(), fast, "{digits} digits");
    }
}
