//! The cluster endpoints: create (ids, host names and credentials generated here; a
//! multitenant cluster placed on the least-loaded shared upstream), list, show, plan,
//! mode, rotate, delete. Each change goes through `Plane::submit_with`, which commits
//! before anything answers.
//!
//! Must not touch: sockets, the store's tables (only through the plane).

use std::collections::HashMap;
use std::time::Duration;

use rand::distr::{Alphanumeric, SampleString};
use serde::Deserialize;
use serde_json::{json, Value};

use super::views::{self, Live};
use super::{
    attempts, check_if_match, idempotent_record, json_body, replay, Api, ApiError, Attempt,
    Request, Response,
};
use crate::calendar::{self, InstantError};
use crate::config::{parse_duration, ClusterClass, Mode};
use crate::control::plane::{Change, Plane};
use crate::policy::auth::{generate_password, generate_username, PasswordHash};
use crate::registry::catalog::{Catalog, ClusterRecord, Command, Millis, Source};

/// A JSON value that is one string or a list of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// A duration as `"2m"`/`"90s"`/`"500ms"`, or a number of seconds.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum DurationField {
    Seconds(u64),
    Text(String),
}

impl DurationField {
    fn get(&self, what: &str) -> Result<Duration, ApiError> {
        match self {
            DurationField::Seconds(s) => Ok(Duration::from_secs(*s)),
            DurationField::Text(t) => {
                parse_duration(t).map_err(|e| ApiError::bad_request(format!("`{what}`: {e}")))
            }
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    region: Option<String>,
    class: Option<String>,
    plan: String,
    upstream: Option<OneOrMany>,
    name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanBody {
    plan: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModeBody {
    mode: String,
    reason: Option<String>,
    until: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RotateBody {
    grace: Option<DurationField>,
}

/// The view of cluster `r` with what the edge knows of it now.
fn view_of(plane: &Plane, r: &ClusterRecord, api: &Api) -> Value {
    let snap = plane.snapshot();
    let live = snap.by_id(&r.id).map(|c| Live {
        effective: c.effective_mode().mode,
        usage: plane.usage(&r.id),
        in_flight: c.allowance.in_flight(),
        queued: c.allowance.queued(),
    });
    let declared = (r.source == Source::File)
        .then(|| plane.declared().clusters.get(&r.id))
        .flatten();
    views::cluster(r, live, &api.env, declared, plane.now())
}

fn found<'c>(cat: &'c Catalog, id: &str) -> Result<&'c ClusterRecord, ApiError> {
    cat.clusters
        .get(id)
        .map(|c| &**c)
        .ok_or_else(|| ApiError::not_found(format!("no cluster `{id}`")))
}

pub(super) fn list(api: &Api, req: &Request) -> Result<Response, ApiError> {
    let state = req.param("state");
    if let Some(s) = state.as_deref() {
        if !["provisioning", "running", "destroyed"].contains(&s) {
            return Err(ApiError::bad_request(format!(
                "state `{s}`: one of provisioning, running, destroyed"
            )));
        }
    }
    let plan = req.param("plan");
    let plane = api.plane();
    let snap = plane.snapshot();
    let list: Vec<Value> = snap
        .catalog
        .clusters
        .values()
        .filter(|c| match state.as_deref() {
            Some(s) => c.state() == s,
            None => c.is_live(),
        })
        .filter(|c| plan.as_deref().is_none_or(|p| c.plan == p))
        .map(|c| view_of(&plane, c, api))
        .collect();
    Ok(super::Response::ok(200, json!({ "clusters": list })))
}

pub(super) fn show(api: &Api, id: &str) -> Result<Response, ApiError> {
    let plane = api.plane();
    let snap = plane.snapshot();
    let r = found(&snap.catalog, id)?;
    let mut resp = super::Response::ok(200, view_of(&plane, r, api));
    resp.etag = Some(r.version);
    Ok(resp)
}

/// Runs `cmds` for `req` against cluster `id` (checking `If-Match` first when `id` is
/// given), answering with the cluster's view after the change plus `extra` fields. The
/// whole request runs again after another node committed first (see [`super::attempts`]),
/// the `If-Match` check and the `Idempotency-Key` replay included.
fn change(
    api: &Api,
    req: &Request,
    id: Option<&str>,
    cmds: impl Fn(&Catalog) -> Result<Vec<Command>, ApiError>,
    status: u16,
    extra: &dyn Fn(&ClusterRecord) -> Value,
) -> Result<Response, ApiError> {
    attempts(api, |plane| {
        change_once(api, plane, req, id, &cmds, status, extra)
    })
}

fn change_once(
    api: &Api,
    plane: &mut Plane,
    req: &Request,
    id: Option<&str>,
    cmds: &dyn Fn(&Catalog) -> Result<Vec<Command>, ApiError>,
    status: u16,
    extra: &dyn Fn(&ClusterRecord) -> Value,
) -> Result<Response, Attempt> {
    if let Some(r) = replay(plane, req)? {
        return Ok(r);
    }
    let snap = plane.snapshot();
    if let Some(id) = id {
        check_if_match(req, found(&snap.catalog, id)?.version)?;
    }
    let cmds = cmds(&snap.catalog)?;
    let target = cmds
        .first()
        .map(|c| c.target().to_string())
        .unwrap_or_default();
    let mut answer = None;
    let change = Change {
        actor: api.token.id().to_string(),
        cmds,
        ..Change::default()
    };
    let env = api.env.clone();
    let declared = plane.declared().clone();
    let now = plane.now();
    let done = plane.submit_once(change, &mut |next| {
        let r = next.clusters.get(&target)?;
        let d = declared
            .clusters
            .get(&r.id)
            .filter(|_| r.source == Source::File);
        let mut body = views::cluster(r, None, &env, d, now);
        if let (Some(o), Value::Object(more)) = (body.as_object_mut(), extra(r)) {
            o.extend(more);
        }
        let record = idempotent_record(req, status, &body);
        answer = Some((body, r.version));
        record
    });
    done?;
    let (mut body, version) = answer.ok_or_else(|| ApiError::not_found("no such cluster"))?;
    // The live view once published (usage, effective mode), keeping the once-only fields.
    let snap = plane.snapshot();
    if let Some(r) = snap.catalog.clusters.get(&target) {
        if let (Some(o), Value::Object(now)) = (body.as_object_mut(), view_of(plane, r, api)) {
            o.extend(now);
        }
    }
    Ok(Response {
        status,
        body,
        etag: Some(version),
        ..Response::default()
    })
}

/// 12 characters: a letter, then letters and digits.
fn new_id() -> String {
    let tail = Alphanumeric
        .sample_string(&mut rand::rng(), 11)
        .to_ascii_lowercase();
    format!("c{tail}")
}

/// A host name from a cluster's name: lowercase letters, digits and `-`, at most 40, then
/// six random characters.
fn hostname_of(name: Option<&str>, id: &str) -> String {
    let Some(name) = name else {
        return id.to_string();
    };
    let mut slug: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    slug = slug
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    slug.truncate(40);
    let slug = slug.trim_end_matches('-');
    let tail = Alphanumeric
        .sample_string(&mut rand::rng(), 6)
        .to_ascii_lowercase();
    if slug.is_empty() {
        format!("{id}-{tail}")
    } else {
        format!("{slug}-{tail}")
    }
}

/// The least-loaded shared upstream (fewest live multitenant clusters; the first on a tie).
fn place(cat: &Catalog, shared: &[Option<String>]) -> Result<Option<Vec<String>>, ApiError> {
    let mut load: HashMap<Option<&str>, usize> = HashMap::new();
    for c in cat.live().filter(|c| c.class == ClusterClass::Multitenant) {
        let key = c
            .upstream
            .as_ref()
            .and_then(|u| u.first())
            .map(String::as_str);
        *load.entry(key).or_default() += 1;
    }
    shared
        .iter()
        .min_by_key(|u| load.get(&u.as_deref()).copied().unwrap_or(0))
        .map(|u| u.clone().map(|s| vec![s]))
        .ok_or_else(|| {
            ApiError::bad_request("no shared upstream to place a multitenant cluster on: configure [admin] shared_upstreams or [engine]")
        })
}

pub(super) fn create(api: &Api, req: &Request) -> Result<Response, ApiError> {
    let body: CreateBody = json_body(req)?;
    let class = match body.class.as_deref() {
        None => ClusterClass::Multitenant,
        Some(c) => ClusterClass::parse(c).ok_or_else(|| {
            ApiError::bad_request(format!("class `{c}`: multitenant or single-tenant"))
        })?,
    };
    let region = body
        .region
        .unwrap_or_else(|| api.env.default_region.clone());
    if let Some(n) = &body.name {
        if n.is_empty() || n.len() > 100 || n.chars().any(char::is_control) {
            return Err(ApiError::bad_request(
                "`name`: 1 to 100 printable characters",
            ));
        }
    }
    // A string without `:` names an `[[upstream_pools]]` (checked when the catalog is
    // compiled); nodes are `host:port`.
    let upstream = match body.upstream {
        None => None,
        Some(OneOrMany::One(s)) if !s.contains(':') => {
            if !crate::config::valid_pool_name(&s) {
                return Err(ApiError::bad_request(format!(
                    "upstream `{s}` is neither host:port nor a pool's name"
                )));
            }
            Some(vec![s])
        }
        Some(OneOrMany::One(s)) => Some(vec![s]),
        Some(OneOrMany::Many(v)) => {
            if let Some(bad) = v.iter().find(|u| !u.contains(':')) {
                return Err(ApiError::bad_request(format!(
                    "upstream `{bad}` must be host:port (a pool is named by a string, not a list)"
                )));
            }
            if v.is_empty() {
                return Err(ApiError::bad_request("`upstream`: at least one host:port"));
            }
            Some(v)
        }
    };
    let (username, password) = (generate_username(), generate_password());
    let id = new_id();
    let shared = api.env.shared_upstreams.clone();
    let name = body.name.clone();
    let plan = body.plan.clone();
    let hash = PasswordHash::new(password.as_bytes());
    let now = api.plane().now();
    let build = |cat: &Catalog| -> Result<Vec<Command>, ApiError> {
        let upstream = match (class, upstream.clone()) {
            (_, Some(u)) => Some(u),
            (ClusterClass::Multitenant, None) => place(cat, &shared)?,
            (ClusterClass::SingleTenant, None) => {
                return Err(ApiError::bad_request(
                    "a single-tenant cluster needs its own `upstream` (host:port of its nodes)",
                ))
            }
        };
        let record = ClusterRecord {
            hostname: hostname_of(name.as_deref(), &id),
            id: id.clone(),
            name: name.clone(),
            region: region.clone(),
            class,
            plan: plan.clone(),
            username: username.clone(),
            password: hash.clone(),
            previous: None,
            mode: Mode::Normal,
            mode_reason: None,
            mode_until: None,
            upstream,
            source: Source::Api,
            created_at: now,
            provisioned_at: (class == ClusterClass::Multitenant).then_some(now),
            destroyed_at: None,
            purged: false,
            version: 1,
            overage: None,
            keys: Vec::new(),
            slow_request_ms: None,
        };
        Ok(vec![Command::CreateCluster(Box::new(record))])
    };
    let env = api.env.clone();
    let secrets = |r: &ClusterRecord| views::secrets(r, &env, &password);
    change(api, req, None, build, 201, &secrets)
}

pub(super) fn plan(api: &Api, req: &Request, id: &str) -> Result<Response, ApiError> {
    let body: PlanBody = json_body(req)?;
    let cmd = Command::ChangePlan {
        id: id.into(),
        plan: body.plan,
    };
    change(api, req, Some(id), |_| Ok(vec![cmd.clone()]), 200, &|_| {
        json!({})
    })
}

/// `PUT /v1/clusters/{id}/slow_threshold` with `{"slow_threshold_ms": N}`: requests this
/// slow or slower go to the cluster's slow-request log too (`requests.rs`).
pub(super) fn slow_threshold(api: &Api, req: &Request, id: &str) -> Result<Response, ApiError> {
    let body: SlowBody = json_body(req)?;
    let cmd = Command::SetSlowThreshold {
        id: id.into(),
        ms: body.slow_threshold_ms,
    };
    change(
        api,
        req,
        Some(id),
        |_| Ok(vec![cmd.clone()]),
        200,
        &|r| json!({ "slow_threshold_ms": r.slow_request_ms }),
    )
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SlowBody {
    slow_threshold_ms: u64,
}

/// `until`: RFC 3339, or a duration from now (`"30m"`).
fn until_of(text: &str, now: Millis) -> Result<Millis, ApiError> {
    time_of(text, now, "until")
}

/// A time field (`field` names it in errors): RFC 3339, or a duration from now (`"30m"`).
pub(super) fn time_of(text: &str, now: Millis, field: &str) -> Result<Millis, ApiError> {
    if let Ok(d) = parse_duration(text) {
        return Ok(now + d.as_millis() as Millis);
    }
    calendar::parse_rfc3339_millis(text).map_err(|e| match e {
        InstantError::BeforeEpoch => ApiError::bad_request(format!("`{field}` is before 1970")),
        InstantError::NotATime => ApiError::bad_request(format!(
            "`{field}` `{text}`: a time (RFC 3339, e.g. 2030-01-01T12:00:00Z) or a duration (e.g. 30m)"
        )),
    })
}

pub(super) fn mode(api: &Api, req: &Request, id: &str) -> Result<Response, ApiError> {
    let body: ModeBody = json_body(req)?;
    let mode = match Mode::parse(&body.mode) {
        Some(m @ (Mode::Normal | Mode::ReadOnly | Mode::Disabled | Mode::Maintenance)) => m,
        _ => {
            return Err(ApiError::bad_request(format!(
                "mode `{}`: one of normal, read-only, disabled, maintenance",
                body.mode
            )))
        }
    };
    let reason = body.reason.filter(|r| !r.trim().is_empty());
    if mode != Mode::Normal && reason.is_none() {
        return Err(ApiError::bad_request(
            "`reason` is required: it is shown to the cluster's clients in the 403 body",
        ));
    }
    if reason.as_ref().is_some_and(|r| r.len() > 500) {
        return Err(ApiError::bad_request("`reason`: at most 500 characters"));
    }
    let now = api.plane().now();
    let until = body.until.map(|u| until_of(&u, now)).transpose()?;
    let cmd = Command::SetMode {
        id: id.into(),
        mode,
        reason,
        until,
    };
    change(api, req, Some(id), |_| Ok(vec![cmd.clone()]), 200, &|_| {
        json!({})
    })
}

pub(super) fn rotate(api: &Api, req: &Request, id: &str) -> Result<Response, ApiError> {
    let body: RotateBody = json_body(req)?;
    let grace = body
        .grace
        .map(|g| g.get("grace"))
        .transpose()?
        .unwrap_or(Duration::ZERO);
    if grace > Duration::from_secs(7 * 24 * 3600) {
        return Err(ApiError::bad_request("`grace`: at most 7 days"));
    }
    let (username, password) = (generate_username(), generate_password());
    let now = api.plane().now();
    let cmd = Command::SetCredentials {
        id: id.into(),
        username,
        password: PasswordHash::new(password.as_bytes()),
        grace_until: (!grace.is_zero()).then(|| now + grace.as_millis() as Millis),
    };
    let env = api.env.clone();
    let secrets = |r: &ClusterRecord| views::secrets(r, &env, &password);
    change(api, req, Some(id), |_| Ok(vec![cmd.clone()]), 200, &secrets)
}

pub(super) fn delete(api: &Api, req: &Request, id: &str) -> Result<Response, ApiError> {
    let cmd = Command::Destroy { id: id.into() };
    change(api, req, Some(id), |_| Ok(vec![cmd.clone()]), 200, &|_| {
        json!({})
    })
}
