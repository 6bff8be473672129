//! The engine's one error enum, and its rendering through [`searchgate_core::errors::ErrorBody`].
//!
//! Owns: which Elasticsearch error type, status and reason each engine failure has.
//! Must not touch: I/O. Every error a handler returns is rendered by `ErrorBody`, never by
//! hand-written JSON.

use serde_json::json;

use searchgate_core::errors::ErrorBody;
use searchgate_core::params::ParamError;

/// An engine failure, as Elasticsearch 7.10 would name it.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineError {
    /// 404 `index_not_found_exception` (spec 7).
    IndexNotFound(String),
    /// 404 `index_not_found_exception` of a write that would have created the index, which
    /// `action.auto_create_index` does not allow (off on the service: spec 1.5).
    IndexNotAutoCreated(String),
    /// 404 `index_not_found_exception`: a write with `require_alias` to a name that is not
    /// an alias.
    RequireAlias(String),
    /// 400 `index_closed_exception`: a closed index named for a read or write.
    IndexClosed(String),
    /// 400 `too_many_buckets_exception` (more than `search.max_buckets`).
    TooManyBuckets(usize),
    /// 400 `illegal_argument_exception` "failed to execute script" caused by
    /// `script_exception` (compile or runtime error of a script).
    Script(String),
    /// 400 `invalid_alias_name_exception`: an index has the alias's name.
    InvalidAliasName(String),
    /// 404 `aliases_not_found_exception`.
    AliasesMissing(Vec<String>),
    /// 400 `invalid_index_name_exception`.
    InvalidIndexName { name: String, reason: String },
    /// 400 `resource_already_exists_exception`.
    IndexExists { name: String, uuid: String },
    /// 400 `mapper_parsing_exception` with an optional cause (spec 7).
    MapperParsing {
        reason: String,
        cause: Option<(String, String)>,
    },
    /// 400 `strict_dynamic_mapping_exception`.
    StrictDynamic { field: String, object: String },
    /// 400 `parsing_exception` (query DSL, request bodies).
    Parsing(String),
    /// 400 `x_content_parse_exception` / `json_parse_exception`: the body is not JSON.
    NotJson(String),
    /// 400 `x_content_parse_exception`: JSON with a key or value its parser refuses.
    XContent(String),
    /// 400 `parse_exception` (`ElasticsearchParseException`, e.g. a legacy template key).
    Parse(String),
    /// 403 `cluster_block_exception`: a write to an index with a write block.
    Blocked(String),
    /// 400 `illegal_argument_exception`.
    IllegalArgument(String),
    /// 400 `action_request_validation_exception` ("Validation Failed: 1: ...;").
    Validation(Vec<String>),
    /// 400 `search_phase_execution_exception` wrapping a per-shard cause.
    SearchPhase { kind: String, reason: String },
    /// 400 `query_shard_exception`.
    QueryShard { reason: String, index: String },
    /// 409 `version_conflict_engine_exception`.
    VersionConflict {
        index: String,
        id: String,
        reason: String,
    },
    /// 400 `routing_missing_exception`: a write or read without routing on an index whose
    /// mapping has `_routing.required`.
    RoutingMissing {
        index: String,
        type_name: String,
        id: String,
    },
    /// 404 `document_missing_exception` (update of a missing document).
    DocumentMissing { index: String, id: String },
    /// 404 `resource_not_found_exception` (e.g. `_source` of a missing document).
    NotFound(String),
    /// 400: no route for this path and method.
    NoHandler { method: String, uri: String },
    /// 405: the path exists but not for this method.
    MethodNotAllowed {
        method: String,
        uri: String,
        allowed: Vec<&'static str>,
    },
    /// 406: Content-Type not supported.
    ContentType(String),
    /// 400 `media_type_header_exception` (bad compatible-with version).
    MediaType(String),
    /// 413: request body over the engine's limit (bytes).
    BodyTooLarge(u64),
    /// 408: a wait (cluster health) timed out; rendered by the handler, kept for completeness.
    Timeout(String),
    /// 404: no open scroll context has this id (unknown, expired or cleared).
    ScrollMissing(String),
    /// 500: opening a scroll would exceed this many open shard contexts.
    TooManyScrolls(usize),
    /// 500 `illegal_state_exception`: Elasticsearch 7.10's answer to a few malformed
    /// requests (`source` without `source_content_type`).
    IllegalState(String),
    /// 500: an internal failure (I/O, tantivy).
    Internal(String),
    /// 400: a parameter or setting value refused by the one reader the edge shares
    /// (`searchgate_core::params`), with Elasticsearch's error.
    Param(ParamError),
}

