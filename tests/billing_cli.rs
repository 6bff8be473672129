//! End-to-end: the README's billing walk-through with the real binary and the CLI alone
//! (issue 12, "Done when"): create a cluster, change its plan twice, delete it, read its
//! invoice (table, `--json`, `--csv`) and the account's month. The test moves the control
//! plane's clock between the steps (`[admin] test_clock`), so every amount is known to the
//! cent; a second run on the system clock checks the same walk-through as a newcomer meets
//! it (seconds apart), where the lines must still add up.

#[path = "support/e2e/mod.rs"]
mod e2e;

use std::process::{Command, Output};

use e2e::{Config, Edge, PlanSpec};
use serde_json::{json, Value};

/// The plans of the embedded default (README): sandbox free, standard $29, business $99.
fn plans(config: Config) -> Config {
    config
        .plan(PlanSpec::new("sandbox").with("monthly_price_cents", "0"))
        .plan(PlanSpec::new("standard").with("monthly_price_cents", "2900"))
        .plan(PlanSpec::new("business").with("monthly_price_cents", "9900"))
}

/// `searchgate admin --url .. --token-file .. <args>`; its stdout (must succeed).
fn cli(edge: &Edge, args: &[&str]) -> String {
    let admin = edge.admin();
    let token = edge.dir.path().join("edge").join("admin.token");
    let o: Output = Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .args(["admin", "--url", &admin.url, "--token-file"])
        .arg(&token)
        .args(args)
        .output()
        .expect("run searchgate admin");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{args:?}: {out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn set_clock(edge: &Edge, at: &str) {
    edge.admin()
        .call("POST", "/v1/test/clock", Some(&json!({ "set": at })))
        .expect(200);
}

/// The walk-through's steps; `at` moves the clock before each (or not, when `None`).
fn walk(edge: &Edge, at: [Option<&str>; 4]) -> String {
    let clock = |i: usize| {
        if let Some(t) = at[i] {
            set_clock(edge, t);
        }
    };
    clock(0);
    let created: Value = serde_json::from_str(&cli(
        edge,
        &[
            "clusters", "create", "--plan", "sandbox", "--name", "shop", "--json",
        ],
    ))
    .unwrap();
    let id = created["id"].as_str().unwrap().to_string();
    clock(1);
    cli(edge, &["plan", &id, "standard"]);
    clock(2);
    cli(edge, &["plan", &id, "business"]);
    clock(3);
    cli(edge, &["clusters", "delete", &id]);
    id
}

// issue 12: with the CLI alone, create, change plan twice, delete, read a correct invoice
#[test]
fn the_readme_walk_through_gives_a_correct_invoice() {
    let config = plans(Config::new().admin_key("test_clock", "\"2030-03-01T00:00:00Z\""));
    let edge = Edge::start(config);
    let id = walk(
        &edge,
        [
            Some("2030-03-10T09:00:00Z"),
            Some("2030-03-12T09:00:00Z"),
            Some("2030-03-20T17:30:00Z"),
            Some("2030-03-28T00:00:00Z"),
        ],
    );
    let v: Value = serde_json::from_str(&cli(
        &edge,
        &["invoice", &id, "--month", "2030-03", "--json"],
    ))
    .unwrap();
    let lines: Vec<(&str, &str, &str, &str, u64, i64)> = v["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["kind"].as_str().unwrap(),
                l["plan"].as_str().unwrap(),
                l["from"].as_str().unwrap(),
                l["to"].as_str().unwrap(),
                l["seconds"].as_u64().unwrap(),
                l["amount_cents"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        lines,
        vec![
            (
                "charge",
                "sandbox",
                "2030-03-10T09:00:00Z",
                "2030-03-12T09:00:00Z",
                172_800,
                0
            ),
            // 2900 * 721800 / 2678400 = 781.52 -> 782
            (
                "charge",
                "standard",
                "2030-03-12T09:00:00Z",
                "2030-03-20T17:30:00Z",
                721_800,
                782
            ),
            // 9900 * 973800 / 2678400 = 3599.39 -> 3599
            (
                "charge",
                "business",
                "2030-03-20T17:30:00Z",
                "2030-04-01T00:00:00Z",
                973_800,
                3599
            ),
            // 9900 * 345600 / 2678400 = 1277.42 -> 1277
            (
                "credit",
                "business",
                "2030-03-28T00:00:00Z",
                "2030-04-01T00:00:00Z",
                345_600,
                -1277
            ),
        ]
    );
    assert_eq!(v["total_cents"], 3104);

    let table = cli(&edge, &["invoice", &id, "--month", "2030-03"]);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[1],
        [
            "charge",
            "standard",
            "2030-03-12T09:00:00Z",
            "2030-03-20T17:30:00Z",
            "721800",
            "7.82"
        ],
        "{table}"
    );
    assert_eq!(rows[3].last(), Some(&"-12.77"), "{table}");
    assert_eq!(rows[4], ["total", "31.04"], "{table}");

    let csv = cli(&edge, &["invoice", &id, "--month", "2030-03", "--csv"]);
    let csv_lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        csv_lines[0],
        "cluster,kind,plan,from,to,seconds,amount_cents"
    );
    assert_eq!(
        csv_lines[4],
        format!("{id},credit,business,2030-03-28T00:00:00Z,2030-04-01T00:00:00Z,345600,-1277")
    );
    assert_eq!(csv_lines[5], format!("{id},total,,,,,3104"));

    let month = cli(&edge, &["invoices", "--month", "2030-03"]);
    assert!(
        month.contains("month 2030-03: 1 cluster(s), total 31.04"),
        "{month}"
    );
    let failed = Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .args([
            "admin",
            "--url",
            &edge.admin().url,
            "invoice",
            &id,
            "--csv",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(!failed.status.success(), "--csv and --json conflict");
}

// The same walk-through on the system clock, seconds apart: the lines follow each other,
// their seconds and amounts follow the rule, and charge minus credit is what was used.
#[test]
fn the_walk_through_on_the_system_clock() {
    let edge = Edge::start(plans(Config::new().with_admin()));
    let id = walk(&edge, [None; 4]);
    let v: Value = serde_json::from_str(&cli(&edge, &["invoice", &id, "--json"])).unwrap();
    let lines = v["lines"].as_array().unwrap();
    let kinds: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l["kind"].as_str().unwrap(), l["plan"].as_str().unwrap()))
        .collect();
    // A walk-through across a month's end would split the lines; not worth the flake.
    assert_eq!(
        kinds,
        [
            ("charge", "sandbox"),
            ("charge", "standard"),
            ("charge", "business"),
            ("credit", "business")
        ]
    );
    assert_eq!(lines[0]["to"], lines[1]["from"]);
    assert_eq!(lines[1]["to"], lines[2]["from"]);
    assert_eq!(
        lines[2]["to"], lines[3]["to"],
        "both to the end of the month"
    );
    let total: i64 = lines
        .iter()
        .map(|l| l["amount_cents"].as_i64().unwrap())
        .sum();
    assert_eq!(v["total_cents"], total);
    let month_secs: u64 = {
        let from = humantime::parse_rfc3339(v["from"].as_str().unwrap()).unwrap();
        let to = humantime::parse_rfc3339(v["to"].as_str().unwrap()).unwrap();
        to.duration_since(from).unwrap().as_secs()
    };
    let prices = [0u64, 2900, 9900, 9900];
    for (l, price) in lines.iter().zip(prices) {
        let secs = l["seconds"].as_u64().unwrap();
        let exact = (price * secs) as f64 / month_secs as f64;
        let amount = l["amount_cents"].as_i64().unwrap().abs() as f64;
        assert!((amount - exact).abs() <= 0.5, "{l}: {exact}");
    }
    assert!(
        (0..=1).contains(&v["total_cents"].as_i64().unwrap()),
        "seconds of use: {v}"
    );
}
