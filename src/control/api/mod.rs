//! The admin API: JSON in and out, bearer-token auth, on its own listener (see `server`).
//!
//! Endpoints: `POST /v1/clusters`, `GET /v1/clusters[?state=&plan=]`,
//! `GET /v1/clusters/{id}`, `PUT /v1/clusters/{id}/plan`, `PUT /v1/clusters/{id}/mode`,
//! `POST /v1/clusters/{id}/credentials/rotate`, `DELETE /v1/clusters/{id}`, the cluster's
//! keys (`GET`/`POST /v1/clusters/{id}/keys`, `DELETE /v1/clusters/{id}/keys/{key_id}`: see
//! `keys`),
//! `GET /v1/plans`, `GET /v1/audit`; what the edge measures: `GET /metrics` (Prometheus
//! text) and `GET /v1/clusters/{id}/latency?window=` (see `observe`); usage, invoices and
//! the tests' clock in `billing`. Every error has one shape, the same as the edge's:
//! `{"error": {"type", "reason", "root_cause", ...fields}, "status"}`, with `Retry-After`
//! where a retry helps (503). A change answers only once it is committed.
//!
//! Updates: `If-Match: "<version>"` (the `ETag` of the cluster) refuses a change to a
//! cluster that changed since (412). `Idempotency-Key` on a POST, PUT or DELETE: a retry
//! with the same key and the same request gets the first answer again (secrets blanked),
//! the same key with another request is refused (422).
//!
//! Must not touch: sockets (see `server`), the request path.

mod billing;
mod clusters;
mod keys;
pub mod observe;
mod requests;
pub mod server;
mod views;

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};

use super::plane::{ControlError, Plane};
use super::store::{AuditQuery, Idempotent, StoreError};
use super::token::AdminToken;
use crate::errors::ErrorBody;
use crate::proto::Method;
use crate::registry::Refusal;

/// Where cluster addresses point and where new clusters go.
#[derive(Debug, Clone)]
pub struct ApiEnv {
    /// `https` or `http`: the scheme of the customer listener addresses use.
    pub scheme: String,
    /// The customer listener's port (`None`: the scheme's default).
    pub port: Option<u16>,
    pub domain: String,
    /// `[edge] route_by_username`: a cluster also answers at `localhost` (or an IP), found
    /// by its username; the API then shows that address too.
    pub route_by_username: bool,
    pub default_region: String,
    /// Shared upstreams multitenant clusters are placed on (`None`: the embedded engine).
    pub shared_upstreams: Vec<Option<String>>,
}

/// The admin API's state.
#[derive(Debug)]
pub struct Api {
    pub plane: Arc<Mutex<Plane>>,
    pub token: AdminToken,
    pub env: ApiEnv,
    /// The edge's metrics and registry, for `GET /metrics` and the latency reports.
    pub observe: observe::Observe,
}

impl Api {
    /// The plane, caught up with what other nodes of a fleet committed (an unreachable
    /// store leaves it as it was: reads answer from the last snapshot, writes fail).
    fn plane(&self) -> MutexGuard<'_, Plane> {
        let mut p = self.plane.lock().unwrap_or_else(|p| p.into_inner());
        let _ = p.catch_up();
        p
    }
}

/// A request as the server read it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    pub path: String,
    /// The query string's parameters, decoded, in order.
    pub params: Vec<(String, String)>,
    pub authorization: Option<Vec<u8>>,
    pub idempotency_key: Option<String>,
    pub if_match: Option<String>,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

impl Request {
    /// A query parameter (percent-decoded).
    fn param(&self, name: &str) -> Option<String> {
        let (_, v) = self.params.iter().find(|(k, _)| k == name)?;
        Some(v.clone())
    }
}

/// A response to write.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Response {
    pub status: u16,
    pub body: Value,
    /// A body that is not JSON: its `Content-Type` and text (sent instead of `body`).
    pub text: Option<(&'static str, String)>,
    /// The cluster's version, sent as `ETag`.
    pub etag: Option<u64>,
    pub retry_after: Option<u32>,
    /// A stored answer to an `Idempotency-Key` given again.
    pub replayed: bool,
}

