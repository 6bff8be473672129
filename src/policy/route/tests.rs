//! Routing table tests (spec 2.1, 3, 7: 404 Cluster Not Found).

use super::*;
use crate::registry::tests::{config, key};
use crate::registry::Snapshot;
use std::time::Instant;

fn snap(extra: &str) -> Snapshot {
    Snapshot::build(&config(extra, 1), None, 1, Instant::now(), &key()).unwrap()
}

fn host(v: &str) -> Option<String> {
    let mut buf = [0; MAX_HOST];
    normalize_host(v.as_bytes(), &mut buf).map(str::to_string)
}

#[test]
fn host_normalisation() {
    assert_eq!(
        host("Acme-7F3K.US-East-1.Example.Test:9243").as_deref(),
        Some("acme-7f3k.us-east-1.example.test")
    );
    assert_eq!(
        host("acme.x.example.test.").as_deref(),
        Some("acme.x.example.test")
    );
    assert_eq!(host("[::1]:9243").as_deref(), Some("[::1]"));
    assert_eq!(host("127.0.0.1:80").as_deref(), Some("127.0.0.1"));
    assert_eq!(host("a:b"), None);
    assert_eq!(host(""), None);
    assert_eq!(host(&"a".repeat(254)), None);
}

// spec 2.1: <hostname>.<region>.<domain>, port ignored
#[test]
fn routes_by_host() {
    let s = snap("");
    assert_eq!(
        route(&s, "acme-7f3k.us-east-1.example.test", None)
            .unwrap()
            .id,
        "acme"
    );
}

// spec 7: 404 Cluster Not Found for a typo
#[test]
fn unknown_hosts_are_not_found() {
    let s = snap("");
    for h in [
        "acme-7f3k.us-east-2.example.test",
        "acme-7f3k.us-east-1.example.org",
        "acme-7f3k.us-east-1example.test",
        "x.acme-7f3k.us-east-1.example.test",
        "example.test",
    ] {
        assert_eq!(
            route(&s, h, Some(b"acmeuser")).unwrap_err(),
            EdgeError::ClusterNotFound,
            "{h}"
        );
    }
}

#[test]
fn localhost_and_ip_literals_route_by_username() {
    let s = snap("");
    for h in ["localhost", "127.0.0.1", "[::1]"] {
        assert_eq!(route(&s, h, Some(b"acmeuser")).unwrap().id, "acme");
        assert_eq!(
            route(&s, h, Some(b"nobody")).unwrap_err(),
            EdgeError::AuthRequired
        );
        assert_eq!(route(&s, h, None).unwrap_err(), EdgeError::AuthRequired);
    }
}

#[test]
fn username_routing_is_off_unless_set() {
    let mut c = config("", 1);
    c.edge.route_by_username = false;
    let s = Snapshot::build(&c, None, 1, Instant::now(), &key()).unwrap();
    assert_eq!(
        route(&s, "localhost", Some(b"acmeuser")).unwrap_err(),
        EdgeError::ClusterNotFound
    );
}

// spec 3: not provisioned yet and destroyed clusters answer 404 Cluster Not Found
#[test]
fn unprovisioned_and_destroyed_are_not_found() {
    for mode in ["provisioning", "destroyed"] {
        let extra = format!(
            "[[clusters]]\nid = \"b\"\nhostname = \"b\"\nregion = \"r\"\nclass = \"single-tenant\"\nplan = \"small\"\nusername = \"bu\"\npassword = \"bp\"\nmode = \"{mode}\"\nupstream = [\"127.0.0.1:1\"]\n"
        );
        let s = snap(&extra);
        assert_eq!(
            route(&s, "b.r.example.test", None).unwrap_err(),
            EdgeError::ClusterNotFound
        );
        assert_eq!(
            route(&s, "localhost", Some(b"bu")).unwrap_err(),
            EdgeError::ClusterNotFound
        );
    }
}
