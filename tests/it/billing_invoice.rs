//! End-to-end: prorated invoices (spec 1.8 "billing is prorated"; issue 12) computed from
//! the control plane's plan history, through the admin API, with the control plane's clock
//! driven by the test (`[admin] test_clock`, `POST /v1/test/clock`): a cluster created
//! mid-month, moved between plans at odd seconds, destroyed the next month; its invoices of
//! both months to the cent, as JSON and CSV; the account-wide month; and a restart in the
//! middle of a month that keeps the history.

use crate::support::e2e;

use e2e::{Config, Edge, PlanSpec};
use serde_json::{json, Value};

/// March 2030 has 2,678,400 seconds, April 2,592,000.
fn config() -> Config {
    Config::new()
        .admin_key("test_clock", "\"2030-03-01T00:00:00Z\"")
        .plan(PlanSpec::new("small").with("monthly_price_cents", "3100"))
        .plan(PlanSpec::new("big").with("monthly_price_cents", "31000"))
}

fn set_clock(edge: &Edge, at: &str) {
    let r = edge
        .admin()
        .call("POST", "/v1/test/clock", Some(&json!({ "set": at })));
    assert_eq!(r.expect(200)["now"], at);
}

fn invoice(edge: &Edge, id: &str, month: &str) -> Value {
    edge.admin()
        .call(
            "GET",
            &format!("/v1/clusters/{id}/invoice?month={month}"),
            None,
        )
        .expect(200)
}

