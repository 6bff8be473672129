//! The billing endpoints of the admin API (issue 12), routed here by `api::route`:
//!
//! - `GET /v1/clusters/{id}/usage[?from=&to=]`: the usage history (default: the last 24
//!   hours); `from` and `to` are RFC 3339 times or dates (`2030-03-01`).
//! - `GET /v1/clusters/{id}/invoice[?month=YYYY-MM][&format=csv]`: a cluster's invoice of
//!   a month (default: the current one), JSON or CSV.
//! - `GET /v1/invoices[?month=YYYY-MM][&format=csv]`: every cluster's invoice of a month.
//! - `GET|POST /v1/test/clock`: read or move the control plane's clock, only when
//!   `[admin] test_clock` made it a manual one (404 otherwise).
//!
//! Must not touch: sockets, the store's tables (only through `control::billing` and the
//! store trait).

use serde::Deserialize;
use serde_json::{json, Value};

use super::{json_body, store_error, Api, ApiError, Request, Response};
use crate::calendar::{self, InstantError};
use crate::config::parse_duration;
use crate::control::billing;
use crate::control::store::UsageSample;
use crate::policy::ladder::rfc3339;
use crate::policy::pricing::{Invoice, Month};
use crate::proto::Method;
use crate::registry::Millis;

/// Most samples one usage answer holds.
const MAX_SAMPLES: usize = 10_000;
const DAY_MS: Millis = 86_400_000;

/// Answers a billing endpoint, or `None` when `segs` is not one of them.
pub(super) fn route(api: &Api, req: &Request, segs: &[&str]) -> Option<Result<Response, ApiError>> {
    let get = req.method == Method::Get;
    Some(match segs {
        ["v1", "clusters", id, "usage"] if get => usage(api, req, id),
        ["v1", "clusters", id, "invoice"] if get => invoice(api, req, id),
        ["v1", "invoices"] if get => invoices(api, req),
        ["v1", "test", "clock"] if get || req.method == Method::Post => clock(api, req),
        ["v1", "clusters", _, "usage" | "invoice"] | ["v1", "invoices"] => Err(ApiError::new(
            405,
            "method_not_allowed",
            format!("only GET is allowed on {}", req.path),
        )),
        _ => return None,
    })
}

/// A time parameter: RFC 3339, or a date (midnight UTC).
fn time_param(req: &Request, name: &str) -> Result<Option<Millis>, ApiError> {
    let Some(text) = req.param(name) else {
        return Ok(None);
    };
    let full = if text.len() == 10 {
        format!("{text}T00:00:00Z")
    } else {
        text.clone()
    };
    let ms = calendar::parse_rfc3339_millis(&full).map_err(|e| match e {
        InstantError::BeforeEpoch => ApiError::bad_request(format!("`{name}` is before 1970")),
        InstantError::NotATime => ApiError::bad_request(format!(
            "`{name}` `{text}`: a time (RFC 3339, e.g. 2030-03-01T00:00:00Z) or a date (2030-03-01)"
        )),
    })?;
    Ok(Some(ms))
}

fn known(api: &Api, id: &str) -> Result<(), ApiError> {
    let snap = api.plane().snapshot();
    match snap.catalog.clusters.contains_key(id) {
        true => Ok(()),
        false => Err(ApiError::not_found(format!("no cluster `{id}`"))),
    }
}

fn sample(s: &UsageSample) -> Value {
    json!({
        "at": rfc3339(s.at),
        "disk_bytes": s.disk_bytes,
        "documents": s.documents,
        "shards": s.shards,
        "indices": s.indices,
        "requests": s.requests,
        "bytes_in": s.bytes_in,
        "bytes_out": s.bytes_out,
    })
}

fn usage(api: &Api, req: &Request, id: &str) -> Result<Response, ApiError> {
    known(api, id)?;
    let mut plane = api.plane();
    let to = time_param(req, "to")?.unwrap_or_else(|| plane.now());
    let from = time_param(req, "from")?.unwrap_or(to - DAY_MS);
    if from > to {
        return Err(ApiError::bad_request("`from` is after `to`"));
    }
    let samples = plane
        .store()
        .usage(id, from, to, MAX_SAMPLES + 1)
        .map_err(store_error)?;
    let truncated = samples.len() > MAX_SAMPLES;
    let list: Vec<Value> = samples.iter().take(MAX_SAMPLES).map(sample).collect();
    Ok(Response::ok(
        200,
        json!({
            "cluster": id,
            "from": rfc3339(from),
            "to": rfc3339(to),
            "samples": list,
            "truncated": truncated,
        }),
    ))
}

fn month_param(api: &Api, req: &Request) -> Result<Month, ApiError> {
    match req.param("month") {
        Some(m) => Month::parse(&m).map_err(ApiError::bad_request),
        None => Ok(Month::of(api.plane().now())),
    }
}

/// `format=csv` (true), `format=json` or none (false).
fn wants_csv(req: &Request) -> Result<bool, ApiError> {
    match req.param("format").as_deref() {
        None | Some("json") => Ok(false),
        Some("csv") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "format `{other}`: json or csv"
        ))),
    }
}

