//! Config fixtures: valid files and each kind of invalid one.

use super::*;
use std::time::Duration;

const VALID: &str = r#"
[edge]
domain = "localhost"
https = "127.0.0.1:9243"
http = "127.0.0.1:9200"
data_dir = "./data"
[engine]
listen = "127.0.0.1:9201"
data_dir = "./data/engine"
[[plans]]
name = "sandbox"
concurrency = 2
queue_size = 20
queue_timeout = "5s"
shards = 10
disk = "1gb"
memory = "256mb"
max_bulk_actions = 10000
monthly_price_cents = 0
[[clusters]]
id = "acme"
hostname = "acme-7f3k"
region = "us-east-1"
class = "multitenant"
plan = "sandbox"
username = "u1"
password = "p1"
mode = "normal"
upstream = ["127.0.0.1:9201"]
"#;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, "test.toml")
}

#[test]
fn the_issue_example_parses() {
    let c = parse(VALID).unwrap();
    assert_eq!(c.plans[0].queue_timeout.0, Duration::from_secs(5));
    assert_eq!(c.plans[0].disk.0, 1 << 30);
    assert_eq!(c.clusters[0].class, ClusterClass::Multitenant);
    assert_eq!(c.clusters[0].mode, Mode::Normal);
    // spec 8 defaults: 40MB body, 16KB head, 60s deadline
    assert_eq!(c.edge.max_body.0, 41_943_040);
    assert_eq!(c.edge.max_head.0, 16_384);
    assert_eq!(c.edge.deadline.0, Duration::from_secs(60));
    assert!(!c.edge.route_by_username);
    assert!(
        c.edge.record_metrics,
        "metrics are recorded unless turned off"
    );
    let off = parse(&VALID.replace("[edge]", "[edge]\nrecord_metrics = false")).unwrap();
    assert!(!off.edge.record_metrics);
    assert!(
        off.edge.pin_workers,
        "workers are pinned unless told otherwise"
    );
    let free = parse(&VALID.replace("[edge]", "[edge]\npin_workers = false")).unwrap();
    assert!(!free.edge.pin_workers);
}

#[test]
fn upstream_congestion_default_host_and_bad_names() {
    assert_eq!(parse(VALID).unwrap().edge.upstream_congestion, "cubic");
    let host = parse(&VALID.replace("[edge]", "[edge]\nupstream_congestion = \"\"")).unwrap();
    assert_eq!(host.edge.upstream_congestion, "");
    for bad in ["bb r", "cubic;", "a_name_of_16_byt", "\\u0000"] {
        let text = VALID.replace(
            "[edge]",
            &format!("[edge]\nupstream_congestion = \"{bad}\""),
        );
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("upstream_congestion"), "{bad}: {e}");
    }
    // 15 bytes is the kernel's longest name
    let long = VALID.replace(
        "[edge]",
        "[edge]\nupstream_congestion = \"a_name_of_15_by\"",
    );
    assert!(parse(&long).is_ok());
}

#[test]
fn unknown_keys_are_named() {
    let text = VALID.replace("mode = \"normal\"", "mode = \"normal\"\ncolour = \"red\"");
    let e = parse(&text).unwrap_err();
    assert!(e.message.contains("colour"), "{e}");
    let text = VALID.replace("[edge]", "[edge]\nlisten_backlog = 5");
    assert!(parse(&text).unwrap_err().message.contains("listen_backlog"));
    let text = format!("{VALID}\n[metrics]\nport = 1\n");
    assert!(parse(&text).unwrap_err().message.contains("metrics"));
}

#[test]
fn passwords_never_show_in_debug() {
    let c = parse(VALID).unwrap();
    let dump = format!("{c:?}");
    assert!(!dump.contains("\"p1\""), "{dump}");
    assert!(dump.contains("Secret(***)"));
}

