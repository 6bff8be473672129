//! The engine as Elasticsearch 7.10 (issue 30), end to end through `searchgate serve` on
//! both cluster classes: a multitenant cluster on the embedded engine and a single-tenant
//! one on a standalone `searchgate engine`. Each test runs the same requests on both and
//! checks Elasticsearch's answers (spec 4 search, spec 7 errors).
//!
//! Families: analysis settings and mapping parameters (custom analyzers and normalizers,
//! `fielddata`, `index: false`, `doc_values: false`, `case_insensitive`, a nested event
//! mapping with Elasticsearch's counts).

use crate::support::e2e;

use e2e::{ClusterSpec, Config};
use e2e::{Edge, Response, Tenant};
use serde_json::{json, Value};

/// An edge with one cluster of each class, and the standalone engine of the single-tenant one.
struct Classes {
    edge: Edge,
    _engine: e2e::Engine,
    tenants: Vec<(&'static str, Tenant)>,
}

impl Classes {
    fn start() -> Classes {
        let engine = e2e::Engine::start();
        let mt = ClusterSpec::multitenant("mt", "p");
        let st = ClusterSpec::single("st", "p", engine.addr);
        let tenants = vec![("multitenant", mt.tenant()), ("single-tenant", st.tenant())];
        let edge = Edge::start(Config::new().cluster(mt).cluster(st));
        Classes {
            edge,
            _engine: engine,
            tenants,
        }
    }
}

/// One tenant's client, naming its class in every failure.
struct On<'a> {
    edge: &'a Edge,
    t: &'a Tenant,
    class: &'static str,
}

impl On<'_> {
    fn send(&self, method: &str, target: &str, body: Option<Value>) -> Response {
        let req = match body {
            Some(b) => self.t.json(method, target, &b),
            None => self.t.req(method, target),
        };
        self.edge.send(&req)
    }

    /// A 2xx answer's JSON.
    fn ok(&self, method: &str, target: &str, body: Option<Value>) -> Value {
        let r = self.send(method, target, body);
        assert!(
            (200..300).contains(&r.status),
            "[{}] {method} {target}: {} {}",
            self.class,
            r.status,
            r.text()
        );
        r.json()
    }

    /// An error answer: its status and `error` object.
    fn fails(&self, method: &str, target: &str, body: Option<Value>) -> (u16, Value) {
        let r = self.send(method, target, body);
        assert!(
            r.status >= 400,
            "[{}] {method} {target} should fail: {}",
            self.class,
            r.text()
        );
        (r.status, r.json()["error"].clone())
    }

    fn bulk(&self, target: &str, lines: &[Value]) -> Value {
        let r = self.edge.send(&self.t.ndjson("POST", target, lines));
        assert_eq!(r.status, 200, "[{}] bulk: {}", self.class, r.text());
        r.json()
    }

    fn count(&self, index: &str, query: Value) -> u64 {
        let v = self.ok(
            "POST",
            &format!("/{index}/_search"),
            Some(json!({"query": query, "size": 0, "track_total_hits": true})),
        );
        v["hits"]["total"]["value"].as_u64().unwrap()
    }
}

