//! Operator tools that are clients of the public HTTP API only (never import `edge` or
//! `engine`): the static-site bulk loader and the admin CLI; later the capacity planner.

pub mod admin;
pub mod loadsite;
