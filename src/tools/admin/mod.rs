//! `searchgate admin`: the admin API from the command line. A client of the HTTP API only
//! (it imports nothing of the edge or the control plane): JSON from the API, printed as
//! human tables, or as it came with `--json`; on failure the API's message and a non-zero
//! exit status.
//!
//! Without `--url` and `--token-file` it finds the embedded default's admin listener and
//! token in `./data` (`admin.url`, `admin.token`), so it works from the directory
//! `cargo run --release` ran in (see `client`, which the latency and plan commands share).
//!
//! Must not touch: `edge`, `engine`, `control` (HTTP only).

pub mod client;
mod table;

use crate::tools::out::{errln, outln};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use client::AdminClient;
use searchgate_core::percent::encode_component as encode;

/// `searchgate admin` options.
#[derive(Debug, Args)]
pub struct AdminArgs {
    /// The admin API (default: the URL in ./data/admin.url, else http://127.0.0.1:9900).
    #[arg(long, global = true)]
    pub url: Option<String>,
    /// File holding the bearer token (default: ./data/admin.token).
    #[arg(long, global = true)]
    pub token_file: Option<PathBuf>,
    /// Print the API's JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Clusters: list, show, create, delete.
    Clusters {
        #[command(subcommand)]
        command: ClustersCommand,
    },
    /// Moves cluster ID to plan PLAN (refused when its usage exceeds the plan).
    Plan { id: String, plan: String },
    /// Sets cluster ID's mode: normal, read-only, disabled or maintenance.
    Mode {
        id: String,
        mode: String,
        /// Why (shown to the cluster's clients in the 403 body).
        #[arg(long)]
        reason: Option<String>,
        /// Maintenance ends by itself after this long (e.g. 30m).
        #[arg(long)]
        until: Option<String>,
    },
    /// New credentials for cluster ID, printed once.
    Rotate {
        id: String,
        /// The old pair keeps working this long (e.g. 2m; default: 401 at once).
        #[arg(long)]
        grace: Option<String>,
    },
    /// Cluster keys: named credentials with a role (full, read, search), index patterns,
    /// an expiry, allowed browser origins and client addresses.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Cluster ID's request log, newest first: time, key, client, method, path (the
    /// cluster's own index names), status, time queued and upstream, bytes.
    Requests {
        id: String,
        /// Only the slow ones (at or over the cluster's slow threshold).
        #[arg(long)]
        slow: bool,
    },
    /// Sets from how many ms cluster ID's requests count as slow in its request log.
    SlowThreshold { id: String, ms: u64 },
    /// The plans.
    Plans,
    /// The upstream pools (each list of nodes clusters use), their clusters, and each
    /// node's health: up, down (its checks fail), ejected (after failed requests).
    Pools,
    /// The audit log, newest first: who changed what, when, and the fields that changed.
    Audit {
        /// Only the entries of this cluster (or plan).
        #[arg(long, value_name = "ID")]
        cluster: Option<String>,
        /// At most this many entries (default 100, at most 1000).
        #[arg(long, value_name = "N")]
        limit: Option<u64>,
        /// Only entries older than the entry with this id (the next page).
        #[arg(long, value_name = "ENTRY_ID")]
        before: Option<u64>,
    },
    /// Cluster ID's usage history (disk, documents, shards, requests, bytes).
    Usage {
        id: String,
        /// From this time (RFC 3339 or YYYY-MM-DD; default: 24 hours before --to).
        #[arg(long)]
        from: Option<String>,
        /// Up to this time (default: now).
        #[arg(long)]
        to: Option<String>,
    },
    /// Cluster ID's invoice of a month: one line per interval on a plan, credits, total.
    Invoice {
        id: String,
        /// YYYY-MM (default: the current month).
        #[arg(long)]
        month: Option<String>,
        /// Print CSV instead of a table.
        #[arg(long, conflicts_with = "json")]
        csv: bool,
    },
    /// Every cluster's invoice of a month, and the account's total.
    Invoices {
        /// YYYY-MM (default: the current month).
        #[arg(long)]
        month: Option<String>,
        /// Print CSV instead of a table.
        #[arg(long, conflicts_with = "json")]
        csv: bool,
    },
}

