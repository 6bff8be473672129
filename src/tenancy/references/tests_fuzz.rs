//! Inputs found by `fuzz/fuzz_targets/tenancy.rs` (see fuzz/README.md), each kept as a test
//! of the pure rewriting.

use serde_json::{json, Value};

use super::super::prefix::Prefix;
use super::super::rewrite_json_body;
use super::*;
use crate::request::classify::BodyKind;

const RAW: &str = "$serde_json::private::RawValue";

fn rewrite(kind: BodyKind, body: &str) -> Result<Vec<u8>, EdgeError> {
    let p = Prefix::from_bytes(b"abcdefghijklmnopqrst-").unwrap();
    let t = Tenant {
        prefix: &p,
        ids: None,
        now_ms: 0,
    };
    let mut out = Vec::new();
    rewrite_json_body(&t, kind, body.as_bytes(), &mut out).map(|_| out)
}

/// 2026-11-24, after 179 s: a sort on a field named like serde_json's raw-value token. The
/// edge passes field names as data, and rightly; the target's serde_json, built with the
/// `raw_value` feature the engine used to switch on, read such an object as JSON text
/// instead, as the embedded engine then did (`engine::api::write_tests::
/// reads_serde_json_magic_keys_as_plain_keys`). Every reader now sees one key.
#[test]
fn fuzz_finding_serde_json_magic_key_is_a_plain_field_name() {
    let body = format!(r#"{{"sort": {{ "{RAW}":{{}}}} }}"#);
    let out = rewrite(BodyKind::Search, &body).expect("a sort on any field name passes");
    assert_eq!(out, format!(r#"{{"sort":{{"{RAW}":{{}}}}}}"#).into_bytes());
    let v: Value = serde_json::from_slice(&out).expect("plain JSON");
    assert_eq!(v["sort"][RAW], json!({}));
    // with a string, the shape the token's reader would have parsed as JSON text
    let body = json!({"sort": {RAW: "{\"_index\":{\"order\":\"asc\"}}"}}).to_string();
    let v: Value = serde_json::from_slice(&rewrite(BodyKind::Search, &body).unwrap()).unwrap();
    assert_eq!(v["sort"][RAW], "{\"_index\":{\"order\":\"asc\"}}");
    // where the edge reads structure, the key is an unknown one
    let body = json!({"docs": [{RAW: "{\"_index\":\"other\",\"_id\":\"1\"}"}]}).to_string();
    let e = rewrite(BodyKind::Mget, &body).expect_err("an unknown key of a doc");
    assert_eq!(e.body().status, 400, "{:?}", e.body());
    let q = json!({"query": {RAW: "{\"match_all\":{}}"}}).to_string();
    let e = rewrite(BodyKind::Search, &q).expect_err("an unknown query");
    assert_eq!(e.body().status, 400, "{:?}", e.body());
}
