//! Framing and rewriting of NDJSON bodies from tables, every input fed at every split point
//! (2 and 3 chunks, and byte by byte) giving the one-chunk output (spec 4.1, issue 10).

use super::*;

const P: &[u8; 21] = b"abcdefghijklmnopqrst-";

pub(super) fn prefix() -> Prefix {
    Prefix::from_bytes(P).unwrap()
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Bulk,
    Msearch,
}

fn rewriter(kind: Kind) -> BodyRewriter {
    match kind {
        Kind::Bulk => BodyRewriter::Bulk(BulkRewriter::new(prefix(), 1000)),
        Kind::Msearch => BodyRewriter::Msearch(MsearchRewriter::new(prefix())),
    }
}

/// Feeds `chunks` in order; the output with the prefix shown as `P:`.
fn run(kind: Kind, chunks: &[&[u8]]) -> Result<String, EdgeError> {
    let mut r = rewriter(kind);
    let mut out = Vec::new();
    for c in chunks {
        r.feed(c, &mut out)?;
    }
    r.finish(&mut out)?;
    Ok(String::from_utf8(out)
        .unwrap()
        .replace(std::str::from_utf8(P).unwrap(), "P:"))
}

/// The one-chunk result, checked equal at every split point (2 and 3 chunks, and bytes).
fn rewrite_all_splits(kind: Kind, body: &str) -> Result<String, EdgeError> {
    let b = body.as_bytes();
    let whole = run(kind, &[b]);
    for i in 0..=b.len() {
        assert_eq!(
            run(kind, &[&b[..i], &b[i..]]),
            whole,
            "{kind:?} split at {i}: {body:?}"
        );
    }
    if b.len() <= 120 {
        for i in 0..=b.len() {
            for j in i..=b.len() {
                assert_eq!(
                    run(kind, &[&b[..i], &b[i..j], &b[j..]]),
                    whole,
                    "{i},{j}: {body:?}"
                );
            }
        }
    }
    let bytes: Vec<&[u8]> = b.chunks(1).collect();
    assert_eq!(run(kind, &bytes), whole, "{kind:?} byte by byte: {body:?}");
    whole
}

/// Each body refused with 400 whose reason says `why`, at every split point.
fn refused(kind: Kind, table: &[(&str, &str)]) {
    for (body, why) in table {
        let e = rewrite_all_splits(kind, body).unwrap_err();
        assert_eq!(e.status(), 400, "{body:?}");
        let reason = e.body().reason;
        assert!(reason.contains(why), "{body:?}: {reason:?}");
    }
}

// spec 4.1 and 7.10's BulkRequestParser: action lines read and written compactly, blank
// action lines dropped, documents passed as sent (one `\r` before `\n` trimmed)
#[test]
fn bulk_table() {
    let table: &[(&str, &str)] = &[
        (
            "{\"index\":{\"_index\":\"books\",\"_id\":\"1\"}}\n{\"title\":\"x\",\"_index\":\"not me\"}\n",
            "{\"index\":{\"_index\":\"P:books\",\"_id\":\"1\"}}\n{\"title\":\"x\",\"_index\":\"not me\"}\n",
        ),
        (
            "{\"delete\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"create\":{\"_index\":\"b\"}}\n{\"_index\":\"src\"}\n",
            "{\"delete\":{\"_index\":\"P:a\",\"_id\":\"1\"}}\n{\"create\":{\"_index\":\"P:b\"}}\n{\"_index\":\"src\"}\n",
        ),
        (
            "{\"update\":{\"_id\":\"1\"}}\n{ \"doc\" : {\"index\":\"x\"} }\n",
            "{\"update\":{\"_id\":\"1\"}}\n{\"doc\":{\"index\":\"x\"}}\n",
        ),
        (
            "\n  \n\t\r\n{\"index\" : { \"_index\" : \"a\" } }\r\n{ }\r\n",
            "{\"index\":{\"_index\":\"P:a\"}}\n{ }\n",
        ),
        ("{\"index\":{\"\\u005findex\":\"a\"}}\n{}\n", "{\"index\":{\"_index\":\"P:a\"}}\n{}\n"),
        (
            "{\"index\":{\"_index\":\"caf\\u00e9\\\"q\"}}\n{}\n",
            "{\"index\":{\"_index\":\"P:café\\\"q\"}}\n{}\n",
        ),
        (
            "{\"index\":{\"_index\":\"a\",\"_source\":{\"includes\":[\"_index\"]},\"routing\":\"_index\"}}\n{}\n",
            "{\"index\":{\"_index\":\"P:a\",\"_source\":{\"includes\":[\"_index\"]},\"routing\":\"_index\"}}\n{}\n",
        ),
        ("{\"index\":{\"_index\":null}}\n{}\n", "{\"index\":{\"_index\":null}}\n{}\n"),
        ("{\"index\":{}}\n{\"a\":\"b\\r\"}\r\r\n", "{\"index\":{}}\n{\"a\":\"b\\r\"}\r\n"),
        ("{\"delete\":{\"_index\":\"a\"}}\n", "{\"delete\":{\"_index\":\"P:a\"}}\n"),
        ("", ""),
        ("\n\n", ""),
    ];
    for (body, want) in table {
        assert_eq!(
            rewrite_all_splits(Kind::Bulk, body).as_deref(),
            Ok(*want),
            "{body:?}"
        );
    }
}