/// `searchgate admin clusters ...`.
#[derive(Debug, Subcommand)]
pub enum ClustersCommand {
    /// Every cluster that is not destroyed.
    List,
    /// One cluster.
    Show { id: String },
    /// A new cluster; its credentials are printed once.
    Create {
        #[arg(long)]
        plan: String,
        /// multitenant (default) or single-tenant.
        #[arg(long)]
        class: Option<String>,
        #[arg(long)]
        region: Option<String>,
        #[arg(long)]
        name: Option<String>,
        /// host:port of a single-tenant cluster's own nodes (the API's `upstream`).
        #[arg(long)]
        upstream: Option<String>,
    },
    /// Destroys a cluster (404 Cluster Not Found from the next request on).
    Delete { id: String },
}

/// `searchgate admin keys ...`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// A new key of cluster ID; its password and URL are printed once.
    Create {
        id: String,
        #[arg(long)]
        name: String,
        /// full, read or search.
        #[arg(long)]
        role: String,
        /// Index patterns the key may name (comma-separated; default: any).
        #[arg(long, value_delimiter = ',')]
        indices: Vec<String>,
        /// When the key stops working: RFC 3339, or a duration from now (e.g. 30d).
        #[arg(long)]
        expires_at: Option<String>,
        /// Browser origins allowed to call with the key (comma-separated).
        #[arg(long, value_delimiter = ',')]
        allowed_origins: Vec<String>,
        /// Client addresses allowed to use the key, as CIDR ranges (comma-separated).
        #[arg(long, value_delimiter = ',')]
        allowed_ips: Vec<String>,
    },
    /// Cluster ID's keys (no secrets).
    List { id: String },
    /// Revokes key KEY_ID of cluster ID (refused from the next request on).
    Delete { id: String, key_id: String },
}

