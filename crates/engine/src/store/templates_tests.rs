//! Templates: merging, priorities, components, validation.
use super::*;
use crate::mapping::LeafKind;

#[test]
fn legacy_templates_merge_by_order_and_the_request_wins() {
    let dir = tempfile::tempdir().unwrap();
    let t = Templates::open(dir.path()).unwrap();
    let a = json!({"index_patterns": ["logs-*"], "order": 0, "settings": {"number_of_shards": 2, "number_of_replicas": 0},
        "mappings": {"_doc": {"properties": {"@timestamp": {"type": "date"}, "geo": {"type": "geo_point"}}}}});
    let b = json!({"index_patterns": "logs-x*", "order": 5, "settings": {"index": {"number_of_shards": 3}}});
    t.put(Template::parse(Kind::Legacy, "a", &a).unwrap(), false)
        .unwrap();
    t.put(Template::parse(Kind::Legacy, "b", &b).unwrap(), false)
        .unwrap();
    let r = t.create_request("logs-x1", None).unwrap();
    assert_eq!((r.settings.shards, r.settings.replicas), (3, 0));
    assert_eq!(r.mapping.field("@timestamp").unwrap().kind, LeafKind::Date);
    assert_eq!(r.mapping.field("geo").unwrap().kind, LeafKind::Unindexed);
    assert_eq!(r.type_name.as_deref(), Some("_doc"));
    let r = t
        .create_request(
            "logs-y",
            Some(&json!({"settings": {"number_of_shards": 5}})),
        )
        .unwrap();
    assert_eq!(r.settings.shards, 5);
    let r = t.create_request("other", None).unwrap();
    assert_eq!(r.settings.shards, 1);
    // persisted
    let again = Templates::open(dir.path()).unwrap();
    assert_eq!(again.list(Kind::Legacy, None).len(), 2);
    assert!(again.delete(Kind::Legacy, "a").unwrap());
    assert!(!again.delete(Kind::Legacy, "a").unwrap());
}

#[test]
fn composable_template_wins_by_priority() {
    let dir = tempfile::tempdir().unwrap();
    let t = Templates::open(dir.path()).unwrap();
    let legacy = json!({"index_patterns": ["*"], "settings": {"number_of_shards": 4}});
    let low = json!({"index_patterns": ["m*"], "priority": 1, "template": {"settings": {"number_of_shards": 2}}});
    let high = json!({"index_patterns": ["metrics-*"], "priority": 9, "template": {"settings": {"number_of_shards": 3}}});
    t.put(Template::parse(Kind::Legacy, "l", &legacy).unwrap(), false)
        .unwrap();
    t.put(
        Template::parse(Kind::Composable, "low", &low).unwrap(),
        false,
    )
    .unwrap();
    t.put(
        Template::parse(Kind::Composable, "high", &high).unwrap(),
        false,
    )
    .unwrap();
    assert_eq!(
        t.create_request("metrics-1", None).unwrap().settings.shards,
        3
    );
    assert_eq!(t.create_request("m1", None).unwrap().settings.shards, 2);
    assert_eq!(t.create_request("z", None).unwrap().settings.shards, 4);
    assert!(t
        .put(
            Template::parse(Kind::Composable, "low", &low).unwrap(),
            true
        )
        .is_err());
}

