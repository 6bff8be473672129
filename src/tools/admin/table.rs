//! Human output of `searchgate admin`: aligned tables for lists, usage samples and invoice
//! lines (amounts in cents shown with two decimals), `key: value` lines for one cluster,
//! and the once-only credentials called out.

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
    if let Some(why) = c["overage"]["reason"].as_str() {
        println!("{:<15} {}: {why}", "overage", cell(&c["overage"]["step"]));
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
        AdminCommand::Usage { .. } => usage(v),
        AdminCommand::Invoice { .. } => invoice(v),
        AdminCommand::Invoices { .. } => {
            for inv in v["clusters"].as_array().into_iter().flatten() {
                invoice(inv);
                println!();
            }
            println!(
                "month {}: {} cluster(s), total {}",
                cell(&v["month"]),
                v["clusters"].as_array().map_or(0, Vec::len),
                money(&v["total_cents"])
            );
        }
        _ => {
            cluster_lines(v);
            secrets(v);
        }
    }
}

/// Cents as `12.34` (`-0.05` for a credit).
fn money(v: &Value) -> String {
    let c = v.as_i64().unwrap_or(0);
    let sign = if c < 0 { "-" } else { "" };
    format!(
        "{sign}{}.{:02}",
        c.unsigned_abs() / 100,
        c.unsigned_abs() % 100
    )
}

fn usage(v: &Value) {
    let keys = [
        "at",
        "disk_bytes",
        "documents",
        "shards",
        "indices",
        "requests",
        "bytes_in",
        "bytes_out",
    ];
    let rows: Vec<Vec<String>> = v["samples"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| keys.iter().map(|k| cell(&s[*k])).collect())
        .collect();
    println!(
        "cluster {}: usage from {} to {}",
        cell(&v["cluster"]),
        cell(&v["from"]),
        cell(&v["to"])
    );
    let header = [
        "AT", "DISK", "DOCS", "SHARDS", "INDICES", "REQUESTS", "IN", "OUT",
    ];
    table(&header, &rows);
    if v["truncated"] == true {
        println!("(more samples: narrow --from/--to)");
    }
}

fn invoice(v: &Value) {
    println!(
        "cluster {}: invoice of {} ({} to {})",
        cell(&v["cluster"]),
        cell(&v["month"]),
        cell(&v["from"]),
        cell(&v["to"])
    );
    let mut rows: Vec<Vec<String>> = v["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            let mut row: Vec<String> = ["kind", "plan", "from", "to", "seconds"]
                .iter()
                .map(|k| cell(&l[*k]))
                .collect();
            row.push(money(&l["amount_cents"]));
            row
        })
        .collect();
    rows.push(vec![
        "total".into(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        money(&v["total_cents"]),
    ]);
    table(&["KIND", "PLAN", "FROM", "TO", "SECONDS", "AMOUNT"], &rows);
}