/// Runs the command; prints what it got.
pub fn run(args: AdminArgs) -> ExitCode {
    if wants_csv(&args.command) {
        return match call_text(&args) {
            Ok(text) => {
                crate::tools::out::out(&text);
                ExitCode::SUCCESS
            }
            Err(e) => {
                errln!("searchgate admin: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match call(&args) {
        Ok(v) => {
            if args.json {
                outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            } else {
                table::print(&args.command, &v);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            errln!("searchgate admin: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The request a command makes: method, path, body.
fn request(cmd: &AdminCommand) -> (&'static str, String, Option<Value>) {
    let id_path = |id: &str, tail: &str| format!("/v1/clusters/{}{tail}", encode(id));
    match cmd {
        AdminCommand::Clusters { command } => match command {
            ClustersCommand::List => ("GET", "/v1/clusters".into(), None),
            ClustersCommand::Show { id } => ("GET", id_path(id, ""), None),
            ClustersCommand::Delete { id } => ("DELETE", id_path(id, ""), None),
            ClustersCommand::Create {
                plan,
                class,
                region,
                name,
                upstream,
            } => {
                let mut body = json!({ "plan": plan });
                for (k, v) in [
                    ("class", class),
                    ("region", region),
                    ("name", name),
                    ("upstream", upstream),
                ] {
                    if let Some(v) = v {
                        body[k] = json!(v);
                    }
                }
                ("POST", "/v1/clusters".into(), Some(body))
            }
        },
        AdminCommand::Plan { id, plan } => {
            ("PUT", id_path(id, "/plan"), Some(json!({ "plan": plan })))
        }
        AdminCommand::Mode {
            id,
            mode,
            reason,
            until,
        } => {
            let mut body = json!({ "mode": mode, "reason": reason });
            if let Some(u) = until {
                body["until"] = json!(u);
            }
            ("PUT", id_path(id, "/mode"), Some(body))
        }
        AdminCommand::Rotate { id, grace } => {
            let body = grace.as_ref().map_or(json!({}), |g| json!({ "grace": g }));
            ("POST", id_path(id, "/credentials/rotate"), Some(body))
        }
        AdminCommand::Keys { command } => keys_request(command),
        AdminCommand::Requests { id, slow } => {
            let q = query(&[("slow", &slow.then(|| "true".into()))]);
            ("GET", id_path(id, &format!("/requests{q}")), None)
        }
        AdminCommand::SlowThreshold { id, ms } => {
            let body = json!({ "slow_threshold_ms": ms });
            ("PUT", id_path(id, "/slow_threshold"), Some(body))
        }
        AdminCommand::Plans => ("GET", "/v1/plans".into(), None),
        AdminCommand::Pools => ("GET", "/v1/pools".into(), None),
        AdminCommand::Audit {
            cluster,
            limit,
            before,
        } => {
            let q = query(&[
                ("cluster", cluster),
                ("limit", &limit.map(|n| n.to_string())),
                ("before", &before.map(|n| n.to_string())),
            ]);
            ("GET", format!("/v1/audit{q}"), None)
        }
        AdminCommand::Usage { id, from, to } => {
            let q = query(&[("from", from), ("to", to)]);
            ("GET", id_path(id, &format!("/usage{q}")), None)
        }
        AdminCommand::Invoice { id, month, csv } => {
            let q = query(&[("month", month), ("format", &csv.then(|| "csv".into()))]);
            ("GET", id_path(id, &format!("/invoice{q}")), None)
        }
        AdminCommand::Invoices { month, csv } => {
            let q = query(&[("month", month), ("format", &csv.then(|| "csv".into()))]);
            ("GET", format!("/v1/invoices{q}"), None)
        }
    }
}

fn keys_request(cmd: &KeysCommand) -> (&'static str, String, Option<Value>) {
    let keys_path = |id: &str| format!("/v1/clusters/{}/keys", encode(id));
    match cmd {
        KeysCommand::List { id } => ("GET", keys_path(id), None),
        KeysCommand::Delete { id, key_id } => (
            "DELETE",
            format!("{}/{}", keys_path(id), encode(key_id)),
            None,
        ),
        KeysCommand::Create {
            id,
            name,
            role,
            indices,
            expires_at,
            allowed_origins,
            allowed_ips,
        } => {
            let mut body = json!({ "name": name, "role": role });
            for (k, v) in [
                ("indices", indices),
                ("allowed_origins", allowed_origins),
                ("allowed_ips", allowed_ips),
            ] {
                if !v.is_empty() {
                    body[k] = json!(v);
                }
            }
            if let Some(e) = expires_at {
                body["expires_at"] = json!(e);
            }
            ("POST", keys_path(id), Some(body))
        }
    }
}

/// `?k=v&...` of the parameters given (values percent-encoded), or nothing.
fn query(params: &[(&str, &Option<String>)]) -> String {
    let parts: Vec<String> = params
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={}", encode(v))))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

/// Whether the command asks for CSV (printed as the API sent it).
fn wants_csv(cmd: &AdminCommand) -> bool {
    matches!(
        cmd,
        AdminCommand::Invoice { csv: true, .. } | AdminCommand::Invoices { csv: true, .. }
    )
}

/// Calls the API; the JSON answer, or the API's message.
fn call(args: &AdminArgs) -> Result<Value, String> {
    let (method, path, body) = request(&args.command);
    let api = AdminClient::find(args.url.as_deref(), args.token_file.as_deref())?;
    Ok(api.call(method, &path, body)?)
}

/// Calls the API; the answer's text as it came (CSV), or the API's message.
fn call_text(args: &AdminArgs) -> Result<String, String> {
    let (method, path, _) = request(&args.command);
    let api = AdminClient::find(args.url.as_deref(), args.token_file.as_deref())?;
    Ok(api.call_text(method, &path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    // issue 32: `admin audit` passes the API's filters
    #[test]
    fn audit_takes_the_apis_filters() {
        let all = AdminCommand::Audit {
            cluster: None,
            limit: None,
            before: None,
        };
        assert_eq!(request(&all).1, "/v1/audit");
        let some = AdminCommand::Audit {
            cluster: Some("c1 x".into()),
            limit: Some(5),
            before: Some(42),
        };
        assert_eq!(
            request(&some).1,
            "/v1/audit?cluster=c1%20x&limit=5&before=42"
        );
    }
}
