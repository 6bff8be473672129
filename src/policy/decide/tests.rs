//! `decide` from a table: raw request heads against plain-data clusters, no registry and
//! no socket. Each row names the spec section it checks.

use std::time::Instant;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::*;
use crate::config::ClusterClass;
use crate::policy::auth::credentials_match;
use crate::policy::mode::{Mode, ModeView, SetBy};
use crate::proto::HeadLimits;
use crate::tenancy::TenancyKey;

/// One cluster, as plain data.
#[derive(Debug)]
struct Plain {
    id: &'static str,
    hostname_region: &'static str,
    user: &'static str,
    pass: &'static str,
    class: ClusterClass,
    mode: Mode,
    reachable: bool,
    prefix: Option<Prefix>,
    /// Keys: username (password `keypass`) and grant.
    keys: Vec<(&'static str, KeyGrant)>,
}

impl ClusterView for Plain {
    fn id(&self) -> &str {
        self.id
    }
    fn reachable(&self) -> bool {
        self.reachable
    }
    fn authenticate(
        &self,
        user: &[u8],
        pass: &[u8],
        client: std::net::IpAddr,
        now: Instant,
    ) -> Result<Principal<'_>, crate::policy::keys::AuthFail> {
        use crate::policy::keys::AuthFail;
        if let Some((_, k)) = self.keys.iter().find(|(u, _)| u.as_bytes() == user) {
            if !crate::cidr::allowed(&k.allowed_ips, client) {
                let key = k.name.clone();
                return Err(AuthFail::Address { key });
            }
            let ok = pass == b"keypass" && k.live_at(now);
            return ok.then_some(Principal::Key(k)).ok_or(AuthFail::Credentials);
        }
        credentials_match(user, pass, self.user.as_bytes(), self.pass.as_bytes())
            .then_some(Principal::Master)
            .ok_or(AuthFail::Credentials)
    }
    fn allows_origin(&self, origin: &[u8], now: Instant) -> bool {
        self.keys
            .iter()
            .any(|(_, k)| k.live_at(now) && crate::policy::cors::listed(&k.allowed_origins, origin))
    }
    fn class(&self) -> ClusterClass {
        self.class
    }
    fn mode(&self, _now: Instant) -> ModeView {
        self.mode.into()
    }
    fn prefix(&self) -> Option<Prefix> {
        self.prefix
    }
    fn max_bulk_actions(&self) -> u64 {
        10
    }
}

struct Clusters(Vec<Plain>);

impl Directory for Clusters {
    type Cluster = Plain;
    fn domain(&self) -> &str {
        "example.test"
    }
    fn route_by_username(&self) -> bool {
        true
    }
    fn by_host(&self, hostname_region: &str) -> Option<&Plain> {
        self.0.iter().find(|c| c.hostname_region == hostname_region)
    }
    fn by_username(&self, username: &str) -> Option<&Plain> {
        self.0.iter().find(|c| c.user == username)
    }
}

fn prefix() -> Prefix {
    Prefix::derive(&TenancyKey::from_bytes([7; 32]), "mt")
}

fn cluster(id: &'static str, mode: Mode) -> Plain {
    Plain {
        id,
        hostname_region: match id {
            "acme" => "acme-7f3k.us-east-1",
            "mt" => "mt-1.eu-west-1",
            _ => "other.us-east-1",
        },
        user: match id {
            "acme" => "acmeuser",
            "mt" => "mtuser",
            _ => "otheruser",
        },
        pass: "secret1",
        class: if id == "mt" {
            ClusterClass::Multitenant
        } else {
            ClusterClass::SingleTenant
        },
        mode,
        reachable: true,
        prefix: (id == "mt").then(prefix),
        keys: keys::test_keys(),
    }
}

fn clusters() -> Clusters {
    let mut provisioning = cluster("other", Mode::Provisioning);
    provisioning.reachable = false;
    Clusters(vec![
        cluster("acme", Mode::Normal),
        cluster("mt", Mode::Normal),
        provisioning,
    ])
}

const JSON: &str = "Content-Type: application/json";
const ACME: &str = "acme-7f3k.us-east-1.example.test";
const MT: &str = "mt-1.eu-west-1.example.test";

fn basic(user: &str, pass: &str) -> String {
    format!(
        "Authorization: Basic {}",
        STANDARD.encode(format!("{user}:{pass}"))
    )
}

