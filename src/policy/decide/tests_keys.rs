//! `decide` for requests made with a cluster's keys (issue 29): roles, index patterns after
//! wildcard and comma expansion, expiry, on both classes (a child of `tests.rs`).

use super::*;
use crate::policy::keys::Role;

/// The keys every test cluster has (password `keypass`).
pub(super) fn test_keys() -> Vec<(&'static str, KeyGrant)> {
    let grant = |name: &str, role, indices: &[&str], expires| KeyGrant {
        id: format!("k-{name}"),
        name: name.into(),
        role,
        indices: indices.iter().map(|s| s.to_string()).collect(),
        expires,
        allowed_origins: Vec::new(),
        allowed_ips: Vec::new(),
    };
    let mut office = grant("office", Role::Search, &[], None);
    office.allowed_ips = vec![crate::cidr::Cidr::parse("198.51.100.0/24").unwrap()];
    let mut here = grant("here", Role::Search, &[], None);
    here.allowed_ips = vec![crate::cidr::Cidr::parse("203.0.113.0/24").unwrap()];
    vec![
        ("srchuser", grant("srch", Role::Search, &["site*"], None)),
        ("readuser", grant("rd", Role::Read, &[], None)),
        (
            "fulluser",
            grant("fl", Role::Full, &["site*", "logs"], None),
        ),
        // the tables' client is 203.0.113.7
        ("officeuser", office),
        ("hereuser", here),
        // expired when made: every decision comes later
        (
            "olduser",
            grant("old", Role::Search, &[], Some(Instant::now())),
        ),
    ]
}

fn key_head(line: &str, host: &str, user: &str, extra: &[&str]) -> Vec<u8> {
    let mut extra = extra.to_vec();
    let auth = basic(user, "keypass");
    extra.push(&auth);
    head(line, host, "", &extra)
}

fn denied(key: &str, action: &str, why: &str) -> Want {
    Want::Refuse(E::Forbidden {
        key: key.into(),
        action: action.into(),
        why: why.into(),
    })
}

const ROLE_SEARCH: &str = "the key's role `search` does not allow it";
const ROLE_READ: &str = "the key's role `read` does not allow it";

// issue 29: roles decide from the endpoint table; a search key's `*` becomes its patterns.
#[test]
fn roles_on_the_single_tenant_class() {
    let k = |line: &str, user: &str| key_head(line, ACME, user, &[]);
    let read = |t: &str| fwd("acme", Class::Read, t);
    table(vec![
        (
            "search key: its index",
            k("GET /site1/_search HTTP/1.1", "srchuser"),
            None,
            read("/site1/_search"),
        ),
        (
            "search key: `*` confined to site*",
            k("GET /*/_search HTTP/1.1", "srchuser"),
            None,
            read("/site*/_search"),
        ),
        (
            "search key: no index is every index: site*",
            k("POST /_search?size=1 HTTP/1.1", "srchuser"),
            None,
            read("/site*/_search?size=1"),
        ),
        (
            "search key: _all",
            k("GET /_all/_count HTTP/1.1", "srchuser"),
            None,
            read("/site*/_count"),
        ),
        (
            "search key: a comma list with a foreign index",
            k("GET /site1,secret/_search HTTP/1.1", "srchuser"),
            None,
            denied(
                "srch",
                "GET _search",
                "index `secret` is outside the key's indices",
            ),
        ),
        (
            "search key: a wildcard narrower than its pattern stays",
            k("GET /site-2*/_search HTTP/1.1", "srchuser"),
            None,
            read("/site-2*/_search"),
        ),
        (
            "search key: a wildcard that overlaps but is not contained",
            k("GET /*1/_search HTTP/1.1", "srchuser"),
            None,
            denied(
                "srch",
                "GET _search",
                "index `*1` is outside the key's indices",
            ),
        ),
        (
            "search key: s* is wider: site* searched",
            k("GET /s*,-site9/_search HTTP/1.1", "srchuser"),
            None,
            read("/site*,-site9/_search"),
        ),
        (
            "search key: date math resolved by the edge first, then checked",
            k("GET /%3Csite-%7Bnow%2Fd%7D%3E/_search HTTP/1.1", "srchuser"),
            None,
            read("/site-2024.03.22/_search"),
        ),
        (
            "search key: a date-math name outside the patterns",
            k("GET /%3Csecret-%7Bnow%2Fd%7D%3E/_search HTTP/1.1", "srchuser"),
            None,
            denied(
                "srch",
                "GET _search",
                "index `secret-2024.03.22` is outside the key's indices",
            ),
        ),
        (
            "search key: GET of a document",
            k("GET /site1/_doc/1 HTTP/1.1", "srchuser"),
            None,
            read("/site1/_doc/1"),
        ),
        (
            "search key: GET /",
            k("GET / HTTP/1.1", "srchuser"),
            None,
            read("/"),
        ),
        (
            "search key: scroll continuation",
            k("POST /_search/scroll HTTP/1.1", "srchuser"),
            None,
            read("/_search/scroll"),
        ),
        (
            "search key: no write",
            k("PUT /site1/_doc/1 HTTP/1.1", "srchuser"),
            None,
            denied("srch", "PUT _doc", ROLE_SEARCH),
        ),
        (
            "search key: no _bulk",
            k("POST /_bulk HTTP/1.1", "srchuser"),
            None,
            denied("srch", "POST _bulk", ROLE_SEARCH),
        ),
        (
            "search key: a read outside its list (_mapping)",
            k("GET /site1/_mapping HTTP/1.1", "srchuser"),
            None,
            denied("srch", "GET _mapping", ROLE_SEARCH),
        ),
        (
            "search key: no index deletion",
            k("DELETE /site1 HTTP/1.1", "srchuser"),
            None,
            denied("srch", "DELETE index", ROLE_SEARCH),
        ),
        (
            "read key: any read, no index limit",
            k("GET /secret/_mapping HTTP/1.1", "readuser"),
            None,
            read("/secret/_mapping"),
        ),
        (
            "read key: _cat/indices",
            k("GET /_cat/indices HTTP/1.1", "readuser"),
            None,
            read("/_cat/indices"),
        ),
        (
            "read key: no write",
            k("POST /secret/_doc HTTP/1.1", "readuser"),
            None,
            denied("rd", "POST _doc", ROLE_READ),
        ),
        (
            "read key: no template change",
            k("PUT /_template/t HTTP/1.1", "readuser"),
            None,
            denied("rd", "PUT _template", ROLE_READ),
        ),
        (
            "read key: no alias change",
            k("POST /_aliases HTTP/1.1", "readuser"),
            None,
            denied("rd", "POST _aliases", ROLE_READ),
        ),
        (
            "full key: writes to its indices",
            k("PUT /logs/_doc/1 HTTP/1.1", "fulluser"),
            None,
            fwd("acme", Class::Update, "/logs/_doc/1"),
        ),
        (
            "full key: not to others",
            k("PUT /secret/_doc/1 HTTP/1.1", "fulluser"),
            None,
            denied(
                "fl",
                "PUT _doc",
                "index `secret` is outside the key's indices",
            ),
        ),
        (
            "full key limited to indices: no cluster-wide endpoint",
            k("GET /_nodes/stats HTTP/1.1", "fulluser"),
            None,
            denied(
                "fl",
                "GET _nodes/stats",
                "a restricted key may call the endpoints the edge reads only (it cannot check what this one names)",
            ),
        ),
        (
            "expired key: 401",
            k("GET /site1/_search HTTP/1.1", "olduser"),
            None,
            Want::Refuse(E::AuthRequired),
        ),
        (
            "a key from outside its allowed_ips: 403 before its password is compared",
            head(
                "GET /site1/_search HTTP/1.1",
                ACME,
                "",
                &[&basic("officeuser", "wrong")],
            ),
            None,
            Want::Refuse(E::Forbidden {
                key: "office".into(),
                action: "use".into(),
                why: "the client address 203.0.113.7 is not in the key's allowed_ips".into(),
            }),
        ),
        (
            "a key from inside its allowed_ips",
            k("GET /site1/_search HTTP/1.1", "hereuser"),
            None,
            read("/site1/_search"),
        ),
        (
            "a key's wrong password: 401",
            head(
                "GET /site1/_search HTTP/1.1",
                ACME,
                "",
                &[&basic("srchuser", "nope")],
            ),
            None,
            Want::Refuse(E::AuthRequired),
        ),
    ]);
}

