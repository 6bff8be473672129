//! Two-tenant property tests: two multitenant clusters share one (fake, in-memory)
//! Elasticsearch that resolves expressions, stores documents and echoes names the way the
//! real one does. Random operations of both tenants go through classification and the
//! tenancy layer, in random chunk sizes. Properties (issue 5):
//! - every index the upstream resolves or writes for tenant A starts with A's prefix;
//! - nothing A gets back contains B's prefix, B's documents, or a name only B uses
//!   (unless A itself sent that name in the request: an echo of its own input).

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use super::*;
use crate::errors::{EdgeError, ErrorBody};
use crate::policy::mode::{decide, Mode};
use crate::proto::Method;
use crate::request::classify::{classify_request, ClusterClass};
use crate::request::path::NormPath;

/// The shared upstream: index name -> documents (id, source).
#[derive(Default)]
struct Upstream {
    indices: BTreeMap<String, Vec<(String, Value)>>,
    /// Every index name the last request resolved or wrote.
    touched: Vec<String>,
}

fn glob(pat: &str, name: &str) -> bool {
    match pat.split_once('*') {
        None => pat == name,
        Some((head, rest)) => {
            let Some(tail) = name.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len()).any(|i| tail.is_char_boundary(i) && glob(rest, &tail[i..]))
        }
    }
}

fn not_found(name: &str) -> (u16, Vec<u8>) {
    (404, ErrorBody::index_not_found(name).to_bytes())
}

impl Upstream {
    /// Resolves an expression as Elasticsearch does (wildcards, `_all`, exclusions).
    fn resolve(&mut self, expr: &str) -> Result<Vec<String>, String> {
        let mut out: Vec<String> = Vec::new();
        let parts: Vec<&str> = expr.split(',').filter(|s| !s.is_empty()).collect();
        if parts.is_empty() || parts == ["_all"] {
            out = self.indices.keys().cloned().collect(); // a leak if it ever happens
        }
        for part in parts {
            if let Some(ex) = part.strip_prefix('-') {
                out.retain(|n| !glob(ex, n));
            } else if part.contains('*') {
                for n in self.indices.keys().filter(|n| glob(part, n)) {
                    if !out.contains(n) {
                        out.push(n.clone());
                    }
                }
            } else if self.indices.contains_key(part) {
                out.push(part.to_string());
            } else {
                return Err(part.to_string());
            }
        }
        self.touched.extend(out.iter().cloned());
        Ok(out)
    }

    fn handle(
        &mut self,
        method: Method,
        target: &[u8],
        body: &[u8],
    ) -> (u16, &'static str, Vec<u8>) {
        self.touched.clear();
        let t = std::str::from_utf8(target).unwrap();
        let (path, query) = t.split_once('?').unwrap_or((t, ""));
        let p = NormPath::strict(path.as_bytes()).unwrap();
        let segs: Vec<String> = p
            .segments()
            .map(|s| String::from_utf8(s.to_vec()).unwrap())
            .collect();
        let seg: Vec<&str> = segs.iter().map(String::as_str).collect();
        let json_ct = "application/json";
        let (status, ct, out) = match (method, seg.as_slice()) {
            (Method::Put, [name]) => {
                self.touched.push(name.to_string());
                self.indices.entry(name.to_string()).or_default();
                (
                    200,
                    json_ct,
                    serde_json::to_vec(&json!({"acknowledged":true,"index":name})).unwrap(),
                )
            }
            // forms without an index would search everything: they must never arrive
            (_, ["_search"]) => {
                let names = self.resolve("").unwrap();
                (200, json_ct, self.search(&names))
            }
            (_, ["_cat", "indices"]) => {
                let names = self.resolve("").unwrap();
                self.cat(&names, query)
            }
            (_, [expr, "_search"]) => match self.resolve(expr) {
                Ok(names) => (200, json_ct, self.search(&names)),
                Err(n) => with_ct(not_found(&n), json_ct),
            },
            (_, [expr, "_bulk"]) => (200, json_ct, self.bulk(Some(expr), body)),
            (_, ["_bulk"]) => (200, json_ct, self.bulk(None, body)),
            (_, [expr, "_msearch"]) => (200, json_ct, self.msearch(expr, body)),
            (_, ["_mget"]) => (200, json_ct, self.mget(body)),
            (_, ["_cat", "indices", expr]) => match self.resolve(expr) {
                Ok(names) => self.cat(&names, query),
                Err(n) => with_ct(not_found(&n), json_ct),
            },
            (_, [expr, "_mapping"]) => match self.resolve(expr) {
                Ok(names) => {
                    let m: serde_json::Map<String, Value> = names
                        .iter()
                        .map(|n| {
                            (
                                n.clone(),
                                json!({"mappings":{"properties":{"f":{"type":"text"}}}}),
                            )
                        })
                        .collect();
                    (200, json_ct, serde_json::to_vec(&m).unwrap())
                }
                Err(n) => with_ct(not_found(&n), json_ct),
            },
            _ => panic!("fake upstream got an unexpected request {method:?} {t}"),
        };
        (status, ct, out)
    }