impl Response {
    fn ok(status: u16, body: Value) -> Response {
        Response {
            status,
            body,
            ..Response::default()
        }
    }

    /// A text answer of `content_type`.
    fn text(status: u16, content_type: &'static str, text: String) -> Response {
        Response {
            status,
            text: Some((content_type, text)),
            ..Response::default()
        }
    }
}

/// An error of the admin API (always the one shape).
#[derive(Debug, Clone)]
pub struct ApiError {
    status: u16,
    kind: &'static str,
    reason: String,
    fields: Vec<(&'static str, Value)>,
    retry_after: Option<u32>,
}

impl ApiError {
    pub fn new(status: u16, kind: &'static str, reason: impl Into<String>) -> ApiError {
        ApiError {
            status,
            kind,
            reason: reason.into(),
            fields: Vec::new(),
            retry_after: None,
        }
    }

    pub fn bad_request(reason: impl Into<String>) -> ApiError {
        ApiError::new(400, "bad_request", reason)
    }

    pub fn not_found(reason: impl Into<String>) -> ApiError {
        ApiError::new(404, "not_found", reason)
    }

    /// 503 with `Retry-After: secs`.
    pub fn unavailable(reason: impl Into<String>, secs: u32) -> ApiError {
        let mut e = ApiError::new(503, "unavailable", reason);
        e.retry_after = Some(secs);
        e
    }

    fn field(mut self, k: &'static str, v: Value) -> ApiError {
        self.fields.push((k, v));
        self
    }

    /// The response carrying this error.
    pub fn into_response(self) -> Response {
        let mut body = ErrorBody::new(self.status, self.kind, self.reason);
        for (k, v) in self.fields {
            body = body.with_field(k, v);
        }
        Response {
            status: self.status,
            body: body.to_value(),
            retry_after: self.retry_after,
            ..Response::default()
        }
    }
}

impl From<ControlError> for ApiError {
    fn from(e: ControlError) -> ApiError {
        match e {
            ControlError::Refused(r) => refusal(r),
            ControlError::Unservable(e) => ApiError::bad_request(e.to_string()),
            ControlError::Store(e) => store_error(e),
        }
    }
}

fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::Busy(_) | StoreError::Stale(_) => {
            ApiError::unavailable(format!("{e}; nothing was changed, retry"), 1)
        }
        StoreError::Failed(_) => {
            ApiError::new(500, "internal", format!("{e}; nothing was changed"))
        }
    }
}

fn refusal(r: Refusal) -> ApiError {
    let reason = r.to_string();
    match r {
        Refusal::NoCluster(_) | Refusal::NoKey(_) => ApiError::not_found(reason),
        Refusal::Destroyed(_) => ApiError::new(410, "gone", reason),
        Refusal::NoPlan { .. } | Refusal::Invalid(_) => ApiError::bad_request(reason),
        Refusal::Conflict(_) => ApiError::new(409, "conflict", reason),
        Refusal::Downgrade {
            shards_in_use,
            shards_allowed,
            disk_in_use,
            disk_allowed,
            ..
        } => ApiError::new(409, "plan_exceeded", reason)
            .field("shards_in_use", json!(shards_in_use))
            .field("shards_allowed", json!(shards_allowed))
            .field("disk_bytes_in_use", json!(disk_in_use))
            .field("disk_bytes_allowed", json!(disk_allowed)),
    }
}

/// Answers one request.
pub fn handle(api: &Api, req: &Request) -> Response {
    if !api.token.accepts(req.authorization.as_deref()) {
        return ApiError::new(
            401,
            "unauthorized",
            "send the admin token as `Authorization: Bearer <token>`",
        )
        .into_response();
    }
    route(api, req).unwrap_or_else(ApiError::into_response)
}

