//! End-to-end: two tenants of the multitenant class on one embedded engine, through the real
//! edge (spec 1.6, issue 5 "Tenancy"). Each runs the same script: it creates indices of the
//! same names as the other, indexes, searches with `*`, `_all`, comma lists and exclusions,
//! sends `_bulk`, `_msearch` and `_mget` bodies naming the other's names (and the other's
//! real, prefixed names, learned from the engine directly), reads `_cat/indices` (text, `?v`,
//! `format=json`), mappings, counts, and error bodies for missing indices.
//!
//! Two checks on every answer:
//! - isolation: no byte of the other tenant's documents, index names or prefix, and never
//!   the tenant's own prefix, in any header or body;
//! - "as if alone": the answer equals, status and body, the answer of a single-tenant
//!   cluster that ran the same script alone on its own engine (only `took`, store sizes,
//!   uuids and creation dates masked).
//!
//! Also: whitelisted auto-creation (spec 1.5, 2.2) on the names the tenant sees, and a
//! missing non-whitelisted index is 404 `index_not_found_exception` naming the tenant's
//! name, with nothing created upstream (spec 7).

use crate::support::e2e;

use e2e::answers::{all_bytes, contains, normalize};
use e2e::{
    direct, engine_indices, es_error, exchange, prefix_of, ClusterSpec, Config, Conn, Edge, Engine,
    Req, Response, Tenant,
};
use serde_json::{json, Value};

/// One request of the script.
#[derive(Debug, Clone)]
struct Step {
    method: &'static str,
    target: String,
    /// (content type, body)
    body: Option<(&'static str, Vec<u8>)>,
}

fn step(method: &'static str, target: impl Into<String>) -> Step {
    Step {
        method,
        target: target.into(),
        body: None,
    }
}

fn with_json(method: &'static str, target: impl Into<String>, body: Value) -> Step {
    Step {
        body: Some(("application/json", serde_json::to_vec(&body).unwrap())),
        ..step(method, target)
    }
}

fn with_ndjson(method: &'static str, target: impl Into<String>, lines: &[Value]) -> Step {
    Step {
        body: Some(("application/x-ndjson", e2e::ndjson(lines))),
        ..step(method, target)
    }
}

impl Step {
    fn req(&self, t: &Tenant) -> Req {
        let r = t.req(self.method, &self.target);
        match &self.body {
            Some((ct, b)) => r.header("Content-Type", ct).body(b.clone()),
            None => r,
        }
    }

    /// The step as sent to the cluster that runs the script alone. The embedded engine does
    /// not route `_all` as an index expression (`/_all/_search` is 400 "no handler found",
    /// reported to its helper), while Elasticsearch reads it as `*`: send `*` there.
    fn alone(&self) -> Step {
        let mut s = self.clone();
        if let Some(rest) = s.target.strip_prefix("/_all") {
            s.target = format!("/*{rest}");
        }
        s
    }

    fn text(&self) -> String {
        let body = self
            .body
            .as_ref()
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned());
        format!(
            "{} {} {}",
            self.method,
            self.target,
            body.unwrap_or_default()
        )
    }
}

fn doc(me: &str, i: u32) -> Value {
    json!({"title": format!("{me} book {i}"), "body": format!("{me}secret{i} shared words"), "n": i})
}

/// Creates the tenant's indices and documents: `books` (both tenants), `<me>-only`.
fn setup_script(me: &str) -> Vec<Step> {
    let only = format!("{me}-only");
    let mut bulk = Vec::new();
    for i in 1..=3 {
        bulk.push(json!({"index": {"_index": "books", "_type": "doc", "_id": i.to_string()}}));
        bulk.push(doc(me, i));
        bulk.push(json!({"index": {"_index": only, "_type": "doc", "_id": i.to_string()}}));
        bulk.push(doc(me, 100 + i));
    }
    vec![
        step("PUT", "/books"),
        with_json(
            "PUT",
            format!("/{only}"),
            json!({"settings": {"number_of_shards": 1, "number_of_replicas": 1}}),
        ),
        with_ndjson("POST", "/_bulk?refresh=true", &bulk),
        with_json("POST", "/books/doc/10?refresh=true", doc(me, 10)),
        with_json("PUT", "/books/_doc/11?refresh=true", doc(me, 11)),
    ]
}

