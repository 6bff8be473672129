//! Operator tools that are clients of the public HTTP API only (never import `edge` or
//! `engine`): the static-site bulk loader; later the capacity planner.

pub mod loadsite;
