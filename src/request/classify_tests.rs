//! Table tests for `classify` and the blocked list (spec 1.4, 3, 7).

use super::*;
use crate::proto::Method::{self, *};
use ClusterClass::{Multitenant as Mt, SingleTenant as St};

fn class(method: Method, path: &str, cc: ClusterClass) -> Class {
    classify(method, path.as_bytes(), cc).unwrap_or_else(|e| panic!("{path}: {e:?}"))
}

/// Spellings of `path` that an upstream decodes and routes the same way.
fn same_route_variants(path: &str) -> Vec<String> {
    let mut v = vec![
        path.to_string(),
        format!("{path}/"),
        path.replace('/', "//"),
        format!("/.{path}"),
        format!("/x/..{path}"),
        format!("/a/b/../..{path}/."),
        path.replace('_', "%5F"),
        path.replace('_', "%5f"),
    ];
    // every byte but the separators percent-encoded
    let mut enc = String::new();
    for b in path.bytes() {
        if b == b'/' {
            enc.push('/');
        } else {
            enc.push_str(&format!("%{b:02X}"));
        }
    }
    v.push(enc);
    v
}

/// Extra spellings that only the loose view equates: double encoding, `%2F`, case.
fn loose_variants(path: &str) -> Vec<String> {
    let mut v = same_route_variants(path);
    v.push(path.replace('_', "%255F"));
    v.push(path.replace('_', "%25255F"));
    v.push(path.to_ascii_uppercase());
    v.push(path.to_ascii_uppercase().replace('_', "%5f"));
    if let Some(rest) = path.strip_prefix('/') {
        v.push(format!("/{}", rest.replace('/', "%2F")));
        v.push(format!("/{}", rest.replace('/', "%252F")));
        v.push(format!("/x%2F..%2F{rest}"));
    }
    v
}

// spec 1.4: the blocked list, every entry in every spelling, for both classes
#[test]
fn blocked_endpoints_in_every_spelling() {
    let table: &[(Method, &str, &str)] = &[
        (Post, "/_shutdown", "_shutdown"),
        (Post, "/_cluster/nodes/_shutdown", "_shutdown"),
        (Post, "/_cluster/nodes/n1/_shutdown", "_shutdown"),
        (Post, "/_nodes/_shutdown", "_shutdown"),
        (Post, "/_nodes/n1,n2/_shutdown", "_shutdown"),
        (Post, "/_nodes/n1/_restart", "_restart"),
        (Post, "/_cluster/nodes/_restart", "_restart"),
        (Get, "/_nodes/hot_threads", "_nodes/hot_threads"),
        (Get, "/_nodes/n1/hot_threads", "_nodes/hot_threads"),
        (Get, "/_nodes/hotthreads", "_nodes/hot_threads"),
        (Get, "/_nodes/n1/_hot_threads", "_nodes/hot_threads"),
        (Get, "/_cluster/nodes/hot_threads", "_nodes/hot_threads"),
        (Get, "/_cluster/nodes/n1/hotthreads", "_nodes/hot_threads"),
        (
            Post,
            "/_nodes/reload_secure_settings",
            "_nodes/reload_secure_settings",
        ),
        (Put, "/_cluster/settings", "_cluster/settings"),
        (Post, "/_cluster/settings", "_cluster/settings"),
        (Delete, "/_cluster/settings", "_cluster/settings"),
        (Post, "/_cluster/reroute", "_cluster/reroute"),
        (Get, "/_cluster/reroute", "_cluster/reroute"),
        (
            Post,
            "/_cluster/voting_config_exclusions",
            "_cluster/voting_config_exclusions",
        ),
        (Get, "/_snapshot", "_snapshot"),
        (Put, "/_snapshot/repo", "_snapshot"),
        (Post, "/_snapshot/repo/snap/_restore", "_snapshot"),
        (Delete, "/_snapshot/repo/snap", "_snapshot"),
        (Put, "/_scripts/s1", "_scripts"),
        (Get, "/_scripts/s1", "_scripts"),
        (Post, "/_scripts/painless/_execute", "_scripts"),
        (Post, "/_script/s1", "_scripts"),
        (Post, "/_render/template", "_render"),
        (Get, "/_search/template", "_search/template"),
        (Post, "/idx/_search/template", "_search/template"),
        (Post, "/_msearch/template", "_msearch/template"),
        (Post, "/idx/_msearch/template", "_msearch/template"),
        (Put, "/idx/_warmer/w1", "_warmer"),
        (Get, "/_warmer", "_warmer"),
        (Get, "/idx/_warmers", "_warmer"),
        (Delete, "/", "DELETE /"),
        (Delete, "/_all", "DELETE /_all"),
        (Delete, "/*", "DELETE /*"),
        (Delete, "/logs-*", "DELETE /logs-*"),
        (Delete, "/a,*", "DELETE /a,*"),
        (Delete, "/a,_all", "DELETE /a,_all"),
        (Delete, "/*,-keep", "DELETE /*,-keep"),
        (Delete, "/l*s", "DELETE /l*s"),
    ];
    for &(method, path, name) in table {
        for cc in [St, Mt] {
            for v in loose_variants(path) {
                let got = class(method, &v, cc);
                let Class::NotImplemented(n) = &got else {
                    panic!("{method:?} {v} ({cc:?}) slipped through as {got:?}")
                };
                if !name.starts_with("DELETE") {
                    assert_eq!(n, name, "{method:?} {v}");
                } else {
                    assert!(n.eq_ignore_ascii_case(name) || v != path, "{v}: {n}");
                }
            }
        }
    }
}

