//! The request vocabulary the edge's layers share: a request path in its canonical form
//! (`path`), the endpoint table and its row types (`endpoints`, `routes`), the endpoints
//! that are never exposed (`blocked`, spec 1.4), and the classification of a request from
//! its method and path (`classify`: read, update, index deletion, not implemented), and the
//! wait parameters bounded by the deadline (`waits`).
//!
//! It sits below both `policy` (which decides on a classified request) and `tenancy`
//! (which rewrites what a row says to rewrite), so neither has to import the other for it.
//!
//! Must not touch: modes, plans, clusters, the rewriting itself, I/O.

pub mod blocked;
pub mod classify;
pub mod datemath;
pub mod endpoints;
pub mod path;
pub mod routes;
pub mod waits;