#[test]
fn bulk_refusals() {
    let table: &[(&str, &str)] = &[
        ("{\"index\":{\"_index\":7}}\n{}\n", "must be a string"),
        ("{\"index\":{\"_index\":true}}\n{}\n", "must be a string"),
        ("{\"index\":{\"_index\":[\"a\"]}}\n{}\n", "must be a string"),
        ("{\"index\":{\"_index\":\"\"}}\n{}\n", "one index"),
        ("{\"index\":{\"_index\":\"a,b\"}}\n{}\n", "one index"),
        ("{\"index\":{\"_index\":\"_x\"}}\n{}\n", "must not start"),
        ("{\"index\":{\"_index\":\"r:x\"}}\n{}\n", "':'"),
        ("{\"index\":{/* \"_index\":\"a\" */}}\n{}\n", "comments"),
        ("{\"index\":{\"_index\":\"a\"}\n{}\n", "unexpected"),
        (
            "{\"index\":{\"_index\":\"a\",\"_index\":\"b\"}}\n{}\n",
            "duplicate field [_index]",
        ),
        (
            "{\"index\":{\"_index\":\"a\",\"\\u005findex\":\"b\"}}\n{}\n",
            "duplicate field [_index]",
        ),
        ("{\"index\":{'_index':\"a\"}}\n{}\n", "single quotes"),
        ("{\"index\":{\"_index\":\"a\"}} x\n{}\n", "after the end"),
        ("{\"index\":{\"pipeline\":\"p\"}}\n{}\n", "[pipeline]"),
        (
            "{\"index\":{\"_routing\":\"r\"}}\n{}\n",
            "unknown parameter [_routing]",
        ),
        ("{\"frob\":{\"_index\":\"a\"}}\n{}\n", "but found [frob]"),
        (
            "{\"index\":{},\"delete\":{}}\n{}\n",
            "expected END_OBJECT but found [FIELD_NAME]",
        ),
        ("[1]\n{}\n", "expected START_OBJECT"),
        ("{\"index\":[]}\n{}\n", "expected START_OBJECT"),
        // framing: nothing after the last newline, no missing or blank source line
        ("{\"delete\":{\"_index\":\"a\"}}", "terminated by a newline"),
        (
            "{\"delete\":{\"_index\":\"a\"}}\n  ",
            "terminated by a newline",
        ),
        ("{\"index\":{}}\n{}", "terminated by a newline"),
        ("{\"index\":{}}\n", "source line is missing"),
        (
            "{\"index\":{}}\n\n{\"index\":{\"_index\":\"*\"}}\n{}\n",
            "is empty",
        ),
        ("{\"index\":{}}\n \r\n{}\n", "is empty"),
        // fuzz/fuzz_targets/tenancy.rs's finding: a source line of form feeds (blank to
        // Java's `trim()`), and the other control bytes and DEL
        ("{\"create\":{}}\n\x0c\x0c\x0c \n{}\n", "is empty"),
        ("{\"index\":{}}\n\x0b\x00\x1f\x7f\n{}\n", "is empty"),
        ("{\"update\":{\"_id\":\"1\"}}\n\n", "is empty"),
        (
            "{\"update\":{\"_id\":\"1\"}}\n{\"script\":\"ctx._index = 'x'\"}\n",
            "Painless",
        ),
        (
            "{\"update\":{\"_id\":\"1\"}}\n{\"doc\":{},\"doc\":{}}\n",
            "duplicate",
        ),
        (
            "{\"update\":{\"_id\":\"1\"}}\n{\"pipeline\":\"p\"}\n",
            "unknown field [pipeline]",
        ),
    ];
    refused(Kind::Bulk, table);
}

