//! Node and cluster endpoints: `GET|HEAD /` and the `_cat/indices`, `_cat/health`,
//! `_cat/count`, `_cat/shards` tables (`_cluster/health` is `health`).

use serde_json::json;

use super::params::Params;
use super::{ApiResult, Engine, Response};
use crate::cat::{self, format_bytes, ByteUnit, CatOpts, Cell};
use crate::error::EngineError;
use crate::resolve::Options;
use crate::store::index::IndexHandle;
use searchgate_core::proto::Method;

/// `GET /` (and `HEAD /`).
pub fn root(engine: &Engine, _m: Method) -> ApiResult {
    Ok(Response::json(
        200,
        &json!({
            "name": engine.node.name,
            "cluster_name": engine.node.cluster_name,
            "cluster_uuid": engine.node.cluster_uuid,
            "version": {
                "number": "7.10.2",
                "build_flavor": "default",
                "build_type": "tar",
                "build_hash": "747e1cc71def077253878a59143c1f785afa92b9",
                "build_date": "2021-01-13T00:42:12.435326Z",
                "build_snapshot": false,
                "lucene_version": "8.7.0",
                "minimum_wire_compatibility_version": "6.8.0",
                "minimum_index_compatibility_version": "6.0.0-beta1"
            },
            "tagline": "You Know, for Search"
        }),
    ))
}

/// A `_cat` answer: JSON or the text table.
pub(super) fn cat_response(
    cols: &[cat::Column],
    rows: Vec<Vec<Cell>>,
    params: &Params,
) -> ApiResult {
    if params.flag("pri") {
        return Err(EngineError::IllegalArgument(
            "[pri] columns are not supported by this engine: every size shown is of primaries"
                .into(),
        ));
    }
    if params.flag("help") {
        let mut out = String::new();
        for c in cols {
            out.push_str(&format!("{} | {} |\n", c.name, c.short.join(",")));
        }
        return Ok(Response::text(200, out));
    }
    let opts = CatOpts::new(
        params.flag("v"),
        params.get("format"),
        params.get("h"),
        params.get("s"),
    )?;
    let (body, json) = cat::render(cols, rows, &opts)?;
    Ok(if json {
        Response {
            body: super::Body::Bytes(body.into_bytes()),
            ..Response::json(200, &json!(null))
        }
    } else {
        Response::text(200, body)
    })
}

pub(super) fn num(n: u64) -> Cell {
    Cell::Num(n.to_string(), n as f64)
}

/// The row of one index in `_cat/indices` (a closed index has no counts).
fn index_row(idx: &IndexHandle, unit: ByteUnit) -> Vec<Cell> {
    let s = idx.settings();
    let created = Cell::Num(idx.created_ms.to_string(), idx.created_ms as f64);
    let created_s = Cell::Text(crate::mapping::date::format_millis(idx.created_ms));
    if !idx.is_open() {
        let none = || Cell::Opt(String::new());
        return vec![
            Cell::Text(idx.health().into()),
            Cell::Text("close".into()),
            Cell::Text(idx.name.clone()),
            num(s.shards as u64),
            num(s.replicas as u64),
            none(),
            none(),
            none(),
            none(),
            Cell::Text(idx.uuid.to_string()),
            created,
            created_s,
        ];
    }
    let st = idx.stats();
    // replicas cannot be assigned on one node: the store holds primaries only
    let size = Cell::Num(format_bytes(st.bytes, unit), st.bytes as f64);
    vec![
        Cell::Text(idx.health().into()),
        Cell::Text("open".into()),
        Cell::Text(idx.name.clone()),
        num(s.shards as u64),
        num(s.replicas as u64),
        num(st.docs),
        num(st.deleted),
        size.clone(),
        size,
        Cell::Text(idx.uuid.to_string()),
        created,
        created_s,
    ]
}

/// `GET /_cat/indices[/<pattern>]`: the nine columns of spec 2.3 (more with `h=`), closed
/// indices included; `health=` keeps the indices of one colour.
pub fn cat_indices(engine: &Engine, pattern: Option<&str>, params: &Params) -> ApiResult {
    let unit = ByteUnit::parse(params.get("bytes"))?;
    let health = params.get("health");
    if let Some(h) = health {
        if !matches!(h, "green" | "yellow" | "red") {
            return Err(EngineError::IllegalArgument(format!(
                "unknown health [{h}], expected one of [green, yellow, red]"
            )));
        }
    }
    let opts = params.indices_options(Options {
        expand_closed: true,
        forbid_closed: false,
        ..Options::default()
    })?;
    let indices = engine
        .store
        .resolve_filtered(pattern.unwrap_or("*"), opts)?;
    let rows = indices
        .iter()
        .map(|(idx, _)| index_row(idx, unit))
        .filter(|row| health.is_none_or(|h| row[0].text_is(h)))
        .collect();
    let mut params = params.clone();
    if params.get("s").is_none() {
        params.0.push(("s".into(), "index".into()));
    }
    cat_response(&cat::INDICES, rows, &params)
}