/// A head: `line`, then `Host: host` (none when empty), the cluster's credentials for
/// `creds` (`acme`, `mt`; anything else: none) and `extra` header lines.
fn head(line: &str, host: &str, creds: &str, extra: &[&str]) -> Vec<u8> {
    let mut s = format!("{line}\r\n");
    if !host.is_empty() {
        s.push_str(&format!("Host: {host}\r\n"));
    }
    match creds {
        "acme" => s.push_str(&format!("{}\r\n", basic("acmeuser", "secret1"))),
        "mt" => s.push_str(&format!("{}\r\n", basic("mtuser", "secret1"))),
        "wrong" => s.push_str(&format!("{}\r\n", basic("acmeuser", "nope"))),
        _ => {}
    }
    for h in extra {
        s.push_str(&format!("{h}\r\n"));
    }
    s.push_str("\r\n");
    s.into_bytes()
}

/// What a row expects.
#[derive(Debug, PartialEq)]
enum Want {
    /// Forwarded to `cluster` with this target, body plan, reservation, auto-created index,
    /// and (multitenant) a tenant plan.
    Forward {
        cluster: &'static str,
        class: Class,
        target: String,
        body: BodyPlan,
        reserve: Reservation,
        auto_create: &'static str,
        tenant: bool,
    },
    Refuse(EdgeError),
}

fn fwd(cluster: &'static str, class: Class, target: &str) -> Want {
    Want::Forward {
        cluster,
        class,
        target: target.to_string(),
        body: BodyPlan::Stream,
        reserve: Reservation::None,
        auto_create: "",
        tenant: cluster == "mt",
    }
}

fn with_body(mut w: Want, plan: BodyPlan, reserve: Reservation, create: &'static str) -> Want {
    if let Want::Forward {
        body,
        reserve: r,
        auto_create,
        ..
    } = &mut w
    {
        (*body, *r, *auto_create) = (plan, reserve, create);
    }
    w
}

/// Parses `raw` (which must be a whole head) and decides on it; `f` reads the outcome.
fn decided<R>(
    dir: &Clusters,
    raw: &[u8],
    sni: Option<&str>,
    max_body: u64,
    f: impl FnOnce(Result<Decision<'_, Plain>, Refused<'_, Plain>>, Targets) -> R,
) -> R {
    let mut h = RequestHead::new();
    assert_eq!(
        h.parse(raw, &HeadLimits::default()),
        Ok(true),
        "{}",
        String::from_utf8_lossy(raw)
    );
    let listener = Listener {
        client: "203.0.113.7".parse().unwrap(),
        sni,
        max_body,
        ids: None,
        // 2024-03-22T12:00:00Z
        wall_ms: 1_711_108_800_000,
    };
    let mut out = Targets::default();
    let d = decide(dir, &h, raw, &listener, Instant::now(), &mut out);
    f(d, out)
}

fn run(dir: &Clusters, raw: &[u8], sni: Option<&str>, max_body: u64) -> Want {
    decided(dir, raw, sni, max_body, |d, out| match d {
        Err(r) => Want::Refuse(r.error),
        Ok(d) => Want::Forward {
            cluster: d.cluster.id,
            class: d.class,
            target: String::from_utf8(out.target).unwrap(),
            body: d.body,
            reserve: d.reserve,
            auto_create: String::from_utf8(out.auto_create).unwrap().leak(),
            tenant: d.tenant.is_some(),
        },
    })
}

fn table(rows: Vec<(&str, Vec<u8>, Option<&str>, Want)>) {
    let dir = clusters();
    for (spec, raw, sni, want) in rows {
        let got = run(&dir, &raw, sni, 1000);
        assert_eq!(got, want, "{spec}: {}", String::from_utf8_lossy(&raw));
    }
}

use EdgeError as E;

#[path = "tests_bodies.rs"]
mod bodies;

#[path = "tests_keys.rs"]
mod keys;