// spec 1.4, issue 10: tasks and rethrottling (shared upstream state) are blocked on
// multitenant clusters only; the by-query jobs and `_reindex` run within the tenant
#[test]
fn multitenant_only_blocks() {
    let table: &[(Method, &str, &str, Class)] = &[
        (Get, "/_tasks", "_tasks", Class::Read),
        (Post, "/_tasks/n1:1/_cancel", "_tasks", Class::Update),
        (
            Post,
            "/_update_by_query/t1/_rethrottle",
            "_rethrottle",
            Class::Update,
        ),
        (
            Post,
            "/_reindex/t1/_rethrottle",
            "_rethrottle",
            Class::Update,
        ),
    ];
    for (method, path, name, single) in table {
        for v in loose_variants(path) {
            assert_eq!(
                class(*method, &v, Mt),
                Class::NotImplemented(Cow::Borrowed(*name)),
                "{v}"
            );
        }
        for v in same_route_variants(path) {
            assert_eq!(&class(*method, &v, St), single, "{v}");
        }
    }
}

// spec 3: reads, even when sent with POST, in every spelling the upstream routes the same
#[test]
fn reads_with_any_method() {
    let both: &[&str] = &[
        "/_search",
        "/idx/_search",
        "/idx/t1/_search",
        "/_all/_search",
        "/a,b*/_search",
        "/_count",
        "/idx/_count",
        "/_msearch",
        "/idx/_msearch",
        "/_mget",
        "/idx/_mget",
        "/idx/t1/_mget",
        "/_field_caps",
        "/idx/_field_caps",
        "/_validate/query",
        "/idx/_validate/query",
        "/idx/_explain/1",
        "/idx/t1/1/_explain",
        "/_analyze",
        "/idx/_termvectors/1",
        "/_cat/indices",
        "/_cat/indices/logs*",
        "/_cat/count/idx",
    ];
    for path in both {
        for method in [Get, Head, Post, Put] {
            for cc in [St, Mt] {
                for v in same_route_variants(path) {
                    assert_eq!(class(method, &v, cc), Class::Read, "{method:?} {v} {cc:?}");
                }
            }
        }
    }
    // scroll and point in time: reads on both classes (issue 10), but clearing every
    // scroll at once, PIT verbs the table does not know, and multi-termvectors
    for (method, path) in [
        (Post, "/_search/scroll"),
        (Get, "/_search/scroll/abc"),
        (Delete, "/_search/scroll"),
        (Delete, "/_search/scroll/abc"),
        (Post, "/idx/_pit"),
        (Delete, "/_pit"),
    ] {
        for cc in [St, Mt] {
            assert_eq!(
                class(method, path, cc),
                Class::Read,
                "{method:?} {path} {cc:?}"
            );
        }
    }
    let single_only: &[(Method, &str)] = &[
        (Delete, "/_search/scroll/_all"),
        (Post, "/_search/scroll/_all"),
        (Delete, "/idx/_pit"),
        (Post, "/_pit"),
        (Post, "/_mtermvectors"),
        (Delete, "/_mtermvectors"),
    ];
    for &(method, path) in single_only {
        assert_eq!(class(method, path, St), Class::Read, "{method:?} {path}");
        assert!(
            matches!(class(method, path, Mt), Class::NotImplemented(_)),
            "{method:?} {path}"
        );
    }
}

