//! Operator tools that are clients of the public HTTP APIs only (never import `edge`,
//! `engine`, `registry` or `policy`): the static-site bulk loader, the capacity planner and
//! the latency viewer.

pub mod latency;
pub mod loadsite;
pub mod planner;
