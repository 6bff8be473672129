//! The REST API as a pure request handler: (method, path, query, headers, streaming body)
//! -> (status, headers, body). No sockets here: `http` feeds it, tests call it directly.
//!
//! Owns: routing, media-type negotiation (`application/json`, `x-ndjson`,
//! `vnd.elasticsearch+json; compatible-with=7|8|9`), `?pretty`, error rendering through
//! `ErrorBody`, and the handlers per endpoint family (`indices`, `docs`, `bulk`, `search`,
//! `scroll`, `cluster`).

pub mod bulk;
pub mod cluster;
pub mod docs;
pub mod indices;
pub mod json;
pub mod params;
pub mod router;
pub mod scroll;
pub mod search;
pub mod templates;

use std::io::{self, BufRead, Write};
use std::sync::Arc;

use serde_json::Value;

use super::error::EngineError;
use super::search::Scrolls;
use super::store::Store;
use crate::proto::Method;
use params::Params;
use router::{method_name, route, Route};

/// What `GET /` reports about this node.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub name: String,
    pub cluster_name: String,
    pub cluster_uuid: String,
}

/// The engine behind the API.
#[derive(Debug)]
pub struct Engine {
    pub store: Arc<Store>,
    pub node: NodeInfo,
    /// Largest request body accepted (Elasticsearch's `http.max_content_length`: 100mb).
    pub max_body: u64,
    /// Open scroll contexts.
    pub scrolls: Arc<Scrolls>,
}

/// A request as the API sees it.
pub struct Request<'a> {
    pub method: Method,
    /// Path as sent (percent-encoded), for messages.
    pub path: String,
    pub segments: Vec<String>,
    pub params: Params,
    pub content_type: Option<String>,
    pub accept: Option<String>,
    /// Whether the request has a body at all.
    pub has_body: bool,
    /// The payload, framing already removed.
    pub body: &'a mut dyn BufRead,
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("path", &self.path)
            .finish()
    }
}

/// A streamed response body writer.
pub type StreamFn = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()> + Send>;

/// A response body.
pub enum Body {
    Empty,
    Bytes(Vec<u8>),
    /// Written after the head (chunked); used for large bulk responses.
    Stream(StreamFn),
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Empty => write!(f, "Empty"),
            Body::Bytes(b) => write!(f, "Bytes({})", b.len()),
            Body::Stream(_) => write!(f, "Stream"),
        }
    }
}

/// A response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Body,
}

/// `Content-Type` of JSON responses without a compatibility request.
pub const JSON: &str = "application/json; charset=UTF-8";

impl Response {
    /// A JSON response.
    pub fn json(status: u16, v: &Value) -> Response {
        Response {
            status,
            content_type: JSON.into(),
            headers: vec![],
            body: Body::Bytes(serde_json::to_vec(v).unwrap_or_default()),
        }
    }

    /// The Elasticsearch-shaped error response of `e`.
    pub fn error(e: &EngineError) -> Response {
        let body = e.body();
        let mut r = Response {
            status: body.status,
            content_type: JSON.into(),
            headers: vec![],
            body: Body::Bytes(body.to_bytes()),
        };
        if let EngineError::MethodNotAllowed { allowed, .. } = e {
            r.headers.push(("Allow", allowed.join(",")));
        }
        r
    }

    /// A plain-text response.
    pub fn text(status: u16, s: String) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=UTF-8".into(),
            headers: vec![],
            body: Body::Bytes(s.into_bytes()),
        }
    }

    /// A status without body (HEAD answers).
    pub fn status(status: u16) -> Response {
        Response {
            status,
            content_type: JSON.into(),
            headers: vec![],
            body: Body::Empty,
        }
    }
}

/// Handler result.
pub type ApiResult = Result<Response, EngineError>;

const MEDIA: &[&str] = &[
    "application/json",
    "application/x-ndjson",
    "application/vnd.elasticsearch+json",
    "application/vnd.elasticsearch+x-ndjson",
];

/// Checks a media type; returns the `compatible-with` version it asks for.
fn media_version(value: &str, is_content_type: bool) -> Result<Option<u8>, EngineError> {
    let mut parts = value.split(';');
    let essence = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let mut version = None;
    for p in parts {
        if let Some((k, v)) = p.split_once('=') {
            if k.trim().eq_ignore_ascii_case("compatible-with") {
                let v = v.trim().trim_matches('"');
                match v.parse::<u8>() {
                    Ok(n @ 7..=9) => version = Some(n),
                    _ => return Err(EngineError::MediaType(format!(
                        "A compatible version is required on both Content-Type and Accept headers if either one has requested a compatible version and the compatible versions must match. Accept version must be either version 8 or 7, but found {v}. {}={value}",
                        if is_content_type { "Content-Type" } else { "Accept" }))),
                }
            }
        }
    }
    if is_content_type && !MEDIA.contains(&essence.as_str()) {
        return Err(EngineError::ContentType(value.to_string()));
    }
    Ok(version)
}

