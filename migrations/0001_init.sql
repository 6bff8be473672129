-- searchgate control plane, schema 1. Applied by control::sqlite in one transaction;
-- PRAGMA user_version says which migrations a database has.

-- The catalog as last committed: one JSON record per plan and per cluster (tombstones of
-- destroyed clusters included), with the columns the admin API filters on.
CREATE TABLE plans (
    name   TEXT PRIMARY KEY,
    record TEXT NOT NULL
);

CREATE TABLE clusters (
    id     TEXT PRIMARY KEY,
    state  TEXT NOT NULL,          -- provisioning | running | destroyed
    plan   TEXT NOT NULL,
    record TEXT NOT NULL
);

-- The change feed: every committed batch, in order, with the records it wrote.
CREATE TABLE changes (
    seq    INTEGER PRIMARY KEY,
    at     INTEGER NOT NULL,       -- unix milliseconds
    events TEXT NOT NULL           -- JSON array of events
);

-- Who changed what and when, before and after (never a secret).
CREATE TABLE audit (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    seq    INTEGER NOT NULL REFERENCES changes(seq),
    at     INTEGER NOT NULL,
    actor  TEXT NOT NULL,          -- token:<id> | file | system
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    before TEXT,
    after  TEXT
);
CREATE INDEX audit_by_target ON audit (target, id);

-- Every interval a cluster spends on a plan starts with a row here (created, changed,
-- price: the plan's price changed) and the last one ends with `destroyed` (plan NULL).
CREATE TABLE plan_history (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    seq                 INTEGER NOT NULL REFERENCES changes(seq),
    cluster_id          TEXT NOT NULL,
    at                  INTEGER NOT NULL,
    event               TEXT NOT NULL,
    plan                TEXT,
    monthly_price_cents INTEGER
);
CREATE INDEX plan_history_by_cluster ON plan_history (cluster_id, at);

-- Responses of requests that carried an Idempotency-Key (secrets blanked).
CREATE TABLE idempotency (
    key         TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    status      INTEGER NOT NULL,
    body        TEXT NOT NULL,
    at          INTEGER NOT NULL
);

-- What the configuration file declared when it was last applied (passwords hashed).
CREATE TABLE seed (
    one      INTEGER PRIMARY KEY CHECK (one = 1),
    declared TEXT NOT NULL
);
