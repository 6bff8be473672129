//! The documented Painless subset, and what is refused.

use super::*;
use serde_json::json;

fn run(src: &str, params: Value, doc: Value) -> EngineResult<(Op, Value)> {
    let s = parse_script(&json!({"source": src, "lang": "painless", "params": params}))?;
    let (op, m) = s.run(doc.as_object().unwrap().clone(), "1", "i", "index")?;
    Ok((op, Value::Object(m)))
}

#[test]
fn the_documented_subset() {
    let d = json!({"n": 1, "tags": ["a"], "o": {"x": 1}, "gone": true});
    let (op, v) = run("ctx._source.n += params.k; ctx._source.tags.add(params.t); ctx._source.remove('gone'); ctx._source['o'].x -= 1; ctx._source.s = 'a' + 'b'", json!({"k": 2, "t": "b"}), d.clone()).unwrap();
    assert_eq!(op, Op::Index);
    assert_eq!(
        v,
        json!({"n": 3, "tags": ["a", "b"], "o": {"x": 0}, "s": "ab"})
    );
    let (op, _) = run(
        "if (ctx._source.n > 5) { ctx.op = 'delete' } else { ctx.op = 'none' }",
        json!({}),
        d.clone(),
    )
    .unwrap();
    assert_eq!(op, Op::Noop);
    let (op, _) = run(
        "if (ctx._source.tags.contains('a') && !ctx._source.containsKey('zz')) ctx.op = 'delete'",
        json!({}),
        d.clone(),
    )
    .unwrap();
    assert_eq!(op, Op::Delete);
    let (_, v) = run("ctx._source.price = ctx._source.n * 2.5", json!({}), d).unwrap();
    assert_eq!(v["price"], json!(2.5));
}

#[test]
fn unsupported_constructs_are_named() {
    for (src, what) in [
        ("for (int i = 0; i < 3; i++) {}", "[for]"),
        ("def x = 1", "[def]"),
        ("ctx._source.n = Math.max(1, 2)", "[Math]"),
        ("ctx._source.n++", "not supported"),
        ("params.x = 1", "assignment to anything but"),
        ("ctx._source.n = doc['n'].value", "[doc]"),
    ] {
        let e = parse_script(&json!(src)).unwrap_err();
        assert_eq!(e.status(), 400, "{src}");
        let cause = e.body().caused_by.unwrap();
        assert_eq!(cause.0, "script_exception");
        assert!(cause.1.contains(what), "{src}: {}", cause.1);
    }
    let e = run("ctx._source.missing += 1", json!({}), json!({})).unwrap_err();
    assert!(e.body().caused_by.unwrap().1.contains("runtime error"));
    let e = run("ctx.op = 'explode'", json!({}), json!({})).unwrap_err();
    assert!(e.body().caused_by.unwrap().1.contains("not allowed"));
    assert!(parse_script(&json!({"source": "1", "lang": "expression"})).is_err());
    assert!(parse_script(&json!({"id": "stored"})).is_err());
}

/// Issue 25: what a run builds is bounded ([`MAX_BUILT`]). Each `s += s` doubles a string
/// and each `l.add(l)` a list: forty of them asked for terabytes, and the engine grew by
/// gigabytes, for minutes, after the edge had answered 504. Now a 400 script error; a
/// script building a few megabytes still runs.
#[test]
fn what_a_script_builds_is_bounded() {
    let doubling =
        "ctx._source.s = 'ab'; ".to_string() + &"ctx._source.s += ctx._source.s; ".repeat(40);
    let listing =
        "ctx._source.l.add(1); ".to_string() + &"ctx._source.l.add(ctx._source.l); ".repeat(40);
    for src in [doubling.as_str(), listing.as_str()] {
        let e = run(src, json!({}), json!({"l": []})).unwrap_err();
        assert_eq!(e.status(), 400);
        let cause = e.body().caused_by.unwrap();
        assert_eq!(cause.0, "script_exception");
        assert!(cause.1.contains("built more than [16mb]"), "{}", cause.1);
    }
    let big = "x".repeat(3 << 20);
    let (_, v) = run(
        "ctx._source.s = params.s + params.s",
        json!({"s": big}),
        json!({}),
    )
    .unwrap();
    assert_eq!(v["s"].as_str().unwrap().len(), 6 << 20);
}
