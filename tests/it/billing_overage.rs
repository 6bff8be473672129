//! End-to-end: the overage ladder's edges (spec 3 "usage overage", issue 12), with the
//! control plane's clock driven by the test:
//! - an extreme overage (disk above the plan's factor, default 2x) disables the cluster at
//!   once, skipping the ladder; back under the factor (still over the plan) the step follows
//!   the time elapsed (here: a notice, so normal again); under the plan, the overage ends;
//! - a webhook receiver that holds a delivery never blocks requests, the admin API or the
//!   ladder's next steps; a failed delivery is retried with a doubling backoff (0.5 s, 1 s),
//!   the same notice each time, then the queue goes on in order; a stop does not wait for a
//!   held delivery;
//! - `kill -9` in the middle of a month and of an overage keeps the history: the plan
//!   history (the invoice to the cent), the usage samples, the audit log, and the overage's
//!   start (the grace period is not restarted by the crash).
//!
//! Usage is read from the embedded engine every 200 ms; each step is waited for (the 403 it
//! causes, the cluster's view, a log line, a POST), never slept for.

use crate::support::e2e;

use std::time::Duration;

use e2e::fill::{fill_past, is_refused, probe_update};
use e2e::hook::{hold, Hook, Reply};
use e2e::{direct, eventually, ClusterSpec, Config, Edge, PlanSpec, Tenant};
use serde_json::{json, Value};

const DISK: u64 = 64 * 1024;
const WAIT: Duration = Duration::from_secs(20);

fn config(clock: &str) -> Config {
    Config::new()
        .edge("metering_interval", "\"200ms\"")
        .admin_key("test_clock", &format!("\"{clock}\""))
        .plan(PlanSpec::new("tiny").disk("64kb"))
        .cluster(ClusterSpec::multitenant("a", "tiny"))
}

fn clock(edge: &Edge, body: Value) {
    edge.admin()
        .call("POST", "/v1/test/clock", Some(&body))
        .expect(200);
}

fn overage(edge: &Edge, id: &str) -> Value {
    edge.admin().show(id)["overage"].clone()
}

fn wait_step(edge: &Edge, id: &str, want: &str) -> Value {
    eventually(&format!("{id} at step {want}"), WAIT, || {
        let o = overage(edge, id);
        (o["step"] == want).then_some(o)
    })
}

fn wait_refused(edge: &Edge, t: &Tenant, path: &str, reason: &str) {
    eventually(&format!("GET {path} refused with {reason}"), WAIT, || {
        is_refused(&edge.send(&t.req("GET", path)), reason).then_some(())
    });
}

// issue 12: an extreme overage skips the ladder (disabled at once, no clock moved); under
// the factor again the ladder's own step holds; under the plan, normal
#[test]
fn an_extreme_overage_skips_the_ladder() {
    let edge = Edge::start(config("2030-03-01T00:00:00Z"));
    let engine = edge.engine();
    let a = edge.tenant("a");
    assert_eq!(edge.send(&a.req("PUT", "/first")).status, 200);
    let prefix = e2e::prefix_of(engine, "first");
    fill_past(&edge, &a, "first", &prefix, DISK);
    wait_step(&edge, "a", "notice");
    assert_eq!(edge.send(&a.req("PUT", "/second")).status, 200);
    fill_past(&edge, &a, "second", &prefix, 2 * DISK);

    // Over twice the plan's disk: disabled at the same instant, ten days early.
    let o = wait_step(&edge, "a", "disabled");
    assert_eq!(o["extreme"], true, "{o}");
    assert_eq!(o["since"], "2030-03-01T00:00:00Z");
    assert_eq!(o["step_at"], "2030-03-01T00:00:00Z");
    wait_refused(
        &edge,
        &a,
        "/first/_count",
        "Cluster Disabled: usage far over the plan",
    );
    let r = edge.send(&a.req("GET", "/first/_count"));
    let why = r.json()["error"]["reason"].as_str().unwrap().to_string();
    assert!(why.contains("the plan allows 65536"), "{why}");
    assert!(why.contains("more than 2x its disk"), "{why}");
    assert!(
        why.contains("disabled at once on 2030-03-01T00:00:00Z"),
        "{why}"
    );

    // The operator drops the second index: over the plan, under the factor, still on day
    // one: the ladder's step is a notice, so the cluster is writable again.
    let r = direct(engine, "DELETE", &format!("/{prefix}second"), None);
    assert_eq!(r.status, 200);
    let o = wait_step(&edge, "a", "notice");
    assert_eq!(o["extreme"], false);
    assert_eq!(o["since"], "2030-03-01T00:00:00Z", "the same overage");
    eventually("a writable again", WAIT, || {
        (probe_update(&edge, &a).status == 404).then_some(())
    });
    // And the first: under the plan, the overage ends.
    let r = direct(engine, "DELETE", &format!("/{prefix}first"), None);
    assert_eq!(r.status, 200);
    eventually("the overage over", WAIT, || {
        overage(&edge, "a").is_null().then_some(())
    });

    let steps = edge.admin().overage_steps("a");
    let s = |v: &[(&str, bool, &str)]| -> Vec<(String, bool, String)> {
        v.iter()
            .map(|(a, b, c)| (a.to_string(), *b, c.to_string()))
            .collect()
    };
    assert_eq!(
        steps,
        s(&[
            ("notice", false, "normal"),
            ("disabled", true, "disabled"),
            ("notice", false, "normal"),
            ("normal", false, "normal"),
        ])
    );
}

