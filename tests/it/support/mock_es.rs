//! A small Elasticsearch stand-in for `load-site` tests, on 127.0.0.1:0 (plain or TLS), with
//! std::net threads. It answers what the loader uses (`GET /`, mapping, `PUT` index, `_bulk`,
//! `_refresh`, `_search` for prune), answers 413 above a byte limit and 429 at random from a
//! seeded generator, and records every request and every accepted action.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// How the mock behaves.
#[derive(Clone)]
pub struct MockConfig {
    /// `_bulk` bodies above this many bytes get 413.
    pub max_body: usize,
    /// Probability of a 429 for a request (seeded).
    pub p429: f64,
    /// Seed of the 429 generator.
    pub seed: u64,
    /// `version.number` of `GET /`.
    pub version: String,
    /// Expected `Authorization` header (401 otherwise).
    pub auth: Option<String>,
    /// Ids whose index action fails with 400 mapper_parsing_exception.
    pub reject_ids: HashSet<String>,
    /// Ids whose first index action is rejected per item with 429.
    pub item_429_once: HashSet<String>,
    /// A mapping answer for an index that already exists (name -> `mappings`).
    pub existing: Option<(String, Value)>,
    /// TLS server config.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Statuses for the first bulk requests, in order (then normal answers).
    pub first_bulk_statuses: Vec<u16>,
    /// `Retry-After` value sent with those statuses.
    pub scripted_retry_after: String,
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            max_body: usize::MAX,
            p429: 0.0,
            seed: 1,
            version: "7.10.2".into(),
            auth: None,
            reject_ids: HashSet::new(),
            item_429_once: HashSet::new(),
            existing: None,
            tls: None,
            first_bulk_statuses: Vec::new(),
            scripted_retry_after: "0".into(),
        }
    }
}

/// One request as received, with the status answered.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub status: u16,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the mock holds.
#[derive(Default)]
pub struct State {
    pub requests: Vec<Recorded>,
    /// index name -> `mappings` as created.
    pub indices: BTreeMap<String, Value>,
    /// `_id` -> stored source.
    pub docs: BTreeMap<String, Value>,
    /// `_id` -> number of accepted index actions.
    pub indexed: HashMap<String, u32>,
    /// `_id` -> number of accepted delete actions.
    pub deleted: HashMap<String, u32>,
    pub answered_413: u32,
    pub answered_429: u32,
    /// 413s sent before the body, after `Expect: 100-continue`.
    pub early_413: u32,
    /// `_bulk` requests received (with a complete body).
    pub bulk_calls: usize,
    item_429_done: HashSet<String>,
}

pub struct MockEs {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl MockEs {
    pub fn start(config: MockConfig) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let mut state = State::default();
        if let Some((name, mappings)) = &config.existing {
            state.indices.insert(name.clone(), mappings.clone());
        }
        let state = Arc::new(Mutex::new(state));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        let rng = Arc::new(Mutex::new(rand::rngs::StdRng::seed_from_u64(config.seed)));
        let accept = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if sp.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (st, cfg, rng) = (st.clone(), config.clone(), rng.clone());
                std::thread::spawn(move || serve_conn(conn, &cfg, &st, &rng));
            }
        });
        Self {
            addr,
            state,
            stop,
            accept: Some(accept),
        }
    }

    /// `http://user:pass@127.0.0.1:port` (or https).
    pub fn url(&self, userinfo: &str, https: bool) -> String {
        let scheme = if https { "https" } else { "http" };
        format!("{scheme}://{userinfo}@{}", self.addr)
    }

    pub fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }
}

