//! Snapshot building, lookups, and allowances carried across reloads.

use super::*;
use crate::policy::admit::Admission;
use std::time::Instant;

/// A fixed tenancy key for tests.
pub(crate) fn key() -> TenancyKey {
    TenancyKey::from_bytes([7; 32])
}

impl Registry {
    fn apply_now(&self, c: &Config) -> Result<u64, RegistryError> {
        self.apply(c, Instant::now())
    }
}

pub(crate) fn config(extra_clusters: &str, concurrency: u32) -> Config {
    let text = format!(
        r#"
[edge]
domain = "example.test"
http = "127.0.0.1:0"
route_by_username = true
[engine]
listen = "127.0.0.1:9201"
data_dir = "/tmp/x"
[[plans]]
name = "small"
concurrency = {concurrency}
queue_size = 3
queue_timeout = "1s"
shards = 4
disk = "1mb"
memory = "1mb"
max_bulk_actions = 10
[[clusters]]
id = "acme"
hostname = "acme-7f3k"
region = "us-east-1"
class = "multitenant"
plan = "small"
username = "acmeuser"
password = "acmepass"
{extra_clusters}
"#
    );
    Config::parse(&text, "test").unwrap()
}

#[test]
fn lookups_by_host_and_username() {
    let snap = Snapshot::build(&config("", 2), None, 1, Instant::now(), &key()).unwrap();
    assert_eq!(snap.by_host("acme-7f3k.us-east-1").unwrap().id, "acme");
    assert_eq!(snap.by_username("acmeuser").unwrap().id, "acme");
    assert!(snap.by_host("acme-7f3k.eu-west-1").is_none());
    assert!(
        snap.by_username("ACMEUSER").is_none(),
        "usernames are exact"
    );
}

#[test]
fn absent_upstream_defaults_to_the_engine() {
    let snap = Snapshot::build(&config("", 2), None, 1, Instant::now(), &key()).unwrap();
    assert_eq!(
        snap.by_id("acme").unwrap().upstreams,
        vec!["127.0.0.1:9201".parse().unwrap()]
    );
}

// spec 1.8: a plan change takes effect immediately for connection limits
#[test]
fn reload_keeps_the_allowance_and_resizes_it() {
    let registry = Registry::new(
        Snapshot::build(&config("", 1), None, 1, Instant::now(), &key()).unwrap(),
        key(),
    );
    let before = registry.load();
    let acme = before.by_id("acme").unwrap().clone();
    let permit = match acme.allowance.acquire() {
        Admission::Granted(p) => p,
        other => panic!("{other:?}"),
    };
    assert_eq!(registry.apply_now(&config("", 5)).unwrap(), 2);
    let after = registry.load();
    let acme2 = after.by_id("acme").unwrap();
    assert!(
        Arc::ptr_eq(&acme.allowance, &acme2.allowance),
        "same allowance object"
    );
    assert_eq!(
        acme2.allowance.in_flight(),
        1,
        "the request in flight is still counted"
    );
    assert_eq!(acme2.allowance.limit(), 5);
    drop(permit);
    assert_eq!(acme2.allowance.in_flight(), 0);
    assert_eq!(registry.generation(), 2);
}

#[test]
fn removed_clusters_disappear_on_reload() {
    let extra = r#"
[[clusters]]
id = "beta"
hostname = "beta"
region = "us-east-1"
class = "single-tenant"
plan = "small"
username = "betauser"
password = "betapass"
upstream = ["127.0.0.1:9999"]
"#;
    let registry = Registry::new(
        Snapshot::build(&config(extra, 1), None, 1, Instant::now(), &key()).unwrap(),
        key(),
    );
    assert!(registry.load().by_id("beta").is_some());
    registry.apply_now(&config("", 1)).unwrap();
    assert!(registry.load().by_id("beta").is_none());
    assert!(registry.load().by_username("betauser").is_none());
}

fn with_password(c: &Config, password: &str, grace_secs: u64) -> Config {
    let mut c = c.clone();
    c.clusters[0].password = Secret::new(password);
    c.edge.credential_grace = crate::config::Dur(Duration::from_secs(grace_secs));
    c
}

