//! `searchgate load-site` with real Hugo on the fixture site (tests/fixtures/hugo-site):
//! every field of a few documents (spec 2.4), each branch of the inclusion rule, selection,
//! stable ids, the site directory left untouched, and the template for users' own builds.

use crate::support::hugo as support;

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::{json, Value};
use support::{bulk_pairs, ensure_hugo, fixture_site, load_site, snapshot, text};

fn dry_run(extra: &[&str]) -> (Vec<(Value, Value)>, String) {
    ensure_hugo();
    let site = fixture_site();
    let mut args = vec![
        site.to_str().unwrap(),
        "--index",
        "site",
        "--dry-run",
        "--progress",
        "off",
    ];
    args.extend_from_slice(extra);
    let out = load_site(&args);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "load-site failed: {stderr}");
    (bulk_pairs(&stdout), stderr)
}

fn sha256_hex(s: &str) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg("printf %s \"$1\" | sha256sum")
        .arg("sh")
        .arg(s)
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

fn by_path<'a>(docs: &'a [(Value, Value)], rel: &str) -> &'a (Value, Value) {
    docs.iter()
        .find(|(_, d)| d["relpermalink"] == rel)
        .unwrap_or_else(|| panic!("{rel} not loaded"))
}

#[test]
fn every_field_of_a_full_page() {
    // spec 2.4: fields, types, Unix-second dates, lists as arrays; spec 4.1: action lines.
    let (docs, _) = dry_run(&[]);
    let (action, doc) = by_path(&docs, "/posts/first-post/");
    let id = sha256_hex("en|posts/first-post.md");
    assert_eq!(
        action,
        &json!({"index": {"_index": "site", "_type": "doc", "_id": id}})
    );
    let expected = json!({
        "objectID": id,
        "date": 1_678_786_013,            // 2023-03-14T09:26:53Z
        "description": "How to bulk load a Hugo site.",
        "dir": "posts/",
        "expirydate": 4_070_908_800_i64,  // 2099-01-01T00:00:00Z
        "fuzzywordcount": 100,
        "keywords": ["bulk", "hugo"],
        "kind": "page",
        "lang": "en",
        "lastmod": 1_680_350_400,         // 2023-04-01T12:00:00Z
        "permalink": "https://docs.example.org/posts/first-post/",
        "publishdate": "2023-03-15T00:00:00Z",
        "readingtime": 1,
        "relpermalink": "/posts/first-post/",
        "summary": "Searchgate loads every page of this site into a search index in one command.",
        "title": "Getting Started with Searchgate",
        "type": "posts",
        "url": "/posts/first-post/",
        "weight": 10,
        "wordcount": 14,
        "section": "posts",
        "tags": ["rust", "search"],
        "categories": ["guides"],
        "authors": ["Ada Lovelace", "Grace Hopper"]
    });
    assert_eq!(doc, &expected);
}

#[test]
fn sparse_pages_get_empty_lists_nulls_and_utc_dates() {
    let (docs, _) = dry_run(&[]);
    let (_, second) = by_path(&docs, "/posts/second-post/");
    // date: 2023-05-20T10:00:00+02:00 is 08:00 UTC; no publishDate: Hugo uses the date.
    assert_eq!(second["date"], 1_684_569_600);
    assert_eq!(second["lastmod"], 1_684_569_600);
    assert_eq!(second["publishdate"], "2023-05-20T08:00:00Z");
    assert_eq!(second["expirydate"], Value::Null);
    assert_eq!(second["tags"], json!(["solo"])); // a lone string becomes a list
    assert_eq!(second["categories"], json!([]));
    assert_eq!(second["authors"], json!([]));
    assert_eq!(second["keywords"], json!([]));
    assert_eq!(second["description"], "");
    assert_eq!(second["weight"], 0);
    assert_eq!(second["wordcount"], 2);

    let (_, install) = by_path(&docs, "/docs/install/");
    assert_eq!(install["authors"], json!(["Grace Hopper"]));
    assert_eq!(install["categories"], json!(["setup"]));
    assert_eq!(install["weight"], 1);
    assert_eq!(install["section"], "docs");
    assert_eq!(install["objectID"], sha256_hex("en|docs/install.md"));

    let (_, deep) = by_path(&docs, "/docs/nested/deep/");
    assert_eq!(deep["section"], "docs");
    assert_eq!(deep["dir"], "docs/nested/");

    for (_, d) in &docs {
        for list in ["keywords", "tags", "categories", "authors"] {
            assert!(
                d[list].is_array(),
                "{list} of {} is {}",
                d["relpermalink"],
                d[list]
            );
        }
        for int in ["fuzzywordcount", "readingtime", "weight", "wordcount"] {
            assert!(d[int].is_i64(), "{int} of {}", d["relpermalink"]);
        }
        for date in ["date", "expirydate", "lastmod"] {
            assert!(
                d[date].is_i64() || d[date].is_null(),
                "{date} of {}",
                d["relpermalink"]
            );
        }
        assert_eq!(d.as_object().unwrap().len(), 24);
    }
}