// spec 2.1, 5, 7: route by Host (port and case ignored) or by username, then credentials.
#[test]
fn routing_and_authentication() {
    let search = "GET /books/_search?q=a HTTP/1.1";
    let ok = || fwd("acme", Class::Read, "/books/_search?q=a");
    table(vec![
        ("2.1 by host", head(search, ACME, "acme", &[]), None, ok()),
        (
            "2.1 port and case ignored",
            head(
                search,
                "ACME-7f3k.US-east-1.example.test.:9243",
                "acme",
                &[],
            ),
            None,
            ok(),
        ),
        (
            "7 unknown host: 404",
            head(search, "nope.us-east-1.example.test", "acme", &[]),
            None,
            Want::Refuse(E::ClusterNotFound),
        ),
        (
            "3 not provisioned: 404 before any credential check",
            head(search, "other.us-east-1.example.test", "", &[]),
            None,
            Want::Refuse(E::ClusterNotFound),
        ),
        (
            "5.3 no credentials: 401",
            head(search, ACME, "", &[]),
            None,
            Want::Refuse(E::AuthRequired),
        ),
        (
            "5.4 wrong password: 401",
            head(search, ACME, "wrong", &[]),
            None,
            Want::Refuse(E::AuthRequired),
        ),
        (
            "5.1 another cluster's credentials: 401",
            head(search, ACME, "mt", &[]),
            None,
            Want::Refuse(E::AuthRequired),
        ),
        (
            "2.1 localhost routes by username",
            head(search, "localhost:9243", "acme", &[]),
            None,
            ok(),
        ),
        (
            "2.1 an IP literal routes by username",
            head(search, "127.0.0.1", "mt", &[]),
            None,
            with_body(
                fwd(
                    "mt",
                    Class::Read,
                    &format!("/{}books/_search?q=a", prefix().as_str()),
                ),
                BodyPlan::Stream,
                Reservation::None,
                "",
            ),
        ),
        (
            "5.3 localhost without credentials: 401",
            head(search, "localhost", "", &[]),
            None,
            Want::Refuse(E::AuthRequired),
        ),
        (
            "HTTP/1.0 without Host is localhost",
            head("GET /books/_search?q=a HTTP/1.0", "", "acme", &[]),
            None,
            ok(),
        ),
        (
            "a Host that is no host name: 400",
            head(search, "a:b", "acme", &[]),
            None,
            Want::Refuse(E::BadRequest("invalid Host header")),
        ),
        (
            "TLS server name and Host agree (case-insensitive)",
            head(search, ACME, "acme", &[]),
            Some("Acme-7f3k.us-east-1.example.test"),
            ok(),
        ),
        (
            "TLS server name and Host disagree: 421",
            head(search, ACME, "acme", &[]),
            Some(MT),
            Want::Refuse(E::Misdirected),
        ),
    ]);
}

// spec 1.4, 3, 7, 8: limits, paths, blocked endpoints and modes, in the order they apply.
#[test]
fn limits_paths_and_modes() {
    let put = |len: u64| {
        head(
            "PUT /books/_doc/1 HTTP/1.1",
            ACME,
            "acme",
            &[&format!("Content-Length: {len}")],
        )
    };
    table(vec![
        (
            "8 body at the limit",
            put(1000),
            None,
            fwd("acme", Class::Update, "/books/_doc/1"),
        ),
        (
            "8 body over the limit: 413 from Content-Length",
            put(1001),
            None,
            Want::Refuse(E::BodyTooLarge(1000)),
        ),
        (
            "a path that does not decode: 400",
            head("GET /b%zz/_search HTTP/1.1", ACME, "acme", &[]),
            None,
            Want::Refuse(E::BadRequest(
                "invalid percent-encoding in the request path",
            )),
        ),
        (
            "1.4 blocked endpoint: 501",
            head("GET /_snapshot HTTP/1.1", ACME, "acme", &[]),
            None,
            Want::Refuse(E::NotImplemented("_snapshot".into())),
        ),
        (
            "the path is forwarded as classified: canonical, query kept",
            head(
                "GET //books/./%5Fsearch/?q=a%20b HTTP/1.1",
                ACME,
                "acme",
                &[],
            ),
            None,
            fwd("acme", Class::Read, "/books/_search?q=a%20b"),
        ),
        (
            "absolute form without a path (fuzz finding): origin form `/?x`",
            head(&format!("GET http://{ACME}?x HTTP/1.1"), "h", "acme", &[]),
            None,
            fwd("acme", Class::Read, "/?x"),
        ),
    ]);
    // The mode applies after routing and authentication (spec 3).
    let modes = [
        (Mode::ReadOnly(SetBy::Operator), Some(E::ReadOnly(None))),
        (Mode::Maintenance, Some(E::Maintenance(None))),
        (
            Mode::Disabled(SetBy::Metering),
            Some(E::OverageDisabled(None)),
        ),
        (Mode::Normal, None),
    ];
    for (mode, refusal) in modes {
        let dir = Clusters(vec![cluster("acme", mode)]);
        let update = run(&dir, &put(5), None, 1000);
        let want = match &refusal {
            Some(e) => Want::Refuse(e.clone()),
            None => fwd("acme", Class::Update, "/books/_doc/1"),
        };
        assert_eq!(update, want, "{mode:?} update");
        let search = head("GET /books/_search HTTP/1.1", ACME, "acme", &[]);
        let read = run(&dir, &search, None, 1000);
        let want = match refusal {
            Some(E::OverageDisabled(None)) => Want::Refuse(E::OverageDisabled(None)),
            _ => fwd("acme", Class::Read, "/books/_search"),
        };
        assert_eq!(read, want, "{mode:?} read");
    }
}

