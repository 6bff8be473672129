-- searchgate control plane, schema 2 (issue 12): usage history and overage notices.

-- One sample per cluster per `[billing] usage_interval`: the last metering reading and the
-- requests and bytes the edge counted since the cluster's previous sample. Samples older
-- than `usage_retention` are deleted when new ones are written.
CREATE TABLE usage_history (
    cluster_id TEXT NOT NULL,
    at         INTEGER NOT NULL,       -- unix milliseconds (the control plane's clock)
    disk_bytes INTEGER NOT NULL,
    documents  INTEGER NOT NULL,
    shards     INTEGER NOT NULL,
    indices    INTEGER NOT NULL,
    requests   INTEGER NOT NULL,
    bytes_in   INTEGER NOT NULL,
    bytes_out  INTEGER NOT NULL,
    PRIMARY KEY (cluster_id, at)
);
CREATE INDEX usage_history_by_time ON usage_history (at);

-- Overage notices for the webhook, queued in the same transaction as the ladder's step;
-- delivered in order, at least once.
CREATE TABLE notices (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    seq          INTEGER NOT NULL REFERENCES changes(seq),
    cluster_id   TEXT NOT NULL,
    at           INTEGER NOT NULL,
    body         TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    last_error   TEXT,
    delivered_at INTEGER
);
CREATE INDEX notices_pending ON notices (delivered_at, id);
