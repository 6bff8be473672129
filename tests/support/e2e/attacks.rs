//! The two-tenant attack suite of issue 10, shared by the run on the embedded engine
//! (`tests/tenancy_attacks.rs`, both listeners) and the run on an Elasticsearch-API
//! upstream installed from PyPI (`tests/tenancy_pypi.rs`).
//!
//! Tenant `alpha` attacks, tenant `bravo` is the victim (and the other way round where it
//! matters). Every response of the suite goes through [`World::send`], which asserts on its
//! raw bytes (head and body) that neither tenant's prefix (its 20 secret characters, with
//! or without the `-`) nor the other tenant's marker document appears, unless the request
//! itself carried it (an attack naming the other tenant's real index, as if it had learned
//! it, may see its own words echoed, and learns nothing from that). Each family of the
//! reference table (`src/tenancy/references/mod.rs`) has at least one attack; what the
//! answer must be beyond that depends on the upstream only where the edge forwards: the
//! edge's own refusals (400, 404 of sealed ids, 501) are checked exactly.

use std::cell::Cell;

use serde_json::{json, Value};

use super::answers::{all_bytes, contains};
use super::client::{Req, Response};
use super::{direct, prefix_of, ClusterSpec, Config, Edge, Tenant};

/// The attack's world: the edge, the two tenants and their prefixes (read from the
/// upstream directly, as only a test can).
pub struct World<'a> {
    pub edge: &'a Edge,
    pub upstream: std::net::SocketAddr,
    pub alpha: Tenant,
    pub bravo: Tenant,
    /// The prefixes, `-` included.
    pub pa: String,
    pub pb: String,
    /// Send over the HTTPS listener.
    pub tls: bool,
    /// Appended to the names a round creates (so that rounds can repeat).
    pub suffix: &'static str,
    /// Responses checked so far.
    pub checked: Cell<usize>,
}

/// The marker of `who`'s documents: it must never reach the other tenant.
pub fn marker(who: &str) -> String {
    format!("{who}secretmarker")
}

/// Which tenant a request is sent as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    Alpha,
    Bravo,
}

impl World<'_> {
    fn tenant(&self, who: Who) -> &Tenant {
        match who {
            Who::Alpha => &self.alpha,
            Who::Bravo => &self.bravo,
        }
    }

    /// Sends `req` and checks the raw bytes of the answer: no prefix of either tenant, no
    /// marker of the tenant it was not sent as.
    pub fn send(&self, who: Who, req: &Req) -> Response {
        let r = if self.tls {
            self.edge.send_tls(req)
        } else {
            self.edge.send(req)
        };
        let other = match who {
            Who::Alpha => marker("bravo"),
            Who::Bravo => marker("alpha"),
        };
        confined(req, &r, &[&self.pa[..20], &self.pb[..20], &other]);
        self.checked.set(self.checked.get() + 1);
        r
    }

    /// `alpha`'s POST of an NDJSON body.
    pub fn ndjson(&self, target: &str, body: &[u8]) -> Response {
        self.raw(Who::Alpha, "POST", target, "application/x-ndjson", body)
    }

    /// `alpha`'s POST of a JSON body given as bytes.
    pub fn json_bytes(&self, target: &str, body: &[u8]) -> Response {
        self.raw(Who::Alpha, "POST", target, "application/json", body)
    }

    pub fn raw(&self, who: Who, method: &str, target: &str, ct: &str, body: &[u8]) -> Response {
        let req = self
            .tenant(who)
            .req(method, target)
            .header("Content-Type", ct)
            .body(body.to_vec());
        self.send(who, &req)
    }

    pub fn json(&self, who: Who, method: &str, target: &str, body: &Value) -> Response {
        self.send(who, &self.tenant(who).json(method, target, body))
    }

    pub fn get(&self, who: Who, target: &str) -> Response {
        self.send(who, &self.tenant(who).req("GET", target))
    }

    /// `alpha`'s search of `target` with `body`.
    pub fn search(&self, target: &str, body: &Value) -> Response {
        self.json(Who::Alpha, "POST", target, body)
    }
}

/// Asserts that no byte of `r` (head or body) shows one of `secrets`, unless `req`
/// itself carried it: an attack that names another tenant's real index (as if it had
/// learned it) may see its own words echoed, and learns nothing from that.
pub fn confined(req: &Req, r: &Response, secrets: &[&str]) {
    let bytes = all_bytes(r);
    let sent = req.bytes();
    for secret in secrets {
        if contains(&sent, secret) {
            continue;
        }
        assert!(
            !contains(&bytes, secret),
            "{} {}: [{secret}] shown:\n{}",
            req.method,
            req.target,
            String::from_utf8_lossy(&bytes)
        );
    }
}

/// Two multitenant clusters, `alpha` and `bravo`, on `upstream` (`None`: the embedded
/// engine), with the HTTPS listener when `https`.
pub fn two_tenants(upstream: Option<std::net::SocketAddr>, https: bool) -> Config {
    let mut config = Config::new();
    if https {
        config = config.edge("https", "\"127.0.0.1:0\"");
    }
    config.engine = upstream.is_none();
    for id in ["alpha", "bravo"] {
        let mut c = ClusterSpec::multitenant(id, "p");
        c.upstream = upstream;
        config = config.cluster(c);
    }
    config
}

