//! Table tests of request planning (issue 5: paths, query, headers, auto-creation).

use super::*;
use crate::proto::Method::{self, *};
use crate::request::classify::{classify_request, ClusterClass, ResponseKind};
use crate::tenancy::ids::{IdFields, IdKind, IdSealer};
use crate::tenancy::TenancyKey;
use serde_json::Value;

const P: &[u8; 21] = b"abcdefghijklmnopqrst-";

fn prefix() -> Prefix {
    Prefix::from_bytes(P).unwrap()
}

fn plan(method: Method, target: &str) -> Result<(String, RequestPlan), EdgeError> {
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q.as_bytes())),
        None => (target, None),
    };
    let req = classify_request(method, path.as_bytes(), ClusterClass::Multitenant)
        .map_err(EdgeError::from)?;
    crate::policy::mode::decide(crate::policy::mode::Mode::Normal, &req.class)?;
    let mut out = Vec::new();
    let p = prefix();
    let s = sealer();
    let t = Tenant {
        prefix: &p,
        ids: Some((&s, "acme")),
        now_ms: 0,
    };
    let plan = plan_request(&t, &req, query, &mut out)?;
    let s = String::from_utf8(out)
        .unwrap()
        .replace(std::str::from_utf8(P).unwrap(), "P:");
    Ok((s, plan))
}

fn sealer() -> IdSealer {
    IdSealer::new(&TenancyKey::from_bytes([4; 32]))
}

fn target(method: Method, t: &str) -> String {
    plan(method, t)
        .unwrap_or_else(|e| panic!("{method:?} {t}: {e:?}"))
        .0
}

