//! End-to-end: the README's billing walk-through (issue 12, "Done when": with the CLI alone,
//! create a cluster, change its plan twice, delete it, read a correct invoice), run as a
//! newcomer runs it: `searchgate serve` without `--config` on the embedded default, then
//! the commands of the README's "An invoice, with the CLI" block, read from README.md and
//! run as they are written (`cargo run --release --` is the binary; `ID` the id the create
//! printed; `$(date -u +%Y-%m)` the month), in the edge's directory, without flags.
//!
//! The amounts are computed here, independently of `policy::pricing`: the plans' prices as
//! `admin plans` prints them, the instants the test chose, the month's seconds, and the
//! rounding rule of docs/billing.md (each line once, half to even, to a cent) written out
//! in integers. With `[admin] test_clock` the control plane's clock is set between the
//! commands to the README's example instants, and the invoice printed must be the README's
//! example exactly; a second run on the system clock (seconds apart) checks the same
//! commands as a newcomer meets them.

use crate::support::e2e;

use std::path::Path;
use std::process::{Command, Output};
use std::time::SystemTime;

use e2e::Edge;
use serde_json::{json, Value};

const README: &str = include_str!("../../README.md");
/// The README's example: created, moved twice, deleted (then the invoice is read).
const AT: [&str; 4] = [
    "2030-03-10T09:00:00Z",
    "2030-03-12T09:00:00Z",
    "2030-03-20T17:30:00Z",
    "2030-03-28T00:00:00Z",
];
/// The example cluster id the README shows.
const README_ID: &str = "cq3k9x0m2a7bz";

/// The README's billing section.
fn section() -> &'static str {
    let s = README
        .split("### An invoice, with the CLI")
        .nth(1)
        .expect("README: an \"An invoice, with the CLI\" section");
    s.split("\n### ").next().unwrap()
}

/// The text of the first fenced block of `lang` in `text`.
fn block<'a>(text: &'a str, lang: &str) -> &'a str {
    let start = text
        .split(&format!("```{lang}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("a ```{lang} block"));
    start.split("```").next().unwrap()
}

/// The README's commands, comments dropped, each checked to be `cargo run --release --`.
fn readme_commands() -> Vec<String> {
    block(section(), "sh")
        .lines()
        .map(|l| l.split(" #").next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.strip_prefix("cargo run --release -- ")
                .unwrap_or_else(|| panic!("{l}: not `cargo run --release -- ...`"))
                .to_string()
        })
        .collect()
}

/// `searchgate ARGS` in `dir` (no `--url`, no `--token-file`); its stdout (must succeed).
fn run(dir: &Path, args: &[&str]) -> String {
    let o: Output = Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run searchgate");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{args:?}: {out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// What the README's commands printed.
struct Walk {
    id: String,
    plans: String,
    invoice: String,
}

/// Runs the README's commands in the edge's directory, the invoice's for `month`; before
/// each change (create, plan, plan, delete) the clock is set to `at`'s instant, if given.
fn walk(edge: &Edge, month: &str, at: Option<[&str; 4]>) -> Walk {
    let mut changes = 0;
    let (mut id, mut plans, mut invoice) = (None::<String>, None, None);
    for cmd in readme_commands() {
        let cmd = cmd.replace("$(date -u +%Y-%m)", month);
        let mut args: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
        assert_eq!(args[0], "admin", "{cmd}");
        let changing = matches!(args[1].as_str(), "clusters" | "plan");
        if changing {
            if let (Some(at), true) = (at, changes > 0) {
                edge.admin()
                    .call(
                        "POST",
                        "/v1/test/clock",
                        Some(&json!({ "set": at[changes] })),
                    )
                    .expect(200);
            }
            changes += 1;
        }
        for a in args.iter_mut().filter(|a| *a == "ID") {
            *a = id.clone().expect("the create comes first");
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(edge.cwd(), &argv);
        match argv[1] {
            "plans" => plans = Some(out),
            "invoice" => invoice = Some(out),
            "clusters" if argv[2] == "create" => {
                // The newcomer notes the ID from the table printed.
                let line = out.lines().find(|l| l.starts_with("id ")).expect("an id");
                id = Some(line.split_whitespace().nth(1).unwrap().to_string());
            }
            _ => {}
        }
    }
    assert_eq!(changes, 4, "create, two plan changes, delete");
    Walk {
        id: id.unwrap(),
        plans: plans.expect("admin plans"),
        invoice: invoice.expect("admin invoice"),
    }
}

/// The monthly price in cents of each plan, as `admin plans` printed them.
fn prices(plans_table: &str) -> Vec<(String, u64)> {
    let mut lines = plans_table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let col = header.iter().position(|h| *h == "CENTS/MONTH").unwrap();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (cells[0].to_string(), cells[col].parse().unwrap())
        })
        .collect()
}

