//! Real clients, unmodified, against the engine and through the edge: the flows of
//! `tests/clients/flow.py` (elasticsearch-py 7.17, 8 and 9, opensearch-py) and
//! `tests/clients/flow.mjs` (@elastic/elasticsearch 9, @opensearch-project/opensearch),
//! covering what issue 14 asks the engine to speak. The test installs its clients itself,
//! pinned: one Python virtualenv per elasticsearch-py major (pip, PyPI) and one
//! `node_modules` (npm) under `target/tmp/`, reused when present. A missing python3, venv,
//! node or npm fails the test loudly: it never skips.
//!
//! Through the edge the clients speak HTTPS to `searchgate serve` (its own CA, credentials
//! in the URL, routed by user name since `*.localhost` does not resolve everywhere), once to
//! a multitenant cluster and once to a single-tenant one, both on the embedded engine (spec
//! 1.6, 4, 5). What the edge does not expose is listed below, in one place: the flows check
//! that each listed feature answers 501, so a feature the edge starts passing fails here
//! until it is taken off its list.

use crate::support::engine_support;
use crate::support::installs;
use crate::support::serve;

use std::path::{Path, PathBuf};
use std::process::Command;

use engine_support::Engine;
use installs::{ensure_debian_packages, run, tmp, venv};

/// Python clients: a virtualenv each, with these pinned packages.
const PYTHON_CLIENTS: &[(&str, &[&str], &str)] = &[
    ("es7", &["elasticsearch==7.17.13"], "es"),
    (
        "es8",
        &["elasticsearch==8.19.3", "opensearch-py==3.2.0"],
        "both",
    ),
    ("es9", &["elasticsearch==9.5.1"], "es"),
];

/// Node.js clients, pinned.
const NODE_PACKAGES: &[&str] = &[
    "@elastic/elasticsearch@9.5.1",
    "@opensearch-project/opensearch@3.9.0",
];

/// What the multitenant class still does not pass (issue 10 made scroll, point in time,
/// aliases, by-query jobs, `_reindex`, templates, `_resolve/index` and `_index` values work
/// there): `_cluster/settings` updates (as on every cluster), and shard settings in
/// templates (`template_shards`: 400, since a template could otherwise give an index more
/// shards than the plan's check at creation counted; the flows then apply a template
/// without them).
const MULTITENANT_SKIP: &[&str] = &["cluster_settings", "template_shards"];

/// Endpoints the edge exposes on no cluster (spec 1.4: `_cluster/settings` updates).
/// `_reindex` is exposed since issue 10, its body read on every class: a remote source,
/// which would make the upstream open connections for the client, is refused.
const EDGE_SKIP: &[&str] = &["cluster_settings"];

/// The `node_modules` with the pinned Node.js clients.
fn node_modules() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tmp("engine-clients-node");
        let marker = dir.join("installed.txt");
        let wanted = NODE_PACKAGES.join(" ");
        if !std::fs::read_to_string(&marker).is_ok_and(|m| m == wanted) {
            ensure_debian_packages("npm --version", &["nodejs", "npm"]);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("package.json"), "{\"private\": true}\n").unwrap();
            run(
                Command::new("npm")
                    .current_dir(&dir)
                    .args([
                        "install",
                        "--no-audit",
                        "--no-fund",
                        "--loglevel=error",
                        "--save-exact",
                    ])
                    .args(NODE_PACKAGES),
                &format!("npm install {wanted} (apt-get install nodejs npm)"),
            );
            std::fs::write(&marker, &wanted).unwrap();
        }
        dir.join("node_modules")
    })
    .clone()
}

fn script(name: &str) -> PathBuf {
    crate::support::repo_root().join("tests/clients").join(name)
}

/// Checks a flow's log: it finished, and exactly the `skip` features were refused.
fn check_log(log: &str, what: &str, skip: &[&str], kinds: &[&str]) {
    assert!(log.contains("client flow: ok"), "{what}:\n{log}");
    for kind in kinds {
        for f in skip {
            let line = format!("[{kind}] skipped: {f} (");
            assert!(log.contains(&line), "{what}: no \"{line}\":\n{log}");
        }
    }
    let refused = log.matches("skipped: ").count();
    assert_eq!(refused, skip.len() * kinds.len(), "{what}:\n{log}");
}

fn kinds(client: &str) -> &'static [&'static str] {
    match client {
        "both" => &["es", "opensearch"],
        "es" => &["es"],
        _ => &["opensearch"],
    }
}