impl Drop for MockEs {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

type Rng64 = Arc<Mutex<rand::rngs::StdRng>>;

fn serve_conn(conn: TcpStream, cfg: &MockConfig, state: &Mutex<State>, rng: &Rng64) {
    match &cfg.tls {
        Some(tls) => {
            let Ok(server) = rustls::ServerConnection::new(tls.clone()) else {
                return;
            };
            let stream = rustls::StreamOwned::new(server, conn);
            serve_stream(stream, cfg, state, rng);
        }
        None => serve_stream(conn, cfg, state, rng),
    }
}

fn serve_stream<S: Read + Write>(stream: S, cfg: &MockConfig, state: &Mutex<State>, rng: &Rng64) {
    let mut reader = BufReader::new(stream);
    loop {
        let Some((method, path, headers)) = read_head(&mut reader) else {
            return;
        };
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let len = header("content-length")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0);
        let expect = header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
        let chunked = header("transfer-encoding").is_some();
        let mut rec = Recorded {
            method,
            path,
            headers,
            body: Vec::new(),
            status: 0,
        };
        if chunked {
            // The loader always knows its body length; chunked bodies would be a regression.
            rec.status = 400;
            state.lock().unwrap().requests.push(rec);
            let (_, _, reply) = error(400, "chunked_body", "unexpected Transfer-Encoding");
            let _ = respond(reader.get_mut(), 400, "Connection: close\r\n", &reply);
            return;
        }
        if expect && len > cfg.max_body {
            // Refuse before the upload and drop the connection at once, as a strict proxy may.
            let (status, _, reply) = error(413, "request_entity_too_large", "body too large");
            rec.status = status;
            let mut st = state.lock().unwrap();
            (st.answered_413, st.early_413) = (st.answered_413 + 1, st.early_413 + 1);
            st.requests.push(rec);
            drop(st);
            let _ = respond(reader.get_mut(), status, "Connection: close\r\n", &reply);
            return;
        }
        if expect && respond_raw(reader.get_mut(), b"HTTP/1.1 100 Continue\r\n\r\n").is_err() {
            return;
        }
        rec.body = vec![0; len];
        if reader.read_exact(&mut rec.body).is_err() {
            return;
        }
        let (status, extra, reply) = answer(&rec, cfg, state, rng);
        rec.status = status;
        state.lock().unwrap().requests.push(rec);
        if respond(reader.get_mut(), status, &extra, &reply).is_err() {
            return;
        }
    }
}

fn respond_raw<W: Write>(w: &mut W, bytes: &[u8]) -> std::io::Result<()> {
    w.write_all(bytes)?;
    w.flush()
}

fn respond<W: Write>(w: &mut W, status: u16, extra: &str, reply: &Value) -> std::io::Result<()> {
    let text = serde_json::to_vec(reply).unwrap();
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}\r\n",
        text.len()
    );
    respond_raw(w, &[head.as_bytes(), &text].concat())
}

/// Method, path and headers of a request head.
type Head = (String, String, Vec<(String, String)>);

fn read_head<R: BufRead>(r: &mut R) -> Option<Head> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    Some((method, path, headers))
}

fn error(status: u16, ty: &str, reason: &str) -> (u16, String, Value) {
    let e = json!({"type": ty, "reason": reason});
    (
        status,
        String::new(),
        json!({"error": {"root_cause": [e.clone()], "type": ty, "reason": reason}, "status": status}),
    )
}

fn answer(
    req: &Recorded,
    cfg: &MockConfig,
    state: &Mutex<State>,
    rng: &Rng64,
) -> (u16, String, Value) {
    if let Some(want) = &cfg.auth {
        if req.header("authorization") != Some(want.as_str()) {
            return (
                401,
                String::new(),
                json!({"error": "Authorization Required", "status": 401}),
            );
        }
    }
    let path = req.path.split('?').next().unwrap_or("");
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    match (req.method.as_str(), segs.as_slice()) {
        ("GET", []) => (
            200,
            String::new(),
            json!({"name": "mock", "version": {"number": cfg.version}, "tagline": "You Know, for Search"}),
        ),
        ("POST", ["_bulk"]) => bulk(req, cfg, state, rng),
        ("GET", [index, "_mapping"]) => match state.lock().unwrap().indices.get(*index) {
            Some(m) => (200, String::new(), json!({ *index: {"mappings": m} })),
            None => error(404, "index_not_found_exception", "no such index"),
        },
        ("PUT", [index]) => {
            let mut st = state.lock().unwrap();
            if st.indices.contains_key(*index) {
                return error(
                    400,
                    "resource_already_exists_exception",
                    "index already exists",
                );
            }
            let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            st.indices
                .insert((*index).to_owned(), body["mappings"].clone());
            (
                200,
                String::new(),
                json!({"acknowledged": true, "index": index}),
            )
        }
        ("POST", [_, "_refresh"]) => (
            200,
            String::new(),
            json!({"_shards": {"total": 1, "successful": 1, "failed": 0}}),
        ),
        ("POST" | "GET", [_, "_search"]) => search(req, state),
        _ => error(404, "not_found", "no handler"),
    }
}

