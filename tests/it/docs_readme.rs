//! The README, run as a newcomer runs it (issue 32, "the README and the docs are tested"):
//! a first-run `searchgate serve` (no `--config`, the embedded default in `./data`, ports
//! switched to 0), then every command of the walk-through's shell blocks, read from
//! README.md and run as written with `bash` in the edge's directory: "First run" (the curl
//! walk-through), "A second cluster, with the CLI" and the dashboard functions, "Metrics
//! and latency". What a command prints is checked against the README's own example
//! output (`tests/it/support/docs.rs`: `...` and digits masked) or against what its
//! comment promises (`# 501`, `# 404 Cluster Not Found from the next request`, ...); a
//! README command without a check fails the test, so a new one cannot go unchecked.
//!
//! Substituted, as the README tells the reader to: the banner's URL for
//! `https://user:pass@localhost:9243`, the created cluster's for `https://u8w...:Zt4...`,
//! its id for `ID`, the listeners' real ports for 9243 and 9900. "An invoice, with the
//! CLI" is run the same way by `billing_cli.rs`; "Loading a Hugo site" and the docs'
//! commands by `docs_guides.rs`.

use crate::support::docs::{blocks, check_output, commands, section, shown, DocCommand, Shell};
use crate::support::e2e::Edge;
use crate::support::installs;

use std::process::Output;

use serde_json::Value;

const README: &str = include_str!("../../README.md");

/// What the walk-through learnt along the way (for substitutions and later checks).
#[derive(Default)]
struct Walk {
    /// The banner's `https://user:pass@localhost:PORT`.
    demo_url: String,
    https_port: u16,
    admin_url: String,
    /// The second cluster: id, hostname, localhost URL (before and after the rotation).
    id: String,
    hostname: String,
    url2: String,
    url2_rotated: String,
}

impl Walk {
    /// The command with the README's placeholders replaced by this run's values.
    fn substitute(&self, cmd: &str) -> String {
        let mut c = cmd
            .replace("https://user:pass@localhost:9243", &self.demo_url)
            .replace("https://u8w...:Zt4...@localhost:9243", &self.url2)
            .replace("http://127.0.0.1:9900", &self.admin_url)
            .replace(":9243", &format!(":{}", self.https_port));
        if !self.id.is_empty() {
            c = c
                .split(' ')
                .map(|w| if w == "ID" { self.id.as_str() } else { w })
                .collect::<Vec<_>>()
                .join(" ");
        }
        c
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The JSON body a curl command printed.
fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", shown(o)))
}

/// `export K='v' K2=v2`: the variables the reader's shell would keep.
fn exports(cmd: &str) -> Vec<(String, String)> {
    let rest = cmd.strip_prefix("export ").expect("an export line");
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    for c in rest.chars().chain(std::iter::once(' ')) {
        match (c, quote) {
            ('\'' | '"', None) => quote = Some(c),
            (q, Some(open)) if q == open => quote = None,
            (' ', None) => {
                if let Some((k, v)) = word.split_once('=') {
                    out.push((k.to_string(), v.to_string()));
                }
                word.clear();
            }
            (c, _) => word.push(c),
        }
    }
    out
}

/// Runs one README command (substituted) and checks it: the status its comment names, or
/// the check `specific` gives. Returns what it printed.
fn run(
    shell: &mut Shell,
    walk: &Walk,
    cmd: &DocCommand,
    specific: &dyn Fn(&str, &Output) -> bool,
) -> Output {
    let text = walk.substitute(&cmd.text);
    if text.starts_with("export ") {
        for (k, v) in exports(&text) {
            shell.set(&k, &v);
        }
        return shell.run("true", 5);
    }
    let o = shell.run(&text, 60);
    // `curl ... # 501: ...`: the answer's status. (A CLI command's comment promises what
    // later requests meet; its caller checks that.)
    let status_comment = cmd
        .comment
        .split([' ', ':'])
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| text.starts_with("curl "));
    let checked = specific(&text, &o);
    match status_comment {
        Some(want) => {
            let v = json(&o);
            assert_eq!(
                v["status"],
                want,
                "`{text}` (# {}): {}",
                cmd.comment,
                shown(&o)
            );
        }
        None => assert!(checked, "README command without a check: `{}`", cmd.text),
    }
    o
}

// issue 32: the README's walk-through, run as written, prints what the README shows
#[test]
fn the_readme_walk_through_runs_as_written() {
    installs::ensure_debian_packages("curl --version", &["curl"]);
    let edge = Edge::first_run(tempfile::tempdir().unwrap(), |text| text);
    let mut walk = Walk {
        https_port: edge.https.expect("the default has https").port(),
        admin_url: edge.admin().url.clone(),
        ..Walk::default()
    };
    let mut shell = Shell::new(edge.cwd());
    first_run(&edge, &mut shell, &mut walk);
    second_cluster(&mut shell, &mut walk);
    dashboard(&mut shell, &mut walk);
    metrics(&mut shell, &walk);
}

