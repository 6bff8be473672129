//! The commands of docs/*.md, run as written against a first-run `searchgate serve`
//! (issue 32, "the README and the docs are tested"): the load test against a cluster URL
//! (docs/loadtest.md, with Debian's wrk, installed when missing), the metrics guide's
//! commands (docs/metrics.md), and the tools' behaviour when their reader goes away.
//!
//! The load test runs from a copy of `loadtest/` in a scratch directory (its results land
//! there, not in the checkout), with a `cargo` on PATH that only records what it was asked
//! to build, and `CARGO_TARGET_DIR` naming a directory whose `release/searchgate` is the
//! binary under test: the runner runs exactly as for a user, and the test sees that a run
//! against a cluster URL builds only `searchgate`.

use crate::support::docs::{blocks, commands, section, shown, Shell};
use crate::support::e2e::{eventually, Edge};
use crate::support::{installs, repo_root};

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const LOADTEST_MD: &str = include_str!("../../docs/loadtest.md");
const METRICS_MD: &str = include_str!("../../docs/metrics.md");

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The banner's `https://user:pass@localhost:PORT`.
fn demo_url(edge: &Edge) -> String {
    let url = edge
        .out
        .wait_for("(routed by username)", std::time::Duration::from_secs(30))
        .expect("the banner's localhost URL");
    url.split_whitespace().next().unwrap().to_string()
}

/// `loadtest/` copied into `dir`, a recording `cargo` and a target dir holding the binary:
/// the shell that runs the docs' load-test commands there.
fn loadtest_shell(dir: &Path) -> Shell {
    let lt = dir.join("loadtest");
    std::fs::create_dir_all(&lt).unwrap();
    for f in std::fs::read_dir(repo_root().join("loadtest")).unwrap() {
        let p = f.unwrap().path();
        if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("sh" | "py" | "lua")
        ) {
            std::fs::copy(&p, lt.join(p.file_name().unwrap())).unwrap();
        }
    }
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let cargo = bin.join("cargo");
    std::fs::write(
        &cargo,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\n",
            dir.join("cargo.log").display()
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&cargo)
        .status()
        .unwrap();
    let release = dir.join("target/release");
    std::fs::create_dir_all(&release).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_searchgate"), release.join("searchgate"))
        .unwrap();
    let mut shell = Shell::new(dir);
    let path = std::env::var("PATH").unwrap_or_default();
    shell.set("PATH", &format!("{}:{path}", bin.display()));
    shell.set(
        "CARGO_TARGET_DIR",
        &dir.join("target").display().to_string(),
    );
    shell
}

