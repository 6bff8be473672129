//! Tests of the parent module.
use super::*;

fn qs(s: &str) -> Query {
    parse_query_string(s, &QsOptions::default()).unwrap()
}

fn field_of(q: &Query) -> String {
    match q {
        Query::MultiMatch { fields, .. } => fields[0].name.clone(),
        Query::Prefix { field, .. }
        | Query::Wildcard { field, .. }
        | Query::Range { field, .. }
        | Query::Exists { field, .. } => field.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn terms_fields_and_operators() {
    let Query::Bool {
        must,
        should,
        must_not,
        ..
    } = qs("title:quick AND body:fox -lazy")
    else {
        panic!()
    };
    assert_eq!(must.len(), 2);
    assert_eq!(field_of(&must[0]), "title");
    assert_eq!(field_of(&must[1]), "body");
    assert!(should.is_empty());
    assert_eq!(must_not.len(), 1);
    assert_eq!(field_of(&must_not[0]), "*");
    let Query::Bool { should, .. } = qs("a b c") else {
        panic!()
    };
    assert_eq!(should.len(), 3);
}

#[test]
fn default_operator_and() {
    let o = QsOptions {
        default_operator: Operator::And,
        ..Default::default()
    };
    let Query::Bool { must, should, .. } = parse_query_string("a b OR c", &o).unwrap() else {
        panic!()
    };
    assert_eq!(must.len(), 1);
    assert_eq!(should.len(), 2);
}

#[test]
fn phrases_ranges_wildcards() {
    let Query::MultiMatch {
        kind, slop, query, ..
    } = qs("\"quick fox\"~2")
    else {
        panic!()
    };
    assert_eq!((kind, slop), (MultiKind::Phrase, 2));
    assert_eq!(query, Value::String("quick fox".into()));
    let Query::Range { bounds, .. } = qs("n:[1 TO 5}") else {
        panic!()
    };
    assert_eq!(bounds.gte, Some(Value::String("1".into())));
    assert_eq!(bounds.lt, Some(Value::String("5".into())));
    let Query::Range { bounds, .. } = qs("n:>=3") else {
        panic!()
    };
    assert_eq!(bounds.gte, Some(Value::String("3".into())));
    assert!(matches!(qs("title:qui*"), Query::Prefix { .. }));
    assert!(matches!(qs("title:q?ick"), Query::Wildcard { .. }));
    assert!(matches!(qs("_exists_:title"), Query::Exists { .. }));
    assert!(matches!(qs("*"), Query::MatchAll { .. }));
    let Query::Range { bounds, .. } = qs("n:[* TO 5]") else {
        panic!()
    };
    assert_eq!(bounds.gte, None);
}

#[test]
fn grouping_and_escapes() {
    let Query::Bool { must, .. } = qs("+title:(quick brown) +x") else {
        panic!()
    };
    let Query::Bool { should, .. } = &must[0] else {
        panic!("{:?}", must[0])
    };
    assert_eq!(field_of(&should[0]), "title");
    let Query::MultiMatch { query, .. } = qs("a\\:b") else {
        panic!()
    };
    assert_eq!(query, Value::String("a:b".into()));
}

#[test]
fn malformed_strings_are_parsing_errors() {
    for s in ["\"open", "(a b", "a)", "n:[1 TO", "title:"] {
        let e = parse_query_string(s, &QsOptions::default()).unwrap_err();
        assert_eq!(e.status(), 400, "{s}");
    }
}

/// Lucene's classic parser separates terms only at ` `, `\t`, `\n`, `\r` and U+3000 (its
/// `_WHITESPACE`); every other character, other Unicode spaces included, belongs to the
/// term. `_index\u{b}:x` is therefore a query on the unmapped field `_index\u{b}` in
/// Elasticsearch, and the multitenant edge (which follows Lucene) let it through; the engine
/// split at any Unicode whitespace and compared the index name with `x`, a prefix oracle
/// (`q=_index%0B:<guess>*`, attack18).
#[test]
fn only_lucene_whitespace_separates_terms() {
    for ws in [
        '\u{b}', '\u{c}', '\u{1c}', '\u{85}', '\u{a0}', '\u{2000}', '\u{2028}', '\u{202f}',
    ] {
        let q = qs(&format!("_index{ws}:abc*"));
        let field = field_of(&q);
        assert_eq!(field, format!("_index{ws}"), "{ws:?}: {q:?}");
        let q = qs(&format!("{ws}_index:abc*"));
        assert_eq!(field_of(&q), format!("{ws}_index"), "{ws:?}: {q:?}");
    }
    for ws in [' ', '\t', '\n', '\r', '\u{3000}'] {
        let q = qs(&format!("_index{ws}:abc*"));
        assert_eq!(field_of(&q), "_index", "{ws:?}: {q:?}");
    }
}

/// Issue 25: parentheses nested past the bound are a 400, at N+1 and far beyond (a
/// hundred thousand levels overflowed the connection thread's stack, which aborts the
/// whole engine); N levels still parse, on a thread with the engine's connection stack.
#[test]
fn nesting_is_bounded_not_a_stack_overflow() {
    let nested = |n: usize| format!("{}a{}", "(".repeat(n), ")".repeat(n));
    let parsed = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let at = |n| parse_query_string(&nested(n), &QsOptions::default());
            assert!(at(MAX_NESTING).is_ok());
            for n in [MAX_NESTING + 1, 100_000] {
                let e = at(n).unwrap_err();
                assert_eq!(e.status(), 400);
                assert!(e.to_string().contains("nested deeper than 100"), "{e}");
            }
        })
        .unwrap()
        .join();
    assert!(parsed.is_ok());
}
