//! The attack families on names: index expressions, references inside bodies, aliases,
//! templates, sealed scroll ids.

use serde_json::json;

use super::{forwarded, refused, Who, World};

// index expressions: `_all`, `*`, comma lists, exclusions, date math, the other tenant's
// real names.
pub fn expressions(w: &World<'_>) {
    let pb = &w.pb;
    for target in [
        "/_search?size=50".to_string(),
        "/_all/_search?size=50".to_string(),
        "/*/_search?size=50".to_string(),
        "/*,-books/_search?size=50".to_string(),
        "/b*,a*/_search?size=50".to_string(),
        "/%3Cbooks-%7Bnow%2Fd%7D%3E,books/_search?size=50&ignore_unavailable=true".to_string(),
        format!("/{pb}books/_search"),
        format!("/{pb}*/_search"),
        format!("/books,{pb}books/_search?ignore_unavailable=true"),
        format!("/%3C{pb}books-%7Bnow%2Fd%7D%3E/_search"),
        "/_cat/indices?v".to_string(),
        "/_cat/indices?format=json".to_string(),
        "/_cat/aliases".to_string(),
        "/_mapping".to_string(),
        "/_settings".to_string(),
        format!("/{pb}books/_mapping"),
        "/_cluster/health/*".to_string(),
        "/_resolve/index/*".to_string(),
        "/_stats".to_string(),
    ] {
        let r = w.get(Who::Alpha, &target);
        forwarded(&r, &target);
    }
    for target in ["/_x/_search", "/+books/_search", "/a:b/_search"] {
        let r = w.get(Who::Alpha, target);
        assert!(
            matches!(r.status, 400 | 404 | 501),
            "{target}: {}",
            r.text()
        );
    }
    let long = "x".repeat(240);
    let r = w.send(Who::Alpha, &w.alpha.req("PUT", &format!("/{long}")));
    refused(&r, "a name too long once prefixed");
    assert!(r.text().contains("(240 > 234)"), "{}", r.text());
}