/// The one results directory a run left (`loadtest/results/<time>/`), then removed so the
/// next run's is the only one again.
fn take_results(dir: &Path) -> PathBuf {
    let results = dir.join("loadtest/results");
    let runs: Vec<PathBuf> = std::fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let kept = dir.join(format!("run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&kept);
    std::fs::rename(&runs[0], &kept).unwrap();
    kept
}

/// `curl` with the demo cluster's credentials, through the edge's CA.
fn curl(shell: &Shell, url: &str, args: &str) -> Value {
    let o = shell.run(&format!("curl -s --cacert data/ca.pem {args} '{url}'"), 30);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", shown(&o)))
}

/// The `p50 Xms p99 Yms p99.9 Zms` of a runner's round line, as printed.
fn printed_percentiles(line: &str) -> [String; 3] {
    let after = |key: &str| {
        line.split(&format!("{key} "))
            .nth(1)
            .and_then(|r| r.split("ms").next())
            .unwrap_or_else(|| panic!("{key} in {line}"))
            .to_string()
    };
    [after("p50"), after("p99"), after("p99.9")]
}

// issue 32: the load test against a cluster URL, as docs/loadtest.md writes it: checks its
// target first, counts `_bulk` item errors as failures (exit 1), prints percentiles that
// its `.hgrm` and `searchgate latency --from-wrk` repeat exactly, records only what it
// measured, and builds nothing but `searchgate`
#[test]
fn the_load_test_against_a_cluster_url_runs_as_documented() {
    installs::ensure_debian_packages("command -v wrk && command -v curl", &["wrk", "curl"]);
    let edge = Edge::first_run(tempfile::tempdir().unwrap(), |t| t);
    let url = demo_url(&edge);
    let scratch = tempfile::tempdir().unwrap();
    // The edge's CA for curl, where the commands run.
    std::fs::create_dir_all(scratch.path().join("data")).unwrap();
    std::fs::copy(
        edge.cwd().join("data/ca.pem"),
        scratch.path().join("data/ca.pem"),
    )
    .unwrap();
    let shell = loadtest_shell(scratch.path());
    let docs = commands(blocks(section(LOADTEST_MD, "## Against any cluster URL"), "sh")[0]);
    assert_eq!(docs.len(), 2, "{docs:?}");
    let as_written = |i: usize| docs[i].text.replace("https://user:pass@host:port", &url);
    let (search, bulk) = (as_written(0), as_written(1));

    // No `books` yet: refused before measuring, with the command that fixes it.
    let o = shell.run(&search, 120);
    assert_eq!(o.status.code(), Some(2), "{}", shown(&o));
    assert!(stderr(&o).contains("no index `books`"), "{}", shown(&o));
    assert!(stderr(&o).contains("curl -X PUT '"), "{}", shown(&o));

    assert_eq!(
        curl(&shell, &format!("{url}/books"), "-X PUT")["acknowledged"],
        true
    );
    let o = shell.run(&search, 120);
    assert_eq!(o.status.code(), Some(0), "{}", shown(&o));
    let out = stdout(&o);
    assert!(out.contains("median of 2 runs: "), "{out}");
    assert!(out.contains("; 0 of "), "{out}");
    let round1 = out
        .lines()
        .find(|l| l.contains("round 1: "))
        .expect("round 1");
    let printed = printed_percentiles(round1);
    let run = take_results(scratch.path());
    let hgrm = std::fs::read_to_string(run.join("search-target-round1.hgrm")).unwrap();
    let footer = hgrm.lines().find(|l| l.starts_with("#[p50 = ")).unwrap();
    for (k, v) in ["p50", "p99", "p99.9"].iter().zip(&printed) {
        assert!(footer.contains(&format!("{k} = {v},")), "{k} {v}: {footer}");
    }
    let counts = run.join("search-target-round1.counts");
    let report = Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .args(["latency", "--from-wrk", counts.to_str().unwrap()])
        .output()
        .unwrap();
    let report = stdout(&report);
    let total: Vec<&str> = report
        .lines()
        .find(|l| l.starts_with("total "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        [total[2], total[4], total[5]],
        [
            printed[0].as_str(),
            printed[1].as_str(),
            printed[2].as_str()
        ],
        "{report}"
    );
    assert!(report.contains(" requests to https://"), "{report}");
    // The rate too: requests over the run's own duration, in both.
    let rps = round1
        .split("round 1: ")
        .nth(1)
        .unwrap()
        .split(" req/s")
        .next()
        .unwrap();
    assert!(
        report.contains(&format!("\nmean {rps} req/s\n")),
        "{rps} req/s: {report}"
    );
    assert!(
        report.contains(":****@localhost:"),
        "the password is masked: {report}"
    );
    let figures: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("figures.json")).unwrap()).unwrap();
    let args = figures["args"].as_object().unwrap();
    for absent in [
        "host_congestion",
        "upstream_congestion",
        "nginx_auth",
        "drivers",
    ] {
        assert!(!args.contains_key(absent), "{absent} in {args:?}");
    }
    assert!(args["target_url"].as_str().unwrap().contains(":****@"));
    let first = &figures["results"]["search"]["runs"]["target"][0];
    for absent in ["cpu_us_per_req", "foreign_cores", "busy_cores"] {
        assert!(first.get(absent).is_none(), "{absent}: {first}");
        assert!(figures["results"]["search"]["summary"]["target"]
            .get(absent)
            .is_none());
    }
    let chart = std::fs::read_to_string(run.join("search-target.svg")).unwrap();
    let chart = roxmltree::Document::parse(&chart).unwrap();
    assert_eq!(
        chart
            .descendants()
            .filter(|n| n.has_tag_name("polyline"))
            .count(),
        2,
        "both runs on one chart"
    );
    let built = std::fs::read_to_string(scratch.path().join("cargo.log")).unwrap();
    assert!(
        built.contains("build --release --bin searchgate"),
        "{built}"
    );
    assert!(
        !built.contains("loadtest_upstream"),
        "the upstream is not built: {built}"
    );

    // Bulk: without `site`, refused; into an index that refuses every document, every
    // answer is a 200 with `"errors":true`: failures, exit 1.
    let o = shell.run(&bulk, 120);
    assert_eq!(o.status.code(), Some(2), "{}", shown(&o));
    assert!(stderr(&o).contains("no index `site`"), "{}", shown(&o));
    let strict = r#"{"mappings":{"dynamic":"strict","properties":{"x":{"type":"keyword"}}}}"#;
    let put = format!("-X PUT -H 'Content-Type: application/json' -d '{strict}'");
    assert_eq!(
        curl(&shell, &format!("{url}/site"), &put)["acknowledged"],
        true
    );
    let o = shell.run(&bulk, 120);
    assert_eq!(o.status.code(), Some(1), "{}", shown(&o));
    let out = stdout(&o);
    assert!(out.contains("FAILED: "), "{out}");
    assert!(out.contains("_bulk answers with item errors"), "{out}");
    assert!(!out.contains("; 0 of "), "{out}");
    take_results(scratch.path());
    // An index that takes them: no failure.
    assert_eq!(
        curl(&shell, &format!("{url}/site"), "-X DELETE")["acknowledged"],
        true
    );
    assert_eq!(
        curl(&shell, &format!("{url}/site"), "-X PUT")["acknowledged"],
        true
    );
    let o = shell.run(&bulk, 120);
    assert_eq!(o.status.code(), Some(0), "{}", shown(&o));
    assert!(stdout(&o).contains("; 0 of "), "{}", shown(&o));

    metrics_guide(&edge);
}

/// docs/metrics.md's first block, in the edge's directory (the demo had the load above).
fn metrics_guide(edge: &Edge) {
    let shell = Shell::new(edge.cwd());
    let admin = edge.admin().url.clone();
    let mut prefix = String::new();
    for cmd in commands(blocks(METRICS_MD, "sh")[0]) {
        let text = cmd.text.replace("http://127.0.0.1:9900", &admin);
        if text.starts_with("TOKEN=") {
            prefix = format!("{text}; ");
            continue;
        }
        let o = shell.run(&format!("{prefix}{text}"), 60);
        let out = stdout(&o);
        let ok = if text.ends_with("/metrics") {
            out.contains("searchgate_requests_total{cluster=\"demo\"")
        } else if text.contains("latency?window=5m") {
            let v: Value = serde_json::from_str(&out).unwrap_or_default();
            v["window_secs"] == 300 && v["total"]["count"].as_u64() > Some(0)
        } else if text.contains("latency demo --window 15m --plot demo.svg") {
            o.status.success()
                && out
                    .lines()
                    .nth(1)
                    .is_some_and(|l| l.contains("the last 15m"))
                && roxmltree::Document::parse(
                    &std::fs::read_to_string(edge.cwd().join("demo.svg")).unwrap(),
                )
                .is_ok()
        } else if text.contains("plan --documents") {
            matches!(o.status.code(), Some(0 | 1))
                && out.contains("\nplan ")
                && stderr(&o).contains("cluster demo: ")
        } else {
            panic!("docs/metrics.md command without a check: {text}")
        };
        assert!(ok, "`{text}`: {}", shown(&o));
    }
}

/// `searchgate ARGS` in `dir` writing into a pipe whose reader is already gone.
fn into_closed_pipe(dir: &Path, args: &[&str]) -> Output {
    let mut fds = [0; 2];
    // SAFETY: `pipe` fills the two-element array with two new descriptors (checked).
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just created here and nothing else owns them.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    let child = Command::new(env!("CARGO_BIN_EXE_searchgate"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.wait_with_output().unwrap()
}

// issue 32: a closed pipe ends the output quietly, as for a Unix tool (killed by SIGPIPE,
// nothing on stderr), never a panic with status 101
#[test]
fn the_tools_end_quietly_when_their_reader_goes_away() {
    let edge = Edge::first_run(tempfile::tempdir().unwrap(), |t| t);
    let url = demo_url(&edge);
    // Some traffic, so the latency report has lines to print.
    let shell = Shell::new(edge.cwd());
    installs::ensure_debian_packages("command -v curl", &["curl"]);
    curl(&shell, &format!("{url}/"), "");
    for args in [
        &["admin", "audit"][..],
        &["admin", "plans"],
        &["admin", "clusters", "list"],
        &["admin", "--json", "clusters", "list"],
        &["latency", "demo"],
        &[
            "plan",
            "--documents",
            "1000",
            "--bytes-per-doc",
            "100",
            "--peak-rps",
            "1",
            "--p99-ms",
            "100",
        ],
        &["load-site", "--print-template"],
    ] {
        let o = into_closed_pipe(edge.cwd(), args);
        assert_eq!(
            o.status.signal(),
            Some(libc::SIGPIPE),
            "{args:?}: {}",
            shown(&o)
        );
        assert_eq!(stderr(&o), "", "{args:?}: quiet");
    }
    // And as a shell pipeline: the pipeline succeeds and nothing is printed on stderr.
    for pipeline in ["admin audit | head -1", "latency demo | true"] {
        let o = shell.run(&format!("cargo run --release -- {pipeline}"), 30);
        assert!(o.status.success(), "{pipeline}: {}", shown(&o));
        assert_eq!(stderr(&o), "", "{pipeline}");
    }
}

// issue 32: a tenant's `_cat` tables answer for the tenant, or the refusal says what to
// use and names no path the edge made (the tenant's index pattern is the edge's)
#[test]
fn a_tenants_cat_tables_answer_for_it_or_say_what_to_use() {
    installs::ensure_debian_packages("command -v curl", &["curl"]);
    let edge = Edge::first_run(tempfile::tempdir().unwrap(), |t| t);
    let url = demo_url(&edge);
    let shell = Shell::new(edge.cwd());
    let settings = r#"{"settings":{"number_of_shards":2,"number_of_replicas":0}}"#;
    let put = format!("-X PUT -H 'Content-Type: application/json' -d '{settings}'");
    assert_eq!(
        curl(&shell, &format!("{url}/books"), &put)["acknowledged"],
        true
    );
    let text = |path: &str| {
        let o = shell.run(&format!("curl -s --cacert data/ca.pem '{url}{path}'"), 30);
        stdout(&o)
    };
    let shards = text("/_cat/shards?v");
    let rows: Vec<Vec<&str>> = shards
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0][..4],
        ["index", "shard", "prirep", "state"],
        "{shards}"
    );
    assert_eq!(rows.len(), 3, "two primaries of `books` only: {shards}");
    assert!(
        rows[1..]
            .iter()
            .all(|r| r[0] == "books" && r[3] == "STARTED"),
        "{shards}"
    );
    let json = curl(&shell, &format!("{url}/_cat/shards/books?format=json"), "");
    assert_eq!(json.as_array().map(Vec::len), Some(2), "{json}");

    let health = curl(&shell, &format!("{url}/_cat/health"), "");
    assert_eq!(health["status"], 501, "{health}");
    let reason = health["error"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("[_cat/health]") && reason.contains("GET /_cluster/health"),
        "{reason}"
    );
    assert_eq!(
        curl(&shell, &format!("{url}/_cluster/health"), "")["status"],
        "green"
    );

    let segments = curl(&shell, &format!("{url}/_cat/segments"), "");
    assert_eq!(segments["status"], 400, "{segments}");
    assert_eq!(
        segments["error"]["reason"],
        "no handler found for uri [/_cat/segments] and method [GET]"
    );
}

const README: &str = include_str!("../../README.md");
const LOAD_SITE_MD: &str = include_str!("../../docs/load-site.md");

// issue 32: the README's "Loading a Hugo site" and docs/load-site.md's walk-through, with
// Debian's Hugo and the fixture site as `./my-site`: the dry run piped into `head` ends
// quietly, the load prints what the guide shows, the search finds the pages
#[test]
fn the_hugo_site_guides_run_as_written() {
    crate::support::hugo::ensure_hugo();
    installs::ensure_debian_packages("command -v curl", &["curl"]);
    let edge = Edge::first_run(tempfile::tempdir().unwrap(), |t| t);
    let url = demo_url(&edge);
    let site = crate::support::hugo::fixture_site();
    let copied = Command::new("cp")
        .arg("-r")
        .arg(&site)
        .arg(edge.cwd().join("my-site"))
        .status()
        .unwrap();
    assert!(copied.success());
    let mut shell = Shell::new(edge.cwd());

    // docs/load-site.md step 3, against the demo (the loader reads $SEARCHGATE_URL).
    shell.set("SEARCHGATE_URL", &url);
    let guide = section(LOAD_SITE_MD, "## Walk-through");
    let sh = blocks(guide, "sh");
    let dry = &commands(sh[1])[0].text;
    assert!(dry.ends_with("--dry-run | head -4"), "{dry}");
    let o = shell.run(dry, 120);
    assert!(o.status.success(), "{}", shown(&o));
    assert_eq!(stdout(&o).lines().count(), 4, "{}", shown(&o));
    assert!(
        !stderr(&o).contains("panicked") && !stderr(&o).contains("Broken pipe"),
        "{}",
        shown(&o)
    );

    // The README's section, as written (the banner's URL for the placeholder).
    let s = section(README, "### Loading a Hugo site");
    for cmd in commands(blocks(s, "sh")[0]) {
        let text = cmd.text.replace("https://user:pass@localhost:9243", &url);
        if let Some(rest) = text.strip_prefix("export ") {
            let (k, v) = rest.split_once('=').unwrap();
            shell.set(k, v.trim_matches('\''));
            continue;
        }
        let o = shell.run(&text, 120);
        let out = stdout(&o);
        if text.contains("load-site ./my-site") {
            // The guide's example output, digits masked (timings and sizes vary).
            let want = blocks(guide, "text")[0]
                .lines()
                .map(str::trim)
                .collect::<Vec<_>>()
                .join("\n");
            // What the terminal shows: the progress (stderr), then the summary (stdout).
            let shown_on_terminal = format!("{}{out}", stderr(&o));
            crate::support::docs::check_output(&want, &shown_on_terminal)
                .unwrap_or_else(|e| panic!("{e}\n{}", shown(&o)));
        } else if text.starts_with("curl ") {
            let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
            assert!(v["hits"]["total"]["value"].as_u64() > Some(0), "{v}");
        } else {
            panic!("README command without a check: {text}");
        }
    }
    load_site_guide_rest(&shell);
}

/// docs/load-site.md's step 6 (the search) and "Sites built elsewhere" as written, against
/// the embedded default: with `--cacert data/ca.pem`, as step 4 tells its reader, and the
/// config lines the template prints added to the site's config, as its comment says.
fn load_site_guide_rest(shell: &Shell) {
    let ca = "--cacert data/ca.pem";
    let guide = section(LOAD_SITE_MD, "## Walk-through");
    let search = &commands(blocks(guide, "sh")[3])[0].text;
    assert!(search.starts_with("curl -s "), "{search}");
    let o = shell.run(
        &search.replacen("curl -s ", &format!("curl -s {ca} "), 1),
        60,
    );
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", shown(&o)));
    assert!(v["hits"]["total"]["value"].as_u64() > Some(0), "{v}");

    let cmds = commands(blocks(section(LOAD_SITE_MD, "## Sites built elsewhere"), "sh")[0]);
    assert_eq!(cmds.len(), 3, "{cmds:?}");
    assert!(cmds[0]
        .text
        .ends_with("> my-site/layouts/index.searchgatepages.json"));
    let o = shell.run(&cmds[0].text, 60);
    assert!(o.status.success(), "{}", shown(&o));
    // The reader's step: the lines the template's comment gives, into the site config.
    let template =
        std::fs::read_to_string(shell.dir.join("my-site/layouts/index.searchgatepages.json"))
            .unwrap();
    let lines = template
        .split("add to your site config:\n\n")
        .nth(1)
        .and_then(|t| t.split("\n\n").next())
        .expect("the config lines in the template's comment");
    let config = shell.dir.join("my-site/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push('\n');
    text.push_str(lines);
    text.push('\n');
    std::fs::write(&config, text).unwrap();
    let o = shell.run(&cmds[1].text, 120);
    assert!(o.status.success(), "{}", shown(&o));
    assert!(shell
        .dir
        .join("my-site/public/searchgate-pages.json")
        .exists());
    let o = shell.run(&format!("{} {ca}", cmds[2].text), 120);
    assert!(o.status.success(), "{}", shown(&o));
    let out = stdout(&o);
    // The same pages as the load from the site (every page keeps its id: nothing new).
    assert!(
        out.lines().any(|l| l.starts_with("indexed 20, failed 0")),
        "{}",
        shown(&o)
    );
}

const PLANNER_MD: &str = include_str!("../../docs/planner.md");

// issue 32: docs/planner.md's two commands as written, the second measuring a sample on
// the demo cluster; their figures are the guide's rules applied to the flags given
#[test]
fn the_planner_guide_runs_as_written() {
    let edge = Edge::first_run(tempfile::tempdir().unwrap(), |t| t);
    let mut shell = Shell::new(edge.cwd());
    shell.set("SEARCHGATE_URL", &demo_url(&edge));
    let sample: String = (0..200)
        .map(|i| {
            format!(
                "{{\"title\":\"page {i}\",\"body\":\"{}\"}}\n",
                "word ".repeat(40)
            )
        })
        .collect();
    std::fs::write(edge.cwd().join("docs.ndjson"), sample).unwrap();
    let cmds = commands(blocks(PLANNER_MD, "sh")[0]);
    assert_eq!(cmds.len(), 2, "{cmds:?}");

    let o = shell.run(&cmds[0].text, 60);
    // Exit 1: none of the default plans holds 30 connections (the guide's exit statuses).
    assert_eq!(o.status.code(), Some(1), "{}", shown(&o));
    let out = stdout(&o);
    for (name, value) in [
        ("shards", "10"),                     // 5 * (1 + 1)
        ("disk", "22.4 GiB (24000000000 B)"), // 1000 B x 10M x (1 + 1), + 20%
        ("connections", "30"),                // 300 req/s x 100 ms / 1000
        ("plan", "(none)"),
    ] {
        let line = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} in\n{out}"));
        assert!(line[name.len()..].trim_start().starts_with(value), "{line}");
    }

    let o = shell.run(&cmds[1].text, 120);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", shown(&o));
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", shown(&o)));
    assert_eq!(
        v["shards"], 60,
        "1 * (1 + 1) per index, one a day for 30 days: {v}"
    );
    assert_eq!(v["connections"], 20, "80 req/s x 250 ms / 1000: {v}");
    let measured = v["inputs"]["bytes_per_doc"]
        .as_f64()
        .or(v["inputs"]["bytes_per_doc"].as_u64().map(|n| n as f64));
    assert!(
        measured.is_some_and(|b| b > 0.0),
        "bytes per document measured on the sample: {v}"
    );
}

/// Counts as `loadtest/common.lua` writes them: `requests` at 1-3 ms, a 40 ms tail.
fn counts_file(path: &Path, label: &str, requests: u64) {
    let mut text = format!(
        "# wrk latency counts rebuilt from its percentiles: value_us count\n\
         # requests={requests} duration_us=2000000 end_unix_s=1800000000\n# label={label}\n\
         # target=https://u:****@localhost:9243\n"
    );
    text.push_str(&format!(
        "1000 {}\n3000 {}\n40000 1\n",
        requests / 2,
        requests - requests / 2 - 1
    ));
    std::fs::write(path, text).unwrap();
}

// issue 32: docs/metrics.md's `latency` commands as written (`acme` is the demo, `bravo`
// a cluster created for it), from the admin API, from the interval log the edge wrote at
// SIGTERM, and from load-test counts: each says what it covers and draws its chart
#[test]
fn the_latency_commands_of_the_metrics_guide_run_as_written() {
    installs::ensure_debian_packages("command -v curl", &["curl"]);
    let edge = Edge::first_run(tempfile::tempdir().unwrap(), |t| {
        t.replacen("[edge]\n", "[edge]\nlatency_log = true\n", 1)
    });
    let demo = demo_url(&edge);
    let bravo = edge
        .admin()
        .create(serde_json::json!({"plan": "sandbox", "name": "bravo"}));
    let bravo_id = bravo["id"].as_str().unwrap().to_string();
    let bravo_url = bravo["localhost_url"]
        .as_str()
        .expect("localhost_url")
        .to_string();
    let shell = Shell::new(edge.cwd());
    for url in [&demo, &demo, &bravo_url] {
        curl(&shell, &format!("{url}/"), "");
    }
    // A request counts once its core hands its sample over (about 100 ms after the
    // answer): wait for the hub to count all three before reading the reports.
    for (id, n) in [("demo", 2), (bravo_id.as_str(), 1)] {
        eventually(
            &format!("{n} request(s) of {id} counted"),
            std::time::Duration::from_secs(10),
            || {
                let a = edge
                    .admin()
                    .call("GET", &format!("/v1/clusters/{id}/latency"), None);
                (a.body["total"]["count"].as_u64() == Some(n)).then_some(())
            },
        );
    }
    for (name, n) in [("run", 1000), ("r1", 1000), ("r2", 2000), ("r3", 3000)] {
        counts_file(&edge.cwd().join(format!("{name}.counts")), name, n);
    }
    let block = section(METRICS_MD, "## The `latency` command");
    let cmds = commands(blocks(block, "sh")[0]);
    assert_eq!(cmds.len(), 6, "{cmds:?}");
    let as_written = |t: &str| t.replace("acme", "demo").replace("bravo", &bravo_id);
    let svg = |name: &str| svg_in(edge.cwd(), name);
    // From the running edge's API first.
    let o = shell.run(&as_written(&cmds[0].text), 60);
    assert!(o.status.success(), "{}", shown(&o));
    assert!(
        stdout(&o).starts_with("demo: 2 requests\n"),
        "{}",
        shown(&o)
    );
    assert_eq!(svg("demo.svg"), ["total", "upstream", "queue"]);
    let o = shell.run(&as_written(&cmds[1].text), 60);
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", shown(&o)));
    assert_eq!(
        (v["cluster"].as_str(), v["total"]["count"].as_u64()),
        (Some("demo"), Some(2))
    );
    let o = shell.run(&as_written(&cmds[2].text), 60);
    assert!(o.status.success(), "{}", shown(&o));
    assert!(
        stdout(&o).contains(&format!("\n{bravo_id}: 1 requests\n")),
        "{}",
        shown(&o)
    );
    assert_eq!(
        svg("both.svg")[..4],
        [
            "demo total",
            "demo upstream",
            "demo queue",
            &format!("{bravo_id} total")
        ]
    );
    // The interval log, written when the edge stops.
    let dir = edge.stop();
    let shell = Shell::new(dir.path());
    let o = shell.run(&as_written(&cmds[3].text), 60);
    assert!(o.status.success(), "{}", shown(&o));
    assert!(
        stdout(&o).starts_with("demo: 2 requests\n"),
        "{}",
        shown(&o)
    );
    let o = shell.run(&as_written(&cmds[4].text), 60);
    assert!(o.status.success(), "{}", shown(&o));
    // A load test times whole requests: no queue or upstream row (no false zeros).
    let out = stdout(&o);
    assert!(out.contains("\ntotal "), "{out}");
    assert!(
        !out.contains("\nqueue ") && !out.contains("\nupstream "),
        "{out}"
    );
    assert!(out.contains("whole requests only"), "{out}");
    let hgrm = std::fs::read_to_string(dir.path().join("run.hgrm")).unwrap();
    assert!(hgrm.lines().any(|l| l.starts_with("#[p50 = ")), "{hgrm}");
    assert_eq!(svg_in(dir.path(), "run.svg"), ["total"]);
    let o = shell.run(&as_written(&cmds[5].text), 60);
    assert!(o.status.success(), "{}", shown(&o));
    assert_eq!(
        svg_in(dir.path(), "runs.svg"),
        ["r1 total", "r2 total", "r3 total"]
    );
}

/// The `data-series` of the polylines of the SVG `dir/name`.
fn svg_in(dir: &Path, name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join(name)).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .filter_map(|n| n.attribute("data-series").map(str::to_string))
        .collect()
}
