//! The admin API without sockets: auth, every endpoint's answers and errors, ETag /
//! If-Match, Idempotency-Key.

use super::*;
use crate::control::sqlite::{SqliteStore, DB_FILE};
use crate::registry::catalog::tests::plan;
use crate::registry::{Command, Settings};
use crate::tenancy::TenancyKey;
use searchgate_core::percent::decode_query;

const TOKEN: &str = "test-token-0123456789";

pub(super) fn api(dir: &std::path::Path) -> Api {
    let store = SqliteStore::open(&dir.join(DB_FILE)).unwrap();
    let settings = Settings {
        domain: "example.test".into(),
        route_by_username: false,
        engine: Some("127.0.0.1:9201".parse().unwrap()),
        engine_contexts: 500,
        key: TenancyKey::from_bytes([3; 32]),
        // a named pool no cluster uses until a test puts one there
        pools: vec![Arc::new(crate::config::PoolSpec {
            name: "main".into(),
            nodes: vec!["127.0.0.1:9555".into(), "127.0.0.1:9556".into()],
            health: Default::default(),
        })],
        health: Default::default(),
    };
    let mut plane = Plane::open(Box::new(store), settings).unwrap();
    plane
        .submit(crate::control::Change {
            actor: "file".into(),
            cmds: vec![
                Command::PutPlan(plan("small", 2)),
                Command::PutPlan(plan("big", 8)),
            ],
            ..Default::default()
        })
        .unwrap();
    let observe = observe::Observe {
        hub: Arc::new(crate::metrics::MetricsHub::default()),
        registry: plane.registry().clone(),
        nodes: Arc::new(crate::nodes::NodeBook::new(Default::default())),
    };
    Api {
        observe,
        plane: Arc::new(Mutex::new(plane)),
        token: AdminToken::new(TOKEN),
        env: ApiEnv {
            scheme: "https".into(),
            port: Some(9243),
            domain: "example.test".into(),
            route_by_username: true,
            default_region: "local".into(),
            shared_upstreams: vec![None, Some("127.0.0.1:9555".into())],
        },
    }
}

pub(super) fn req(method: Method, path: &str, body: Option<Value>) -> Request {
    let (path, params) = match path.split_once('?') {
        Some((p, q)) => (p.to_string(), decode_query(q.as_bytes()).unwrap()),
        None => (path.to_string(), Vec::new()),
    };
    Request {
        method,
        path,
        params,
        authorization: Some(format!("Bearer {TOKEN}").into_bytes()),
        idempotency_key: None,
        if_match: None,
        content_type: Some("application/json".into()),
        body: body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
    }
}

pub(super) fn create(a: &Api, body: Value) -> Response {
    handle(a, &req(Method::Post, "/v1/clusters", Some(body)))
}

#[test]
fn the_token_is_required() {
    let dir = tempfile::tempdir().unwrap();
    let a = api(dir.path());
    let mut r = req(Method::Get, "/v1/clusters", None);
    r.authorization = None;
    let resp = handle(&a, &r);
    assert_eq!(resp.status, 401);
    assert_eq!(resp.body["error"]["type"], "unauthorized");
    r.authorization = Some(b"Bearer wrong-token-xxxxxxxx".to_vec());
    assert_eq!(handle(&a, &r).status, 401);
}

// issue 11: create returns the credentials once, stores only their hash
#[test]
fn create_show_list_and_placement() {
    let dir = tempfile::tempdir().unwrap();
    let a = api(dir.path());
    let r = create(&a, json!({"plan": "small", "name": "My Shop!"}));
    assert_eq!(r.status, 201, "{}", r.body);
    let b = &r.body;
    let (id, user, pass) = (
        b["id"].as_str().unwrap(),
        b["username"].as_str().unwrap(),
        b["password"].as_str().unwrap(),
    );
    assert!(pass.len() == 24 && pass.chars().all(|c| c.is_ascii_alphanumeric()));
    assert!(
        b["hostname"].as_str().unwrap().starts_with("my-shop-"),
        "{b}"
    );
    assert_eq!(b["state"], "running", "multitenant: normal at once");
    assert_eq!(b["region"], "local");
    let host = format!(
        "{}.local.example.test:9243",
        b["hostname"].as_str().unwrap()
    );
    assert_eq!(b["url"], format!("https://{user}:{pass}@{host}"));
    assert_eq!(b["address"], format!("https://{user}@{host}"));
    assert_eq!(b["upstream"], "embedded engine");
    assert_eq!(r.etag, Some(1));
    // The second multitenant cluster goes to the less loaded shared upstream.
    let second = create(&a, json!({"plan": "small", "region": "r2"}));
    assert_eq!(second.body["upstream"], json!(["127.0.0.1:9555"]));

    let shown = handle(&a, &req(Method::Get, &format!("/v1/clusters/{id}"), None));
    assert_eq!(shown.status, 200);
    assert!(
        shown.body.get("password").is_none(),
        "never again: {}",
        shown.body
    );
    assert!(!shown.body.to_string().contains(pass));
    assert_eq!(shown.body["usage"]["shards"], 0);
    let stored = a.plane().snapshot().catalog.clusters[id].clone();
    assert!(stored.password.verify(pass.as_bytes()));
    let list = handle(
        &a,
        &req(Method::Get, "/v1/clusters?plan=small&state=running", None),
    );
    assert_eq!(list.body["clusters"].as_array().unwrap().len(), 2);
    let none = handle(&a, &req(Method::Get, "/v1/clusters?plan=big", None));
    assert_eq!(none.body["clusters"], json!([]));
    let plans = handle(&a, &req(Method::Get, "/v1/plans", None));
    assert_eq!(plans.body["plans"][0]["monthly_price_cents"], 900);
}

