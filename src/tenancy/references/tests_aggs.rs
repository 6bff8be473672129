//! attacks-10 #6 and #10 (issue 10 §2: every index reference modelled): every aggregation
//! type reads only the keys its row lists, every key that holds a query is read as one,
//! and every sort (search bodies, hits, aggregations, by-query jobs, `_reindex` sources)
//! reads its options from one table, a nested `filter` as a query.

use super::*;

/// A query the edge must see (rewritten) wherever one can stand.
const SEEN: &str = r#"{"prefix":{"_index":"a"}}"#;
const SEEN_OUT: &str = r#"{"prefix":{"_index":"P:a"}}"#;
/// Queries that must never pass unread.
const HIDDEN: &[(&str, &str)] = &[
    (r#"{"wrapper":{"query":"e30="}}"#, "[wrapper]"),
    (
        r#"{"terms":{"_index":{"index":"b","id":"1","path":"v"}}}"#,
        "terms lookup on [_index]",
    ),
    (r#"{"query_string":{"query":"_index:a*"}}"#, "[_index]"),
    (r#"{"script":{"script":"true"}}"#, "scripts"),
];

/// Bodies with `{Q}` where a query stands: the query is rewritten, hidden ones refused.
fn every_query_position(kind: BodyKind, bodies: &[&str]) {
    for body in bodies {
        let got = rw(kind, &body.replace("{Q}", SEEN)).unwrap_or_else(|e| panic!("{body}: {e:?}"));
        let mut want_body = body.replace("{Q}", SEEN_OUT);
        if kind == BodyKind::Reindex {
            want_body = want_body.replace(r#""index":""#, r#""index":"P:"#);
        }
        let want = show(
            json::parse(want_body.as_bytes())
                .unwrap()
                .to_bytes()
                .as_slice(),
        );
        assert_eq!(got, want, "{body}");
        for (q, why) in HIDDEN {
            let e = rw(kind, &body.replace("{Q}", q)).expect_err(body);
            assert_eq!(e.status(), 400, "{body} with {q}");
            assert!(e.body().reason.contains(why), "{body} with {q}: {e:?}");
        }
    }
}

#[test]
fn queries_inside_aggregations_are_read() {
    every_query_position(
        BodyKind::Search,
        &[
            // the review's request: significant_text.background_filter (bg_count oracle)
            r#"{"size":0,"query":{"match":{"body":"x"}},"aggs":{"s":{"significant_text":{"field":"body","background_filter":{Q}}}}}"#,
            r#"{"aggs":{"s":{"significant_terms":{"field":"tag","background_filter":{Q},"jlh":{}}}}}"#,
            r#"{"aggs":{"t":{"t_test":{"a":{"field":"v","filter":{Q}},"b":{"field":"v","filter":{Q}},"type":"heteroscedastic"}}}}"#,
            r#"{"aggs":{"m":{"top_metrics":{"metrics":{"field":"v"},"sort":[{"n.v":{"order":"desc","nested":{"path":"n","filter":{Q}}}}]}}}}"#,
            r#"{"aggs":{"m":{"top_metrics":{"metrics":[{"field":"v"}],"sort":{"n.v":{"nested_filter":{Q}}}}}}}"#,
            r#"{"aggs":{"f":{"filter":{Q}},"fs":{"filters":{"filters":[{Q}],"other_bucket":true}}}}"#,
            r#"{"aggs":{"a":{"adjacency_matrix":{"filters":{"x":{Q}},"separator":"&"}}}}"#,
            r#"{"aggs":{"h":{"terms":{"field":"t"},"aggs":{"s":{"bucket_sort":{"sort":[{"n":{"nested":{"path":"n","filter":{Q}}}}],"size":3}}}}}}"#,
            r#"{"aggs":{"h":{"top_hits":{"sort":[{"n":{"nested":{"path":"n","filter":{Q}}}}]}}}}"#,
        ],
    );
}

#[test]
fn sorts_are_read_everywhere() {
    every_query_position(
        BodyKind::Search,
        &[
            r#"{"sort":[{"n.v":{"order":"desc","nested":{"path":"n","filter":{Q}}}}]}"#,
            r#"{"sort":{"n.v":{"nested":{"path":"n","nested":{"path":"n.m","filter":{Q}}}}}}"#,
            r#"{"sort":[{"n.v":{"nested_path":"n","nested_filter":{Q}}}]}"#,
            r#"{"sort":[{"_geo_distance":{"loc":[1,2],"order":"asc","nested":{"path":"n","filter":{Q}}}}]}"#,
            r#"{"collapse":{"field":"u","inner_hits":{"sort":[{"n":{"nested":{"path":"n","filter":{Q}}}}]}}}"#,
        ],
    );
    // the review's request (#10): a by-query job's sort, and a `_reindex` source's
    every_query_position(
        BodyKind::DeleteByQuery,
        &[
            r#"{"query":{"match_all":{}},"max_docs":1,"sort":[{"n.v":{"order":"desc","nested":{"path":"n","filter":{Q}}}}]}"#,
        ],
    );
    every_query_position(
        BodyKind::UpdateByQuery,
        &[r#"{"max_docs":1,"sort":{"n.v":{"nested":{"path":"n","filter":{Q}}}}}"#],
    );
    every_query_position(
        BodyKind::Reindex,
        &[
            r#"{"source":{"index":"a","sort":[{"n.v":{"nested":{"path":"n","filter":{Q}}}}]},"dest":{"index":"b"}}"#,
        ],
    );
}

#[test]
fn unknown_keys_and_options_are_refused() {
    refused(
        BodyKind::Search,
        &[
            (
                r#"{"aggs":{"a":{"avg":{"field":"x","filter":{"match_all":{}}}}}}"#,
                "[avg] unknown field [filter]",
            ),
            (
                r#"{"aggs":{"a":{"terms":{"field":"x","background_filter":{}}}}}"#,
                "[terms] unknown field [background_filter]",
            ),
            (
                r#"{"aggs":{"a":{"significant_text":{"field":"x","bogus":1}}}}"#,
                "[significant_text] unknown field [bogus]",
            ),
            (
                r#"{"aggs":{"a":{"significant_text":{"field":"x","script_heuristic":{"script":"1"}}}}}"#,
                "scripts",
            ),
            (
                r#"{"aggs":{"a":{"t_test":{"a":{"field":"v","query":{}}}}}}"#,
                "unknown field [query]",
            ),
            (
                r#"{"aggs":{"a":{"t_test":{"a":{"field":"_index"}}}}}"#,
                "[_index]",
            ),
            (
                r#"{"aggs":{"a":{"weighted_avg":{"value":{"field":"v","script":"1"},"weight":{"field":"w"}}}}}"#,
                "scripts",
            ),
            (
                r#"{"aggs":{"a":{"top_metrics":{"metrics":{"field":"v"},"sort":{"_script":{}}}}}}"#,
                "scripts",
            ),
            (
                r#"{"aggs":{"a":{"global":{"x":1}}}}"#,
                "[global] unknown field [x]",
            ),
            (
                r#"{"aggs":{"a":{"percentiles":{"field":"v","tdigest":{"script":"1"}}}}}"#,
                "scripts",
            ),
            (
                r#"{"aggs":{"a":{"histogram":{"field":"v","interval":1,"order":{"_key":"asc"},"bogus":{}}}}}"#,
                "unknown field [bogus]",
            ),
            (
                r#"{"aggs":{"a":{"composite":{"sources":[{"s":{"terms":{"field":"x","filter":{}}}}]}}}}"#,
                "[terms] unknown field [filter]",
            ),
            (
                r#"{"aggs":{"a":{"composite":{"sources":[{"s":{"nope":{"field":"x"}}}]}}}}"#,
                "invalid source type",
            ),
            (
                r#"{"aggs":{"a":{"avg":{"field":{"x":1}}}}}"#,
                "must be a field name",
            ),
            (
                r#"{"sort":[{"n":{"order":"asc","filter":{"match_all":{}}}}]}"#,
                "unknown sort option [filter]",
            ),
            (
                r#"{"sort":[{"n":{"nested":{"path":"n","query":{}}}}]}"#,
                "unknown field [query]",
            ),
            (
                r#"{"sort":[{"n":{"nested":{"path":"_index"}}}]}"#,
                "[_index]",
            ),
            (
                r#"{"sort":[{"_geo_distance":{"_index":[1,2]}}]}"#,
                "_geo_distance on [_index]",
            ),
            (
                r#"{"sort":[{"_geo_distance":{"a":[1,2],"b":[3,4]}}]}"#,
                "one field",
            ),
            (r#"{"sort":[{"n":7}]}"#, "malformed sort"),
        ],
    );
    refused(
        BodyKind::DeleteByQuery,
        &[
            (
                r#"{"sort":[{"n":{"nested":{"path":"n","filter":{"wrapper":{"query":"e30="}}}}}]}"#,
                "[wrapper]",
            ),
            (r#"{"sort":[{"_index":"asc"}]}"#, "sort on [_index]"),
            (r#"{"slice":{"id":0,"max":2,"x":1}}"#, "unknown field [x]"),
        ],
    );
}

// The documented key lists and the machine table agree on the type names.
#[test]
fn every_aggregation_type_is_in_the_documented_table() {
    let doc = include_str!("mod.rs");
    for (name, _) in aggs::AGGS {
        assert!(
            doc.contains(&format!("`{name}`")),
            "{name} is not in the table"
        );
    }
}
