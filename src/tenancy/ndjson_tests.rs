//! Table and chunk-split tests of the body rewriters (spec 4.1, issue 5).

use super::*;

const P: &[u8; 21] = b"abcdefghijklmnopqrst-";

fn prefix() -> Prefix {
    Prefix::from_bytes(P).unwrap()
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Bulk,
    Msearch,
    Mget,
}

fn rewriter(kind: Kind) -> BodyRewriter {
    match kind {
        Kind::Bulk => BodyRewriter::Bulk(BulkRewriter::new(prefix(), 1000)),
        Kind::Msearch => BodyRewriter::Msearch(MsearchRewriter::new(prefix())),
        Kind::Mget => BodyRewriter::Mget(MgetRewriter::new(prefix())),
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

/// The one-shot result, checked equal at every split point (2 and 3 chunks, and bytes).
fn rewrite_all_splits(kind: Kind, body: &str) -> Result<String, EdgeError> {
    let b = body.as_bytes();
    let whole = run(kind, &[b]);
    for i in 0..=b.len() {
        assert_eq!(
            run(kind, &[&b[..i], &b[i..]]),
            whole,
            "{kind:?} split at {i}: {body}"
        );
    }
    if b.len() <= 120 {
        for i in 0..=b.len() {
            for j in i..=b.len() {
                assert_eq!(run(kind, &[&b[..i], &b[i..j], &b[j..]]), whole, "{i},{j}");
            }
        }
    }
    let bytes: Vec<&[u8]> = b.chunks(1).collect();
    assert_eq!(run(kind, &bytes), whole, "{kind:?} byte by byte");
    whole
}

// spec 4.1: action lines rewritten, source lines untouched, deletes have no source line
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
            "{\"update\":{\"_id\":\"1\"}}\n{\"doc\":{\"index\":\"x\"}}\n",
            "{\"update\":{\"_id\":\"1\"}}\n{\"doc\":{\"index\":\"x\"}}\n",
        ),
        (
            "\n  \n{\"index\" : { \"_index\" : \"a\" } }\r\n{}\r\n",
            "\n  \n{\"index\" : { \"_index\" : \"P:a\" } }\r\n{}\r\n",
        ),
        (
            "{\"index\":{\"\\u005findex\":\"a\"}}\n{}\n",
            "{\"index\":{\"\\u005findex\":\"P:a\"}}\n{}\n",
        ),
        (
            "{\"index\":{\"_index\":\"caf\\u00e9\\\"q\"}}\n{}\n",
            "{\"index\":{\"_index\":\"P:café\\\"q\"}}\n{}\n",
        ),
        (
            "{\"index\":{\"_index\":\"*\"}}\n{}\n",
            "{\"index\":{\"_index\":\"P:*\"}}\n{}\n",
        ),
        (
            "{\"index\":{\"_index\":\"a\",\"_source\":{\"includes\":[\"_index\"]},\"routing\":\"_index\"}}\n{}\n",
            "{\"index\":{\"_index\":\"P:a\",\"_source\":{\"includes\":[\"_index\"]},\"routing\":\"_index\"}}\n{}\n",
        ),
        // unknown actions are followed by a source line too (as upstream)
        (
            "{\"frob\":{\"_index\":\"a\"}}\n{\"_index\":\"b\"}\n",
            "{\"frob\":{\"_index\":\"P:a\"}}\n{\"_index\":\"b\"}\n",
        ),
        // last line without a newline
        ("{\"delete\":{\"_index\":\"a\"}}", "{\"delete\":{\"_index\":\"P:a\"}}"),
        ("", ""),
    ];
    for (body, want) in table {
        assert_eq!(
            rewrite_all_splits(Kind::Bulk, body).as_deref(),
            Ok(*want),
            "{body}"
        );
    }
}

#[test]
fn bulk_refusals() {
    for body in [
        "{\"index\":{\"_index\":7}}\n{}\n",
        "{\"index\":{\"_index\":null}}\n{}\n",
        "{\"index\":{\"_index\":true}}\n{}\n",
        "{\"index\":{\"_index\":{\"a\":1}}}\n{}\n",
        "{\"index\":{\"_index\":[\"a\"]}}\n{}\n",
        "{\"index\":{\"_index\":\"\"}}\n{}\n",
        "{\"index\":{\"_index\":\"_x\"}}\n{}\n",
        "{\"index\":{\"_index\":\"r:x\"}}\n{}\n",
        "{\"index\":{/* \"_index\":\"a\" */}}\n{}\n",
        "{\"index\":{\"_index\":\"a\"}\n{}\n",
        "{\"index\":{\"_index\":\"a}}\n{}\n",
        "{\"index\":{\"_index\":\"\\u12\"}}\n{}\n",
        "{\"index\":{'_index':\"a\"}}\n{}\n",
    ] {
        let e = rewrite_all_splits(Kind::Bulk, body).unwrap_err();
        assert_eq!(e.status(), 400, "{body}");
    }
    // an index value of MAX_VALUE raw bytes is held back; one more is refused
    let max = super::super::json::MAX_VALUE;
    let at = |n: usize| format!("{{\"index\":{{\"_index\":\"{}\"}}}}\n{{}}\n", "a".repeat(n));
    assert!(run(Kind::Bulk, &[at(max).as_bytes()]).is_ok());
    assert!(run(Kind::Bulk, &[at(max + 1).as_bytes()]).is_err());
}