fn negotiate(req: &Request<'_>) -> Result<String, EngineError> {
    let mut version = None;
    if req.has_body {
        if let Some(ct) = &req.content_type {
            version = media_version(ct, true)?;
        }
    }
    if let Some(acc) = &req.accept {
        version = version.or(media_version(acc, false)?);
    }
    Ok(match version {
        Some(v) => format!("application/vnd.elasticsearch+json;compatible-with={v}"),
        None => JSON.into(),
    })
}

impl Engine {
    /// Handles one request. Never panics on bad input: every failure is an error response.
    pub fn handle(&self, req: &mut Request<'_>) -> Response {
        let content_type = match negotiate(req) {
            Ok(ct) => ct,
            Err(e) => return Response::error(&e),
        };
        let mut resp = match self.dispatch(req) {
            Ok(r) => r,
            Err(e) => Response::error(&e),
        };
        if resp.content_type == JSON {
            resp.content_type = content_type;
        }
        if req.params.flag("pretty") {
            resp.body = match resp.body {
                Body::Bytes(b) if resp.content_type.contains("json") => {
                    Body::Bytes(json::prettify(&b))
                }
                Body::Stream(f) if resp.content_type.contains("json") => {
                    Body::Stream(Box::new(move |w| {
                        let mut p = json::Pretty::new(w);
                        f(&mut p)?;
                        p.finish().map(|_| ())
                    }))
                }
                other => other,
            };
        }
        resp
    }

    fn dispatch(&self, req: &mut Request<'_>) -> ApiResult {
        let Some(r) = route(&req.segments) else {
            if req.method == Method::Put && req.segments.len() == 1 {
                // `PUT /_name`: an index name Elasticsearch refuses
                super::names::validate_index_name(&req.segments[0])?;
            }
            return Err(EngineError::NoHandler {
                method: method_name(req.method).into(),
                uri: req.path.clone(),
            });
        };
        if !r.methods().contains(&req.method) {
            return Err(EngineError::MethodNotAllowed {
                method: method_name(req.method).into(),
                uri: req.path.clone(),
                allowed: r.methods().iter().map(|m| method_name(*m)).collect(),
            });
        }
        let m = req.method;
        match r {
            Route::Root => cluster::root(self, m),
            Route::ClusterHealth(i) => cluster::health(self, i.as_deref(), &req.params),
            Route::CatIndices(p) => cluster::cat_indices(self, p.as_deref(), &req.params),
            Route::CatHealth => cluster::cat_health(self, &req.params),
            Route::CatCount(p) => cluster::cat_count(self, p.as_deref(), &req.params),
            Route::Index(i) => indices::index(self, req, &i),
            Route::Refresh { index } => indices::refresh(self, index.as_deref()),
            Route::Mapping { index, type_name } => {
                indices::mapping(self, req, index.as_deref(), type_name.as_deref())
            }
            Route::Settings { index } => indices::settings(self, req, index.as_deref()),
            Route::DocAuto { index, type_name } => {
                docs::index_doc(self, req, &index, type_name.as_deref(), None, false)
            }
            Route::Doc {
                index,
                type_name,
                id,
            } => docs::doc(self, req, &index, type_name.as_deref(), &id),
            Route::Create {
                index,
                type_name,
                id,
            } => docs::index_doc(self, req, &index, type_name.as_deref(), Some(id), true),
            Route::Update {
                index,
                type_name,
                id,
            } => docs::update(self, req, &index, type_name.as_deref(), &id),
            Route::Source { index, id } => docs::source(self, req, &index, &id),
            Route::Bulk { index, type_name } => {
                bulk::bulk(self, req, index.as_deref(), type_name.as_deref())
            }
            Route::Search { index } => search::search(self, req, index.as_deref()),
            Route::Scroll { id } => scroll::scroll(self, req, id.as_deref()),
            Route::Count { index } => search::count(self, req, index.as_deref()),
            Route::Msearch { index } => search::msearch(self, req, index.as_deref()),
            Route::Mget { index } => docs::mget(self, req, index.as_deref()),
            Route::Template { name, composable } => {
                use crate::engine::store::templates::Kind;
                let kind = if composable {
                    Kind::Composable
                } else {
                    Kind::Legacy
                };
                templates::template(self, req, kind, name.as_deref())
            }
        }
    }
}

#[cfg(test)]
mod scroll_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod write_tests;
