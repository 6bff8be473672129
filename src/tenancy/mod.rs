//! Index-name namespacing for the multitenant class (spec 1.6; issue 5).
//!
//! Clusters of the multitenant class share an upstream. Every index (and alias) name a
//! tenant sends is given the cluster's opaque [`Prefix`] on the way in, and the prefix is
//! removed from everything on the way out, so each tenant sees only its own indices, under
//! the names it chose, as if it were alone. Endpoints whose index references cannot be
//! confined to the prefix are 501 for this class (decided by `policy::classify`'s table).
//! Single-tenant clusters never go through this module (only [`BulkRewriter::counting`]).
//!
//! # What the edge session calls, in order (all pure, no I/O)
//! ```text
//! // once per cluster (registry load): prefix from the node secret and the cluster id
//! let prefix = Prefix::derive(&tenancy_key, &cluster.id);
//!
//! // per request
//! let req = policy::classify::classify_request(method, raw_path, cluster.class)?;   // 400 on bad path
//! policy::mode::decide(mode, &req.class)?;                       // 404/403/501
//! // forward req.path.write_canonical(..) (single-tenant) or, multitenant:
//! tenancy::check_headers(content_type, content_encoding, accept)?;  // and drop Accept-Encoding
//! let plan = tenancy::plan_request(&prefix, &req, query, &mut upstream_target)?;
//! if let Some(name) = tenancy::auto_create_target(method, &req) { /* shard check, PUT write_index_path */ }
//! match plan.body {
//!     BodyKind::CreateIndex => { buffer; shards::create_index_shards(..); rewrite_create_index_body(..) }
//!     _ => if let Some(mut rw) = plan.body_rewriter(prefix, plan_limits.max_bulk_actions) {
//!         for chunk in body { rw.feed(chunk, &mut out)?; send(out); out.clear(); }
//!         // before the last bytes: create rw's BulkRewriter::auto_create_candidates()
//!         rw.finish(&mut out)?;           // Err: abandon the upstream request unterminated
//!     }
//! }
//! let mut un = plan.response_rewriter(prefix, status, response_content_type);
//! for chunk in upstream_body { un.feed(chunk, &mut out); send_chunked(out); out.clear(); }
//! un.finish(&mut out);
//! // response header values (Location, Warning): prefix.strip_into(value, &mut out)
//! ```
//! Single-tenant `_bulk`: `BulkRewriter::counting(max).scan(chunk)?` on the bytes as they
//! are forwarded (no copy); `Err(TooManyBulkActions)` at `max + 1` actions.
//!
//! # Streaming contract
//! Every transform takes chunks of any size at any split point, appends its output to a
//! caller-owned `Vec<u8>` (reuse it: no allocation per chunk), holds back only what it must
//! (at most `PREFIX_LEN - 1` bytes when stripping, one index value of at most 8KB in a
//! JSON body, one `_cat` table of at most 4MB), and never buffers a whole request body:
//! `_bulk` source lines and `_msearch` bodies pass through with memchr. A body error is
//! reported by `feed`/`finish` as an [`crate::errors::EdgeError`] (400, or 413 for too many
//! bulk actions); the edge must then not complete the upstream request. The output changes
//! length: send it chunked (or close-delimited to HTTP/1.0 clients).
//!
//! Must not touch: sockets, monoio, the registry, the classification table (it reads it).

pub mod body;
pub mod ids;
pub mod json;
pub mod lucene;
pub mod media;
pub mod names;
pub mod ndjson;
pub mod painless;
pub mod prefix;
pub mod references;
pub mod request;
pub mod response;

pub use body::{rewrite_json_body, single_tenant_reindex, BodyFacts};
pub use ids::{ContextBudget, IdFields, IdKind, IdSealer};
pub use media::check_headers;
pub use ndjson::{BodyRewriter, BulkRewriter, MsearchRewriter};
pub use prefix::{Prefix, Stripper, TenancyKey, PREFIX_LEN};
pub use references::Tenant;
pub use request::{
    auto_create_target, plan_request, rewrite_create_index_body, write_index_path,
    write_metering_target, RequestPlan,
};
pub use response::{ResponsePlan, ResponseRewriter};

#[cfg(test)]
mod tests;
