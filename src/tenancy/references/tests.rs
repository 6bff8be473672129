//! Every row of the reference table from tables: what is rewritten (and how), what is
//! refused (and with which error). Outputs show the prefix as `P:` (`\"P:\"(...)` for a
//! confined regexp).

use super::super::ids::{IdKind, IdSealer};
use super::super::json;
use super::super::prefix::{Prefix, TenancyKey};
use super::super::rewrite_json_body;
use super::*;
use crate::request::classify::BodyKind;

const P: &str = "abcdefghijklmnopqrst-";

fn prefix() -> Prefix {
    Prefix::from_bytes(P.as_bytes()).unwrap()
}

fn sealer() -> IdSealer {
    IdSealer::new(&TenancyKey::from_bytes([3; 32]))
}

fn show(out: &[u8]) -> String {
    String::from_utf8(out.to_vec()).unwrap().replace(P, "P:")
}

/// The body as the edge forwards it, for a request planned as `kind`.
fn rw(kind: BodyKind, body: &str) -> Result<String, EdgeError> {
    let p = prefix();
    let s = sealer();
    let t = Tenant {
        prefix: &p,
        ids: Some((&s, "acme")),
        now_ms: 0,
    };
    let mut out = Vec::new();
    rewrite_json_body(&t, kind, body.as_bytes(), &mut out)?;
    Ok(show(&out))
}

fn ok(kind: BodyKind, table: &[(&str, &str)]) {
    for (body, want) in table {
        match rw(kind, body) {
            Ok(got) => assert_eq!(got, *want, "{body}"),
            Err(e) => panic!("{body}: {e:?}"),
        }
    }
}

/// Refused, with (status, type, a piece of the reason).
fn refused(kind: BodyKind, table: &[(&str, &str)]) {
    for (body, reason) in table {
        let e = rw(kind, body).expect_err(body);
        let b = e.body();
        assert_eq!(b.status, 400, "{body}: {b:?}");
        assert!(
            b.reason.contains(reason),
            "{body}: {:?} does not say {reason:?}",
            b.reason
        );
    }
}

// The query DSL: `_index` values rewritten exactly where that is exact.
#[test]
fn queries_on_the_index_field() {
    ok(
        BodyKind::Search,
        &[
            (
                r#"{"query":{"term":{"_index":"books"}}}"#,
                r#"{"query":{"term":{"_index":"P:books"}}}"#,
            ),
            (
                r#"{"query":{"term":{"_index":{"value":"books","boost":2}}}}"#,
                r#"{"query":{"term":{"_index":{"value":"P:books","boost":2}}}}"#,
            ),
            (
                r#"{"query":{"terms":{"_index":["a","b"]}}}"#,
                r#"{"query":{"terms":{"_index":["P:a","P:b"]}}}"#,
            ),
            (
                r#"{"query":{"prefix":{"_index":"bo"}}}"#,
                r#"{"query":{"prefix":{"_index":"P:bo"}}}"#,
            ),
            (
                r#"{"query":{"prefix":{"_index":""}}}"#,
                r#"{"query":{"prefix":{"_index":"P:"}}}"#,
            ),
            (
                r#"{"query":{"wildcard":{"_index":"b*k?"}}}"#,
                r#"{"query":{"wildcard":{"_index":"P:b*k?"}}}"#,
            ),
            (
                r#"{"query":{"wildcard":{"_index":{"wildcard":"*"}}}}"#,
                r#"{"query":{"wildcard":{"_index":{"wildcard":"P:*"}}}}"#,
            ),
            (
                r#"{"query":{"regexp":{"_index":"b.*|x"}}}"#,
                r#"{"query":{"regexp":{"_index":"\"P:\"(b.*|x)"}}}"#,
            ),
            (
                r#"{"query":{"regexp":{"_index":{"value":"[a-c]+","flags":"ALL"}}}}"#,
                r#"{"query":{"regexp":{"_index":{"value":"\"P:\"([a-c]+)","flags":"ALL"}}}}"#,
            ),
            (
                r#"{"query":{"match":{"_index":"books"}}}"#,
                r#"{"query":{"match":{"_index":"P:books"}}}"#,
            ),
            (
                r#"{"query":{"match":{"_index":{"query":"b"}}}}"#,
                r#"{"query":{"match":{"_index":{"query":"P:b"}}}}"#,
            ),
            (
                r#"{"query":{"exists":{"field":"_index"}}}"#,
                r#"{"query":{"exists":{"field":"_index"}}}"#,
            ),
            (
                r#"{"query":{"bool":{"must":[{"prefix":{"_index":"a"}}],"should":{"term":{"_index":"b"}},"minimum_should_match":1}}}"#,
                r#"{"query":{"bool":{"must":[{"prefix":{"_index":"P:a"}}],"should":{"term":{"_index":"P:b"}},"minimum_should_match":1}}}"#,
            ),
            (
                r#"{"query":{"nested":{"path":"n","query":{"dis_max":{"queries":[{"constant_score":{"filter":{"term":{"_index":"x"}}}}]}}}}}"#,
                r#"{"query":{"nested":{"path":"n","query":{"dis_max":{"queries":[{"constant_score":{"filter":{"term":{"_index":"P:x"}}}}]}}}}}"#,
            ),
            (
                r#"{"query":{"span_multi":{"match":{"prefix":{"_index":"a"}}}}}"#,
                r#"{"query":{"span_multi":{"match":{"prefix":{"_index":"P:a"}}}}}"#,
            ),
            // other fields are data
            (
                r#"{"query":{"term":{"title":"_index"}}}"#,
                r#"{"query":{"term":{"title":"_index"}}}"#,
            ),
            (
                r#"{"query":{"range":{"n":{"gte":1.0e3}}}}"#,
                r#"{"query":{"range":{"n":{"gte":1.0e3}}}}"#,
            ),
            ("{}", "{}"),
            ("  ", ""),
        ],
    );
}