// spec 5.4: after rotation the old pair is outdated (401 at once, by default)
#[test]
fn rotation_without_grace_outdates_the_old_pair_at_once() {
    let t0 = Instant::now();
    let first = config("", 1);
    let registry = Registry::new(Snapshot::build(&first, None, 1, t0, &key()).unwrap(), key());
    registry
        .apply(&with_password(&first, "newpass", 0), t0)
        .unwrap();
    let acme = registry.load().by_id("acme").unwrap().clone();
    assert!(acme.accepts(b"acmeuser", b"newpass", t0));
    assert!(!acme.accepts(b"acmeuser", b"acmepass", t0));
}

#[test]
fn rotation_with_grace_keeps_the_old_pair_until_its_deadline() {
    let t0 = Instant::now();
    let first = config("", 1);
    let registry = Registry::new(Snapshot::build(&first, None, 1, t0, &key()).unwrap(), key());
    registry
        .apply(&with_password(&first, "newpass", 10), t0)
        .unwrap();
    let acme = registry.load().by_id("acme").unwrap().clone();
    assert!(acme.accepts(b"acmeuser", b"acmepass", t0 + Duration::from_secs(9)));
    assert!(!acme.accepts(b"acmeuser", b"acmepass", t0 + Duration::from_secs(10)));
    assert!(!acme.accepts(b"acmeuser", b"wrong", t0));
    // An unrelated reload later carries the grace on; after it, the old pair is gone.
    registry
        .apply(
            &with_password(&first, "newpass", 10),
            t0 + Duration::from_secs(5),
        )
        .unwrap();
    let acme = registry.load().by_id("acme").unwrap().clone();
    assert!(acme.accepts(b"acmeuser", b"acmepass", t0 + Duration::from_secs(6)));
    registry
        .apply(
            &with_password(&first, "newpass", 10),
            t0 + Duration::from_secs(11),
        )
        .unwrap();
    assert!(registry.load().by_id("acme").unwrap().previous.is_none());
}

// issue 5: a new single-tenant cluster is not reachable until its upstream answers
#[test]
fn readiness_of_new_and_changed_single_tenant_clusters() {
    let extra = |port: u16| {
        format!(
            "[[clusters]]\nid = \"solo\"\nhostname = \"solo\"\nregion = \"r\"\nclass = \"single-tenant\"\nplan = \"small\"\nusername = \"solouser\"\npassword = \"solopass\"\nupstream = [\"127.0.0.1:{port}\"]\n"
        )
    };
    let t0 = Instant::now();
    let registry = Registry::new(
        Snapshot::build(&config(&extra(9000), 1), None, 1, t0, &key()).unwrap(),
        key(),
    );
    let snap = registry.load();
    assert!(
        snap.by_id("acme").unwrap().state.is_ready(),
        "multitenant: shared engine"
    );
    let solo = snap.by_id("solo").unwrap();
    assert!(!solo.state.is_ready());
    solo.state.set_ready(true);
    registry.apply(&config(&extra(9000), 1), t0).unwrap();
    assert!(
        registry.load().by_id("solo").unwrap().state.is_ready(),
        "unchanged upstream"
    );
    registry.apply(&config(&extra(9001), 1), t0).unwrap();
    assert!(
        !registry.load().by_id("solo").unwrap().state.is_ready(),
        "moved upstream"
    );
}

// spec 1.6: tenants of a shared engine are namespaced; nothing unprefixed may live there
#[test]
fn multitenant_clusters_get_distinct_prefixes_and_single_tenant_cannot_share() {
    let other = "[[clusters]]\nid = \"beta\"\nhostname = \"beta\"\nregion = \"r\"\nclass = \"multitenant\"\nplan = \"small\"\nusername = \"betauser\"\npassword = \"betapass\"\n";
    let snap = Snapshot::build(&config(other, 1), None, 1, Instant::now(), &key()).unwrap();
    let (a, b) = (
        snap.by_id("acme").unwrap().prefix.unwrap(),
        snap.by_id("beta").unwrap().prefix.unwrap(),
    );
    assert_ne!(a, b);
    let solo = "[[clusters]]\nid = \"solo\"\nhostname = \"solo\"\nregion = \"r\"\nclass = \"single-tenant\"\nplan = \"small\"\nusername = \"solouser\"\npassword = \"solopass\"\n";
    let e = Snapshot::build(&config(solo, 1), None, 1, Instant::now(), &key()).unwrap_err();
    assert_eq!(e.cluster, "solo");
    assert!(e.message.contains("cannot share its upstream"), "{e}");
    assert!(snap.by_id("acme").unwrap().prefix.is_some());
}