// Counting without rewriting (single-tenant) is `policy::bulk::BulkCounter`, tested there.

// issue 2: max_bulk_actions at N passes, N+1 is 413
#[test]
fn bulk_limit_n_and_n_plus_one() {
    let body = "{\"index\":{\"_index\":\"a\"}}\n{}\n".repeat(3);
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

// _msearch: header lines rewritten, empty lists become the tenant's `*`
#[test]
fn msearch_table() {
    let table: &[(&str, &str)] = &[
        ("{}\n{\"query\":{}}\n", "{}\n{\"query\":{}}\n"),
        ("\n{}\n{}\n", "\n{}\n{}\n"),
        ("{\"index\":\"a,b\"}\n{}\n", "{\"index\":\"P:a,P:b\"}\n{}\n"),
        ("{\"index\":\"\"}\n{}\n", "{\"index\":\"P:*\"}\n{}\n"),
        ("{\"index\":[]}\n{}\n", "{\"index\":[\"P:*\"]}\n{}\n"),
        ("{\"index\":[ ]}\n{}\n", "{\"index\":[ \"P:*\"]}\n{}\n"),
        ("{\"indices\":[\"a\",\"*\"]}\n{}\n", "{\"indices\":[\"P:a\",\"P:*\"]}\n{}\n"),
        ("{\"index\":\"_all\",\"preference\":\"x\"}\n{}\n", "{\"index\":\"P:*\",\"preference\":\"x\"}\n{}\n"),
        (
            "{\"index\":\"a\"}\n{\"query\":{\"term\":{\"index\":\"x\"}}}\n{\"index\":\"b\"}\n{}\n",
            "{\"index\":\"P:a\"}\n{\"query\":{\"term\":{\"index\":\"x\"}}}\n{\"index\":\"P:b\"}\n{}\n",
        ),
        ("\n{}\n", "\n{}\n"),
        ("{\"index\":\"a\"}", "{\"index\":\"P:a\"}"),
    ];
    for (body, want) in table {
        assert_eq!(
            rewrite_all_splits(Kind::Msearch, body).as_deref(),
            Ok(*want),
            "{body}"
        );
    }
    for body in [
        "{\"index\":3}\n{}\n",
        "{\"index\":null}\n{}\n",
        "{\"index\":{\"a\":1}}\n{}\n",
        "{\"index\":[1]}\n{}\n",
        "{\"index\":[[\"a\"]]}\n{}\n",
        "{\"index\":\"a\"\n{}\n",
        "{\"index\":\"-\"}\n{}\n",
    ] {
        assert_eq!(
            rewrite_all_splits(Kind::Msearch, body)
                .unwrap_err()
                .status(),
            400,
            "{body}"
        );
    }
}

// _mget: `_index` of docs rewritten anywhere, everything else untouched
#[test]
fn mget_table() {
    let table: &[(&str, &str)] = &[
        (
            "{\"docs\":[{\"_index\":\"a\",\"_id\":\"1\"},{\"_index\":\"b\",\"_id\":\"2\",\"_source\":[\"_index\"]}]}",
            "{\"docs\":[{\"_index\":\"P:a\",\"_id\":\"1\"},{\"_index\":\"P:b\",\"_id\":\"2\",\"_source\":[\"_index\"]}]}",
        ),
        ("{\"ids\":[\"1\",\"_index\"]}", "{\"ids\":[\"1\",\"_index\"]}"),
        (
            "{\n  \"docs\" : [ { \"_id\" : \"1\" , \"_index\" : \"x\" } ]\n}\n",
            "{\n  \"docs\" : [ { \"_id\" : \"1\" , \"_index\" : \"P:x\" } ]\n}\n",
        ),
        ("", ""),
    ];
    for (body, want) in table {
        assert_eq!(
            rewrite_all_splits(Kind::Mget, body).as_deref(),
            Ok(*want),
            "{body}"
        );
    }
    for body in [
        "{\"docs\":[{\"_index\":1}]}",
        "{\"docs\":[{\"_index\":null}]}",
        "{\"docs\":[{\"_index\":\"a\"}]",
        "{\"docs\":[{\"_index\":\"a\"}]}}",
        "{\"docs\":[{\"_index\":\"\"}]}",
    ] {
        assert_eq!(
            rewrite_all_splits(Kind::Mget, body).unwrap_err().status(),
            400,
            "{body}"
        );
    }
}