/// Reads and writes naming the tenant's names, the other's names (`o`) and the other's
/// real names (prefix `p`).
fn query_script(me: &str, o: &str, p: &str) -> Vec<Step> {
    let q = json!({"query": {"match": {"body": "shared"}}, "size": 100});
    let mut s = vec![
        step("GET", "/_search"),
        step("GET", "/_search?q=shared&size=100"),
        step("GET", "/*/_search?size=100"),
        step("GET", "/_all/_search?size=100"),
        with_json("POST", format!("/books,{me}-only/_search"), q.clone()),
        with_json("POST", format!("/books,{o}-only/_search"), q.clone()),
        step("GET", "/*,-books/_search?size=100"),
        step("GET", format!("/_all,-{me}-only/_search?size=100")),
        step("GET", format!("/{o}-only/_search")),
        step("GET", format!("/{p}books/_search")),
        step("GET", format!("/{p}*/_search")),
        step("GET", format!("/{o}*/_search")),
        step("GET", "/_count"),
        step("GET", "/books/_count?q=shared"),
        step("GET", format!("/{o}-only/_count")),
        step("GET", format!("/{p}books/_count")),
    ];
    s.push(with_ndjson(
        "POST",
        "/_msearch",
        &[
            json!({"index": "books"}),
            q.clone(),
            json!({"index": format!("{o}-only")}),
            json!({}),
            json!({"index": format!("{p}books")}),
            json!({}),
            json!({"index": ["books", format!("{p}{o}-only")]}),
            json!({}),
            json!({"index": "*"}),
            json!({"size": 100}),
            json!({}),
            json!({"size": 100}),
        ],
    ));
    s.push(with_ndjson(
        "POST",
        "/books/_msearch",
        &[
            json!({}),
            json!({"size": 100}),
            json!({"index": format!("{p}books")}),
            json!({}),
        ],
    ));
    s.push(with_json(
        "POST",
        "/_mget",
        json!({"docs": [
            {"_index": "books", "_type": "doc", "_id": "1"},
            {"_index": format!("{o}-only"), "_id": "1"},
            {"_index": format!("{p}books"), "_id": "1"},
            {"_index": format!("{p}{o}-only"), "_id": "2"},
        ]}),
    ));
    s.push(with_json(
        "POST",
        "/books/_mget",
        json!({"ids": ["1", "2", "404"]}),
    ));
    // Writes naming the other's names: each must miss (or land in the tenant's own space).
    s.push(with_ndjson(
        "POST",
        "/_bulk?refresh=true",
        &[
            json!({"index": {"_index": format!("{o}-only"), "_type": "doc", "_id": "99"}}),
            doc(me, 99),
            json!({"index": {"_index": format!("{p}books"), "_type": "doc", "_id": "99"}}),
            doc(me, 99),
            json!({"delete": {"_index": format!("{p}books"), "_type": "doc", "_id": "1"}}),
            json!({"delete": {"_index": format!("{o}-only"), "_type": "doc", "_id": "2"}}),
            json!({"index": {"_index": "books", "_type": "doc", "_id": "20"}}),
            doc(me, 20),
        ],
    ));
    s.push(with_ndjson(
        "POST",
        format!("/{o}-only/_bulk"),
        &[json!({"index": {"_type": "doc", "_id": "98"}}), doc(me, 98)],
    ));
    s.push(step("DELETE", format!("/{o}-only")));
    s.push(step("DELETE", format!("/{p}books")));
    s.push(with_json("POST", format!("/{o}-only/doc/5"), doc(me, 5)));
    s.extend(listing_script(me, o, p));
    s
}