fn secs(t: &str) -> u64 {
    let ms = searchgate::calendar::parse_rfc3339_millis(t).unwrap();
    ms.unsigned_abs() / 1000
}

/// docs/billing.md's rule, written here: `price x seconds / month_seconds` cents, rounded
/// once, half to even.
fn prorated(price: u64, seconds: u64, month_seconds: u64) -> i64 {
    let n = u128::from(price) * u128::from(seconds);
    let m = u128::from(month_seconds);
    let (q, r) = (n / m, n % m);
    let up = 2 * r > m || (2 * r == m && q % 2 == 1);
    i64::try_from(q + u128::from(up)).unwrap()
}

type Line = (String, String, String, String, u64, i64);

/// `(kind, plan, from, to, seconds, amount_cents)` of each line of an invoice's JSON.
fn lines_of(v: &Value) -> Vec<Line> {
    v["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let keys: Vec<&str> = l.as_object().unwrap().keys().map(String::as_str).collect();
            let mut want = vec!["amount_cents", "from", "kind", "plan", "seconds", "to"];
            let mut got = keys.clone();
            got.sort();
            want.sort();
            assert_eq!(got, want, "exactly the issue's fields: {l}");
            (
                l["kind"].as_str().unwrap().to_string(),
                l["plan"].as_str().unwrap().to_string(),
                l["from"].as_str().unwrap().to_string(),
                l["to"].as_str().unwrap().to_string(),
                l["seconds"].as_u64().unwrap(),
                l["amount_cents"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// The lines the test expects: sandbox, standard, business from the instants `at` (the
/// last charged to `end`, billing in advance), and the credit from the delete to `end`.
fn expected(at: [&str; 4], end: &str, month_seconds: u64, price: &[(String, u64)]) -> Vec<Line> {
    let price_of = |p: &str| price.iter().find(|(n, _)| n == p).unwrap().1;
    let line = |kind: &str, plan: &str, from: &str, to: &str| {
        let s = secs(to) - secs(from);
        let cents = prorated(price_of(plan), s, month_seconds);
        let amount = if kind == "credit" { -cents } else { cents };
        let t = |x: &str| x.to_string();
        (t(kind), t(plan), t(from), t(to), s, amount)
    };
    vec![
        line("charge", "sandbox", at[0], at[1]),
        line("charge", "standard", at[1], at[2]),
        line("charge", "business", at[2], end),
        line("credit", "business", at[3], end),
    ]
}

/// The invoice of `id` for `month` as JSON, through the CLI.
fn invoice_json(edge: &Edge, id: &str, month: &str) -> Value {
    let out = run(
        edge.cwd(),
        &["admin", "invoice", id, "--month", month, "--json"],
    );
    serde_json::from_str(&out).unwrap()
}

// issue 12 "Done when", spec 1.8: the README's commands with the CLI alone, the invoice to
// the cent, and the README's example output exactly
#[test]
fn the_readme_walk_through_gives_a_correct_invoice() {
    let clock = format!("[admin]\ntest_clock = \"{}\"\n", AT[0]);
    let edge = Edge::first_run(tempfile::tempdir().unwrap(), |text| {
        text.replacen("[admin]\n", &clock, 1)
    });
    let month = "2030-03";
    let walk = walk(&edge, month, Some(AT));

    // The prices the README's comment gives are the plans the newcomer's ./data has.
    let price = prices(&walk.plans);
    let comment = block(section(), "sh").lines().next().unwrap();
    for (plan, cents) in &price {
        assert!(comment.contains(&format!("{plan} {cents}")), "{comment}");
    }
    let (from, end) = ("2030-03-01T00:00:00Z", "2030-04-01T00:00:00Z");
    let month_seconds = secs(end) - secs(from);
    assert_eq!(month_seconds, 31 * 86_400);
    let want = expected(AT, end, month_seconds, &price);

    let v = invoice_json(&edge, &walk.id, month);
    assert_eq!(lines_of(&v), want);
    let total: i64 = want.iter().map(|l| l.5).sum();
    assert_eq!(v["total_cents"], total);
    assert_eq!(
        (v["from"].as_str(), v["to"].as_str()),
        (Some(from), Some(end))
    );
    // The exact price of the time it existed (created to deleted), within half a cent per
    // line.
    let exact: f64 = [(0, 1), (1, 2), (2, 3)]
        .iter()
        .map(|&(a, b)| {
            let plan = &want[a].1;
            let p = price.iter().find(|(n, _)| n == plan).unwrap().1;
            (p * (secs(AT[b]) - secs(AT[a]))) as f64 / month_seconds as f64
        })
        .sum();
    assert!(
        (total as f64 - exact).abs() <= 0.5 * 4.0,
        "{total} vs {exact}"
    );

    // What the newcomer reads is the README's example, to the character.
    let shown = block(section(), "text").replace(README_ID, &walk.id);
    let printed: Vec<&str> = walk.invoice.lines().map(str::trim_end).collect();
    let readme: Vec<&str> = shown.lines().map(str::trim_end).collect();
    assert_eq!(printed, readme, "README.md shows what the CLI prints");

    // --csv: the same lines, a total row.
    let csv = run(
        edge.cwd(),
        &["admin", "invoice", &walk.id, "--month", month, "--csv"],
    );
    let mut rows = vec!["cluster,kind,plan,from,to,seconds,amount_cents".to_string()];
    for (kind, plan, f, t, s, a) in &want {
        rows.push(format!("{},{kind},{plan},{f},{t},{s},{a}", walk.id));
    }
    rows.push(format!("{},total,,,,,{total}", walk.id));
    assert_eq!(csv.lines().collect::<Vec<_>>(), rows);

    // The account's month: the first run's demo cluster (free sandbox) and this one; and
    // --csv with --json refused.
    let all = run(edge.cwd(), &["admin", "invoices", "--month", month]);
    let money = format!("{}.{:02}", total / 100, total % 100);
    assert!(all.contains("cluster demo: invoice of 2030-03"), "{all}");
    assert!(
        all.contains(&format!("month {month}: 2 cluster(s), total {money}")),
        "{all}"
    );
    let both = Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .args(["admin", "invoice", &walk.id, "--csv", "--json"])
        .current_dir(edge.cwd())
        .output()
        .unwrap();
    assert!(!both.status.success(), "--csv and --json conflict");
}

// The same commands on the system clock, seconds apart, as a newcomer runs them: the lines
// follow each other, each is the rule's amount for its seconds, and the total is what
// the README says (a cent at most)
#[test]
fn the_walk_through_on_the_system_clock() {
    let edge = Edge::first_run(tempfile::tempdir().unwrap(), |text| text);
    let now = searchgate::calendar::rfc3339_seconds(SystemTime::now());
    let month = &now[..7];
    let walk = walk(&edge, month, None);
    let price = prices(&walk.plans);
    let v = invoice_json(&edge, &walk.id, month);
    let lines = lines_of(&v);
    let plans: Vec<(&str, &str)> = lines.iter().map(|l| (l.0.as_str(), l.1.as_str())).collect();
    // A walk-through across a month's end would split the lines; not worth the flake.
    assert_eq!(
        plans,
        [
            ("charge", "sandbox"),
            ("charge", "standard"),
            ("charge", "business"),
            ("credit", "business")
        ]
    );
    let (from, end) = (v["from"].as_str().unwrap(), v["to"].as_str().unwrap());
    assert!(from.starts_with(month));
    let month_seconds = secs(end) - secs(from);
    let at = [
        lines[0].2.as_str(),
        lines[1].2.as_str(),
        lines[2].2.as_str(),
        lines[3].2.as_str(),
    ];
    assert_eq!(lines[0].3, at[1]);
    assert_eq!(lines[1].3, at[2]);
    assert!(
        at[..].windows(2).all(|w| secs(w[0]) <= secs(w[1])),
        "{at:?}"
    );
    assert_eq!(lines, expected(at, end, month_seconds, &price));
    let total = v["total_cents"].as_i64().unwrap();
    assert_eq!(total, lines.iter().map(|l| l.5).sum::<i64>());
    assert!((0..=1).contains(&total), "seconds of use: {v}");
}