#[test]
fn component_templates_compose() {
    let dir = tempfile::tempdir().unwrap();
    let t = Templates::open(dir.path()).unwrap();
    let comp = json!({"template": {"settings": {"number_of_shards": 2}, "mappings": {"properties": {"a": {"type": "keyword"}}}}});
    let idx = json!({"index_patterns": ["c-*"], "composed_of": ["base"], "template": {"settings": {"number_of_replicas": 0}}});
    let parsed = Template::parse(Kind::Composable, "i", &idx).unwrap();
    assert_eq!(t.put(parsed.clone(), false).unwrap_err().status(), 400);
    t.put(
        Template::parse(Kind::Component, "base", &comp).unwrap(),
        false,
    )
    .unwrap();
    t.put(parsed, false).unwrap();
    let r = t.create_request("c-1", None).unwrap();
    assert_eq!((r.settings.shards, r.settings.replicas), (2, 0));
    assert_eq!(r.mapping.field("a").unwrap().kind, LeafKind::Keyword);
    assert_eq!(t.delete(Kind::Component, "base").unwrap_err().status(), 400);
    assert!(t.delete(Kind::Composable, "i").unwrap());
    assert!(t.delete(Kind::Component, "base").unwrap());
    assert!(Template::parse(Kind::Component, "x", &json!({})).is_err());
}

#[test]
fn overlapping_patterns() {
    for (a, b, want) in [
        ("logs-*", "logs-*", true),
        ("logs-*", "*-prod", true),
        ("logs-*", "metrics-*", false),
        ("a*c", "ab*", true),
        ("abc", "a*", true),
        ("abc", "abd", false),
        ("*", "x", true),
        ("a*b*c", "*d*", true),
        ("ab", "a", false),
    ] {
        assert_eq!(patterns_overlap(a, b), want, "{a} {b}");
        assert_eq!(patterns_overlap(b, a), want, "{b} {a}");
    }
}

#[test]
fn same_priority_overlaps_and_unknown_keys_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let t = Templates::open(dir.path()).unwrap();
    let a = json!({"index_patterns": ["logs-*"], "priority": 5});
    t.put(Template::parse(Kind::Composable, "a", &a).unwrap(), false)
        .unwrap();
    let b = json!({"index_patterns": ["*-prod"], "priority": 5});
    let e = t
        .put(Template::parse(Kind::Composable, "b", &b).unwrap(), false)
        .unwrap_err();
    assert!(e.body().reason.contains("same priority [5]"), "{e:?}");
    // replacing a template by itself is no conflict; another priority is fine
    t.put(Template::parse(Kind::Composable, "a", &a).unwrap(), false)
        .unwrap();
    let b = json!({"index_patterns": ["*-prod"], "priority": 6});
    t.put(Template::parse(Kind::Composable, "b", &b).unwrap(), false)
        .unwrap();
    for (kind, body, err) in [
        (
            Kind::Legacy,
            json!({"index_patterns": ["x"], "priority": 1}),
            "parse_exception",
        ),
        (
            Kind::Composable,
            json!({"index_patterns": ["x"], "order": 1}),
            "x_content_parse_exception",
        ),
        (
            Kind::Composable,
            json!({"index_patterns": ["x"], "template": {"settings": {}, "nope": 1}}),
            "x_content_parse_exception",
        ),
        (
            Kind::Component,
            json!({"template": {}, "index_patterns": ["x"]}),
            "x_content_parse_exception",
        ),
        (
            Kind::Composable,
            json!({"index_patterns": ["x"], "data_stream": {}}),
            "illegal_argument_exception",
        ),
    ] {
        let e = Template::parse(kind, "x", &body).unwrap_err();
        assert_eq!(e.body().kind, err, "{body}");
    }
    let ok = json!({"index_patterns": ["x"], "version": 3, "_meta": {"a": 1}, "template": {"aliases": {}}});
    assert!(Template::parse(Kind::Composable, "x", &ok).is_ok());
}

#[test]
fn invalid_templates_are_refused() {
    assert!(Template::parse(Kind::Legacy, "x", &json!({"settings": {}})).is_err());
    let bad = json!({"index_patterns": ["a"], "mappings": {"properties": {"f": {"type": "nope"}}}});
    assert_eq!(
        Template::parse(Kind::Legacy, "x", &bad)
            .unwrap_err()
            .status(),
        400
    );
    let bad = json!({"index_patterns": ["a"], "settings": {"number_of_shards": 0}});
    assert!(Template::parse(Kind::Legacy, "x", &bad).is_err());
}
