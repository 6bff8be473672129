//! The one place that renders Elasticsearch-shaped error JSON (spec section 7).
//!
//! Owns: the error body shape (`error.root_cause`, `type`, `reason`, optional `caused_by`,
//! `resource.type`/`resource.id`/`index`, and `status`), and the catalogue of errors the
//! edge itself produces, with their statuses. Both the edge and the embedded engine render
//! through [`ErrorBody`], so every error a client sees has the same shape.
//!
//! Also owns the one mapping from protocol errors (`proto::ProtoError`) to answers,
//! [`EdgeError::from_proto`], shared by the edge and the embedded engine.
//!
//! Must not touch: sockets, the registry or any engine internals. Pure data -> bytes.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::params::ParamError;
use crate::proto::ProtoError;

/// An Elasticsearch-shaped error, ready to render.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorBody {
    /// HTTP status; also written as the top-level `status` field.
    pub status: u16,
    /// Error type, e.g. `index_not_found_exception`.
    pub kind: String,
    /// Human-readable reason.
    pub reason: String,
    /// Optional cause (`caused_by.type`, `caused_by.reason`).
    pub caused_by: Option<(String, String)>,
    /// For missing resources: (`resource.type`, `resource.id`); `index` is set from the id
    /// when the resource is an index.
    pub resource: Option<(String, String)>,
    /// The index the error is about, when there is one.
    pub index: Option<String>,
    /// Extra fields placed inside `error` (and each root cause), e.g. plan figures.
    pub extra: Map<String, Value>,
    /// The root cause when it is not the error itself (`type`, `reason`), as a search that
    /// failed on every shard reports the shards' cause.
    pub root_cause: Option<(String, String)>,
}

impl ErrorBody {
    /// A plain error of `status` with `kind` and `reason`.
    pub fn new(status: u16, kind: impl Into<String>, reason: impl Into<String>) -> Self {
        ErrorBody {
            status,
            kind: kind.into(),
            reason: reason.into(),
            caused_by: None,
            resource: None,
            index: None,
            extra: Map::new(),
            root_cause: None,
        }
    }

    /// Adds `caused_by`.
    pub fn caused_by(mut self, kind: impl Into<String>, reason: impl Into<String>) -> Self {
        self.caused_by = Some((kind.into(), reason.into()));
        self
    }

    /// Sets the root cause to another error than this one.
    pub fn with_root_cause(mut self, kind: impl Into<String>, reason: impl Into<String>) -> Self {
        self.root_cause = Some((kind.into(), reason.into()));
        self
    }

    /// Adds `index` (and `index_uuid` as Elasticsearch does, `_na_`).
    pub fn with_index(mut self, index: impl Into<String>) -> Self {
        self.index = Some(index.into());
        self
    }

    /// Adds `resource.type` and `resource.id`.
    pub fn with_resource(mut self, kind: impl Into<String>, id: impl Into<String>) -> Self {
        self.resource = Some((kind.into(), id.into()));
        self
    }

