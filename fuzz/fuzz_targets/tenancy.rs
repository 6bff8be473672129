//! The multitenant rewriters (NDJSON streaming and whole JSON bodies) on arbitrary bytes:
//! never panic; feeding the body in two pieces at any split gives the one-piece result;
//! and whatever is accepted is confined: no blank line is forwarded, every index name in
//! an action line, a header, `_mget` docs or a rewritten `_index` comparison starts with
//! the tenant's prefix (the same property as `tests/it/tenancy_property.rs`, without the
//! engine).
#![no_main]

use libfuzzer_sys::fuzz_target;
use searchgate::request::classify::BodyKind;
use searchgate::tenancy::{rewrite_json_body, BulkRewriter, MsearchRewriter, Prefix, Tenant};
use serde_json::Value;

const P: &str = "abcdefghijklmnopqrst-";

const KINDS: &[BodyKind] = &[
    BodyKind::Bulk,
    BodyKind::Msearch,
    BodyKind::Search,
    BodyKind::QueryOnly,
    BodyKind::Mget,
    BodyKind::CreateIndex,
    BodyKind::Aliases,
    BodyKind::Reindex,
    BodyKind::Template,
];

fn run(kind: BodyKind, pieces: &[&[u8]]) -> Option<Vec<u8>> {
    let prefix = Prefix::from_bytes(P.as_bytes()).unwrap();
    let mut out = Vec::new();
    let ok = match kind {
        BodyKind::Bulk | BodyKind::Msearch => {
            let mut bulk = BulkRewriter::new(prefix, 1000);
            let mut ms = MsearchRewriter::new(prefix);
            pieces.iter().all(|p| match kind {
                BodyKind::Bulk => bulk.feed(p, &mut out).is_ok(),
                _ => ms.feed(p, &mut out).is_ok(),
            }) && match kind {
                BodyKind::Bulk => bulk.finish(&mut out).is_ok(),
                _ => ms.finish(&mut out).is_ok(),
            }
        }
        _ => {
            let t = Tenant { prefix: &prefix, ids: None, now_ms: 0 };
            let body: Vec<u8> = pieces.concat();
            rewrite_json_body(&t, kind, &body, &mut out).is_ok()
        }
    };
    ok.then_some(out)
}

fn starts(kind: BodyKind, s: &str) {
    for part in s.split(',') {
        let p = part.trim_start_matches('-').trim_start_matches('<');
        assert!(p.starts_with(P), "{kind:?}: {s}");
    }
}

/// `_index` comparisons of a query (data subtrees such as `_source` skipped).
fn comparisons(v: &Value) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                match (k.as_str(), x) {
                    ("_source" | "fields" | "docvalue_fields" | "stored_fields" | "doc" | "upsert", _) => continue,
                    ("term" | "prefix" | "wildcard" | "match", Value::Object(q)) => {
                        if let Some(Value::String(s)) = q.get("_index") {
                            assert!(s.starts_with(P), "{k}: {s}");
                        }
                    }
                    _ => {}
                }
                comparisons(x);
            }
        }
        Value::Array(a) => a.iter().for_each(comparisons),
        _ => {}
    }
}

fn at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

fn names(kind: BodyKind, v: Option<&Value>) {
    match v {
        Some(Value::String(s)) => starts(kind, s),
        Some(Value::Array(a)) => a.iter().for_each(|x| names(kind, Some(x))),
        _ => {}
    }
}

/// The body as the upstream reads it: every index name in the tenant's namespace.
fn confined(kind: BodyKind, out: &[u8]) {
    let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    if matches!(kind, BodyKind::Bulk | BodyKind::Msearch) {
        assert!(out.is_empty() || out.ends_with(b"\n"));
        assert!(lines.iter().all(|l| !l.iter().all(u8::is_ascii_whitespace)));
    }
    let json = |l: &[u8]| serde_json::from_slice::<Value>(l).expect("the edge writes JSON");
    match kind {
        BodyKind::Bulk => {
            let mut i = 0;
            while i < lines.len() {
                let v = json(lines[i]);
                let (action, meta) = v.as_object().and_then(|o| o.iter().next()).expect("an action");
                names(kind, meta.get("_index"));
                i += if action == "delete" { 1 } else { 2 };
            }
        }
        BodyKind::Msearch => {
            for pair in lines.chunks(2) {
                let h = json(pair[0]);
                names(kind, h.get("index"));
                names(kind, h.get("indices"));
                comparisons(&json(pair[1]));
            }
        }
        _ if out.is_empty() => {}
        BodyKind::Mget => {
            let v = json(out);
            if let Some(Value::Array(docs)) = v.get("docs") {
                docs.iter().for_each(|d| names(kind, d.get("_index")));
            }
        }
        BodyKind::Reindex => {
            let v = json(out);
            names(kind, at(&v, &["source", "index"]));
            names(kind, at(&v, &["dest", "index"]));
            comparisons(&v);
        }
        BodyKind::Template => names(kind, json(out).get("index_patterns")),
        BodyKind::Aliases => {
            let v = json(out);
            for a in v.get("actions").and_then(Value::as_array).into_iter().flatten() {
                for body in a.as_object().into_iter().flat_map(|o| o.values()) {
                    for k in ["index", "indices", "alias", "aliases"] {
                        names(kind, body.get(k));
                    }
                }
            }
        }
        _ => comparisons(&json(out)),
    }
}

fuzz_target!(|data: &[u8]| {
    let [k, split_hi, split_lo, rest @ ..] = data else {
        return;
    };
    let kind = KINDS[usize::from(*k) % KINDS.len()];
    let whole = run(kind, &[rest]);
    let at = usize::from(u16::from_be_bytes([*split_hi, *split_lo])) % (rest.len() + 1);
    if kind == BodyKind::Bulk || kind == BodyKind::Msearch {
        assert_eq!(run(kind, &[&rest[..at], &rest[at..]]), whole, "split at {at}");
    }
    if let Some(out) = whole {
        confined(kind, &out);
    }
});