#[test]
fn bad_values_name_their_key() {
    let cases = [
        ("plan = \"sandbox\"", "plan = \"gold\"", "clusters[0].plan"),
        ("class = \"multitenant\"", "class = \"shared\"", "class"),
        ("mode = \"normal\"", "mode = \"sleepy\"", "mode"),
        (
            "queue_timeout = \"5s\"",
            "queue_timeout = \"5\"",
            "queue_timeout",
        ),
        ("disk = \"1gb\"", "disk = \"1zb\"", "disk"),
        ("concurrency = 2", "concurrency = 0", "plans[0].concurrency"),
        // issue 29: a search or write lane needs both its settings, and room for one
        (
            "concurrency = 2",
            "concurrency = 2\nwrite_concurrency = 2",
            "plans[0].write_queue_size: required with write_concurrency",
        ),
        (
            "concurrency = 2",
            "concurrency = 2\nsearch_queue_size = 2",
            "plans[0].search_concurrency: required with search_queue_size",
        ),
        (
            "concurrency = 2",
            "concurrency = 2\nsearch_concurrency = 0\nsearch_queue_size = 2",
            "plans[0].search_concurrency: must be at least 1",
        ),
        (
            "hostname = \"acme-7f3k\"",
            "hostname = \"Acme.x\"",
            "clusters[0].hostname",
        ),
        (
            "password = \"p1\"",
            "password = \"p 1\"",
            "clusters[0].username",
        ),
        (
            "upstream = [\"127.0.0.1:9201\"]",
            "upstream = []",
            "clusters[0].upstream",
        ),
        ("https = \"127.0.0.1:9243\"", "https = \"nowhere\"", "https"),
    ];
    for (from, to, key) in cases {
        let text = VALID.replace(from, to);
        let e = parse(&text).unwrap_err();
        assert!(e.to_string().contains(key), "{from} -> {to}: {e}");
    }
}

#[test]
fn duplicates_are_refused() {
    let second = VALID.split("[[clusters]]").nth(1).unwrap();
    let text = format!("{VALID}\n[[clusters]]{second}");
    let e = parse(&text).unwrap_err();
    assert!(e.message.contains("defined twice"), "{e}");
    let other = second
        .replace("id = \"acme\"", "id = \"other\"")
        .replace("acme-7f3k", "b");
    let e = parse(&format!("{VALID}\n[[clusters]]{other}")).unwrap_err();
    assert!(e.message.contains("username `u1` is used twice"), "{e}");
}

#[test]
fn missing_upstream_needs_an_engine() {
    let text = VALID
        .replace("upstream = [\"127.0.0.1:9201\"]", "")
        .replace(
            "[engine]\nlisten = \"127.0.0.1:9201\"\ndata_dir = \"./data/engine\"",
            "",
        );
    let e = parse(&text).unwrap_err();
    assert!(e.message.contains("no [engine]"), "{e}");
}

// issue 11: the admin API has its own listener, never a customer one
#[test]
fn the_admin_listener_is_not_a_customer_listener() {
    let text = format!("{VALID}\n[admin]\nlisten = \"127.0.0.1:9200\"\n");
    assert!(parse(&text)
        .unwrap_err()
        .message
        .contains("customer listener"));
    let text = format!("{VALID}\n[admin]\nlisten = \"127.0.0.1:9900\"\n");
    assert_eq!(parse(&text).unwrap().admin.unwrap().listen.port(), 9900);
    let ports_zero = VALID.replace("127.0.0.1:9200", "127.0.0.1:0");
    let text = format!("{ports_zero}\n[admin]\nlisten = \"127.0.0.1:0\"\n");
    assert!(parse(&text).is_ok(), "port 0 is a different port each time");
}

#[test]
fn a_listener_is_required() {
    let text = VALID
        .replace("https = \"127.0.0.1:9243\"\n", "")
        .replace("http = \"127.0.0.1:9200\"\n", "");
    assert!(parse(&text).unwrap_err().message.contains("no listener"));
}

const POOLS: &str = r#"
[upstream_health]
interval = "3s"
fall = 4
[[upstream_pools]]
name = "main"
nodes = ["es1.example:9200", "10.0.0.2:9200"]
interval = "500ms"
path = "/_cluster/health"
[[upstream_pools]]
name = "spare_2"
nodes = ["10.0.0.9:9200"]
"#;