// issue 5: index expressions in paths: single names, lists, wildcards, _all, exclusions, none
#[test]
fn paths() {
    let table: &[(Method, &str, &str)] = &[
        (Get, "/", "/"),
        (Head, "/", "/"),
        (Get, "/_search", "/P:*/_search"),
        (Post, "/_search?q=x&size=1", "/P:*/_search?q=x&size=1"),
        (Get, "/books/_search", "/P:books/_search"),
        (Get, "/books,films/_search", "/P:books,P:films/_search"),
        (Get, "/books%2Cfilms/_search", "/P:books,P:films/_search"),
        (Get, "/*/_search", "/P:*/_search"),
        (Get, "/%2A/_search", "/P:*/_search"),
        (Get, "/_all/_search", "/P:*/_search"),
        (Get, "/_all,-old/_search", "/P:*,-P:old/_search"),
        (
            Get,
            "/logs-*,-logs-old/_count",
            "/P:logs-*,-P:logs-old/_count",
        ),
        (Get, "/books/doc/_search", "/P:books/doc/_search"),
        (Get, "//books//_search/", "/P:books/_search"),
        (Get, "/x/../books/./_search", "/P:books/_search"),
        (
            Get,
            "/%3Clogs-%7Bnow%2Fd%7D%3E/_search",
            "/%3CP:logs-%7Bnow%2Fd%7D%3E/_search",
        ),
        (Post, "/_count", "/P:*/_count"),
        (Post, "/_msearch", "/P:*/_msearch"),
        (Post, "/books/_msearch", "/P:books/_msearch"),
        (Post, "/_mget", "/_mget"),
        (Post, "/books/_mget", "/P:books/_mget"),
        (Post, "/_bulk", "/_bulk"),
        (
            Post,
            "/books/_bulk?refresh=true",
            "/P:books/_bulk?refresh=true",
        ),
        (Get, "/_cat/indices", "/_cat/indices/P:*"),
        (Get, "/_cat/indices?v", "/_cat/indices/P:*?v=true"),
        (
            Get,
            "/_cat/indices/logs*?format=json",
            "/_cat/indices/P:logs*?format=json",
        ),
        (Get, "/_cat/count", "/_cat/count/P:*"),
        (Get, "/_cat/aliases", "/_cat/aliases/P:*"),
        (Get, "/_cat/aliases/al", "/_cat/aliases/P:al"),
        (Get, "/_cat/shards/books", "/_cat/shards/P:books"),
        (Get, "/_cat", "/_cat"),
        (Get, "/_mapping", "/P:*/_mapping"),
        (Get, "/_mapping/field/title", "/P:*/_mapping/field/title"),
        (Get, "/books/_mapping", "/P:books/_mapping"),
        (Put, "/books/_mapping", "/P:books/_mapping"),
        (Get, "/books/_mapping/doc", "/P:books/_mapping/doc"),
        (Get, "/_settings", "/P:*/_settings"),
        (Put, "/books/_settings", "/P:books/_settings"),
        (Get, "/_stats", "/P:*/_stats"),
        (Get, "/_stats/docs", "/P:*/_stats/docs"),
        (
            Get,
            "/books/_stats/docs,store",
            "/P:books/_stats/docs,store",
        ),
        (Post, "/_refresh", "/P:*/_refresh"),
        (Post, "/books/_refresh", "/P:books/_refresh"),
        (Post, "/_flush/synced", "/P:*/_flush/synced"),
        (Post, "/_cache/clear", "/P:*/_cache/clear"),
        (Get, "/_cluster/health", "/_cluster/health/P:*"),
        (
            Get,
            "/_cluster/health/books?wait_for_status=yellow",
            "/_cluster/health/P:books?wait_for_status=yellow",
        ),
        (Get, "/_alias", "/P:*/_alias"),
        (Get, "/_alias/al", "/_alias/P:al"),
        (Get, "/_aliases", "/P:*/_aliases"),
        (Put, "/books/_alias/al", "/P:books/_alias/P:al"),
        (Delete, "/books/_alias/al", "/P:books/_alias/P:al"),
        (Put, "/books", "/P:books"),
        (Delete, "/books", "/P:books"),
        (Head, "/books", "/P:books"),
        (Get, "/books,films", "/P:books,P:films"),
        (Put, "/books/_doc/1", "/P:books/_doc/1"),
        (Put, "/books/_doc/a%2Fb", "/P:books/_doc/a%2Fb"),
        (Put, "/books/_doc/books", "/P:books/_doc/books"),
        (Post, "/books/_doc", "/P:books/_doc"),
        (Post, "/books/doc/1", "/P:books/doc/1"),
        (Post, "/books/doc", "/P:books/doc"),
        (Post, "/books/doc/1/_update", "/P:books/doc/1/_update"),
        (Post, "/books/_update/1", "/P:books/_update/1"),
        (Get, "/books/_source/1", "/P:books/_source/1"),
        (Get, "/books/_explain/1", "/P:books/_explain/1"),
        (Post, "/books/_close", "/P:books/_close"),
        (Post, "/_analyze", "/_analyze"),
        (Post, "/books/_analyze", "/P:books/_analyze"),
        (Post, "/_validate/query", "/P:*/_validate/query"),
        (Post, "/_field_caps?fields=a", "/P:*/_field_caps?fields=a"),
        // scroll, point in time, jobs, aliases, templates
        (
            Post,
            "/books/_search?scroll=1m",
            "/P:books/_search?scroll=1m",
        ),
        (Post, "/_search/scroll", "/_search/scroll"),
        (Delete, "/_search/scroll", "/_search/scroll"),
        (
            Post,
            "/books/_pit?keep_alive=1m",
            "/P:books/_pit?keep_alive=1m",
        ),
        (Delete, "/_pit", "/_pit"),
        (
            Post,
            "/books/_delete_by_query?conflicts=proceed",
            "/P:books/_delete_by_query?conflicts=proceed",
        ),
        (Post, "/b*/_update_by_query", "/P:b*/_update_by_query"),
        (Post, "/_reindex?refresh=true", "/_reindex?refresh=true"),
        (Post, "/_aliases", "/_aliases"),
        (Put, "/_alias/al", "/_alias/P:al"),
        (Put, "/books/_alias", "/P:books/_alias"),
        (Get, "/_template", "/_template/P:*"),
        (Put, "/_template/t1", "/_template/P:t1"),
        (Get, "/_template/t*", "/_template/P:t*"),
        (Put, "/_index_template/t", "/_index_template/P:t"),
        (Get, "/_component_template", "/_component_template/P:*"),
        (Get, "/_resolve/index/b*", "/_resolve/index/P:b*"),
    ];
    for &(m, t, want) in table {
        assert_eq!(target(m, t), want, "{m:?} {t}");
    }
}

