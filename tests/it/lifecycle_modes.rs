//! End-to-end: cluster modes (spec 3, with the statuses and names of spec 7) and endpoints
//! that are not exposed (spec 1.4), through the real edge in front of the embedded engine
//! (and a recording mock, to prove that refused requests never reach an upstream).
//! Issue 5, "Modes".

use crate::support::e2e;

use e2e::mock::Mock;
use e2e::{direct, es_error, prefix_of, Client, ClusterSpec, Config, Edge, Response, Tenant};
use serde_json::json;

const MODES: [(&str, &str); 6] = [
    ("norm", "normal"),
    ("ro", "read-only"),
    ("off", "disabled"),
    ("maint", "maintenance"),
    ("prov", "provisioning"),
    ("gone", "destroyed"),
];

/// What a request gets in a mode: a status and, for refusals, the start of the reason.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Pass(u16),
    /// 403 `cluster_block_exception`, reason starting with this.
    Blocked(&'static str),
    /// 404 Cluster Not Found.
    NotFound,
}

/// spec 3, 7: (mode) -> (read, update).
fn expected(mode: &str) -> (Expect, Expect) {
    use Expect::*;
    match mode {
        "normal" => (Pass(200), Pass(201)),
        "read-only" => (Pass(200), Blocked("Cluster Read-only")),
        "disabled" => (Blocked("Cluster Disabled"), Blocked("Cluster Disabled")),
        "maintenance" => (Pass(200), Blocked("Maintenance")),
        "provisioning" | "destroyed" => (NotFound, NotFound),
        other => panic!("mode {other}"),
    }
}

fn check(r: &Response, want: Expect, what: &str) {
    match want {
        Expect::Pass(status) => assert_eq!(r.status, status, "{what}: {}", r.text()),
        Expect::Blocked(reason) => {
            let (kind, got) = es_error(r, 403);
            assert_eq!(kind, "cluster_block_exception", "{what}");
            assert!(got.starts_with(reason), "{what}: reason {got:?}");
        }
        Expect::NotFound => {
            let (kind, got) = es_error(r, 404);
            assert_eq!(kind, "cluster_not_found_exception", "{what}");
            assert!(got.starts_with("Cluster Not Found"), "{what}: {got:?}");
        }
    }
    // spec 7: Maintenance tells the client when to retry.
    let retry = r.header("retry-after");
    if want == Expect::Blocked("Maintenance") {
        let secs: u64 = retry.expect("Retry-After").parse().expect("seconds");
        assert!(secs > 0, "{what}");
    } else if r.status == 403 || r.status == 404 {
        assert!(retry.is_none(), "{what}: Retry-After {retry:?}");
    }
}

fn index_of(id: &str) -> String {
    format!("{id}-books")
}

// spec 3, 7: each mode, set by the operator (config reload), with reads (GET, and POST to a
// read endpoint) and updates, on connections opened before the change.
#[test]
fn each_mode_with_a_read_and_an_update() {
    let mut config = Config::new();
    for (id, _) in MODES {
        config = config.cluster(ClusterSpec::multitenant(id, "p"));
    }
    let mut edge = Edge::start(config.clone());
    let tenants: Vec<Tenant> = MODES.iter().map(|(id, _)| edge.tenant(id)).collect();
    let mut conns: Vec<Client> = MODES.iter().map(|_| edge.client()).collect();
    for ((id, _), (t, c)) in MODES.iter().zip(tenants.iter().zip(&mut conns)) {
        let idx = index_of(id);
        assert_eq!(c.send(&t.req("PUT", &format!("/{idx}"))).status, 200);
        let doc = t.json(
            "PUT",
            &format!("/{idx}/doc/1?refresh=true"),
            &json!({"n": 1}),
        );
        assert_eq!(c.send(&doc).status, 201);
    }
    for (id, mode) in MODES {
        config.get_mut(id).mode = mode.into();
    }
    edge.reload(config);

    let engine = edge.engine();
    for ((id, mode), (t, c)) in MODES.iter().zip(tenants.iter().zip(&mut conns)) {
        let idx = index_of(id);
        let (read, update) = expected(mode);
        let what = |w: &str| format!("{mode}: {w}");
        let r = c.send(&t.req("GET", &format!("/{idx}/_search")));
        check(&r, read, &what("GET _search"));
        if read == Expect::Pass(200) {
            assert_eq!(r.json()["hits"]["total"]["value"], 1, "{}", r.text());
        }
        let q = t.json(
            "POST",
            &format!("/{idx}/_search"),
            &json!({"query": {"match_all": {}}}),
        );
        check(&c.send(&q), read, &what("POST _search"));
        let count = t.req("POST", &format!("/{idx}/_count"));
        check(&c.send(&count), read, &what("POST _count"));

        let doc = t.json(
            "PUT",
            &format!("/{idx}/doc/2?refresh=true"),
            &json!({"n": 2}),
        );
        check(&c.send(&doc), update, &what("PUT doc"));
        let bulk = t.ndjson(
            "POST",
            "/_bulk?refresh=true",
            &[
                json!({"index": {"_index": idx, "_type": "doc", "_id": "3"}}),
                json!({"n": 3}),
            ],
        );
        let bulk_want = match update {
            Expect::Pass(_) => Expect::Pass(200),
            other => other,
        };
        check(&c.send(&bulk), bulk_want, &what("_bulk"));
        // An operator's read-only (unlike metering's) refuses index deletion too.
        let del = t.req("DELETE", &format!("/{idx}-nope"));
        let del_want = match update {
            Expect::Pass(_) => Expect::Pass(404),
            other => other,
        };
        check(&c.send(&del), del_want, &what("DELETE index"));

        // What reached the engine: the refused update did not.
        let real = format!("{}{idx}", prefix_of(engine, &idx));
        let stored = direct(engine, "GET", &format!("/{real}/_count"), None).json();
        let written = matches!(update, Expect::Pass(_));
        let want = if written { 3 } else { 1 };
        assert_eq!(stored["count"], want, "{mode}: documents upstream");
    }
}