    /// Adds one extra field inside `error`.
    pub fn with_field(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.to_string(), value);
        self
    }

    /// The `index_not_found_exception` of spec section 7 for `index`.
    pub fn index_not_found(index: &str) -> Self {
        ErrorBody::new(404, "index_not_found_exception", "no such index")
            .with_resource("index_or_alias", index)
            .with_index(index)
    }

    /// The `index_not_found_exception` of a write to a missing index that
    /// `action.auto_create_index` does not let it create, with the next step.
    pub fn index_not_auto_created(index: &str) -> Self {
        ErrorBody::new(
            404,
            "index_not_found_exception",
            format!("no such index [{index}] and automatic index creation ([action.auto_create_index]) does not allow it; create it first with PUT /{index}"),
        )
        .with_resource("index_or_alias", index)
        .with_index(index)
    }

    fn cause_object(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(self.kind.clone()));
        m.insert("reason".into(), Value::String(self.reason.clone()));
        if let Some((rtype, rid)) = &self.resource {
            m.insert("resource.type".into(), Value::String(rtype.clone()));
            m.insert("resource.id".into(), Value::String(rid.clone()));
        }
        if let Some(index) = &self.index {
            m.insert("index_uuid".into(), Value::String("_na_".into()));
            m.insert("index".into(), Value::String(index.clone()));
        }
        for (k, v) in &self.extra {
            m.insert(k.clone(), v.clone());
        }
        m
    }

    /// The JSON value `{"error": {...}, "status": N}`.
    pub fn to_value(&self) -> Value {
        let root = self.cause_object();
        let first = match &self.root_cause {
            Some((kind, reason)) => json!({"type": kind, "reason": reason}),
            None => Value::Object(root.clone()),
        };
        let mut error = Map::new();
        error.insert("root_cause".into(), Value::Array(vec![first]));
        error.extend(root);
        if let Some((ctype, creason)) = &self.caused_by {
            error.insert(
                "caused_by".into(),
                json!({"type": ctype, "reason": creason}),
            );
        }
        json!({ "error": Value::Object(error), "status": self.status })
    }

    /// Rendered JSON bytes (compact, no trailing newline).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_value()).expect("error bodies always serialise")
    }
}

