//! docs/loadtest.md and docs/metrics.md's "Cost" against the load-test tools (issue 32,
//! "the docs match the tools"): every command they show for `loadtest/run.sh` and
//! `loadtest/tenancy_bench.sh` uses only options that tool's `--help` lists, and names
//! only scenarios it lists. The runs themselves are benchmarks of minutes against nginx
//! (as root, pinned to cores), not CI: their options are checked here, their figures are
//! the doc's. The commands against a cluster URL run for real in `docs_guides.rs`.

use crate::support::docs::{blocks, commands, shown};
use crate::support::repo_root;

use std::collections::BTreeSet;
use std::process::Command;

const LOADTEST_MD: &str = include_str!("../../docs/loadtest.md");
const METRICS_MD: &str = include_str!("../../docs/metrics.md");

/// What `python3 loadtest/<script> --help` prints (what `run.sh --help` and
/// `tenancy_bench.sh --help` exec once their tools are installed).
fn help(script: &str) -> String {
    let o = Command::new("python3")
        .arg(repo_root().join("loadtest").join(script))
        .arg("--help")
        .output()
        .expect("python3");
    assert!(o.status.success(), "{script} --help: {}", shown(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The `--options` a text names.
fn options(text: &str) -> BTreeSet<String> {
    text.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '[' | ']' | ',' | '=' | '`' | '(' | ')' | ';' | '\'' | '"'
            )
    })
    .map(|w| w.trim_end_matches(['.', ':']))
    .filter(|w| w.starts_with("--") && w.len() > 2)
    .map(str::to_string)
    .collect()
}

/// The scenarios a command asks for (`--scenarios a,b` or `--scenario a`).
fn scenarios(cmd: &str) -> Vec<String> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    words
        .windows(2)
        .filter(|w| w[0] == "--scenarios" || w[0] == "--scenario")
        .flat_map(|w| w[1].split(','))
        .map(str::to_string)
        .collect()
}

// issue 32: the load-test commands of the docs use options and scenarios the tools have
#[test]
fn the_load_test_commands_in_the_docs_are_ones_the_tools_take() {
    let tools = [
        ("loadtest/run.sh", help("run.py")),
        ("loadtest/tenancy_bench.sh", help("tenancy_bench.py")),
    ];
    let mut checked = 0;
    for doc in [LOADTEST_MD, METRICS_MD] {
        for block in blocks(doc, "sh") {
            for cmd in commands(block) {
                let Some((_, help)) = tools.iter().find(|(t, _)| cmd.text.starts_with(t)) else {
                    continue;
                };
                let known = options(help);
                for o in options(&cmd.text) {
                    assert!(known.contains(&o), "`{}`: {o} is not in\n{help}", cmd.text);
                }
                for s in scenarios(&cmd.text) {
                    let listed = help
                        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .any(|w| w == s);
                    assert!(listed, "`{}`: scenario {s} is not in\n{help}", cmd.text);
                }
                checked += 1;
            }
        }
    }
    // docs/loadtest.md: three run.sh lines, the two against a cluster URL, three
    // tenancy_bench.sh lines; docs/metrics.md: the cost of recording.
    assert_eq!(checked, 9);
    // And the flags its prose names for run.sh (`--nginx-auth basic`, `--perf DIR`, ...).
    let run = options(&tools[0].1);
    let cargo_or_serve = [
        "--bench",
        "--bin",
        "--release",
        // loadtest/fleet.py's (the fleet's propagation figures)
        "--changes",
        "--nodes",
        "--pause",
        "--skip-build",
        "--threads",
        "--driver",
        "--upstream",
        "--from-wrk",
    ];
    for o in options(LOADTEST_MD) {
        let tenancy = options(&tools[1].1).contains(&o);
        assert!(
            run.contains(&o) || tenancy || cargo_or_serve.contains(&o.as_str()),
            "docs/loadtest.md names {o}, which neither load-test tool takes"
        );
    }
}

#[test]
fn options_and_scenarios_are_read_from_a_command() {
    let cmd = "loadtest/run.sh --scenarios plain,tls --rounds 5 --nginx-auth=basic";
    assert_eq!(
        options(cmd).into_iter().collect::<Vec<_>>(),
        ["--nginx-auth", "--rounds", "--scenarios"]
    );
    // In prose: quoted, in parentheses, at the end of a sentence.
    assert_eq!(
        options("(`--perf DIR`, `--keep`). Then --out: x")
            .into_iter()
            .collect::<Vec<_>>(),
        ["--keep", "--out", "--perf"]
    );
    assert_eq!(scenarios(cmd), ["plain", "tls"]);
}
