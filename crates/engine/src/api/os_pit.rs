//! OpenSearch's point-in-time API over the engine's points in time (`search::pit`, the
//! same contexts as Elasticsearch's `_pit`): `POST /<indices>/_search/point_in_time`
//! (`pit_id`, `_shards`, `creation_time`), `DELETE /_search/point_in_time` with
//! `{"pit_id": id or [ids]}` (`pits`: each id with `successful`), and
//! `GET|DELETE /_search/point_in_time/_all`, with OpenSearch 2.x's response shapes.
//! Searches name them with `pit.id` as Elasticsearch's do.
//!
//! Must not touch: how points in time are kept (`search::pit`), searches.

use serde_json::{json, Value};

use super::json::json_body;
use super::{ApiResult, Engine, Request, Response};
use crate::error::EngineError;
use searchgate_core::proto::Method;

/// `POST /<indices>/_search/point_in_time?keep_alive=` and `DELETE /_search/point_in_time`.
pub fn pit(engine: &Engine, req: &mut Request<'_>, index: Option<&str>) -> ApiResult {
    let Some(index) = index else {
        let ids = pit_ids(json_body(req.body, engine.max_body)?)?;
        let freed = engine.pits.close_each(&ids);
        return Ok(deleted(&ids, &freed));
    };
    if let Some(v) = req.params.get("allow_partial_pit_creation") {
        // one node: a point in time is never partial, whichever is asked
        if !matches!(v, "true" | "false") {
            return Err(EngineError::IllegalArgument(format!(
                "Failed to parse value [{v}] as only [true] or [false] are allowed."
            )));
        }
    }
    let (id, pit) = super::admin::open_pit(engine, req, index)?;
    let shards: usize = pit.views.iter().map(Vec::len).sum();
    Ok(Response::json(
        200,
        &json!({
            "pit_id": id,
            "_shards": {"total": shards, "successful": shards, "skipped": 0, "failed": 0},
            "creation_time": pit.created_ms,
        }),
    ))
}

/// `GET /_search/point_in_time/_all` (list) and `DELETE` (close every one).
pub fn all(engine: &Engine, req: &mut Request<'_>) -> ApiResult {
    let _ = json_body(req.body, engine.max_body)?;
    if req.method == Method::Delete {
        let ids = engine.pits.ids();
        let freed = engine.pits.close_each(&ids);
        return Ok(deleted(&ids, &freed));
    }
    let pits: Vec<Value> = engine
        .pits
        .list()
        .into_iter()
        .map(|p| json!({"pit_id": p.id, "creation_time": p.created_ms, "keep_alive": p.keep_alive_ms}))
        .collect();
    Ok(Response::json(200, &json!({ "pits": pits })))
}

/// The ids of a delete body: `pit_id` as one id or a list (OpenSearch's
/// `DeletePitRequest`); anything else is 400.
fn pit_ids(body: Option<Value>) -> Result<Vec<String>, EngineError> {
    let missing = || EngineError::Validation(vec!["no pit ids specified".into()]);
    let body = body.ok_or_else(missing)?;
    let o = body.as_object().ok_or_else(|| {
        EngineError::Parsing("Malformed content, must start with an object".into())
    })?;
    if let Some(k) = o.keys().find(|k| *k != "pit_id") {
        return Err(EngineError::IllegalArgument(format!(
            "Unknown parameter [{k}] in request body or parameter is of the wrong type[VALUE_STRING] "
        )));
    }
    let ids: Vec<String> = match o.get("pit_id") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str().map(String::from).ok_or_else(|| {
                    EngineError::IllegalArgument(
                        "pit_id array element should only contain pit_id".into(),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(missing()),
    };
    if ids.is_empty() {
        return Err(missing());
    }
    Ok(ids)
}

fn deleted(ids: &[String], freed: &[bool]) -> Response {
    let pits: Vec<Value> = ids
        .iter()
        .zip(freed)
        .map(|(id, ok)| json!({"successful": ok, "pit_id": id}))
        .collect();
    Response::json(200, &json!({ "pits": pits }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::audit_tests::{bulk, get, post};
    use super::super::tests::{call, engine, put};
    use super::*;

    // OpenSearch 2.x point-in-time API (documentation: "Point in Time API"): create, search
    // with `pit.id`, list, delete by ids and all, response shapes.
    #[test]
    fn opensearch_point_in_time_flow() {
        let d = tempfile::tempdir().unwrap();
        let e = engine(d.path());
        assert_eq!(
            put(&e, "/o", json!({"settings": {"number_of_shards": 2}})).status,
            200
        );
        bulk(
            &e,
            "o",
            &[json!({"id": "1", "n": 1}), json!({"id": "2", "n": 2})],
        );
        let r = post(&e, "/o/_search/point_in_time?keep_alive=1m", json!({}));
        assert_eq!(r.status, 200, "{}", r.text());
        let v = r.json();
        let id = v["pit_id"].as_str().unwrap().to_string();
        assert_eq!(
            v["_shards"],
            json!({"total": 2, "successful": 2, "skipped": 0, "failed": 0})
        );
        assert!(v["creation_time"].as_u64().unwrap() > 1_600_000_000_000);
        // the point in time does not see a later write
        bulk(&e, "o", &[json!({"id": "3", "n": 3})]);
        let s = post(
            &e,
            "/_search",
            json!({"pit": {"id": id, "keep_alive": "2m"}}),
        )
        .json();
        assert_eq!(s["hits"]["total"]["value"], 2, "{s}");
        assert_eq!(s["pit_id"], id.as_str());
        let list = get(&e, "/_search/point_in_time/_all").json();
        assert_eq!(list["pits"][0]["pit_id"], id.as_str(), "{list}");
        assert_eq!(
            list["pits"][0]["keep_alive"], 120_000,
            "renewed by the search: {list}"
        );
        let r = call(
            &e,
            Method::Delete,
            "/_search/point_in_time",
            &json!({"pit_id": [id, "nope"]}).to_string(),
        );
        assert_eq!(r.status, 200);
        assert_eq!(
            r.json(),
            json!({"pits": [{"successful": true, "pit_id": id}, {"successful": false, "pit_id": "nope"}]})
        );
        let s = post(&e, "/_search", json!({"pit": {"id": id}}));
        assert_eq!(s.status, 404, "{}", s.text());
        // delete all; list empty
        let a = post(&e, "/o/_search/point_in_time?keep_alive=1m", json!({})).json();
        let r = call(&e, Method::Delete, "/_search/point_in_time/_all", "");
        assert_eq!(
            r.json(),
            json!({"pits": [{"successful": true, "pit_id": a["pit_id"]}]})
        );
        assert_eq!(
            get(&e, "/_search/point_in_time/_all").json(),
            json!({"pits": []})
        );
        // errors: no keep_alive, routing, bad body
        let r = post(&e, "/o/_search/point_in_time", json!({}));
        assert_eq!(r.status, 400);
        let r = post(
            &e,
            "/o/_search/point_in_time?keep_alive=1m&routing=x",
            json!({}),
        );
        assert_eq!(r.status, 400);
        let r = call(
            &e,
            Method::Delete,
            "/_search/point_in_time",
            &json!({"id": "x"}).to_string(),
        );
        assert_eq!(r.status, 400, "{}", r.text());
        let r = call(&e, Method::Delete, "/_search/point_in_time", "");
        assert_eq!(r.status, 400);
        let r = post(
            &e,
            "/missing/_search/point_in_time?keep_alive=1m",
            json!({}),
        );
        assert_eq!(r.status, 404);
    }
}
