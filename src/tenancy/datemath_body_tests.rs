//! Date-math index names inside bodies on the multitenant class (issue 30): `_bulk` action
//! `_index`, `_aliases` actions' `index`/`alias`, a `PUT /<i>/_alias/<n>` body, `_reindex`
//! `source.index`/`dest.index` are resolved once, at the request's clock, by the one
//! resolver of paths (`request::datemath`), and forwarded as concrete prefixed names; what
//! it cannot read is refused 400. Alias routing options pass unchanged (they select shards
//! of the tenant's own index, never an index). Spec 2.2 (names), 4.1 (bulk bodies), 7.

use super::body::rewrite_json_body;
use super::ndjson::BulkRewriter;
use super::prefix::Prefix;
use super::Tenant;
use crate::errors::EdgeError;
use crate::request::classify::BodyKind;

const P: &str = "abcdefghijklmnopqrst-";
/// 2024-03-22T12:00:00Z.
const NOON: i64 = 1_711_108_800_000;
/// 2024-03-22T23:59:59.999Z and a millisecond later.
const BEFORE_MIDNIGHT: i64 = 1_711_151_999_999;
const AFTER_MIDNIGHT: i64 = 1_711_152_000_000;

fn prefix() -> Prefix {
    Prefix::from_bytes(P.as_bytes()).unwrap()
}

fn json_at(kind: BodyKind, body: &str, now_ms: i64) -> Result<String, EdgeError> {
    let p = prefix();
    let t = Tenant {
        prefix: &p,
        ids: None,
        now_ms,
    };
    let mut out = Vec::new();
    rewrite_json_body(&t, kind, body.as_bytes(), &mut out)?;
    Ok(String::from_utf8(out).unwrap().replace(P, "P:"))
}

/// The forwarded bulk body and the whitelisted names it asks the edge to create.
fn bulk_at(body: &str, now_ms: i64) -> Result<(String, Vec<String>), EdgeError> {
    let mut rw = BulkRewriter::new(prefix(), 100).at(now_ms);
    let mut out = Vec::new();
    rw.feed(body.as_bytes(), &mut out)?;
    rw.finish(&mut out)?;
    let created = rw
        .auto_create_candidates()
        .iter()
        .map(|c| String::from_utf8(c.clone()).unwrap())
        .collect();
    Ok((String::from_utf8(out).unwrap().replace(P, "P:"), created))
}

#[test]
fn bulk_index_names_are_resolved_at_the_requests_clock() {
    let body = "{\"index\":{\"_index\":\"<logstash-{now/d}>\",\"_id\":\"1\"}}\n{\"a\":1}\n\
                {\"delete\":{\"_index\":\"<logs-{now/M{yyyy.MM}}>\",\"_id\":\"2\"}}\n";
    let (out, created) = bulk_at(body, NOON).unwrap();
    assert_eq!(
        out,
        "{\"index\":{\"_index\":\"P:logstash-2024.03.22\",\"_id\":\"1\"}}\n{\"a\":1}\n\
         {\"delete\":{\"_index\":\"P:logs-2024.03\",\"_id\":\"2\"}}\n"
    );
    // the resolved name is what the edge auto-creates (a whitelisted concrete name)
    assert_eq!(created, vec!["logstash-2024.03.22"]);
    // across midnight the edge's clock decides, once; the upstream gets a concrete name
    let one = "{\"index\":{\"_index\":\"<logstash-{now/d}>\"}}\n{}\n";
    assert!(bulk_at(one, BEFORE_MIDNIGHT)
        .unwrap()
        .0
        .contains("P:logstash-2024.03.22\""));
    assert!(bulk_at(one, AFTER_MIDNIGHT)
        .unwrap()
        .0
        .contains("P:logstash-2024.03.23\""));
    // an expression the edge cannot read is refused, never forwarded to be read upstream
    for bad in [
        "{\"index\":{\"_index\":\"<logs-{now/d{'*'}}>\"}}\n{}\n",
        "{\"index\":{\"_index\":\"<logs-{now/d{yyyy|Europe/Paris}}>\"}}\n{}\n",
        "{\"index\":{\"_index\":\"<logs-{now/d>\"}}\n{}\n",
    ] {
        let e = bulk_at(bad, NOON).unwrap_err();
        assert_eq!(e.body().status, 400, "{bad}: {e:?}");
    }
}

#[test]
fn alias_actions_resolve_index_and_alias_names_and_pass_routing() {
    let out = json_at(
        BodyKind::Aliases,
        r#"{"actions":[{"add":{"index":"<logs-{now/d}>","alias":"<today-{now/d}>","routing":"1","search_routing":"1,2","index_routing":"1"}},{"remove":{"indices":["<logs-{now-1d/d}>"],"aliases":"<today-{now-1d/d}>"}}]}"#,
        NOON,
    )
    .unwrap();
    assert_eq!(
        out,
        r#"{"actions":[{"add":{"index":"P:logs-2024.03.22","alias":"P:today-2024.03.22","routing":"1","search_routing":"1,2","index_routing":"1"}},{"remove":{"indices":["P:logs-2024.03.21"],"aliases":"P:today-2024.03.21"}}]}"#
    );
    let out = json_at(
        BodyKind::PutAlias,
        r#"{"index":"<logs-{now/d}>","alias":"<cur-{now/M{yyyy.MM}}>","routing":"x"}"#,
        NOON,
    )
    .unwrap();
    assert_eq!(
        out,
        r#"{"index":"P:logs-2024.03.22","alias":"P:cur-2024.03","routing":"x"}"#
    );
    // a routing value naming another tenant's index is only a routing value: unchanged
    let other = "zyxwvutsrqponmlkjihg-secret";
    let out = json_at(
        BodyKind::Aliases,
        &format!(r#"{{"actions":[{{"add":{{"index":"a","alias":"b","routing":"{other}"}}}}]}}"#),
        NOON,
    )
    .unwrap();
    assert!(
        out.contains(&format!(
            r#""index":"P:a","alias":"P:b","routing":"{other}""#
        )),
        "{out}"
    );
    let e = json_at(
        BodyKind::Aliases,
        r#"{"actions":[{"add":{"index":"<a-{now/d{'*'}}>","alias":"b"}}]}"#,
        NOON,
    )
    .unwrap_err();
    assert_eq!(e.body().status, 400);
}

#[test]
fn reindex_source_and_dest_are_resolved_once() {
    let body =
        r#"{"source":{"index":"<logs-{now-1d/d}>"},"dest":{"index":"<archive-{now/M{yyyy.MM}}>"}}"#;
    assert_eq!(
        json_at(BodyKind::Reindex, body, AFTER_MIDNIGHT).unwrap(),
        r#"{"source":{"index":"P:logs-2024.03.22"},"dest":{"index":"P:archive-2024.03"}}"#
    );
    let list = r#"{"source":{"index":["<a-{now/d}>","b"]},"dest":{"index":"c"}}"#;
    assert_eq!(
        json_at(BodyKind::Reindex, list, NOON).unwrap(),
        r#"{"source":{"index":["P:a-2024.03.22","P:b"]},"dest":{"index":"P:c"}}"#
    );
}