fn each(c: &Classes, f: impl Fn(&On<'_>)) {
    for (class, t) in &c.tenants {
        f(&On {
            edge: &c.edge,
            t,
            class,
        });
    }
}

fn root_type(e: &Value) -> &str {
    e["root_cause"][0]["type"].as_str().unwrap_or_default()
}

/// Settings and mapping of public GitHub event archives, as a client writes them.
fn events_index() -> Value {
    json!({
        "settings": {"number_of_shards": 2, "analysis": {
            "normalizer": {"folded": {"type": "custom", "filter": ["lowercase", "asciifolding"]}},
            "analyzer": {"message": {"type": "custom", "tokenizer": "standard",
                "char_filter": ["html_strip"], "filter": ["lowercase", "asciifolding", "stop"]}}
        }},
        "mappings": {"properties": {
            "id": {"type": "keyword"},
            "type": {"type": "keyword"},
            "public": {"type": "boolean"},
            "created_at": {"type": "date"},
            "actor": {"properties": {
                "id": {"type": "long"},
                "login": {"type": "keyword", "normalizer": "folded"},
                "url": {"type": "keyword", "index": false}
            }},
            "repo": {"properties": {"id": {"type": "long"}, "name": {"type": "keyword"}}},
            "payload": {"properties": {
                "action": {"type": "keyword"},
                "size": {"type": "integer"},
                "commits": {"properties": {
                    "sha": {"type": "keyword"},
                    "message": {"type": "text", "analyzer": "message", "fielddata": true},
                    "author": {"properties": {
                        "name": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
                        "email": {"type": "keyword", "doc_values": false}
                    }}
                }},
                "issue": {"properties": {
                    "title": {"type": "text"},
                    "labels": {"properties": {"name": {"type": "keyword"}}}
                }}
            }}
        }}
    })
}

fn events() -> Vec<Value> {
    let ev = |id: &str, ty: &str, login: &str, repo: &str, at: &str, payload: Value| {
        json!({"id": id, "type": ty, "public": true, "created_at": at,
            "actor": {"id": 1, "login": login, "url": format!("https://api.example/users/{login}")},
            "repo": {"id": 7, "name": repo}, "payload": payload})
    };
    vec![
        ev(
            "1",
            "PushEvent",
            "OctoCat",
            "octo/hello-world",
            "2015-01-01T15:00:00Z",
            json!({"size": 2, "commits": [
                {"sha": "a1", "message": "Fix the <b>bug</b> in parser", "author": {"name": "Octo Cat", "email": "o@example"}},
                {"sha": "a2", "message": "Update README", "author": {"name": "Octo Cat", "email": "o@example"}}
            ]}),
        ),
        ev(
            "2",
            "PushEvent",
            "octocat",
            "octo/hello-world",
            "2015-01-01T16:00:00Z",
            json!({"size": 1, "commits": [
                {"sha": "b1", "message": "fix typo in the café docs", "author": {"name": "Mona Lisa", "email": "m@example"}}
            ]}),
        ),
        ev(
            "3",
            "IssuesEvent",
            "Öctocat",
            "octo/spoon-knife",
            "2015-01-02T09:00:00Z",
            json!({"action": "opened", "issue": {"title": "Crash on start", "labels": [{"name": "bug"}, {"name": "p1"}]}}),
        ),
        ev(
            "4",
            "WatchEvent",
            "mona",
            "github/linguist",
            "2015-01-02T10:00:00Z",
            json!({"action": "started"}),
        ),
        ev(
            "5",
            "IssuesEvent",
            "mona",
            "github/linguist",
            "2015-01-03T11:30:00Z",
            json!({"action": "closed", "issue": {"title": "Crash when parsing", "labels": [{"name": "bug"}]}}),
        ),
    ]
}

fn load_events(on: &On<'_>) {
    on.ok("PUT", "/events", Some(events_index()));
    let mut lines = Vec::new();
    for e in events() {
        lines.push(json!({"index": {"_index": "events", "_id": e["id"]}}));
        lines.push(e);
    }
    let r = on.bulk("/_bulk?refresh=true", &lines);
    assert_eq!(r["errors"], false, "[{}] {r}", on.class);
}

// issue 30, analysis family: a nested event mapping with custom analysis answers term
// (normalized, case_insensitive), terms, prefix, wildcard, regexp, range, bool,
// match_phrase_prefix, exists with Elasticsearch's counts (spec 4)
#[test]
fn event_mapping_queries_count_as_elasticsearch() {
    let c = Classes::start();
    each(&c, |on| {
        load_events(on);
        let n = |q: Value| on.count("events", q);
        // the keyword normalizer folds case and accents, at index and query time
        assert_eq!(
            n(json!({"term": {"actor.login": "OCTOCAT"}})),
            3,
            "[{}]",
            on.class
        );
        assert_eq!(n(json!({"match": {"actor.login": "octocat"}})), 3);
        assert_eq!(n(json!({"prefix": {"actor.login": "OCTO"}})), 3);
        assert_eq!(n(json!({"wildcard": {"actor.login": "*CAT"}})), 3);
        // case_insensitive on a plain keyword
        assert_eq!(n(json!({"term": {"type": "pushevent"}})), 0);
        assert_eq!(
            n(json!({"term": {"type": {"value": "pushevent", "case_insensitive": true}}})),
            2
        );
        assert_eq!(
            n(json!({"prefix": {"type": {"value": "issues", "case_insensitive": true}}})),
            2
        );
        assert_eq!(
            n(json!({"wildcard": {"repo.name": {"value": "OCTO/*", "case_insensitive": true}}})),
            3
        );
        assert_eq!(
            n(json!({"terms": {"type": ["WatchEvent", "IssuesEvent"]}})),
            3
        );
        assert_eq!(n(json!({"regexp": {"repo.name": "octo/.*-world"}})), 2);
        assert_eq!(
            n(json!({"range": {"created_at": {"gte": "2015-01-02", "lt": "2015-01-03"}}})),
            2
        );
        assert_eq!(
            n(json!({"bool": {
            "filter": [{"term": {"payload.issue.labels.name": "bug"}}],
            "must_not": [{"term": {"payload.action": "closed"}}]}})),
            1
        );
        // the custom analyzer: html stripped, stop words dropped (their positions kept),
        // accents folded
        assert_eq!(n(json!({"match": {"payload.commits.message": "BUG"}})), 1);
        assert_eq!(n(json!({"match": {"payload.commits.message": "cafe"}})), 1);
        assert_eq!(
            n(json!({"match_phrase_prefix": {"payload.commits.message": "fix the bu"}})),
            1
        );
        assert_eq!(
            n(json!({"match_phrase": {"payload.commits.message": "typo in the cafe"}})),
            1
        );
        assert_eq!(n(json!({"exists": {"field": "payload.issue"}})), 2);
        assert_eq!(
            n(json!({"exists": {"field": "payload.commits.message"}})),
            2
        );
        assert_eq!(
            n(json!({"match": {"payload.commits.author.name": "octo"}})),
            1
        );
    });
}

// issue 30: sorting, terms aggregations (keyword, fielddata text) and a scroll over the
// event mapping
#[test]
fn event_mapping_sorts_aggregates_and_scrolls() {
    let c = Classes::start();
    each(&c, |on| {
        load_events(on);
        let v = on.ok(
            "POST",
            "/events/_search",
            Some(json!({
                "size": 5, "sort": [{"created_at": "desc"}, {"id": "asc"}],
                "aggs": {
                    "types": {"terms": {"field": "type"}},
                    "words": {"terms": {"field": "payload.commits.message", "size": 3}},
                    "logins": {"terms": {"field": "actor.login"}}
                }
            })),
        );
        let ids: Vec<&str> = v["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["5", "4", "3", "2", "1"], "[{}]", on.class);
        let buckets = |name: &str| -> Vec<(String, u64)> {
            v["aggregations"][name]["buckets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| {
                    (
                        b["key"].as_str().unwrap().to_string(),
                        b["doc_count"].as_u64().unwrap(),
                    )
                })
                .collect()
        };
        assert_eq!(
            buckets("types"),
            [
                ("IssuesEvent".into(), 2),
                ("PushEvent".into(), 2),
                ("WatchEvent".into(), 1)
            ]
        );
        // one count per document and token; ties by term
        assert_eq!(
            buckets("words"),
            [("fix".into(), 2), ("bug".into(), 1), ("cafe".into(), 1)]
        );
        // keys are the normalized values
        assert_eq!(
            buckets("logins"),
            [("octocat".into(), 3), ("mona".into(), 2)]
        );
        // a scroll walks every event once
        let first = on.ok(
            "POST",
            "/events/_search?scroll=1m",
            Some(json!({"size": 2, "sort": ["_doc"]})),
        );
        let mut seen = first["hits"]["hits"].as_array().unwrap().len();
        let mut id = first["_scroll_id"].as_str().unwrap().to_string();
        loop {
            let page = on.ok(
                "POST",
                "/_search/scroll",
                Some(json!({"scroll": "1m", "scroll_id": id})),
            );
            let n = page["hits"]["hits"].as_array().unwrap().len();
            if n == 0 {
                break;
            }
            seen += n;
            id = page["_scroll_id"].as_str().unwrap().to_string();
        }
        assert_eq!(seen, 5, "[{}]", on.class);
    });
}

// issue 30: parameters honoured by refusing what they forbid, and analysis refused by name
// when it names what is missing or unsupported (spec 7 error shapes)
#[test]
fn mapping_parameters_and_analysis_errors() {
    let c = Classes::start();
    each(&c, |on| {
        load_events(on);
        // index: false -> not searchable
        let (s, e) = on.fails(
            "POST",
            "/events/_search",
            Some(json!({"query": {"term": {"actor.url": "x"}}})),
        );
        assert_eq!(s, 400, "[{}]", on.class);
        assert_eq!(root_type(&e), "query_shard_exception");
        assert!(e
            .to_string()
            .contains("Cannot search on field [actor.url] since it is not indexed."));
        // doc_values: false -> no aggregations or sorting
        let (s, e) = on.fails(
            "POST",
            "/events/_search",
            Some(json!({"aggs": {"e": {"terms": {"field": "payload.commits.author.email"}}}})),
        );
        assert_eq!(s, 400);
        assert!(
            e.to_string()
                .contains("Can't load fielddata on [payload.commits.author.email]"),
            "{e}"
        );
        let (s, _) = on.fails(
            "POST",
            "/events/_search",
            Some(json!({"sort": [{"payload.commits.author.email": "asc"}]})),
        );
        assert_eq!(s, 400);
        // text without fielddata
        let (s, e) = on.fails(
            "POST",
            "/events/_search",
            Some(json!({"aggs": {"t": {"terms": {"field": "payload.issue.title"}}}})),
        );
        assert_eq!(s, 400);
        assert!(e
            .to_string()
            .contains("set fielddata=true on [payload.issue.title]"));
        // case_insensitive on a number
        let (_, e) = on.fails(
            "POST",
            "/events/_search",
            Some(json!({"query": {"term": {"repo.id": {"value": 7, "case_insensitive": true}}}})),
        );
        assert!(e.to_string().contains("[repo.id] field which is of type [long], does not support case insensitive term queries"), "{e}");
        // analysis names that do not resolve
        let (s, e) = on.fails(
            "PUT",
            "/bad1",
            Some(json!({"mappings": {"properties": {"t": {"type": "text", "analyzer": "nope"}}}})),
        );
        assert_eq!((s, root_type(&e)), (400, "mapper_parsing_exception"));
        assert!(e
            .to_string()
            .contains("analyzer [nope] has not been configured in mappings"));
        let (s, e) = on.fails("PUT", "/bad2", Some(json!({"mappings": {"properties": {"k": {"type": "keyword", "normalizer": "nope"}}}})));
        assert_eq!((s, root_type(&e)), (400, "mapper_parsing_exception"));
        assert!(e
            .to_string()
            .contains("normalizer [nope] not found for field [k]"));
        let (s, e) = on.fails("PUT", "/bad3", Some(json!({"settings": {"analysis": {"analyzer": {"a": {"tokenizer": "standard", "filter": ["nope"]}}}}})));
        assert_eq!((s, root_type(&e)), (400, "illegal_argument_exception"));
        assert!(e
            .to_string()
            .contains("Custom Analyzer [a] failed to find filter under name [nope]"));
        let (s, e) = on.fails("PUT", "/bad4", Some(json!({"settings": {"analysis": {"filter": {"syn": {"type": "synonym", "synonyms": ["a, b"]}}}}})));
        assert_eq!(s, 400);
        assert!(
            e.to_string()
                .contains("[synonym] is not supported by this engine"),
            "{e}"
        );
        // analysis cannot change under an open index
        let (s, _) = on.fails(
            "PUT",
            "/events/_settings",
            Some(json!({"analysis": {"analyzer": {"x": {"type": "simple"}}}})),
        );
        assert_eq!(s, 400);
        // the settings come back with their lists as lists
        let v = on.ok("GET", "/events/_settings", None);
        let an = &v["events"]["settings"]["index"]["analysis"];
        assert_eq!(
            an["analyzer"]["message"]["filter"],
            json!(["lowercase", "asciifolding", "stop"]),
            "[{}] {v}",
            on.class
        );
        // the mapping comes back as given
        let m = on.ok("GET", "/events/_mapping?include_type_name=false", None);
        assert_eq!(
            m["events"]["mappings"]["properties"]["actor"]["properties"]["login"]["normalizer"],
            "folded"
        );
    });
}

// issue 30, strict `_bulk`: empty `_id` is an item error, `op_type` and `require_alias`
// (per request and per action) are honoured, malformed action lines fail the request with
// Elasticsearch's message, item errors name their `_id` and the missing index
#[test]
fn bulk_is_validated_as_elasticsearch() {
    let c = Classes::start();
    each(&c, |on| {
        on.ok("PUT", "/books", None);
        on.ok(
            "POST",
            "/_aliases",
            Some(json!({"actions": [{"add": {"index": "books", "alias": "shelf"}}]})),
        );
        let r = on.bulk(
            "/_bulk",
            &[
                json!({"index": {"_index": "books", "_id": ""}}),
                json!({"n": 1}),
                json!({"index": {"_index": "books", "_id": "1", "op_type": "create"}}),
                json!({"n": 1}),
                json!({"index": {"_index": "books", "_id": "1", "op_type": "create"}}),
                json!({"n": 2}),
                json!({"index": {"_index": "books", "_id": "2", "require_alias": true}}),
                json!({"n": 2}),
                json!({"index": {"_index": "shelf", "_id": "3", "require_alias": true}}),
                json!({"n": 3}),
                json!({"index": {"_index": "nosuch", "_id": "4"}}),
                json!({"n": 4}),
            ],
        );
        let items = r["items"].as_array().unwrap();
        let item = |i: usize| {
            items[i]
                .as_object()
                .unwrap()
                .values()
                .next()
                .unwrap()
                .clone()
        };
        assert_eq!(r["errors"], true, "[{}]", on.class);
        assert_eq!(item(0)["status"], 400, "[{}] {r}", on.class);
        assert_eq!(item(0)["error"]["type"], "illegal_argument_exception");
        assert_eq!(
            item(0)["error"]["reason"],
            "if _id is specified it must not be empty"
        );
        assert!(
            items[1].get("create").is_some(),
            "op_type create is a create: {r}"
        );
        assert_eq!(item(1)["status"], 201);
        assert_eq!(item(2)["status"], 409);
        assert_eq!(item(2)["_id"], "1");
        assert_eq!(item(3)["status"], 404);
        assert_eq!(item(3)["_id"], "2");
        assert_eq!(
            item(3)["error"]["reason"],
            "[require_alias] request flag is [true] and [books] is not an alias"
        );
        assert_eq!(item(4)["status"], 201);
        assert_eq!(item(5)["status"], 404);
        assert_eq!(item(5)["_id"], "4");
        // Elasticsearch's words first; the edge's hint on creating it may follow (issue 32).
        let reason = item(5)["error"]["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(reason.starts_with("no such index [nosuch]"), "{reason}");
        // per request
        let r = on.bulk(
            "/_bulk?require_alias=true",
            &[
                json!({"index": {"_index": "books", "_id": "9"}}),
                json!({"n": 9}),
            ],
        );
        assert_eq!(r["items"][0]["index"]["status"], 404, "[{}] {r}", on.class);
        // malformed action lines fail the whole request
        for (line, reason) in [
            (json!({}), "Malformed action/metadata line [1], expected FIELD_NAME but found [END_OBJECT]"),
            (json!({"index": {}, "create": {}}), "Malformed action/metadata line [1], expected END_OBJECT but found [FIELD_NAME]"),
            (json!({"index": {"_id": ["a"]}}), "Malformed action/metadata line [1], expected a simple value for field [_id] but found [START_ARRAY]"),
            (json!({"explode": {}}), "Malformed action/metadata line [1], expected field [create], [delete], [index] or [update] but found [explode]"),
        ] {
            let resp = on.edge.send(&on.t.ndjson("POST", "/books/_bulk", &[line, json!({"n": 1})]));
            assert_eq!(resp.status, 400, "[{}] {}", on.class, resp.text());
            let e = resp.json()["error"].clone();
            assert_eq!(e["type"], "illegal_argument_exception");
            assert_eq!(e["reason"], reason);
        }
    });
}

// issue 30, mapping parameters: `copy_to` indexes a field's values into a catch-all field
// (searchable, absent from `_source`), creates a missing target as dynamic mapping would,
// and is refused where the engine cannot honour it (a multi-field's `copy_to`)
#[test]
fn copy_to_fills_a_catch_all_field() {
    let c = Classes::start();
    each(&c, |on| {
        let mapping = json!({"mappings": {"properties": {
            "title": {"type": "text", "copy_to": "all_text"},
            "tags": {"type": "keyword", "copy_to": ["all_text", "tag_copy"]},
            "all_text": {"type": "text"}
        }}});
        on.ok("PUT", "/cp", Some(mapping));
        on.ok(
            "PUT",
            "/cp/_doc/1?refresh=true",
            Some(json!({"title": "Quick brown fox", "tags": ["Rust", "search"]})),
        );
        assert_eq!(on.count("cp", json!({"match": {"all_text": "fox"}})), 1);
        assert_eq!(on.count("cp", json!({"match": {"all_text": "rust"}})), 1);
        assert_eq!(
            on.count("cp", json!({"term": {"tag_copy.keyword": "Rust"}})),
            1
        );
        let d = on.ok("GET", "/cp/_doc/1", None);
        assert_eq!(
            d["_source"],
            json!({"title": "Quick brown fox", "tags": ["Rust", "search"]}),
            "[{}]",
            on.class
        );
        let m = on.ok("GET", "/cp/_mapping?include_type_name=false", None);
        let props = &m["cp"]["mappings"]["properties"];
        assert_eq!(props["title"]["copy_to"], "all_text", "[{}] {m}", on.class);
        assert_eq!(props["tag_copy"]["type"], "text", "[{}] {m}", on.class);
        let (s, e) = on.fails(
            "PUT",
            "/cp2",
            Some(json!({"mappings": {"properties": {
            "t": {"type": "text", "fields": {"k": {"type": "keyword", "copy_to": "x"}}}}}})),
        );
        assert_eq!((s, root_type(&e)), (400, "mapper_parsing_exception"));
        assert!(e.to_string().contains("[copy_to]"), "{e}");
    });
}

// issue 30: `_name` on queries gives each hit its `matched_queries`; the options of
// `query_string` are honoured (`quote_analyzer`, `phrase_slop`, `allow_leading_wildcard`)
// or refused by name (`analyze_wildcard: true`), never ignored
#[test]
fn named_queries_and_query_string_options() {
    let c = Classes::start();
    each(&c, |on| {
        let mapping = json!({"mappings": {"properties": {
            "title": {"type": "text"}, "tag": {"type": "keyword"}}}});
        on.ok("PUT", "/nq", Some(mapping));
        on.bulk(
            "/nq/_bulk?refresh=true",
            &[
                json!({"index": {"_id": "1"}}),
                json!({"title": "quick brown fox", "tag": "a"}),
                json!({"index": {"_id": "2"}}),
                json!({"title": "lazy dog", "tag": "b"}),
            ],
        );
        let v = on.ok(
            "POST",
            "/nq/_search",
            Some(json!({"query": {"bool": {"should": [
            {"match": {"title": {"query": "fox", "_name": "fox"}}},
            {"term": {"tag": {"value": "b", "_name": "tag_b"}}},
            {"exists": {"field": "tag", "_name": "tagged"}}
        ]}}, "sort": ["_id"]})),
        );
        let hits = &v["hits"]["hits"];
        assert_eq!(
            hits[0]["matched_queries"],
            json!(["fox", "tagged"]),
            "[{}] {v}",
            on.class
        );
        assert_eq!(
            hits[1]["matched_queries"],
            json!(["tag_b", "tagged"]),
            "[{}] {v}",
            on.class
        );
        let qs = |extra: Value| {
            let mut body = json!({"query": "title:\"quick fox\""});
            body.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            on.count("nq", json!({ "query_string": body }))
        };
        assert_eq!(qs(json!({})), 0, "[{}]", on.class);
        assert_eq!(qs(json!({"phrase_slop": 1})), 1, "[{}]", on.class);
        assert_eq!(
            qs(json!({"phrase_slop": 1, "quote_analyzer": "keyword"})),
            0
        );
        let (s, e) = on.fails(
            "POST",
            "/nq/_search",
            Some(json!({"query": {"query_string":
            {"query": "*ox", "allow_leading_wildcard": false}}})),
        );
        assert_eq!(s, 400, "[{}] {e}", on.class);
        let (s, e) = on.fails(
            "POST",
            "/nq/_search",
            Some(json!({"query": {"query_string":
            {"query": "fo*", "analyze_wildcard": true}}})),
        );
        assert_eq!(s, 400, "[{}] {e}", on.class);
        assert!(e.to_string().contains("[analyze_wildcard]"), "{e}");
    });
}

// issue 30, "never ignore silently": the fuzzy options of `match` are honoured
// (`prefix_length`, `fuzzy_transpositions`, `max_expansions` as Lucene's FuzzyQuery) and
// options without effect are 400 naming them (spec 7's error shape), on both classes
#[test]
fn query_options_are_honoured_or_refused() {
    let c = Classes::start();
    each(&c, |on| {
        let mapping = json!({"mappings": {"properties": {"w": {"type": "text"}}}});
        on.ok("PUT", "/fz", Some(mapping));
        let mut lines = Vec::new();
        for (i, w) in ["quick", "quack", "quikc", "wuick"].iter().enumerate() {
            lines.push(json!({"index": {"_id": i.to_string()}}));
            lines.push(json!({ "w": w }));
        }
        on.bulk("/fz/_bulk?refresh=true", &lines);
        let m = |extra: Value| {
            let mut o = json!({"query": "quick", "fuzziness": 1});
            o.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            on.count("fz", json!({"match": {"w": o}}))
        };
        assert_eq!(m(json!({})), 4, "[{}]", on.class);
        assert_eq!(
            m(json!({"fuzzy_transpositions": false})),
            3,
            "[{}]",
            on.class
        );
        assert_eq!(m(json!({"prefix_length": 1})), 3, "[{}]", on.class);
        assert_eq!(m(json!({"max_expansions": 1})), 1, "[{}]", on.class);
        let (s, e) = on.fails(
            "POST",
            "/fz/_search",
            Some(json!({"query": {"match": {"w": {"query": "quick", "cutoff_frequency": 0.1}}}})),
        );
        assert_eq!(s, 400, "[{}] {e}", on.class);
        assert!(e.to_string().contains("[cutoff_frequency]"), "{e}");
        let (s, e) = on.fails(
            "POST",
            "/fz/_search",
            Some(json!({"query": {"range": {"w": {"gte": "a", "relation": "disjoint"}}}})),
        );
        assert_eq!(s, 400, "[{}] {e}", on.class);
        assert!(e.to_string().contains("DISJOINT"), "{e}");
        let (s, e) = on.fails(
            "PUT",
            "/fz2",
            Some(json!({"mappings": {"_source": {"enabled": false}}})),
        );
        assert_eq!((s, root_type(&e)), (400, "mapper_parsing_exception"));
    });
}

// issue 30, OpenSearch's point in time (OpenSearch 2.x "Point in Time API"): open with
// `keep_alive`, search with `pit.id`, list, close by `pit_id`, on both classes; on the
// multitenant class the ids are sealed, another tenant neither lists nor closes them, and
// closing all at once (which cannot be confined) is 501
#[test]
fn opensearch_point_in_time_on_both_classes() {
    let engine = e2e::Engine::start();
    let mt = ClusterSpec::multitenant("mt", "p");
    let other = ClusterSpec::multitenant("mt2", "p");
    let st = ClusterSpec::single("st", "p", engine.addr);
    let tenants = [("multitenant", mt.tenant()), ("single-tenant", st.tenant())];
    let stranger = other.tenant();
    let edge = Edge::start(Config::new().cluster(mt).cluster(other).cluster(st));
    for (class, t) in &tenants {
        let on = On {
            edge: &edge,
            t,
            class,
        };
        on.ok(
            "PUT",
            "/os",
            Some(json!({"settings": {"number_of_shards": 2}})),
        );
        on.bulk(
            "/os/_bulk?refresh=true",
            &[
                json!({"index": {"_id": "1"}}),
                json!({"n": 1}),
                json!({"index": {"_id": "2"}}),
                json!({"n": 2}),
            ],
        );
        let v = on.ok("POST", "/os/_search/point_in_time?keep_alive=1m", None);
        let id = v["pit_id"].as_str().unwrap().to_string();
        assert_eq!(v["_shards"]["failed"], 0, "[{class}] {v}");
        assert!(v["creation_time"].as_u64().is_some(), "[{class}] {v}");
        on.ok("DELETE", "/os/_doc/1?refresh=true", None);
        let body = json!({"pit": {"id": id, "keep_alive": "1m"}, "track_total_hits": true});
        let s = on.ok("POST", "/_search", Some(body));
        assert_eq!(
            s["hits"]["total"]["value"], 2,
            "[{class}] the view of the open: {s}"
        );
        assert_eq!(s["pit_id"], id.as_str(), "[{class}]");
        let list = on.ok("GET", "/_search/point_in_time/_all", None);
        let listed: Vec<&str> = list["pits"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["pit_id"].as_str())
            .collect();
        assert!(listed.contains(&id.as_str()), "[{class}] {list}");
        if *class == "multitenant" {
            assert_eq!(listed, [id.as_str()], "only its own: {list}");
            let theirs = edge.send(&stranger.req("GET", "/_search/point_in_time/_all"));
            assert_eq!(
                theirs.json(),
                json!({"pits": []}),
                "another tenant lists none"
            );
            let r = edge.send(&stranger.json(
                "DELETE",
                "/_search/point_in_time",
                &json!({"pit_id": [id]}),
            ));
            assert!(r.status >= 400, "another tenant's close: {}", r.text());
            let r = on.send("DELETE", "/_search/point_in_time/_all", None);
            assert_eq!(r.status, 501, "{}", r.text());
        }
        let closed = on.ok(
            "DELETE",
            "/_search/point_in_time",
            Some(json!({"pit_id": [id]})),
        );
        assert_eq!(
            closed,
            json!({"pits": [{"successful": true, "pit_id": id}]}),
            "[{class}]"
        );
        let (s, _) = on.fails("POST", "/_search", Some(json!({"pit": {"id": id}})));
        assert_eq!(s, 404, "[{class}] a closed point in time");
    }
}
