//! The key rules from tables: index patterns (containment, confinement) and body checks.

use super::*;
use crate::request::classify::{classify_request, BodyKind, ClusterClass};

fn pats(p: &[&str]) -> Vec<String> {
    p.iter().map(|s| s.to_string()).collect()
}

#[test]
fn containment_table() {
    for (item, pattern, want) in [
        ("site1", "site*", true),
        ("site", "site*", true),
        ("sit", "site*", false),
        ("site*", "site*", true),
        ("site-2*", "site*", true),
        ("s*", "site*", false),
        ("*", "site*", false),
        ("*1", "site*", false),
        ("logs", "logs", true),
        ("logs*", "logs", false),
        ("logs-a", "logs", false),
        ("a-x-b", "a*b", true),
        ("a*b", "a*b", true),
        ("a-*b", "a*b", false),
    ] {
        assert_eq!(
            contained(item.as_bytes(), pattern.as_bytes()),
            want,
            "{item} in {pattern}"
        );
    }
}

#[test]
fn confinement_table() {
    let p = pats(&["site*", "logs"]);
    for (expr, want) in [
        ("*", Ok("site*,logs")),
        ("_all", Ok("site*,logs")),
        ("site1", Ok("site1")),
        ("site1,logs", Ok("site1,logs")),
        ("s*", Ok("site*")),
        ("l*", Ok("logs")),
        ("*,-site9", Ok("site*,logs,-site9")),
        ("site1,site1", Ok("site1")),
        ("secret", Err("secret")),
        ("site1,secret", Err("secret")),
        ("*1", Err("*1")),
        ("-site1", Err("-site1")),
        ("<site-{now/d}>", Err("<site-{now/d}>")),
        ("remote:site1", Err("remote:site1")),
    ] {
        let got = confine(expr.as_bytes(), &p).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(got, want.map(String::from).map_err(String::from), "{expr}");
    }
}

fn check(kind: BodyKind, body: &str) -> Result<(), String> {
    check_body(&pats(&["site*"]), kind, body.as_bytes(), "POST _search").map_err(|r| match r {
        BodyRefusal::Denied(d) => d.why.into_owned(),
        BodyRefusal::Malformed => "malformed".into(),
    })
}