// issue 12: notices go to the webhook without ever blocking the request path, the admin API
// or the ladder; a failed delivery is retried with backoff, in order, at least once
#[test]
fn a_held_webhook_blocks_nothing_and_is_retried_with_backoff() {
    let (held, release) = hold();
    let (held_at_stop, release_at_stop) = hold();
    let hook = Hook::start(vec![
        held,
        Reply::Status(503),
        Reply::Status(204),
        Reply::Status(204),
        held_at_stop,
    ]);
    let billing = format!(
        "[billing]\nwebhook = \"{}\"\nwebhook_timeout = \"1h\"\n",
        hook.url()
    );
    let config = config("2030-03-01T00:00:00Z")
        .section(&billing)
        .cluster(ClusterSpec::multitenant("b", "p"));
    let edge = Edge::start(config);
    let engine = edge.engine();
    let (a, b) = (edge.tenant("a"), edge.tenant("b"));
    assert_eq!(edge.send(&a.req("PUT", "/logs")).status, 200);
    let prefix = e2e::prefix_of(engine, "logs");
    fill_past(&edge, &a, "logs", &prefix, DISK);

    // The notice's POST arrives and the receiver holds it (the timeout is an hour).
    let (status, first) = hook.got.recv_timeout(WAIT).expect("the notice's POST");
    assert_eq!((status, first["step"].as_str()), (None, Some("notice")));
    let id = first["notice_id"].as_u64().expect("notice_id");

    // Meanwhile: requests of both clusters pass, the admin API answers and changes things,
    // and the ladder's next step is committed and enforced.
    for _ in 0..20 {
        assert_eq!(edge.send(&b.req("PUT", "/probe")).status, 200);
        assert_eq!(edge.send(&b.req("DELETE", "/probe")).status, 200);
        assert_eq!(edge.send(&a.req("GET", "/logs/_count")).status, 200);
    }
    let created = edge.admin().create(json!({"plan": "p"}));
    assert!(created["id"].is_string(), "{created}");
    clock(&edge, json!({"advance": "10d"}));
    eventually("a read-only", WAIT, || {
        is_refused(&probe_update(&edge, &a), "Cluster Read-only").then_some(())
    });
    assert!(
        hook.got.try_recv().is_err(),
        "one delivery at a time: nothing else was sent"
    );

    // Released: closed unanswered, then 503, then delivered; the same notice each time,
    // after 0.5 s and then 1 s; then the read-only step's notice, in order.
    drop(release);
    let mut got: Vec<(Option<u16>, Value)> = Vec::new();
    while got.len() < 3 {
        got.push(hook.got.recv_timeout(WAIT).expect("a retry"));
    }
    let statuses: Vec<Option<u16>> = got.iter().map(|g| g.0).collect();
    assert_eq!(statuses, [Some(503), Some(204), Some(204)]);
    assert_eq!(got[0].1["notice_id"], id);
    assert_eq!(got[1].1["notice_id"], id, "delivered at the third try");
    assert_eq!(got[2].1["step"], "read-only");
    assert!(got[2].1["notice_id"].as_u64().unwrap() > id);
    let log = edge.out.text();
    let tries: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(&format!("webhook: notice {id} for cluster a not delivered")))
        .collect();
    assert_eq!(tries.len(), 2, "{log}");
    assert!(tries[0].ends_with("retrying in 500ms"), "{}", tries[0]);
    assert!(
        tries[1].ends_with("(the receiver answered 503); retrying in 1s"),
        "{}",
        tries[1]
    );

    // A stop while a delivery is held does not wait for it (the notice stays queued).
    clock(&edge, json!({"advance": "15d"}));
    let (status, last) = hook
        .got
        .recv_timeout(WAIT)
        .expect("the disabled step's POST");
    assert_eq!((status, last["step"].as_str()), (None, Some("disabled")));
    edge.signal(libc::SIGTERM);
    edge.out
        .wait_for("searchgate: stopped", WAIT)
        .unwrap_or_else(|| panic!("the stop waited for the held POST:\n{}", edge.out.text()));
    drop(release_at_stop);
}

