//! A cluster's keys (issue 29): `POST /v1/clusters/{id}/keys` (201 with the key's id,
//! username, password and URL: the secret is shown this once and stored only as its salted
//! hash, as cluster passwords are), `GET /v1/clusters/{id}/keys` (no secrets),
//! `DELETE /v1/clusters/{id}/keys/{key_id}` (revoked from the next request on). Each change
//! runs as one attempt of `attempts` (run again after another node committed first, its
//! `Idempotency-Key` replay included): committed, audited (`key.create`, `key.revoke`), then
//! published to the edge.
//!
//! Must not touch: sockets, the store's tables (only through the plane).

use rand::distr::{Alphanumeric, SampleString};
use serde::Deserialize;
use serde_json::{json, Value};

use super::clusters::time_of;
use super::{
    attempts, idempotent_record, json_body, replay, views, Api, ApiError, Attempt, Request,
    Response,
};
use crate::cidr::Cidr;
use crate::control::plane::{Change, Plane};
use crate::policy::auth::{generate_password, generate_username, PasswordHash};
use crate::policy::keys::Role;
use crate::registry::catalog::{ClusterRecord, Command, KeyRecord};

/// Most entries in each of `indices`, `allowed_origins`, `allowed_ips`.
pub const MAX_LIST: usize = 50;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    name: String,
    role: String,
    indices: Option<Vec<String>>,
    expires_at: Option<String>,
    allowed_origins: Option<Vec<String>>,
    allowed_ips: Option<Vec<String>>,
}

fn live<'c>(cat: &'c crate::registry::Catalog, id: &str) -> Result<&'c ClusterRecord, ApiError> {
    match cat.clusters.get(id) {
        Some(c) if c.is_live() => Ok(c),
        Some(_) => Err(ApiError::new(
            410,
            "gone",
            format!("cluster `{id}` was destroyed"),
        )),
        None => Err(ApiError::not_found(format!("no cluster `{id}`"))),
    }
}

/// `GET /v1/clusters/{id}/keys`.
pub(super) fn list(api: &Api, id: &str) -> Result<Response, ApiError> {
    let snap = api.plane().snapshot();
    let c = live(&snap.catalog, id)?;
    let keys: Vec<Value> = c.keys.iter().map(views::key).collect();
    Ok(Response::ok(200, json!({ "keys": keys })))
}

/// A list field: at most [`MAX_LIST`] entries, each checked by `check`.
fn list_of(
    field: &str,
    v: Option<Vec<String>>,
    check: impl Fn(&str) -> Result<(), String>,
) -> Result<Vec<String>, ApiError> {
    let v = v.unwrap_or_default();
    if v.len() > MAX_LIST {
        return Err(ApiError::bad_request(format!(
            "`{field}`: at most {MAX_LIST} entries, not {}",
            v.len()
        )));
    }
    for item in &v {
        check(item).map_err(|e| ApiError::bad_request(format!("`{field}`: {e}")))?;
    }
    Ok(v)
}

/// An index pattern a key may name: an index name, with `*` wildcards.
fn index_pattern(p: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("`{p}` {why}"));
    if p.is_empty() || p.len() > 255 {
        return bad("must be 1 to 255 characters");
    }
    if p.starts_with(['-', '_', '+']) {
        return bad("must not start with `-`, `_` or `+`");
    }
    if p.chars().any(|c| {
        c.is_ascii_uppercase()
            || c.is_whitespace()
            || c.is_control()
            || "\\/?\"<>|,#:{}".contains(c)
    }) {
        return bad(
            "is not an index name or pattern (lowercase, no \\ / ? \" < > | , # : or spaces)",
        );
    }
    Ok(())
}

/// An origin as browsers send it: `http(s)://host[:port]`, nothing after.
pub fn origin(o: &str) -> Result<(), String> {
    let rest = o
        .strip_prefix("https://")
        .or_else(|| o.strip_prefix("http://"))
        .ok_or_else(|| format!("`{o}` must start with http:// or https://"))?;
    let ok = !rest.is_empty()
        && o.len() <= 255
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
    if !ok {
        return Err(format!(
            "`{o}` must be scheme://host[:port] as a browser sends it (no path, no `*`)"
        ));
    }
    Ok(())
}

