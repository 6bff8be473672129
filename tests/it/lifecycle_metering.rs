//! End-to-end: usage metering moves a cluster between normal, read-only and disabled by its
//! disk usage, read from the embedded engine (spec 3 "usage overage", spec 8 disk; issue 5
//! "Plans"), and a mode the operator set is never lifted by metering.
//!
//! Since issue 12 the moves are the overage ladder's: here its plan has no grace period
//! (`overage_grace = "0s"`: read-only at the first reading over the plan) and a second
//! period longer than the test, so only the extreme factor (2x the disk) disables; the
//! ladder with its default periods and a driven clock is in `tests/it/billing_ladder.rs`.
//! The plan's disk is tiny and metering runs every 200 ms (the control loop looks every
//! 500 ms). Data are written through the edge until the cluster turns read-only; then more
//! is written straight into the tenant's real index on the engine (usage growing by itself,
//! as only an operator could: the tenant's updates are refused by then) until it turns
//! disabled; the operator removes that, and the tenant deletes its index, which read-only
//! allows: the cluster returns to normal by itself.

use crate::support::e2e;

use std::net::SocketAddr;
use std::time::Duration;

use e2e::fill::{bulk_lines, fill_past, is_refused, probe_update, usage, Noise};
use e2e::{direct, es_error, eventually, ClusterSpec, Config, Edge, PlanSpec, Response, Tenant};
use serde_json::json;

/// The plan's disk: read-only above it, disabled above twice it.
const DISK: u64 = 64 * 1024;
const WAIT: Duration = Duration::from_secs(20);

fn wait_refused(edge: &Edge, t: &Tenant, reason: &str) {
    eventually(&format!("updates refused with {reason}"), WAIT, || {
        is_refused(&probe_update(edge, t), reason).then_some(())
    });
}

