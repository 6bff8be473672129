//! The strict reader from tables, and against `serde_json` on random valid documents (same
//! value, numbers kept as sent) and random corruptions of them (whatever serde_json
//! refuses, this refuses too; whatever this accepts, serde_json reads the same).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;

fn round_trip(s: &str) -> String {
    let v = parse(s.as_bytes()).unwrap_or_else(|e| panic!("{s}: {e:?}"));
    String::from_utf8(v.to_bytes()).unwrap()
}

#[test]
fn accepted_and_written_compactly() {
    let table: &[(&str, &str)] = &[
        ("{}", "{}"),
        (" { \"a\" : 1 } \n", "{\"a\":1}"),
        ("[1.0, 2e10, -0, 1E+2, 0.5e-3]", "[1.0,2e10,-0,1E+2,0.5e-3]"),
        ("[-1.7e308, 1e-999]", "[-1.7e308,1e-999]"),
        (
            "123456789012345678901234567890",
            "123456789012345678901234567890",
        ),
        ("\"\\u0061liases\"", "\"aliases\""),
        ("\"\\ud83d\\ude00\"", "\"\u{1F600}\""),
        ("\"a\\/b\\\"c\\\\\"", "\"a/b\\\"c\\\\\""),
        (
            "\"\\u0001\\b\\f\\n\\r\\t\"",
            "\"\\u0001\\u0008\\u000c\\n\\r\\t\"",
        ),
        (
            "{\"a\":{\"b\":[true,false,null]}}",
            "{\"a\":{\"b\":[true,false,null]}}",
        ),
        ("\"é\u{7f}\"", "\"é\u{7f}\""),
        ("\r\n\t [] \r\n", "[]"),
    ];
    for (input, want) in table {
        assert_eq!(round_trip(input), *want, "{input}");
    }
}

#[test]
fn refused_with_what_is_wrong() {
    let table: &[(&[u8], &str)] = &[
        (b"{\"a\":1,\"a\":2}", "duplicate field [a]"),
        (
            b"{\"aliases\":{},\"\\u0061liases\":{}}",
            "duplicate field [aliases]",
        ),
        (b"{\"x\":{\"k\":1,\"k\":1}}", "duplicate field [k]"),
        (b"\"\xff\"", "invalid UTF-8"),
        (b"\"\xc3\"", "invalid UTF-8"),
        (b"\"\\ud800\"", "lone surrogate"),
        (b"\"\\udc00\"", "lone surrogate"),
        (b"\"\\ud800\\u0041\"", "lone surrogate"),
        (b"{/* c */}", "comments"),
        (b"[1] // c", "after the end"),
        (b"NaN", "unexpected character"),
        (b"[Infinity]", "unexpected character"),
        (b"[-Infinity]", "expected a digit"),
        (b"{'a':1}", "single quotes"),
        (b"{a:1}", "double-quoted field name"),
        (b"\"a\tb\"", "control character"),
        (b"\"a\nb\"", "control character"),
        (b"{} {}", "after the end"),
        (b"{}x", "after the end"),
        (b"", "no content"),
        (b"   ", "no content"),
        (b"01", "invalid number"),
        // fuzz/fuzz_targets/tenancy.rs's finding: past a double's range
        (
            b"{\"from\":-222222222000430646668853e801414}",
            "out of range",
        ),
        (b"[1e309]", "out of range"),
        (b"[-1.8e308]", "out of range"),
        (b"+1", "unexpected character"),
        (b"1.", "decimal point"),
        (b".5", "unexpected character"),
        (b"1e", "exponent"),
        (b"[1,]", "unexpected character"),
        (b"{\"a\":1,}", "double-quoted"),
        (b"tru", "unexpected"),
        (b"nulls", "unexpected"),
        (b"\"\\x\"", "invalid escape"),
        (b"\"\\u12\"", "invalid \\u escape"),
        (b"\"abc", "unterminated"),
        (b"[", "unexpected end"),
        (b"\xef\xbb\xbf{}", "unexpected character"),
    ];
    for (input, what) in table {
        let e = parse(input).expect_err(&String::from_utf8_lossy(input));
        assert!(
            e.what.contains(what),
            "{:?}: {:?} does not say {what}",
            String::from_utf8_lossy(input),
            e.what
        );
        let body = EdgeError::from(e).body();
        assert_eq!(
            (body.status, body.kind.as_str()),
            (400, "x_content_parse_exception")
        );
    }
}