/// An invoice as JSON: `lines` (`plan`, `from`, `to`, `seconds`, `amount_cents`, `kind`)
/// and `total_cents`.
fn invoice_json(id: &str, inv: &Invoice) -> Value {
    let lines: Vec<Value> = inv
        .lines
        .iter()
        .map(|l| {
            json!({
                "plan": l.plan,
                "from": rfc3339(l.from * 1000),
                "to": rfc3339(l.to * 1000),
                "seconds": l.seconds,
                "amount_cents": l.amount_cents,
                "kind": l.kind.as_str(),
            })
        })
        .collect();
    json!({
        "cluster": id,
        "month": inv.month.to_string(),
        "from": rfc3339(inv.month.start() * 1000),
        "to": rfc3339(inv.month.end() * 1000),
        "lines": lines,
        "total_cents": inv.total_cents,
    })
}

/// The CSV header of invoices.
pub const CSV_HEADER: &str = "cluster,kind,plan,from,to,seconds,amount_cents";

/// An invoice's CSV rows: one per line, then its `total` row.
fn csv_rows(w: &mut csv::Writer<Vec<u8>>, id: &str, inv: &Invoice) -> csv::Result<()> {
    for l in &inv.lines {
        w.write_record([
            id,
            l.kind.as_str(),
            &l.plan,
            &rfc3339(l.from * 1000),
            &rfc3339(l.to * 1000),
            &l.seconds.to_string(),
            &l.amount_cents.to_string(),
        ])?;
    }
    w.write_record([id, "total", "", "", "", "", &inv.total_cents.to_string()])
}

/// CSV of `invoices` (with a last `total` row for all of them when `grand_total`).
fn csv_of(invoices: &[(String, Invoice)], grand_total: bool) -> Result<Response, ApiError> {
    let internal = |e: csv::Error| ApiError::new(500, "internal", format!("CSV: {e}"));
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_HEADER.split(',')).map_err(internal)?;
    for (id, inv) in invoices {
        csv_rows(&mut w, id, inv).map_err(internal)?;
    }
    if grand_total {
        let total: i64 = invoices.iter().map(|(_, i)| i.total_cents).sum();
        w.write_record(["", "total", "", "", "", "", &total.to_string()])
            .map_err(internal)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| internal(e.into_error().into()))?;
    Ok(Response::text(
        200,
        "text/csv; charset=utf-8",
        String::from_utf8_lossy(&bytes).into_owned(),
    ))
}

fn invoice(api: &Api, req: &Request, id: &str) -> Result<Response, ApiError> {
    known(api, id)?;
    let (month, csv) = (month_param(api, req)?, wants_csv(req)?);
    let inv = billing::invoice(api.plane().store(), id, month).map_err(store_error)?;
    if csv {
        return csv_of(&[(id.to_string(), inv)], false);
    }
    Ok(Response::ok(200, invoice_json(id, &inv)))
}

fn invoices(api: &Api, req: &Request) -> Result<Response, ApiError> {
    let (month, csv) = (month_param(api, req)?, wants_csv(req)?);
    let mut plane = api.plane();
    let catalog = plane.snapshot().catalog.clone();
    let all = billing::invoices(plane.store(), &catalog, month).map_err(store_error)?;
    drop(plane);
    if csv {
        return csv_of(&all, true);
    }
    let clusters: Vec<Value> = all.iter().map(|(id, i)| invoice_json(id, i)).collect();
    let total: i64 = all.iter().map(|(_, i)| i.total_cents).sum();
    Ok(Response::ok(
        200,
        json!({
            "month": month.to_string(),
            "from": rfc3339(month.start() * 1000),
            "to": rfc3339(month.end() * 1000),
            "clusters": clusters,
            "total_cents": total,
        }),
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClockBody {
    /// An RFC 3339 time.
    set: Option<String>,
    /// A duration to move forward (`"10d"`, `"90m"`).
    advance: Option<String>,
}

fn clock(api: &Api, req: &Request) -> Result<Response, ApiError> {
    let plane = api.plane();
    let clock = plane.clock().clone();
    drop(plane);
    if !clock.is_manual() {
        return Err(ApiError::not_found(
            "no endpoint /v1/test/clock: the control plane runs on the system clock ([admin] test_clock is for tests)",
        ));
    }
    if req.method == Method::Post {
        let body: ClockBody = json_body(req)?;
        let now = clock.now_ms();
        let at = match (body.set, body.advance) {
            (Some(t), None) => calendar::parse_rfc3339_millis(&t).map_err(|e| match e {
                InstantError::BeforeEpoch => ApiError::bad_request("`set` is before 1970"),
                InstantError::NotATime => ApiError::bad_request(format!("`set` `{t}`: RFC 3339")),
            })?,
            (None, Some(d)) => {
                let d = parse_duration(&d)
                    .map_err(|e| ApiError::bad_request(format!("`advance`: {e}")))?;
                now + d.as_millis() as Millis
            }
            _ => return Err(ApiError::bad_request("send one of `set` and `advance`")),
        };
        clock.set(at);
    }
    Ok(Response::ok(200, json!({ "now": rfc3339(clock.now_ms()) })))
}