#[test]
fn inclusion_rule_each_branch_with_real_hugo() {
    // spec 2.4: included when not draft and not private, or when the section is the root.
    let (docs, stderr) = dry_run(&[]);
    let paths: BTreeSet<&str> = docs
        .iter()
        .map(|(_, d)| d["relpermalink"].as_str().unwrap())
        .collect();
    for included in [
        "/posts/first-post/", // neither draft nor private
        "/about/",            // root, neither
        "/root-draft/",       // root, draft
        "/root-private/",     // root, private
        "/",                  // the home page is at the root too
    ] {
        assert!(
            paths.contains(included),
            "{included} should be included: {paths:?}"
        );
    }
    for skipped in [
        "/posts/draft-post/",         // draft in a section
        "/posts/private-post/",       // private in a section
        "/posts/draft-private-post/", // both
        "/configure-now/",            // private: "true" (a string) in a section
    ] {
        assert!(!paths.contains(skipped), "{skipped} should be skipped");
    }
    assert!(
        stderr.contains("pages seen 24, included 20, skipped by rule 4"),
        "{stderr}"
    );
}

#[test]
fn section_and_kind_select_pages() {
    let (docs, _) = dry_run(&["--section", "posts", "--kind", "page"]);
    let paths: Vec<&str> = docs
        .iter()
        .map(|(_, d)| d["relpermalink"].as_str().unwrap())
        .collect();
    assert_eq!(
        BTreeSet::from_iter(paths),
        BTreeSet::from(["/posts/first-post/", "/posts/second-post/"])
    );

    let (root, stderr) = dry_run(&["--section", "/", "--kind", "page"]);
    let paths: Vec<&str> = root
        .iter()
        .map(|(_, d)| d["relpermalink"].as_str().unwrap())
        .collect();
    assert_eq!(
        BTreeSet::from_iter(paths),
        BTreeSet::from(["/about/", "/root-draft/", "/root-private/"])
    );
    assert!(stderr.contains("skipped by rule 0"), "{stderr}");
}

#[test]
fn ids_are_unique_and_stable_across_runs() {
    let (a, _) = dry_run(&[]);
    let (b, _) = dry_run(&[]);
    assert_eq!(a, b);
    let ids: BTreeSet<&str> = a
        .iter()
        .map(|(act, _)| act["index"]["_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), a.len());
    for (act, doc) in &a {
        assert_eq!(act["index"]["_id"], doc["objectID"]);
    }
}

#[test]
fn hugo_writes_nothing_into_the_site_directory() {
    ensure_hugo();
    let site = fixture_site();
    let before = snapshot(&site);
    let (docs, _) = dry_run(&[]);
    assert!(!docs.is_empty());
    assert_eq!(snapshot(&site), before, "the site directory changed");
    for never in ["public", "resources", ".hugo_build.lock", "hugo_stats.json"] {
        assert!(!site.join(never).exists(), "{never} appeared in the site");
    }
}

#[test]
fn printed_template_in_a_users_build_gives_the_same_documents() {
    let hugo = ensure_hugo();
    let out = load_site(&["--print-template"]);
    assert!(out.status.success());
    let template = String::from_utf8(out.stdout).unwrap();
    assert!(template.contains("index.searchgatepages.json"));

    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    let cp = Command::new("cp")
        .arg("-r")
        .arg(fixture_site())
        .arg(&site)
        .status()
        .unwrap();
    assert!(cp.success());
    std::fs::write(site.join("layouts/index.searchgatepages.json"), &template).unwrap();
    let mut config = std::fs::read_to_string(site.join("config.toml")).unwrap();
    config.push_str(
        "\n[outputFormats.SearchgatePages]\n  mediaType = \"application/json\"\n  baseName = \"searchgate-pages\"\n  isPlainText = true\n  notAlternative = true\n[outputs]\n  home = [\"HTML\", \"RSS\", \"SearchgatePages\"]\n",
    );
    std::fs::write(site.join("config.toml"), config).unwrap();
    let build = Command::new(hugo)
        .arg("--source")
        .arg(&site)
        .arg("--buildDrafts")
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "{}",
        String::from_utf8_lossy(&build.stderr)
    );

    let records = site.join("public/searchgate-pages.json");
    let out = load_site(&[
        "--from-json",
        records.to_str().unwrap(),
        "--index",
        "site",
        "--dry-run",
        "--progress",
        "off",
    ]);
    assert!(out.status.success(), "{}", text(&out).1);
    let (direct, _) = dry_run(&[]);
    assert_eq!(bulk_pairs(&text(&out).0), direct);
}

#[test]
fn setup_errors_exit_2_with_a_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let not_site = tmp.path().to_str().unwrap();
    let out = load_site(&[not_site, "--index", "site", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("is not a Hugo site"),
        "{}",
        text(&out).1
    );

    let site = fixture_site();
    let out = load_site(&[
        site.to_str().unwrap(),
        "--index",
        "site",
        "--dry-run",
        "--hugo",
        "/nonexistent/hugo",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("cannot run /nonexistent/hugo"),
        "{}",
        text(&out).1
    );

    let out = load_site(&[site.to_str().unwrap(), "--index", "Bad Name", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("invalid index name"),
        "{}",
        text(&out).1
    );

    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, r#"[{"objectID": "x"}]"#).unwrap();
    let out = load_site(&[
        "--from-json",
        bad.to_str().unwrap(),
        "--index",
        "site",
        "--dry-run",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a malformed record is a failed page"
    );
    assert!(
        text(&out)
            .1
            .contains("failed: page record #1: malformed page record"),
        "{}",
        text(&out).1
    );
}
