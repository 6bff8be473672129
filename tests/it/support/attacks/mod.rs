//! The two-tenant attack suite of issue 10, shared by the run on the embedded engine
//! (`tests/it/tenancy_attacks.rs`, both listeners) and the run on an Elasticsearch-API
//! upstream installed from PyPI (`tests/it/tenancy_pypi.rs`).
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

use crate::support::e2e::answers::{all_bytes, contains};
use crate::support::e2e::{direct, prefix_of, ClusterSpec, Config, Edge, Req, Response, Tenant};

pub mod bulk;
mod names;
mod queries;
pub mod review;

pub use names::*;
pub use queries::*;

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
    prefix_oracles(w);
    parameter_tricks(w);
    expressions(w);
    references_in_bodies(w);
    aliases(w);
    templates(w);
    sealed_ids(w);
}
