//! The REST API as a pure request handler: (method, path, query, headers, streaming body)
//! -> (status, headers, body). No sockets here: `http` feeds it, tests call it directly.
//!
//! Owns: routing, media-type negotiation (`application/json`, `x-ndjson`,
//! `vnd.elasticsearch+json; compatible-with=7|8|9`), `?pretty`, error rendering through
//! `ErrorBody`, and the handlers per endpoint family (`indices`, `docs`, `bulk`, `search`,
//! `scroll`, `cluster`).

pub mod admin;
pub mod aliases;
pub mod allowed;
pub mod bulk;
pub mod by_query;
pub mod cluster;
pub mod docs;
pub mod filter_path;
pub mod get;
pub mod health;
pub mod indices;
pub mod json;
pub mod media;
pub mod os_pit;
pub mod params;
pub mod router;
pub mod scroll;
pub mod search;
pub mod templates;

use std::io::{self, BufRead, Write};
use std::sync::Arc;

use serde_json::Value;

use super::error::EngineError;
use super::search::{Pits, Scrolls};
use super::store::Store;
use crate::store::templates::Kind;
use params::Params;
use router::{method_name, route, Route};
use searchgate_core::proto::Method;

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
    /// Open points in time.
    pub pits: Arc<Pits>,
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
    /// Whether the client closed its connection (a handler that waits asks it now and
    /// then, and stops waiting: no one is left to answer).
    pub gone: &'a dyn Fn() -> bool,
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

/// A JSON response kept to the parts `filter_path` names.
fn filtered(mut resp: Response, spec: &str) -> Response {
    if !resp.content_type.contains("json") {
        return resp;
    }
    let bytes = match std::mem::replace(&mut resp.body, Body::Empty) {
        Body::Bytes(b) => b,
        Body::Stream(f) => {
            let mut out = Vec::new();
            if f(&mut out).is_err() {
                return resp;
            }
            out
        }
        Body::Empty => return resp,
    };
    resp.body = match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) => Body::Bytes(serde_json::to_vec(&filter_path::filter(&v, spec)).unwrap_or(bytes)),
        Err(_) => Body::Bytes(bytes),
    };
    resp
}

/// `_cat` parameters: without `format=`, an `Accept` that prefers JSON asks for JSON.
fn cat_params(req: &Request<'_>, media: &media::Negotiated) -> Params {
    let mut p = req.params.clone();
    if p.get("format").is_none() && media.accept_json {
        p.0.push(("format".into(), "json".into()));
    }
    p
}