fn route(api: &Api, req: &Request) -> Result<Response, ApiError> {
    if let Some(answer) = observe::route(api, req) {
        return answer;
    }
    let segs: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    if let Some(answer) = billing::route(api, req, &segs) {
        return answer;
    }
    let m = req.method;
    match (m, segs.as_slice()) {
        (Method::Get, ["v1", "clusters"]) => clusters::list(api, req),
        (Method::Post, ["v1", "clusters"]) => clusters::create(api, req),
        (Method::Get, ["v1", "clusters", id]) => clusters::show(api, id),
        (Method::Delete, ["v1", "clusters", id]) => clusters::delete(api, req, id),
        (Method::Put, ["v1", "clusters", id, "plan"]) => clusters::plan(api, req, id),
        (Method::Put, ["v1", "clusters", id, "mode"]) => clusters::mode(api, req, id),
        (Method::Post, ["v1", "clusters", id, "credentials", "rotate"]) => {
            clusters::rotate(api, req, id)
        }
        (Method::Get, ["v1", "clusters", id, "keys"]) => keys::list(api, id),
        (Method::Get, ["v1", "clusters", id, "requests"]) => requests::list(api, req, id),
        (Method::Put, ["v1", "clusters", id, "slow_threshold"]) => {
            clusters::slow_threshold(api, req, id)
        }
        (Method::Post, ["v1", "clusters", id, "keys"]) => keys::create(api, req, id),
        (Method::Delete, ["v1", "clusters", id, "keys", key_id]) => {
            keys::delete(api, req, id, key_id)
        }
        (Method::Get, ["v1", "plans"]) => Ok(plans(api)),
        (Method::Get, ["v1", "audit"]) => audit(api, req),
        (_, ["v1", "clusters"])
        | (_, ["v1", "clusters", _])
        | (_, ["v1", "clusters", _, "plan" | "mode"])
        | (_, ["v1", "clusters", _, "credentials", "rotate"])
        | (_, ["v1", "clusters", _, "keys" | "requests" | "slow_threshold"])
        | (_, ["v1", "clusters", _, "keys", _])
        | (_, ["v1", "plans" | "audit"]) => Err(ApiError::new(
            405,
            "method_not_allowed",
            format!("{} is not allowed on {}", method_name(m), req.path),
        )),
        _ => Err(ApiError::not_found(format!("no endpoint {}", req.path))),
    }
}

fn method_name(m: Method) -> &'static str {
    match m {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
        Method::Options => "OPTIONS",
        Method::Patch => "PATCH",
        Method::Other => "this method",
    }
}

fn plans(api: &Api) -> Response {
    let snap = api.plane().snapshot();
    let list: Vec<Value> = snap
        .catalog
        .plans
        .values()
        .map(|p| views::plan(p))
        .collect();
    Response::ok(200, json!({ "plans": list }))
}

fn audit(api: &Api, req: &Request) -> Result<Response, ApiError> {
    let number = |name: &str| -> Result<Option<u64>, ApiError> {
        req.param(name)
            .map(|v| {
                v.parse()
                    .map_err(|_| ApiError::bad_request(format!("`{name}` must be a number")))
            })
            .transpose()
    };
    let q = AuditQuery {
        target: req.param("cluster"),
        before_id: number("before")?,
        limit: number("limit")?.unwrap_or(100).clamp(1, 1000) as usize,
    };
    let entries = api.plane().store().audit(&q).map_err(store_error)?;
    let list: Vec<Value> = entries.iter().map(|(id, e)| views::audit(*id, e)).collect();
    Ok(Response::ok(200, json!({ "entries": list })))
}

/// The body as a JSON object of type `T` (unknown fields refused with their name).
fn json_body<T: serde::de::DeserializeOwned>(req: &Request) -> Result<T, ApiError> {
    let ct = req.content_type.as_deref().unwrap_or("application/json");
    if !ct
        .trim()
        .to_ascii_lowercase()
        .starts_with("application/json")
    {
        return Err(ApiError::new(
            415,
            "unsupported_media_type",
            format!("send JSON (Content-Type: application/json), not `{ct}`"),
        ));
    }
    let body: &[u8] = if req.body.is_empty() {
        b"{}"
    } else {
        &req.body
    };
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("the JSON body: {e}")))
}

