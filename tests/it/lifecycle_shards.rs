//! End-to-end: the plan's shard capacity (spec 1.6, 2.2, 8; issue 5 "Plans") on both
//! classes, through the edge in front of real engines: an index whose `p * (1 + r)` shards
//! would take the cluster past its plan is refused with 400 naming the plan, the capacity,
//! the shards in use and the shards asked for, and nothing is created upstream; exactly at
//! the capacity it passes; shards freed by deleting an index count again once metering has
//! read them.

use crate::support::e2e;

use std::net::SocketAddr;
use std::time::Duration;

use e2e::{direct, es_error, eventually, ClusterSpec, Config, Edge, Engine, PlanSpec, Tenant};
use serde_json::{json, Value};

const CAPACITY: u64 = 6;

fn settings(shards: u64, replicas: u64) -> Value {
    json!({"settings": {"number_of_shards": shards, "number_of_replicas": replicas}})
}

/// Asserts the 400 of spec 8's shard capacity with its figures.
fn assert_capacity(r: &e2e::Response, in_use: u64, asked: u64, what: &str) {
    let (kind, reason) = es_error(r, 400);
    assert_eq!(kind, "validation_exception", "{what}");
    let e = &r.json()["error"];
    assert_eq!(e["plan"], "six", "{what}: {e}");
    assert_eq!(e["shard_capacity"], CAPACITY, "{what}: {e}");
    assert_eq!(e["shards_in_use"], in_use, "{what}: {e}");
    assert_eq!(e["shards_requested"], asked, "{what}: {e}");
    for figure in [
        "six",
        "6 shards",
        &format!("{in_use} are in use"),
        &format!("{asked} more"),
    ] {
        assert!(reason.contains(figure), "{what}: {reason}");
    }
}

/// The cluster's own real index `name` on `engine` (`prefix` "" for a cluster alone).
fn exists_upstream(engine: SocketAddr, prefix: &str, name: &str) -> bool {
    let r = direct(engine, "HEAD", &format!("/{prefix}{name}"), None);
    assert!(matches!(r.status, 200 | 404), "{}", r.status);
    r.status == 200
}

fn check_class(edge: &Edge, t: &Tenant, engine: SocketAddr, multitenant: bool) {
    let class = if multitenant {
        "multitenant"
    } else {
        "single-tenant"
    };
    let mut c = edge.client();
    // 2 shards (the upstream's defaults: 1 primary, 1 replica), then 4 more: exactly 6.
    assert_eq!(c.send(&t.req("PUT", "/a")).status, 200, "{class}");
    let prefix = if multitenant {
        e2e::prefix_of(engine, "a")
    } else {
        String::new()
    };
    let r = c.send(&t.json("PUT", "/b", &settings(2, 1)));
    assert_eq!(
        r.status,
        200,
        "{class}: at exactly the capacity: {}",
        r.text()
    );
    // One more shard is one too many, whatever form the settings take.
    let r = c.send(&t.json(
        "PUT",
        "/c",
        &json!({"settings": {"index": {"number_of_shards": "1", "number_of_replicas": 0}}}),
    ));
    assert_capacity(&r, 6, 1, class);
    assert_capacity(&c.send(&t.req("PUT", "/c")), 6, 2, class);
    assert!(
        !exists_upstream(engine, &prefix, "c"),
        "{class}: nothing created upstream"
    );
    // A whitelisted index created on first write counts too (spec 1.5): the edge creates
    // it first, after the shard check, on both classes. KNOWN GAP: on the single-tenant
    // class, indices named only inside a `_bulk` body are created by the upstream itself,
    // unchecked (the single-tenant path counts bulk actions without parsing them).
    let r = c.send(&t.json("POST", "/logstash-2024.05.01/doc/1", &json!({"m": 1})));
    assert_capacity(&r, 6, 2, &format!("{class} auto-creation"));
    assert!(
        !exists_upstream(engine, &prefix, "logstash-2024.05.01"),
        "{class}"
    );
    if multitenant {
        let bulk = t.ndjson(
            "POST",
            "/_bulk",
            &[
                json!({"index": {"_index": "events-1", "_type": "doc"}}),
                json!({"m": 1}),
            ],
        );
        assert_capacity(
            &c.send(&bulk),
            6,
            2,
            &format!("{class} auto-creation in _bulk"),
        );
        for name in ["logstash-2024.05.01", "events-1"] {
            assert!(!exists_upstream(engine, &prefix, name), "{class}: {name}");
        }
    }

    // Deleting `a` frees 2 shards once metering has read the engine again.
    assert_eq!(c.send(&t.req("DELETE", "/a")).status, 200, "{class}");
    eventually("the freed shards", Duration::from_secs(20), || {
        let r = c.send(&t.json("PUT", "/c", &settings(1, 1)));
        match r.status {
            200 => Some(()),
            _ => {
                assert_capacity(&r, 6, 2, class);
                None
            }
        }
    });
    assert!(exists_upstream(engine, &prefix, "c"), "{class}");
    let r = c.send(&t.json("PUT", "/d", &settings(1, 0)));
    assert_capacity(&r, 6, 1, class);
}

// spec 8: shard capacity per plan, total shards of all indices, on the multitenant class
// (its indices on a shared engine) and the single-tenant class (an engine of its own).
#[test]
fn shard_capacity_of_the_plan_on_both_classes() {
    let alone = Engine::start();
    let config = Config::new()
        .edge("metering_interval", "\"200ms\"")
        .plan(PlanSpec::new("six").shards(CAPACITY))
        .cluster(ClusterSpec::multitenant("mt", "six"))
        .cluster(ClusterSpec::multitenant("other", "six"))
        .cluster(ClusterSpec::single("st", "six", alone.addr));
    let edge = Edge::start(config);
    // Another tenant's shards on the shared engine are not this tenant's.
    let other = edge.tenant("other");
    assert_eq!(
        edge.send(&other.json("PUT", "/big", &settings(3, 1)))
            .status,
        200
    );
    check_class(&edge, &edge.tenant("mt"), edge.engine(), true);
    check_class(&edge, &edge.tenant("st"), alone.addr, false);
}