/// A key id: `k` and 11 lowercase letters and digits.
fn new_key_id() -> String {
    let tail = Alphanumeric
        .sample_string(&mut rand::rng(), 11)
        .to_ascii_lowercase();
    format!("k{tail}")
}

/// `POST /v1/clusters/{id}/keys`.
pub(super) fn create(api: &Api, req: &Request, id: &str) -> Result<Response, ApiError> {
    let body: CreateBody = json_body(req)?;
    let name = body.name.trim().to_string();
    if name.is_empty() || name.len() > 100 || name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "`name`: 1 to 100 printable characters",
        ));
    }
    let role = Role::parse(&body.role).ok_or_else(|| {
        ApiError::bad_request(format!("role `{}`: one of full, read, search", body.role))
    })?;
    let indices = list_of("indices", body.indices, index_pattern)?;
    let allowed_origins = list_of("allowed_origins", body.allowed_origins, origin)?;
    let allowed_ips = list_of("allowed_ips", body.allowed_ips, |s| {
        Cidr::parse(s).map(drop)
    })?;
    let (username, password) = (generate_username(), generate_password());
    let key_id = new_key_id();
    attempts(api, |plane| {
        if let Some(r) = replay(plane, req)? {
            return Ok(r);
        }
        let now = plane.now();
        let expires_at = body
            .expires_at
            .as_ref()
            .map(|t| time_of(t, now, "expires_at"))
            .transpose()?;
        if expires_at.is_some_and(|e| e <= now) {
            return Err(ApiError::bad_request("`expires_at` is in the past").into());
        }
        live(&plane.snapshot().catalog, id)?;
        let key = KeyRecord {
            id: key_id.clone(),
            name: name.clone(),
            role,
            username: username.clone(),
            password: PasswordHash::new(password.as_bytes()),
            indices: indices.clone(),
            expires_at,
            allowed_origins: allowed_origins.clone(),
            allowed_ips: allowed_ips.clone(),
            created_at: now,
        };
        create_once(api, plane, req, id, key, &password)
    })
}

/// One attempt of [`create`]: commit `key` with the once-only answer (its secret).
fn create_once(
    api: &Api,
    plane: &mut Plane,
    req: &Request,
    id: &str,
    key: KeyRecord,
    password: &str,
) -> Result<Response, Attempt> {
    let key_id = key.id.clone();
    let change = Change {
        actor: api.token.id().to_string(),
        cmds: vec![Command::CreateKey {
            id: id.into(),
            key: Box::new(key),
        }],
        ..Change::default()
    };
    let env = api.env.clone();
    let mut answer = None;
    plane.submit_once(change, &mut |next| {
        let c = next.clusters.get(id)?;
        let k = c.keys.iter().find(|k| k.id == key_id)?;
        let mut v = views::key(k);
        v["cluster"] = json!(id);
        v["password"] = json!(password);
        v["url"] = json!(views::address_as(c, &k.username, &env, Some(password)));
        if let Some(u) = views::localhost_address_as(&k.username, &env, Some(password)) {
            v["localhost_url"] = json!(u);
        }
        let record = idempotent_record(req, 201, &v);
        answer = Some(v);
        record
    })?;
    let body = answer.ok_or_else(|| ApiError::not_found("no such cluster"))?;
    Ok(Response::ok(201, body))
}

/// `DELETE /v1/clusters/{id}/keys/{key_id}`.
pub(super) fn delete(
    api: &Api,
    req: &Request,
    id: &str,
    key_id: &str,
) -> Result<Response, ApiError> {
    attempts(api, |plane| {
        if let Some(r) = replay(plane, req)? {
            return Ok(r);
        }
        let snap = plane.snapshot();
        let c = live(&snap.catalog, id)?;
        let k =
            c.keys.iter().find(|k| k.id == key_id).ok_or_else(|| {
                ApiError::not_found(format!("cluster `{id}` has no key `{key_id}`"))
            })?;
        let mut body = views::key(k);
        body["cluster"] = json!(id);
        body["revoked"] = json!(true);
        let change = Change {
            actor: api.token.id().to_string(),
            cmds: vec![Command::RevokeKey {
                id: id.into(),
                key_id: key_id.into(),
            }],
            ..Change::default()
        };
        let answer = body.clone();
        plane.submit_once(change, &mut |_| idempotent_record(req, 200, &answer))?;
        Ok(Response::ok(200, body))
    })
}