/// The errors the edge itself produces (spec section 7), independent of how they are sent.
#[derive(Debug, Clone, PartialEq)]
pub enum EdgeError {
    /// 400: malformed request, smuggling attempt, bad framing.
    BadRequest(&'static str),
    /// 401: credentials missing, wrong or outdated.
    AuthRequired,
    /// 403: update sent to a cluster an operator made read-only (with their reason, if any).
    ReadOnly(Option<Arc<str>>),
    /// 403: any request to a cluster an operator disabled (with their reason, if any).
    Disabled(Option<Arc<str>>),
    /// 403: update sent to a cluster the overage ladder made read-only (with its reason:
    /// what is over the plan, since when, what comes next). Index deletions pass.
    OverageReadOnly(Option<Arc<str>>),
    /// 403: any request to a cluster the overage ladder disabled (with its reason).
    OverageDisabled(Option<Arc<str>>),
    /// 403: update sent during maintenance (with the operator's reason, if any).
    Maintenance(Option<Arc<str>>),
    /// 404: the address matches no (provisioned) cluster.
    ClusterNotFound,
    /// 421: the TLS server name (SNI) and the Host header name different hosts.
    Misdirected,
    /// 408: the client was too slow sending its request.
    RequestTimeout,
    /// 413: body over the limit (limit in bytes).
    BodyTooLarge(u64),
    /// 413: request head over the limit (limit in bytes).
    HeadTooLarge(usize),
    /// 413: more bulk actions than the plan allows (limit).
    TooManyBulkActions(u64),
    /// 429: the queue of one of the cluster's limits (`shared`, `search` or `write`) is full.
    QueueFull {
        limit: &'static str,
        concurrency: u32,
        queue_size: u32,
    },
    /// 429: waited in the queue of one of the cluster's limits past the plan's queue timeout.
    QueueTimeout {
        limit: &'static str,
        concurrency: u32,
        waited_ms: u64,
    },
    /// 501: endpoint not exposed (the endpoint as the client named it).
    NotImplemented(String),
    /// 502: the upstream answered with a malformed or cut head.
    BadGateway(&'static str),
    /// 503: the upstream could not be reached.
    ServiceUnavailable(&'static str),
    /// 504: the request took longer than the deadline (seconds).
    GatewayTimeout(u64),
    /// 505: an HTTP version other than 1.0 and 1.1.
    VersionNotSupported,
    /// 500: the request failed inside the service itself (a fault it contained: the
    /// connection ends, every other request goes on).
    Internal,
    /// 400: an index name the upstream would refuse from a tenant alone (`reason` as
    /// Elasticsearch words it, e.g. "must not start with '_', '-', or '+'").
    InvalidIndexName {
        index: String,
        reason: std::borrow::Cow<'static, str>,
    },
    /// A request the multitenant rewriting refuses (a body, parameter or media type it
    /// cannot read with certainty, or a reference it cannot confine), with the status and
    /// Elasticsearch error type the upstream would have used: 400 `x_content_parse_exception`,
    /// `parsing_exception` or `illegal_argument_exception`, 406 `content_type_exception`.
    Refused {
        status: u16,
        kind: &'static str,
        reason: String,
    },
    /// 404: a scroll or point-in-time id that does not open (another cluster's, tampered,
    /// or not one the edge issued), shaped as Elasticsearch answers a missing context.
    SearchContextMissing(String),
    /// 400: a parameter value Elasticsearch would refuse (`params`), with its error.
    Param(crate::params::ParamError),
    /// 403 `security_exception`: a cluster key (`key`: its name) may not make the request
    /// (`action`: method and endpoint), and why (its role, an index outside its indices).
    Forbidden {
        key: String,
        action: String,
        why: String,
    },
    /// 400 with a body naming the plan: shard capacity exceeded.
    ShardCapacity {
        plan: String,
        capacity: u64,
        in_use: u64,
        asked: u64,
    },
}

impl ParamError {
    /// The 400 Elasticsearch answers.
    pub fn body(&self) -> ErrorBody {
        if self.search_phase {
            return ErrorBody::new(400, "search_phase_execution_exception", "all shards failed")
                .with_root_cause(self.kind, self.reason.clone())
                .caused_by(self.kind, self.reason.clone())
                .with_field("phase", json!("query"))
                .with_field("grouped", json!(true));
        }
        let body = ErrorBody::new(400, self.kind, self.reason.clone());
        match &self.cause {
            Some((kind, reason)) => body.caused_by(*kind, reason.clone()),
            None => body,
        }
    }
}

impl From<ParamError> for EdgeError {
    fn from(e: ParamError) -> Self {
        EdgeError::Param(e)
    }
}

/// The limits a protocol error is reported with (they are named in the 413 reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtoLimits {
    /// Request head limit, Authorization not counted (spec 8: 16KB).
    pub max_head: usize,
    /// Request body limit (spec 8: 40MB).
    pub max_body: u64,
}

impl EdgeError {
    /// The answer to a protocol error in a client's request, its head or its body: 413 for
    /// a head or body over its limit, 505 for another HTTP version, 400 for everything
    /// malformed or ambiguous (the connection is closed after any of them).
    pub fn from_proto(e: ProtoError, limits: ProtoLimits) -> EdgeError {
        match e {
            ProtoError::HeadTooLarge | ProtoError::TooManyHeaders => {
                EdgeError::HeadTooLarge(limits.max_head)
            }
            ProtoError::UnsupportedVersion => EdgeError::VersionNotSupported,
            ProtoError::BodyTooLarge => EdgeError::BodyTooLarge(limits.max_body),
            ProtoError::Malformed(why) | ProtoError::Smuggling(why) | ProtoError::BadChunk(why) => {
                EdgeError::BadRequest(why)
            }
            ProtoError::UnsupportedTransferCoding => {
                EdgeError::BadRequest("unsupported transfer coding")
            }
        }
    }

    /// The HTTP status the spec gives this error.
    pub fn status(&self) -> u16 {
        self.body().status
    }

    /// Extra response headers this error carries (besides content type and length).
    pub fn headers(&self) -> &'static [(&'static str, &'static str)] {
        match self {
            EdgeError::AuthRequired => &[("WWW-Authenticate", "Basic realm=\"searchgate\"")],
            EdgeError::Maintenance(_) => &[("Retry-After", "60")],
            EdgeError::QueueFull { .. } | EdgeError::QueueTimeout { .. } => &[("Retry-After", "1")],
            EdgeError::ServiceUnavailable(_) => &[("Retry-After", "5")],
            _ => &[],
        }
    }

    /// The Elasticsearch-shaped body for this error.
    pub fn body(&self) -> ErrorBody {
        use EdgeError::*;
        match self {
            BadRequest(why) => ErrorBody::new(400, "illegal_argument_exception", *why),
            AuthRequired => ErrorBody::new(
                401,
                "security_exception",
                "Authorization Required: send the cluster's username and password with every request (HTTP Basic)",
            ),
            ReadOnly(why) => blocked(
                "Cluster Read-only",
                why,
                "updates are refused while the cluster is read-only; searches still work. The service's operator set this mode: ask them to lift it",
            ),
            Disabled(why) => blocked(
                "Cluster Disabled",
                why,
                "every request is refused while the cluster is disabled. The service's operator set this mode: ask them to lift it",
            ),
            OverageReadOnly(why) => blocked(
                "Cluster Read-only",
                why,
                "updates are refused while the cluster is over its plan; searches and index deletions still work. Delete indices or upgrade the plan to clear the overage",
            ),
            OverageDisabled(why) => blocked(
                "Cluster Disabled",
                why,
                "every request is refused while the cluster is over its plan. Upgrade the plan to clear the overage",
            ),
            Maintenance(why) => blocked(
                "Maintenance",
                why,
                "updates are paused for maintenance; searches still work, retry updates later",
            ),
            ClusterNotFound => ErrorBody::new(
                404,
                "cluster_not_found_exception",
                "Cluster Not Found: no cluster answers at this address; check the host name (it may be a typo, destroyed or not provisioned yet)",
            ),
            Misdirected => ErrorBody::new(
                421,
                "misdirected_request_exception",
                "Misdirected Request: the TLS server name and the Host header disagree; send both for the same cluster",
            ),
            RequestTimeout => ErrorBody::new(
                408,
                "request_timeout_exception",
                "the request was not received in time",
            ),
            BodyTooLarge(limit) => too_large(format!(
                "Request Too Large: the body is over the limit of {limit} bytes; halve the batch size until the request passes"
            )),
            HeadTooLarge(limit) => too_large(format!(
                "Request Too Large: the request headers are over the limit of {limit} bytes"
            )),
            TooManyBulkActions(limit) => too_large(format!(
                "Request Too Large: more than {limit} actions in one bulk request; halve the batch size until the request passes"
            )),
            QueueFull {
                limit,
                concurrency,
                queue_size,
            } => too_many(format!(
                "Too Many Requests: the cluster's {} of {concurrency} concurrent requests is in use and its queue of {queue_size} is full; retry with backoff, batch updates, use multi-search, or upgrade the plan",
                limit_words(limit)
            ))
            .with_field("limit", json!(limit)),
            QueueTimeout {
                limit,
                concurrency,
                waited_ms,
            } => too_many(format!(
                "Too Many Requests: waited {waited_ms} ms for one of the {concurrency} concurrent request slots of the cluster's {}; retry with backoff, batch updates, use multi-search, or upgrade the plan",
                limit_words(limit)
            ))
            .with_field("limit", json!(limit)),
            // Only multitenant clusters refuse `_cat` tables: they would show the engine
            // the cluster shares.
            NotImplemented(endpoint) if endpoint.starts_with("_cat") => ErrorBody::new(
                501,
                "not_implemented_exception",
                format!("Not Implemented: the endpoint [{endpoint}] is not available on this cluster, since its table would describe the engine it shares with other clusters; GET /_cluster/health, GET /_cat/indices?v and GET /_cat/shards answer for this cluster's own indices"),
            ),
            NotImplemented(endpoint) => ErrorBody::new(
                501,
                "not_implemented_exception",
                format!("Not Implemented: the endpoint [{endpoint}] is not exposed by this service"),
            ),
            BadGateway(why) => ErrorBody::new(502, "bad_gateway_exception", format!("Bad Gateway: {why}; retry")),
            ServiceUnavailable(why) => ErrorBody::new(
                503,
                "service_unavailable_exception",
                format!("Service Unavailable: {why}; retry"),
            ),
            GatewayTimeout(secs) => ErrorBody::new(
                504,
                "gateway_timeout_exception",
                format!("Gateway Timeout: the request took longer than {secs} seconds, queue time included; simplify the request or reduce load"),
            ),
            Internal => ErrorBody::new(
                500,
                "exception",
                "Internal Server Error: the request failed inside the service; retry",
            ),
            VersionNotSupported => ErrorBody::new(
                505,
                "http_version_not_supported_exception",
                "only HTTP/1.0 and HTTP/1.1 are supported",
            ),
            InvalidIndexName { index, reason } => ErrorBody::new(
                400,
                "invalid_index_name_exception",
                format!("Invalid index name [{index}], {reason}"),
            )
            .with_index(index.clone()),
            Refused { status, kind, reason } => ErrorBody::new(*status, *kind, reason.clone()),
            Param(e) => e.body(),
            Forbidden { key, action, why } => ErrorBody::new(
                403,
                "security_exception",
                format!("action [{action}] is unauthorized for key [{key}]: {why}"),
            ),
            SearchContextMissing(id) => {
                let reason = format!("No search context found for id [{id}]");
                ErrorBody::new(404, "search_phase_execution_exception", "all shards failed")
                    .caused_by("search_context_missing_exception", reason.clone())
                    .with_root_cause("search_context_missing_exception", reason)
                    .with_field("phase", json!("query"))
                    .with_field("grouped", json!(true))
            }
            ShardCapacity { plan, capacity, in_use, asked } => ErrorBody::new(
                400,
                "validation_exception",
                format!("shard capacity exceeded: plan [{plan}] allows {capacity} shards, {in_use} are in use and this request asks for {asked} more; delete indices, use fewer shards or replicas, or upgrade the plan"),
            )
            .with_field("plan", json!(plan))
            .with_field("shard_capacity", json!(capacity))
            .with_field("shards_in_use", json!(in_use))
            .with_field("shards_requested", json!(asked)),
        }
    }
}

/// A 403 of a cluster mode: `<Name>: <the operator's reason>. <what it means>`, and the
/// operator's reason alone in `mode_reason`.
fn blocked(name: &str, why: &Option<Arc<str>>, meaning: &str) -> ErrorBody {
    match why {
        None => ErrorBody::new(403, "cluster_block_exception", format!("{name}: {meaning}")),
        Some(why) => ErrorBody::new(
            403,
            "cluster_block_exception",
            format!(
                "{name}: {why}. {}{}",
                meaning[..1].to_uppercase(),
                &meaning[1..]
            ),
        )
        .with_field("mode_reason", json!(&**why)),
    }
}

fn too_large(reason: String) -> ErrorBody {
    ErrorBody::new(413, "request_entity_too_large_exception", reason)
}

/// How a 429 names the limit it hit.
fn limit_words(limit: &str) -> &'static str {
    match limit {
        "search" => "search limit (search_concurrency)",
        "write" => "write limit (write_concurrency)",
        _ => "allowance (concurrency)",
    }
}

