//! End-to-end: `searchgate admin` against a running edge (issue 11, "CLI"): human tables
//! by default, the API's JSON with `--json` (a created cluster's credentials and full URL
//! once), and a non-zero exit with the API's message on failure.

use crate::support::e2e;

use std::process::{Command, Output};

use e2e::{Config, Edge, PlanSpec, Tenant};
use serde_json::Value;

/// Runs `searchgate admin --url .. --token-file .. <args>`.
fn cli(edge: &Edge, args: &[&str]) -> Output {
    let admin = edge.admin();
    let token = edge.dir.path().join("edge").join("admin.token");
    assert_eq!(std::fs::read_to_string(&token).unwrap().trim(), admin.token);
    Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .args(["admin", "--url", &admin.url, "--token-file"])
        .arg(&token)
        .args(args)
        .current_dir(edge.dir.path()) // no ./data here: the flags must be what is used
        .output()
        .expect("run searchgate admin")
}

fn ok(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

#[test]
fn the_cli_drives_every_command() {
    let config = Config::new()
        .with_admin()
        .plan(PlanSpec::new("small"))
        .plan(PlanSpec::new("big"));
    let edge = Edge::start(config);

    let created: Value = serde_json::from_str(&ok(&cli(
        &edge,
        &[
            "clusters", "create", "--plan", "small", "--name", "docs", "--json",
        ],
    )))
    .unwrap();
    let id = created["id"].as_str().unwrap().to_string();
    let url = created["url"].as_str().unwrap();
    let (user, pass) = (
        created["username"].as_str().unwrap(),
        created["password"].as_str().unwrap(),
    );
    assert!(
        url.starts_with(&format!("http://{user}:{pass}@docs-")),
        "{url}"
    );
    let t = Tenant {
        host: format!("{}.local.localhost", created["hostname"].as_str().unwrap()),
        user: user.into(),
        pass: pass.into(),
    };
    assert_eq!(edge.send(&t.req("GET", "/")).status, 200);

    let table = ok(&cli(&edge, &["clusters", "list"]));
    let header = table.lines().next().unwrap();
    assert!(
        header.starts_with("ID") && header.contains("STATE") && header.contains("PLAN"),
        "{table}"
    );
    assert!(table.contains(&id) && table.contains("running"), "{table}");
    let shown = ok(&cli(&edge, &["clusters", "show", &id]));
    assert!(shown.contains("plan            small"), "{shown}");
    assert!(!shown.contains(pass), "no password after the create");

    ok(&cli(&edge, &["plan", &id, "big"]));
    let out = ok(&cli(
        &edge,
        &[
            "mode",
            &id,
            "maintenance",
            "--reason",
            "reindexing",
            "--until",
            "10m",
        ],
    ));
    assert!(
        out.contains("maintenance") && out.contains("reindexing"),
        "{out}"
    );
    let rotated = ok(&cli(&edge, &["rotate", &id, "--grace", "1m"]));
    assert!(
        rotated.contains("password") && rotated.contains("shown once"),
        "{rotated}"
    );
    assert!(ok(&cli(&edge, &["plans"])).contains("big"));
    let audit = ok(&cli(&edge, &["audit"]));
    for action in [
        "cluster.create",
        "cluster.plan",
        "cluster.mode",
        "cluster.credentials",
    ] {
        assert!(audit.contains(action), "{audit}");
    }

    let failed = cli(&edge, &["plan", &id, "gold"]);
    assert!(!failed.status.success());
    let err = String::from_utf8_lossy(&failed.stderr);
    assert!(err.contains("400: no plan `gold`"), "{err}");
    let failed = cli(&edge, &["clusters", "show", "nope"]);
    assert!(String::from_utf8_lossy(&failed.stderr).contains("404: no cluster `nope`"));

    ok(&cli(&edge, &["clusters", "delete", &id]));
    let after = ok(&cli(&edge, &["clusters", "list"]));
    assert!(!after.contains(&id), "{after}");
}