#[test]
fn bad_requests_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let a = api(dir.path());
    let cases: Vec<(Request, u16, &str)> = vec![
        (
            req(Method::Post, "/v1/clusters", Some(json!({"plan": "gold"}))),
            400,
            "no plan `gold`",
        ),
        (
            req(
                Method::Post,
                "/v1/clusters",
                Some(json!({"plan": "small", "colour": 1})),
            ),
            400,
            "colour",
        ),
        (
            req(
                Method::Post,
                "/v1/clusters",
                Some(json!({"plan": "small", "class": "single-tenant"})),
            ),
            400,
            "needs its own `upstream`",
        ),
        (
            req(
                Method::Post,
                "/v1/clusters",
                Some(json!({"plan": "small", "class": "shared"})),
            ),
            400,
            "multitenant or single-tenant",
        ),
        (
            req(Method::Get, "/v1/clusters/nope", None),
            404,
            "no cluster `nope`",
        ),
        (
            req(
                Method::Put,
                "/v1/clusters/nope/plan",
                Some(json!({"plan": "big"})),
            ),
            404,
            "no cluster",
        ),
        (
            req(Method::Patch, "/v1/clusters", None),
            405,
            "PATCH is not allowed",
        ),
        (req(Method::Get, "/v2/x", None), 404, "no endpoint"),
        (
            req(Method::Get, "/v1/audit?limit=x", None),
            400,
            "`limit` must be a number",
        ),
    ];
    for (r, status, words) in cases {
        let resp = handle(&a, &r);
        assert_eq!(resp.status, status, "{} {}: {}", r.path, words, resp.body);
        assert_eq!(resp.body["status"], status);
        let reason = resp.body["error"]["reason"].as_str().unwrap();
        assert!(reason.contains(words), "{reason}");
    }
    let mut r = req(Method::Post, "/v1/clusters", Some(json!({"plan": "small"})));
    r.content_type = Some("text/plain".into());
    assert_eq!(handle(&a, &r).status, 415);
}

// issue 11: updates carry a version; two dashboards cannot overwrite each other silently
#[test]
fn if_match_refuses_a_stale_update() {
    let dir = tempfile::tempdir().unwrap();
    let a = api(dir.path());
    let id = create(&a, json!({"plan": "small"})).body["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut first = req(
        Method::Put,
        &format!("/v1/clusters/{id}/plan"),
        Some(json!({"plan": "big"})),
    );
    first.if_match = Some("\"1\"".into());
    let r = handle(&a, &first);
    assert_eq!((r.status, r.etag), (200, Some(2)), "{}", r.body);
    let mut second = req(
        Method::Put,
        &format!("/v1/clusters/{id}/mode"),
        Some(json!({"mode": "read-only", "reason": "audit"})),
    );
    second.if_match = Some("\"1\"".into());
    let r = handle(&a, &second);
    assert_eq!(r.status, 412, "{}", r.body);
    assert_eq!(r.body["error"]["version"], 2);
    let shown = handle(&a, &req(Method::Get, &format!("/v1/clusters/{id}"), None));
    assert_eq!(shown.body["mode"], "normal", "nothing changed");
    second.if_match = Some("W/\"2\"".into());
    assert_eq!(handle(&a, &second).status, 200);
}

