//! Operator tools that are clients of the public HTTP APIs only (never import `edge`,
//! `engine`, `registry` or `policy`): the static-site bulk loader, the admin CLI, the
//! capacity planner and the latency viewer.

pub mod admin;
pub mod latency;
pub mod loadsite;
pub mod out;
pub mod planner;