// spec 3: GET and HEAD of anything (not blocked) are reads on single-tenant clusters
#[test]
fn get_and_head_are_reads() {
    let paths = [
        "/",
        "/idx",
        "/idx/_doc/1",
        "/idx/_mapping",
        "/idx/_settings",
        "/_cluster/settings",
        "/_cluster/state",
        "/_nodes/stats",
        "/_whatever/new/endpoint",
        "/idx/_refresh",
    ];
    for p in paths {
        for m in [Get, Head] {
            assert_eq!(class(m, p, St), Class::Read, "{m:?} {p}");
        }
    }
}

// spec 3: everything that can change data is an update; unknown endpoints too
#[test]
fn updates() {
    let table: &[(Method, &str)] = &[
        (Put, "/idx"),
        (Post, "/idx"),
        (Post, "/idx/_doc"),
        (Put, "/idx/_doc/1"),
        (Post, "/idx/_doc/1"),
        (Delete, "/idx/_doc/1"),
        (Put, "/idx/_create/1"),
        (Post, "/idx/_update/1"),
        (Post, "/idx/t1/1/_update"),
        (Put, "/idx/t1/1"),
        (Post, "/idx/t1"),
        (Post, "/_bulk"),
        (Post, "/idx/_bulk"),
        (Put, "/idx/t1/_bulk"),
        (Put, "/idx/_mapping"),
        (Post, "/idx/_mapping"),
        (Put, "/idx/_settings"),
        (Put, "/_settings"),
        (Post, "/idx/_refresh"),
        (Post, "/_flush"),
        (Post, "/idx/_forcemerge"),
        (Post, "/idx/_close"),
        (Post, "/idx/_open"),
        (Put, "/idx/_alias/a1"),
        (Delete, "/idx/_alias/a1"),
        (Post, "/_cache/clear"),
        (Delete, "/idx/_alias/*"),
    ];
    for &(method, path) in table {
        for cc in [St, Mt] {
            for v in same_route_variants(path) {
                assert_eq!(
                    class(method, &v, cc),
                    Class::Update,
                    "{method:?} {v} {cc:?}"
                );
            }
        }
    }
    // unknown endpoints: updates on single-tenant, not implemented on multitenant
    for (method, path) in [
        (Post, "/_unknown"),
        (Put, "/_ingest/pipeline/p1"),
        (Post, "/idx/_shrink/small"),
        (Post, "/idx/_rollover"),
        (Put, "/_aliases"),
        (Post, "/_index_template/_simulate"),
    ] {
        if path != "/_aliases" {
            assert_eq!(class(method, path, St), Class::Update, "{path}");
        }
        assert!(
            matches!(class(method, path, Mt), Class::NotImplemented(_)),
            "{path}"
        );
    }
    // issue 10: aliases, templates, by-query jobs and reindex are updates on both classes
    for (method, path) in [
        (Post, "/_aliases"),
        (Put, "/_template/t1"),
        (Delete, "/_template/t1"),
        (Put, "/_index_template/t1"),
        (Put, "/_component_template/c1"),
        (Post, "/idx/_delete_by_query"),
        (Post, "/idx/_update_by_query"),
        (Post, "/_reindex"),
        (Put, "/_alias/a1"),
        (Put, "/idx/_alias"),
    ] {
        for cc in [St, Mt] {
            assert_eq!(
                class(method, path, cc),
                Class::Update,
                "{method:?} {path} {cc:?}"
            );
        }
    }
}

// spec 3 + issue 5: deleting an index is its own class (read-only by overage allows it)
#[test]
fn delete_index() {
    for p in ["/logs", "/a,b", "/logs/", "//logs", "/%6Cogs", "/-x"] {
        for cc in [St, Mt] {
            assert_eq!(class(Delete, p, cc), Class::DeleteIndex, "{p}");
        }
    }
    assert_eq!(class(Delete, "/logs/_doc/1", St), Class::Update);
    assert_eq!(class(Get, "/logs", St), Class::Read);
}