impl From<ParamError> for EngineError {
    fn from(e: ParamError) -> Self {
        EngineError::Param(e)
    }
}

/// Result alias of the engine.
pub type EngineResult<T> = Result<T, EngineError>;

impl EngineError {
    /// HTTP status of this error.
    pub fn status(&self) -> u16 {
        self.body().status
    }

    /// The Elasticsearch-shaped body.
    pub fn body(&self) -> ErrorBody {
        use EngineError::*;
        match self {
            IndexNotFound(name) => {
                // Elasticsearch 7.10 names the index in the reason
                let mut b = ErrorBody::index_not_found(name);
                b.reason = format!("no such index [{name}]");
                b
            }
            RequireAlias(name) => {
                let mut b = ErrorBody::index_not_found(name);
                b.reason = format!(
                    "[require_alias] request flag is [true] and [{name}] is not an alias"
                );
                b
            }
            IndexNotAutoCreated(name) => ErrorBody::index_not_auto_created(name),
            IndexClosed(name) => {
                ErrorBody::new(400, "index_closed_exception", "closed").with_index(name.clone())
            }
            TooManyBuckets(n) => ErrorBody::new(
                400,
                "too_many_buckets_exception",
                format!("Trying to create too many buckets. Must be less than or equal to: [65535] but was [{n}]. This limit can be set by changing the [search.max_buckets] cluster level setting."),
            )
            .with_field("max_buckets", json!(65535)),
            Script(reason) => {
                ErrorBody::new(400, "illegal_argument_exception", "failed to execute script")
                    .caused_by("script_exception", reason.clone())
            }
            InvalidAliasName(name) => ErrorBody::new(
                400,
                "invalid_alias_name_exception",
                format!("Invalid alias name [{name}], an index or data stream exists with the same name as the alias"),
            )
            .with_index(name.clone()),
            AliasesMissing(names) => ErrorBody::new(
                404,
                "aliases_not_found_exception",
                format!("aliases [{}] missing", names.join(",")),
            )
            .with_field("resource.type", json!("aliases"))
            .with_field("resource.id", json!(names.join(","))),
            InvalidIndexName { name, reason } => ErrorBody::new(
                400,
                "invalid_index_name_exception",
                format!("Invalid index name [{name}], {reason}"),
            )
            .with_index(name.clone()),
            IndexExists { name, uuid } => ErrorBody::new(
                400,
                "resource_already_exists_exception",
                format!("index [{name}/{uuid}] already exists"),
            )
            .with_index(name.clone()),
            MapperParsing { reason, cause } => {
                let body = ErrorBody::new(400, "mapper_parsing_exception", reason.clone());
                match cause {
                    Some((k, r)) => body.caused_by(k.clone(), r.clone()),
                    None => body,
                }
            }
            StrictDynamic { field, object } => ErrorBody::new(
                400,
                "strict_dynamic_mapping_exception",
                format!(
                    "mapping set to strict, dynamic introduction of [{field}] within [{object}] is not allowed"
                ),
            ),
            Parsing(reason) => ErrorBody::new(400, "parsing_exception", reason.clone()),
            NotJson(reason) => ErrorBody::new(400, "x_content_parse_exception", reason.clone())
                .caused_by("json_parse_exception", reason.clone()),
            XContent(reason) => ErrorBody::new(400, "x_content_parse_exception", reason.clone()),
            Parse(reason) => ErrorBody::new(400, "parse_exception", reason.clone()),
            Blocked(reason) => ErrorBody::new(403, "cluster_block_exception", reason.clone()),
            IllegalArgument(reason) => {
                ErrorBody::new(400, "illegal_argument_exception", reason.clone())
            }
            Validation(items) => {
                let mut reason = String::from("Validation Failed: ");
                for (i, item) in items.iter().enumerate() {
                    reason.push_str(&format!("{}: {item};", i + 1));
                }
                ErrorBody::new(400, "action_request_validation_exception", reason)
            }
            SearchPhase { kind, reason } => ErrorBody::new(
                400,
                "search_phase_execution_exception",
                "all shards failed",
            )
            .caused_by(kind.clone(), reason.clone())
            .with_field("phase", json!("query")),
            QueryShard { reason, index } => {
                ErrorBody::new(400, "query_shard_exception", reason.clone()).with_index(index)
            }
            VersionConflict { index, id, reason } => ErrorBody::new(
                409,
                "version_conflict_engine_exception",
                format!("[{id}]: {reason}"),
            )
            .with_index(index.clone())
            .with_field("shard", json!("0")),
            DocumentMissing { index, id } => ErrorBody::new(
                404,
                "document_missing_exception",
                format!("[_doc][{id}]: document missing"),
            )
            .with_index(index.clone())
            .with_field("shard", json!("0")),
            RoutingMissing {
                index,
                type_name,
                id,
            } => ErrorBody::new(
                400,
                "routing_missing_exception",
                format!("routing is required for [{index}]/[{type_name}]/[{id}]"),
            )
            .with_index(index.clone()),
            NotFound(reason) => ErrorBody::new(404, "resource_not_found_exception", reason.clone()),
            NoHandler { method, uri } => ErrorBody::new(
                400,
                "illegal_argument_exception",
                format!("no handler found for uri [{uri}] and method [{method}]"),
            ),
            MethodNotAllowed {
                method,
                uri,
                allowed,
            } => ErrorBody::new(
                405,
                "method_not_allowed_exception",
                format!(
                    "Incorrect HTTP method for uri [{uri}] and method [{method}], allowed: [{}]",
                    allowed.join(", ")
                ),
            ),
            ContentType(ct) => ErrorBody::new(
                406,
                "content_type_exception",
                format!("Content-Type header [{ct}] is not supported"),
            ),
            MediaType(reason) => {
                ErrorBody::new(400, "media_type_header_exception", "Invalid media-type value on headers [Content-Type, Accept]")
                    .caused_by("status_exception", reason.clone())
            }
            BodyTooLarge(limit) => ErrorBody::new(
                413,
                "request_entity_too_large_exception",
                format!("Request Too Large: the body is over the engine's limit of {limit} bytes"),
            ),
            Timeout(reason) => ErrorBody::new(408, "timeout_exception", reason.clone()),
            ScrollMissing(_) => {
                // Elasticsearch shows its internal context number here; this engine's ids
                // are the scroll and point-in-time ids themselves, which a multitenant
                // edge must never let a tenant see raw (issue 25): none is shown
                let reason = "No search context found for id [_na_]".to_string();
                search_phase(404, "search_context_missing_exception", reason)
            }
            TooManyScrolls(max) => {
                let reason = format!("Trying to create too many scroll contexts. Must be less than or equal to: [{max}]. This limit can be set by changing the [search.max_open_scroll_context] setting.");
                search_phase(500, "exception", reason)
            }
            IllegalState(reason) => ErrorBody::new(500, "illegal_state_exception", reason.clone()),
            Internal(reason) => ErrorBody::new(500, "exception", reason.clone()),
            Param(e) => e.body(),
        }
    }

