//! docs/site-search.md end to end (issue 29, "search keys for the browser"): the fixture
//! Hugo site gets the doc's configuration, partial, layout and page, verbatim except for
//! the four settings; real Hugo builds it; `searchgate load-site` loads it into a
//! multitenant cluster through `searchgate serve`; a search key is made for the page's
//! origin; headless Chromium (Debian's `chromium`, installed when missing) opens
//! `/search/?q=...` from a local file server, and the test reads the hits the page shows,
//! which must be the ones the cluster answers. The same page served from an origin the key
//! does not list must fail in the browser (no CORS answer). Spec 2.2 (credentials), 4 (the
//! cluster's URL).

use crate::support::docs::blocks;
use crate::support::e2e::{self, admin::tenant_of, Config, Edge, PlanSpec};
use crate::support::hugo::{ensure_hugo, fixture_site, load_site, text};
use crate::support::installs::{ensure_debian_packages, run};

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const DOC: &str = include_str!("../../docs/site-search.md");

/// Copies the directory tree `from` into `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The path a doc block names on its first line (`{{/* layouts/x.html */}}`, `# hugo.toml`).
fn named_file(block: &str) -> &str {
    let first = block.lines().next().unwrap_or_default().trim();
    first
        .trim_start_matches("{{/*")
        .trim_end_matches("*/}}")
        .trim_start_matches('#')
        .trim()
}

/// The doc's `[params.search]` block with the test's values in place of the doc's.
fn site_params(values: &[(&str, String)]) -> String {
    let block = blocks(DOC, "toml")
        .into_iter()
        .find(|b| b.contains("[params.search]"))
        .expect("docs/site-search.md shows a [params.search] block");
    let mut seen = Vec::new();
    let lines: Vec<String> = block
        .lines()
        .map(|line| {
            let key = line.split('=').next().unwrap_or_default().trim();
            match values.iter().find(|(k, _)| *k == key) {
                Some((k, v)) => {
                    seen.push(*k);
                    format!("{k} = {v:?}")
                }
                None => line.to_string(),
            }
        })
        .collect();
    assert_eq!(seen.len(), values.len(), "the doc's block sets {seen:?}");
    lines.join("\n") + "\n"
}

/// The fixture site with the doc's partial, layout, page and settings, in `dir`.
fn site_with_search(dir: &Path, values: &[(&str, String)]) -> PathBuf {
    let site = dir.join("site");
    copy_tree(&fixture_site(), &site);
    let mut files = 0;
    for block in blocks(DOC, "html") {
        let path = named_file(block);
        assert!(path.starts_with("layouts/"), "an html block names {path:?}");
        std::fs::create_dir_all(site.join(path).parent().unwrap()).unwrap();
        std::fs::write(site.join(path), block).unwrap();
        files += 1;
    }
    assert_eq!(files, 2, "the partial and the page's layout");
    let page = blocks(DOC, "markdown");
    assert_eq!(page.len(), 1, "content/search.md");
    std::fs::write(site.join("content/search.md"), page[0]).unwrap();
    let mut config = std::fs::read_to_string(site.join("config.toml")).unwrap();
    config.push('\n');
    config.push_str(&site_params(values));
    std::fs::write(site.join("config.toml"), config).unwrap();
    site
}

/// Serves the files under `root` on 127.0.0.1 (GET only, one request per connection),
/// on its own thread for the rest of the test binary.
fn file_server(root: PathBuf) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let root = root.clone();
            std::thread::spawn(move || serve_file(stream, &root));
        }
    });
    addr
}

fn serve_file(mut stream: TcpStream, root: &Path) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
            break;
        }
    }
    let target = line.split_whitespace().nth(1).unwrap_or("/");
    let path = target.split('?').next().unwrap_or("/");
    let mut file = root.join(path.trim_start_matches('/'));
    if path.ends_with('/') {
        file = file.join("index.html");
    }
    let inside = !path.split('/').any(|p| p == "..");
    let (status, body, kind) = match std::fs::read(&file) {
        Ok(b) if inside => ("200 OK", b, content_type(&file)),
        _ => ("404 Not Found", b"not found".to_vec(), "text/plain"),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
}

fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("css") => "text/css",
        Some("xml") => "application/xml",
        _ => "application/octet-stream",
    }
}

/// Headless Chromium's DOM of `url` once the page's search has ended (`data-search` set to
/// `done` or `failed`): Chromium's virtual time does not advance while a fetch is pending,
/// so one run normally suffices; a run whose DOM is not settled yet is repeated.
fn settled_dom(url: &str, profile: &Path) -> String {
    let started = Instant::now();
    loop {
        let dom = chromium_dom(url, profile);
        if dom.contains("data-search=\"done\"") || dom.contains("data-search=\"failed\"") {
            return dom;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the page's search never ended:\n{dom}"
        );
    }
}