// Case and double encoding are not the upstream's routing: never promoted to reads.
#[test]
fn variants_the_upstream_routes_differently_are_not_reads() {
    for p in [
        "/idx/_SEARCH",
        "/idx/%255Fsearch",
        "/_Search",
        "/idx/_search%2Fx",
    ] {
        assert_eq!(class(Post, p, St), Class::Update, "{p}");
        assert_ne!(class(Post, p, Mt), Class::Read, "{p}");
    }
}

// Multitenant: only endpoints the rewriter can confine to the tenant are allowed.
#[test]
fn multitenant_allow_list() {
    let refused: &[(Method, &str)] = &[
        (Get, "/_cluster/state"),
        (Get, "/_cluster/settings"),
        (Get, "/_cluster/stats"),
        (Get, "/_nodes"),
        (Get, "/_nodes/stats"),
        (Get, "/_cat/nodes"),
        (Get, "/_cat/health"),
        (Get, "/_cat/templates"),
        (Post, "/"),
        (Get, "/_xpack"),
        (Post, "/_sql"),
        (Get, "/_resolve/cluster/x"),
        (Post, "/_index_template/_simulate_index/t"),
        (Delete, "/_search/scroll/_all"),
    ];
    for &(method, path) in refused {
        let c = class(method, path, Mt);
        assert!(
            matches!(c, Class::NotImplemented(_)),
            "{method:?} {path}: {c:?}"
        );
    }
    assert_eq!(
        class(Get, "/_cat/nodes", Mt),
        Class::NotImplemented(Cow::Owned("_cat/nodes".into()))
    );
    assert_eq!(
        class(Get, "/_cat/health", Mt),
        Class::NotImplemented(Cow::Owned("_cat/health".into()))
    );
    assert_eq!(
        class(Post, "/idx/_shrink/t", Mt),
        Class::NotImplemented(Cow::Owned("_shrink/t".into()))
    );
    for (method, path) in [
        (Get, "/"),
        (Head, "/"),
        (Get, "/_aliases"),
        (Get, "/_cluster/health"),
        (Get, "/_resolve/index/x*"),
        (Get, "/_template"),
        (Get, "/_search/scroll"),
    ] {
        assert_eq!(class(method, path, Mt), Class::Read, "{path}");
    }
}

#[test]
fn bad_paths_are_errors() {
    assert_eq!(classify(Get, b"/%zz", St), Err(PathError::BadEncoding));
    assert_eq!(
        classify(Get, b"/%252525252525", St),
        Err(PathError::OverEncoded)
    );
}

#[test]
fn index_expressions() {
    for s in ["a", "*", "_all", "_all,b", "-a", "a,b"] {
        assert!(is_index_expr(s.as_bytes()), "{s}");
    }
    for s in ["", "_search", "_alls", "_cat"] {
        assert!(!is_index_expr(s.as_bytes()), "{s}");
    }
}

// attacks-10 #1, #8: value segments that Elasticsearch's PathTrie could route as endpoint
// names (its backtracking from `_doc`/`_settings`/... to the `{type}` wildcard)
#[test]
fn endpoint_names_in_value_positions() {
    let at = |m: Method, p: &str| {
        let c = classify_request(m, p.as_bytes(), Mt).unwrap();
        endpoint_name_in_value(c.route.expect(p), &c.path)
    };
    let table: &[(Method, &str, Option<usize>)] = &[
        (Post, "/books/_doc/_msearch", Some(2)),
        (Post, "/books/_create/_bulk", Some(2)),
        (Post, "/books/_settings/_search", Some(2)),
        (Post, "/books/_settings/x/_update", Some(3)),
        (Put, "/books/_mapping/_doc", Some(2)),
        (Get, "/_stats/_all", Some(1)),
        (Post, "/books/_doc/1", None),
        (Post, "/books/doc/1/_update", None),
        (Post, "/books/doc/_msearch", None),
        (Post, "/_all/_search", None),
        (Get, "/books/_mapping/field/_id", None),
        (Get, "/_mapping/field/_source", None),
        (Put, "/books/_settings", None),
        (Get, "/_search/scroll/_x", None),
    ];
    for &(m, p, want) in table {
        assert_eq!(at(m, p), want, "{m:?} {p}");
    }
}