// spec 3: overage moves normal to read-only (updates 403, reads pass, deleting an index
// allowed), then disabled above the disable factor (everything 403); clearing the overage
// returns the cluster to normal by itself.
#[test]
fn disk_overage_read_only_then_disabled_then_back_to_normal() {
    let config = Config::new()
        .edge("metering_interval", "\"200ms\"")
        .edge("disable_factor", "2")
        .plan(no_grace(PlanSpec::new("tiny").disk("64kb")))
        .cluster(ClusterSpec::multitenant("meter", "tiny"));
    let edge = Edge::start(config);
    let (engine, t) = (edge.engine(), edge.tenant("meter"));
    let mut c = edge.client();
    assert_eq!(c.send(&t.req("PUT", "/logs")).status, 200);
    let prefix = e2e::prefix_of(engine, "logs");

    // Write through the edge until usage is over the plan (or the edge already refuses).
    let docs = fill_past(&edge, &t, "logs", &prefix, DISK);
    let mut noise = Noise(0x2545_f491_4f6c_dd1d);
    wait_refused(&edge, &t, "Cluster Read-only");
    // Read-only by overage: reads pass, updates do not, deleting an index is allowed.
    let r = c.send(&t.req("GET", "/logs/_count"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["count"], docs);
    let lines = bulk_lines("logs", 5000, 1, &mut noise, 10);
    let (_, reason) = es_error(&c.send(&t.ndjson("POST", "/_bulk", &lines)), 403);
    assert!(reason.starts_with("Cluster Read-only"), "{reason}");
    let r = c.send(&t.req("DELETE", "/no-such-index"));
    let (kind, _) = es_error(&r, 404);
    assert_eq!(
        kind, "index_not_found_exception",
        "the deletion reached the engine"
    );

    // Usage grows past twice the plan: disabled, every request refused.
    let extra = format!("{prefix}extra");
    assert_eq!(
        direct(engine, "PUT", &format!("/{extra}"), None).status,
        200
    );
    let mut n = 0;
    while usage(engine, &prefix) <= 2 * DISK {
        assert!(n < 4000, "usage stays at {} bytes", usage(engine, &prefix));
        let body = e2e::ndjson(&bulk_lines(&extra, n, 40, &mut noise, 400));
        let r = raw_bulk(engine, body);
        assert_eq!(r.status, 200, "{}", r.text());
        n += 40;
    }
    eventually("disabled", WAIT, || {
        is_refused(
            &edge.send(&t.req("GET", "/logs/_count")),
            "Cluster Disabled",
        )
        .then_some(())
    });
    assert!(is_refused(&probe_update(&edge, &t), "Cluster Disabled"));
    assert!(is_refused(
        &edge.send(&t.req("DELETE", "/logs")),
        "Cluster Disabled"
    ));

    // The operator removes the growth: back to read-only; the tenant deletes its index.
    assert_eq!(
        direct(engine, "DELETE", &format!("/{extra}"), None).status,
        200
    );
    eventually("read-only again", WAIT, || {
        (edge.send(&t.req("GET", "/logs/_count")).status == 200).then_some(())
    });
    assert!(is_refused(&probe_update(&edge, &t), "Cluster Read-only"));
    let r = edge.send(&t.req("DELETE", "/logs"));
    assert_eq!(r.status, 200, "{}", r.text());
    eventually("normal again", WAIT, || {
        (probe_update(&edge, &t).status == 404).then_some(())
    });
    let r = edge.send(&t.json("PUT", "/logs/doc/1", &json!({"n": 1})));
    assert_eq!(
        r.status,
        404,
        "writable again (the index is gone): {}",
        r.text()
    );
    assert_eq!(edge.send(&t.req("PUT", "/logs")).status, 200);

    // Every move was the ladder's, printed as it happened.
    let moves: Vec<String> = edge
        .out
        .text()
        .lines()
        .filter_map(|l| l.strip_prefix("searchgate: cluster meter: "))
        .map(|l| l.split(':').next().unwrap().to_string())
        .collect();
    assert_eq!(
        moves,
        [
            "overage read-only",
            "overage disabled",
            "overage read-only",
            "usage is back under the plan",
        ],
        "{}",
        edge.out.text()
    );
}

/// `plan` with the ladder's grace period off: read-only at the first reading over it,
/// disabled only above twice its disk (within the test's time).
fn no_grace(plan: PlanSpec) -> PlanSpec {
    plan.with("overage_grace", "\"0s\"")
        .with("overage_disable_after", "\"1000d\"")
        .with("overage_extreme_factor", "2")
}

/// `POST /_bulk?refresh=true` straight to the engine.
fn raw_bulk(engine: SocketAddr, body: Vec<u8>) -> Response {
    let req = e2e::Req::new("POST", "/_bulk?refresh=true")
        .host("engine")
        .header("Content-Type", "application/x-ndjson")
        .body(body);
    let mut c = e2e::Conn::plain(engine);
    e2e::exchange(&mut c, &req)
}

/// Waits for the ladder to print a move of cluster `id` (`overage <step>`, or `usage is
/// back under the plan`), after line `skip`.
fn wait_move(edge: &Edge, skip: usize, id: &str, to: &str) -> usize {
    let line = edge
        .out
        .wait_for_after(skip, &format!("cluster {id}:"), WAIT);
    let line = line.unwrap_or_else(|| panic!("no metering move of {id}:\n{}", edge.out.text()));
    assert!(line.contains(&format!("cluster {id}: {to}")), "{line}");
    let lines = edge.out.text();
    lines.lines().position(|l| l == line).unwrap() + 1
}

// spec 3, issue 5: a mode the operator set is not lifted by metering, even with usage under
// the plan, and its read-only does not allow index deletion.
#[test]
fn operator_mode_is_not_lifted_by_metering() {
    let mut config = Config::new()
        .edge("metering_interval", "\"200ms\"")
        .plan(no_grace(PlanSpec::new("witness").disk("1kb")))
        .cluster(ClusterSpec::multitenant("held", "p"))
        .cluster(ClusterSpec::multitenant("wit", "witness"));
    let mut edge = Edge::start(config.clone());
    let (engine, held, wit) = (edge.engine(), edge.tenant("held"), edge.tenant("wit"));
    assert_eq!(edge.send(&held.req("PUT", "/keep")).status, 200);
    config.get_mut("held").mode = "read-only".into();
    let skip = edge.out.len();
    edge.reload(config.clone());
    assert!(is_refused(&probe_update(&edge, &held), "Cluster Read-only"));

    // Two moves of the witness, the second after the first: at least one whole metering
    // round ran after the reload, and it read `held` (far under its plan) too.
    assert_eq!(edge.send(&wit.req("PUT", "/w")).status, 200);
    let skip = wait_move(&edge, skip, "wit", "overage disabled");
    let real = format!("{}w", e2e::prefix_of(engine, "w"));
    assert_eq!(
        direct(engine, "DELETE", &format!("/{real}"), None).status,
        200
    );
    wait_move(&edge, skip, "wit", "usage is back under the plan");

    assert!(is_refused(&probe_update(&edge, &held), "Cluster Read-only"));
    let r = edge.send(&held.req("DELETE", "/keep"));
    assert!(is_refused(&r, "Cluster Read-only"), "{}", r.text());
    assert_eq!(edge.send(&held.req("GET", "/keep/_count")).status, 200);
    assert!(
        !edge.out.text().contains("cluster held:"),
        "metering never moved held"
    );
    // The operator lifts it.
    config.get_mut("held").mode = "normal".into();
    edge.reload(config);
    assert_eq!(probe_update(&edge, &held).status, 404);
}