// issue 29: on the multitenant class the confined names are then put in the tenant's
// namespace: a key for `site*` searching `*` reaches `<P>site*` only.
#[test]
fn multitenant_confines_then_prefixes() {
    let p = prefix();
    let p = p.as_str();
    let k = |line: &str| key_head(line, MT, "srchuser", &[]);
    let read = |t: String| fwd("mt", Class::Read, &t);
    table(vec![
        (
            "`*` is the key's site* in the tenant's namespace",
            k("GET /*/_search HTTP/1.1"),
            None,
            read(format!("/{p}site*/_search")),
        ),
        (
            "no index: the key's patterns, not the tenant's <P>*",
            k("GET /_search HTTP/1.1"),
            None,
            read(format!("/{p}site*/_search")),
        ),
        (
            "_count across a comma list",
            k("GET /site1,site2/_count HTTP/1.1"),
            None,
            read(format!("/{p}site1,{p}site2/_count")),
        ),
        (
            "a foreign name: 403 before any rewriting",
            k("GET /other/_search HTTP/1.1"),
            None,
            denied(
                "srch",
                "GET _search",
                "index `other` is outside the key's indices",
            ),
        ),
    ]);
}

// issue 29: a key limited to indices sends bodies that may name indices: the decision asks
// for them to be read and checked; documents are data and are not.
#[test]
fn bodies_to_check() {
    let dir = clusters();
    let check = |line: &str, user: &str, ct: &str| {
        let raw = key_head(line, ACME, user, &[ct, "Content-Length: 10"]);
        decided(&dir, &raw, None, 1000, |d, _| {
            d.map(|d| d.key_body.map(|b| (b.kind, b.action)))
                .map_err(|r| r.error)
        })
    };
    assert_eq!(
        check(
            "POST /_msearch HTTP/1.1",
            "srchuser",
            "Content-Type: application/x-ndjson"
        ),
        Ok(Some((BodyKind::Msearch, "POST _msearch".into())))
    );
    assert_eq!(
        check("POST /_mget HTTP/1.1", "srchuser", JSON),
        Ok(Some((BodyKind::Mget, "POST _mget".into())))
    );
    assert_eq!(
        check("POST /site1/_search HTTP/1.1", "srchuser", JSON),
        Ok(Some((BodyKind::Search, "POST _search".into())))
    );
    assert_eq!(
        check("PUT /logs/_doc/1 HTTP/1.1", "fulluser", JSON),
        Ok(None),
        "a document is data"
    );
    assert_eq!(
        check("POST /_search HTTP/1.1", "readuser", JSON),
        Ok(Some((BodyKind::Search, "POST _search".into()))),
        "a key without indices: read for its point-in-time token (tenancy::key_ids)"
    );
    assert_eq!(
        check("POST /_count HTTP/1.1", "readuser", JSON),
        Ok(None),
        "a key without indices: a body that carries no context id"
    );
}
