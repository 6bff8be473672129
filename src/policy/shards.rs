//! Shard capacity (spec 1.6, 2.2, 8): how many shards an index creation asks for, whether
//! the plan has room for them, and the usage totals metering reads from `_cat/indices`.
//!
//! An index of `p` primaries and `r` replicas takes `p * (1 + r)` shards. `p` and `r` are
//! read wherever Elasticsearch accepts them in a `PUT /<index>` body: under `settings`, as
//! `number_of_shards` or `index.number_of_shards`, flat (`"index.number_of_shards"`) or
//! nested (`"index": {"number_of_shards"}`), as numbers or strings; also at the top level as
//! old versions accepted. When a setting is given twice the larger value counts. An upper
//! bound in `index.auto_expand_replicas` (`"0-2"`) counts as the replicas; `"0-all"` cannot
//! be counted and is refused. Missing values take the upstream's defaults (passed in;
//! Elasticsearch 7: 1 and 1).
//!
//! Bodies are small and parsed whole: the edge buffers a create-index body before deciding.
//! Must not touch: I/O, plans' storage, tenancy.

use serde_json::{Map, Value};

use crate::errors::EdgeError;

/// The upstream's defaults for a new index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardDefaults {
    pub primaries: u64,
    pub replicas: u64,
}

impl ShardDefaults {
    /// Elasticsearch 7 and later (and OpenSearch): one primary, one replica.
    pub const ES7: ShardDefaults = ShardDefaults {
        primaries: 1,
        replicas: 1,
    };
}

/// Primaries and replicas of one index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexShards {
    pub primaries: u64,
    pub replicas: u64,
}

impl IndexShards {
    /// `p * (1 + r)`, saturating.
    pub fn total(self) -> u64 {
        self.primaries
            .saturating_mul(self.replicas.saturating_add(1))
    }
}

const BAD_BODY: &str = "the body of an index creation must be a JSON object";
const BAD_SHARDS: &str = "[index.number_of_shards] must be a positive integer";
const BAD_REPLICAS: &str = "[index.number_of_replicas] must be a non-negative integer";
const BAD_EXPAND: &str = "[index.auto_expand_replicas] must be `false` or `<min>-<max>` with a numeric max: `all` cannot be counted against the plan's shard capacity";

/// Primaries and replicas a `PUT /<index>` body asks for (empty body: the defaults).
pub fn create_index_shards(body: &[u8], defaults: ShardDefaults) -> Result<IndexShards, EdgeError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(IndexShards {
            primaries: defaults.primaries,
            replicas: defaults.replicas,
        });
    }
    let v: Value = serde_json::from_slice(body).map_err(|_| EdgeError::BadRequest(BAD_BODY))?;
    let Value::Object(top) = v else {
        return Err(EdgeError::BadRequest(BAD_BODY));
    };
    let mut found = Found::default();
    for (k, v) in &top {
        if k == "settings" {
            if let Value::Object(s) = v {
                flatten(s, &mut String::new(), &mut found)?;
            }
        } else if k != "mappings" && k != "aliases" {
            // old versions took settings at the top level
            let mut key = String::new();
            visit(k, v, &mut key, &mut found)?;
        }
    }
    let primaries = found.shards.unwrap_or(defaults.primaries);
    if primaries == 0 {
        return Err(EdgeError::BadRequest(BAD_SHARDS));
    }
    let replicas = match (found.replicas, found.expand_max) {
        (None, None) => defaults.replicas,
        (r, e) => r.unwrap_or(0).max(e.unwrap_or(0)),
    };
    Ok(IndexShards {
        primaries,
        replicas,
    })
}

/// The replicas a `PUT /<index>/_settings` body sets (`None`: it does not change them).
/// The edge refuses the change when `primaries * (new - old)` more shards do not fit.
pub fn settings_update_replicas(body: &[u8]) -> Result<Option<u64>, EdgeError> {
    let v: Value = serde_json::from_slice(body).map_err(|_| EdgeError::BadRequest(BAD_BODY))?;
    let Value::Object(top) = v else {
        return Err(EdgeError::BadRequest(BAD_BODY));
    };
    let settings = match top.get("settings") {
        Some(Value::Object(s)) => s,
        _ => &top,
    };
    let mut found = Found::default();
    flatten(settings, &mut String::new(), &mut found)?;
    Ok(match (found.replicas, found.expand_max) {
        (None, None) => None,
        (r, e) => Some(r.unwrap_or(0).max(e.unwrap_or(0))),
    })
}

