//! Credentials and transport of `searchgate load-site` (spec 5): the password never appears
//! in any output, the URL can come from the environment, and TLS works with a private CA.

use crate::support::hugo as support;
use crate::support::mock_es;
use crate::support::records;

use base64::Engine as _;
use mock_es::{MockConfig, MockEs};
use records::{auth, record, write_records, PASS, USER};
use support::{load_site, load_site_env, text};

fn assert_no_secret(out: &str) {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASS}"));
    assert!(!out.contains(PASS), "password printed: {out}");
    assert!(!out.contains(&token), "credentials printed: {out}");
    assert!(
        !out.contains("secretXYZ"),
        "part of the password printed: {out}"
    );
}

/// Runs with the URL as a flag and from the environment; returns the flag run's exit status
/// and stderr, after checking that neither run printed the secret.
fn run_both_ways(url: &str, records: &str) -> (Option<i32>, String) {
    let flag = ["--from-json", records, "--index", "site", "--url", url];
    let fast = ["--max-retries", "1", "--retry-base-ms", "1"];
    let out = load_site(&[&flag[..], &fast[..]].concat());
    let (o, e) = text(&out);
    assert_no_secret(&o);
    assert_no_secret(&e);
    let env = [("SEARCHGATE_URL", url)];
    let from_env = load_site_env(&[&flag[..4], &fast[..]].concat(), &env);
    assert_no_secret(&text(&from_env).0);
    assert_no_secret(&text(&from_env).1);
    assert_eq!(out.status.code(), from_env.status.code());
    (out.status.code(), e)
}

#[test]
fn malformed_urls_never_show_the_password() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_records(&tmp, "pages.json", &[record(1, "posts", 10)]);
    for url in [
        format!("ftp://{USER}:{PASS}@host"),   // bad scheme
        format!("https://{USER}:{PASS}@"),     // no host
        format!("https://{USER}:{PASS}@h/?x"), // query
        format!("https://{USER}:%zz{PASS}@h"), // bad escape
        format!("{USER}:{PASS}@h"),            // no scheme at all
    ] {
        let (code, stderr) = run_both_ways(&url, file.to_str().unwrap());
        assert_eq!(code, Some(2), "{url}: {stderr}");
        assert!(stderr.contains("cluster URL"), "{stderr}");
    }
}

#[test]
fn server_and_transport_failures_never_show_the_password() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_records(&tmp, "pages.json", &[record(1, "posts", 10)]);
    let f = file.to_str().unwrap();
    let wrong = MockEs::start(MockConfig {
        auth: Some("Basic other".into()),
        ..Default::default()
    });
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let plain = MockEs::start(MockConfig::default());
    let userinfo = format!("{USER}:{PASS}");
    for (url, what) in [
        (wrong.url(&userinfo, false), "401"),
        (format!("http://{userinfo}@{closed}"), "Connection refused"),
        (plain.url(&userinfo, true), "GET https://"),
        (
            format!("http://{userinfo}@no-such-host.invalid:9"),
            "no-such-host.invalid",
        ),
    ] {
        let (code, stderr) = run_both_ways(&url, f);
        assert_eq!(code, Some(2), "{url}: {stderr}");
        assert!(stderr.contains(what), "{what}: {stderr}");
        assert!(
            stderr.contains(&format!("{USER}:****@")),
            "the masked URL is shown: {stderr}"
        );
    }
    // Failures while loading: every page is reported with the (masked) address.
    let failing = MockEs::start(MockConfig {
        first_bulk_statuses: vec![500; 10],
        ..Default::default()
    });
    let (code, stderr) = run_both_ways(&failing.url(&userinfo, false), f);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("failed: /posts/p1/ [en]: HTTP 500"),
        "{stderr}"
    );
}

#[test]
fn url_from_the_environment_and_missing_url() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_records(&tmp, "pages.json", &[record(1, "posts", 10)]);
    let f = file.to_str().unwrap();
    let mock = MockEs::start(MockConfig {
        auth: auth(),
        ..Default::default()
    });
    let url = mock.url(&format!("{USER}:{PASS}"), false);
    let out = load_site_env(
        &[
            "--from-json",
            f,
            "--index",
            "site",
            "--url-env",
            "MY_CLUSTER",
        ],
        &[("MY_CLUSTER", &url)],
    );
    assert!(out.status.success(), "{}", text(&out).1);
    let out = load_site(&["--from-json", f, "--index", "site"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out)
            .1
            .contains("no cluster URL: pass --url or set SEARCHGATE_URL"),
        "{}",
        text(&out).1
    );
    let out = load_site(&[
        "--from-json",
        f,
        "--index",
        "site",
        "--url-env",
        "UNSET_VAR_X",
    ]);
    assert!(
        text(&out).1.contains("UNSET_VAR_X is not set"),
        "{}",
        text(&out).1
    );
}

#[test]
fn tls_with_a_private_ca() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_records(&tmp, "pages.json", &[record(1, "posts", 10)]);
    let f = file.to_str().unwrap();
    let (ca_pem, server) = mock_es::test_tls();
    let ca = tmp.path().join("ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    let mock = MockEs::start(MockConfig {
        tls: Some(server),
        auth: auth(),
        ..Default::default()
    });
    let url = mock.url(&format!("{USER}:{PASS}"), true);
    let base = [
        "--from-json",
        f,
        "--index",
        "site",
        "--url",
        url.as_str(),
        "--max-retries",
        "0",
    ];

    let out = load_site(&base);
    assert_eq!(out.status.code(), Some(2), "an unknown CA is refused");
    assert!(text(&out).1.contains("TLS"), "{}", text(&out).1);
    assert_no_secret(&text(&out).1);

    let out = load_site(&[&base[..], &["--cacert", ca.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", text(&out).1);

    let out = load_site(&[&base[..], &["--insecure"]].concat());
    assert!(out.status.success(), "{}", text(&out).1);
    assert!(text(&out).1.contains("--insecure"), "a warning is shown");

    let out = load_site(&[&base[..], &["--cacert", "/nonexistent/ca.pem"]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("/nonexistent/ca.pem"));
    assert_eq!(mock.state().indexed.get("id-posts-0001"), Some(&2));
}