#[test]
fn errors_name_line_and_column() {
    let e = parse(b"{\n  \"a\": 1,\n  \"a\": 2}").unwrap_err();
    assert_eq!((e.line, e.column), (3, 3));
    let msg = EdgeError::from(e).body().reason;
    assert_eq!(msg, "[3:3] duplicate field [a]");
}

#[test]
fn duplicates_in_large_objects_are_found() {
    let mut s = String::from("{");
    for i in 0..100 {
        s.push_str(&format!("\"k{i}\":{i},"));
    }
    s.push_str("\"k42\":0}");
    assert!(parse(s.as_bytes()).unwrap_err().what.contains("[k42]"));
    let ok = s.replace("\"k42\":0", "\"k100\":0");
    assert!(parse(ok.as_bytes()).is_ok());
}

#[test]
fn depth_limit_at_n_and_n_plus_one() {
    let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(parse(nest(MAX_DEPTH).as_bytes()).is_ok());
    let e = parse(nest(MAX_DEPTH + 1).as_bytes()).unwrap_err();
    assert!(e.what.contains("nesting"), "{e:?}");
    let objs = |n: usize| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
    assert!(parse(objs(MAX_DEPTH).as_bytes()).is_ok());
    assert!(parse(objs(MAX_DEPTH + 1).as_bytes()).is_err());
}

#[test]
fn whitespace_only_is_no_body() {
    assert_eq!(parse_opt(b" \r\n\t").unwrap(), None);
    assert!(parse_opt(b" {} ").unwrap().is_some());
}

/// A random valid document, written with random whitespace and escapes.
fn gen_value(rng: &mut StdRng, depth: usize, out: &mut String) {
    let ws = |rng: &mut StdRng, out: &mut String| {
        for _ in 0..rng.random_range(0..3) {
            out.push([' ', '\n', '\t', '\r'][rng.random_range(0..4)]);
        }
    };
    ws(rng, out);
    let pick = if depth > 4 {
        rng.random_range(0..5)
    } else {
        rng.random_range(0..7)
    };
    match pick {
        0 => out.push_str(["true", "false", "null"][rng.random_range(0..3)]),
        1 => out.push_str(
            [
                "0",
                "-0",
                "1.0",
                "1e300",
                "-12.5E-3",
                "123456789012345678901234567890",
                "9007199254740993",
                "0.1",
            ][rng.random_range(0..8)],
        ),
        2..=4 => gen_string(rng, out),
        5 => {
            out.push('[');
            for i in 0..rng.random_range(0..4) {
                if i > 0 {
                    out.push(',');
                }
                gen_value(rng, depth + 1, out);
            }
            out.push(']');
        }
        _ => {
            out.push('{');
            let n = rng.random_range(0..4);
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                ws(rng, out);
                // distinct keys: a counter, spelled with random escapes
                let key = format!("k{i}");
                write_escaped(rng, &key, out);
                ws(rng, out);
                out.push(':');
                gen_value(rng, depth + 1, out);
            }
            out.push('}');
        }
    }
    ws(rng, out);
}

fn write_escaped(rng: &mut StdRng, s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match (c, rng.random_range(0..4)) {
            ('"', _) => out.push_str("\\\""),
            ('\\', _) => out.push_str("\\\\"),
            (c, _) if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            (c, 0) if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04X}", c as u32)),
            (c, 0) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{:04x}", u));
                }
            }
            (c, _) => out.push(c),
        }
    }
    out.push('"');
}

