//! The attack families on the readings of bytes: NDJSON framing, escaped and repeated
//! keys, `_index` comparisons, `query_string` texts and field lists, query-string
//! parameters (issue 10's three cases and their classes).

use serde_json::{json, Value};

use super::{forwarded, ids, marker, refused, Who, World};

// issue 10 (first case): `_msearch` lines read as Elasticsearch 7.10 reads them.
pub fn ndjson_framing(w: &World<'_>) {
    for blank in [" ", "\r", "\t", "  \t", ""] {
        // a blank header line is an empty header: the path's indices, the tenant's own
        let body = format!("{blank}\n{{\"size\":10}}\n{{\"index\":\"*\"}}\n{{\"size\":10}}\n");
        let r = w.ndjson("/_msearch", body.as_bytes());
        if r.status == 200 {
            assert!(r.text().contains(&marker("alpha")), "{}", r.text());
        } else {
            refused(&r, &format!("msearch {blank:?}"));
        }
        // blank lines between pairs
        let body =
            format!("{{}}\n{{\"size\":10}}\n{blank}\n{{\"index\":\"*\"}}\n{{\"size\":10}}\n");
        let r = w.ndjson("/_msearch", body.as_bytes());
        assert!(matches!(r.status, 200 | 400), "{}", r.text());
    }
    for body in [
        "{}\r\n{\"size\":10}\r\n",
        "\n{}\n{\"size\":10}\n",
        "{\"index\":\"_all\"}\n{}\n",
    ] {
        let r = w.ndjson("/_msearch", body.as_bytes());
        assert_eq!(r.status, 200, "{body:?}: {}", r.text());
    }
    // a last line without its newline is refused (7.10 refuses it too)
    let r = w.ndjson("/_msearch", b"{}\n{\"size\":10}");
    refused(&r, "msearch without a final newline");
    let r = w.ndjson(
        "/_bulk",
        b"{\"index\":{\"_index\":\"books\",\"_id\":\"9\"}}\n{\"n\":9}",
    );
    refused(&r, "bulk without a final newline");
    // blank and \r\n bulk action lines; an action naming the other tenant's real index
    // lands in the tenant's own namespace
    let body = format!(
        "\n \r\n{{\"index\":{{\"_index\":\"{pb}books\",\"_id\":\"9\"}}}}\r\n{{\"n\":9}}\n",
        pb = w.pb
    );
    let r = w.ndjson("/_bulk", body.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    // An upstream that creates indices on first write (osmem-server) made `<pa><pb>books`:
    // the tenant's own index, under a name it chose (it carries the other prefix the test
    // gave it as if learned); every later listing would echo that name, so it goes.
    let r = w.send(
        Who::Alpha,
        &w.alpha.req("DELETE", &format!("/{}books", w.pb)),
    );
    assert!(matches!(r.status, 200 | 404), "{}", r.text());
    let r = w.ndjson(
        "/_bulk",
        b"{\"index\":{\"_index\":\"books\",\"pipeline\":\"p\"}}\n{}\n",
    );
    refused(&r, "bulk pipeline");
}

// issue 10 (third case) and every escaped or repeated key.
pub fn escaped_and_duplicate_keys(w: &World<'_>) {
    let body = format!(
        "{{\"\\u0061liases\":{{\"{pb}bravo-only\":{{}}}}}}",
        pb = w.pb
    );
    let target = format!("/planted{}", w.suffix);
    let r = w.raw(
        Who::Alpha,
        "PUT",
        &target,
        "application/json",
        body.as_bytes(),
    );
    assert!(
        r.status < 300,
        "read as `aliases`, in the namespace: {}",
        r.text()
    );
    // The alias lives in the tenant's own namespace (`<pa><pb>bravo-only`): every later
    // listing of the tenant's aliases would echo the name it chose, which carries the other
    // prefix it was given as if learned (and shows nothing it did not send): remove it.
    let r = w.send(Who::Alpha, &w.alpha.req("DELETE", &target));
    assert_eq!(r.status, 200, "{}", r.text());
    for dup in [
        "{\"aliases\":{},\"\\u0061liases\":{\"x\":{}}}",
        "{\"settings\":{},\"settings\":{}}",
    ] {
        let r = w.raw(
            Who::Alpha,
            "PUT",
            "/planted2",
            "application/json",
            dup.as_bytes(),
        );
        refused(&r, dup);
        assert_eq!(r.json()["error"]["type"], "x_content_parse_exception");
    }
    // `\u005findex` is `_index`: rewritten like it
    let r = w.json_bytes("/_search", br#"{"query":{"term":{"\u005findex":"books"}}}"#);
    if r.status == 200 {
        assert!(!ids(&r).is_empty(), "{}", r.text());
    }
    let r = w.json_bytes(
        "/_search",
        br#"{"query":{"match_all":{}},"query":{"match_all":{}}}"#,
    );
    refused(&r, "a duplicate query");
    let r = w.ndjson(
        "/_bulk",
        b"{\"index\":{\"_index\":\"books\",\"\\u005findex\":\"x\"}}\n{}\n",
    );
    refused(&r, "a duplicate bulk key");
    let r = w.json_bytes("/_search", b"{\"query\":{\"match_all\":{}}} trailing");
    refused(&r, "trailing bytes");
    let r = w.raw(Who::Alpha, "POST", "/_search", "text/plain", b"{}");
    assert_eq!(r.status, 406, "{}", r.text());
}

// issue 10 (second case): `_index` compared with values the tenant chose.
pub fn index_field_comparisons(w: &World<'_>) {
    let own = ids(&w.search("/books/_search", &json!({"size": 10})));
    assert_eq!(own.len(), 2, "{own:?}");
    let probes = vec![
        json!({"term": {"_index": "books"}}),
        json!({"terms": {"_index": ["books", "nothing"]}}),
        json!({"prefix": {"_index": "boo"}}),
        json!({"wildcard": {"_index": "b*k?"}}),
        json!({"match": {"_index": "books"}}),
        json!({"regexp": {"_index": "b.*"}}),
        json!({"bool": {"must_not": {"prefix": {"_index": "zzz"}}}}),
        json!({"exists": {"field": "_index"}}),
    ];
    for q in &probes {
        let r = w.search("/_all/_search", &json!({"query": q, "size": 10}));
        assert!(matches!(r.status, 200 | 400), "{q}: {}", r.text());
        for hit in ids(&r) {
            assert!(own.contains(&hit) || hit.contains("-only"), "{q}: {hit}");
        }
    }
    // Values naming the prefixes (the tenant's own, or the other's) match only what they
    // match in the tenant's own names: a prefix's first characters are random (base32),
    // so `"b"` or `"alp"` may also begin one of the tenant's names, and then its hits are
    // right. No hit may be explained by the real name only.
    let mut named: Vec<(Value, String)> = Vec::new();
    for p in [&w.pa, &w.pb] {
        for n in [1, 5, 20, 21] {
            named.push((json!({"prefix": {"_index": &p[..n]}}), p[..n].to_string()));
        }
        named.push((
            json!({"term": {"_index": format!("{p}books")}}),
            format!("{p}books/"),
        ));
        named.push((
            json!({"wildcard": {"_index": format!("{}*", &p[..3])}}),
            p[..3].into(),
        ));
    }
    for (q, start) in &named {
        let r = w.search("/_all/_search", &json!({"query": q, "size": 10}));
        assert!(matches!(r.status, 200 | 400), "{q}: {}", r.text());
        for hit in ids(&r) {
            assert!(hit.starts_with(start.as_str()), "{q}: {hit}: {}", r.text());
            assert!(own.contains(&hit) || hit.contains("-only"), "{q}: {hit}");
        }
    }
    // comparisons that cannot be confined are refused by the edge
    for q in [
        json!({"fuzzy": {"_index": "books"}}),
        json!({"range": {"_index": {"gte": "a"}}}),
        json!({"match_phrase": {"_index": "books"}}),
        json!({"span_term": {"_index": "books"}}),
    ] {
        let r = w.search("/_search", &json!({"query": q}));
        refused(&r, &q.to_string());
    }
    // aggregations and sorts on `_index`
    let r = w.search(
        "/_search",
        &json!({"size": 0, "aggs": {"i": {"terms": {"field": "_index", "include": "b.*"}}}}),
    );
    assert!(matches!(r.status, 200 | 400), "{}", r.text());
    let r = w.search(
        "/_search",
        &json!({"size": 0, "aggs": {"i": {"terms": {"field": "_index", "exclude": ["books"]}}}}),
    );
    assert!(matches!(r.status, 200 | 400), "{}", r.text());
    let r = w.search(
        "/_search",
        &json!({"sort": [{"_index": "asc"}], "search_after": [format!("{}x", w.pb)], "size": 10}),
    );
    assert!(matches!(r.status, 200 | 400), "{}", r.text());
}

// `query_string`, `simple_query_string`, field lists: any field that could be `_index`.
pub fn query_string_tricks(w: &World<'_>) {
    for text in [
        "_index:a*",
        "\\_index:a*",
        "_index :a*",
        "_ind*:a*",
        "?index:a*",
        "**:a*",
        "who:x OR _index:/a.*/",
        "\\u005findex:a*",
    ] {
        let r = w.search(
            "/_search",
            &json!({"query": {"query_string": {"query": text}}}),
        );
        refused(&r, text);
    }
    for fields in [json!(["_index"]), json!(["_ind*"]), json!(["who", "_i*"])] {
        let r = w.search(
            "/_search",
            &json!({"query": {"query_string": {"query": "a*", "fields": fields}}}),
        );
        refused(&r, &fields.to_string());
        let r = w.search(
            "/_search",
            &json!({"query": {"simple_query_string": {"query": "a*", "fields": fields}}}),
        );
        refused(&r, &fields.to_string());
        let r = w.search(
            "/_search",
            &json!({"query": {"multi_match": {"query": "a", "fields": fields}}}),
        );
        refused(&r, &fields.to_string());
    }
    let r = w.search(
        "/_search",
        &json!({"query": {"query_string": {"query": "a*", "default_field": "_index"}}}),
    );
    refused(&r, "default_field");
    // exactly `*` is expanded without metadata fields upstream: allowed
    let r = w.search(
        "/_search",
        &json!({"query": {"query_string": {"query": "secretmarker", "fields": ["*"]}}}),
    );
    assert!(matches!(r.status, 200 | 400), "{}", r.text());
}

// query-string parameters: decoded once, each from a table, re-encoded.
pub fn parameter_tricks(w: &World<'_>) {
    for target in [
        "/_search?q=_index:a*",
        "/_search?q=_index%20:a*",
        "/_search?q=%5C_index:a*",
        "/_search?q=%5Findex:a*",
        "/_search?q=who:x+OR+_index:a*",
        "/_search?q=a*&df=_index",
        "/_search?q=a*&df=_ind*",
        "/_search?size=1&size=2",
        "/_search?q=a&q=b",
        "/_search?sort=_index:asc",
        "/_search?source=%7B%7D",
        "/books/_doc/1?pipeline=p",
        "/_search?unknown_parameter=1",
        "/_search?scroll_id=raw",
    ] {
        let r = w.get(Who::Alpha, target);
        assert!(matches!(r.status, 400 | 404), "{target}: {}", r.text());
    }
    // `+` and percent-encoding decode to the same search
    let plain = ids(&w.get(Who::Alpha, "/books/_search?q=who:page"));
    let plus = ids(&w.get(Who::Alpha, "/books/_search?q=who%3Apage"));
    assert_eq!(plain, plus);
    // `;` ends a parameter upstream: `df=_index;` is `df=_index` (attacks-10 #2, more in
    // `review::semicolon_separators`)
    let r = w.get(Who::Alpha, "/books/_search?q=a*&df=_index;");
    refused(&r, "df=_index;");
}

/// What a probe's answer tells: its status and hit count (an error counts none).
fn outcome(r: &crate::support::e2e::Response) -> (u16, i64) {
    let hits = if r.status == 200 {
        r.json()["hits"]["total"]["value"].as_i64().unwrap_or(-1)
    } else {
        0
    };
    (r.status, hits)
}

// attack18: readings of field names and response keys that compared the tenant's guess with
// the prefixed index name. Each probe is sent with the right guess (the tenant's own prefix,
// which the test knows) and a wrong one: the answers must not differ.
pub fn prefix_oracles(w: &World<'_>) {
    let right = format!("{}*", &w.pa[..4]);
    let wrong = if w.pa.starts_with('z') { "y*" } else { "z*" };
    // a document field named `_index` (Elasticsearch and the engine refuse it; the edge
    // forwards documents unread), then field patterns that would reach it
    let r = w.json(
        Who::Alpha,
        "PUT",
        "/books/_doc/meta?refresh=true",
        &json!({"_index": "~"}),
    );
    forwarded(&r, "a metadata field in a document");
    let probes = |guess: &str| {
        vec![
            json!({"query": {"prefix": {"_ind*": guess.trim_end_matches('*')}}}),
            json!({"query": {"wildcard": {"_i*": guess}}}),
            json!({"query": {"query_string": {"query": guess}}}),
            json!({"query": {"multi_match": {"query": guess, "fields": ["*"]}}}),
            json!({"query": {"query_string": {"query": format!("_index\u{b}:{guess}")}}}),
            json!({"query": {"query_string": {"query": format!("_index\u{a0}:{guess}")}}}),
        ]
    };
    for (a, b) in probes(&right).into_iter().zip(probes(wrong)) {
        let (ra, rb) = (
            w.search("/books/_search", &a),
            w.search("/books/_search", &b),
        );
        assert_eq!(
            outcome(&ra),
            outcome(&rb),
            "{a} / {b}: {} / {}",
            ra.text(),
            rb.text()
        );
    }
    for q in [format!("_index%0B:{right}"), format!("_index%0B:{wrong}")] {
        let r = w.get(Who::Alpha, &format!("/books/_search?q={q}"));
        refused(&r, &q);
    }
    // `filter_path` patterns over responses keyed by index names
    for target in ["_settings", "_mapping", "_alias", "_stats"] {
        for guess in [right.as_str(), wrong] {
            for fp in [
                guess.to_string(),
                format!("-{guess}"),
                format!("indices.{guess}"),
            ] {
                let r = w.get(Who::Alpha, &format!("/books/{target}?filter_path={fp}"));
                refused(&r, &format!("{target} filter_path={fp}"));
            }
        }
        let r = w.get(Who::Alpha, &format!("/books/{target}?filter_path=*"));
        forwarded(&r, target);
    }
}