/// Refuses an operation asking for `asked` more shards when the cluster already uses
/// `in_use` of the plan's `capacity` (spec 8: 400 naming the plan and the figures).
pub fn check(plan: &str, capacity: u64, in_use: u64, asked: u64) -> Result<(), EdgeError> {
    let fits = in_use.checked_add(asked).is_some_and(|t| t <= capacity);
    if !fits {
        return Err(EdgeError::ShardCapacity {
            plan: plan.to_string(),
            capacity,
            in_use,
            asked,
        });
    }
    Ok(())
}

#[derive(Debug, Default)]
struct Found {
    shards: Option<u64>,
    replicas: Option<u64>,
    expand_max: Option<u64>,
}

fn flatten(
    obj: &Map<String, Value>,
    prefix: &mut String,
    found: &mut Found,
) -> Result<(), EdgeError> {
    for (k, v) in obj {
        visit(k, v, prefix, found)?;
    }
    Ok(())
}

fn visit(k: &str, v: &Value, prefix: &mut String, found: &mut Found) -> Result<(), EdgeError> {
    let len = prefix.len();
    if !prefix.is_empty() {
        prefix.push('.');
    }
    prefix.push_str(k);
    let r = match v {
        Value::Object(inner) => flatten(inner, prefix, found),
        _ => record(prefix.strip_prefix("index.").unwrap_or(prefix), v, found),
    };
    prefix.truncate(len);
    r
}

fn record(key: &str, v: &Value, found: &mut Found) -> Result<(), EdgeError> {
    let keep_max = |slot: &mut Option<u64>, n: u64| *slot = Some(slot.map_or(n, |o| o.max(n)));
    match key {
        "number_of_shards" => {
            let n = integer(v).ok_or(EdgeError::BadRequest(BAD_SHARDS))?;
            keep_max(&mut found.shards, n);
        }
        "number_of_replicas" => {
            let n = integer(v).ok_or(EdgeError::BadRequest(BAD_REPLICAS))?;
            keep_max(&mut found.replicas, n);
        }
        "auto_expand_replicas" => {
            if let Some(max) = expand_max(v)? {
                keep_max(&mut found.expand_max, max);
            }
        }
        _ => {}
    }
    Ok(())
}

/// A non-negative integer given as a JSON integer or a string of digits.
fn integer(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()
        }
        _ => None,
    }
}

fn expand_max(v: &Value) -> Result<Option<u64>, EdgeError> {
    let s = match v {
        Value::Bool(false) => return Ok(None),
        Value::String(s) if s == "false" => return Ok(None),
        Value::String(s) => s,
        _ => return Err(EdgeError::BadRequest(BAD_EXPAND)),
    };
    let max = s.split_once('-').map(|(_, max)| max);
    match max.and_then(|m| integer(&Value::String(m.to_string()))) {
        Some(n) => Ok(Some(n)),
        None => Err(EdgeError::BadRequest(BAD_EXPAND)),
    }
}

/// What `shards` and `bytes` in use exceed of a plan's `shards_allowed` and `disk`, one
/// phrase each (`11 shards in use, the plan allows 10`): the downgrade refusal and the
/// overage ladder say it the same way.
pub fn exceeded(shards: u64, shards_allowed: u64, bytes: u64, disk: u64) -> Vec<String> {
    let mut out = Vec::new();
    if shards > shards_allowed {
        out.push(format!(
            "{shards} shards in use, the plan allows {shards_allowed}"
        ));
    }
    if bytes > disk {
        out.push(format!(
            "{bytes} bytes of disk in use, the plan allows {disk}"
        ));
    }
    out
}

/// Usage totals of one cluster, from `_cat/indices?format=json&bytes=b` restricted to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub indices: u64,
    pub shards: u64,
    /// Primary shards among `shards` (a search of every index opens at most this many
    /// shard contexts upstream).
    pub primaries: u64,
    pub docs: u64,
    pub bytes: u64,
}

/// The index names of a `_cat/indices?format=json` body, as the upstream spells them.
pub fn index_names_from_cat_indices(body: &[u8]) -> Result<Vec<String>, serde_json::Error> {
    let rows: Vec<Map<String, Value>> = serde_json::from_slice(body)?;
    Ok(rows
        .iter()
        .filter_map(|row| row.get("index").and_then(Value::as_str).map(str::to_string))
        .collect())
}