/// "First run": the banner as the README prints it, then the curl walk-through.
fn first_run(edge: &Edge, shell: &mut Shell, walk: &mut Walk) {
    let s = section(README, "## First run");
    let banner_doc = blocks(s, "text")[0];
    edge.out
        .wait_for("admin clusters list", std::time::Duration::from_secs(30))
        .expect("the banner's last line");
    let printed = edge.out.text();
    let start = printed.find("searchgate: driver").expect("the banner");
    let end = printed[start..]
        .find("admin clusters list")
        .map(|i| start + i + "admin clusters list".len())
        .expect("the banner's last line");
    // Masked: the I/O driver the machine has, the ports (port 0 here), and the directory
    // the test's `./data` is in (the harness names it by its full path).
    let data = edge.cwd().join("data").display().to_string();
    let banner = printed[start..end]
        .replace("driver epoll", "driver io_uring")
        .replace(&data, "./data");
    check_output(banner_doc, &banner).unwrap();
    walk.demo_url = banner
        .lines()
        .find(|l| l.contains("@localhost:") && l.contains("routed by username"))
        .and_then(|l| l.split_whitespace().next())
        .expect("the localhost URL")
        .to_string();

    let cmds = commands(blocks(s, "sh")[0]);
    assert_eq!(cmds.len(), 8, "{cmds:?}");
    for cmd in &cmds {
        run(shell, walk, cmd, &|text, o| {
            let out = stdout(o);
            if text.contains("-X PUT \"$URL/books\"") {
                json(o)["acknowledged"] == true
            } else if text.contains("books/doc/1") {
                json(o)["result"] == "created"
            } else if text.contains("_search?q=darkness") {
                out.contains("The Left Hand of Darkness")
            } else if text.contains("/_bulk") {
                json(o)["errors"] == false
            } else if text.contains("_cat/indices?v") {
                out.starts_with("health status index") && out.contains(" books ")
            } else {
                false
            }
        });
    }
}

/// "A second cluster, with the CLI": plans, a create printed as the README shows it, and
/// the new cluster used like the demo (its own indices only).
fn second_cluster(shell: &mut Shell, walk: &mut Walk) {
    let s = section(README, "### A second cluster, with the CLI");
    let sh = blocks(s, "sh");
    let created_doc = blocks(s, "text")[0];
    for cmd in commands(sh[0]) {
        let o = run(shell, walk, &cmd, &|text, o| {
            let out = stdout(o);
            if text.ends_with("admin plans") {
                // Sizes as the configuration writes them, not raw byte counts.
                out.starts_with("NAME") && out.contains("1gb") && !out.contains("1073741824")
            } else {
                text.contains("clusters create") && o.status.success()
            }
        });
        if cmd.text.contains("clusters create") {
            let out = stdout(&o);
            let field = |k: &str| {
                out.lines()
                    .find_map(|l| l.strip_prefix(&format!("{k:<15} ")))
                    .unwrap_or_else(|| panic!("no {k} in\n{out}"))
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .to_string()
            };
            walk.id = field("id");
            walk.url2 = field("localhost_url");
            walk.hostname = field("address")
                .split('@')
                .nth(1)
                .unwrap()
                .split('.')
                .next()
                .unwrap()
                .to_string();
            // Masked: the id and the host name the README shows stand for this run's.
            let masked = out
                .replace(&walk.id, "cq3k9x0m2a7bz")
                .replace(&walk.hostname, "books-4kq2ma");
            check_output(created_doc, &masked).unwrap();
        }
    }
    for cmd in commands(sh[1]) {
        run(shell, walk, &cmd, &|text, o| {
            let out = stdout(o);
            if text.contains("-X PUT \"$URL2/notes\"") {
                json(o)["acknowledged"] == true
            } else if text.contains("notes/_doc/1") {
                json(o)["result"] == "created"
            } else if text.contains("_search?q=hello") {
                out.contains("hello from the second cluster")
            } else if text.contains("_cat/indices?v") {
                // Only its own index: the demo's `books` is not there.
                out.contains(" notes ") && !out.contains(" books ")
            } else {
                false
            }
        });
    }
}

/// An update through the second cluster's URL `url`: the JSON answer.
fn update(shell: &Shell, url: &str) -> Value {
    let o = shell.run(
        &format!(
            "curl -s --cacert data/ca.pem -X POST '{url}/notes/_doc/9' -H 'Content-Type: application/json' -d '{{\"n\":1}}'"
        ),
        30,
    );
    json(&o)
}

fn search(shell: &Shell, url: &str) -> Value {
    json(&shell.run(
        &format!("curl -s --cacert data/ca.pem '{url}/notes/_search'"),
        30,
    ))
}