    fn search(&self, names: &[String]) -> Vec<u8> {
        let hits: Vec<Value> = names
            .iter()
            .flat_map(|n| {
                self.indices[n]
                    .iter()
                    .map(move |(id, src)| json!({"_index": n, "_id": id, "_source": src}))
            })
            .collect();
        serde_json::to_vec(&json!({"hits":{"total":hits.len(),"hits":hits}})).unwrap()
    }

    fn bulk(&mut self, default: Option<&str>, body: &[u8]) -> Vec<u8> {
        let mut items = Vec::new();
        let mut lines = body
            .split(|&b| b == b'\n')
            .filter(|l| !l.trim_ascii().is_empty());
        while let Some(action) = lines.next() {
            let a: Value = serde_json::from_slice(action).unwrap();
            let (kind, meta) = a.as_object().unwrap().iter().next().unwrap();
            let index = meta
                .get("_index")
                .and_then(Value::as_str)
                .or(default)
                .unwrap()
                .to_string();
            self.touched.push(index.clone());
            let source: Value = if kind == "delete" {
                Value::Null
            } else {
                serde_json::from_slice(lines.next().unwrap()).unwrap()
            };
            let item = match self.indices.get_mut(&index) {
                Some(docs) => {
                    docs.push((format!("{}", docs.len()), source));
                    json!({"_index": index, "status": 201})
                }
                None => {
                    json!({"_index": index, "status": 404, "error": ErrorBody::index_not_found(&index).to_value()["error"]})
                }
            };
            items.push(json!({ kind.clone(): item }));
        }
        serde_json::to_vec(&json!({"errors": false, "items": items})).unwrap()
    }

    fn msearch(&mut self, default: &str, body: &[u8]) -> Vec<u8> {
        let mut responses = Vec::new();
        let mut lines = body.split(|&b| b == b'\n');
        while let (Some(h), Some(_)) = (lines.next(), lines.next()) {
            let h: Value = if h.is_empty() {
                json!({})
            } else {
                serde_json::from_slice(h).unwrap()
            };
            let expr = match h.get("index") {
                None => default.to_string(),
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect::<Vec<_>>()
                    .join(","),
                Some(v) => panic!("the edge let a non-string index through: {v}"),
            };
            let r = match self.resolve(&expr) {
                Ok(names) => serde_json::from_slice(&self.search(&names)).unwrap(),
                Err(n) => ErrorBody::index_not_found(&n).to_value(),
            };
            responses.push(r);
        }
        serde_json::to_vec(&json!({ "responses": responses })).unwrap()
    }