// issue 2: max_bulk_actions at N passes, N+1 is 413
#[test]
fn bulk_limit_n_and_n_plus_one() {
    let body = "{\"index\":{\"_index\":\"a\"}}\n{}\n\n".repeat(3);
    let mut ok = BulkRewriter::new(prefix(), 3);
    let mut out = Vec::new();
    ok.feed(body.as_bytes(), &mut out).unwrap();
    ok.finish(&mut out).unwrap();
    assert_eq!(ok.actions(), 3);
    let mut over = BulkRewriter::new(prefix(), 2);
    let e = over.feed(body.as_bytes(), &mut out).unwrap_err();
    assert_eq!(e, EdgeError::TooManyBulkActions(2));
    assert_eq!(e.status(), 413);
}

#[test]
fn bulk_auto_create_candidates() {
    let body = "{\"index\":{\"_index\":\"logstash-1\"}}\n{}\n{\"index\":{\"_index\":\"logstash-1\"}}\n{}\n\
                {\"create\":{\"_index\":\"events\"}}\n{}\n{\"delete\":{\"_index\":\"requests\"}}\n\
                {\"index\":{\"_index\":\"books\"}}\n{}\n{\"index\":{\"_index\":\"logstash-*\"}}\n{}\n";
    let mut b = BulkRewriter::new(prefix(), 100);
    let mut out = Vec::new();
    b.feed(body.as_bytes(), &mut out).unwrap();
    b.finish(&mut out).unwrap();
    let c: Vec<&[u8]> = b
        .auto_create_candidates()
        .iter()
        .map(|v| v.as_slice())
        .collect();
    assert_eq!(c, [&b"logstash-1"[..], b"events"]);
}

// 7.10's readMultiLineFormat: a first `\n` skipped, blank headers are empty headers, every
// header has a body line, bodies are search bodies; the edge writes no blank line
#[test]
fn msearch_table() {
    let table: &[(&str, &str)] = &[
        ("{}\n{\"query\":{}}\n", "{}\n{\"query\":{}}\n"),
        ("\n{}\n{}\n", "{}\n{}\n"),
        ("\n\n{}\n", "{}\n{}\n"),
        (" \n{\"size\":1}\n", "{}\n{\"size\":1}\n"),
        ("\r\n{}\r\n", "{}\n{}\n"),
        ("\t\n{}\n{\"index\":\"*\"}\n{}\n", "{}\n{}\n{\"index\":\"P:*\"}\n{}\n"),
        ("{\"index\":\"a,b\"}\n{}\n", "{\"index\":\"P:a,P:b\"}\n{}\n"),
        ("{\"index\":\"\"}\n{}\n", "{\"index\":\"P:*\"}\n{}\n"),
        ("{\"index\":[]}\n{}\n", "{\"index\":[\"P:*\"]}\n{}\n"),
        ("{\"indices\":[\"a\",\"*\"]}\n{}\n", "{\"indices\":[\"P:a\",\"P:*\"]}\n{}\n"),
        (
            "{\"index\":\"_all\",\"preference\":\"x\"}\n{}\n",
            "{\"index\":\"P:*\",\"preference\":\"x\"}\n{}\n",
        ),
        (
            "{\"index\":\"a\"}\n{\"query\":{\"prefix\":{\"_index\":\"x\"}}}\n{\"index\":\"b\"}\n{}\n",
            "{\"index\":\"P:a\"}\n{\"query\":{\"prefix\":{\"_index\":\"P:x\"}}}\n{\"index\":\"P:b\"}\n{}\n",
        ),
        ("", ""),
        ("\n", ""),
    ];
    for (body, want) in table {
        assert_eq!(
            rewrite_all_splits(Kind::Msearch, body).as_deref(),
            Ok(*want),
            "{body:?}"
        );
    }
    let refused_table: &[(&str, &str)] = &[
        ("{\"index\":3}\n{}\n", "must be a string or an array"),
        ("{\"index\":null}\n{}\n", "must be a string or an array"),
        ("{\"index\":[1]}\n{}\n", "must be a string"),
        ("{\"index\":\"a\"\n{}\n", "unexpected"),
        ("{\"index\":\"-\"}\n{}\n", "must not start"),
        (
            "{\"index\":\"a\",\"indices\":\"b\"}\n{}\n",
            "[index] and [indices]",
        ),
        ("{\"type\":\"t\"}\n{}\n", "key [type] is not supported"),
        ("{\"index\":\"a\"}", "terminated by a newline"),
        ("{}\n{}", "terminated by a newline"),
        ("{\"index\":\"a\"}\n", "body line is missing"),
        ("{}\n\n", "START_OBJECT"),
        (
            "{}\n{\"query\":{\"fuzzy\":{\"_index\":\"a\"}}}\n",
            "fuzzy on [_index]",
        ),
        ("{}\n{\"pit\":{\"id\":\"x\"}}\n", "[pit]"),
        ("{}\n{\"size\":1,\"size\":2}\n", "duplicate"),
    ];
    refused(Kind::Msearch, refused_table);
}