fn epoch_cells() -> (Cell, Cell) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let ts = format!(
        "{:02}:{:02}:{:02}",
        secs / 3600 % 24,
        secs / 60 % 60,
        secs % 60
    );
    (num(secs), Cell::Text(ts))
}

/// `GET /_cat/health`.
pub fn cat_health(engine: &Engine, params: &Params) -> ApiResult {
    use cat::col;
    const COLS: [cat::Column; 8] = [
        col("epoch", true, &["t", "time"]),
        col("timestamp", false, &["ts", "hms", "hhmmss"]),
        col("cluster", false, &["cl"]),
        col("status", false, &["st"]),
        col("node.total", true, &["nt", "nodeTotal"]),
        col("shards", true, &["t", "sh", "shards.total", "shardsTotal"]),
        col("pri", true, &["p", "shards.primary", "shardsPrimary"]),
        col(
            "unassign",
            true,
            &["u", "shards.unassigned", "shardsUnassigned"],
        ),
    ];
    let h = super::health::measure(&engine.store.all(), true);
    let (epoch, ts) = epoch_cells();
    let row = vec![
        epoch,
        ts,
        Cell::Text(engine.node.cluster_name.clone()),
        Cell::Text(h.status.into()),
        num(1),
        num(h.primaries),
        num(h.primaries),
        num(h.unassigned),
    ];
    // `ts=false` leaves out the two time columns
    let skip = if params.bool("ts")? == Some(false) {
        2
    } else {
        0
    };
    let row = row.into_iter().skip(skip).collect();
    cat_response(&COLS[skip..], vec![row], params)
}

/// `GET /_cat/count[/<pattern>]`.
pub fn cat_count(engine: &Engine, pattern: Option<&str>, params: &Params) -> ApiResult {
    use cat::col;
    const COLS: [cat::Column; 3] = [
        col("epoch", true, &["t", "time"]),
        col("timestamp", false, &["ts", "hms", "hhmmss"]),
        col("count", true, &["dc", "docs.count", "docsCount"]),
    ];
    let indices = engine
        .store
        .resolve(pattern.unwrap_or("*"), Options::default())?;
    let count: u64 = indices.iter().map(|i| i.stats().docs).sum();
    let (epoch, ts) = epoch_cells();
    cat_response(&COLS, vec![vec![epoch, ts, num(count)]], params)
}

/// `GET /_cat/shards[/<pattern>]`: one row per shard copy, as Elasticsearch 7.10's default
/// columns. The one node holds every primary (STARTED); replicas cannot be assigned on a
/// single node, so each is a row UNASSIGNED without figures. Closed indices are left out.
pub fn cat_shards(engine: &Engine, pattern: Option<&str>, params: &Params) -> ApiResult {
    use cat::col;
    const COLS: [cat::Column; 8] = [
        col("index", false, &["i", "idx"]),
        col("shard", true, &["s", "sh"]),
        col("prirep", false, &["p", "pr", "primaryOrReplica"]),
        col("state", false, &["st"]),
        col("docs", true, &["d", "dc"]),
        col("store", true, &["sto"]),
        col("ip", false, &[]),
        col("node", false, &["n"]),
    ];
    let unit = ByteUnit::parse(params.get("bytes"))?;
    let indices = engine
        .store
        .resolve(pattern.unwrap_or("*"), Options::default())?;
    let mut rows = Vec::new();
    for idx in &indices {
        let replicas = idx.settings().replicas as u64;
        for (n, shard) in idx.shards.iter().enumerate() {
            let st = shard.stats();
            rows.push(vec![
                Cell::Text(idx.name.clone()),
                num(n as u64),
                Cell::Text("p".into()),
                Cell::Text("STARTED".into()),
                num(st.docs),
                Cell::Num(format_bytes(st.bytes, unit), st.bytes as f64),
                Cell::Text("127.0.0.1".into()),
                Cell::Text(engine.node.name.clone()),
            ]);
            for _ in 0..replicas {
                let none = || Cell::Opt(String::new());
                rows.push(vec![
                    Cell::Text(idx.name.clone()),
                    num(n as u64),
                    Cell::Text("r".into()),
                    Cell::Text("UNASSIGNED".into()),
                    none(),
                    none(),
                    none(),
                    none(),
                ]);
            }
        }
    }
    cat_response(&COLS, rows, params)
}