/// Listings, mappings, documents and errors, then auto-creation.
fn listing_script(me: &str, o: &str, p: &str) -> Vec<Step> {
    let mut s = vec![
        step("GET", "/_cat/indices"),
        step("GET", "/_cat/indices?v"),
        step("GET", "/_cat/indices?format=json"),
        step("GET", "/_cat/indices?v&bytes=b"),
        step("GET", "/_cat/indices/books?v"),
        step("GET", format!("/_cat/indices/{o}*?v")),
        step("GET", format!("/_cat/indices/{p}*?format=json")),
        step("GET", "/_mapping"),
        step("GET", "/books/_mapping"),
        step("GET", "/_all/_mapping"),
        step("GET", format!("/{o}-only/_mapping")),
        step("GET", format!("/{p}books/_mapping")),
        step("GET", "/books"),
        step("GET", format!("/{o}-only")),
        step("HEAD", format!("/{o}-only")),
        step("HEAD", "/books"),
        step("GET", "/books/doc/1"),
        step("GET", format!("/{o}-only/doc/1")),
        step("GET", format!("/{p}books/doc/1")),
        step("GET", "/missing/_search"),
        step("GET", "/missing"),
        with_json(
            "POST",
            "/books/_search",
            json!({"query": {"no_such_query": {}}}),
        ),
        step("GET", "/_cluster/health"),
        step("GET", "/_cluster/health/books"),
        // Auto-creation of whitelisted names (spec 1.5, 2.2), the tenant's names.
        with_json(
            "POST",
            "/logstash-2024.05.01/doc/1?refresh=true",
            json!({"msg": format!("{me}secret-log")}),
        ),
        with_ndjson(
            "POST",
            "/_bulk?refresh=true",
            &[
                json!({"index": {"_index": format!("events-{me}"), "_type": "doc", "_id": "1"}}),
                json!({"msg": format!("{me}secret-event")}),
                json!({"index": {"_index": "logstash-2024.05.01", "_type": "doc", "_id": "2"}}),
                json!({"msg": format!("{me}secret-log2")}),
            ],
        ),
        with_json(
            "POST",
            "/notlisted/doc/1",
            json!({"msg": format!("{me}secret-lost")}),
        ),
        with_ndjson(
            "POST",
            "/_bulk",
            &[
                json!({"index": {"_index": "notlisted", "_type": "doc", "_id": "1"}}),
                json!({"msg": format!("{me}secret-lost")}),
            ],
        ),
        step("GET", "/_cat/indices?v"),
        step("GET", "/logstash-*/_search"),
        step("GET", "/events*,logstash*/_count"),
        step("GET", "/_search?q=secret*&size=100"),
    ];
    s.push(step("GET", format!("/_search?q={o}*&size=100")));
    s
}