fn with_pools(extra: &str) -> String {
    format!(
        "{}\n{POOLS}{extra}",
        VALID.replace("upstream = [\"127.0.0.1:9201\"]", "upstream = \"main\"")
    )
}

// issue 28: named pools: a cluster names one by a string; each pool's checks are its own
// keys over [upstream_health], over the defaults
#[test]
fn pools_parse_and_their_settings_override_upstream_health() {
    let c = parse(&with_pools("")).unwrap();
    assert_eq!(c.clusters[0].upstream, Some(vec!["main".to_string()]));
    assert_eq!(
        pool_named(c.clusters[0].upstream.as_deref().unwrap()),
        Some("main")
    );
    let pools = c.pools().unwrap();
    assert_eq!(pools.len(), 2);
    let main = &pools[0];
    assert_eq!(main.nodes, ["es1.example:9200", "10.0.0.2:9200"]);
    assert_eq!(
        main.health.interval,
        Duration::from_millis(500),
        "the pool's"
    );
    assert_eq!(main.health.path, "/_cluster/health");
    assert_eq!(main.health.fall, 4, "[upstream_health]'s");
    assert_eq!(main.health.rise, 2, "the default");
    assert_eq!(pools[1].health.interval, Duration::from_secs(3));
    assert_eq!(pool_named(&["127.0.0.1:9201".to_string()]), None);
    let shared = format!(
        "{}\n[admin]\nshared_upstreams = [\"main\", \"10.1.1.1:9200\"]\n",
        with_pools("")
    );
    assert!(parse(&shared).is_ok());
}

// issue 28: every mistake in pools is refused with the key it is about, before anything runs
#[test]
fn pool_mistakes_are_refused_naming_the_key() {
    let cases = [
        (
            with_pools("").replace("upstream = \"main\"", "upstream = \"nope\""),
            "no [[upstream_pools]] named `nope`",
        ),
        (
            with_pools("[[upstream_pools]]\nname = \"main\"\nnodes = [\"a:1\"]\n"),
            "upstream_pools[2].name: pool `main` is defined twice",
        ),
        (
            with_pools("[[upstream_pools]]\nname = \"empty\"\nnodes = []\n"),
            "upstream_pools[2].nodes: pool `empty` has no nodes",
        ),
        (
            with_pools("[[upstream_pools]]\nname = \"x\"\nnodes = [\"nocolon\"]\n"),
            "`nocolon` must be host:port",
        ),
        (
            with_pools("[[upstream_pools]]\nname = \"Bad Name\"\nnodes = [\"a:1\"]\n"),
            "must be 1-63 of a-z",
        ),
        (
            with_pools("[[upstream_pools]]\nname = \"x\"\nnodes = [\"a:1\"]\nfall = 0\n"),
            "upstream_pools[2].rise, fall, passive_failures: must be at least 1",
        ),
        (
            with_pools(
                "[[upstream_pools]]\nname = \"x\"\nnodes = [\"a:1\"]\nresolve_interval = \"5s\"\n",
            ),
            "upstream_pools[2].resolve_interval: set in [upstream_health] only",
        ),
        (
            with_pools("[[upstream_pools]]\nname = \"x\"\nnodes = [\"a:1\"]\nfalls = 2\n"),
            "unknown field `falls`",
        ),
        (
            with_pools("[[upstream_pools]]\nname = \"x\"\n"),
            "missing `nodes`",
        ),
        (
            with_pools("").replace("upstream = \"main\"", "upstream = \"10.0.0.1:9200\""),
            "a string names an upstream pool",
        ),
        (
            format!(
                "{}\n[admin]\nshared_upstreams = [\"nope\"]\n",
                with_pools("")
            ),
            "admin.shared_upstreams: `nope` is neither host:port nor an [[upstream_pools]] name",
        ),
        (
            with_pools("").replace("fall = 4", "resolve_interval = \"0s\""),
            "upstream_health.resolve_interval: must be between 1s and 1d",
        ),
    ];
    for (text, want) in cases {
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains(want), "want {want:?}, got {e}");
    }
}