#[test]
fn body_and_response_kinds() {
    let k = |m, t| plan(m, t).unwrap().1;
    assert_eq!(k(Post, "/_bulk").body, BodyKind::Bulk);
    assert_eq!(k(Post, "/x/_msearch").body, BodyKind::Msearch);
    assert_eq!(k(Post, "/_mget").body, BodyKind::Mget);
    assert_eq!(k(Put, "/x").body, BodyKind::CreateIndex);
    assert_eq!(k(Post, "/_search").body, BodyKind::Search);
    assert_eq!(k(Get, "/x/_count").body, BodyKind::QueryOnly);
    assert_eq!(k(Put, "/x/_doc/1").body, BodyKind::Document);
    assert_eq!(k(Get, "/x/_doc/1").body, BodyKind::Document);
    assert_eq!(k(Get, "/x").body, BodyKind::None);
    assert_eq!(k(Put, "/x/_settings").body, BodyKind::Settings);
    assert_eq!(k(Get, "/x/_settings").body, BodyKind::None);
    assert_eq!(k(Put, "/x/_mapping").body, BodyKind::Mapping);
    assert_eq!(k(Post, "/_aliases").body, BodyKind::Aliases);
    assert_eq!(k(Put, "/x/_alias/a").body, BodyKind::PutAlias);
    assert_eq!(k(Put, "/_template/t").body, BodyKind::Template);
    assert_eq!(k(Put, "/_index_template/t").body, BodyKind::IndexTemplate);
    assert_eq!(
        k(Put, "/_component_template/t").body,
        BodyKind::ComponentTemplate
    );
    assert_eq!(k(Post, "/_reindex").body, BodyKind::Reindex);
    assert_eq!(k(Post, "/x/_update_by_query").body, BodyKind::UpdateByQuery);
    assert_eq!(k(Post, "/x/_delete_by_query").body, BodyKind::DeleteByQuery);
    assert_eq!(k(Post, "/_search/scroll").body, BodyKind::Scroll);
    assert_eq!(k(Delete, "/_search/scroll").body, BodyKind::ClearScroll);
    assert_eq!(k(Delete, "/_pit").body, BodyKind::ClosePit);
    // issue 30: OpenSearch's point in time, the same contexts under its paths
    let os = k(Post, "/x/_search/point_in_time?keep_alive=1m");
    assert_eq!(
        (os.response.kind, os.response.ids, os.contexts),
        (
            ResponseKind::PitOpen,
            Some(IdFields::PitOpen),
            ContextUse::Open(IdKind::Pit)
        )
    );
    assert_eq!(
        target(Post, "/x/_search/point_in_time?keep_alive=1m"),
        "/P:x/_search/point_in_time?keep_alive=1m"
    );
    let close = k(Delete, "/_search/point_in_time");
    assert_eq!(
        (close.body, close.response.kind, close.contexts),
        (
            BodyKind::ClosePitIds,
            ResponseKind::PitList,
            ContextUse::Close
        )
    );
    let list = k(Get, "/_search/point_in_time/_all");
    assert_eq!(
        (list.response.kind, list.response.ids, list.contexts),
        (
            ResponseKind::PitList,
            Some(IdFields::PitList),
            ContextUse::None
        )
    );
    // ids are sealed only where a scroll or a point in time can be opened or used
    assert_eq!(k(Post, "/_search").response.ids, None);
    assert_eq!(
        k(Post, "/_search?scroll=1m").response.ids,
        Some(IdFields::Search)
    );
    assert_eq!(
        k(Post, "/_search/scroll").response.ids,
        Some(IdFields::Search)
    );
    assert_eq!(
        k(Post, "/x/_pit?keep_alive=1m").response.ids,
        Some(IdFields::PitOpen)
    );
    assert_eq!(
        k(Get, "/_cat/indices?v").response.kind,
        ResponseKind::CatRows
    );
    assert!(k(Get, "/_cat/indices?v").response.verbose);
    assert!(k(Get, "/_cat/indices?v=true&h=index").response.verbose);
    assert!(!k(Get, "/_cat/indices?v=false").response.verbose);
    assert!(k(Get, "/_cat/indices?help").response.help);
    assert_eq!(k(Get, "/_cat/count").response.kind, ResponseKind::Strip);
    assert!(k(Post, "/_bulk").body_rewriter(prefix(), 10).is_some());
    assert!(k(Post, "/_search").body_rewriter(prefix(), 10).is_none());
}

