//! The cluster-key commands of the README ("Keys: a search-only credential for a web
//! page") and of docs/keys.md ("With the CLI", "With the admin API"), run as written
//! against a first-run `searchgate serve` (issue 32, "the README and the docs are
//! tested"), each on a cluster of its own (`ID`), with the key's id for `KEY_ID`: what
//! they print, and that the key then does what the text says (searches `site*` only, a
//! write is a 403 naming the key, a deleted key is a 401).

use crate::support::docs::{blocks, commands, section, shown, Shell};
use crate::support::e2e::Edge;
use crate::support::installs;

use serde_json::Value;

const README: &str = include_str!("../../README.md");
const KEYS_MD: &str = include_str!("../../docs/keys.md");

/// A cluster for one block: its id and master URL, with `site1` (one document) and
/// `secret` in it.
fn cluster(edge: &Edge, shell: &Shell, name: &str) -> (String, String) {
    let c = edge
        .admin()
        .create(serde_json::json!({"plan": "sandbox", "name": name}));
    let id = c["id"].as_str().unwrap().to_string();
    let url = c["localhost_url"].as_str().unwrap().to_string();
    for index in ["site1", "secret"] {
        assert_eq!(
            curl(shell, "PUT", &format!("{url}/{index}"))["acknowledged"],
            true
        );
    }
    let doc = format!("{url}/site1/_doc/1?refresh=true -H 'Content-Type: application/json' -d '{{\"t\":\"hello\"}}'");
    assert_eq!(curl(shell, "PUT", &doc)["result"], "created");
    (id, url)
}

/// `curl -X METHOD` of `rest` (a URL and more arguments) through the edge's CA: its JSON.
fn curl(shell: &Shell, method: &str, rest: &str) -> Value {
    let url_end = rest.find(' ').unwrap_or(rest.len());
    let cmd = format!(
        "curl -s --cacert data/ca.pem -X {method} '{}'{}",
        &rest[..url_end],
        &rest[url_end..]
    );
    let o = shell.run(&cmd, 30);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {cmd}: {}", shown(&o)))
}

/// What the key at `url` may do: search `site*` (narrowed from `*`), not write, not read
/// `secret`.
fn key_searches_site_only(shell: &Shell, url: &str) {
    let all = curl(shell, "GET", &format!("{url}/*/_search"));
    assert_eq!(all["hits"]["total"]["value"], 1, "{all}");
    assert!(all["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["_index"] == "site1"));
    let write = format!("{url}/site1/_doc/2 -H 'Content-Type: application/json' -d '{{\"t\":1}}'");
    let w = curl(shell, "PUT", &write);
    assert_eq!(w["status"], 403, "{w}");
    assert_eq!(w["error"]["type"], "security_exception", "{w}");
    assert!(
        w["error"]["reason"].as_str().unwrap().contains("key [web]"),
        "{w}"
    );
    let s = curl(shell, "GET", &format!("{url}/secret/_search"));
    assert_eq!(s["status"], 403, "{s}");
}

/// The value of `field` in a printed `field   value` line.
fn printed(out: &str, field: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix(field).filter(|r| r.starts_with(' ')))
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no {field} in\n{out}"))
        .to_string()
}

/// The three CLI commands (create, list, delete) of `block`, run as written on a new
/// cluster.
fn cli_block(edge: &Edge, shell: &mut Shell, block: &str, name: &str) {
    let cmds = commands(block);
    assert_eq!(cmds.len(), 3, "{cmds:?}");
    let (id, _) = cluster(edge, shell, name);
    let with_id = |t: &str, key: &str| t.replace(" ID", &format!(" {id}")).replace("KEY_ID", key);
    assert!(cmds[0].text.contains("keys create ID"), "{cmds:?}");
    let o = shell.run(&with_id(&cmds[0].text, ""), 60);
    assert!(o.status.success(), "{}", shown(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut lines = out.lines();
    assert!(lines.next().unwrap().starts_with("ID "), "{out}");
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        (row[1], row[2], row[4]),
        ("web", "search", "site*"),
        "{out}"
    );
    if cmds[0]
        .text
        .contains("--allowed-origins https://blog.example")
    {
        assert!(out.contains("https://blog.example"), "{out}");
    }
    let key_id = row[0].to_string();
    // Shown once: the password and the URLs with it.
    let key_url = printed(&out, "localhost_url");
    assert!(!printed(&out, "password").is_empty());
    key_searches_site_only(shell, &key_url);

    let o = shell.run(&with_id(&cmds[1].text, &key_id), 60);
    assert!(o.status.success(), "{}", shown(&o));
    let listed = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        listed.lines().any(|l| l.starts_with(&format!("{key_id} "))),
        "{listed}"
    );
    assert!(
        !listed.contains("password"),
        "no secrets in a list: {listed}"
    );

    let o = shell.run(&with_id(&cmds[2].text, &key_id), 60);
    assert!(o.status.success(), "{}", shown(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("revoked: "),
        "{}",
        shown(&o)
    );
    // "401 for it from the next request on".
    assert_eq!(
        curl(shell, "GET", &format!("{key_url}/site1/_search"))["status"],
        401
    );
}

// issue 32: the README's key commands and docs/keys.md's, as written
#[test]
fn the_key_commands_of_the_readme_and_the_keys_guide_run_as_written() {
    installs::ensure_debian_packages("command -v curl", &["curl"]);
    let edge = Edge::first_run(tempfile::tempdir().unwrap(), |t| t);
    let mut shell = Shell::new(edge.cwd());
    let readme = section(README, "### Keys: a search-only credential for a web page");
    cli_block(&edge, &mut shell, blocks(readme, "text")[0], "blog");
    let cli = section(KEYS_MD, "## With the CLI");
    cli_block(&edge, &mut shell, blocks(cli, "sh")[0], "blog2");

    // The admin API's block, with the variables it uses set as a reader sets them.
    let api = commands(blocks(section(KEYS_MD, "## With the admin API"), "sh")[0]);
    assert_eq!(api.len(), 3, "{api:?}");
    let (id, master) = cluster(&edge, &shell, "blog3");
    shell.set("TOKEN", &edge.admin().token);
    shell.set("ADMIN", &edge.admin().url);
    shell.set("ID", &id);
    let json = |o: &std::process::Output| -> Value {
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", shown(o)))
    };
    let created = json(&shell.run(&api[0].text, 30));
    assert_eq!(
        (&created["name"], &created["role"]),
        (&Value::from("web"), &Value::from("search")),
        "{created}"
    );
    assert!(created["expires_at"].is_string(), "90d from now: {created}");
    let key_url = created["localhost_url"].as_str().expect("localhost_url");
    assert_ne!(key_url, master);
    key_searches_site_only(&shell, key_url);
    shell.set("KEY_ID", created["id"].as_str().unwrap());
    let listed = json(&shell.run(&api[1].text, 30));
    assert_eq!(listed["keys"][0]["id"], created["id"], "{listed}");
    assert!(listed["keys"][0].get("password").is_none(), "{listed}");
    let o = shell.run(&api[2].text, 30);
    assert!(o.status.success(), "{}", shown(&o));
    assert_eq!(
        curl(&shell, "GET", &format!("{key_url}/site1/_search"))["status"],
        401
    );
}
