//! The one description of the control plane's schema, and its DDL for each back end.
//!
//! Every migration is a list of tables and indexes written once, in a small vocabulary
//! ([`Col`]: an integer, an id the database assigns, text, a key); [`ddl`] renders it for
//! SQLite (`INTEGER PRIMARY KEY AUTOINCREMENT`, `PRAGMA user_version` counts migrations) or
//! PostgreSQL (`BIGINT GENERATED ALWAYS AS IDENTITY`, the `schema_version` table counts
//! them). Migration N (1-based) is schema version N in both; the first two are what
//! `migrations/0001_init.sql` and `0002_billing.sql` created before this description
//! existed, so databases made then keep their version.
//!
//! Must not touch: connections (each store runs the statements itself).

/// Which SQL the statements are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// A column's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A 64-bit integer.
    Int,
    /// Text (JSON records are text in both back ends).
    Text,
    /// A 64-bit id the database assigns in increasing order (the table's primary key).
    Serial,
}

/// One column.
#[derive(Debug, Clone, Copy)]
pub struct Col {
    pub name: &'static str,
    pub kind: Kind,
    /// May be NULL.
    pub null: bool,
    /// The table's single-column primary key.
    pub key: bool,
    /// `DEFAULT <this>` (an integer literal).
    pub default: Option<i64>,
    /// `REFERENCES <this>` (`table(column)`).
    pub refs: Option<&'static str>,
    /// `CHECK (<column> = <this>)`: a table of one row.
    pub only: Option<i64>,
}

const fn col(name: &'static str, kind: Kind) -> Col {
    Col {
        name,
        kind,
        null: false,
        key: false,
        default: None,
        refs: None,
        only: None,
    }
}

const fn int(name: &'static str) -> Col {
    col(name, Kind::Int)
}

const fn text(name: &'static str) -> Col {
    col(name, Kind::Text)
}

const fn serial(name: &'static str) -> Col {
    Col {
        key: true,
        ..col(name, Kind::Serial)
    }
}

impl Col {
    const fn null(self) -> Col {
        Col { null: true, ..self }
    }
    const fn key(self) -> Col {
        Col { key: true, ..self }
    }
    const fn default(self, v: i64) -> Col {
        Col {
            default: Some(v),
            ..self
        }
    }
    const fn refs(self, target: &'static str) -> Col {
        Col {
            refs: Some(target),
            ..self
        }
    }
    const fn only(self, v: i64) -> Col {
        Col {
            only: Some(v),
            ..self
        }
    }
}

/// A table, or an index of one.
#[derive(Debug, Clone, Copy)]
pub enum Item {
    Table {
        name: &'static str,
        cols: &'static [Col],
        /// A primary key of several columns (empty: a column's `key`).
        key: &'static [&'static str],
    },
    Index {
        name: &'static str,
        table: &'static str,
        cols: &'static [&'static str],
    },
}

/// The migrations, in order: migration `i` brings a database to schema version `i + 1`.
pub const MIGRATIONS: &[&[Item]] = &[INIT, BILLING, FLEET, NODES];

/// Schema 1: the catalog, the change feed, audit, plan history, idempotency, the seed.
const INIT: &[Item] = &[
    Item::Table {
        name: "plans",
        cols: &[text("name").key(), text("record")],
        key: &[],
    },
    Item::Table {
        name: "clusters",
        cols: &[
            text("id").key(),
            text("state"),
            text("plan"),
            text("record"),
        ],
        key: &[],
    },
    Item::Table {
        name: "changes",
        cols: &[int("seq").key(), int("at"), text("events")],
        key: &[],
    },
    Item::Table {
        name: "audit",
        cols: &[
            serial("id"),
            int("seq").refs("changes(seq)"),
            int("at"),
            text("actor"),
            text("action"),
            text("target"),
            text("before").null(),
            text("after").null(),
        ],
        key: &[],
    },
    Item::Index {
        name: "audit_by_target",
        table: "audit",
        cols: &["target", "id"],
    },
    Item::Table {
        name: "plan_history",
        cols: &[
            serial("id"),
            int("seq").refs("changes(seq)"),
            text("cluster_id"),
            int("at"),
            text("event"),
            text("plan").null(),
            int("monthly_price_cents").null(),
        ],
        key: &[],
    },
    Item::Index {
        name: "plan_history_by_cluster",
        table: "plan_history",
        cols: &["cluster_id", "at"],
    },
    Item::Table {
        name: "idempotency",
        cols: &[
            text("key").key(),
            text("fingerprint"),
            int("status"),
            text("body"),
            int("at"),
        ],
        key: &[],
    },
    Item::Table {
        name: "seed",
        cols: &[int("one").key().only(1), text("declared")],
        key: &[],
    },
];