/// The dashboard functions, each followed by a check of what its comment promises.
fn dashboard(shell: &mut Shell, walk: &mut Walk) {
    let s = section(README, "### A second cluster, with the CLI");
    let sh = blocks(s, "sh");
    for cmd in commands(sh[2]) {
        let o = run(shell, walk, &cmd, &|text, o| {
            o.status.success() && !text.is_empty()
        });
        let out = stdout(&o);
        let words: Vec<&str> = cmd.text.split_whitespace().collect();
        // cargo run --release -- admin COMMAND [SUBCOMMAND|ID] ...
        match (words[5], words.get(6).copied()) {
            ("mode", _) if cmd.text.contains("read-only") => {
                // "updates: 403 with that reason", and no word of an overage there is not.
                let v = update(shell, &walk.url2);
                let reason = v["error"]["reason"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                assert_eq!(v["status"], 403, "{v}");
                assert!(reason.contains("quota review"), "{reason}");
                assert!(!reason.contains("overage"), "{reason}");
                assert_eq!(search(shell, &walk.url2)["hits"]["total"]["value"], 1);
            }
            ("mode", _) => {
                let v = update(shell, &walk.url2);
                assert_eq!(v["status"], 403, "{v}");
                assert!(
                    v["error"]["reason"]
                        .as_str()
                        .unwrap()
                        .starts_with("Maintenance: upgrade"),
                    "{v}"
                );
            }
            ("rotate", _) => {
                // A new pair, printed once; the old one works for the grace.
                let url = out
                    .lines()
                    .find_map(|l| l.strip_prefix("localhost_url   "))
                    .and_then(|l| l.split_whitespace().next())
                    .unwrap_or_else(|| panic!("a new localhost URL in\n{out}"));
                walk.url2_rotated = url.to_string();
                assert_ne!(walk.url2_rotated, walk.url2);
                for u in [&walk.url2, &walk.url2_rotated] {
                    assert_eq!(search(shell, u)["hits"]["total"]["value"], 1, "{u}");
                }
            }
            ("clusters", Some("show")) => {
                for want in [
                    "mode            maintenance",
                    "plan            sandbox",
                    "grace           the old credentials work until ",
                ] {
                    assert!(out.contains(want), "{want} in\n{out}");
                }
            }
            ("audit", _) => {
                let header = out.lines().next().unwrap_or_default();
                assert!(header.ends_with("CHANGE"), "{out}");
                assert!(out.contains("mode: normal -> read-only"), "{out}");
                assert!(out.contains("mode_reason: - -> quota review"), "{out}");
            }
            ("clusters", Some("delete")) => {
                // "404 Cluster Not Found from the next request", however it is addressed.
                for u in [&walk.url2, &walk.url2_rotated] {
                    let v = search(shell, u);
                    assert_eq!(v["status"], 404, "{u}: {v}");
                    assert!(
                        v["error"]["reason"]
                            .as_str()
                            .unwrap()
                            .starts_with("Cluster Not Found"),
                        "{v}"
                    );
                }
            }
            other => panic!(
                "README dashboard command without a check: {other:?} ({})",
                cmd.text
            ),
        }
    }
}

/// "Metrics and latency": the report says what it covers, the plot is drawn, Prometheus
/// text, the planner from the measured figures.
fn metrics(shell: &mut Shell, walk: &Walk) {
    let s = section(README, "### Metrics and latency");
    let dir = shell.dir.clone();
    for cmd in commands(blocks(s, "sh")[0]) {
        run(shell, walk, &cmd, &|text, o| {
            let out = stdout(o);
            if text.ends_with("latency demo") {
                let head: Vec<&str> = out.lines().take(3).collect();
                o.status.success()
                    && head[0].starts_with("demo: ")
                    && head[1].contains("UTC (")
                    && head[1].contains("the last 5m")
                    && out.contains("       Value     Percentile TotalCount 1/(1-Percentile)")
            } else if text.contains("--plot demo.svg") {
                let svg = std::fs::read_to_string(dir.join("demo.svg")).unwrap_or_default();
                let doc = roxmltree::Document::parse(&svg).expect("the plot is SVG");
                let title = doc
                    .descendants()
                    .find(|n| n.has_tag_name("title"))
                    .and_then(|n| n.text())
                    .unwrap_or_default();
                o.status.success()
                    && out
                        .lines()
                        .nth(1)
                        .is_some_and(|l| l.contains("the last 15m"))
                    && title.contains("demo: ")
                    && title.contains("req/s")
            } else if text.contains("/metrics") {
                out.contains("searchgate_requests_total{cluster=\"demo\"")
            } else if text.contains("plan --documents") {
                // Exit 0 when a plan fits, 1 when none does: both print the sizing, from
                // the demo's measured figures.
                matches!(o.status.code(), Some(0 | 1))
                    && out.contains("\nplan ")
                    && String::from_utf8_lossy(&o.stderr).contains("cluster demo: ")
            } else {
                false
            }
        });
    }
}