impl Engine {
    /// Handles one request. Never panics on bad input: every failure is an error response.
    pub fn handle(&self, req: &mut Request<'_>) -> Response {
        let media = match media::negotiate(
            req.content_type.as_deref(),
            req.accept.as_deref(),
            req.has_body,
        ) {
            Ok(n) => n,
            Err(e) => return Response::error(&e),
        };
        let mut resp = match self.dispatch(req, &media) {
            Ok(r) => r,
            Err(e) => Response::error(&e),
        };
        if let Some(spec) = req.params.get("filter_path") {
            resp = filtered(resp, spec);
        }
        if resp.content_type == JSON {
            resp.content_type = media.json_type;
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

    fn dispatch(&self, req: &mut Request<'_>, media: &media::Negotiated) -> ApiResult {
        // date math in the index position of a path (`/<logs-{now/d}>/_search`, sent
        // URL-encoded), resolved once, here, as Elasticsearch resolves it
        if let Some(first) = req.segments.first_mut() {
            if first.contains('<') {
                let now = crate::date_names::wall_ms();
                *first = crate::date_names::resolve_expression(first, now)?;
            }
        }
        let Some(r) = route(&req.segments) else {
            if req.method == Method::Put && req.segments.len() == 1 {
                // `PUT /_name`: an index name Elasticsearch refuses
                super::names::validate_index_name(&req.segments[0])?;
            }
            // A `_cat` table this engine does not have is named without the index pattern
            // after it: on a multitenant cluster that pattern is the edge's, not the
            // client's (issue 32).
            let uri = match req.segments.as_slice() {
                [cat, table, _, ..] if cat == "_cat" => format!("/_cat/{table}"),
                _ => req.path.clone(),
            };
            return Err(EngineError::NoHandler {
                method: method_name(req.method).into(),
                uri,
            });
        };
        if !r.methods().contains(&req.method) {
            return Err(EngineError::MethodNotAllowed {
                method: method_name(req.method).into(),
                uri: req.path.clone(),
                allowed: r.methods().iter().map(|m| method_name(*m)).collect(),
            });
        }
        allowed::check(&r, req.method, &req.path, &req.params, req.has_body)?;
        let m = req.method;
        match r {
            Route::Root => cluster::root(self, m),
            Route::ClusterHealth(i) => health::health(self, i.as_deref(), &req.params, req.gone),
            Route::CatIndices(p) => {
                cluster::cat_indices(self, p.as_deref(), &cat_params(req, media))
            }
            Route::CatHealth => cluster::cat_health(self, &cat_params(req, media)),
            Route::CatCount(p) => cluster::cat_count(self, p.as_deref(), &cat_params(req, media)),
            Route::CatShards(p) => cluster::cat_shards(self, p.as_deref(), &cat_params(req, media)),
            Route::Index(i) => indices::index(self, req, &i),
            Route::Refresh { index } => indices::refresh(self, req, index.as_deref()),
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
            Route::Source { index, id } => get::source(self, req, &index, &id),
            Route::Bulk { index, type_name } => {
                bulk::bulk(self, req, index.as_deref(), type_name.as_deref())
            }
            Route::Search { index } => search::search(self, req, index.as_deref()),
            Route::Scroll { id } => scroll::scroll(self, req, id.as_deref()),
            Route::Count { index } => search::count(self, req, index.as_deref()),
            Route::Msearch { index } => search::msearch(self, req, index.as_deref()),
            Route::Mget { index } => get::mget(self, req, index.as_deref()),
            Route::ComponentTemplate { name } => {
                templates::template(self, req, Kind::Component, name.as_deref())
            }
            Route::Alias { index, name } => {
                aliases::alias(self, req, index.as_deref(), name.as_deref())
            }
            Route::Aliases => aliases::aliases(self, req),
            Route::CatAliases(n) => {
                aliases::cat_aliases(self, n.as_deref(), &cat_params(req, media))
            }
            Route::OpenClose { index, open } => admin::open_close(self, req, &index, open),
            Route::Stats { index, metric } => {
                admin::stats(self, req, index.as_deref(), metric.as_deref())
            }
            Route::ResolveIndex(e) => admin::resolve_index(self, req, &e),
            Route::FieldCaps { index } => admin::field_caps(self, req, index.as_deref()),
            Route::Flush { index } => indices::refresh(self, req, index.as_deref()),
            Route::ClusterSettings => admin::cluster_settings(self, req),
            Route::Pit { index } => admin::pit(self, req, index.as_deref()),
            Route::OsPit { index } => os_pit::pit(self, req, index.as_deref()),
            Route::OsPitAll => os_pit::all(self, req),
            Route::DeleteByQuery(i) => by_query::delete_by_query(self, req, &i),
            Route::UpdateByQuery(i) => by_query::update_by_query(self, req, &i),
            Route::Reindex => by_query::reindex(self, req),
            Route::Template { name, composable } => {
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
mod audit_tests;
#[cfg(test)]
mod features_tests;
#[cfg(test)]
mod index_apis_tests;
#[cfg(test)]
mod indices_tests;
#[cfg(test)]
mod more_tests;
#[cfg(test)]
mod options_tests;
#[cfg(test)]
mod routing_tests;
#[cfg(test)]
mod scroll_tests;
#[cfg(test)]
mod search_audit_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod write_tests;