/// Schema 2 (issue 12): usage history and the queue of overage notices.
const BILLING: &[Item] = &[
    Item::Table {
        name: "usage_history",
        cols: &[
            text("cluster_id"),
            int("at"),
            int("disk_bytes"),
            int("documents"),
            int("shards"),
            int("indices"),
            int("requests"),
            int("bytes_in"),
            int("bytes_out"),
        ],
        key: &["cluster_id", "at"],
    },
    Item::Index {
        name: "usage_history_by_time",
        table: "usage_history",
        cols: &["at"],
    },
    Item::Table {
        name: "notices",
        cols: &[
            serial("id"),
            int("seq").refs("changes(seq)"),
            text("cluster_id"),
            int("at"),
            text("body"),
            int("attempts").default(0),
            text("last_error").null(),
            int("delivered_at").null(),
        ],
        key: &[],
    },
    Item::Index {
        name: "notices_pending",
        table: "notices",
        cols: &["delivered_at", "id"],
    },
];

/// Schema 3 (issue 26): what a fleet of nodes shares beside the catalog: named values
/// (the tenancy key every node must hold) and the leases of once-per-fleet work.
const FLEET: &[Item] = &[
    Item::Table {
        name: "fleet",
        cols: &[text("name").key(), text("value")],
        key: &[],
    },
    Item::Table {
        name: "leases",
        cols: &[text("name").key(), text("holder"), int("expires_at")],
        key: &[],
    },
];

/// Schema 4 (issue 27): the fleet's live nodes, each with the address of its peer listener
/// and when its registration runs out (on the store's clock): who may be a cluster's home.
const NODES: &[Item] = &[Item::Table {
    name: "nodes",
    cols: &[text("node").key(), text("peer"), int("expires_at")],
    key: &[],
}];

fn column(c: &Col, d: Dialect) -> String {
    let kind = match (c.kind, d) {
        (Kind::Int, Dialect::Sqlite) => "INTEGER",
        (Kind::Int, Dialect::Postgres) => "BIGINT",
        (Kind::Text, _) => "TEXT",
        (Kind::Serial, Dialect::Sqlite) => "INTEGER PRIMARY KEY AUTOINCREMENT",
        (Kind::Serial, Dialect::Postgres) => "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    };
    let mut out = format!("{} {kind}", c.name);
    if c.key && c.kind != Kind::Serial {
        out.push_str(" PRIMARY KEY");
    }
    if let Some(v) = c.only {
        out.push_str(&format!(" CHECK ({} = {v})", c.name));
    }
    if !c.null && !c.key {
        out.push_str(" NOT NULL");
    }
    if let Some(v) = c.default {
        out.push_str(&format!(" DEFAULT {v}"));
    }
    if let Some(r) = c.refs {
        out.push_str(&format!(" REFERENCES {r}"));
    }
    out
}

/// The statements of one item.
pub fn statement(item: &Item, d: Dialect) -> String {
    match item {
        Item::Table { name, cols, key } => {
            let mut lines: Vec<String> = cols.iter().map(|c| column(c, d)).collect();
            if !key.is_empty() {
                lines.push(format!("PRIMARY KEY ({})", key.join(", ")));
            }
            format!("CREATE TABLE {name} (\n    {}\n)", lines.join(",\n    "))
        }
        Item::Index { name, table, cols } => {
            format!("CREATE INDEX {name} ON {table} ({})", cols.join(", "))
        }
    }
}

/// The DDL of migration `items`, one statement per item, `;`-separated.
pub fn ddl(items: &[Item], d: Dialect) -> String {
    let mut out = String::new();
    for item in items {
        out.push_str(&statement(item, d));
        out.push_str(";\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // The description renders the tables the SQL files of schemas 1 and 2 created.
    #[test]
    fn both_dialects_render_every_table() {
        let sqlite = ddl(INIT, Dialect::Sqlite);
        assert!(
            sqlite.contains("id INTEGER PRIMARY KEY AUTOINCREMENT"),
            "{sqlite}"
        );
        assert!(sqlite.contains("seq INTEGER NOT NULL REFERENCES changes(seq)"));
        assert!(sqlite.contains("one INTEGER PRIMARY KEY CHECK (one = 1)"));
        let pg = ddl(BILLING, Dialect::Postgres);
        assert!(
            pg.contains("id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"),
            "{pg}"
        );
        assert!(pg.contains("attempts BIGINT NOT NULL DEFAULT 0"));
        assert!(pg.contains("PRIMARY KEY (cluster_id, at)"));
        assert!(pg.contains("last_error TEXT,") && pg.contains("delivered_at BIGINT\n"));
        for d in [Dialect::Sqlite, Dialect::Postgres] {
            let all: String = MIGRATIONS.iter().map(|m| ddl(m, d)).collect();
            assert_eq!(all.matches("CREATE TABLE").count(), 12);
            assert_eq!(all.matches("CREATE INDEX").count(), 4);
        }
    }
}