// The query DSL: index names inside queries rewritten (one name each).
#[test]
fn index_names_inside_queries() {
    ok(
        BodyKind::Search,
        &[
            (
                r#"{"query":{"terms":{"user":{"index":"users","id":"1","path":"f"}}}}"#,
                r#"{"query":{"terms":{"user":{"index":"P:users","id":"1","path":"f"}}}}"#,
            ),
            (
                r#"{"query":{"more_like_this":{"fields":["t"],"like":[{"_index":"imdb","_id":"1"},"text"]}}}"#,
                r#"{"query":{"more_like_this":{"fields":["t"],"like":[{"_index":"P:imdb","_id":"1"},"text"]}}}"#,
            ),
            (
                r#"{"query":{"geo_shape":{"loc":{"indexed_shape":{"index":"shapes2","id":"d"}}}}}"#,
                r#"{"query":{"geo_shape":{"loc":{"indexed_shape":{"index":"P:shapes2","id":"d"}}}}}"#,
            ),
            (
                r#"{"query":{"geo_shape":{"loc":{"indexed_shape":{"id":"d"}}}}}"#,
                r#"{"query":{"geo_shape":{"loc":{"indexed_shape":{"id":"d","index":"P:shapes"}}}}}"#,
            ),
            (
                r#"{"query":{"query_string":{"query":"title:(a OR b) AND *:x","fields":["title^2","*"]}}}"#,
                r#"{"query":{"query_string":{"query":"title:(a OR b) AND *:x","fields":["title^2","*"]}}}"#,
            ),
            (
                r#"{"query":{"function_score":{"query":{"term":{"_index":"a"}},"functions":[{"filter":{"term":{"_index":"b"}},"weight":2},{"gauss":{"date":{"origin":"now"}}}]}}}"#,
                r#"{"query":{"function_score":{"query":{"term":{"_index":"P:a"}},"functions":[{"filter":{"term":{"_index":"P:b"}},"weight":2},{"gauss":{"date":{"origin":"now"}}}]}}}"#,
            ),
        ],
    );
}

