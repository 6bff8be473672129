//! Sealed ids: binding to cluster and kind, tampering, and the response filter at every
//! split point.

use super::*;
use crate::tenancy::prefix::Prefix;

fn sealer() -> Arc<IdSealer> {
    Arc::new(IdSealer::new(&TenancyKey::from_bytes([5; 32])))
}

#[test]
fn tokens_open_only_on_their_cluster_and_kind() {
    let s = sealer();
    let raw = "DXF1ZXJ5QW5kRmV0Y2gBAAAAAAAAAD4WYm9laVYtZndUQlNsdDcwakFMNjU1QQ==";
    let t = s.seal("acme", IdKind::Scroll, raw.as_bytes());
    assert!(t.starts_with(TOKEN_TAG));
    assert!(!t.contains(raw) && !t.contains("DXF1"));
    assert_eq!(s.open("acme", IdKind::Scroll, &t).as_deref(), Some(raw));
    assert_eq!(s.open("other", IdKind::Scroll, &t), None);
    assert_eq!(s.open("acme", IdKind::Pit, &t), None);
    assert_eq!(s.open("acme", IdKind::Scroll, raw), None);
    // another node secret opens nothing
    let other = IdSealer::new(&TenancyKey::from_bytes([6; 32]));
    assert_eq!(other.open("acme", IdKind::Scroll, &t), None);
    // every single-character change or truncation opens nothing
    let b = t.as_bytes();
    for i in TOKEN_TAG.len()..b.len() {
        let mut c = b.to_vec();
        c[i] = if c[i] == b'A' { b'B' } else { b'A' };
        assert_eq!(
            s.open("acme", IdKind::Scroll, std::str::from_utf8(&c).unwrap()),
            None
        );
        assert_eq!(s.open("acme", IdKind::Scroll, &t[..i]), None);
    }
    // one id, one token (a synthetic nonce): a point in time's id comes back as it went;
    // another id, kind or cluster gives another token
    assert_eq!(t, s.seal("acme", IdKind::Scroll, raw.as_bytes()));
    let other = s.seal("acme", IdKind::Scroll, b"another id");
    let (a, b) = (&t[TOKEN_TAG.len()..][..16], &other[TOKEN_TAG.len()..][..16]);
    assert_ne!(a, b, "distinct nonces");
    assert_ne!(t, s.seal("acme", IdKind::Pit, raw.as_bytes()));
    assert_ne!(t, s.seal("acme2", IdKind::Scroll, raw.as_bytes()));
    let e = s.open_or_missing("acme", IdKind::Pit, "junk").unwrap_err();
    let body = e.body();
    assert_eq!(body.status, 404);
    assert_eq!(
        body.root_cause.as_ref().map(|r| r.0.as_str()),
        Some("search_context_missing_exception")
    );
}

fn filter(fields: IdFields, chunks: &[&[u8]]) -> Vec<u8> {
    let p = Prefix::from_bytes(b"abcdefghijklmnopqrst-").unwrap();
    let mut f = IdFilter::new(Stripper::new(p), sealer(), Arc::from("acme"), fields);
    let mut out = Vec::new();
    for c in chunks {
        f.feed(c, &mut out);
    }
    f.finish(&mut out);
    out
}

/// The filtered body with every token opened again (so outputs compare across runs).
fn opened(out: &[u8], kind_of: &dyn Fn(&str) -> IdKind) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(out)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(out)));
    if let Some(o) = v.as_object_mut() {
        for (k, val) in o.iter_mut() {
            if let Some(t) = val.as_str().filter(|t| t.starts_with(TOKEN_TAG)) {
                let raw = sealer()
                    .open("acme", kind_of(k), t)
                    .expect("a token of ours");
                *val = serde_json::Value::String(format!("OPENED:{raw}"));
            }
        }
    }
    v
}

#[test]
fn search_responses_at_every_split_point() {
    let body = br#"{"_scroll_id":"RAWSCROLL==","took":3,"pit_id":"RAWPIT","hits":{"hits":[{"_index":"abcdefghijklmnopqrst-books","_scroll_id":"inner","id":"x"}]},"s":"a\"b"}"#;
    let kind = |k: &str| {
        if k == "pit_id" {
            IdKind::Pit
        } else {
            IdKind::Scroll
        }
    };
    let whole = filter(IdFields::Search, &[body]);
    let text = String::from_utf8_lossy(&whole).into_owned();
    assert!(
        !text.contains("RAWSCROLL") && !text.contains("RAWPIT"),
        "{text}"
    );
    assert!(!text.contains("abcdefghijklmnopqrst-"), "{text}");
    assert!(
        text.contains("\"_scroll_id\":\"inner\""),
        "nested ids are data: {text}"
    );
    let want = opened(&whole, &kind);
    assert_eq!(want["_scroll_id"], "OPENED:RAWSCROLL==");
    assert_eq!(want["pit_id"], "OPENED:RAWPIT");
    assert_eq!(want["hits"]["hits"][0]["_index"], "books");
    for i in 0..=body.len() {
        for j in (i..=body.len()).step_by(7) {
            let out = filter(IdFields::Search, &[&body[..i], &body[i..j], &body[j..]]);
            assert_eq!(opened(&out, &kind), want, "split at {i},{j}");
        }
    }
}