/// A small plan at 31 cents a day in March and a big one at 10 dollars.
fn priced(config: Config) -> Config {
    config
        .section("[billing]\nusage_interval = \"1h\"\n")
        .plan(PlanSpec::new("small").with("monthly_price_cents", "3100"))
        .plan(PlanSpec::new("big").with("monthly_price_cents", "31000"))
}

fn samples_of(edge: &Edge, id: &str) -> Vec<String> {
    let v = edge
        .admin()
        .call(
            "GET",
            &format!("/v1/clusters/{id}/usage?from=2030-03-01&to=2030-04-01"),
            None,
        )
        .expect(200);
    v["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["at"].as_str().unwrap().to_string())
        .collect()
}

// issue 12: a kill -9 in the middle of the month and of an overage keeps the history
#[test]
fn kill_9_mid_month_keeps_the_history_and_the_grace_period() {
    let edge = Edge::start(priced(config("2030-03-01T00:00:00Z")));
    let engine = edge.engine();
    let a = edge.tenant("a");
    assert_eq!(edge.send(&a.req("PUT", "/logs")).status, 200);
    let prefix = e2e::prefix_of(engine, "logs");
    fill_past(&edge, &a, "logs", &prefix, DISK);
    wait_step(&edge, "a", "notice");
    eventually("a's first sample", WAIT, || {
        samples_of(&edge, "a")
            .contains(&"2030-03-01T00:00:00Z".to_string())
            .then_some(())
    });
    clock(&edge, json!({"set": "2030-03-05T00:00:00Z"}));
    let x = edge.admin().create(json!({"plan": "small"}))["id"]
        .as_str()
        .unwrap()
        .to_string();
    clock(&edge, json!({"set": "2030-03-06T12:00:00Z"}));
    edge.admin()
        .call(
            "PUT",
            &format!("/v1/clusters/{x}/plan"),
            Some(&json!({"plan": "big"})),
        )
        .expect(200);
    eventually("a sample on day six", WAIT, || {
        samples_of(&edge, "a")
            .contains(&"2030-03-06T12:00:00Z".to_string())
            .then_some(())
    });

    // kill -9, and a start two days later.
    let dir = edge.kill9();
    let edge = Edge::start_in(dir, priced(config("2030-03-08T00:00:00Z")), &[]);
    let a = edge.tenant("a");

    // The plan history: 1.5 days of small (100 cents a day), 25.5 of big (1000 a day).
    let inv = edge
        .admin()
        .call(
            "GET",
            &format!("/v1/clusters/{x}/invoice?month=2030-03"),
            None,
        )
        .expect(200);
    let lines: Vec<(&str, &str, &str, i64)> = inv["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["plan"].as_str().unwrap(),
                l["from"].as_str().unwrap(),
                l["to"].as_str().unwrap(),
                l["amount_cents"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        lines,
        [
            ("small", "2030-03-05T00:00:00Z", "2030-03-06T12:00:00Z", 150),
            (
                "big",
                "2030-03-06T12:00:00Z",
                "2030-04-01T00:00:00Z",
                25_500
            ),
        ]
    );
    assert_eq!(inv["total_cents"], 25_650);

    // The usage samples and the audit log from before the crash.
    let kept = samples_of(&edge, "a");
    for at in ["2030-03-01T00:00:00Z", "2030-03-06T12:00:00Z"] {
        assert!(kept.contains(&at.to_string()), "{at}: {kept:?}");
    }
    let audit = edge
        .admin()
        .call("GET", &format!("/v1/audit?cluster={x}"), None)
        .expect(200);
    let actions: Vec<&str> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert!(actions.contains(&"cluster.create") && actions.contains(&"cluster.plan"));

    // The overage still started on March 1: read-only on the 11th, not ten days from the
    // restart.
    let o = overage(&edge, "a");
    assert_eq!(
        (o["step"].as_str(), o["since"].as_str()),
        (Some("notice"), Some("2030-03-01T00:00:00Z"))
    );
    clock(&edge, json!({"set": "2030-03-11T00:00:00Z"}));
    eventually("a read-only on March 11", WAIT, || {
        is_refused(
            &probe_update(&edge, &a),
            "Cluster Read-only: usage over the plan since 2030-03-01T00:00:00Z",
        )
        .then_some(())
    });
}