// issue 11: a retried create returns the same cluster, no second one, no second secret
#[test]
fn idempotency_key_replays_without_secrets_and_refuses_other_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let a = api(dir.path());
    let mut r = req(Method::Post, "/v1/clusters", Some(json!({"plan": "small"})));
    r.idempotency_key = Some("key-1".into());
    let first = handle(&a, &r);
    assert_eq!(first.status, 201);
    assert_eq!(first.body["password"].as_str().unwrap().len(), 24);
    let again = handle(&a, &r);
    assert_eq!(again.status, 201);
    assert!(again.replayed);
    assert_eq!(again.body["id"], first.body["id"]);
    assert_eq!(
        (again.body["password"].as_str(), again.body["url"].as_str()),
        (Some(""), Some(""))
    );
    let list = handle(&a, &req(Method::Get, "/v1/clusters", None));
    assert_eq!(
        list.body["clusters"].as_array().unwrap().len(),
        1,
        "no second cluster"
    );
    let mut other = req(Method::Post, "/v1/clusters", Some(json!({"plan": "big"})));
    other.idempotency_key = Some("key-1".into());
    let refused = handle(&a, &other);
    assert_eq!(refused.status, 422);
    assert_eq!(refused.body["error"]["type"], "idempotency_key_reused");
}

#[test]
fn mode_rotate_delete_and_audit() {
    let dir = tempfile::tempdir().unwrap();
    let a = api(dir.path());
    let created = create(&a, json!({"plan": "small"}));
    let id = created.body["id"].as_str().unwrap().to_string();
    let path = |s: &str| format!("/v1/clusters/{id}{s}");
    let no_reason = handle(
        &a,
        &req(
            Method::Put,
            &path("/mode"),
            Some(json!({"mode": "disabled"})),
        ),
    );
    assert_eq!(no_reason.status, 400);
    let m = handle(
        &a,
        &req(
            Method::Put,
            &path("/mode"),
            Some(json!({"mode": "maintenance", "reason": "upgrade", "until": "10m"})),
        ),
    );
    assert_eq!(m.status, 200, "{}", m.body);
    assert_eq!(
        (m.body["mode"].as_str(), m.body["mode_reason"].as_str()),
        (Some("maintenance"), Some("upgrade"))
    );
    assert!(m.body["mode_until"].as_str().unwrap().ends_with('Z'));
    let rot = handle(
        &a,
        &req(
            Method::Post,
            &path("/credentials/rotate"),
            Some(json!({"grace": "2m"})),
        ),
    );
    assert_eq!(rot.status, 200, "{}", rot.body);
    assert_ne!(rot.body["password"], created.body["password"]);
    assert_ne!(rot.body["username"], created.body["username"]);
    assert!(rot.body["previous_credentials_valid_until"].is_string());
    let del = handle(&a, &req(Method::Delete, &path(""), None));
    assert_eq!(
        (del.status, del.body["state"].as_str()),
        (200, Some("destroyed"))
    );
    let gone = handle(
        &a,
        &req(Method::Put, &path("/plan"), Some(json!({"plan": "big"}))),
    );
    assert_eq!(gone.status, 410);
    let audit = handle(
        &a,
        &req(Method::Get, &format!("/v1/audit?cluster={id}"), None),
    );
    let actions: Vec<&str> = audit.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "cluster.destroy",
            "cluster.credentials",
            "cluster.mode",
            "cluster.create"
        ]
    );
    let text = audit.body.to_string();
    assert!(!text.contains(rot.body["password"].as_str().unwrap()));
    assert!(!text.contains("hmac-sha256"), "no hashes either");
    assert!(audit.body["entries"][0]["actor"]
        .as_str()
        .unwrap()
        .starts_with("token:"));
}

// issue 32: a rotation's grace is shown while it lasts and not after; with
// `route_by_username` the view and a create's secrets carry the `localhost` URL too
#[test]
fn the_grace_shows_while_it_lasts_and_the_localhost_address_when_routed_by_username() {
    let dir = tempfile::tempdir().unwrap();
    let env = api(dir.path()).env;
    let mut r = crate::registry::catalog::tests::record("acme", "small");
    r.previous = Some(crate::registry::catalog::Previous {
        username: "olduser".into(),
        password: crate::policy::auth::PasswordHash::new(b"old"),
        until: 60_000,
    });
    let during = views::cluster(&r, None, &env, None, 59_999);
    assert_eq!(
        during["previous_credentials_valid_until"],
        "1970-01-01T00:01:00Z"
    );
    let after = views::cluster(&r, None, &env, None, 60_000);
    assert!(
        after["previous_credentials_valid_until"].is_null(),
        "{after}"
    );
    assert_eq!(
        after["localhost_address"],
        "https://acmeuser@localhost:9243"
    );
    let secrets = views::secrets(&r, &env, "pw");
    assert_eq!(
        secrets["localhost_url"],
        "https://acmeuser:pw@localhost:9243"
    );
    let no_route = ApiEnv {
        route_by_username: false,
        ..env
    };
    assert!(views::cluster(&r, None, &no_route, None, 0)["localhost_address"].is_null());
    assert!(views::secrets(&r, &no_route, "pw")
        .get("localhost_url")
        .is_none());
}