#[test]
fn pit_open_and_other_shapes() {
    let out = filter(IdFields::PitOpen, &[b"{\n  \"id\" : \"46ToAwMDaWR4\"\n}"]);
    let v = opened(&out, &|_| IdKind::Pit);
    assert_eq!(v["id"], "OPENED:46ToAwMDaWR4");
    // errors pass, stripped; non-objects are refused (see the test below)
    for body in [
        &br#"{"error":{"type":"x","index":"abcdefghijklmnopqrst-b"},"status":404}"#[..],
        b"[1,2]",
        b"",
    ] {
        let out = filter(IdFields::Search, &[body]);
        assert!(!String::from_utf8_lossy(&out).contains("abcdefghijklmnopqrst-"));
    }
    // an id cut by the end of the body is never released
    let out = filter(IdFields::Search, &[b"{\"_scroll_id\":\"RAWSCR"]);
    assert!(!String::from_utf8_lossy(&out).contains("RAW"));
}

/// attacks-10 #3 (issue 10 §3: ids reveal nothing): a search or point-in-time response in
/// YAML, Smile or CBOR (or any body that is not a JSON object) is never released: the
/// filter writes the 502 error body instead, at every split point.
#[test]
fn non_json_bodies_are_refused_not_passed() {
    let yaml = b"---\n_scroll_id: \"RAWSCROLL==\"\npit_id: \"RAWPIT\"\n";
    let smile = b":)\n\x03\xfa\x89_scroll_id\x4aRAWSCROLL==\xfb";
    let cbor = b"\xbf\x6a_scroll_idkRAWSCROLL==\xff";
    let pit_yaml = b"---\nid: \"RAWPITID\"\n";
    let cases: &[(IdFields, &[u8])] = &[
        (IdFields::Search, yaml),
        (IdFields::Search, smile),
        (IdFields::Search, cbor),
        (IdFields::Search, b"  [\"RAWSCROLL==\"]"),
        (IdFields::PitOpen, pit_yaml),
    ];
    let refusal = refused_body();
    for &(fields, body) in cases {
        for i in 0..=body.len() {
            let out = filter(fields, &[&body[..i], &body[i..]]);
            let text = String::from_utf8_lossy(&out);
            assert!(!text.contains("RAW"), "split at {i}: {text}");
            assert!(out.ends_with(&refusal), "split at {i}: {text}");
            let trimmed = out[..out.len() - refusal.len()].trim_ascii();
            assert!(trimmed.is_empty(), "split at {i}: {text}");
        }
    }
    let v: serde_json::Value = serde_json::from_slice(&refusal).unwrap();
    assert_eq!(v["status"], 502);
    // a filter built refusing (the upstream's media type was not JSON) releases nothing
    let p = Prefix::from_bytes(b"abcdefghijklmnopqrst-").unwrap();
    let mut f = IdFilter::refusing(Stripper::new(p), sealer(), IdFields::Search);
    let mut out = Vec::new();
    f.feed(br#"{"_scroll_id":"RAWSCROLL=="}"#, &mut out);
    f.finish(&mut out);
    assert!(f.refused());
    assert_eq!(out, refusal);
}

// issue 25 #3: the shards a scroll's first page searched (`_shards.total`: the shard
// contexts it opened upstream) are read at every split point, in any member order, and
// never from a nested `_shards` (a hit's source) or a string.
#[test]
fn the_shards_a_search_opened_are_read_at_every_split() {
    let p = Prefix::from_bytes(b"abcdefghijklmnopqrst-").unwrap();
    let cases: &[(&str, Option<u64>)] = &[
        (
            r#"{"_scroll_id":"RAW","took":1,"_shards":{"total":5,"successful":5,"skipped":0,"failed":0},"hits":{}}"#,
            Some(5),
        ),
        (
            r#"{ "hits" : {"hits":[{"_source":{"_shards":{"total":99}}}]}, "_shards" : { "total" : 12 } }"#,
            Some(12),
        ),
        (r#"{"_shards":{"total":3}}"#, Some(3)),
        (r#"{"hits":{"_shards":{"total":7}},"x":"_shards"}"#, None),
        (r#"{"_shards":"total"}"#, None),
        (r#"{"_shards":{"total":-1}}"#, None),
    ];
    for (body, want) in cases {
        let b = body.as_bytes();
        for split in 0..=b.len() {
            let mut f = IdFilter::new(
                Stripper::new(p),
                sealer(),
                Arc::from("acme"),
                IdFields::Search,
            );
            let mut out = Vec::new();
            f.feed(&b[..split], &mut out);
            f.feed(&b[split..], &mut out);
            f.finish(&mut out);
            assert_eq!(f.shards_total(), *want, "{body} split at {split}");
        }
    }
}

// Attack (tests/it/attack_keys.rs): a token opens only for the principal it was sealed for.
#[test]
fn tokens_open_only_for_their_principal() {
    let s = sealer();
    let master = binding("acme", None);
    let web = binding("acme", Some("kweb"));
    let other = binding("acme", Some("kother"));
    assert_eq!(
        master, "acme",
        "the master's tokens from before keys still open"
    );
    let t = s.seal(&master, IdKind::Scroll, b"RAW");
    assert_eq!(s.open(&master, IdKind::Scroll, &t).as_deref(), Some("RAW"));
    assert_eq!(s.open(&web, IdKind::Scroll, &t), None);
    let k = s.seal(&web, IdKind::Scroll, b"RAW");
    assert_eq!(s.open(&web, IdKind::Scroll, &k).as_deref(), Some("RAW"));
    assert_eq!(s.open(&other, IdKind::Scroll, &k), None);
    assert_eq!(s.open(&master, IdKind::Scroll, &k), None);
    // no cluster id and key id pair spells another's binding
    assert_ne!(
        binding("acme\u{1f}kweb", None),
        binding("acme", Some("kweb2"))
    );
}
