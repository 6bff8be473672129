//! Custom routing and date math in bodies, end to end through `searchgate serve` on both
//! cluster classes (issue 30): a multitenant cluster on the embedded engine (with a second
//! tenant beside it) and a single-tenant one on a standalone `searchgate engine`.
//!
//! - `routing` on writes, reads, `_bulk`, `_mget`, searches and counts selects shards as
//!   Elasticsearch 7.10 does; `_routing` comes back; `_routing.required` refuses a write
//!   without one (spec 7's error shape); aliases' `routing`, `index_routing` and
//!   `search_routing` apply through the alias. The single-tenant class forwards routing as
//!   it is; the multitenant one carries the values unchanged: a routing value is never an
//!   index name, so one spelling another tenant's index reaches nothing of theirs.
//! - Date-math names inside `_bulk` actions, `_aliases` actions and `_reindex` are resolved
//!   once: on the multitenant class by the edge (its clock, the concrete name forwarded and
//!   auto-created), on the single-tenant class by its upstream, which alone reads the body.

use crate::support::e2e;

use e2e::{ClusterSpec, Config, Edge, Response, Tenant};
use serde_json::{json, Value};

/// `doc-1` routes to shard 0 of a two-shard index by its id; the routing value `b` to
/// shard 1 and `a` to shard 0 (murmur3 of the UTF-16 value, as Elasticsearch 7 hashes it:
/// the engine's unit tests check the hash).
const ID_ON_0: &str = "doc-1";
const ON_0: &str = "a";
const ON_1: &str = "b";

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

    fn bulk(&self, target: &str, lines: &[Value]) -> Value {
        let r = self.edge.send(&self.t.ndjson("POST", target, lines));
        assert_eq!(r.status, 200, "[{}] bulk: {}", self.class, r.text());
        r.json()
    }

    fn shards_and_ids(&self, target: &str) -> (u64, Vec<String>) {
        let v = self.ok("GET", target, None);
        let mut ids: Vec<String> = v["hits"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["_id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        (v["_shards"]["total"].as_u64().unwrap(), ids)
    }
}

/// An edge with two multitenant clusters (the second a bystander) and a single-tenant one.
fn classes() -> (Edge, e2e::Engine, Vec<(&'static str, Tenant)>, Tenant) {
    let engine = e2e::Engine::start();
    let mt = ClusterSpec::multitenant("mt", "p");
    let other = ClusterSpec::multitenant("mt2", "p");
    let st = ClusterSpec::single("st", "p", engine.addr);
    let tenants = vec![("multitenant", mt.tenant()), ("single-tenant", st.tenant())];
    let stranger = other.tenant();
    let edge = Edge::start(Config::new().cluster(mt).cluster(other).cluster(st));
    (edge, engine, tenants, stranger)
}

fn documents_and_searches(on: &On<'_>) {
    on.ok(
        "PUT",
        "/rt",
        Some(json!({"settings": {"number_of_shards": 2}})),
    );
    let w = on.ok(
        "PUT",
        &format!("/rt/_doc/{ID_ON_0}?routing={ON_1}&refresh=true"),
        Some(json!({"k": 1})),
    );
    assert_eq!(w["result"], "created", "[{}] {w}", on.class);
    // the id alone reads shard 0: not found; the routing reads shard 1
    assert_eq!(
        on.send("GET", &format!("/rt/_doc/{ID_ON_0}"), None).status,
        404
    );
    let g = on.ok("GET", &format!("/rt/_doc/{ID_ON_0}?routing={ON_1}"), None);
    assert_eq!(g["_routing"], ON_1, "[{}] {g}", on.class);
    assert_eq!(
        on.shards_and_ids(&format!("/rt/_search?routing={ON_0}")),
        (1, vec![]),
        "[{}]",
        on.class
    );
    assert_eq!(
        on.shards_and_ids(&format!("/rt/_search?routing={ON_0},{ON_1}")),
        (2, vec![ID_ON_0.to_string()]),
        "[{}]",
        on.class
    );
    let hit = on.ok("GET", &format!("/rt/_search?routing={ON_1}"), None);
    assert_eq!(
        hit["hits"]["hits"][0]["_routing"], ON_1,
        "[{}] {hit}",
        on.class
    );
    let c = on.ok("GET", &format!("/rt/_count?routing={ON_0}"), None);
    assert_eq!(c["count"], 0, "[{}] {c}", on.class);
    // _bulk and _mget carry routing per item
    let v = on.bulk(
        "/_bulk?refresh=true",
        &[
            json!({"index": {"_index": "rt", "_id": "bulk-1", "routing": ON_0}}),
            json!({"k": 2}),
        ],
    );
    assert_eq!(v["errors"], false, "[{}] {v}", on.class);
    let m = on.ok(
        "POST",
        "/rt/_mget",
        Some(json!({"docs": [{"_id": "bulk-1", "routing": ON_0}, {"_id": ID_ON_0}]})),
    );
    assert_eq!(m["docs"][0]["_routing"], ON_0, "[{}] {m}", on.class);
    assert_eq!(m["docs"][1]["found"], false, "[{}] {m}", on.class);
    // _routing.required
    on.ok(
        "PUT",
        "/req",
        Some(json!({"mappings": {"_routing": {"required": true}}})),
    );
    let r = on.send("PUT", "/req/_doc/1", Some(json!({"k": 1})));
    let (kind, reason) = e2e::es_error(&r, 400);
    assert_eq!(kind, "routing_missing_exception", "[{}]", on.class);
    assert_eq!(
        reason, "routing is required for [req]/[_doc]/[1]",
        "[{}]",
        on.class
    );
}

fn aliases(on: &On<'_>) {
    let a = on.ok(
        "POST",
        "/_aliases",
        Some(json!({"actions": [{"add": {"index": "rt", "alias": "ra", "routing": ON_1}}]})),
    );
    assert_eq!(a["acknowledged"], true);
    let v = on.ok("GET", "/_alias/ra", None);
    assert_eq!(
        v["rt"]["aliases"]["ra"],
        json!({"index_routing": ON_1, "search_routing": ON_1}),
        "[{}] {v}",
        on.class
    );
    on.ok(
        "PUT",
        "/ra/_doc/via-alias?refresh=true",
        Some(json!({"k": 3})),
    );
    let g = on.ok("GET", &format!("/rt/_doc/via-alias?routing={ON_1}"), None);
    assert_eq!(g["_routing"], ON_1, "[{}] {g}", on.class);
    let (shards, ids) = on.shards_and_ids("/ra/_search");
    assert_eq!(shards, 1, "[{}]", on.class);
    assert_eq!(ids, vec![ID_ON_0.to_string(), "via-alias".to_string()]);
    let r = on.send(
        "PUT",
        &format!("/ra/_doc/x?routing={ON_0}"),
        Some(json!({})),
    );
    let (kind, reason) = e2e::es_error(&r, 400);
    assert_eq!(kind, "illegal_argument_exception", "[{}]", on.class);
    assert!(
        reason.contains("has index routing associated with it"),
        "{reason}"
    );
    let r = on.send(
        "POST",
        "/_aliases",
        Some(
            json!({"actions": [{"add": {"index": "rt", "alias": "two", "index_routing": "1,2"}}]}),
        ),
    );
    let (_, reason) = e2e::es_error(&r, 400);
    assert!(
        reason.contains("several index routing values"),
        "[{}] {reason}",
        on.class
    );
}

#[test]
fn routing_selects_shards_on_both_classes() {
    let (edge, _engine, tenants, _) = classes();
    for (class, t) in &tenants {
        let on = On {
            edge: &edge,
            t,
            class,
        };
        documents_and_searches(&on);
        aliases(&on);
    }
}

/// A routing value spelling another tenant's index (its name as the upstream knows it)
/// is a routing value and nothing else: it hashes to a shard of the tenant's own index.
#[test]
fn a_routing_value_never_names_another_tenants_index() {
    let (edge, _engine, tenants, stranger) = classes();
    let mt = On {
        edge: &edge,
        t: &tenants[0].1,
        class: "multitenant",
    };
    let them = On {
        edge: &edge,
        t: &stranger,
        class: "bystander",
    };
    them.ok("PUT", "/secret", None);
    them.ok(
        "PUT",
        "/secret/_doc/1?refresh=true",
        Some(json!({"theirs": true})),
    );
    let upstream_name = format!("{}secret", e2e::prefix_of(edge.engine(), "secret"));
    mt.ok(
        "PUT",
        "/mine",
        Some(json!({"settings": {"number_of_shards": 2}})),
    );
    mt.ok(
        "PUT",
        &format!("/mine/_doc/1?routing={upstream_name}&refresh=true"),
        Some(json!({"mine": true})),
    );
    mt.ok(
        "POST",
        "/_aliases",
        Some(
            json!({"actions": [{"add": {"index": "mine", "alias": "sneaky",
            "routing": upstream_name, "search_routing": format!("{upstream_name},secret")}}]}),
        ),
    );
    for target in [
        format!("/mine/_search?routing={upstream_name}"),
        "/sneaky/_search".to_string(),
        format!("/_search?routing={upstream_name},secret"),
    ] {
        let r = mt.send("GET", &target, None);
        assert_eq!(r.status, 200, "{target}: {}", r.text());
        assert!(!r.text().contains("theirs"), "{target}: {}", r.text());
    }
    let v = them.ok("GET", "/secret/_search", None);
    assert_eq!(v["hits"]["hits"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["hits"]["hits"][0]["_source"], json!({"theirs": true}));
}

/// The names `<expr>` resolves to just before and just after a request (either may be the
/// edge's or the upstream's reading).
fn names_around(expr: &str, f: impl FnOnce()) -> [String; 2] {
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64
    };
    let before = now();
    f();
    let after = now();
    [before, after].map(|t| searchgate::request::datemath::resolve(expr.as_bytes(), t).unwrap())
}

fn count(on: &On<'_>, index: &str) -> u64 {
    on.ok("GET", &format!("/{index}/_count"), None)["count"]
        .as_u64()
        .unwrap()
}

#[test]
fn date_math_in_bodies_is_resolved_once_on_both_classes() {
    let (edge, _engine, tenants, _) = classes();
    for (class, t) in &tenants {
        let on = On {
            edge: &edge,
            t,
            class,
        };
        let expr = "<logstash-{now/d}>";
        // _bulk: the whitelisted name is created from its resolved form
        let names = names_around(expr, || {
            let v = on.bulk(
                "/_bulk?refresh=true",
                &[
                    json!({"index": {"_index": expr, "_id": "1"}}),
                    json!({"a": 1}),
                ],
            );
            assert_eq!(v["errors"], false, "[{class}] {v}");
            let got = v["items"][0]["index"]["_index"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(got.starts_with("logstash-20"), "[{class}] {v}");
        });
        let today = names.iter().find(|n| count(&on, n) == 1).cloned();
        let today = today.unwrap_or_else(|| panic!("[{class}] none of {names:?} has the document"));
        // _aliases: index and alias names
        on.ok(
            "POST",
            "/_aliases",
            Some(json!({"actions": [{"add": {"index": expr, "alias": "<today-{now/d}>"}}]})),
        );
        let v = on.ok("GET", "/_alias/today-*", None);
        assert!(v.get(&today).is_some(), "[{class}] {v}");
        // _reindex: source and destination (created first: no automatic creation)
        on.ok("PUT", "/%3Carchive-%7Bnow%2Fd%7D%3E", None);
        let v = on.ok(
            "POST",
            "/_reindex?refresh=true",
            Some(json!({"source": {"index": expr}, "dest": {"index": "<archive-{now/d}>"}})),
        );
        assert_eq!(v["created"], 1, "[{class}] {v}");
        assert_eq!(count(&on, "archive-*"), 1, "[{class}]");
        // on the multitenant class what the edge cannot read is refused, not forwarded
        if *class != "multitenant" {
            continue;
        }
        let r = edge.send(&t.ndjson(
            "POST",
            "/_bulk",
            &[
                json!({"index": {"_index": "<logs-{now/d{'*'}}>"}}),
                json!({}),
            ],
        ));
        assert_eq!(r.status, 400, "[{class}] {}", r.text());
    }
}
