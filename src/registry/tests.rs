//! Snapshots: lookups, commands carried through compile -> reconcile -> assemble, runtime
//! handles kept across snapshots, and refused changes that touch nothing.

use super::catalog::{apply_all, Ctx};
use super::runtime::Runtime;
use super::*;
use crate::policy::admit::Admission;
use crate::policy::auth::PasswordHash;
use crate::policy::shards::Usage;

/// A fixed tenancy key for tests.
pub(crate) fn key() -> TenancyKey {
    TenancyKey::from_bytes([7; 32])
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

fn no_usage(_: &str) -> Usage {
    Usage::default()
}

/// What the control plane does with a change, without the store: apply, compile,
/// reconcile, assemble, publish. Every change is put together both ways, whole and from
/// the previous snapshot and the diff (when no plan changed), and the two snapshots must
/// look the same; the one made from the diff is published.
struct Harness {
    settings: Settings,
    runtime: Runtime,
    registry: Registry,
    checked: Checked,
    t0: Instant,
}

/// What a snapshot serves, in order: each live cluster's routing and settings, every
/// username's owner, the destroyed usernames.
fn shape(s: &Snapshot) -> Vec<String> {
    let mut out: Vec<String> = s
        .clusters()
        .map(|c| {
            let host = format!("{}.{}", c.hostname, c.region);
            let routed = s.by_host(&host).map(|x| x.id.clone());
            format!(
                "{} {host}->{routed:?} {:?} {} {:?} {:?} {:?} prev={:?} keys={:?} share={:?}",
                c.id,
                c.mode,
                c.plan.name,
                c.upstreams,
                c.prefix.map(|p| p.as_str().to_string()),
                c.mode_reason,
                c.previous.as_ref().map(|o| o.credential.username.clone()),
                c.keys.keys().collect::<std::collections::BTreeSet<_>>(),
                c.contexts.as_ref().map(|l| l.with(|l| l.share(&c.id))),
            )
        })
        .collect();
    for r in s.catalog.clusters.values() {
        let previous = r.previous.as_ref().map(|p| &p.username);
        let keys = r.keys.iter().map(|k| &k.username);
        for user in std::iter::once(&r.username).chain(previous).chain(keys) {
            let owner = s.by_username(user).map(|c| c.id.clone());
            let gone = s.is_destroyed_username(user);
            out.push(format!("user {user}: {owner:?} destroyed={gone}"));
        }
    }
    out
}

impl Harness {
    fn new(c: &Config) -> Harness {
        let settings = Settings::from_config(c, &key());
        let snap = Snapshot::build(c, None, 1, Instant::now(), &key()).unwrap();
        let checked = compile(&snap.catalog, &settings, &resolve).unwrap();
        Harness {
            settings,
            runtime: runtime::Runtime::of_snapshot(&snap),
            registry: Registry::new(snap),
            checked,
            t0: Instant::now(),
        }
    }

    /// Runs `cmds` at `now_ms` (milliseconds after the harness started).
    fn run(&mut self, cmds: &[Command], now_ms: Millis) -> Result<u64, String> {
        let prev = self.registry.load();
        let ctx = Ctx {
            now: now_ms,
            usage: &no_usage,
        };
        let next = Arc::new(apply_all(&prev.catalog, cmds, &ctx).map_err(|e| e.to_string())?);
        let d = diff::diff(&prev.catalog, &next);
        let whole = compile(&next, &self.settings, &resolve).map_err(|e| e.to_string());
        let touched = d.plans.is_empty().then(|| {
            self.checked
                .update(&next, &d, &self.settings, &resolve)
                .map_err(|e| e.to_string())
        });
        if let Some(t) = &touched {
            assert_eq!(
                t.is_ok(),
                whole.is_ok(),
                "{:?} / {:?}",
                t.as_ref().err(),
                whole.as_ref().err()
            );
        }
        let whole = whole?;
        self.runtime.reconcile(&d, &next);
        let at = self.t0 + Duration::from_millis(now_ms as u64);
        let generation = prev.generation + 1;
        let snap = match touched {
            Some(t) => {
                let t = t?;
                let part = Snapshot::update(
                    &prev,
                    &t,
                    &self.runtime,
                    &d,
                    &self.settings,
                    generation,
                    (at, now_ms),
                );
                // Before the whole one tells the ledgers every member again.
                let made = shape(&part);
                let all = Snapshot::assemble(
                    &whole,
                    &self.runtime,
                    Some(&prev),
                    &self.settings,
                    generation,
                    (at, now_ms),
                );
                assert_eq!(made, shape(&all), "made from the diff / whole");
                self.checked = t;
                part
            }
            None => {
                let snap = Snapshot::assemble(
                    &whole,
                    &self.runtime,
                    Some(&prev),
                    &self.settings,
                    generation,
                    (at, now_ms),
                );
                self.checked = whole;
                snap
            }
        };
        self.registry.publish(snap);
        Ok(self.registry.generation())
    }

    fn cluster(&self, id: &str) -> Arc<Cluster> {
        self.registry.load().by_id(id).unwrap().clone()
    }
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

#[test]
fn passwords_are_kept_as_salted_hashes_only() {
    let snap = Snapshot::build(&config("", 2), None, 1, Instant::now(), &key()).unwrap();
    let acme = snap.by_id("acme").unwrap();
    assert!(acme.accepts(b"acmeuser", b"acmepass", Instant::now()));
    let stored = serde_json::to_string(&*acme.record).unwrap();
    assert!(!stored.contains("acmepass"), "{stored}");
    assert!(stored.contains("hmac-sha256$"), "{stored}");
}

// spec 1.8: a plan change takes effect immediately for connection limits
#[test]
fn a_plan_change_keeps_the_allowance_and_resizes_it() {
    let mut h = Harness::new(&config("", 1));
    let acme = h.cluster("acme");
    let permit = match acme.allowance.acquire() {
        Admission::Granted(p) => p,
        other => panic!("{other:?}"),
    };
    let mut bigger = PlanRecord::from(&config("", 5).plans[0]);
    bigger.name = "small".into();
    assert_eq!(h.run(&[Command::PutPlan(bigger)], 0).unwrap(), 2);
    let acme2 = h.cluster("acme");
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
}

// issue 11: a refused change changes nothing, runtime state included (the bug this fixes:
// a refused reload used to resize live allowances and mark live clusters not ready).
#[test]
fn a_refused_change_touches_no_runtime_state() {
    let extra = "[[clusters]]\nid = \"solo\"\nhostname = \"solo\"\nregion = \"r\"\nclass = \"single-tenant\"\nplan = \"small\"\nusername = \"solouser\"\npassword = \"solopass\"\nupstream = [\"127.0.0.1:9000\"]\n";
    let mut h = Harness::new(&config(extra, 1));
    let solo = h.cluster("solo");
    solo.state.set_ready(true);
    let mut bigger = PlanRecord::from(&config("", 7).plans[0]);
    bigger.name = "small".into();
    // A bigger plan and a moved upstream, with a refused command last: all or none.
    let cmds = [
        Command::PutPlan(bigger),
        Command::SetUpstream {
            id: "solo".into(),
            upstream: Some(vec!["127.0.0.1:9001".into()]),
        },
        Command::ChangePlan {
            id: "acme".into(),
            plan: "nope".into(),
        },
    ];
    assert!(h.run(&cmds, 0).unwrap_err().contains("no plan `nope`"));
    // Refused at compile (a single-tenant cluster on the multitenant engine): also nothing.
    let onto_engine = [
        Command::PutPlan({
            let mut p = PlanRecord::from(&config("", 7).plans[0]);
            p.name = "small".into();
            p
        }),
        Command::SetUpstream {
            id: "solo".into(),
            upstream: None,
        },
    ];
    assert!(h
        .run(&onto_engine, 0)
        .unwrap_err()
        .contains("cannot share its upstream"));
    assert_eq!(h.registry.generation(), 1, "nothing published");
    assert_eq!(solo.allowance.limit(), 1, "not resized");
    assert!(solo.state.is_ready(), "not marked unready");
    assert_eq!(h.cluster("acme").allowance.limit(), 1);
}

fn rotate(grace_until: Option<Millis>) -> Command {
    Command::SetCredentials {
        id: "acme".into(),
        username: "acmeuser".into(),
        password: PasswordHash::new(b"newpass"),
        grace_until,
    }
}

// spec 5.4: after rotation the old pair is outdated (401 at once, by default)
#[test]
fn rotation_without_grace_outdates_the_old_pair_at_once() {
    let mut h = Harness::new(&config("", 1));
    h.run(&[rotate(None)], 0).unwrap();
    let acme = h.cluster("acme");
    assert!(acme.accepts(b"acmeuser", b"newpass", h.t0));
    assert!(!acme.accepts(b"acmeuser", b"acmepass", h.t0));
}

#[test]
fn rotation_with_grace_keeps_the_old_pair_until_its_deadline() {
    let mut h = Harness::new(&config("", 1));
    h.run(&[rotate(Some(10_000))], 0).unwrap();
    let acme = h.cluster("acme");
    let at = |ms: u64| h.t0 + Duration::from_millis(ms);
    assert!(acme.accepts(b"acmeuser", b"acmepass", at(9_000)));
    assert!(!acme.accepts(b"acmeuser", b"acmepass", at(10_000)));
    assert!(!acme.accepts(b"acmeuser", b"wrong", at(0)));
    assert!(acme.accepts(b"acmeuser", b"newpass", at(0)));
    // A snapshot assembled after the deadline has no old pair.
    h.run(&[Command::MarkProvisioned { id: "acme".into() }], 11_000)
        .unwrap();
    let mut other = PlanRecord::from(&config("", 2).plans[0]);
    other.name = "small".into();
    h.run(&[Command::PutPlan(other)], 11_000).unwrap();
    assert!(h.cluster("acme").previous.is_none());
}

// issue 5: a single-tenant cluster is not reachable until its upstream answers
#[test]
fn readiness_of_new_and_moved_single_tenant_clusters() {
    let extra = "[[clusters]]\nid = \"solo\"\nhostname = \"solo\"\nregion = \"r\"\nclass = \"single-tenant\"\nplan = \"small\"\nusername = \"solouser\"\npassword = \"solopass\"\nupstream = [\"127.0.0.1:9000\"]\n";
    let mut h = Harness::new(&config(extra, 1));
    assert!(
        h.cluster("acme").state.is_ready(),
        "multitenant: shared engine"
    );
    let solo = h.cluster("solo");
    assert!(!solo.state.is_ready());
    solo.state.set_ready(true);
    h.run(&[Command::MarkProvisioned { id: "solo".into() }], 0)
        .unwrap();
    assert!(h.cluster("solo").state.is_ready(), "unchanged upstream");
    let moved = Command::SetUpstream {
        id: "solo".into(),
        upstream: Some(vec!["127.0.0.1:9001".into()]),
    };
    h.run(&[moved], 0).unwrap();
    assert!(!h.cluster("solo").state.is_ready(), "moved upstream");
    assert_eq!(h.cluster("solo").record.state(), "provisioning");
}

#[test]
fn destroyed_clusters_disappear_from_the_snapshot() {
    let mut h = Harness::new(&config("", 1));
    h.run(&[Command::Destroy { id: "acme".into() }], 0).unwrap();
    let snap = h.registry.load();
    assert!(snap.by_id("acme").is_none() && snap.by_username("acmeuser").is_none());
    assert_eq!(snap.catalog.clusters["acme"].state(), "destroyed");
}

// spec 3: the operator's reason goes with the mode
#[test]
fn modes_carry_their_reason_and_maintenance_ends_at_until() {
    use crate::policy::mode::Mode as M;
    let mut h = Harness::new(&config("", 1));
    let set = Command::SetMode {
        id: "acme".into(),
        mode: Mode::Maintenance,
        reason: Some("upgrading to 7.10.3".into()),
        until: Some(5_000),
    };
    h.run(&[set], 1_000).unwrap();
    let acme = h.cluster("acme");
    let v = acme.effective_mode();
    assert_eq!(v.mode, M::Maintenance);
    assert_eq!(v.reason.as_deref(), Some("upgrading to 7.10.3"));
    let before = h.t0 + Duration::from_millis(4_999);
    let after = h.t0 + Duration::from_millis(5_000);
    assert_eq!(acme.effective_mode_at(before).mode, M::Maintenance);
    let ended = acme.effective_mode_at(after);
    assert_eq!((ended.mode, ended.reason), (M::Normal, None));
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
}

// issue 28: a cluster naming a pool gets every address of every node of the pool (a
// name with several addresses gives them all, each once); an unknown pool is refused and
// changes nothing; an unused pool whose names do not resolve is listed without addresses
#[test]
fn pools_compile_to_every_address_of_their_nodes() {
    let pools = r#"
[[upstream_pools]]
name = "main"
nodes = ["es.example:9200", "10.0.0.9:9200"]
[[upstream_pools]]
name = "gone"
nodes = ["gone.example:9200"]
"#;
    let c = config(&format!("upstream = \"main\"\n{pools}"), 2);
    let fake = |u: &str| -> Result<Vec<SocketAddr>, String> {
        match u {
            "es.example:9200" => Ok(vec![
                "10.0.0.1:9200".parse().unwrap(),
                "10.0.0.2:9200".parse().unwrap(),
                "10.0.0.9:9200".parse().unwrap(),
            ]),
            "gone.example:9200" => Err("NXDOMAIN".into()),
            other => other.parse().map(|a| vec![a]).map_err(|_| "bad".into()),
        }
    };
    let settings = Settings::from_config(&c, &key());
    let cat = Arc::new(seed::catalog_of(&c, 0).unwrap());
    let checked = compile(&cat, &settings, &fake).unwrap();
    let addrs: Vec<SocketAddr> = ["10.0.0.1:9200", "10.0.0.2:9200", "10.0.0.9:9200"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let acme = checked.clusters.values().next().expect("acme");
    assert_eq!(acme.upstreams, addrs, "every address, each once");
    assert_eq!(acme.pool.as_deref(), Some("main"));
    assert_eq!(checked.pools[0].1, addrs);
    assert!(
        checked.pools[1].1.is_empty(),
        "unused and unresolved: listed, empty"
    );
    let runtime = Runtime::new(checked.catalog());
    let snap = Snapshot::assemble(&checked, &runtime, None, &settings, 1, (Instant::now(), 0));
    assert_eq!(snap.by_id("acme").unwrap().upstreams, addrs);
    assert_eq!(snap.pools.len(), 2);
    // the pool "gone" used: refused, naming the cluster and the pool
    let mut cat2 = Catalog::clone(&cat);
    let mut rec = ClusterRecord::clone(&cat2.clusters["acme"]);
    rec.upstream = Some(vec!["gone".into()]);
    cat2.clusters.insert("acme".into(), Arc::new(rec.clone()));
    let e = compile(&Arc::new(cat2.clone()), &settings, &fake).unwrap_err();
    assert!(e.to_string().contains("pool `gone`: NXDOMAIN"), "{e}");
    rec.upstream = Some(vec!["nope".into()]);
    cat2.clusters.insert("acme".into(), Arc::new(rec));
    let e = compile(&Arc::new(cat2), &settings, &fake).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cluster `acme`: no upstream pool named `nope`"
    );
}

// issue 26: a snapshot made from the previous one and a change serves what a whole one
// would (the harness compares both at every change): a rotated-out username in its grace
// taken by a new cluster, then given back when that cluster is destroyed; a destroyed
// cluster's usernames.
#[test]
fn a_snapshot_made_from_the_diff_serves_what_a_whole_one_would() {
    let mut h = Harness::new(&config("", 1));
    let renamed = Command::SetCredentials {
        id: "acme".into(),
        username: "acmeuser2".into(),
        password: PasswordHash::new(b"newpass"),
        grace_until: Some(60_000),
    };
    h.run(&[renamed], 0).unwrap();
    let snap = h.registry.load();
    assert_eq!(
        snap.by_username("acmeuser").unwrap().id,
        "acme",
        "in its grace"
    );
    let mut beta = snap.catalog.clusters["acme"].as_ref().clone();
    beta.id = "beta".into();
    beta.hostname = "beta-1".into();
    beta.username = "acmeuser".into();
    beta.previous = None;
    beta.version = 1;
    h.run(&[Command::CreateCluster(Box::new(beta))], 1).unwrap();
    assert_eq!(
        h.registry.load().by_username("acmeuser").unwrap().id,
        "beta"
    );
    h.run(&[Command::Destroy { id: "beta".into() }], 2).unwrap();
    let snap = h.registry.load();
    assert!(snap.by_id("beta").is_none());
    assert_eq!(
        snap.by_username("acmeuser").unwrap().id,
        "acme",
        "given back"
    );
    assert!(
        !snap.is_destroyed_username("acmeuser"),
        "acme's, in its grace"
    );
    assert!(snap.by_host("beta-1.us-east-1").is_none());
}