    /// A `mapper_parsing_exception` caused by `number_format_exception` (spec 7's example).
    pub fn number_format(field: &str, type_name: &str, id: &str, input: &str) -> Self {
        EngineError::MapperParsing {
            reason: format!(
                "failed to parse field [{field}] of type [{type_name}] in document with id '{id}'. Preview of field's value: '{}'",
                preview(input)
            ),
            cause: Some((
                "number_format_exception".into(),
                format!("For input string: \"{input}\""),
            )),
        }
    }

    /// A `mapper_parsing_exception` for `field` with an `illegal_argument_exception` cause.
    pub fn bad_value(field: &str, type_name: &str, id: &str, value: &str, why: String) -> Self {
        EngineError::MapperParsing {
            reason: format!(
                "failed to parse field [{field}] of type [{type_name}] in document with id '{id}'. Preview of field's value: '{}'",
                preview(value)
            ),
            cause: Some(("illegal_argument_exception".into(), why)),
        }
    }

    /// A plain `mapper_parsing_exception` without cause.
    pub fn mapper(reason: impl Into<String>) -> Self {
        EngineError::MapperParsing {
            reason: reason.into(),
            cause: None,
        }
    }

    /// Wraps an internal failure.
    pub fn internal(what: impl std::fmt::Display) -> Self {
        EngineError::Internal(what.to_string())
    }
}

