//! The parameter readers (`params`, issue 25): time values, byte sizes, booleans, a
//! search's `from`/`size`, comma lists; and the paths by which the edge and the embedded
//! engine act on them. Input: a selector byte, then a value as query text (`&` and `;`,
//! which would end the parameter, are dropped).
//!
//! Properties: nothing panics (no reader, no conversion, no `human()` rendering, no
//! capping by a deadline); the edge and the engine read the value alike:
//! - time: the engine's keep-alive reader (`ScrollParams::parse`) accepts exactly what the
//!   edge accepts (`parse_time` and `check_keep_alive`), with the same duration; the edge's
//!   ledger reads that duration; the engine's settings reader gives the same milliseconds;
//!   a multitenant `GET /books/_search?scroll=<value>` is forwarded with the canonical form,
//!   which reads back as the same value; `timeout=<value>` is made canonical (or refused)
//!   the same way, and capping it never makes it longer than the cap;
//! - byte sizes: the canonical form reads back as the same number of bytes;
//! - booleans: the engine's `Params::bool` equals `parse_bool`;
//! - `size`: the engine's search request takes the size `parse_window` reads, and refuses
//!   what it refuses;
//! - comma lists: joining the parts gives the value back (less trailing commas); the
//!   engine's index resolution of the list never panics.
//! A value that is not UTF-8 once decoded is refused by the multitenant edge and read with
//! U+FFFD by the engine (as Elasticsearch): only the decoded text is compared then.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use searchgate::params::{self, MAX_KEEP_ALIVE};
use searchgate::percent::{self, Plus};
use searchgate::proto::Method;
use searchgate::request::classify::{classify_request, ClusterClass};
use searchgate::request::waits;
use searchgate::tenancy::{contexts, plan_request, Prefix, Tenant};
use searchgate_engine::api::params::Params;
use searchgate_engine::resolve::{resolve_expression, IndexEntry, Options};
use searchgate_engine::search::{ScrollParams, SearchRequest};
use searchgate_engine::store::settings::parse_time_ms;

const P: &str = "abcdefghijklmnopqrst-";

/// The `scroll` the multitenant edge forwards for `GET /books/_search?scroll=<raw>`.
fn edge_scroll(raw: &[u8]) -> Option<String> {
    let prefix = Prefix::from_bytes(P.as_bytes()).unwrap();
    let t = Tenant { prefix: &prefix, ids: None, now_ms: 0 };
    let req = classify_request(Method::Get, b"/books/_search", ClusterClass::Multitenant).ok()?;
    let query = [b"scroll=", raw].concat();
    let mut fwd = Vec::new();
    plan_request(&t, &req, Some(&query), &mut fwd).ok()?;
    let q = fwd.splitn(2, |&b| b == b'?').nth(1).unwrap_or_default();
    let pairs = percent::decode_query(q).expect("the edge forwards a query that decodes");
    pairs.into_iter().find(|(k, _)| k == "scroll").map(|(_, v)| v)
}

fn time(raw: &[u8], v: &str, utf8: bool) {
    let read = params::parse_time(v, "scroll");
    let kept = read
        .clone()
        .and_then(|t| params::check_keep_alive(&t, &MAX_KEEP_ALIVE).map(|()| t));
    let engine = ScrollParams::parse(v);
    assert_eq!(kept.is_ok(), engine.is_ok(), "{v:?}: {kept:?} vs {engine:?}");
    if let (Ok(t), Ok(e)) = (&kept, &engine) {
        assert_eq!(t.to_duration(), e.keep_alive, "{v:?}");
    }
    assert_eq!(contexts::parse_time(v), read.as_ref().ok().map(|t| t.to_duration()));
    assert_eq!(
        parse_time_ms("k", v).ok(),
        params::parse_time(v, "k").ok().map(|t| t.millis())
    );
    if let Ok(t) = &read {
        let c = t.to_string();
        let again = params::parse_time(&c, "scroll").expect("the canonical form reads");
        assert_eq!((again.nanos(), again.to_string()), (t.nanos(), c.clone()), "{v:?}");
        let _ = (t.human(), t.millis(), t.longer_than(&again));
    }
    let forwarded = edge_scroll(raw);
    match (&kept, &forwarded) {
        (Ok(t), Some(f)) => assert_eq!(f, &t.to_string(), "{v:?}"),
        (Ok(_), None) => assert!(!utf8, "{v:?}: read, yet refused by the edge"),
        (Err(_), Some(f)) => panic!("{v:?}: refused, yet forwarded as {f:?}"),
        (Err(_), None) => {}
    }
    let mut target = [b"/_cluster/health?timeout=", raw].concat();
    let canonical = waits::canonical(&mut target);
    if utf8 {
        assert_eq!(canonical.is_ok(), read.is_ok(), "{v:?}");
    }
    if canonical.is_ok() {
        let left = Duration::from_millis(u64::from(raw.len() as u16) * 997);
        waits::cap(&mut target, left);
        let q = target.splitn(2, |&b| b == b'?').nth(1).unwrap_or_default();
        let (_, capped) = percent::decode_query(q).unwrap().pop().unwrap();
        let capped = params::parse_time(&capped, "timeout").unwrap();
        assert!(capped.duration >= 0 && capped.to_duration() <= left, "{v:?} -> {capped}");
    }
}

fn bytes(v: &str) {
    if let Ok(b) = params::parse_bytes(v, "x") {
        let again = params::parse_bytes(&b.to_string(), "x").expect("the canonical form reads");
        assert_eq!(again.bytes(), b.bytes(), "{v:?}");
    }
}

fn boolean(raw: &[u8], v: &str) {
    let engine = Params::parse(Some(&[b"x=", raw].concat())).unwrap();
    let got = engine.bool("x").map_err(|_| ());
    assert_eq!(got, params::parse_bool(v).map_err(|_| ()), "{v:?}");
}

fn window(v: &str) {
    let mut req = SearchRequest::default();
    let engine = req.apply_params(&|k| (k == "size").then(|| v.to_string()));
    match params::parse_window(v, "size") {
        Ok(Some(n)) => assert_eq!((engine.is_ok(), req.size), (true, n as usize), "{v:?}"),
        Ok(None) => assert_eq!((engine.is_ok(), req.size), (true, 10), "{v:?}"),
        Err(_) => assert!(engine.is_err(), "{v:?}"),
    }
}

fn list(v: &str) {
    let parts = params::split_commas(v);
    assert_eq!(params::join_commas(&parts), v.trim_end_matches(','), "{v:?}");
    let entry = |name: &str, aliases: serde_json::Value| IndexEntry {
        name: name.into(),
        open: true,
        hidden: false,
        aliases: aliases.as_object().cloned().unwrap_or_default(),
    };
    let universe = [
        entry("books", serde_json::json!({"shelf": {}})),
        entry("logs-1", serde_json::json!({})),
    ];
    let _ = resolve_expression(v, &universe, Options::default());
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let raw: Vec<u8> = rest.iter().copied().filter(|b| !b"&;".contains(b)).collect();
    let Ok(bytes_) = percent::decode(&raw, Plus::Space) else {
        // a malformed escape: both readers refuse the query
        assert!(Params::parse(Some(&[b"x=", &raw[..]].concat())).is_err());
        assert!(edge_scroll(&raw).is_none());
        return;
    };
    let utf8 = std::str::from_utf8(&bytes_).is_ok();
    let v = String::from_utf8_lossy(&bytes_).into_owned();
    match sel % 5 {
        0 => time(&raw, &v, utf8),
        1 => bytes(&v),
        2 => boolean(&raw, &v),
        3 => window(&v),
        _ => list(&v),
    }
});