#[test]
fn bodies_naming_indices() {
    let outside = |n: &str| Err(format!("index `{n}` is outside the key's indices"));
    for (kind, body, want) in [
        (BodyKind::Search, r#"{"query":{"match_all":{}}}"#, Ok(())),
        (BodyKind::Search, "", Ok(())),
        (
            BodyKind::Search,
            r#"{"query":{"terms":{"f":{"index":"secret","id":"1","path":"p"}}}}"#,
            outside("secret"),
        ),
        (
            BodyKind::Search,
            r#"{"query":{"terms":{"f":{"index":"site2","id":"1","path":"p"}}}}"#,
            Ok(()),
        ),
        (
            BodyKind::Mget,
            r#"{"docs":[{"_index":"site1","_id":"1"},{"_index":"secret","_id":"2"}]}"#,
            outside("secret"),
        ),
        (BodyKind::Mget, r#"{"docs":[{"_index":"site1","_id":"1"}]}"#, Ok(())),
        (BodyKind::Mget, r#"{"ids":["1"]}"#, Ok(())),
        (
            BodyKind::Msearch,
            "{}\n{\"query\":{}}\n{\"index\":\"site1\"}\n{}\n",
            Ok(()),
        ),
        (
            BodyKind::Msearch,
            "{\"index\":\"site1\"}\n{}\n{\"index\":[\"site2\",\"secret\"]}\n{}\n",
            outside("secret"),
        ),
        (
            BodyKind::Msearch,
            "{\"index\":\"site*,x*\"}\n{}\n",
            outside("x*"),
        ),
        (
            BodyKind::Bulk,
            "{\"index\":{\"_index\":\"site1\"}}\n{\"index\":\"secret\"}\n{\"delete\":{\"_index\":\"site2\",\"_id\":\"1\"}}\n",
            Ok(()),
        ),
        (
            BodyKind::Bulk,
            "{\"delete\":{\"_index\":\"site2\",\"_id\":\"1\"}}\n{\"create\":{\"_index\":\"secret\"}}\n{}\n",
            outside("secret"),
        ),
        (
            BodyKind::Search,
            "{not json",
            Err("malformed".into()),
        ),
    ] {
        assert_eq!(check(kind, body), want, "{kind:?} {body}");
    }
}

#[test]
fn roles_from_the_table() {
    let c = |m: Method, p: &'static str| {
        classify_request(m, p.as_bytes(), ClusterClass::SingleTenant).unwrap()
    };
    let rows = [
        (Role::Search, Method::Get, "/a/_search", true),
        (Role::Search, Method::Post, "/a/_msearch", true),
        (Role::Search, Method::Delete, "/_search/scroll", true),
        (Role::Search, Method::Head, "/", true),
        (Role::Search, Method::Get, "/a/_doc/1", true),
        (Role::Search, Method::Get, "/a/_field_caps", true),
        (Role::Search, Method::Get, "/a/_mapping", false),
        (Role::Search, Method::Get, "/_cat/indices", false),
        (Role::Search, Method::Post, "/a/_doc", false),
        (Role::Read, Method::Get, "/a/_mapping", true),
        (Role::Read, Method::Get, "/_cat/indices", true),
        (Role::Read, Method::Post, "/a/_search", true),
        (Role::Read, Method::Put, "/a", false),
        (Role::Read, Method::Delete, "/a", false),
        (Role::Read, Method::Put, "/_index_template/t", false),
        (Role::Full, Method::Delete, "/a", true),
        (Role::Full, Method::Post, "/_bulk", true),
    ];
    for (role, m, p, want) in rows {
        assert_eq!(
            permits(role, m, &c(m, p)).is_ok(),
            want,
            "{role:?} {m:?} {p}"
        );
    }
}

// Attack (tests/it/attack_keys.rs): names a body creates are checked like names it reads.
#[test]
fn bodies_creating_names() {
    let outside = |n: &str| Err(format!("index `{n}` is outside the key's indices"));
    for (kind, body, want) in [
        (
            BodyKind::Template,
            r#"{"index_patterns":["secret*"],"aliases":{"site-all":{}}}"#,
            outside("secret*"),
        ),
        (
            BodyKind::Template,
            r#"{"index_patterns":"*","order":9}"#,
            outside("*"),
        ),
        (
            BodyKind::Template,
            r#"{"index_patterns":["site-z*"],"aliases":{"secret":{}}}"#,
            outside("secret"),
        ),
        (
            BodyKind::Template,
            r#"{"index_patterns":["site-z*"],"aliases":{"site-z-all":{}}}"#,
            Ok(()),
        ),
        (
            BodyKind::IndexTemplate,
            r#"{"index_patterns":["site-y*"],"template":{"aliases":{"secret-y":{}}}}"#,
            outside("secret-y"),
        ),
        (
            BodyKind::ComponentTemplate,
            r#"{"template":{"aliases":{"<secret-{now/d}>":{}}}}"#,
            outside("<secret-{now/d}>"),
        ),
        (
            BodyKind::CreateIndex,
            r#"{"aliases":{"events-x":{"is_write_index":true}}}"#,
            outside("events-x"),
        ),
        (
            BodyKind::CreateIndex,
            r#"{"aliases":{"site8-all":{}},"settings":{"number_of_shards":1}}"#,
            Ok(()),
        ),
        (
            BodyKind::PutAlias,
            r#"{"alias":"secret2"}"#,
            outside("secret2"),
        ),
        // a search body's field named `aliases` is data, not a name
        (
            BodyKind::Search,
            r#"{"query":{"term":{"aliases":"secret"}}}"#,
            Ok(()),
        ),
    ] {
        assert_eq!(check(kind, body), want, "{kind:?} {body}");
    }
}

// Attack (tests/it/attack_keys.rs): every spelling of "close all contexts".
#[test]
fn closing_all_contexts_in_every_spelling() {
    let c = |m: Method, p: &'static str| {
        classify_request(m, p.as_bytes(), ClusterClass::SingleTenant).unwrap()
    };
    let q = |s: &'static str| Some(s.as_bytes());
    for (m, p, query, want) in [
        (Method::Delete, "/_search/scroll/_all", None, true),
        (Method::Delete, "/_search/scroll/x,_all", None, true),
        (Method::Delete, "/_search/scroll/%5Fall", None, true),
        (Method::Delete, "/_search/scroll", q("scroll_id=_all"), true),
        (
            Method::Delete,
            "/_search/scroll",
            q("scroll_id=a%2C%5Fall"),
            true,
        ),
        (Method::Delete, "/_search/scroll", q("scroll_id=%zz"), true),
        (Method::Delete, "/_search/point_in_time/_all", None, true),
        (Method::Delete, "/_search/scroll/abc", None, false),
        (Method::Delete, "/_search/scroll", q("scroll_id=abc"), false),
        (Method::Get, "/_search/scroll/_all", None, false),
        // a list seals every point in time for the key that asked
        (Method::Get, "/_search/point_in_time/_all", None, true),
        (Method::Delete, "/_all", None, false),
    ] {
        assert_eq!(clears_all(m, &c(m, p), query), want, "{m:?} {p} {query:?}");
    }
    for (body, want) in [
        (r#"{"scroll_id":"_all"}"#, true),
        (r#"{"scroll_id":["a","_all"]}"#, true),
        (r#"{"scroll_id":"a, _all"}"#, true),
        (r#"{"scroll_id":"abc"}"#, false),
    ] {
        let got = check_body(&[], BodyKind::ClearScroll, body.as_bytes(), "DELETE x");
        assert_eq!(got.is_err(), want, "{body}");
    }
    let k = |role, indices: &[&str]| KeyGrant {
        id: "k".into(),
        name: "k".into(),
        role,
        indices: pats(indices),
        expires: None,
        allowed_origins: vec![],
        allowed_ips: vec![],
    };
    assert!(!restricted(&k(Role::Full, &[])));
    assert!(restricted(&k(Role::Full, &["site*"])));
    assert!(restricted(&k(Role::Read, &[])));
    assert!(restricted(&k(Role::Search, &[])));
}

/// The definition of `*`-globs, tried every way (exponential: short inputs only).
fn glob_by_definition(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| glob_by_definition(rest, &s[i..])),
        Some((c, rest)) => s.first() == Some(c) && glob_by_definition(rest, &s[1..]),
    }
}

// Attack (tests/it/attack_keys.rs): the glob agrees with its definition on every pattern
// and name over a small alphabet, and a pathological pattern against a long name is
// linear work, not a worker held for good.
#[test]
fn glob_agrees_with_its_definition_and_is_linear() {
    let words = |max: usize, alphabet: &[u8]| {
        let mut out: Vec<Vec<u8>> = vec![vec![]];
        let mut last: Vec<Vec<u8>> = vec![vec![]];
        for _ in 0..max {
            let next: Vec<Vec<u8>> = last
                .iter()
                .flat_map(|w| {
                    alphabet.iter().map(move |&c| {
                        let mut w = w.clone();
                        w.push(c);
                        w
                    })
                })
                .collect();
            out.extend(next.iter().cloned());
            last = next;
        }
        out
    };
    let patterns = words(5, b"ab*");
    let names = words(5, b"ab");
    for p in &patterns {
        for n in &names {
            assert_eq!(
                glob_match(p, n),
                glob_by_definition(p, n),
                "{} {}",
                String::from_utf8_lossy(p),
                String::from_utf8_lossy(n)
            );
        }
    }
    let evil = "*a".repeat(120) + "*b";
    let name = "a".repeat(255);
    assert!(!glob_match(evil.as_bytes(), name.as_bytes()));
    assert!(!contained(name.as_bytes(), evil.as_bytes()));
    assert!(glob_match(evil.as_bytes(), (name + "b").as_bytes()));
    let item = "*a".repeat(2000);
    assert!(!contained(item.as_bytes(), b"site*"));
    assert!(confine(item.as_bytes(), &pats(&[&evil])).is_err());
}
