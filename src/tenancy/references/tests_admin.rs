//! Rows of the table for document APIs, index administration and sealed-id bodies (the
//! query parameters' rows: `tests_params.rs`).

use super::*;

#[test]
fn document_bodies() {
    ok(
        BodyKind::Mget,
        &[
            (
                r#"{"docs":[{"_index":"a","_id":"1"},{"_id":"2","routing":"r"}]}"#,
                r#"{"docs":[{"_index":"P:a","_id":"1"},{"_id":"2","routing":"r"}]}"#,
            ),
            (r#"{"ids":["1","2"]}"#, r#"{"ids":["1","2"]}"#),
        ],
    );
    refused(
        BodyKind::Mget,
        &[
            (
                r#"{"docs":[{"_index":"_x","_id":"1"}]}"#,
                "must not start with",
            ),
            (r#"{"docs":[{"_index":7,"_id":"1"}]}"#, "must be a string"),
            (r#"{"docs":[{"_index":"a,b","_id":"1"}]}"#, "one index"),
            (
                r#"{"docs":[{"_index":"a","_id":"1","x":1}]}"#,
                "unknown field [x]",
            ),
        ],
    );
    ok(
        BodyKind::Update,
        &[(
            r#"{"script":{"source":"ctx._source.n += params.n","params":{"n":1}},"upsert":{"n":0}}"#,
            r#"{"script":{"source":"ctx._source.n += params.n","params":{"n":1}},"upsert":{"n":0}}"#,
        )],
    );
    refused(
        BodyKind::Update,
        &[
            (
                r#"{"script":{"source":"ctx._index = 'other'"}}"#,
                "Painless outside the subset",
            ),
            (r#"{"script":{"id":"stored"}}"#, "only inline Painless"),
            (r#"{"doc":{},"pipeline":"p"}"#, "unknown field [pipeline]"),
        ],
    );
    ok(
        BodyKind::TermVectors,
        &[(
            r#"{"_index":"a","doc":{"t":"x"}}"#,
            r#"{"_index":"P:a","doc":{"t":"x"}}"#,
        )],
    );
}

#[test]
fn index_creation_settings_and_mappings() {
    ok(
        BodyKind::CreateIndex,
        &[
            (
                r#"{"aliases":{"al":{"filter":{"term":{"_index":"x"}}},"b":{}},"settings":{"number_of_shards":2}}"#,
                r#"{"aliases":{"P:al":{"filter":{"term":{"_index":"P:x"}}},"P:b":{}},"settings":{"number_of_shards":2}}"#,
            ),
            (
                r#"{"mappings":{"properties":{"a":{"type":"alias","path":"b"},"t":{"type":"text","copy_to":"all"}}}}"#,
                r#"{"mappings":{"properties":{"a":{"type":"alias","path":"b"},"t":{"type":"text","copy_to":"all"}}}}"#,
            ),
        ],
    );
    refused(
        BodyKind::CreateIndex,
        &[
            (
                r#"{"\u0061liases":{"x":{}},"aliases":{}}"#,
                "duplicate field [aliases]",
            ),
            (r#"{"aliases":{"a*":{}}}"#, "alias name must not be"),
            (r#"{"aliases":{"_a":{}}}"#, "alias name must not be"),
            (
                r#"{"settings":{"index":{"default_pipeline":"p"}}}"#,
                "default_pipeline",
            ),
            (
                r#"{"settings":{"index.final_pipeline":"p"}}"#,
                "final_pipeline",
            ),
            (
                r#"{"settings":{"query.default_field":["_index"]}}"#,
                "[_index]",
            ),
            (
                r#"{"settings":{"index":{"query":{"default_field":"_ind*"}}}}"#,
                "[_ind*]",
            ),
            (
                r#"{"mappings":{"properties":{"a":{"type":"alias","path":"_index"}}}}"#,
                "field alias",
            ),
            (
                r#"{"mappings":{"properties":{"t":{"type":"text","copy_to":"_index"}}}}"#,
                "[_index]",
            ),
            (
                r#"{"mappings":{"runtime":{"r":{"type":"keyword"}}}}"#,
                "[runtime]",
            ),
            (r#"{"warmers":{}}"#, "unknown key [warmers]"),
        ],
    );
    let long = format!(r#"{{"aliases":{{"{}":{{}}}}}}"#, "a".repeat(240));
    let e = rw(BodyKind::CreateIndex, &long).unwrap_err();
    assert!(e.body().reason.contains("(240 > 234)"), "{e:?}");
    refused(
        BodyKind::Settings,
        &[(r#"{"index":{"default_pipeline":"p"}}"#, "default_pipeline")],
    );
    ok(
        BodyKind::Settings,
        &[(
            r#"{"index":{"refresh_interval":"5s"}}"#,
            r#"{"index":{"refresh_interval":"5s"}}"#,
        )],
    );
    // replicas added by an update are not counted against the plan (attacks-10 r2 #2)
    refused(
        BodyKind::Settings,
        &[(
            r#"{"index":{"number_of_replicas":2}}"#,
            "number_of_replicas",
        )],
    );
    refused(
        BodyKind::Mapping,
        &[(
            r#"{"properties":{"x":{"type":"alias","path":"_index"}}}"#,
            "field alias",
        )],
    );
}

#[test]
fn alias_actions() {
    ok(
        BodyKind::Aliases,
        &[(
            r#"{"actions":[{"add":{"index":"logs-*","alias":"logs","filter":{"term":{"_index":"x"}}}},{"remove":{"indices":["a","b"],"aliases":["c*"]}},{"remove_index":{"index":"old"}}]}"#,
            r#"{"actions":[{"add":{"index":"P:logs-*","alias":"P:logs","filter":{"term":{"_index":"P:x"}}}},{"remove":{"indices":["P:a","P:b"],"aliases":["P:c*"]}},{"remove_index":{"index":"P:old"}}]}"#,
        )],
    );
    refused(
        BodyKind::Aliases,
        &[
            (
                r#"{"actions":[{"add":{"index":"a","alias":"b*"}}]}"#,
                "one alias name",
            ),
            (r#"{"actions":[{"add":{"alias":"b"}}]}"#, "requires [index]"),
            (
                r#"{"actions":[{"frob":{"index":"a"}}]}"#,
                "Unsupported action [frob]",
            ),
            (
                r#"{"actions":[{"add":{"index":"a","alias":"x","pipeline":"p"}}]}"#,
                "unknown field",
            ),
        ],
    );
    let e = rw(
        BodyKind::Aliases,
        r#"{"actions":[{"remove_index":{"index":"logs-*"}}]}"#,
    )
    .unwrap_err();
    assert_eq!(e.status(), 501);
    ok(
        BodyKind::PutAlias,
        &[(
            r#"{"index":"a,b","alias":"x","routing":"1"}"#,
            r#"{"index":"P:a,P:b","alias":"P:x","routing":"1"}"#,
        )],
    );
    refused(
        BodyKind::PutAlias,
        &[(r#"{"alias":"x,y"}"#, "one alias name")],
    );
}

#[test]
fn templates() {
    ok(
        BodyKind::Template,
        &[(
            r#"{"index_patterns":["logs-*","*"],"order":1,"aliases":{"{index}-al":{}},"settings":{"refresh_interval":"5s"}}"#,
            r#"{"index_patterns":["P:logs-*","P:*"],"order":1,"aliases":{"P:{index}-al":{}},"settings":{"refresh_interval":"5s"}}"#,
        )],
    );
    ok(
        BodyKind::IndexTemplate,
        &[(
            r#"{"index_patterns":"ev-*","composed_of":["c1"],"priority":5,"template":{"mappings":{"properties":{}}}}"#,
            r#"{"index_patterns":"P:ev-*","composed_of":["P:c1"],"priority":5,"template":{"mappings":{"properties":{}}}}"#,
        )],
    );
    ok(
        BodyKind::ComponentTemplate,
        &[(
            r#"{"template":{"aliases":{"a":{}}}}"#,
            r#"{"template":{"aliases":{"P:a":{}}}}"#,
        )],
    );
    refused(
        BodyKind::Template,
        &[
            (
                r#"{"index_patterns":["a"],"settings":{"number_of_shards":1}}"#,
                "number_of_shards",
            ),
            (
                r#"{"index_patterns":["a"],"settings":{"index":{"number_of_replicas":0}}}"#,
                "number_of_replicas",
            ),
            (
                r#"{"index_patterns":["a"],"settings":{"index.auto_expand_replicas":"0-1"}}"#,
                "auto_expand_replicas",
            ),
            (r#"{"index_patterns":["a,b"]}"#, "one pattern"),
            (r#"{"template":"a*"}"#, "unknown field [template]"),
        ],
    );
    refused(
        BodyKind::IndexTemplate,
        &[
            (
                r#"{"index_patterns":["a"],"data_stream":{}}"#,
                "[data_stream]",
            ),
            (
                r#"{"index_patterns":["a"],"template":{"settings":{"number_of_shards":3}}}"#,
                "number_of_shards",
            ),
        ],
    );
}

#[test]
fn jobs() {
    ok(
        BodyKind::Reindex,
        &[(
            r#"{"source":{"index":["a","b-*"],"query":{"term":{"_index":"a"}}},"dest":{"index":"c","op_type":"create"},"script":{"source":"ctx._source.x = 1"}}"#,
            r#"{"source":{"index":["P:a","P:b-*"],"query":{"term":{"_index":"P:a"}}},"dest":{"index":"P:c","op_type":"create"},"script":{"source":"ctx._source.x = 1"}}"#,
        )],
    );
    refused(
        BodyKind::Reindex,
        &[
            (
                r#"{"source":{"index":"a","remote":{"host":"http://x:9200"}},"dest":{"index":"b"}}"#,
                "source.remote",
            ),
            (
                r#"{"source":{"index":"a"},"dest":{"index":"b","pipeline":"p"}}"#,
                "dest.pipeline",
            ),
            (
                r#"{"source":{"index":"a"},"dest":{"index":"b,c"}}"#,
                "one index",
            ),
            (
                r#"{"source":{"index":"a"},"dest":{"index":"b"},"script":{"source":"ctx._index = 'v'"}}"#,
                "Painless",
            ),
            (r#"{"source":{"index":"a"}}"#, "requires a [dest]"),
            (
                r#"{"source":{"index":"a","sort":"_index"},"dest":{"index":"b"}}"#,
                "sort on [_index]",
            ),
        ],
    );
    ok(
        BodyKind::UpdateByQuery,
        &[(
            r#"{"query":{"prefix":{"_index":"a"}},"script":"ctx._source.n -= 1","max_docs":10}"#,
            r#"{"query":{"prefix":{"_index":"P:a"}},"script":"ctx._source.n -= 1","max_docs":10}"#,
        )],
    );
    refused(
        BodyKind::DeleteByQuery,
        &[(r#"{"query":{},"script":"x"}"#, "unknown field [script]")],
    );
}

#[test]
fn sealed_id_bodies() {
    let s = sealer();
    let tok = s.seal("acme", IdKind::Scroll, b"RAW1");
    let tok2 = s.seal("acme", IdKind::Scroll, b"RAW2");
    ok(
        BodyKind::Scroll,
        &[(
            &format!(r#"{{"scroll":"1m","scroll_id":"{tok}"}}"#),
            r#"{"scroll":"1m","scroll_id":"RAW1"}"#,
        )],
    );
    ok(
        BodyKind::ClearScroll,
        &[(
            &format!(r#"{{"scroll_id":["{tok}","{tok2}"]}}"#),
            r#"{"scroll_id":["RAW1","RAW2"]}"#,
        )],
    );
    let pit = s.seal("acme", IdKind::Pit, b"PIT");
    ok(
        BodyKind::ClosePit,
        &[(&format!(r#"{{"id":"{pit}"}}"#), r#"{"id":"PIT"}"#)],
    );
    for (kind, body) in [
        (BodyKind::Scroll, r#"{"scroll_id":"RAW1"}"#.to_string()),
        (
            BodyKind::ClearScroll,
            format!(
                r#"{{"scroll_id":"{}"}}"#,
                s.seal("other", IdKind::Scroll, b"x")
            ),
        ),
        (BodyKind::ClosePit, format!(r#"{{"id":"{tok}"}}"#)),
    ] {
        let e = rw(kind, &body).unwrap_err();
        assert_eq!(e.status(), 404, "{body}");
        assert_eq!(
            e.body().root_cause.unwrap().0,
            "search_context_missing_exception"
        );
    }
}

/// attacks-10 #5 (issue 10 §2: `_index` in settings): `index.query.default_field` is a list
/// setting; Elasticsearch splits a string value at commas and trims each part, so
/// `"title,_index"` and `" _index"` make `_index` a default field. Checked in every place
/// settings are read (index creation, settings updates, templates), and `copy_to` alike.
#[test]
fn default_field_settings_are_read_as_lists() {
    let values = [
        r#""title,_index""#,
        r#"" _index""#,
        r#""_index ""#,
        r#""title, _index ,body""#,
        r#""\t_index""#,
        r#""\u0001_index""#,
        r#""title,_ind*""#,
        r#"["title", " _index"]"#,
        r#"["title,_index"]"#,
        r#""*,_index^2""#,
    ];
    for v in values {
        for (kind, body) in [
            (
                BodyKind::CreateIndex,
                format!(r#"{{"settings":{{"index.query.default_field":{v}}}}}"#),
            ),
            (
                BodyKind::CreateIndex,
                format!(r#"{{"settings":{{"index":{{"query":{{"default_field":{v}}}}}}}}}"#),
            ),
            (
                BodyKind::Settings,
                format!(r#"{{"index.query.default_field":{v}}}"#),
            ),
            (
                BodyKind::Settings,
                format!(r#"{{"settings":{{"query.default_field":{v}}}}}"#),
            ),
            (
                BodyKind::Template,
                format!(r#"{{"index_patterns":["x*"],"settings":{{"query.default_field":{v}}}}}"#),
            ),
            (
                BodyKind::IndexTemplate,
                format!(
                    r#"{{"index_patterns":["x*"],"template":{{"settings":{{"index.query.default_field":{v}}}}}}}"#
                ),
            ),
            (
                BodyKind::ComponentTemplate,
                format!(r#"{{"template":{{"settings":{{"index.query.default_field":{v}}}}}}}"#),
            ),
            (
                BodyKind::CreateIndex,
                format!(
                    r#"{{"mappings":{{"properties":{{"t":{{"type":"text","copy_to":{v}}}}}}}}}"#
                ),
            ),
        ] {
            let e = rw(kind, &body).expect_err(&body);
            assert_eq!(e.status(), 400, "{body}");
            assert!(e.body().reason.contains("_ind"), "{body}: {e:?}");
        }
    }
    ok(
        BodyKind::Settings,
        &[(
            r#"{"index.query.default_field":"title, body,*"}"#,
            r#"{"index.query.default_field":"title, body,*"}"#,
        )],
    );
}

/// attacks-10 #7 (issue 10 §2): a percolator index stores queries as documents, which the
/// edge forwards unread and the upstream runs with the index's real name; the field type
/// is refused wherever mappings are read, and the `percolate` query wherever queries are.
#[test]
fn percolator_is_refused() {
    let field = r#"{"type":"percolator"}"#;
    for (kind, body) in [
        (
            BodyKind::CreateIndex,
            format!(r#"{{"mappings":{{"properties":{{"query":{field},"t":{{"type":"text"}}}}}}}}"#),
        ),
        (
            BodyKind::Mapping,
            format!(r#"{{"properties":{{"query":{field}}}}}"#),
        ),
        (
            BodyKind::Mapping,
            format!(r#"{{"properties":{{"o":{{"properties":{{"q":{field}}}}}}}}}"#),
        ),
        (
            BodyKind::Mapping,
            format!(r#"{{"dynamic_templates":[{{"q":{{"match":"q*","mapping":{field}}}}}]}}"#),
        ),
        (
            BodyKind::Mapping,
            format!(r#"{{"properties":{{"t":{{"type":"text","fields":{{"q":{field}}}}}}}}}"#),
        ),
        (
            BodyKind::Template,
            format!(
                r#"{{"index_patterns":["q*"],"mappings":{{"properties":{{"query":{field}}}}}}}"#
            ),
        ),
        (
            BodyKind::IndexTemplate,
            format!(
                r#"{{"index_patterns":["q*"],"template":{{"mappings":{{"properties":{{"query":{field}}}}}}}}}"#
            ),
        ),
        (
            BodyKind::ComponentTemplate,
            format!(r#"{{"template":{{"mappings":{{"properties":{{"query":{field}}}}}}}}}"#),
        ),
        (
            BodyKind::Search,
            r#"{"query":{"percolate":{"field":"query","document":{"t":"x"}}}}"#.to_string(),
        ),
        (
            BodyKind::Search,
            r#"{"query":{"percolate":{"field":"query","index":"docs","id":"2"}}}"#.to_string(),
        ),
        (
            BodyKind::QueryOnly,
            r#"{"query":{"bool":{"filter":{"percolate":{"field":"q","document":{}}}}}}"#
                .to_string(),
        ),
    ] {
        let e = rw(kind, &body).expect_err(&body);
        assert_eq!(e.status(), 400, "{body}");
        assert!(e.body().reason.contains("percolat"), "{body}: {e:?}");
    }
}
