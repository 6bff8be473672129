//! Issue 10 §3 (attacks-10 #9): open search contexts are a plan limit of each multitenant
//! cluster, end to end through `searchgate serve` on the embedded engine. A plan allows two
//! open scrolls or points in time at once (`max_open_contexts = 2`):
//!
//! - at the limit, an open (a search with `?scroll=`, `POST /<index>/_pit`) is answered 429
//!   `too_many_scroll_contexts_exception` with the limit and the count, by the edge;
//!   continuing an open scroll still works;
//! - clearing a scroll, closing a point in time, and the keep-alive passing free places;
//! - the other tenant on the same upstream is unaffected by the first one's contexts;
//! - concurrent opens cannot pass the limit together.

use crate::support::e2e;

use std::time::Duration;

use e2e::{es_error, eventually, ClusterSpec, Config, Edge, PlanSpec, Response, Tenant};
use serde_json::json;

/// Opens a scroll of `books` kept for `keep`: the response.
fn open_scroll(edge: &Edge, t: &Tenant, keep: &str) -> Response {
    edge.send(&t.req("GET", &format!("/books/_search?scroll={keep}&size=1")))
}

/// The sealed id of an open that must have succeeded.
fn opened(r: &Response, field: &str) -> String {
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.json()[field].as_str().expect("an id").to_string();
    assert!(id.starts_with("sg1."), "sealed: {id}");
    id
}

/// The edge's 429 for one open too many, with the numbers.
fn at_limit(r: &Response, limit: u64) {
    let (kind, reason) = es_error(r, 429);
    assert_eq!(kind, "too_many_scroll_contexts_exception", "{reason}");
    assert!(
        reason.contains(&format!("less than or equal to: [{limit}]")),
        "{reason}"
    );
    assert!(reason.contains(&format!("Open now: [{limit}]")), "{reason}");
}

fn seed(edge: &Edge, t: &Tenant) {
    assert_eq!(edge.send(&t.req("PUT", "/books")).status, 200);
    for n in 0..3 {
        let r = edge.send(&t.json(
            "PUT",
            &format!("/books/_doc/{n}?refresh=true"),
            &json!({"n": n}),
        ));
        assert!(r.status < 300, "{}", r.text());
    }
}

#[test]
fn open_contexts_are_limited_per_cluster_by_its_plan() {
    let mut config = Config::new().plan(PlanSpec::new("two").contexts(2));
    for id in ["alpha", "bravo", "charlie"] {
        config = config.cluster(ClusterSpec::multitenant(id, "two"));
    }
    let edge = Edge::start(config);
    let (alpha, bravo, charlie) = (
        edge.tenant("alpha"),
        edge.tenant("bravo"),
        edge.tenant("charlie"),
    );
    for t in [&alpha, &bravo, &charlie] {
        seed(&edge, t);
    }

    // alpha holds a scroll and a point in time: the plan's two
    let s1 = opened(&open_scroll(&edge, &alpha, "1m"), "_scroll_id");
    let p1 = opened(
        &edge.send(&alpha.req("POST", "/books/_pit?keep_alive=1m")),
        "id",
    );
    at_limit(&open_scroll(&edge, &alpha, "1m"), 2);
    at_limit(
        &edge.send(&alpha.req("POST", "/books/_pit?keep_alive=1m")),
        2,
    );
    // a continuation is not an open: it still works at the limit
    let r = edge.send(&alpha.json(
        "POST",
        "/_search/scroll",
        &json!({"scroll": "1m", "scroll_id": s1}),
    ));
    assert_eq!(r.status, 200, "{}", r.text());
    let s1 = opened(&r, "_scroll_id");

    // the other tenants are unaffected, and have their own limit
    let b1 = opened(&open_scroll(&edge, &bravo, "1m"), "_scroll_id");
    opened(&open_scroll(&edge, &bravo, "1m"), "_scroll_id");
    at_limit(&open_scroll(&edge, &bravo, "1m"), 2);

    // clearing a scroll frees its place at once
    let r = edge.send(&alpha.json("DELETE", "/_search/scroll", &json!({"scroll_id": [s1]})));
    assert_eq!(r.status, 200, "{}", r.text());
    let s2 = opened(&open_scroll(&edge, &alpha, "1m"), "_scroll_id");
    at_limit(&open_scroll(&edge, &alpha, "1m"), 2);
    // so does closing a point in time
    let r = edge.send(&alpha.json("DELETE", "/_pit", &json!({"id": p1})));
    assert_eq!(r.status, 200, "{}", r.text());
    opened(
        &edge.send(&alpha.req("POST", "/books/_pit?keep_alive=1m")),
        "id",
    );
    at_limit(&open_scroll(&edge, &alpha, "1m"), 2);
    // another cluster's id frees nothing of alpha's and clears nothing upstream
    let r = edge.send(&bravo.json("DELETE", "/_search/scroll", &json!({"scroll_id": [s2]})));
    assert_eq!(r.status, 404, "{}", r.text());
    at_limit(&open_scroll(&edge, &alpha, "1m"), 2);

    // the keep-alive passing frees places: bravo's scrolls were kept for a minute, so
    // clear one and open a short one in its place (short, yet long enough that the next
    // request, on a loaded machine too, still finds it counted)
    let r = edge.send(&bravo.json("DELETE", "/_search/scroll", &json!({"scroll_id": b1})));
    assert_eq!(r.status, 200, "{}", r.text());
    opened(&open_scroll(&edge, &bravo, "4s"), "_scroll_id");
    at_limit(&open_scroll(&edge, &bravo, "1m"), 2);
    eventually(
        "the 4s scroll's place to free",
        Duration::from_secs(20),
        || {
            let r = open_scroll(&edge, &bravo, "1m");
            match r.status {
                200 => Some(()),
                _ => {
                    at_limit(&r, 2);
                    None
                }
            }
        },
    );
    at_limit(&open_scroll(&edge, &bravo, "1m"), 2);

    // concurrent opens cannot pass the limit together
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let opens: Vec<_> = (0..8)
            .map(|_| s.spawn(|| open_scroll(&edge, &charlie, "1m").status))
            .collect();
        opens.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ok = statuses.iter().filter(|&&s| s == 200).count();
    let limited = statuses.iter().filter(|&&s| s == 429).count();
    assert_eq!((ok, limited), (2, 6), "{statuses:?}");
}