    fn mget(&mut self, body: &[u8]) -> Vec<u8> {
        let v: Value = serde_json::from_slice(body).unwrap();
        let mut docs = Vec::new();
        for d in v["docs"].as_array().unwrap() {
            let index = d["_index"].as_str().unwrap().to_string();
            self.touched.push(index.clone());
            let found = self
                .indices
                .get(&index)
                .and_then(|ds| ds.iter().find(|(id, _)| d["_id"] == **id));
            docs.push(match found {
                Some((id, src)) => {
                    json!({"_index": index, "_id": id, "found": true, "_source": src})
                }
                None => json!({"_index": index, "_id": d["_id"], "found": false}),
            });
        }
        serde_json::to_vec(&json!({ "docs": docs })).unwrap()
    }

    fn cat(&self, names: &[String], query: &str) -> (u16, &'static str, Vec<u8>) {
        if query.contains("format=json") {
            let rows: Vec<Value> = names.iter().map(|n| json!({"health":"green","index":n,"docs.count":self.indices[n].len().to_string()})).collect();
            return (200, "application/json", serde_json::to_vec(&rows).unwrap());
        }
        let w = names.iter().map(String::len).max().unwrap_or(0).max(5);
        let mut s = String::new();
        if query.contains('v') {
            s.push_str(&format!("health {:<w$} docs.count\n", "index"));
        }
        for n in names {
            s.push_str(&format!("green  {n:<w$} {}\n", self.indices[n].len()));
        }
        (200, "text/plain; charset=UTF-8", s.into_bytes())
    }
}

fn with_ct((s, b): (u16, Vec<u8>), ct: &'static str) -> (u16, &'static str, Vec<u8>) {
    (s, ct, b)
}

/// One tenant's side of the edge: classify, decide, rewrite, forward, un-rewrite.
struct Tenant {
    prefix: Prefix,
}

fn chunks<'a>(rng: &mut StdRng, b: &'a [u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let n = rng
            .random_range(1..=b.len() - i)
            .min(rng.random_range(1..40));
        out.push(&b[i..i + n]);
        i += n;
    }
    out
}

impl Tenant {
    fn request(
        &self,
        up: &mut Upstream,
        rng: &mut StdRng,
        method: Method,
        target: &str,
        body: &[u8],
    ) -> (u16, Vec<u8>) {
        match self.try_request(up, rng, method, target, body) {
            Ok(r) => r,
            Err(e) => (e.status(), e.body().to_bytes()),
        }
    }

    fn try_request(
        &self,
        up: &mut Upstream,
        rng: &mut StdRng,
        method: Method,
        target: &str,
        body: &[u8],
    ) -> Result<(u16, Vec<u8>), EdgeError> {
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p, Some(q.as_bytes())),
            None => (target, None),
        };
        let req = classify_request(method, path.as_bytes(), ClusterClass::Multitenant)?;
        decide(Mode::Normal, &req.class)?;
        let mut up_target = Vec::new();
        let t = crate::tenancy::Tenant {
            prefix: &self.prefix,
            ids: None,
            now_ms: 0,
        };
        let mut plan = plan_request(&t, &req, query, &mut up_target)?;
        let mut up_body = Vec::new();
        match plan.body_rewriter(self.prefix, 1000) {
            Some(mut rw) => {
                for c in chunks(rng, body) {
                    rw.feed(c, &mut up_body)?;
                }
                rw.finish(&mut up_body)?;
            }
            None if plan.body.is_json()
                || plan.body == crate::request::classify::BodyKind::None =>
            {
                let facts = rewrite_json_body(&t, plan.body, body, &mut up_body)?;
                plan.apply_body_facts(facts, &self.prefix, &mut up_target, false)?;
            }
            None => up_body.extend_from_slice(body),
        }
        let (status, ct, resp) = up.handle(method, &up_target, &up_body);
        for n in &up.touched {
            assert!(
                n.starts_with(self.prefix.as_str()),
                "upstream touched {n} for {target}"
            );
        }
        let mut rw = plan.response_rewriter(self.prefix, status, Some(ct.as_bytes()), None);
        let mut out = Vec::new();
        for c in chunks(rng, &resp) {
            rw.feed(c, &mut out);
        }
        rw.finish(&mut out);
        Ok((status, out))
    }
}