fn python_flow(
    python: &Path,
    url: &str,
    client: &str,
    ca: Option<&str>,
    skip: &[&str],
    prefix: &str,
) {
    let mut cmd = Command::new(python);
    cmd.arg(script("flow.py")).args([
        "--url",
        url,
        "--client",
        client,
        "--prefix",
        prefix,
        "--skip",
        &skip.join(","),
    ]);
    if let Some(ca) = ca {
        cmd.args(["--ca", ca]);
    }
    let log = run(&mut cmd, &format!("python flow {prefix}"));
    check_log(&log, prefix, skip, kinds(client));
}

fn node_flow(url: &str, ca: Option<&str>, skip: &[&str], prefix: &str) {
    let mut cmd = Command::new("node");
    cmd.env("CLIENTS_NODE_MODULES", node_modules())
        .arg(script("flow.mjs"))
        .args([
            "--url",
            url,
            "--client",
            "both",
            "--prefix",
            prefix,
            "--skip",
            &skip.join(","),
        ]);
    if let Some(ca) = ca {
        cmd.args(["--ca", ca]);
    }
    let log = run(&mut cmd, &format!("node flow {prefix}"));
    check_log(&log, prefix, skip, &["es", "opensearch"]);
}

#[test]
fn python_clients_against_the_engine() {
    let e = Engine::start();
    let url = format!("http://{}", e.addr);
    for (name, packages, client) in PYTHON_CLIENTS {
        let python = venv(&format!("engine-clients-{name}"), packages);
        python_flow(&python, &url, client, None, &[], &format!("flow-{name}"));
    }
}

#[test]
fn node_clients_against_the_engine() {
    let e = Engine::start();
    node_flow(&format!("http://{}", e.addr), None, &[], "flow-js");
}

/// The edge's config: HTTPS on port 0, routing by user name, the embedded engine with a
/// multitenant cluster, and a single-tenant cluster on its own engine at `single`.
fn edge_config(dir: &Path, single: std::net::SocketAddr) -> PathBuf {
    let data = dir.join("data");
    let mut text = format!(
        "[edge]\ndomain = \"localhost\"\nhttps = \"127.0.0.1:0\"\ndata_dir = {data:?}\n\
         route_by_username = true\naccess_log = \"off\"\n\n\
         [engine]\nlisten = \"127.0.0.1:0\"\ndata_dir = {engine:?}\n\n\
         [[plans]]\nname = \"small\"\nconcurrency = 4\nqueue_size = 64\n\
         queue_timeout = \"20s\"\nshards = 60\ndisk = \"1gb\"\nmemory = \"1gb\"\n\
         max_bulk_actions = 1000\n",
        data = data.display().to_string(),
        engine = data.join("engine").display().to_string(),
    );
    for (id, class, upstream) in [
        ("mt", "multitenant", String::new()),
        (
            "st",
            "single-tenant",
            format!("upstream = [\"{single}\"]\n"),
        ),
    ] {
        text.push_str(&format!(
            "\n[[clusters]]\nid = \"{id}\"\nhostname = \"{id}\"\nregion = \"local\"\n\
             class = \"{class}\"\nplan = \"small\"\nusername = \"{id}user\"\n\
             password = \"{id}Secret9\"\n{upstream}"
        ));
    }
    let path = dir.join("searchgate.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn every_client_through_the_edge() {
    let pythons: Vec<(&str, PathBuf, &str)> = PYTHON_CLIENTS
        .iter()
        .map(|(n, p, c)| (*n, venv(&format!("engine-clients-{n}"), p), *c))
        .collect();
    node_modules();
    let dir = tempfile::tempdir().unwrap();
    let single = Engine::start();
    let config = edge_config(dir.path(), single.addr);
    let edge = serve::Serve::start(&config, std::time::Duration::from_secs(60));
    let ca = dir.path().join("data/ca.pem");
    let ca = ca.to_str().unwrap();
    for id in ["mt", "st"] {
        let url = format!("https://{id}user:{id}Secret9@localhost:{}", edge.https_port);
        let mut skip: Vec<&str> = EDGE_SKIP.to_vec();
        if id == "mt" {
            skip.extend(MULTITENANT_SKIP.iter().filter(|f| !EDGE_SKIP.contains(f)));
        }
        skip.sort_by_key(|f| {
            MULTITENANT_SKIP
                .iter()
                .chain(EDGE_SKIP)
                .position(|x| x == f)
        });
        for (name, python, client) in &pythons {
            python_flow(
                python,
                &url,
                client,
                Some(ca),
                &skip,
                &format!("{id}-{name}"),
            );
        }
        node_flow(&url, Some(ca), &skip, &format!("{id}-js"));
    }
    assert!(
        !edge.log_text().contains("mtSecret9") && !edge.log_text().contains("stSecret9"),
        "a password reached the edge's output:\n{}",
        edge.log_text()
    );
}
