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

/// The load-test scripts a text names (`loadtest/<name>.py`), with `run.py` and
/// `tenancy_bench.py` (what `run.sh` and `tenancy_bench.sh` exec).
fn scripts_named(text: &str) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = ["run.py", "tenancy_bench.py"].map(String::from).into();
    for (i, _) in text.match_indices("loadtest/") {
        let rest = &text[i + "loadtest/".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
            .collect();
        if let Some(stem) = name.strip_suffix(".py") {
            if !stem.is_empty() && !stem.contains('.') {
                names.insert(name);
            }
        }
    }
    names
}

/// The script a command runs: `loadtest/run.sh ...` is `run.py`, `tenancy_bench.sh`
/// is `tenancy_bench.py`, `python3 loadtest/X.py ...` is `X.py`.
fn script_of(cmd: &str) -> Option<String> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    match words.as_slice() {
        ["loadtest/run.sh", ..] => Some("run.py".into()),
        ["loadtest/tenancy_bench.sh", ..] => Some("tenancy_bench.py".into()),
        ["python3", script, ..] => script.strip_prefix("loadtest/").map(String::from),
        _ => None,
    }
}

// issue 32: the load-test commands of the docs use options and scenarios the tools have
#[test]
fn the_load_test_commands_in_the_docs_are_ones_the_tools_take() {
    let both = format!("{LOADTEST_MD}\n{METRICS_MD}");
    let helps: Vec<(String, String)> = scripts_named(&both)
        .into_iter()
        .map(|s| {
            let h = help(&s);
            (s, h)
        })
        .collect();
    let help_of = |script: &str| helps.iter().find(|(s, _)| s == script).map(|(_, h)| h);
    let mut checked = 0;
    for doc in [LOADTEST_MD, METRICS_MD] {
        for block in blocks(doc, "sh") {
            for cmd in commands(block) {
                let Some(script) = script_of(&cmd.text) else {
                    continue;
                };
                let help = help_of(&script)
                    .unwrap_or_else(|| panic!("`{}` runs {script}, not found", cmd.text));
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
    // At least docs/loadtest.md's run.sh, tenancy_bench.sh, fleet.py and
    // failover.py lines and docs/metrics.md's cost of recording.
    assert!(checked >= 12, "only {checked} load-test commands found");
    // The flags its prose names belong to one of the tools it names, or to the
    // `cargo`/`searchgate` commands it shows (criterion's, after `cargo bench --`).
    let cargo_or_serve = [
        "--bench",
        "--warm-up-time",
        "--measurement-time",
        "--bin",
        "--release",
        "--threads",
        "--driver",
        "--upstream",
        "--from-wrk",
    ];
    for o in options(LOADTEST_MD) {
        let taken = helps.iter().any(|(_, h)| options(h).contains(&o));
        assert!(
            taken || cargo_or_serve.contains(&o.as_str()),
            "docs/loadtest.md names {o}, which none of the load-test tools it names takes"
        );
    }
}

#[test]
fn scripts_are_read_from_a_text_and_a_command() {
    let names = scripts_named("run `loadtest/fleet.py` then loadtest/confs.py; loadtest/run.sh");
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["confs.py", "fleet.py", "run.py", "tenancy_bench.py"]
    );
    assert_eq!(
        script_of("loadtest/run.sh --rounds 3"),
        Some("run.py".into())
    );
    assert_eq!(
        script_of("python3 loadtest/failover.py --seconds 3"),
        Some("failover.py".into())
    );
    assert_eq!(script_of("cargo bench --bench nodes"), None);
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