/// Checks `If-Match` against the cluster's current `version` (412 when it changed).
fn check_if_match(req: &Request, version: u64) -> Result<(), ApiError> {
    let Some(h) = req.if_match.as_deref() else {
        return Ok(());
    };
    let matches = h
        .split(',')
        .map(str::trim)
        .any(|t| t == "*" || t.trim_start_matches("W/").trim_matches('"').parse() == Ok(version));
    if matches {
        return Ok(());
    }
    Err(ApiError::new(
        412,
        "precondition_failed",
        format!("the cluster changed: it is at version {version}, the request expected {h}; read it again and retry"),
    )
    .field("version", json!(version)))
}

/// Runs one attempt of an admin change after catching up with the store's feed; when
/// another node of the fleet committed first, catches up and runs the whole attempt again
/// (its `Idempotency-Key` replay, `If-Match` check and validation included, so a key that
/// another node just answered is replayed, not committed twice).
fn attempts(
    api: &Api,
    mut attempt: impl FnMut(&mut Plane) -> Result<Response, Attempt>,
) -> Result<Response, ApiError> {
    let mut plane = api.plane();
    for _ in 0..=STALE_RETRIES {
        plane.catch_up()?;
        match attempt(&mut plane) {
            Err(Attempt::Stale) => continue,
            Err(Attempt::Failed(e)) => return Err(e),
            Ok(r) => return Ok(r),
        }
    }
    Err(ApiError::unavailable(
        "other nodes keep changing the store; nothing was changed, retry",
        1,
    ))
}

/// How often a request runs again after another node committed first.
const STALE_RETRIES: u32 = 8;

/// Why one attempt of a change did not answer.
enum Attempt {
    /// Another writer committed first: catch up and run it again.
    Stale,
    Failed(ApiError),
}

impl From<ApiError> for Attempt {
    fn from(e: ApiError) -> Attempt {
        Attempt::Failed(e)
    }
}

impl From<ControlError> for Attempt {
    fn from(e: ControlError) -> Attempt {
        match e {
            ControlError::Store(StoreError::Stale(_)) => Attempt::Stale,
            e => Attempt::Failed(e.into()),
        }
    }
}

/// The fingerprint of a request for `Idempotency-Key`: method, path and body.
fn fingerprint(req: &Request) -> String {
    let canonical: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let text = format!("{} {} {}", method_name(req.method), req.path, canonical);
    let d = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The stored answer to a repeated `Idempotency-Key`, if this request has one.
fn replay(plane: &mut Plane, req: &Request) -> Result<Option<Response>, ApiError> {
    let Some(key) = req.idempotency_key.as_deref() else {
        return Ok(None);
    };
    if key.is_empty() || key.len() > 255 {
        return Err(ApiError::bad_request(
            "Idempotency-Key: 1 to 255 characters",
        ));
    }
    match plane.store().idempotent(key).map_err(store_error)? {
        None => Ok(None),
        Some(stored) if stored.fingerprint == fingerprint(req) => Ok(Some(Response {
            status: stored.status,
            etag: stored.body["version"].as_u64(),
            body: stored.body,
            replayed: true,
            ..Response::default()
        })),
        Some(_) => Err(ApiError::new(
            422,
            "idempotency_key_reused",
            format!("Idempotency-Key `{key}` was used with another request; use a new key"),
        )),
    }
}

/// What to store for this request's `Idempotency-Key`: the response with its secrets
/// (`password`, `url`) blanked.
fn idempotent_record(req: &Request, status: u16, body: &Value) -> Option<Idempotent> {
    let key = req.idempotency_key.clone()?;
    let mut body = body.clone();
    if let Some(o) = body.as_object_mut() {
        for secret in ["password", "url"] {
            if o.contains_key(secret) {
                o.insert(secret.into(), json!(""));
            }
        }
    }
    Some(Idempotent {
        key,
        fingerprint: fingerprint(req),
        status,
        body,
    })
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
