//! Index-name namespacing for the multitenant class (spec 1.6; issues 5 and 10).
//!
//! Clusters of the multitenant class share an upstream. Every index, alias and template
//! name a tenant sends is given the cluster's opaque [`Prefix`] on the way in, and the
//! prefix is removed from everything on the way out, so each tenant sees only its own
//! indices, under the names it chose, as if it were alone. Endpoints whose references
//! cannot be confined to the prefix are 501 for this class (`request::endpoints`).
//!
//! **One reading of every byte.** The edge reads each request completely, the way the
//! upstream will, decides on data, and forwards only bytes it wrote itself: paths and the
//! query string ([`request`], [`references::params`]), JSON bodies with a strict parser
//! ([`json`]), NDJSON bodies with Elasticsearch 7.10's framing ([`ndjson`]). Every place a
//! request can name an index or the `_index` field is one row of the table in
//! [`references`]; scroll and point-in-time ids are sealed ([`ids`]). Anything the edge
//! cannot read with certainty is refused with an Elasticsearch-shaped 400 (or 406).
//!
//! # What the edge session calls, in order (all pure, no I/O)
//! ```text
//! // once per node and per cluster
//! let sealer = IdSealer::new(&tenancy_key);
//! let prefix = Prefix::derive(&tenancy_key, &cluster.id);
//!
//! // per request
//! let req = request::classify::classify_request(method, raw_path, cluster.class)?;   // 400 on bad path
//! policy::mode::decide(mode, &req.class)?;                       // 404/403/501
//! tenancy::check_headers(content_type, content_encoding, accept, has_body)?;  // Some(coding): inflate first (encoding)
//! tenancy::check_request_headers(head_names_and_values)?;        // 400 for identity headers
//! // forward only headers::FORWARDED (X-Opaque-Id tagged with the prefix): proto::ForwardHeaders::Only
//! let t = Tenant { prefix: &prefix, ids: Some((&sealer, &cluster.id)), now_ms: wall_ms };
//! let mut plan = tenancy::plan_request(&t, &req, query, &mut upstream_target)?;
//! if let Some(name) = tenancy::auto_create_target(method, &req) { /* shard check, PUT write_index_path */ }
//! if plan.body.is_streamed() {                 // _bulk, _msearch: a request-body filter
//!     let mut rw = plan.body_rewriter(prefix, plan_limits.max_bulk_actions).unwrap();
//!     for chunk in body { rw.feed(chunk, &mut out)?; send(out); out.clear(); }
//!     // before the last bytes: create rw's BulkRewriter::auto_create_candidates()
//!     rw.finish(&mut out)?;                    // Err: abandon the upstream request unterminated
//! } else if plan.body != BodyKind::Document {  // JSON: the whole-body filter
//!     let facts = tenancy::rewrite_json_body(&t, plan.body, &whole_body, &mut new_body)?;
//!     plan.apply_body_facts(facts, &prefix, &mut upstream_target)?;   // a PIT search
//!     // CreateIndex: then the plan's shard check on new_body
//! }
//! plan.response.check_upstream(response_content_type)?;   // before the head: 502 if ids could leak
//! let mut un = plan.response_rewriter(prefix, status, response_content_type, Some((sealer, cluster_id)));
//! for chunk in upstream_body { un.feed(chunk, &mut out); send_chunked(out); out.clear(); }
//! un.finish(&mut out);
//! // response header values (Location, Warning): prefix.strip_into(value, &mut out)
//! ```
//! Single-tenant `_bulk`: `BulkCounter` on the bytes as they are forwarded (no copy);
//! single-tenant `_reindex`: [`single_tenant_reindex`] (a remote source refused).
//!
//! # Streaming contract
//! Every streaming transform takes chunks of any size at any split point, appends its
//! output to a caller-owned `Vec<u8>` (reuse it: no allocation per chunk), holds back only
//! what it must (at most `PREFIX_LEN - 1` bytes when stripping, one NDJSON line, one `_cat`
//! table of at most 4MB, one top-level id of a response), and never buffers a whole
//! `_bulk` body: bulk documents pass through with memchr. A body error is reported by
//! `feed`/`finish` as an [`crate::errors::EdgeError`] (400, or 413 for too many bulk
//! actions); the edge must then not complete the upstream request. Rewritten bodies and
//! responses change length: send them chunked (or close-delimited to HTTP/1.0 clients).
//!
//! Must not touch: sockets, monoio, the registry, the classification table (it reads it).

pub mod body;
pub mod cat;
pub mod context_shares;
pub mod contexts;
pub mod encoding;
pub mod headers;
pub mod ids;
pub mod json;
pub mod key_ids;
pub mod lucene;
pub mod media;
pub mod names;
pub mod ndjson;
pub mod painless;
pub mod prefix;
pub mod references;
pub mod refusals;
pub mod request;
pub mod response;
pub mod snippets;

pub use body::{rewrite_json_body, single_tenant_reindex, BodyFacts};
pub use contexts::{ContextBudget, ContextUse, OpenContexts};
pub use headers::check_request_headers;
pub use ids::{binding as ids_binding, IdFields, IdKind, IdSealer};
pub use media::check_headers;
pub use ndjson::{BodyRewriter, BulkRewriter, MsearchRewriter};
pub use prefix::{Prefix, Stripper, TenancyKey, PREFIX_LEN};
pub use references::Tenant;
pub use request::{
    auto_create_target, plan_request, rewrite_create_index_body, write_contexts_reading_target,
    write_index_path, write_metering_target, RequestPlan,
};
pub use response::{ResponsePlan, ResponseRewriter};

#[cfg(test)]
mod attacks_r2_tests;
#[cfg(test)]
mod datemath_body_tests;
#[cfg(test)]
mod stream_props_tests;
#[cfg(test)]
mod tests;
