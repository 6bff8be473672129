//! The integration tests, all in one binary (one link, one harness): `cargo test --release`
//! runs them with the rest; `cargo test --release --test it MODULE::` runs one file's tests.
//!
//! `support/` is the harness every file shares: starting `searchgate serve` and the engine,
//! mock upstreams, clients, the installs of outside tools. Each file below is one area of
//! the service and names the spec sections it checks.

mod support;

mod attack_keys;
mod billing_cli;
mod billing_invoice;
mod billing_ladder;
mod billing_overage;
mod billing_usage;
mod compress_e2e;
mod control_api;
mod control_cli;
mod control_durability;
mod control_reload;
mod control_store;
mod cors_e2e;
mod defence_budgets;
mod defence_faults;
mod defence_limits;
mod defence_memory;
mod defence_noisy;
mod docs_guides;
mod docs_keys;
mod docs_loadtest;
mod docs_readme;
mod docs_site_search;
mod edge_allowance;
mod edge_codec;
mod edge_failover;
mod edge_limits;
mod edge_ops;
mod edge_routing_auth;
mod edge_upstream;
mod embedded_default;
mod engine_bulk;
mod engine_clients;
mod engine_compat;
mod engine_docs;
mod engine_durability;
mod engine_http;
mod engine_indices;
mod engine_routing;
mod engine_search;
mod fleet_allowance;
mod fleet_e2e;
mod fleet_haproxy;
mod keys_e2e;
mod layout;
mod lifecycle_metering;
mod lifecycle_modes;
mod lifecycle_reload;
mod lifecycle_shards;
mod limits_e2e;
mod loadsite_e2e;
mod loadsite_edge;
mod loadsite_hugo;
mod loadsite_mock;
mod loadsite_secrets;
mod loadtest_figures;
mod metrics_cli;
mod metrics_e2e;
mod params_differential;
mod planner_cli;
mod requestlog_e2e;
mod tenancy_attacks;
mod tenancy_contexts;
mod tenancy_features;
mod tenancy_isolation;
mod tenancy_property;
mod tenancy_pypi;
mod tenancy_values;