// The first attack of issue 10: whitespace-only lines before a header naming `*` never
// reach the upstream as they were; whatever the edge emits pairs the same way everywhere.
#[test]
fn msearch_blank_line_attack_is_confined() {
    for blank in [" ", "\r", "\t", "  \t\r"] {
        let body = format!("{{}}\n{{}}\n{blank}\n{{\"index\":\"*\"}}\n{{}}\n");
        match rewrite_all_splits(Kind::Msearch, &body) {
            Ok(out) => {
                assert!(!out.lines().any(|l| l.trim().is_empty()), "{out:?}");
                for l in out.lines().step_by(2) {
                    assert!(!l.contains("\"index\":\"*\""), "{out:?}");
                }
            }
            Err(e) => assert_eq!(e.status(), 400),
        }
    }
}

/// What the oracle reads next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BulkNext {
    Action,
    Document,
    Update,
}

/// `_bulk` bodies framed line by line by a plain reading of 7.10's rules, every action
/// line read by the strict parser alone: what the rewriter (fast readers, lines read in
/// place or collected across chunks) must produce, refusals included.
fn bulk_oracle(body: &[u8]) -> Result<Vec<u8>, EdgeError> {
    bulk_oracle_max(body, 1000)
}

/// [`bulk_oracle`] with the plan's `max_bulk_actions`.
pub(super) fn bulk_oracle_max(body: &[u8], max_actions: u64) -> Result<Vec<u8>, EdgeError> {
    use crate::tenancy::references::docs::bulk_action_strict;
    let p = prefix();
    let t = Tenant {
        prefix: &p,
        ids: None,
        now_ms: 0,
    };
    let (complete, rest) = match body.iter().rposition(|&b| b == b'\n') {
        Some(k) => body.split_at(k + 1),
        None => (&b""[..], body),
    };
    let (mut out, mut next, mut actions, mut lines) = (Vec::new(), BulkNext::Action, 0, 0);
    for raw in complete.split_inclusive(|&b| b == b'\n') {
        lines += 1;
        let line = &raw[..raw.len() - 1];
        let text = line.strip_suffix(b"\r").unwrap_or(line);
        let empty_source = || {
            illegal(format!(
                "the source line [{lines}] of a bulk action is empty"
            ))
        };
        next = match next {
            BulkNext::Action if is_blank(text) => continue,
            BulkNext::Action => {
                actions += 1;
                if actions > max_actions {
                    return Err(EdgeError::TooManyBulkActions(max_actions));
                }
                let a = bulk_action_strict(&t, text, lines, &mut out)?;
                out.push(b'\n');
                match a.action {
                    BulkAction::Delete => BulkNext::Action,
                    BulkAction::Update => BulkNext::Update,
                    _ => BulkNext::Document,
                }
            }
            BulkNext::Document if is_blank_source(text) => return Err(empty_source()),
            _ if is_blank(text) => return Err(empty_source()),
            BulkNext::Document => {
                out.extend_from_slice(text);
                out.push(b'\n');
                BulkNext::Action
            }
            BulkNext::Update => {
                bulk_update_source(text, lines, &mut out)?;
                out.push(b'\n');
                BulkNext::Action
            }
        };
    }
    // An action counts from its first byte (the one framing's count), so an unterminated
    // action line over the limit is refused as such.
    let begun = rest.iter().any(|b| !matches!(b, b' ' | b'\t' | b'\r'));
    if next == BulkNext::Action && begun && actions + 1 > max_actions {
        return Err(EdgeError::TooManyBulkActions(max_actions));
    }
    let pending = match next {
        BulkNext::Document => !is_blank(rest) || rest.ends_with(b"\r"),
        _ => !rest.is_empty(),
    };
    if pending {
        return Err(not_terminated("bulk"));
    }
    if next != BulkNext::Action {
        return Err(illegal(format!(
            "Malformed action/metadata line [{lines}], the source line is missing"
        )));
    }
    Ok(out)
}

