//! End-to-end: usage metering moves a cluster between normal, read-only and disabled by its
//! disk usage, read from the embedded engine (spec 3 "usage overage", spec 8 disk; issue 5
//! "Plans"), and a mode the operator set is never lifted by metering.
//!
//! The plan's disk is tiny and metering runs every 200 ms (the control loop looks every
//! 500 ms). Data are written through the edge until the cluster turns read-only; then more
//! is written straight into the tenant's real index on the engine (usage growing by itself,
//! as only an operator could: the tenant's updates are refused by then) until it turns
//! disabled; the operator removes that, and the tenant deletes its index, which read-only
//! allows: the cluster returns to normal by itself.

#[path = "support/e2e/mod.rs"]
mod e2e;

use std::net::SocketAddr;
use std::time::Duration;

use e2e::{
    direct, engine_indices, es_error, eventually, ClusterSpec, Config, Edge, PlanSpec, Response,
    Tenant,
};
use serde_json::{json, Value};

/// The plan's disk: read-only above it, disabled above twice it.
const DISK: u64 = 64 * 1024;
const WAIT: Duration = Duration::from_secs(20);

/// Bytes on the engine of the indices whose real names start with `prefix`.
fn usage(engine: SocketAddr, prefix: &str) -> u64 {
    engine_indices(engine)
        .iter()
        .filter(|i| i.name.starts_with(prefix))
        .map(|i| i.bytes)
        .sum()
}

/// Text that compresses badly (xorshift, hex), so the index grows with what is written.
struct Noise(u64);

impl Noise {
    fn text(&mut self, bytes: usize) -> String {
        let mut out = String::with_capacity(bytes);
        while out.len() < bytes {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            out.push_str(&format!("{:016x} ", self.0));
        }
        out
    }
}

fn bulk_lines(index: &str, first: u32, n: u32, noise: &mut Noise, doc_bytes: usize) -> Vec<Value> {
    let mut lines = Vec::new();
    for i in first..first + n {
        let action = if index.is_empty() {
            json!({"index": {"_type": "doc", "_id": i.to_string()}})
        } else {
            json!({"index": {"_index": index, "_type": "doc", "_id": i.to_string()}})
        };
        lines.push(action);
        lines.push(json!({"n": i, "text": noise.text(doc_bytes)}));
    }
    lines
}

/// An update that changes nothing: a write to a missing, non-whitelisted index (404 from
/// the engine when it passes, the mode's 403 when refused).
fn probe_update(edge: &Edge, t: &Tenant) -> Response {
    edge.send(&t.json("PUT", "/probe-missing/doc/1", &json!({"n": 0})))
}

fn is_refused(r: &Response, reason: &str) -> bool {
    r.status == 403
        && r.json()["error"]["reason"]
            .as_str()
            .is_some_and(|s| s.starts_with(reason))
}

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
        .plan(PlanSpec::new("tiny").disk("64kb"))
        .cluster(ClusterSpec::multitenant("meter", "tiny"));
    let edge = Edge::start(config);
    let (engine, t) = (edge.engine(), edge.tenant("meter"));
    let mut c = edge.client();
    assert_eq!(c.send(&t.req("PUT", "/logs")).status, 200);
    let prefix = e2e::prefix_of(engine, "logs");

    // Write through the edge until usage is over the plan (or the edge already refuses).
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
    let mut docs = 0u32;
    while usage(engine, &prefix) <= DISK {
        assert!(
            docs < 2000,
            "usage stays at {} bytes",
            usage(engine, &prefix)
        );
        let lines = bulk_lines("logs", docs, 20, &mut noise, 400);
        let r = c.send(&t.ndjson("POST", "/_bulk?refresh=true", &lines));
        if r.status == 403 {
            break;
        }
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["errors"], false);
        docs += 20;
    }
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

    // Every move was metering's, printed as it happened.
    let moves: Vec<String> = edge
        .out
        .text()
        .lines()
        .filter(|l| l.contains("cluster meter:") && l.contains("metering moves it"))
        .map(|l| l.rsplit("from ").next().unwrap().to_string())
        .collect();
    assert_eq!(
        moves,
        [
            "Normal to ReadOnly(Metering)",
            "ReadOnly(Metering) to Disabled(Metering)",
            "Disabled(Metering) to ReadOnly(Metering)",
            "ReadOnly(Metering) to Normal",
        ],
        "{}",
        edge.out.text()
    );
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

/// Waits for metering to print a move of cluster `id` to `to`, after line `skip`.
fn wait_move(edge: &Edge, skip: usize, id: &str, to: &str) -> usize {
    let line = edge
        .out
        .wait_for_after(skip, &format!("cluster {id}:"), WAIT);
    let line = line.unwrap_or_else(|| panic!("no metering move of {id}:\n{}", edge.out.text()));
    assert!(line.ends_with(&format!("to {to}")), "{line}");
    let lines = edge.out.text();
    lines.lines().position(|l| l == line).unwrap() + 1
}

// spec 3, issue 5: a mode the operator set is not lifted by metering, even with usage under
// the plan, and its read-only does not allow index deletion.
#[test]
fn operator_mode_is_not_lifted_by_metering() {
    let mut config = Config::new()
        .edge("metering_interval", "\"200ms\"")
        .plan(PlanSpec::new("witness").disk("1kb"))
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
    let skip = wait_move(&edge, skip, "wit", "Disabled(Metering)");
    let real = format!("{}w", e2e::prefix_of(engine, "w"));
    assert_eq!(
        direct(engine, "DELETE", &format!("/{real}"), None).status,
        200
    );
    wait_move(&edge, skip, "wit", "Normal");

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
