//! Human output of `searchgate admin`: aligned tables for lists, usage samples and invoice
//! lines (amounts in cents shown with two decimals), `key: value` lines for one cluster,
//! and the once-only credentials called out.

use crate::tools::out::outln;
use serde_json::{json, Value};

use super::{AdminCommand, ClustersCommand, KeysCommand};

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
        outln!("{}", padded.join("  ").trim_end());
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
        "localhost_address",
        "upstream",
        "source",
        "created_at",
        "version",
    ];
    for k in keys {
        outln!("{k:<15} {}", cell(&c[k]));
    }
    if let Some(u) = c["usage"].as_object() {
        let parts: Vec<String> = u.iter().map(|(k, v)| format!("{k}={v}")).collect();
        outln!("{:<15} {}", "usage", parts.join(" "));
    }
    if let Some(why) = c["overage"]["reason"].as_str() {
        outln!("{:<15} {}: {why}", "overage", cell(&c["overage"]["step"]));
    }
    if let Some(d) = c["differs_from_file"].as_array().filter(|d| !d.is_empty()) {
        let names: Vec<String> = d.iter().map(cell).collect();
        outln!(
            "{:<15} {} (set through the admin API)",
            "differs_from_file",
            names.join(", ")
        );
    }
    if let Some(until) = c["previous_credentials_valid_until"].as_str() {
        outln!("{:<15} the old credentials work until {until}", "grace");
    }
}

fn secrets(c: &Value) {
    if let Some(url) = c["url"].as_str().filter(|u| !u.is_empty()) {
        outln!();
        outln!("username        {}", cell(&c["username"]));
        outln!("password        {}", cell(&c["password"]));
        outln!("url             {url}");
        if let Some(local) = c["localhost_url"].as_str() {
            outln!("localhost_url   {local}   (routed by username: any client resolves it)");
        }
        outln!("(shown once: the service keeps only a salted hash of the password)");
    }
}

const KEY_HEADER: [&str; 7] = [
    "ID",
    "NAME",
    "ROLE",
    "USERNAME",
    "INDICES",
    "EXPIRES",
    "ORIGINS/IPS",
];

