//! Human output of `searchgate admin`: aligned tables for lists, `key: value` lines for one
//! cluster, and the once-only credentials called out.

use serde_json::Value;

use super::{AdminCommand, ClustersCommand};

/// Prints `rows` under `header`, columns padded to their widest cell.
fn table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(header.iter().map(|h| h.to_string()).collect());
    for r in rows {
        line(r.clone());
    }
}

/// A JSON value as a cell: strings bare, null as `-`.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn cluster_lines(c: &Value) {
    let keys = [
        "id",
        "name",
        "state",
        "mode",
        "mode_reason",
        "mode_until",
        "effective_mode",
        "plan",
        "class",
        "region",
        "address",
        "upstream",
        "source",
        "created_at",
        "version",
    ];
    for k in keys {
        println!("{k:<15} {}", cell(&c[k]));
    }
    if let Some(u) = c["usage"].as_object() {
        let parts: Vec<String> = u.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!("{:<15} {}", "usage", parts.join(" "));
    }
    if let Some(d) = c["differs_from_file"].as_array().filter(|d| !d.is_empty()) {
        let names: Vec<String> = d.iter().map(cell).collect();
        println!(
            "{:<15} {} (set through the admin API)",
            "differs_from_file",
            names.join(", ")
        );
    }
    if let Some(until) = c["previous_credentials_valid_until"].as_str() {
        println!("{:<15} the old credentials work until {until}", "grace");
    }
}

fn secrets(c: &Value) {
    if let Some(url) = c["url"].as_str().filter(|u| !u.is_empty()) {
        println!();
        println!("username        {}", cell(&c["username"]));
        println!("password        {}", cell(&c["password"]));
        println!("url             {url}");
        println!("(shown once: the service keeps only a salted hash of the password)");
    }
}

/// Prints the answer to `cmd`.
pub fn print(cmd: &AdminCommand, v: &Value) {
    match cmd {
        AdminCommand::Clusters {
            command: ClustersCommand::List,
        } => {
            let rows: Vec<Vec<String>> = v["clusters"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    ["id", "state", "mode", "plan", "class", "address"]
                        .iter()
                        .map(|k| cell(&c[*k]))
                        .collect()
                })
                .collect();
            table(&["ID", "STATE", "MODE", "PLAN", "CLASS", "ADDRESS"], &rows);
        }
        AdminCommand::Plans => {
            let rows: Vec<Vec<String>> = v["plans"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    [
                        "name",
                        "concurrency",
                        "queue_size",
                        "shards",
                        "disk_bytes",
                        "memory_bytes",
                        "max_open_contexts",
                        "monthly_price_cents",
                    ]
                    .iter()
                    .map(|k| cell(&p[*k]))
                    .collect()
                })
                .collect();
            let header = [
                "NAME",
                "CONCURRENCY",
                "QUEUE",
                "SHARDS",
                "DISK",
                "MEMORY",
                "CONTEXTS",
                "CENTS/MONTH",
            ];
            table(&header, &rows);
        }
        AdminCommand::Audit => {
            let rows: Vec<Vec<String>> = v["entries"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| {
                    ["id", "at", "actor", "action", "target"]
                        .iter()
                        .map(|k| cell(&e[*k]))
                        .collect()
                })
                .collect();
            table(&["ID", "AT", "ACTOR", "ACTION", "TARGET"], &rows);
        }
        _ => {
            cluster_lines(v);
            secrets(v);
        }
    }
}