#[test]
fn refusals() {
    let table: &[(Method, std::borrow::Cow<str>, u16)] = &[
        (Get, "/_foo,books/_search".into(), 501),
        (Get, "/books,_foo/_search".into(), 400),
        (Get, "/+books/_search".into(), 400),
        (Get, "/remote:books/_search".into(), 400),
        (Get, "/books/_search?source={}".into(), 400),
        (Get, "/books/_search?%73ource={}".into(), 400),
        (
            Get,
            "/_msearch?source_content_type=application/json".into(),
            400,
        ),
        (Get, "/_cat/indices?format=cbor".into(), 400),
        (Get, "/_cat/indices?format=yaml".into(), 400),
        (Get, "/_cat/indices?format=smile".into(), 400),
        (Get, "/_cat/indices?%66ormat=yaml".into(), 400),
        (Get, "/_search?x=%zz".into(), 400),
        (Get, "/_cluster/state".into(), 501),
        // closing every point in time cannot be confined to the tenant
        (Delete, "/_search/point_in_time/_all".into(), 501),
        (Get, "/_nodes".into(), 501),
        (Delete, "/_all".into(), 501),
        (Delete, "/b*".into(), 501),
        (Delete, "/_search/scroll/_all".into(), 501),
        (Get, "/_search/scroll/notatoken".into(), 404),
        (Post, "/_reindex?wait_for_completion=false".into(), 400),
        (Post, "/b/_update_by_query/x".into(), 501),
        (Post, "/_update_by_query/t1/_rethrottle".into(), 501),
        (Post, "/_tasks/t1/_cancel".into(), 501),
        (Post, "/_index_template/_simulate_index/x".into(), 501),
        (Get, "/books/_search?foo=1".into(), 400),
        (Get, "/books/_search?size=1&size=2".into(), 400),
        (Get, "/books/_analyze?index=other".into(), 400),
        (Post, "/books/_doc/1?pipeline=p".into(), 400),
        (Get, format!("/{}", "a".repeat(240)).into(), 400),
    ];
    for (m, t, status) in table {
        let (m, t, status) = (*m, t.as_ref(), *status);
        let e = plan(m, t).unwrap_err();
        assert_eq!(e.status(), status, "{m:?} {t}: {e:?}");
    }
    // a route without tenancy rules is refused even if the caller skipped classification
    let req = classify_request(Get, b"/_cluster/state", ClusterClass::SingleTenant).unwrap();
    let p = prefix();
    let t = Tenant {
        prefix: &p,
        ids: None,
        now_ms: 0,
    };
    assert_eq!(
        plan_request(&t, &req, None, &mut Vec::new())
            .unwrap_err()
            .status(),
        501
    );
}

#[test]
fn sealed_scroll_ids_in_paths_are_opened() {
    let tok = sealer().seal("acme", IdKind::Scroll, b"RAW1");
    let tok2 = sealer().seal("acme", IdKind::Scroll, b"RAW2");
    assert_eq!(
        target(Get, &format!("/_search/scroll/{tok}")),
        "/_search/scroll/RAW1"
    );
    assert_eq!(
        target(Delete, &format!("/_search/scroll/{tok},{tok2}")),
        "/_search/scroll/RAW1,RAW2"
    );
    let other = sealer().seal("other", IdKind::Scroll, b"RAW1");
    assert_eq!(
        plan(Get, &format!("/_search/scroll/{other}"))
            .unwrap_err()
            .status(),
        404
    );
}