impl<'a> World<'a> {
    /// The world of `edge` started with [`two_tenants`] on `upstream`, seeded ([`seed`]),
    /// its prefixes read from the upstream.
    pub fn seeded(edge: &'a Edge, upstream: std::net::SocketAddr) -> World<'a> {
        let mut w = World {
            edge,
            upstream,
            alpha: edge.tenant("alpha"),
            bravo: edge.tenant("bravo"),
            pa: "#".repeat(21), // unknown until the first index exists
            pb: "#".repeat(21),
            tls: false,
            suffix: "",
            checked: Cell::new(0),
        };
        seed(&w);
        w.pa = prefix_of(upstream, "alpha-only");
        w.pb = prefix_of(upstream, "bravo-only");
        w
    }
}

/// The edge's own 400 (an Elasticsearch-shaped error), for `what`.
pub fn refused(r: &Response, what: &str) {
    assert_eq!(r.status, 400, "{what}: {}", r.text());
    let v = r.json();
    assert_eq!(v["status"], 400, "{what}: {v}");
    assert!(v["error"]["type"].is_string(), "{what}: {v}");
}

/// A request the edge forwarded: whatever the upstream answered (confinement is checked
/// by [`World::send`]), the edge itself did not fail.
pub fn forwarded(r: &Response, what: &str) {
    assert!(!matches!(r.status, 502..=504), "{what}: {}", r.text());
}

/// The ids of `r`'s hits (an error answers none).
pub fn ids(r: &Response) -> Vec<String> {
    if r.status != 200 {
        return Vec::new();
    }
    let mut out: Vec<String> = r.json()["hits"]["hits"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|h| format!("{}/{}", h["_index"].as_str().unwrap_or("?"), h["_id"]))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Seeds each tenant's indices: `books` (documents 1 and 2, the first one the marker),
/// `<who>-only`, and a document `v` holding values a terms lookup could fetch.
pub fn seed(w: &World<'_>) {
    for (who, name) in [(Who::Alpha, "alpha"), (Who::Bravo, "bravo")] {
        for index in ["books".to_string(), format!("{name}-only")] {
            let r = w.send(who, &w.tenant(who).req("PUT", &format!("/{index}")));
            assert!(r.status == 200, "create {index}: {}", r.text());
        }
        for (id, doc) in [
            (
                "1",
                json!({"who": marker(name), "n": 1, "v": ["books", "a*"]}),
            ),
            (
                "2",
                json!({"who": format!("{name} page"), "n": 2, "v": ["x"]}),
            ),
        ] {
            let r = w.json(who, "PUT", &format!("/books/_doc/{id}?refresh=true"), &doc);
            assert!(r.status < 300, "{}", r.text());
        }
    }
}

/// After the suite: every index on the upstream belongs to one of the tenants (nothing was
/// written outside them).
pub fn nothing_outside(w: &World<'_>) {
    let r = direct(w.upstream, "GET", "/_cat/indices?format=json&h=index", None);
    assert_eq!(r.status, 200, "{}", r.text());
    for i in r.json().as_array().unwrap() {
        let name = i["index"].as_str().unwrap();
        assert!(
            name.starts_with(&w.pa) || name.starts_with(&w.pb) || name.starts_with('.'),
            "an index outside every tenant: {name}"
        );
    }
}

/// The other tenant's documents are untouched.
pub fn victim_intact(w: &World<'_>) {
    let r = w.get(Who::Bravo, "/books/_search?size=10");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(ids(&r), ["books/\"1\"", "books/\"2\""], "{}", r.text());
    assert!(r.text().contains(&marker("bravo")), "{}", r.text());
}

/// Every attack family that an Elasticsearch-API upstream can be sent (the core).
pub fn core(w: &World<'_>) {
    ndjson_framing(w);
    escaped_and_duplicate_keys(w);
    index_field_comparisons(w);
    query_string_tricks(w);
    parameter_tricks(w);
    expressions(w);
    references_in_bodies(w);
    aliases(w);
    templates(w);
    sealed_ids(w);
}

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
    let mut probes = vec![
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
    // values naming the prefixes (the tenant's own, or the other's) match nothing
    probes.clear();
    for p in [&w.pa, &w.pb] {
        for n in [1, 5, 20, 21] {
            probes.push(json!({"prefix": {"_index": &p[..n]}}));
        }
        probes.push(json!({"term": {"_index": format!("{p}books")}}));
        probes.push(json!({"wildcard": {"_index": format!("{}*", &p[..3])}}));
    }
    for q in &probes {
        let r = w.search("/_all/_search", &json!({"query": q, "size": 10}));
        assert!(ids(&r).is_empty(), "{q}: {}", r.text());
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
    // `;` is a separator for some upstreams: the value after it must not reach `_index`
    let r = w.get(Who::Alpha, "/books/_search?q=a*&df=_index;");
    if r.status == 200 {
        assert!(ids(&r).is_empty(), "{}", r.text());
    }
}

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
        json!({"terms": {"_index": {"index": "books", "id": "1", "path": "v"}}}),
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
    refused(&r, "remove_index with a wildcard");
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