fn gen_string(rng: &mut StdRng, out: &mut String) {
    const CHARS: &[char] = &[
        'a',
        '_',
        '"',
        '\\',
        '\n',
        '\u{1}',
        'é',
        '\u{1F600}',
        '/',
        ' ',
    ];
    let s: String = (0..rng.random_range(0..6))
        .map(|_| CHARS[rng.random_range(0..CHARS.len())])
        .collect();
    write_escaped(rng, &s, out);
}

/// Our value as serde_json would hold it (numbers compared by their text through serde's
/// own reading, which is exact enough for the generated set).
fn same(ours: &Value, theirs: &serde_json::Value) -> bool {
    match (ours, theirs) {
        (Value::Null, serde_json::Value::Null) => true,
        (Value::Bool(a), serde_json::Value::Bool(b)) => a == b,
        (Value::Number(n), t @ serde_json::Value::Number(_)) => {
            serde_json::from_str::<serde_json::Value>(n.as_str())
                .ok()
                .as_ref()
                == Some(t)
        }
        (Value::String(a), serde_json::Value::String(b)) => a == b,
        (Value::Array(a), serde_json::Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Object(a), serde_json::Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        _ => false,
    }
}

#[test]
fn random_valid_documents_read_as_serde_json_reads_them() {
    let mut rng = StdRng::seed_from_u64(10);
    for _ in 0..3000 {
        let mut doc = String::new();
        gen_value(&mut rng, 0, &mut doc);
        let theirs: serde_json::Value = serde_json::from_str(&doc).unwrap();
        let ours = parse(doc.as_bytes()).unwrap_or_else(|e| panic!("{doc:?}: {e:?}"));
        assert!(same(&ours, &theirs), "{doc:?}");
        // What we write reads back to the same value, in both parsers.
        let written = ours.to_bytes();
        assert_eq!(parse(&written).unwrap(), ours);
        let again: serde_json::Value = serde_json::from_slice(&written).unwrap();
        assert!(same(&ours, &again), "{doc:?}");
    }
}

#[test]
fn random_corruptions_are_refused_whenever_serde_json_refuses() {
    let mut rng = StdRng::seed_from_u64(11);
    const NOISE: &[u8] = b"{}[]\",:\\/'*x0-+.eEu \n\x01\xff\xc3";
    for _ in 0..20000 {
        let mut doc = String::new();
        gen_value(&mut rng, 0, &mut doc);
        let mut bytes = doc.into_bytes();
        for _ in 0..rng.random_range(1..3) {
            let at = rng.random_range(0..=bytes.len());
            match rng.random_range(0..3) {
                0 if at < bytes.len() => {
                    bytes.remove(at);
                }
                1 if at < bytes.len() => bytes[at] = NOISE[rng.random_range(0..NOISE.len())],
                _ => bytes.insert(at, NOISE[rng.random_range(0..NOISE.len())]),
            }
        }
        let theirs = serde_json::from_slice::<serde_json::Value>(&bytes);
        match parse(&bytes) {
            // serde_json (without `arbitrary_precision`) refuses numbers beyond f64; the
            // edge keeps their text and lets the upstream decide, as it does for all numbers
            Ok(_)
                if theirs
                    .as_ref()
                    .is_err_and(|e| e.to_string().contains("number out of range")) => {}
            Ok(ours) => {
                let theirs = theirs.unwrap_or_else(|e| {
                    panic!(
                        "we accept what serde_json refuses ({e}): {:?}",
                        String::from_utf8_lossy(&bytes)
                    )
                });
                assert!(
                    same(&ours, &theirs),
                    "{:?}",
                    String::from_utf8_lossy(&bytes)
                );
            }
            Err(e) => {
                // serde_json may accept what we refuse only for a duplicate key (it keeps
                // the last) or whitespace-only input.
                if theirs.is_ok() {
                    assert!(
                        e.what.contains("duplicate"),
                        "{e:?}: {:?}",
                        String::from_utf8_lossy(&bytes)
                    );
                }
            }
        }
    }
}