// spec 1.5 / 2.2: whitelisted auto-creation on the names the tenant sees
#[test]
fn auto_creation() {
    let t = |m: Method, p: &str| {
        let req = classify_request(m, p.as_bytes(), ClusterClass::Multitenant).unwrap();
        auto_create_target(m, &req).map(|n| String::from_utf8(n.to_vec()).unwrap())
    };
    assert_eq!(
        t(Put, "/logstash-2024.01.01/_doc/1").as_deref(),
        Some("logstash-2024.01.01")
    );
    assert_eq!(t(Post, "/events/_doc").as_deref(), Some("events"));
    assert_eq!(t(Post, "/requests/doc/1").as_deref(), Some("requests"));
    assert_eq!(t(Post, "/.kibana/_update/1").as_deref(), Some(".kibana"));
    assert_eq!(
        t(Post, "/kibana-int/_create/1").as_deref(),
        Some("kibana-int")
    );
    assert_eq!(t(Post, "/logstash-x/_bulk").as_deref(), Some("logstash-x"));
    assert_eq!(t(Post, "/%6Cogstash-x/_doc").as_deref(), Some("logstash-x"));
    assert_eq!(t(Put, "/books/_doc/1"), None);
    assert_eq!(t(Get, "/logstash/_doc/1"), None);
    assert_eq!(t(Post, "/logstash*/_doc"), None);
    assert_eq!(t(Post, "/logstash-1,events/_doc"), None);
    assert_eq!(t(Post, "/logstash/_search"), None);
    assert_eq!(t(Put, "/logstash"), None);
    let mut out = Vec::new();
    write_index_path(&prefix(), b"logstash-x", &mut out).unwrap();
    assert_eq!(out, b"/abcdefghijklmnopqrst-logstash-x");
    assert!(write_index_path(&prefix(), b"_x", &mut Vec::new()).is_err());
}