// The query DSL: whatever would compare `_index` inexactly, hide a query, or run a script.
#[test]
fn queries_refused() {
    refused(
        BodyKind::Search,
        &[
            (
                r#"{"query":{"fuzzy":{"_index":"books"}}}"#,
                "fuzzy on [_index]",
            ),
            (
                r#"{"query":{"range":{"_index":{"gte":"a"}}}}"#,
                "range on [_index]",
            ),
            (
                r#"{"query":{"match_phrase":{"_index":"a"}}}"#,
                "match_phrase on [_index]",
            ),
            (
                r#"{"query":{"span_term":{"_index":"a"}}}"#,
                "span_term on [_index]",
            ),
            (
                r#"{"query":{"match":{"_index":{"query":"a","fuzziness":2}}}}"#,
                "unknown field [fuzziness]",
            ),
            (
                r#"{"query":{"regexp":{"_index":{"value":"a","flags":"NONE"}}}}"#,
                "flags",
            ),
            (
                r#"{"query":{"regexp":{"_index":"a)|(.*"}}}"#,
                "invalid regular expression",
            ),
            (
                r#"{"query":{"regexp":{"_index":"<name>"}}}"#,
                "invalid regular expression",
            ),
            (r#"{"query":{"term":{"_index":5}}}"#, "string value"),
            (r#"{"query":{"terms":{"_index":[5]}}}"#, "string values"),
            (
                r#"{"query":{"wrapper":{"query":"eyJ0ZXJtIjp7fX0="}}}"#,
                "[wrapper]",
            ),
            (
                r#"{"query":{"script":{"script":"true"}}}"#,
                "scripts are not supported",
            ),
            (
                r#"{"query":{"script_score":{"query":{},"script":"1"}}}"#,
                "scripts are not supported",
            ),
            (
                r#"{"query":{"function_score":{"script_score":{"script":"1"}}}}"#,
                "scripts are not supported",
            ),
            (
                r#"{"query":{"terms_set":{"t":{"terms":["a"],"minimum_should_match_script":{"source":"1"}}}}}"#,
                "scripts",
            ),
            (
                r#"{"query":{"no_such_query":{}}}"#,
                "unknown query [no_such_query]",
            ),
            (
                r#"{"query":{"query_string":{"query":"_index:abc*"}}}"#,
                "[_index]",
            ),
            (
                r#"{"query":{"query_string":{"query":"\\u005findex:a"}}}"#,
                "[_index]",
            ),
            (
                r#"{"query":{"query_string":{"query":"x","default_field":"_ind*"}}}"#,
                "[_ind*]",
            ),
            (
                r#"{"query":{"query_string":{"query":"\"x\"","quote_field_suffix":"ex","default_field":"_ind"}}}"#,
                "quote_field_suffix",
            ),
            (
                r#"{"query":{"multi_match":{"query":"x","fields":["title","**"]}}}"#,
                "[**]",
            ),
            (
                r#"{"query":{"simple_query_string":{"query":"x","fields":["?index"]}}}"#,
                "[?index]",
            ),
            (
                r#"{"query":{"more_like_this":{"fields":["_index"],"like":"x"}}}"#,
                "[_index]",
            ),
            (
                r#"{"query":{"intervals":{"t":{"match":{"query":"a","use_field":"_index"}}}}}"#,
                "[_index]",
            ),
            (
                r#"{"query":{"intervals":{"t":{"match":{"query":"a","filter":{"script":"1"}}}}}}"#,
                "scripts",
            ),
            (
                r#"{"query":{"term":{"a":1},"match_all":{}}}"#,
                "malformed query",
            ),
            (
                r#"{"query":{"bool":{"must":{"term":{"a":1}},"x":{"y":1}}}}"#,
                "unknown field [x]",
            ),
            (
                r#"{"query":{"terms":{"u":{"id":"1","path":"f"}}}}"#,
                "requires specifying the index",
            ),
            (
                r#"{"query":{"terms":{"u":{"index":"a,b","id":"1"}}}}"#,
                "one index",
            ),
            (
                r#"{"query":{"terms":{"u":{"index":"_x","id":"1"}}}}"#,
                "must not start with",
            ),
        ],
    );
}

/// attacks-10 #4 (issue 10 §2: `_index` comparisons): the values a terms lookup fetches
/// are compared unprefixed, and as patterns, with the prefixed name upstream: refused on
/// `_index` wherever a query can stand (the review's exact `_count` body first).
#[test]
fn terms_lookups_on_the_index_field_are_refused() {
    let lookup = r#"{"terms":{"_index":{"index":"books","id":"oracle","path":"v"}}}"#;
    refused(
        BodyKind::QueryOnly,
        &[(
            r#"{"query":{"terms":{"_index":{"index":"books","id":"oracle","path":"v"}}}}"#,
            "a terms lookup on [_index]",
        )],
    );
    for (kind, body) in [
        (BodyKind::Search, format!(r#"{{"query":{lookup}}}"#)),
        (
            BodyKind::Search,
            format!(r#"{{"post_filter":{{"bool":{{"filter":[{lookup}]}}}}}}"#),
        ),
        (
            BodyKind::Search,
            format!(r#"{{"aggs":{{"f":{{"filter":{lookup}}}}}}}"#),
        ),
        (BodyKind::DeleteByQuery, format!(r#"{{"query":{lookup}}}"#)),
        (
            BodyKind::Search,
            r#"{"query":{"terms":{"_ind*":{"index":"b","id":"1","path":"v"}}}}"#.to_string(),
        ),
        (
            BodyKind::Search,
            r#"{"query":{"terms":{"_index":{"index":"b","id":"1","path":"v"},"boost":2}}}"#
                .to_string(),
        ),
    ] {
        let e = rw(kind, &body).expect_err(&body);
        assert_eq!(e.status(), 400, "{body}");
        assert!(e.body().reason.contains("[_index]"), "{body}: {e:?}");
    }
    // a lookup on another field still works, its index rewritten
    ok(
        BodyKind::QueryOnly,
        &[(
            r#"{"query":{"terms":{"tags":{"index":"books","id":"1","path":"v"}}}}"#,
            r#"{"query":{"terms":{"tags":{"index":"P:books","id":"1","path":"v"}}}}"#,
        )],
    );
}

// Aggregations: `_index` buckets allowed where only values come back, include/exclude and
// `after` rewritten; scripts and unknown types refused.
#[test]
fn aggregations_table() {
    ok(
        BodyKind::Search,
        &[
            (
                r#"{"aggs":{"i":{"terms":{"field":"_index","include":["a","b"],"exclude":"c.*"}}}}"#,
                r#"{"aggs":{"i":{"terms":{"field":"_index","include":["P:a","P:b"],"exclude":"\"P:\"(c.*)"}}}}"#,
            ),
            (
                r#"{"aggs":{"t":{"terms":{"field":"tag","include":"a.*"},"aggs":{"c":{"cardinality":{"field":"_index"}}}}}}"#,
                r#"{"aggs":{"t":{"terms":{"field":"tag","include":"a.*"},"aggs":{"c":{"cardinality":{"field":"_index"}}}}}}"#,
            ),
            (
                r#"{"aggregations":{"c":{"composite":{"sources":[{"i":{"terms":{"field":"_index"}}},{"d":{"terms":{"field":"d"}}}],"after":{"i":"books","d":"x"}}}}}"#,
                r#"{"aggregations":{"c":{"composite":{"sources":[{"i":{"terms":{"field":"_index"}}},{"d":{"terms":{"field":"d"}}}],"after":{"i":"P:books","d":"x"}}}}}"#,
            ),
            (
                r#"{"aggs":{"f":{"filter":{"term":{"_index":"a"}}},"fs":{"filters":{"filters":{"x":{"prefix":{"_index":"b"}}}}}}}"#,
                r#"{"aggs":{"f":{"filter":{"term":{"_index":"P:a"}}},"fs":{"filters":{"filters":{"x":{"prefix":{"_index":"P:b"}}}}}}}"#,
            ),
            (
                r#"{"aggs":{"h":{"top_hits":{"size":1,"sort":[{"_index":"asc"}],"_source":false}}}}"#,
                r#"{"aggs":{"h":{"top_hits":{"size":1,"sort":[{"_index":"asc"}],"_source":false}}}}"#,
            ),
        ],
    );
    refused(
        BodyKind::Search,
        &[
            (
                r#"{"aggs":{"a":{"avg":{"field":"n","script":"x"}}}}"#,
                "scripts",
            ),
            (r#"{"aggs":{"a":{"scripted_metric":{}}}}"#, "scripts"),
            (r#"{"aggs":{"a":{"bucket_script":{}}}}"#, "scripts"),
            (
                r#"{"aggs":{"a":{"nope":{}}}}"#,
                "Unknown aggregation type [nope]",
            ),
            (
                r#"{"aggs":{"a":{"rare_terms":{"field":"_index"}}}}"#,
                "[_index]",
            ),
            (
                r#"{"aggs":{"a":{"significant_terms":{"field":"_index"}}}}"#,
                "[_index]",
            ),
            (
                r#"{"aggs":{"a":{"terms":{"field":"_index","include":{"partition":0,"num_partitions":2}}}}}"#,
                "partitions",
            ),
            (
                r#"{"aggs":{"a":{"terms":{"field":"_index","include":"a)|(.*"}}}}"#,
                "invalid regular expression",
            ),
            (
                r#"{"aggs":{"a":{"composite":{"sources":[{"i":{"histogram":{"field":"_index"}}}]}}}}"#,
                "histogram on [_index]",
            ),
            (
                r#"{"aggs":{"a":{"terms":{"field":"x"},"avg":{"field":"y"}}}}"#,
                "two aggregation type",
            ),
            (r#"{"aggs":{"a":{}}}"#, "Missing definition"),
        ],
    );
}

// Search options: sort/search_after, highlight, collapse, boosts, suggesters, slices.
#[test]
fn search_options() {
    ok(
        BodyKind::Search,
        &[
            (
                r#"{"sort":["n",{"_index":"desc"}],"search_after":[3,"books"]}"#,
                r#"{"sort":["n",{"_index":"desc"}],"search_after":[3,"P:books"]}"#,
            ),
            (
                r#"{"search_after":["b",1],"sort":"_index"}"#,
                r#"{"search_after":["P:b",1],"sort":"_index"}"#,
            ),
            (
                r#"{"indices_boost":[{"books":1.4},{"logs-*":2}]}"#,
                r#"{"indices_boost":[{"P:books":1.4},{"P:logs-*":2}]}"#,
            ),
            (
                r#"{"indices_boost":{"a":1}}"#,
                r#"{"indices_boost":{"P:a":1}}"#,
            ),
            (
                r#"{"highlight":{"fields":{"title":{},"*":{}},"highlight_query":{"term":{"_index":"x"}}}}"#,
                r#"{"highlight":{"fields":{"title":{},"*":{}},"highlight_query":{"term":{"_index":"P:x"}}}}"#,
            ),
            (
                r#"{"collapse":{"field":"user","inner_hits":{"name":"n","size":2,"sort":[{"d":"asc"}]}}}"#,
                r#"{"collapse":{"field":"user","inner_hits":{"name":"n","size":2,"sort":[{"d":"asc"}]}}}"#,
            ),
            (
                r#"{"rescore":{"window_size":5,"query":{"rescore_query":{"term":{"_index":"a"}}}}}"#,
                r#"{"rescore":{"window_size":5,"query":{"rescore_query":{"term":{"_index":"P:a"}}}}}"#,
            ),
            (
                r#"{"suggest":{"s":{"text":"x","term":{"field":"title"}}},"slice":{"id":0,"max":2}}"#,
                r#"{"suggest":{"s":{"text":"x","term":{"field":"title"}}},"slice":{"id":0,"max":2}}"#,
            ),
            (
                r#"{"size":0,"from":1.0,"track_total_hits":true,"_source":{"includes":["a"]},"stored_fields":"_index","docvalue_fields":["_index"]}"#,
                r#"{"size":0,"from":1.0,"track_total_hits":true,"_source":{"includes":["a"]},"stored_fields":"_index","docvalue_fields":["_index"]}"#,
            ),
        ],
    );
    refused(
        BodyKind::Search,
        &[
            (r#"{"sort":[{"_script":{"script":"1"}}]}"#, "scripts"),
            (r#"{"sort":["_ind*"]}"#, "sort on [_ind*]"),
            (r#"{"sort":"_index","search_after":[1]}"#, "must be strings"),
            (
                r#"{"highlight":{"fields":{"_index":{}}}}"#,
                "highlighting [_index]",
            ),
            (r#"{"collapse":{"field":"_index"}}"#, "[_index]"),
            (r#"{"slice":{"id":0,"max":2,"field":"_index"}}"#, "[_index]"),
            (r#"{"script_fields":{"x":{"script":"1"}}}"#, "scripts"),
            (r#"{"runtime_mappings":{}}"#, "scripts"),
            (r#"{"ext":{}}"#, "[ext]"),
            (
                r#"{"suggest":{"s":{"phrase":{"field":"t","collate":{"query":{}}}}}}"#,
                "[collate]",
            ),
            (
                r#"{"suggest":{"s":{"term":{"field":"_index"}}}}"#,
                "[_index]",
            ),
            (r#"{"indices_boost":[{"a,b":1}]}"#, "one index name"),
            (r#"{"nope":1}"#, "Unknown key"),
            (r#"{"query":{},"query":{}}"#, "duplicate field [query]"),
            (r#"{"q\u0075ery":{},"query":{}}"#, "duplicate field [query]"),
        ],
    );
}

// Point in time in a search body: the token opened; tokens of other clusters missing.
#[test]
fn pit_in_search_bodies() {
    let token = sealer().seal("acme", IdKind::Pit, b"RAWPIT");
    let body = format!(r#"{{"pit":{{"id":"{token}","keep_alive":"1m"}},"size":1}}"#);
    assert_eq!(
        rw(BodyKind::Search, &body).unwrap(),
        r#"{"pit":{"id":"RAWPIT","keep_alive":"1m"},"size":1}"#
    );
    let other = sealer().seal("other", IdKind::Pit, b"RAWPIT");
    let e = rw(
        BodyKind::Search,
        &format!(r#"{{"pit":{{"id":"{other}"}}}}"#),
    )
    .unwrap_err();
    assert_eq!(e.status(), 404);
    let scroll = sealer().seal("acme", IdKind::Scroll, b"RAWPIT");
    assert!(rw(
        BodyKind::Search,
        &format!(r#"{{"pit":{{"id":"{scroll}"}}}}"#)
    )
    .is_err());
}

// Bodies of one query: known keys only.
#[test]
fn query_only_bodies() {
    ok(
        BodyKind::QueryOnly,
        &[(
            r#"{"query":{"term":{"_index":"a"}}}"#,
            r#"{"query":{"term":{"_index":"P:a"}}}"#,
        )],
    );
    ok(
        BodyKind::FieldCaps,
        &[(
            r#"{"index_filter":{"prefix":{"_index":"a"}}}"#,
            r#"{"index_filter":{"prefix":{"_index":"P:a"}}}"#,
        )],
    );
    // elasticsearch-py 8/9 send the field names in the body
    ok(
        BodyKind::FieldCaps,
        &[
            (r#"{"fields":"tag,n"}"#, r#"{"fields":"tag,n"}"#),
            (r#"{"fields":["tag","n"]}"#, r#"{"fields":["tag","n"]}"#),
        ],
    );
    refused(
        BodyKind::FieldCaps,
        &[
            (r#"{"fields":{"a":1}}"#, "[fields] must be a string"),
            (r#"{"fields":"a","size":1}"#, "unknown field [size]"),
        ],
    );
    refused(
        BodyKind::QueryOnly,
        &[(r#"{"query":{},"size":1}"#, "unknown field [size]")],
    );
    refused(BodyKind::None, &[("{}", "does not support having a body")]);
    assert_eq!(rw(BodyKind::None, " \n").unwrap(), "");
    assert_eq!(
        rw(BodyKind::Document, "{\"a\" : 1.50}").unwrap(),
        "{\"a\" : 1.50}"
    );
}

// The table in the module docs names every query type of QUERIES.
#[test]
fn every_query_type_is_in_the_documented_table() {
    let doc = include_str!("mod.rs");
    for (name, _) in query::QUERIES {
        assert!(
            doc.contains(&format!("`{name}`")),
            "{name} is not in the table"
        );
    }
    for (name, _) in search::SEARCH_KEYS {
        let listed = doc.contains(&format!("`{name}`"))
            || matches!(*name, "aggregations" | "post_filter" | "stats");
        assert!(listed, "{name} is not in the table");
    }
    assert!(json::parse(b"{}").is_ok());
}

#[path = "tests_admin.rs"]
mod admin_tests;

#[path = "tests_params.rs"]
mod params_tests;

#[path = "tests_aggs.rs"]
mod aggs_tests;