/// `(kind, plan, from, to, seconds, amount_cents)` of each line.
fn lines(inv: &Value) -> Vec<(String, String, String, String, u64, i64)> {
    inv["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let keys: Vec<&String> = l.as_object().unwrap().keys().collect();
            assert_eq!(
                keys,
                ["plan", "from", "to", "seconds", "amount_cents", "kind"],
                "exactly the issue's names"
            );
            let s = |k: &str| l[k].as_str().unwrap().to_string();
            (
                s("kind"),
                s("plan"),
                s("from"),
                s("to"),
                l["seconds"].as_u64().unwrap(),
                l["amount_cents"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn line(
    kind: &str,
    plan: &str,
    from: &str,
    to: &str,
    secs: u64,
    cents: i64,
) -> (String, String, String, String, u64, i64) {
    (
        kind.into(),
        plan.into(),
        from.into(),
        to.into(),
        secs,
        cents,
    )
}

/// Creates a cluster on `small` at 2030-03-11, moves it to `big` at 2030-03-20T12:00:00 and
/// back to `small` at 2030-03-25T00:00:07; returns its id.
fn create_and_move(edge: &Edge) -> String {
    let admin = edge.admin();
    set_clock(edge, "2030-03-11T00:00:00Z");
    let c = admin.create(json!({"plan": "small", "name": "shop"}));
    let id = c["id"].as_str().unwrap().to_string();
    assert_eq!(c["created_at"], "2030-03-11T00:00:00Z");
    set_clock(edge, "2030-03-20T12:00:00Z");
    admin.set_plan(&id, "big");
    set_clock(edge, "2030-03-25T00:00:07Z");
    admin.set_plan(&id, "small");
    id
}

/// March: 9.5 days of small, 4.5 days and 7 s of big, then small to the end (paid ahead).
fn march_lines() -> Vec<(String, String, String, String, u64, i64)> {
    vec![
        // 3100 * 820800 / 2678400 = 950
        line(
            "charge",
            "small",
            "2030-03-11T00:00:00Z",
            "2030-03-20T12:00:00Z",
            820_800,
            950,
        ),
        // 31000 * 388807 / 2678400 = 4500.08 -> 4500
        line(
            "charge",
            "big",
            "2030-03-20T12:00:00Z",
            "2030-03-25T00:00:07Z",
            388_807,
            4500,
        ),
        // 3100 * 604793 / 2678400 = 699.99 -> 700
        line(
            "charge",
            "small",
            "2030-03-25T00:00:07Z",
            "2030-04-01T00:00:00Z",
            604_793,
            700,
        ),
    ]
}

// spec 1.8, issue 12: mid-month create, several plan changes, a delete the next month
#[test]
fn invoices_of_a_cluster_to_the_cent() {
    let edge = Edge::start(config());
    let id = create_and_move(&edge);
    let march = invoice(&edge, &id, "2030-03");
    assert_eq!(lines(&march), march_lines());
    assert_eq!(march["total_cents"], 6150);
    assert_eq!(march["month"], "2030-03");
    assert_eq!(march["cluster"], id.as_str());

    // Deleted on April 10 at 06:00: April is charged ahead, the rest credited.
    set_clock(&edge, "2030-04-10T06:00:00Z");
    edge.admin()
        .call("DELETE", &format!("/v1/clusters/{id}"), None)
        .expect(200);
    let april = invoice(&edge, &id, "2030-04");
    assert_eq!(
        lines(&april),
        vec![
            line(
                "charge",
                "small",
                "2030-04-01T00:00:00Z",
                "2030-05-01T00:00:00Z",
                2_592_000,
                3100
            ),
            // 3100 * 1792800 / 2592000 = 2144.17 -> 2144
            line(
                "credit",
                "small",
                "2030-04-10T06:00:00Z",
                "2030-05-01T00:00:00Z",
                1_792_800,
                -2144
            ),
        ]
    );
    assert_eq!(april["total_cents"], 956, "9.25 days of small");
    // Before it existed and after it was destroyed: empty invoices.
    for month in ["2030-02", "2030-05"] {
        let empty = invoice(&edge, &id, month);
        assert_eq!(empty["lines"], json!([]));
        assert_eq!(empty["total_cents"], 0);
    }

    // CSV: the same lines and a total row.
    let csv = raw_get(
        &edge,
        &format!("/v1/clusters/{id}/invoice?month=2030-04&format=csv"),
    );
    assert_eq!(
        csv,
        format!(
            "cluster,kind,plan,from,to,seconds,amount_cents\n\
             {id},charge,small,2030-04-01T00:00:00Z,2030-05-01T00:00:00Z,2592000,3100\n\
             {id},credit,small,2030-04-10T06:00:00Z,2030-05-01T00:00:00Z,1792800,-2144\n\
             {id},total,,,,,956\n"
        )
    );

    // Bad requests are refused with the reason.
    let admin = edge.admin();
    for (path, status, reason) in [
        (
            format!("/v1/clusters/{id}/invoice?month=2030-13"),
            400,
            "YYYY-MM",
        ),
        (
            format!("/v1/clusters/{id}/invoice?month=2030-04&format=xml"),
            400,
            "json or csv",
        ),
        (
            "/v1/clusters/nope/invoice?month=2030-04".to_string(),
            404,
            "no cluster",
        ),
    ] {
        let r = admin.call("GET", &path, None);
        assert_eq!(r.status, status, "{path}: {}", r.body);
        assert!(r.reason().contains(reason), "{}", r.reason());
    }
    let r = admin.call("POST", &format!("/v1/clusters/{id}/invoice"), None);
    assert_eq!(r.status, 405);
}

/// A GET of the admin API whose answer is not JSON: its body.
fn raw_get(edge: &Edge, path: &str) -> String {
    let admin = edge.admin();
    let agent = searchgate::outbound::agent(
        "test",
        std::time::Duration::from_secs(60),
        Default::default(),
    );
    let mut resp = agent
        .get(format!("{}{path}", admin.url))
        .header("Authorization", format!("Bearer {}", admin.token))
        .call()
        .unwrap();
    assert_eq!(resp.status(), 200);
    let ct = resp
        .headers()
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap();
    assert!(ct.starts_with("text/csv"), "{ct}");
    resp.body_mut().read_to_string().unwrap()
}

// issue 12: the account-wide month view, and a restart in the middle of the month keeps
// the history (plan history in the store; the clock set again after the restart)
#[test]
fn the_account_month_and_a_restart_mid_month() {
    let edge = Edge::start(config());
    let first = create_and_move(&edge);
    set_clock(&edge, "2030-03-31T00:00:00Z");
    let second = edge.admin().create(json!({"plan": "big"}))["id"]
        .as_str()
        .unwrap()
        .to_string();

    let dir = edge.stop();
    let edge = Edge::start_in(dir, config(), &[]);
    assert!(edge.out.text().contains("TEST CLOCK"));
    set_clock(&edge, "2030-03-31T12:00:00Z");
    assert_eq!(lines(&invoice(&edge, &first, "2030-03")), march_lines());

    let all = edge
        .admin()
        .call("GET", "/v1/invoices?month=2030-03", None)
        .expect(200);
    let ids: Vec<&str> = all["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cluster"].as_str().unwrap())
        .collect();
    let mut want = vec![first.as_str(), second.as_str()];
    want.sort();
    assert_eq!(ids, want, "every cluster of the month, by id");
    // big for the last day of March: 31000 / 31 = 1000
    let second_total = if ids[0] == second {
        &all["clusters"][0]
    } else {
        &all["clusters"][1]
    };
    assert_eq!(second_total["total_cents"], 1000);
    assert_eq!(all["total_cents"], 6150 + 1000);
    let csv = raw_get(&edge, "/v1/invoices?month=2030-03&format=csv");
    assert!(csv.ends_with(",total,,,,,7150\n"), "{csv}");
    assert_eq!(csv.lines().count(), 1 + 3 + 1 + 1 + 1 + 1, "{csv}");
    // A month before anything: nothing.
    let none = edge
        .admin()
        .call("GET", "/v1/invoices?month=2029-12", None)
        .expect(200);
    assert_eq!(
        (none["clusters"].clone(), none["total_cents"].clone()),
        (json!([]), json!(0))
    );
}

// The test clock exists only when the file asks for it.
#[test]
fn the_clock_endpoint_is_for_tests_only() {
    let edge = Edge::start(Config::new().with_admin());
    let r = edge
        .admin()
        .call("POST", "/v1/test/clock", Some(&json!({"advance": "1d"})));
    assert_eq!(r.status, 404, "{}", r.body);
    let edge = Edge::start(config());
    let r = edge
        .admin()
        .call("POST", "/v1/test/clock", Some(&json!({"advance": "1d"})));
    assert_eq!(r.expect(200)["now"], "2030-03-02T00:00:00Z");
    let r = edge
        .admin()
        .call("POST", "/v1/test/clock", Some(&json!({})));
    assert_eq!(r.status, 400);
}