#[test]
fn create_index_aliases() {
    let p = prefix();
    assert_eq!(rewrite_create_index_body(&p, b"").unwrap(), None);
    assert_eq!(
        rewrite_create_index_body(&p, br#"{ "settings" : {} }"#).unwrap(),
        Some(br#"{"settings":{}}"#.to_vec())
    );
    let out = rewrite_create_index_body(&p, br#"{"aliases":{"al":{},"b2":{"filter":{"term":{"x":1}}}},"settings":{"number_of_shards":1}}"#)
        .unwrap()
        .unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let keys: Vec<&String> = v["aliases"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["abcdefghijklmnopqrst-al", "abcdefghijklmnopqrst-b2"]);
    assert_eq!(v["settings"]["number_of_shards"], 1);
    assert_eq!(
        v["aliases"]["abcdefghijklmnopqrst-b2"]["filter"]["term"]["x"],
        1
    );
    for bad in [
        &br#"{"aliases":{"*":{}}}"#[..],
        br#"{"aliases":{"_x":{}}}"#,
        br#"{"aliases":{"a,b":{}}}"#,
        b"{aliases",
    ] {
        assert_eq!(
            rewrite_create_index_body(&p, bad).unwrap_err().status(),
            400
        );
    }
}

#[test]
fn metering_target() {
    let mut out = Vec::new();
    write_metering_target(Some(&prefix()), &mut out);
    assert!(out.starts_with(b"/_cat/indices/abcdefghijklmnopqrst-*?format=json&bytes=b"));
    let mut out = Vec::new();
    write_metering_target(None, &mut out);
    assert!(out.starts_with(b"/_cat/indices?format=json&bytes=b"));
}

/// attacks-10 #1 and #8 (issue 10 §1-2: one reading of every path): Elasticsearch's
/// `PathTrie` backs up from an explicit child (`_doc`, `_create`, `_settings`, `_mapping`,
/// ...) to the `{type}` wildcard, so these paths are typed searches, multi-searches, bulk
/// writes and gets upstream, not the documents or settings the rows name. A segment
/// starting with `_` in a value position is refused (400), whatever the method.
#[test]
fn typed_route_fallbacks_are_refused() {
    let second = ["_doc", "_create", "_settings", "_mapping", "_mappings"];
    let endpoints = [
        "_msearch",
        "_bulk",
        "_search",
        "_count",
        "_mget",
        "_mtermvectors",
        "_termvectors",
        "_delete_by_query",
        "_update_by_query",
        "_mapping",
        "_validate",
        "_rollup_search",
        "_graph",
        "_anything",
    ];
    for s in second {
        for e in endpoints {
            for m in [Post, Put, Get, Delete, Head] {
                let t = format!("/books/{s}/{e}");
                match plan(m, &t) {
                    Err(err) => assert!(
                        err.status() == 400 || err.status() == 501,
                        "{m:?} {t}: {err:?}"
                    ),
                    Ok((up, _)) => panic!("{m:?} {t} forwarded as {up}"),
                }
            }
        }
    }
    // the exact requests of the review, and the four-segment forms through `Rest`/`Any`
    let table: &[(Method, &str)] = &[
        (Post, "/books/_doc/_msearch"),
        (Post, "/books/_create/_msearch"),
        (Post, "/books/_doc/_bulk"),
        (Post, "/books/_doc/_search?scroll=1m"),
        (Put, "/books/_doc/_mapping?include_type_name=true"),
        (Post, "/books/_doc/_mtermvectors"),
        (Post, "/books/_settings/_search"),
        (Post, "/books/_settings/_mget"),
        (Put, "/books/_settings/_count"),
        (Post, "/books/_mapping/_search"),
        (Post, "/books/_mappings/_delete_by_query"),
        (Post, "/books/_settings/x/_update"),
        (Post, "/books/_settings/x/_explain"),
        (Put, "/books/_settings/a/b/_update_by_query"),
        (Post, "/books/_update/_search"),
        (Get, "/books/_source/_search"),
        (Get, "/books/_explain/_search"),
        (Post, "/books/_termvectors/_search"),
        (Post, "/books/doc/_bulk/_search"),
        (Put, "/books/doc/_x"),
        (Post, "/books/doc/_search/x"),
        (Post, "/_settings/_search"),
        (Put, "/_mapping/_doc"),
        (Get, "/_stats/_all"),
        (Post, "/books/%5Fdoc/%5Fmsearch"),
        (Post, "/books/_doc/%5Fmsearch"),
    ];
    for &(m, t) in table {
        let err = plan(m, t).expect_err(t);
        assert!(matches!(err.status(), 400 | 501), "{m:?} {t}: {err:?}");
    }
    let err = plan(Post, "/books/_doc/_msearch").unwrap_err();
    assert_eq!(err.status(), 400);
    assert!(format!("{err:?}").contains("[_msearch]"), "{err:?}");
}

/// attacks-10 #1: the typed forms Elasticsearch 7.10 accepts, with a type that does not
/// start with `_`, are read like their untyped forms (or refused where those are).
#[test]
fn typed_forms_are_read_like_untyped_ones() {
    let table: &[(Method, &str, Option<BodyKind>)] = &[
        (Post, "/books/doc/_search", Some(BodyKind::Search)),
        (Post, "/books/doc/_msearch", Some(BodyKind::Msearch)),
        (Post, "/books/doc/_bulk", Some(BodyKind::Bulk)),
        (Post, "/books/doc/_count", Some(BodyKind::QueryOnly)),
        (Post, "/books/doc/_mget", Some(BodyKind::Mget)),
        (Post, "/books/doc/_termvectors", Some(BodyKind::TermVectors)),
        (
            Post,
            "/books/doc/1/_termvectors",
            Some(BodyKind::TermVectors),
        ),
        (Post, "/books/doc/1/_explain", Some(BodyKind::QueryOnly)),
        (Post, "/books/doc/1/_update", Some(BodyKind::Update)),
        (Put, "/books/doc/1/_create", Some(BodyKind::Document)),
        (Put, "/books/doc/1", Some(BodyKind::Document)),
        (
            Post,
            "/books/doc/_delete_by_query",
            Some(BodyKind::DeleteByQuery),
        ),
        (
            Post,
            "/books/doc/_update_by_query",
            Some(BodyKind::UpdateByQuery),
        ),
        (Put, "/books/doc/_mapping", Some(BodyKind::Mapping)),
        (
            Post,
            "/books/doc/_validate/query",
            Some(BodyKind::QueryOnly),
        ),
        (Get, "/books/doc/1/_source", Some(BodyKind::None)),
        (Post, "/books/doc/_mtermvectors", None),
    ];
    for &(m, t, want) in table {
        match (plan(m, t), want) {
            (Ok((_, p)), Some(b)) => assert_eq!(p.body, b, "{m:?} {t}"),
            (Err(e), None) => assert_eq!(e.status(), 501, "{m:?} {t}"),
            (got, _) => panic!("{m:?} {t}: {got:?}"),
        }
    }
    // field mappings may name metadata fields; document ids without '_' pass
    assert_eq!(
        target(Get, "/books/_mapping/field/_id,title"),
        "/P:books/_mapping/field/_id,title"
    );
    assert_eq!(
        target(Get, "/_mapping/field/_routing"),
        "/P:*/_mapping/field/_routing"
    );
    assert_eq!(target(Put, "/books/_doc/x_"), "/P:books/_doc/x_");
    assert_eq!(target(Get, "/books/_stats/docs"), "/P:books/_stats/docs");
}