fn too_many(reason: String) -> ErrorBody {
    ErrorBody::new(429, "too_many_requests_exception", reason)
        .with_field("retry", json!("back off and retry"))
}

#[cfg(test)]
mod tests {
    use super::*;

    // issue 29, spec 7 (429): a 429 names the limit it hit and carries Retry-After
    #[test]
    fn a_429_names_its_limit() {
        let table = [
            ("shared", "allowance (concurrency)"),
            ("search", "search limit (search_concurrency)"),
            ("write", "write limit (write_concurrency)"),
        ];
        for (limit, words) in table {
            let full = EdgeError::QueueFull {
                limit,
                concurrency: 2,
                queue_size: 3,
            };
            let late = EdgeError::QueueTimeout {
                limit,
                concurrency: 2,
                waited_ms: 9,
            };
            for e in [full, late] {
                let v = e.body().to_value();
                assert_eq!(v["error"]["limit"], json!(limit));
                let reason = v["error"]["reason"].as_str().unwrap();
                assert!(reason.contains(words), "{reason}");
                assert_eq!(e.headers(), &[("Retry-After", "1")]);
            }
        }
    }

    // spec 7: error body shape `error.root_cause[]`, `type`, `reason`, `status`
    #[test]
    fn shape_has_root_cause_type_reason_status() {
        let v = EdgeError::ClusterNotFound.body().to_value();
        assert_eq!(v["status"], 404);
        assert_eq!(v["error"]["type"], "cluster_not_found_exception");
        assert_eq!(
            v["error"]["root_cause"][0]["type"],
            "cluster_not_found_exception"
        );
        assert!(v["error"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("Cluster Not Found"));
    }

    // spec 7: unknown index carries resource.type, resource.id and index
    #[test]
    fn index_not_found_carries_resource_and_index() {
        let v = ErrorBody::index_not_found("books").to_value();
        assert_eq!(v["status"], 404);
        assert_eq!(v["error"]["reason"], "no such index");
        assert_eq!(v["error"]["resource.type"], "index_or_alias");
        assert_eq!(v["error"]["resource.id"], "books");
        assert_eq!(v["error"]["index"], "books");
        assert_eq!(v["error"]["root_cause"][0]["index"], "books");
    }

    // spec 7: statuses of the status table
    #[test]
    fn statuses_follow_the_spec_table() {
        use EdgeError::*;
        let table: Vec<(EdgeError, u16)> = vec![
            (BadRequest("x"), 400),
            (AuthRequired, 401),
            (ReadOnly(None), 403),
            (Disabled(None), 403),
            (Maintenance(Some(Arc::from("upgrade"))), 403),
            (ClusterNotFound, 404),
            (Misdirected, 421),
            (RequestTimeout, 408),
            (BodyTooLarge(1), 413),
            (HeadTooLarge(1), 413),
            (TooManyBulkActions(1), 413),
            (
                QueueFull {
                    limit: "write",
                    concurrency: 1,
                    queue_size: 1,
                },
                429,
            ),
            (
                QueueTimeout {
                    limit: "search",
                    concurrency: 1,
                    waited_ms: 1,
                },
                429,
            ),
            (NotImplemented("_snapshot".into()), 501),
            (BadGateway("x"), 502),
            (ServiceUnavailable("x"), 503),
            (GatewayTimeout(60), 504),
        ];
        for (err, status) in table {
            assert_eq!(err.status(), status, "{err:?}");
            let v: Value = serde_json::from_slice(&err.body().to_bytes()).unwrap();
            assert_eq!(v["status"], status);
        }
    }

    // spec 7, 8: every protocol error has one answer, for the edge and the engine alike
    #[test]
    fn protocol_errors_map_to_one_answer_each() {
        let limits = ProtoLimits {
            max_head: 16384,
            max_body: 41_943_040,
        };
        let table = [
            (ProtoError::HeadTooLarge, 413),
            (ProtoError::TooManyHeaders, 413),
            (ProtoError::BodyTooLarge, 413),
            (ProtoError::UnsupportedVersion, 505),
            (ProtoError::Malformed("missing Host"), 400),
            (ProtoError::Smuggling("bare LF in head"), 400),
            (ProtoError::BadChunk("missing chunk size"), 400),
            (ProtoError::UnsupportedTransferCoding, 400),
        ];
        for (e, status) in table {
            assert_eq!(EdgeError::from_proto(e, limits).status(), status, "{e:?}");
        }
        assert_eq!(
            EdgeError::from_proto(ProtoError::HeadTooLarge, limits),
            EdgeError::HeadTooLarge(16384)
        );
        assert_eq!(
            EdgeError::from_proto(ProtoError::Smuggling("bare LF in head"), limits),
            EdgeError::BadRequest("bare LF in head")
        );
    }

    #[test]
    fn auth_required_asks_for_basic_credentials() {
        assert!(EdgeError::AuthRequired
            .headers()
            .iter()
            .any(|(k, v)| *k == "WWW-Authenticate" && v.starts_with("Basic")));
    }

    #[test]
    fn caused_by_is_rendered() {
        let v = ErrorBody::new(400, "mapper_parsing_exception", "failed to parse field [n]")
            .caused_by("number_format_exception", "For input string: \"x\"")
            .to_value();
        assert_eq!(v["error"]["caused_by"]["type"], "number_format_exception");
    }
}