fn bulk_line() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let action = prop_oneof![
        8 => (0u32..1000).prop_map(|i| format!("{{\"index\":{{\"_index\":\"site\",\"_type\":\"doc\",\"_id\":\"page-{i}\"}}}}")),
        2 => Just("{\"create\":{\"_index\":\"logstash-1\",\"_id\":\"1\"}}".to_string()),
        2 => Just("{ \"index\" : { \"_index\" : \"a\" } }".to_string()),
        2 => Just("{\"delete\":{\"_index\":\"site\",\"_id\":\"9\"}}".to_string()),
        1 => Just("{\"update\":{\"_id\":\"1\",\"retry_on_conflict\":3}}\n{\"doc\":{\"a\":1}}".to_string()),
        1 => Just("{\"index\":{\"\\u005findex\":\"a\"}}".to_string()),
        1 => Just("{\"index\":{\"_index\":\"café\"}}".to_string()),
        1 => Just("{\"index\":{\"_index\":\"_x\"}}".to_string()),
        1 => Just("{\"index\":{\"_index\":null}}".to_string()),
        1 => Just("{\"bad\":{}}".to_string()),
        1 => Just(" ".to_string()),
        1 => Just(String::new()),
    ];
    let doc = prop_oneof![
        6 => (0u32..1000).prop_map(|i| format!("{{\"title\":\"page {i}\",\"n\":{i}}}")),
        1 => Just("{\"a\":\"b\\r\"}\r".to_string()),
        1 => Just(" ".to_string()),
    ];
    let eol = prop_oneof![6 => Just("\n"), 1 => Just("\r\n"), 1 => Just("\r\r\n")];
    (action, doc, eol.clone(), eol).prop_map(|(a, d, e1, e2)| {
        let needs_doc = a.starts_with("{\"index\"")
            || a.starts_with("{\"create\"")
            || a.starts_with("{ \"index\"");
        match needs_doc {
            true => format!("{a}{e1}{d}{e2}"),
            false => format!("{a}{e1}"),
        }
    })
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(1500))]

    // Whatever the split points, the rewriter writes what the plain reading writes, or
    // refuses as it does (spec 1.6: one reading of every byte).
    #[test]
    fn bulk_bodies_at_random_split_points_match_the_plain_reading(
        lines in proptest::collection::vec(bulk_line(), 0..12),
        tail in proptest::prop_oneof![8 => proptest::strategy::Just(""), 1 => proptest::strategy::Just("{\"index\":{}}"), 1 => proptest::strategy::Just("\r")],
        cuts in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 0..4),
    ) {
        let body = format!("{}{tail}", lines.concat()).into_bytes();
        let want = bulk_oracle(&body);
        let mut at: Vec<usize> = cuts.iter().map(|c| c.index(body.len() + 1)).collect();
        at.sort_unstable();
        let mut chunks = Vec::new();
        let mut from = 0;
        for &k in &at {
            chunks.push(&body[from..k]);
            from = k;
        }
        chunks.push(&body[from..]);
        let mut rw = BulkRewriter::new(prefix(), 1000);
        let mut out = Vec::new();
        let got = chunks
            .iter()
            .try_for_each(|c| rw.feed(c, &mut out))
            .and_then(|()| rw.finish(&mut out))
            .map(|()| out);
        proptest::prop_assert_eq!(got, want, "{:?} cut at {:?}", String::from_utf8_lossy(&body), at);
    }
}

/// attack15: the body-level view of the fast reader's big integers. The edge forwarded
/// `{"index":{"_index":"P:a","_id":1000...}}` where the plain strict reading refuses the
/// body (number out of range of a double); the readers agree since cdbeab2 (regression
/// test).
#[test]
fn attack15_big_integer_action_line_matches_the_plain_reading() {
    let body = format!(
        "{{\"index\":{{\"_index\":\"a\",\"_id\":1{}}}}}\n{{}}\n",
        "0".repeat(400)
    );
    let want = bulk_oracle(body.as_bytes()).map_err(|e| e.body().reason);
    let mut rw = BulkRewriter::new(prefix(), 1000);
    let mut out = Vec::new();
    let got = rw
        .feed(body.as_bytes(), &mut out)
        .and_then(|()| rw.finish(&mut out))
        .map(|()| out)
        .map_err(|e| e.body().reason);
    assert_eq!(got, want);
}
