//! Rewriting and rendering of aggregation requests (the search tests run them for real).

use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::store::schema;

fn mapping() -> Mapping {
    crate::mapping::parse_mappings(
        &json!({"properties": {
        "t": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
        "n": {"type": "long"}, "when": {"type": "date"}}}),
        &Default::default(),
    )
    .unwrap()
    .mapping
}

fn with_env<T>(bounds: &BTreeMap<String, (i64, i64)>, f: impl FnOnce(&Env<'_>) -> T) -> T {
    let m = mapping();
    let fields = schema::fields(&schema::build_schema()).unwrap();
    let names = vec!["idx".to_string(), "other".to_string()];
    let env = Env {
        ctx: Ctx {
            mapping: &m,
            fields: &fields,
            index_name: "idx",
            now_ms: 0,
        },
        indices: &names,
        bounds,
    };
    f(&env)
}

#[test]
fn fields_are_rewritten_and_text_refused() {
    let b = BTreeMap::new();
    with_env(&b, |env| {
        let aggs = json!({"by_t": {"terms": {"field": "t.keyword"}, "aggregations": {"avg_n": {"avg": {"field": "n"}}}}});
        let mut r = rewrite::Rewriter::new(env);
        let v = r.aggs(&aggs, "").unwrap();
        assert_eq!(v["by_t"]["terms"]["field"], "k.t.keyword");
        assert_eq!(v["by_t"]["aggs"]["avg_n"]["avg"]["field"], "k.n");
        assert!(prepare(&aggs, env).is_ok());
        let e = prepare(&json!({"x": {"terms": {"field": "t"}}}), env).unwrap_err();
        assert_eq!(e.status(), 400);
        assert!(e
            .body()
            .caused_by
            .unwrap()
            .1
            .contains("Text fields are not optimised"));
        for bad in [
            json!({"x": {"bogus": {"field": "n"}}}),
            json!({"x": {"avg": {}}}),
            json!({"x": {"terms": {"field": "n", "nonsense": 1}}}),
            json!({"x": {"avg": {"script": "doc['n'].value"}}}),
            json!({"x": {"terms": {"field": "_id"}}}),
            json!({"x": {"significant_terms": {"field": "n"}}}),
        ] {
            assert_eq!(prepare(&bad, env).unwrap_err().status(), 400, "{bad}");
        }
    });
}

#[test]
fn date_histograms_become_ranges_in_the_zone() {
    let mut b = BTreeMap::new();
    // 2020-01-15 .. 2020-03-10 (UTC)
    b.insert("when".to_string(), (1_579_046_400_000, 1_583_798_400_000));
    with_env(&b, |env| {
        let req = json!({"m": {"date_histogram": {"field": "when", "calendar_interval": "month", "time_zone": "+01:00"}}});
        let mut r = rewrite::Rewriter::new(env);
        let v = r.aggs(&req, "").unwrap();
        let ranges = v["m"]["range"]["ranges"].as_array().unwrap();
        assert_eq!(ranges.len(), 3);
        // 2020-01-01T00:00+01:00
        assert_eq!(ranges[0]["from"], json!(1_577_833_200_000f64));
        assert!(prepare(&req, env).is_ok());
        let bad = json!({"m": {"date_histogram": {"field": "when", "calendar_interval": "3d"}}});
        assert_eq!(prepare(&bad, env).unwrap_err().status(), 400);
        let none = json!({"m": {"date_histogram": {"field": "when"}}});
        assert_eq!(prepare(&none, env).unwrap_err().status(), 400);
    });
}

#[test]
fn filters_and_index_terms_are_sibling_filters() {
    let b = BTreeMap::new();
    with_env(&b, |env| {
        let req = json!({"f": {"filters": {"filters": {"a": {"term": {"n": 1}}, "b": {"match_all": {}}}, "other_bucket": true}},
                         "i": {"terms": {"field": "_index"}}});
        let p = prepare(&req, env).unwrap();
        let mut names: Vec<&String> = p.aggs.keys().collect();
        names.sort();
        assert_eq!(
            names,
            vec!["f\u{1}0", "f\u{1}1", "f\u{1}2", "i\u{1}idx", "i\u{1}other"]
        );
        assert!(
            matches!(p.notes.get("f"), Some(Note::Filters { names, keyed: true }) if names.len() == 3)
        );
    });
}