/// One key as a table row.
fn key_row(k: &Value) -> Vec<String> {
    let list = |v: &Value| {
        let items: Vec<String> = v.as_array().into_iter().flatten().map(cell).collect();
        if items.is_empty() {
            "-".to_string()
        } else {
            items.join(",")
        }
    };
    let mut row: Vec<String> = ["id", "name", "role", "username"]
        .iter()
        .map(|f| cell(&k[*f]))
        .collect();
    row.push(list(&k["indices"]));
    row.push(cell(&k["expires_at"]));
    row.push(format!(
        "{} / {}",
        list(&k["allowed_origins"]),
        list(&k["allowed_ips"])
    ));
    row
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
        AdminCommand::Pools => {
            let mut rows: Vec<Vec<String>> = Vec::new();
            for p in v["pools"].as_array().into_iter().flatten() {
                let clusters: Vec<String> = p["clusters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(cell)
                    .collect();
                let nodes = p["nodes"].as_array().map_or(&[][..], |v| &v[..]);
                if nodes.is_empty() {
                    // a pool whose names do not resolve (yet): still listed
                    let mut row = vec![cell(&p["name"]), clusters.join(",")];
                    row.extend(["-", "unresolved", "-", "-", "-"].map(String::from));
                    rows.push(row);
                }
                for n in nodes {
                    let mut row = vec![cell(&p["name"]), clusters.join(",")];
                    for k in [
                        "address",
                        "state",
                        "in_flight",
                        "ejections",
                        "checks_failed",
                    ] {
                        row.push(cell(&n[k]));
                    }
                    rows.push(row);
                }
            }
            let header = [
                "POOL",
                "CLUSTERS",
                "NODE",
                "STATE",
                "IN FLIGHT",
                "EJECTIONS",
                "CHECKS FAILED",
            ];
            table(&header, &rows);
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
                    .map(|k| match *k {
                        "disk_bytes" | "memory_bytes" => size(&p[*k]),
                        _ => cell(&p[*k]),
                    })
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
        AdminCommand::Audit { .. } => {
            let rows: Vec<Vec<String>> = v["entries"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| {
                    let mut row: Vec<String> = ["id", "at", "actor", "action", "target"]
                        .iter()
                        .map(|k| cell(&e[*k]))
                        .collect();
                    row.push(changed(&e["before"], &e["after"]));
                    row
                })
                .collect();
            table(&["ID", "AT", "ACTOR", "ACTION", "TARGET", "CHANGE"], &rows);
        }
        AdminCommand::Keys {
            command: KeysCommand::List { .. },
        } => {
            let rows: Vec<Vec<String>> = v["keys"]
                .as_array()
                .into_iter()
                .flatten()
                .map(key_row)
                .collect();
            table(&KEY_HEADER, &rows);
        }
        AdminCommand::Keys {
            command: KeysCommand::Create { .. } | KeysCommand::Delete { .. },
        } => {
            table(&KEY_HEADER, &[key_row(v)]);
            if v["revoked"] == true {
                outln!("revoked: the key opens nothing from the next request on");
            }
            secrets(v);
        }
        AdminCommand::Requests { .. } => requests(v),
        AdminCommand::Usage { .. } => usage(v),
        AdminCommand::Invoice { .. } => invoice(v),
        AdminCommand::Invoices { .. } => {
            for inv in v["clusters"].as_array().into_iter().flatten() {
                invoice(inv);
                outln!();
            }
            outln!(
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

/// Bytes as the configuration writes sizes (binary units): `1gb`, `256mb`, `1.5gb`.
fn size(v: &Value) -> String {
    let Some(b) = v.as_u64() else {
        return cell(v);
    };
    let units = [("gb", 1u64 << 30), ("mb", 1 << 20), ("kb", 1 << 10)];
    match units.iter().find(|(_, u)| b >= *u) {
        Some((name, u)) if b % u == 0 => format!("{}{name}", b / u),
        Some((name, u)) => format!("{:.1}{name}", b as f64 / *u as f64),
        None => format!("{b}b"),
    }
}

/// What an audit entry changed: `field: before -> after` for each field that differs
/// (the record's version left out), or what was created or removed.
fn changed(before: &Value, after: &Value) -> String {
    let show = |k: &str, v: &Value| -> String {
        match v {
            Value::Number(n) if k.ends_with("_at") || k.ends_with("until") => n
                .as_i64()
                .map(crate::calendar::rfc3339_of_millis)
                .unwrap_or_else(|| n.to_string()),
            Value::Object(_) | Value::Array(_) => {
                let t = v.to_string();
                if t.chars().count() > 40 {
                    format!("{}...", t.chars().take(37).collect::<String>())
                } else {
                    t
                }
            }
            other => cell(other),
        }
    };
    match (before, after) {
        (Value::Null, Value::Object(a)) => {
            let facts: Vec<String> = ["plan", "class", "concurrency"]
                .iter()
                .filter(|k| a.contains_key(**k))
                .map(|k| format!("{k} {}", show(k, &a[*k])))
                .collect();
            format!("created ({})", facts.join(", "))
        }
        (Value::Object(_), Value::Null) => "removed".into(),
        (Value::Object(b), Value::Object(a)) => {
            let parts: Vec<String> = a
                .iter()
                .filter(|(k, v)| *k != "version" && b.get(*k).unwrap_or(&Value::Null) != *v)
                .map(|(k, v)| {
                    let old = b.get(k).unwrap_or(&Value::Null);
                    format!("{k}: {} -> {}", show(k, old), show(k, v))
                })
                .collect();
            if parts.is_empty() {
                "-".into()
            } else {
                parts.join("; ")
            }
        }
        _ => "-".into(),
    }
}

/// A cluster's request log.
fn requests(v: &Value) {
    let keys = [
        "time",
        "key",
        "client",
        "method",
        "path",
        "status",
        "queue_ms",
        "upstream_ms",
        "total_ms",
        "bytes_in",
        "bytes_out",
    ];
    let rows: Vec<Vec<String>> = v["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| keys.iter().map(|k| cell(&r[*k])).collect())
        .collect();
    let header = [
        "TIME",
        "KEY",
        "CLIENT",
        "METHOD",
        "PATH",
        "STATUS",
        "QUEUE MS",
        "UPSTREAM MS",
        "TOTAL MS",
        "IN",
        "OUT",
    ];
    table(&header, &rows);
    let which = if v["slow"] == json!(true) {
        "slow requests"
    } else {
        "requests"
    };
    outln!(
        "{} {which} of cluster {} (slow: {} ms or more)",
        rows.len(),
        cell(&v["cluster"]),
        cell(&v["slow_threshold_ms"])
    );
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
    outln!(
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
        outln!("(more samples: narrow --from/--to)");
    }
}

fn invoice(v: &Value) {
    outln!(
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sizes_read_as_the_configuration_writes_them() {
        assert_eq!(size(&json!(1u64 << 30)), "1gb");
        assert_eq!(size(&json!(256u64 << 20)), "256mb");
        assert_eq!(size(&json!(3u64 << 29)), "1.5gb");
        assert_eq!(size(&json!(100)), "100b");
        assert_eq!(size(&Value::Null), "-");
    }

    #[test]
    fn an_audit_entry_shows_the_fields_it_changed() {
        let before =
            json!({"mode": "normal", "mode_reason": null, "version": 3, "plan": "sandbox"});
        let after = json!({"mode": "read-only", "mode_reason": "quota review", "version": 4, "plan": "sandbox"});
        assert_eq!(
            changed(&before, &after),
            "mode: normal -> read-only; mode_reason: - -> quota review"
        );
        let created = json!({"plan": "sandbox", "class": "multitenant", "version": 1});
        assert_eq!(
            changed(&Value::Null, &created),
            "created (plan sandbox, class multitenant)"
        );
        assert_eq!(
            changed(
                &json!({"destroyed_at": null}),
                &json!({"destroyed_at": 1_900_000_000_000u64})
            ),
            "destroyed_at: - -> 2030-03-17T17:46:40Z"
        );
        assert_eq!(changed(&created, &Value::Null), "removed");
    }
}