fn bulk(
    req: &Recorded,
    cfg: &MockConfig,
    state: &Mutex<State>,
    rng: &Rng64,
) -> (u16, String, Value) {
    let mut st = state.lock().unwrap();
    if req.body.len() > cfg.max_body {
        st.answered_413 += 1;
        return error(413, "request_entity_too_large", "body too large");
    }
    let n = st.bulk_calls;
    st.bulk_calls += 1;
    if let Some(&status) = cfg.first_bulk_statuses.get(n) {
        let (s, _, b) = error(status, "scripted", "scripted failure");
        return (
            s,
            format!("Retry-After: {}\r\n", cfg.scripted_retry_after),
            b,
        );
    }
    if cfg.p429 > 0.0 && rng.lock().unwrap().random_bool(cfg.p429) {
        st.answered_429 += 1;
        let extra = if st.answered_429 % 2 == 0 {
            "Retry-After: 0\r\n"
        } else {
            ""
        };
        let (s, _, b) = error(429, "too_many_requests", "slow down");
        return (s, extra.to_owned(), b);
    }
    if req.header("content-type") != Some("application/x-ndjson") || !req.body.ends_with(b"\n") {
        return error(
            400,
            "illegal_argument_exception",
            "bulk body must be NDJSON ending with a newline",
        );
    }
    let text = String::from_utf8(req.body.clone()).expect("utf-8 body");
    let mut lines = text.split('\n');
    let mut items = Vec::new();
    while let Some(action) = lines.next().filter(|l| !l.is_empty()) {
        let action: Value = serde_json::from_str(action).expect("action line is JSON");
        if let Some(meta) = action.get("index") {
            let source = serde_json::from_str(lines.next().expect("source line")).expect("JSON");
            items.push(json!({ "index": index_item(meta, source, cfg, &mut st) }));
        } else if let Some(meta) = action.get("delete") {
            let id = meta["_id"].as_str().unwrap().to_owned();
            let found = st.docs.remove(&id).is_some();
            *st.deleted.entry(id.clone()).or_default() += 1;
            items.push(json!({"delete": {"_id": id, "status": if found { 200 } else { 404 }}}));
        } else {
            panic!("unexpected action {action}");
        }
    }
    let status = |i: &Value| i.as_object().unwrap().values().next().unwrap()["status"].as_u64();
    let errors = items.iter().any(|i| status(i).unwrap() >= 300);
    (
        200,
        String::new(),
        json!({"took": 1, "errors": errors, "items": items}),
    )
}

/// The result of one index action: scripted failures, else stored.
fn index_item(meta: &Value, source: Value, cfg: &MockConfig, st: &mut State) -> Value {
    let id = meta["_id"].as_str().unwrap().to_owned();
    if cfg.reject_ids.contains(&id) {
        let cause = json!({"type": "number_format_exception", "reason": "bad number"});
        let error = json!({"type": "mapper_parsing_exception", "reason": "failed to parse field [weight]", "caused_by": cause});
        return json!({"_id": id, "status": 400, "error": error});
    }
    if cfg.item_429_once.contains(&id) && st.item_429_done.insert(id.clone()) {
        let error = json!({"type": "es_rejected_execution_exception", "reason": "queue full"});
        return json!({"_id": id, "status": 429, "error": error});
    }
    *st.indexed.entry(id.clone()).or_default() += 1;
    st.docs.insert(id.clone(), source);
    json!({"_id": id, "_type": meta["_type"], "_index": meta["_index"], "status": 201, "result": "created"})
}

/// Evaluates the prune query: bool.filter of exists/term/terms, must_not of ids.
fn search(req: &Recorded, state: &Mutex<State>) -> (u16, String, Value) {
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(json!({}));
    let size = body["size"].as_u64().unwrap_or(10) as usize;
    let q = &body["query"]["bool"];
    let st = state.lock().unwrap();
    let matches = |id: &str, doc: &Value| {
        let filters = q["filter"].as_array().cloned().unwrap_or_default();
        let ok = filters.iter().all(|f| {
            if let Some(e) = f.get("exists") {
                !doc[e["field"].as_str().unwrap()].is_null()
            } else if let Some(t) = f.get("term") {
                let (k, v) = t.as_object().unwrap().iter().next().unwrap();
                doc[k] == *v
            } else if let Some(t) = f.get("terms") {
                let (k, vs) = t.as_object().unwrap().iter().next().unwrap();
                vs.as_array().unwrap().contains(&doc[k])
            } else {
                panic!("unexpected filter {f}")
            }
        });
        let excluded = q["must_not"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .any(|m| {
                m["ids"]["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|v| v.as_str() == Some(id))
            });
        ok && !excluded
    };
    let all: Vec<Value> = st
        .docs
        .iter()
        .filter(|(id, d)| matches(id, d))
        .map(|(id, d)| json!({"_id": id, "_type": "doc", "_source": d}))
        .collect();
    let total = all.len();
    let hits: Vec<Value> = all.into_iter().take(size).collect();
    (
        200,
        String::new(),
        json!({"took": 1, "timed_out": false, "hits": {"total": total, "max_score": null, "hits": hits}}),
    )
}

/// A CA and a server certificate for 127.0.0.1 and localhost: (CA PEM, server config).
pub fn test_tls() -> (String, Arc<rustls::ServerConfig>) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)
        .unwrap();
    (ca.pem(), Arc::new(config))
}