/// Sums a `_cat/indices?format=json&bytes=b` body. Closed indices (null counts) count their
/// shards only when `pri`/`rep` are known.
pub fn usage_from_cat_indices(body: &[u8]) -> Result<Usage, serde_json::Error> {
    let rows: Vec<Map<String, Value>> = serde_json::from_slice(body)?;
    let num = |row: &Map<String, Value>, k: &str| row.get(k).and_then(integer).unwrap_or(0);
    let mut u = Usage::default();
    for row in &rows {
        u.indices += 1;
        let shards = IndexShards {
            primaries: num(row, "pri"),
            replicas: num(row, "rep"),
        };
        u.shards = u.shards.saturating_add(shards.total());
        u.primaries = u.primaries.saturating_add(shards.primaries);
        u.docs = u.docs.saturating_add(num(row, "docs.count"));
        u.bytes = u.bytes.saturating_add(num(row, "store.size"));
    }
    Ok(u)
}

/// The open search contexts (shard contexts of scrolls and points in time) of a
/// `_stats/search?level=cluster` body: `_all.total.search.open_contexts`, 0 when the
/// pattern matched no index. `None` when the body does not say (an upstream that does
/// not count them).
pub fn open_contexts_from_stats(body: &[u8]) -> Result<u64, &'static str> {
    let v: Value = serde_json::from_slice(body).map_err(|_| "not JSON")?;
    if let Some(n) = v
        .pointer("/_all/total/search/open_contexts")
        .and_then(Value::as_u64)
    {
        return Ok(n);
    }
    match v.pointer("/_shards/total").and_then(Value::as_u64) {
        Some(0) => Ok(0),
        _ => Err("no _all.total.search.open_contexts"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: ShardDefaults = ShardDefaults::ES7;

    // Issue 27: what a reading of a tenant's open contexts finds.
    #[test]
    fn open_contexts_are_read_from_search_stats() {
        let cases: &[(&str, Result<u64, ()>)] = &[
            (
                r#"{"_shards":{"total":4},"_all":{"primaries":{"search":{"open_contexts":2}},"total":{"search":{"open_contexts":5}}}}"#,
                Ok(5),
            ),
            (
                r#"{"_shards":{"total":0},"_all":{"primaries":{},"total":{}}}"#,
                Ok(0),
            ),
            (
                r#"{"_shards":{"total":2},"_all":{"primaries":{},"total":{}}}"#,
                Err(()),
            ),
            (
                r#"{"_all":{"total":{"search":{"open_contexts":-1}}}}"#,
                Err(()),
            ),
            ("not json", Err(())),
        ];
        for (body, want) in cases {
            let got = open_contexts_from_stats(body.as_bytes()).map_err(drop);
            assert_eq!(&got, want, "{body}");
        }
    }

    fn shards(body: &str) -> Result<(u64, u64), EdgeError> {
        create_index_shards(body.as_bytes(), D).map(|s| (s.primaries, s.replicas))
    }

    // spec 2.2: p and r wherever Elasticsearch accepts them
    #[test]
    fn create_index_bodies() {
        let table: &[(&str, (u64, u64))] = &[
            ("", (1, 1)),
            ("  \n", (1, 1)),
            ("{}", (1, 1)),
            (
                r#"{"mappings":{"properties":{"number_of_shards":{"type":"long"}}}}"#,
                (1, 1),
            ),
            (r#"{"settings":{"number_of_shards":3}}"#, (3, 1)),
            (
                r#"{"settings":{"number_of_shards":"3","number_of_replicas":"2"}}"#,
                (3, 2),
            ),
            (
                r#"{"settings":{"index":{"number_of_shards":4,"number_of_replicas":0}}}"#,
                (4, 0),
            ),
            (r#"{"settings":{"index.number_of_shards":5}}"#, (5, 1)),
            (r#"{"settings":{"index.number_of_replicas":3}}"#, (1, 3)),
            (r#"{"number_of_shards":2}"#, (2, 1)),
            (r#"{"index":{"number_of_replicas":4}}"#, (1, 4)),
            (
                r#"{"settings":{"number_of_shards":2,"index.number_of_shards":6}}"#,
                (6, 1),
            ),
            (
                r#"{"settings":{"index":{"auto_expand_replicas":"0-2"}}}"#,
                (1, 2),
            ),
            (
                r#"{"settings":{"number_of_replicas":3,"auto_expand_replicas":"0-1"}}"#,
                (1, 3),
            ),
            (r#"{"settings":{"auto_expand_replicas":false}}"#, (1, 1)),
            (
                r#"{"settings":{"index":{"number_of":{"shards":9}}}}"#,
                (1, 1),
            ),
            (r#"{"aliases":{"number_of_shards":{}}}"#, (1, 1)),
        ];
        for (body, want) in table {
            assert_eq!(shards(body).as_ref(), Ok(want), "{body}");
        }
    }

    #[test]
    fn create_index_bad_values() {
        for body in [
            "[]",
            "not json",
            r#"{"settings":{"number_of_shards":0}}"#,
            r#"{"settings":{"number_of_shards":-1}}"#,
            r#"{"settings":{"number_of_shards":1.5}}"#,
            r#"{"settings":{"number_of_shards":"3 "}}"#,
            r#"{"settings":{"number_of_shards":"x"}}"#,
            r#"{"settings":{"number_of_replicas":true}}"#,
            r#"{"settings":{"auto_expand_replicas":"0-all"}}"#,
            r#"{"settings":{"auto_expand_replicas":"5"}}"#,
        ] {
            let e = shards(body).unwrap_err();
            assert_eq!(e.status(), 400, "{body}");
        }
    }

    // spec 8.1: p * (1 + r)
    #[test]
    fn totals() {
        let t = |p, r| {
            IndexShards {
                primaries: p,
                replicas: r,
            }
            .total()
        };
        assert_eq!(t(1, 1), 2);
        assert_eq!(t(3, 2), 9);
        assert_eq!(t(5, 0), 5);
        assert_eq!(t(u64::MAX, 1), u64::MAX);
    }

    // spec 8: at capacity passes, one more is refused with the figures
    #[test]
    fn capacity_at_n_and_n_plus_one() {
        assert_eq!(check("sandbox", 10, 8, 2), Ok(()));
        let e = check("sandbox", 10, 8, 3).unwrap_err();
        assert_eq!(
            e,
            EdgeError::ShardCapacity {
                plan: "sandbox".into(),
                capacity: 10,
                in_use: 8,
                asked: 3
            }
        );
        let v = e.body().to_value();
        assert_eq!(v["status"], 400);
        assert_eq!(v["error"]["plan"], "sandbox");
        assert_eq!(v["error"]["shard_capacity"], 10);
        assert_eq!(v["error"]["shards_in_use"], 8);
        assert_eq!(v["error"]["shards_requested"], 3);
        assert!(check("p", u64::MAX, u64::MAX, 1).is_err());
    }

    #[test]
    fn settings_updates() {
        let r = |b: &str| settings_update_replicas(b.as_bytes());
        assert_eq!(r(r#"{"index":{"number_of_replicas":2}}"#), Ok(Some(2)));
        assert_eq!(r(r#"{"number_of_replicas":"3"}"#), Ok(Some(3)));
        assert_eq!(
            r(r#"{"settings":{"index.number_of_replicas":4}}"#),
            Ok(Some(4))
        );
        assert_eq!(r(r#"{"index":{"refresh_interval":"1s"}}"#), Ok(None));
        assert_eq!(
            r(r#"{"index":{"auto_expand_replicas":"0-5"}}"#),
            Ok(Some(5))
        );
        assert!(r("[1]").is_err());
    }

    #[test]
    fn usage_sums_cat_rows() {
        let body = br#"[
          {"health":"green","status":"open","index":"a","pri":"2","rep":"1","docs.count":"10","store.size":"1000"},
          {"health":"green","status":"open","index":"b","pri":"1","rep":"0","docs.count":"5","store.size":"300"},
          {"health":null,"status":"close","index":"c","pri":"1","rep":"1","docs.count":null,"store.size":null}
        ]"#;
        let u = usage_from_cat_indices(body).unwrap();
        assert_eq!(
            u,
            Usage {
                indices: 3,
                shards: 4 + 1 + 2,
                primaries: 4,
                docs: 15,
                bytes: 1300
            }
        );
        assert_eq!(usage_from_cat_indices(b"[]").unwrap(), Usage::default());
        assert_eq!(index_names_from_cat_indices(body).unwrap(), ["a", "b", "c"]);
        assert!(usage_from_cat_indices(b"{").is_err());
    }
}