/// A search that failed on every shard with the same cause, as Elasticsearch reports it.
fn search_phase(status: u16, kind: &str, reason: String) -> ErrorBody {
    ErrorBody::new(
        status,
        "search_phase_execution_exception",
        "all shards failed",
    )
    .caused_by(kind, reason.clone())
    .with_root_cause(kind, reason)
    .with_field("phase", json!("query"))
    .with_field("grouped", json!(true))
}

fn preview(s: &str) -> String {
    s.chars().take(40).collect()
}

impl From<std::io::Error> for EngineError {
    fn from(e: std::io::Error) -> Self {
        EngineError::Internal(format!("i/o error: {e}"))
    }
}

impl From<tantivy::TantivyError> for EngineError {
    fn from(e: tantivy::TantivyError) -> Self {
        EngineError::Internal(format!("index error: {e}"))
    }
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.body();
        write!(f, "{} ({}): {}", b.kind, b.status, b.reason)
    }
}

impl std::error::Error for EngineError {}

#[cfg(test)]
mod tests {
    use super::*;

    // spec 7: 400 mapper_parsing_exception caused by number_format_exception
    #[test]
    fn number_format_is_mapper_parsing_with_cause() {
        let v = EngineError::number_format("n", "long", "1", "abc")
            .body()
            .to_value();
        assert_eq!(v["status"], 400);
        assert_eq!(v["error"]["type"], "mapper_parsing_exception");
        assert_eq!(v["error"]["caused_by"]["type"], "number_format_exception");
        assert_eq!(
            v["error"]["caused_by"]["reason"],
            "For input string: \"abc\""
        );
    }

    // spec 7: unknown index is 404 with resource.type, resource.id and index
    #[test]
    fn index_not_found_has_resource_fields() {
        let v = EngineError::IndexNotFound("x".into()).body().to_value();
        assert_eq!(v["status"], 404);
        assert_eq!(v["error"]["resource.id"], "x");
        assert_eq!(v["error"]["index"], "x");
        assert_eq!(v["error"]["reason"], "no such index [x]");
    }

    // issue 32: a write to a missing index says that nothing creates it and how to
    #[test]
    fn a_write_that_may_not_create_its_index_names_put() {
        let v = EngineError::IndexNotAutoCreated("site".into())
            .body()
            .to_value();
        assert_eq!(v["status"], 404);
        assert_eq!(v["error"]["type"], "index_not_found_exception");
        assert_eq!(v["error"]["index"], "site");
        let reason = v["error"]["reason"].as_str().unwrap();
        assert!(reason.starts_with("no such index [site]"), "{reason}");
        assert!(
            reason.contains("create it first with PUT /site"),
            "{reason}"
        );
    }

    #[test]
    fn validation_numbers_its_items() {
        let e = EngineError::Validation(vec!["a".into(), "b".into()]);
        assert_eq!(e.body().reason, "Validation Failed: 1: a;2: b;");
        assert_eq!(e.status(), 400);
    }

    #[test]
    fn statuses() {
        assert_eq!(
            EngineError::MethodNotAllowed {
                method: "GET".into(),
                uri: "/_bulk".into(),
                allowed: vec!["POST", "PUT"]
            }
            .status(),
            405
        );
        assert_eq!(EngineError::ContentType("text/plain".into()).status(), 406);
        assert_eq!(EngineError::BodyTooLarge(1).status(), 413);
        assert_eq!(EngineError::Internal("x".into()).status(), 500);
        assert_eq!(
            EngineError::VersionConflict {
                index: "i".into(),
                id: "1".into(),
                reason: "r".into()
            }
            .status(),
            409
        );
    }
}