fn chromium_dom(url: &str, profile: &Path) -> String {
    let child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox", // the tests may run as root
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--virtual-time-budget=15000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium");
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The (href, title) of each hit the page lists, in order.
fn shown_hits(dom: &str) -> Vec<(String, String)> {
    let start = dom.find("id=\"site-search-hits\"").expect("the hits list");
    let end = start + dom[start..].find("</ol>").expect("the list's end");
    dom[start..end]
        .split("<a href=\"")
        .skip(1)
        .map(|a| {
            let href = &a[..a.find('"').unwrap()];
            let title = &a[a.find('>').unwrap() + 1..a.find("</a>").unwrap()];
            (href.to_string(), title.to_string())
        })
        .collect()
}

/// What the cluster answers to the page's query, asked with the master pair.
fn answered_hits(edge: &Edge, master: &e2e::Tenant, q: &str) -> Vec<(String, String)> {
    let body = json!({
        "size": 10,
        "_source": ["title", "summary", "relpermalink"],
        "query": {"multi_match": {"query": q, "fields": ["title^3", "summary", "description"]}}
    });
    let r = edge.send(&master.json("POST", "/site/_search", &body));
    assert_eq!(r.status, 200, "{}", r.text());
    let v: Value = r.json();
    v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let s = &h["_source"];
            let href = s["relpermalink"].as_str().unwrap().to_string();
            (href, s["title"].as_str().unwrap().to_string())
        })
        .collect()
}

// issue 29: docs/site-search.md, as a site owner follows it, in a real browser
#[test]
fn the_site_search_page_works_in_a_browser_from_its_origin_only() {
    ensure_hugo();
    ensure_debian_packages("chromium --version", &["chromium"]);
    let config = Config::new()
        .with_admin()
        .plan(PlanSpec::new("small"))
        .edge("route_by_username", "true");
    let edge = Edge::start(config);
    let created = edge.admin().create(json!({"plan": "small"}));
    let id = created["id"].as_str().unwrap().to_string();
    let master = tenant_of(&created);
    let tmp = tempfile::tempdir().unwrap();
    let public = tmp.path().join("public");
    std::fs::create_dir_all(&public).unwrap();
    let page_server = file_server(public.clone());
    let other_server = file_server(public.clone());
    let origin = format!("http://{page_server}");

    // the key, for the page's origin only
    let key = edge
        .admin()
        .call(
            "POST",
            &format!("/v1/clusters/{id}/keys"),
            Some(
                &json!({"name": "site-search", "role": "search", "indices": ["site"],
                         "allowed_origins": [origin]}),
            ),
        )
        .expect(201);
    let values = [
        (
            "url",
            format!("http://{}:{}", master.host, edge.http.port()),
        ),
        ("index", "site".to_string()),
        ("username", key["username"].as_str().unwrap().to_string()),
        ("password", key["password"].as_str().unwrap().to_string()),
    ];
    let site = site_with_search(tmp.path(), &values);

    // the site loaded with the master pair, as the doc's first step
    let url = format!(
        "http://{}:{}@localhost:{}",
        master.user,
        master.pass,
        edge.http.port()
    );
    let out = load_site(&[site.to_str().unwrap(), "--index", "site", "--url", &url]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");

    // built as the owner builds it, for the origin it is served from
    run(
        Command::new("hugo")
            .arg("--source")
            .arg(&site)
            .arg("--destination")
            .arg(&public)
            .args(["--baseURL", &format!("{origin}/"), "--quiet"]),
        "hugo",
    );
    let built = std::fs::read_to_string(public.join("search/index.html")).unwrap();
    assert!(!built.contains("{{"), "the templates ran:\n{built}");

    let profile = tmp.path().join("chromium");
    let want = answered_hits(&edge, &master, "install");
    assert!(
        want.iter()
            .any(|(href, title)| href == "/docs/install/" && title == "Install"),
        "the cluster finds the Install page: {want:?}"
    );
    let dom = settled_dom(&format!("{origin}/search/?q=install"), &profile);
    assert!(dom.contains("data-search=\"done\""), "{dom}");
    assert_eq!(
        shown_hits(&dom),
        want,
        "the page shows what the cluster answers"
    );

    // nothing matches: the page says so
    let dom = settled_dom(&format!("{origin}/search/?q=zzyzx"), &profile);
    assert!(dom.contains("data-search=\"done\""), "{dom}");
    assert!(shown_hits(&dom).is_empty() && dom.contains("No page matches."));

    // the same page from an origin the key does not list: the browser gets no CORS answer
    let dom = settled_dom(
        &format!("http://{other_server}/search/?q=install"),
        &profile,
    );
    assert!(dom.contains("data-search=\"failed\""), "{dom}");
    assert!(shown_hits(&dom).is_empty());
    assert!(dom.contains("Search is not available right now."));
}