/// Where two normalised answers part, with some context.
fn difference(got: &str, want: &str) -> String {
    let at = got
        .bytes()
        .zip(want.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    let from = at.saturating_sub(120);
    let part = |s: &str| {
        s.get(from..(at + 200).min(s.len()))
            .unwrap_or(s)
            .to_string()
    };
    format!(
        "  multitenant: ...{}\n  alone:       ...{}",
        part(got),
        part(want)
    )
}

/// One tenant's side: its client, its keep-alive connection, its answers.
struct Side {
    name: &'static str,
    tenant: Tenant,
    conn: Conn,
    answers: Vec<Response>,
}

impl Side {
    fn new(edge: &Edge, id: &'static str) -> Side {
        Side {
            name: id,
            tenant: edge.tenant(id),
            conn: edge.conn(),
            answers: Vec::new(),
        }
    }

    fn run(&mut self, s: &Step) {
        let r = exchange(&mut self.conn, &s.req(&self.tenant));
        self.answers.push(r);
    }
}

/// Isolation: `r` (to `s`, sent by tenant `me`) holds nothing of the other tenant, nor any
/// prefix the request did not name itself.
fn assert_isolated(
    me: &str,
    o: &str,
    own_prefix: &str,
    other_prefix: &str,
    s: &Step,
    r: &Response,
) {
    let bytes = all_bytes(r);
    let asked = s.text();
    let shown = || String::from_utf8_lossy(&bytes).into_owned();
    for secret in [format!("{o}secret"), format!("{o} book")] {
        assert!(
            !contains(&bytes, &secret),
            "{me} saw {o}'s data ({secret}) answering {asked}:\n{}",
            shown()
        );
    }
    assert!(
        !contains(&bytes, own_prefix),
        "{me} saw its own prefix answering {asked}:\n{}",
        shown()
    );
    for name in [
        other_prefix.to_string(),
        format!("{o}-only"),
        format!("events-{o}"),
    ] {
        if !asked.contains(&name) {
            assert!(
                !contains(&bytes, &name),
                "{me} saw {o}'s name {name} answering {asked}:\n{}",
                shown()
            );
        }
    }
}

// spec 1.6: each tenant of a shared engine sees only its own indices, as if it were alone.
#[test]
fn two_tenants_on_one_engine_never_see_each_other() {
    let (solo_a, solo_b) = (Engine::start(), Engine::start());
    let config = Config::new()
        .cluster(ClusterSpec::multitenant("alpha", "p"))
        .cluster(ClusterSpec::multitenant("bravo", "p"))
        .cluster(ClusterSpec::single("soloa", "p", solo_a.addr))
        .cluster(ClusterSpec::single("solob", "p", solo_b.addr));
    let edge = Edge::start(config);
    let engine = edge.engine();
    // alpha and soloa run alpha's script; bravo and solob run bravo's.
    let mut sides = [
        Side::new(&edge, "alpha"),
        Side::new(&edge, "bravo"),
        Side::new(&edge, "soloa"),
        Side::new(&edge, "solob"),
    ];
    let (setup_a, setup_b) = (setup_script("alpha"), setup_script("bravo"));
    for (sa, sb) in setup_a.iter().zip(&setup_b) {
        for (side, s) in sides.iter_mut().zip([sa, sb, sa, sb]) {
            side.run(s);
            let r = side.answers.last().unwrap();
            assert!(
                r.status < 300,
                "{} {}: {} {}",
                side.name,
                s.text(),
                r.status,
                r.text()
            );
        }
    }
    // The real names, as only the engine knows them.
    let pa = prefix_of(engine, "alpha-only");
    let pb = prefix_of(engine, "bravo-only");
    assert_ne!(pa, pb);
    let (script_a, script_b) = (
        query_script("alpha", "bravo", &pb),
        query_script("bravo", "alpha", &pa),
    );
    let first = sides[0].answers.len();
    for (sa, sb) in script_a.iter().zip(&script_b) {
        let (alone_a, alone_b) = (sa.alone(), sb.alone());
        for (side, s) in sides.iter_mut().zip([sa, sb, &alone_a, &alone_b]) {
            side.run(s);
        }
    }
    let scripts = [
        ("alpha", "bravo", &pa, &pb, &setup_a, &script_a),
        ("bravo", "alpha", &pb, &pa, &setup_b, &script_b),
    ];
    for (i, (me, o, own, other, setup, script)) in scripts.into_iter().enumerate() {
        let steps: Vec<&Step> = setup.iter().chain(script.iter()).collect();
        let (mt, alone) = (&sides[i].answers, &sides[i + 2].answers);
        assert_eq!(mt.len(), steps.len());
        let mut differ = Vec::new();
        for ((s, r), solo) in steps.iter().zip(mt).zip(alone) {
            assert_isolated(me, o, own, other, s, r);
            let (got, want) = (normalize(r), normalize(solo));
            if got != want {
                differ.push(format!("{}\n{}", s.text(), difference(&got, &want)));
            }
        }
        assert!(
            differ.is_empty(),
            "{me} (multitenant) and a cluster alone answer {} request(s) differently:\n{}",
            differ.len(),
            differ.join("\n")
        );
        assert!(mt.len() > first);
    }
    check_answers_and_engine(&edge, &sides[0].answers[first..], &script_a, &pa, &pb);
    check_engine_holds_only_namespaced(engine, &pa, &pb, solo_a.addr);
}

/// Spot checks of the answers themselves (the comparison alone would accept an engine
/// that answered both the same wrong way).
fn check_answers_and_engine(
    edge: &Edge,
    answers: &[Response],
    script: &[Step],
    pa: &str,
    pb: &str,
) {
    let find = |method: &str, target: &str| -> &Response {
        let i = script
            .iter()
            .rposition(|s| s.method == method && s.target == target)
            .unwrap_or_else(|| panic!("no step {method} {target}"));
        &answers[i]
    };
    // spec 4: `GET /_search` finds the tenant's documents only, all of them (3 in
    // `alpha-only`, 5 in `books`).
    let all = find("GET", "/_search?q=shared&size=100").json();
    assert_eq!(all["hits"]["total"]["value"], 8, "{all}");
    // spec 7: a missing index is 404 index_not_found_exception naming the tenant's name.
    let missing = find("GET", "/bravo-only/_search");
    let (kind, _) = es_error(missing, 404);
    assert_eq!(kind, "index_not_found_exception");
    let v = missing.json();
    assert_eq!(v["error"]["resource.id"], "bravo-only");
    assert_eq!(v["error"]["index"], "bravo-only");
    let lost = find("POST", "/notlisted/doc/1");
    let (kind, reason) = es_error(lost, 404);
    assert_eq!(kind, "index_not_found_exception");
    // The tenant's name only: the prefix is stripped from the reason too.
    assert!(
        reason.starts_with("no such index [notlisted]")
            && reason.ends_with("create it first with PUT /notlisted"),
        "{reason}"
    );
    assert_eq!(lost.json()["error"]["index"], "notlisted");
    // spec 2.3: the listing shows the tenant's indices under its names, auto-created too.
    let listing = find("GET", "/_cat/indices?format=json").json();
    let names: Vec<&str> = listing
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["index"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha-only", "books"], "{listing}");
    let after = find("GET", "/_cat/indices?v").text();
    let rows: Vec<&str> = after
        .lines()
        .map(|l| l.split_whitespace().nth(2).unwrap())
        .collect();
    assert_eq!(
        rows,
        [
            "index",
            "alpha-only",
            "books",
            "events-alpha",
            "logstash-2024.05.01"
        ],
        "{after}"
    );
    assert_eq!(find("GET", "/events*,logstash*/_count").json()["count"], 3);
    // The other tenant's document that alpha's bulk tried to delete is still there.
    let bravo = edge.tenant("bravo");
    let r = edge.send(&bravo.req("GET", "/books/doc/1"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("bravosecret1"));
    let _ = (pa, pb);
}

/// Upstream, every index of the shared engine carries one of the two prefixes, and each
/// tenant's names are exactly those of the cluster that ran its script alone.
fn check_engine_holds_only_namespaced(
    engine: std::net::SocketAddr,
    pa: &str,
    pb: &str,
    solo: std::net::SocketAddr,
) {
    let real = engine_indices(engine);
    let mut alpha: Vec<String> = Vec::new();
    for i in &real {
        if let Some(n) = i.name.strip_prefix(pa) {
            alpha.push(n.to_string());
        } else {
            assert!(
                i.name.starts_with(pb),
                "an index outside both namespaces: {}",
                i.name
            );
        }
    }
    let alone: Vec<String> = engine_indices(solo).into_iter().map(|i| i.name).collect();
    assert_eq!(alpha, alone);
    assert!(!alpha.iter().any(|n| n.contains("notlisted")));
    let r = direct(engine, "GET", &format!("/{pa}notlisted"), None);
    assert_eq!(
        r.status, 404,
        "nothing created upstream for a non-whitelisted name"
    );
}