const SHARED: &[&str] = &["books", "logs-1", "logs-2"];
const A_ONLY: &[&str] = &["alpha-private", "alpha-logs"];
const B_ONLY: &[&str] = &["beta-secret", "beta-logs", "zeta"];
const B_DATA: &str = "BETA-CONFIDENTIAL";

fn pick<'a>(rng: &mut StdRng, pools: &[&'a [&'a str]]) -> &'a str {
    let all: Vec<&str> = pools.iter().flat_map(|p| p.iter().copied()).collect();
    all[rng.random_range(0..all.len())]
}

fn expr(rng: &mut StdRng) -> String {
    let atoms = [
        "*",
        "_all",
        "beta*",
        "*-logs",
        "logs-*",
        "-books",
        "*,-beta-secret",
        "zeta,books",
    ];
    let n = rng.random_range(1..=3);
    (0..n)
        .map(|_| {
            if rng.random_bool(0.5) {
                atoms[rng.random_range(0..atoms.len())].to_string()
            } else {
                pick(rng, &[SHARED, A_ONLY, B_ONLY]).to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// One random operation: (method, target, body).
fn op(rng: &mut StdRng, own: &[&'static str], marker: &str) -> (Method, String, Vec<u8>) {
    let any = |rng: &mut StdRng| pick(rng, &[SHARED, A_ONLY, B_ONLY]).to_string();
    match rng.random_range(0..9) {
        0 => (
            Method::Put,
            format!("/{}", pick(rng, &[SHARED, own])),
            Vec::new(),
        ),
        1 => {
            let mut b = String::new();
            for _ in 0..rng.random_range(1..4) {
                b.push_str(&format!(
                    "{{\"index\":{{\"_index\":\"{}\"}}}}\n{{\"text\":\"{marker}\"}}\n",
                    pick(rng, &[SHARED, own])
                ));
            }
            (Method::Post, "/_bulk".into(), b.into_bytes())
        }
        2 => (Method::Get, format!("/{}/_search", expr(rng)), Vec::new()),
        3 => (Method::Get, "/_search".into(), Vec::new()),
        4 => {
            let headers = [
                "{}".to_string(),
                "{\"index\":[]}".into(),
                "{\"index\":\"\"}".into(),
                format!("{{\"index\":\"{}\"}}", expr(rng)),
                format!("{{\"index\":[\"{}\",\"*\"]}}", any(rng)),
            ];
            let h = &headers[rng.random_range(0..headers.len())];
            (
                Method::Post,
                "/_msearch".into(),
                format!("{h}\n{{}}\n").into_bytes(),
            )
        }
        5 => (
            Method::Post,
            "/_mget".into(),
            format!(
                "{{\"docs\":[{{\"_index\":\"{}\",\"_id\":\"0\"}}]}}",
                any(rng)
            )
            .into_bytes(),
        ),
        6 => {
            let q = ["", "?v", "?format=json", "?v=true&format=json"][rng.random_range(0..4)];
            let path = if rng.random_bool(0.5) {
                "/_cat/indices".to_string()
            } else {
                format!("/_cat/indices/{}", expr(rng))
            };
            (Method::Get, format!("{path}{q}"), Vec::new())
        }
        7 => (Method::Get, format!("/{}/_mapping", expr(rng)), Vec::new()),
        _ => (Method::Get, "/_mapping".into(), Vec::new()),
    }
}

// issue 5: neither tenant ever sees a byte of the other's names or data
#[test]
fn two_tenants_never_see_each_other() {
    let key = TenancyKey::from_bytes([42; 32]);
    let a = Tenant {
        prefix: Prefix::derive(&key, "cluster-a"),
    };
    let b = Tenant {
        prefix: Prefix::derive(&key, "cluster-b"),
    };
    for seed in 0..40u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut up = Upstream::default();
        // both create the same names, plus their own, and index data
        for (t, own, marker) in [(&a, A_ONLY, "ALPHA-DATA"), (&b, B_ONLY, B_DATA)] {
            for n in SHARED.iter().chain(own) {
                t.request(&mut up, &mut rng, Method::Put, &format!("/{n}"), b"");
                let bulk = format!(
                    "{{\"index\":{{\"_index\":\"{n}\"}}}}\n{{\"text\":\"{marker} in {n}\"}}\n"
                );
                assert_eq!(
                    t.request(&mut up, &mut rng, Method::Post, "/_bulk", bulk.as_bytes())
                        .0,
                    200
                );
            }
        }
        for _ in 0..60 {
            let (m, target, body) = op(&mut rng, A_ONLY, "ALPHA-DATA");
            let (_, out) = a.request(&mut up, &mut rng, m, &target, &body);
            let out = String::from_utf8_lossy(&out).into_owned();
            let sent = format!("{target}\n{}", String::from_utf8_lossy(&body));
            assert!(!out.contains(b.prefix.as_str()), "{target}: {out}");
            assert!(
                !out.contains(a.prefix.as_str()),
                "own prefix shown: {target}: {out}"
            );
            assert!(!out.contains(B_DATA), "{target}: {out}");
            for n in B_ONLY {
                assert!(
                    !out.contains(n) || sent.contains(n) || sent.contains(&n[..4]),
                    "{n} in {target}: {out}"
                );
            }
            // B keeps working alongside, with the same names
            let (m, target, body) = op(&mut rng, B_ONLY, B_DATA);
            let (_, out) = b.request(&mut up, &mut rng, m, &target, &body);
            let out = String::from_utf8_lossy(&out);
            assert!(
                !out.contains(a.prefix.as_str()) && !out.contains("ALPHA-DATA"),
                "{target}: {out}"
            );
        }
    }
}

// Each tenant sees its own data under the names it used, as if alone.
#[test]
fn each_tenant_sees_its_own_names() {
    let key = TenancyKey::from_bytes([1; 32]);
    let a = Tenant {
        prefix: Prefix::derive(&key, "a"),
    };
    let b = Tenant {
        prefix: Prefix::derive(&key, "b"),
    };
    let mut rng = StdRng::seed_from_u64(7);
    let mut up = Upstream::default();
    for (t, data) in [(&a, "from-a"), (&b, "from-b")] {
        t.request(&mut up, &mut rng, Method::Put, "/books", b"");
        let bulk = format!("{{\"index\":{{\"_index\":\"books\"}}}}\n{{\"text\":\"{data}\"}}\n");
        t.request(&mut up, &mut rng, Method::Post, "/_bulk", bulk.as_bytes());
    }
    let (s, out) = a.request(&mut up, &mut rng, Method::Get, "/_search", b"");
    assert_eq!(s, 200);
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["hits"]["total"], 1);
    assert_eq!(v["hits"]["hits"][0]["_index"], "books");
    assert_eq!(v["hits"]["hits"][0]["_source"]["text"], "from-a");
    let (_, out) = b.request(&mut up, &mut rng, Method::Get, "/_cat/indices?v", b"");
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "health index docs.count\ngreen  books 1\n"
    );
    let (s, out) = a.request(&mut up, &mut rng, Method::Get, "/nope/_search", b"");
    assert_eq!(s, 404);
    assert_eq!(out, ErrorBody::index_not_found("nope").to_bytes());
}

/// A single-tenant `_reindex` body: a remote source refused, the rest read strictly and
/// written again.
#[test]
fn single_tenant_reindex_refuses_a_remote_source() {
    assert!(single_tenant_reindex(br#"{"source":{"remote":{}}}"#).is_err());
    assert_eq!(
        single_tenant_reindex(br#"{"source" : {"index":"a"}}"#).unwrap(),
        br#"{"source":{"index":"a"}}"#
    );
}