/// (method, path, a word the 501 reason names, blocked on the single-tenant class too).
const NOT_EXPOSED: &[(&str, &str, &str, bool)] = &[
    ("POST", "/_shutdown", "shutdown", true),
    ("POST", "/_cluster/nodes/_local/_shutdown", "shutdown", true),
    ("POST", "/_nodes/_local/_restart", "restart", true),
    ("PUT", "/_snapshot/repo", "snapshot", true),
    ("PUT", "/%5Fsnapshot/repo", "snapshot", true),
    ("GET", "/%255Fsnapshot", "snapshot", true),
    ("GET", "//_snapshot//", "snapshot", true),
    ("GET", "/./_snapshot/", "snapshot", true),
    ("GET", "/books/../_snapshot", "snapshot", true),
    ("GET", "/_SNAPSHOT", "snapshot", true),
    ("POST", "/_cluster/reroute", "reroute", true),
    ("POST", "/_cluster/%72eroute", "reroute", true),
    ("PUT", "/_cluster/settings", "settings", true),
    ("PUT", "/_CLUSTER/Settings/", "settings", true),
    ("GET", "/_nodes/hot_threads", "hot_threads", true),
    ("GET", "/_nodes/node1/hot_threads/", "hot_threads", true),
    ("POST", "/_scripts/myscript", "script", true),
    ("PUT", "/books/_warmer/w1", "warmer", true),
    ("DELETE", "/_all", "_all", true),
    ("DELETE", "/_ALL/", "_all", true),
    ("DELETE", "/*", "*", true),
    ("DELETE", "/%2A", "*", true),
    ("DELETE", "/books*", "*", true),
    ("DELETE", "/books,_all", "_all", true),
    ("DELETE", "/", "/", true),
    ("GET", "/_tasks", "tasks", false),
    (
        "POST",
        "/_update_by_query/t1/_rethrottle",
        "rethrottle",
        false,
    ),
    ("POST", "/_reindex/t1/%5Frethrottle", "rethrottle", false),
    ("DELETE", "/_search/scroll/_all", "scroll", false),
];

fn assert_501(r: &Response, word: &str, what: &str) {
    let (kind, reason) = es_error(r, 501);
    assert_eq!(kind, "not_implemented_exception", "{what}");
    assert!(
        reason.to_ascii_lowercase().contains(word),
        "{what}: the reason names the endpoint: {reason}"
    );
}

// spec 1.4, 7: endpoints that are not exposed are 501 with an Elasticsearch-shaped body
// naming the endpoint, however the path is spelled; none reaches the upstream. `_tasks`,
// rethrottling and clearing every scroll are refused on the multitenant class only (issue
// 10: the by-query jobs and `_reindex` run within the tenant there).
#[test]
fn endpoints_not_exposed_are_501_in_every_spelling() {
    let mock = Mock::start();
    let config = Config::new()
        .cluster(ClusterSpec::multitenant("mt", "p"))
        .cluster(ClusterSpec::single("st", "p", mock.addr))
        .cluster(ClusterSpec::multitenant("off", "p").mode("disabled"));
    let edge = Edge::start(config);
    let (mt, st) = (edge.tenant("mt"), edge.tenant("st"));
    let mut c = edge.client();
    assert_eq!(c.send(&mt.req("PUT", "/books")).status, 200);
    let before = mock.requests().len();
    let mut passed: Vec<String> = Vec::new();
    for &(method, path, word, both) in NOT_EXPOSED {
        let what = format!("{method} {path}");
        assert_501(
            &c.send(&mt.req(method, path)),
            word,
            &format!("multitenant {what}"),
        );
        let r = c.send(&st.req(method, path));
        if both {
            assert_501(&r, word, &format!("single-tenant {what}"));
        } else {
            assert_eq!(r.status, 200, "single-tenant {what} passes: {}", r.text());
            passed.push(path.to_string());
        }
    }
    // A single-tenant `_reindex` is read: a remote source is refused, a local one passes.
    let remote = serde_json::json!({"source": {"remote": {"host": "http://other:9200"}, "index": "x"}, "dest": {"index": "y"}});
    let (kind, reason) = es_error(&c.send(&st.json("POST", "/_reindex", &remote)), 400);
    assert_eq!(kind, "illegal_argument_exception");
    assert!(reason.contains("source.remote"), "{reason}");
    let local = serde_json::json!({"source": {"index": "x"}, "dest": {"index": "y"}});
    assert_eq!(c.send(&st.json("POST", "/_reindex", &local)).status, 200);
    passed.push("/_reindex".into());
    // Only the single-tenant class's allowed requests reached its upstream.
    let reached: Vec<String> = mock.requests()[before..]
        .iter()
        .map(|r| r.target.clone())
        .collect();
    assert_eq!(reached.len(), passed.len(), "{reached:?}");
    // Nothing was deleted on the engine by the refused DELETEs.
    let r = edge.send(&mt.req("GET", "/books"));
    assert_eq!(r.status, 200, "{}", r.text());
    // A disabled cluster answers 403 before saying what it does not expose.
    let off = edge.tenant("off");
    let (kind, reason) = es_error(&edge.send(&off.req("POST", "/_snapshot/x")), 403);
    assert_eq!(kind, "cluster_block_exception");
    assert!(reason.starts_with("Cluster Disabled"));
}