// references inside bodies: `_mget`, terms lookup, more_like_this, indices_boost, reindex.
pub fn references_in_bodies(w: &World<'_>) {
    let pb = &w.pb;
    let r = w.json(
        Who::Alpha,
        "POST",
        "/_mget",
        &json!({"docs": [{"_index": format!("{pb}books"), "_id": "1"}, {"_index": "books", "_id": "1"}]}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let docs = r.json()["docs"].clone();
    assert!(
        docs[0]["found"] != true && docs[0]["_source"].is_null(),
        "{docs}"
    );
    assert_eq!(docs[1]["found"], true, "{docs}");
    for q in [
        json!({"terms": {"who": {"index": format!("{pb}books"), "id": "1", "path": "who"}}}),
        json!({"terms": {"who": {"index": "books", "id": "1", "path": "who"}}}),
        json!({"more_like_this": {"fields": ["who"], "like": [{"_index": format!("{pb}books"), "_id": "1"}],
                                  "min_term_freq": 1, "min_doc_freq": 1}}),
        json!({"more_like_this": {"fields": ["who"], "like": [{"_index": "books", "_id": "1"}],
                                  "min_term_freq": 1, "min_doc_freq": 1}}),
    ] {
        let r = w.search("/_search", &json!({"query": q}));
        forwarded(&r, &q.to_string());
    }
    let r = w.search(
        "/_search",
        &json!({"indices_boost": [{format!("{pb}books"): 2.0}, {"*": 1.0}]}),
    );
    forwarded(&r, "indices_boost");
    for body in [
        json!({"query": {"wrapper": {"query": "eyJtYXRjaF9hbGwiOnt9fQ=="}}}),
        json!({"script_fields": {"p": {"script": "doc['_index'].value"}}}),
        json!({"query": {"script": {"script": "doc['_index'].value.length() > 3"}}}),
        json!({"runtime_mappings": {"x": {"type": "keyword", "script": "emit(doc['_index'].value)"}}}),
        json!({"ext": {}}),
        json!({"query": {"nope": {}}}),
    ] {
        let r = w.search("/_search", &body);
        refused(&r, &body.to_string());
    }
    let r = w.json(
        Who::Alpha,
        "POST",
        "/_reindex",
        &json!({"source": {"index": format!("{pb}books")}, "dest": {"index": "stolen"}}),
    );
    assert!(matches!(r.status, 400 | 404), "{}", r.text());
    let r = w.json(
        Who::Alpha,
        "POST",
        "/books/_update/1",
        &json!({"script": {"source": "ctx._source.p = ctx._index"}}),
    );
    refused(&r, "a script reading ctx._index");
}

// aliases: an alias can point only at the tenant's own indices.
pub fn aliases(w: &World<'_>) {
    let pb = &w.pb;
    let r = w.json(
        Who::Alpha,
        "POST",
        "/_aliases",
        &json!({"actions": [{"add": {"index": format!("{pb}books"), "alias": "steal"}}]}),
    );
    assert!(matches!(r.status, 400 | 404), "{}", r.text());
    let r = w.json(
        Who::Alpha,
        "POST",
        "/_aliases",
        &json!({"actions": [{"add": {"indices": ["*"], "alias": "every"}}]}),
    );
    assert!(r.status < 300, "{}", r.text());
    let r = w.get(Who::Alpha, "/every/_search?size=50");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = w.get(Who::Bravo, "/every/_search");
    assert_eq!(r.status, 404, "{}", r.text());
    let r = w.send(
        Who::Alpha,
        &w.alpha.req("PUT", &format!("/{pb}books/_alias/steal2")),
    );
    assert!(matches!(r.status, 400 | 404), "{}", r.text());
    let r = w.json(
        Who::Alpha,
        "PUT",
        "/books/_alias/steal3",
        &json!({"index": format!("{pb}books")}),
    );
    forwarded(&r, "an alias body naming another index");
    let r = w.get(Who::Bravo, "/steal3/_search");
    assert_eq!(r.status, 404, "{}", r.text());
    let r = w.json(
        Who::Alpha,
        "POST",
        "/_aliases",
        &json!({"actions": [{"remove_index": {"index": "b*"}}]}),
    );
    // deleting indices by a wildcard is not exposed, as `DELETE /<wildcard>` (501)
    r.assert_es_error(501);
    let r = w.get(Who::Alpha, "/_alias");
    assert_eq!(r.status, 200, "{}", r.text());
}

// templates: `index_patterns` outside the namespace stay inside it.
pub fn templates(w: &World<'_>) {
    let pb = &w.pb;
    for (target, body) in [
        (
            "/_index_template/grab",
            json!({"index_patterns": ["*", format!("{pb}*")], "priority": 500,
                   "template": {"aliases": {"grabbed": {}}, "mappings": {"properties": {"grab": {"type": "keyword"}}}}}),
        ),
        (
            "/_template/grab-legacy",
            json!({"index_patterns": ["*"], "order": 99, "aliases": {"grabbed-legacy": {}}}),
        ),
    ] {
        let r = w.json(Who::Alpha, "PUT", target, &body);
        forwarded(&r, target);
    }
    let victim = format!("/victim-new{}", w.suffix);
    let r = w.send(Who::Bravo, &w.bravo.req("PUT", &victim));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = w.get(Who::Bravo, &format!("{victim}/_mapping"));
    assert!(!r.text().contains("grab"), "{}", r.text());
    let r = w.get(Who::Alpha, "/grabbed/_search");
    assert!(!r.text().contains("victim"), "{}", r.text());
    for body in [
        json!({"index_patterns": ["s-*"], "template": {"settings": {"number_of_shards": 50}}}),
        json!({"index_patterns": ["s-*"], "data_stream": {}}),
        json!({"index_patterns": ["s-*"], "template": {"settings": {"index.default_pipeline": "p"}}}),
    ] {
        let r = w.json(Who::Alpha, "PUT", "/_index_template/bad", &body);
        refused(&r, &body.to_string());
    }
    let r = w.get(Who::Bravo, "/_index_template");
    assert!(!r.text().contains("grab"), "{}", r.text());
}

// sealed scroll ids: another cluster's, tampered, raw.
pub fn sealed_ids(w: &World<'_>) {
    let r = w.get(Who::Alpha, "/books/_search?scroll=1m&size=1");
    assert_eq!(r.status, 200, "{}", r.text());
    let token = r.json()["_scroll_id"]
        .as_str()
        .expect("a scroll id")
        .to_string();
    assert!(token.starts_with("sg1."), "{token}");
    let mut bad = token.clone().into_bytes();
    let i = bad.len() - 2;
    bad[i] = if bad[i] == b'A' { b'B' } else { b'A' };
    let bad = String::from_utf8(bad).unwrap();
    for (who, id) in [
        (Who::Bravo, token.as_str()),
        (Who::Alpha, bad.as_str()),
        (Who::Alpha, "DXF1ZXJ5QW5kRmV0Y2gBAAAAAAAAAAEWb"),
    ] {
        let r = w.json(who, "POST", "/_search/scroll", &json!({"scroll_id": id}));
        assert_eq!(r.status, 404, "{}", r.text());
        let r = w.get(who, &format!("/_search/scroll/{id}"));
        assert_eq!(r.status, 404, "{}", r.text());
    }
    let r = w.get(Who::Alpha, &format!("/_search/scroll?scroll_id={token}"));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = w.json(
        Who::Alpha,
        "DELETE",
        "/_search/scroll",
        &json!({"scroll_id": token}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = w.send(Who::Alpha, &w.alpha.req("DELETE", "/_search/scroll/_all"));
    assert_eq!(r.status, 501, "{}", r.text());
}