#[test]
fn the_bulk_limit_and_the_created_index() {
    let raw = head("POST /_bulk HTTP/1.1", MT, "mt", &[]);
    let limit = decided(&clusters(), &raw, None, 1000, |d, _| {
        d.unwrap().bulk_limit()
    });
    assert_eq!(limit, Some(10));
    assert_eq!(created_index(b"/books"), b"books");
    assert_eq!(created_index(b"/a%2Fb?wait_for_active_shards=1"), b"a%2Fb");
    assert_eq!(created_index(b"/"), b"");
}

// issue 13: a refusal counts for the cluster once its credentials opened one (413 on the
// Content-Length, a blocked endpoint, a mode refusal), never before (a wrong password, an
// unknown host): a client without credentials must not move a cluster's figures.
#[test]
fn refusals_name_the_cluster_only_after_authentication() {
    let refused = |dir: &Clusters, raw: Vec<u8>| -> (EdgeError, Option<&'static str>) {
        decided(dir, &raw, None, 1000, |d, _| {
            let r = d.unwrap_err();
            (r.error, r.cluster.map(|c| c.id))
        })
    };
    let dir = clusters();
    let big = head(
        "POST /books/_doc HTTP/1.1",
        ACME,
        "acme",
        &["Content-Length: 1001"],
    );
    assert_eq!(refused(&dir, big), (E::BodyTooLarge(1000), Some("acme")));
    let blocked = head("GET /_snapshot HTTP/1.1", ACME, "acme", &[]);
    assert_eq!(
        refused(&dir, blocked),
        (E::NotImplemented("_snapshot".into()), Some("acme"))
    );
    let wrong = head("GET / HTTP/1.1", ACME, "wrong", &[]);
    assert_eq!(refused(&dir, wrong), (E::AuthRequired, None));
    let nowhere = head(
        "GET / HTTP/1.1",
        "nobody.us-east-1.example.test",
        "acme",
        &[],
    );
    assert_eq!(refused(&dir, nowhere).1, None);
    let read_only = Clusters(vec![cluster("acme", Mode::ReadOnly(SetBy::Operator))]);
    let update = head("PUT /books HTTP/1.1", ACME, "acme", &[]);
    assert_eq!(
        refused(&read_only, update),
        (E::ReadOnly(None), Some("acme"))
    );
}

// attacks-10 r2 #5 (spec 1.6): on the multitenant class an identity header is refused (400
// naming it) and a malformed `traceparent` too; a single-tenant cluster owns its upstream
// and forwards them.
#[test]
fn identity_headers_are_refused_on_the_multitenant_class_only() {
    let p = prefix();
    let mt_search = format!("/{}books/_search", p.as_str());
    for extra in [
        "es-security-runas-user: elastic",
        "X-Proxy-User: admin",
        "x-proxy-roles: all_access",
        "opendistro_security_impersonate_as: admin",
        "traceparent: hello",
    ] {
        let name = extra.split(':').next().unwrap().to_ascii_lowercase();
        let raw = head("GET /books/_search HTTP/1.1", MT, "mt", &[extra]);
        match run(&clusters(), &raw, None, 1000) {
            Want::Refuse(E::Refused {
                status: 400,
                reason,
                ..
            }) => assert!(reason.to_ascii_lowercase().contains(&name), "{reason}"),
            other => panic!("{extra}: {other:?}"),
        }
        let raw = head("GET /books/_search HTTP/1.1", ACME, "acme", &[extra]);
        let want = fwd("acme", Class::Read, "/books/_search");
        assert_eq!(run(&clusters(), &raw, None, 1000), want, "{extra}");
    }
    let clients = [
        "User-Agent: elasticsearch-py/8.19.3",
        "X-Opaque-Id: job-1",
        "Cookie: a=b",
        "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    ];
    let raw = head("GET /books/_search HTTP/1.1", MT, "mt", &clients);
    let want = fwd("mt", Class::Read, &mt_search);
    assert_eq!(run(&clusters(), &raw, None, 1000), want);
}
