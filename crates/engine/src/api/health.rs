//! `GET /_cluster/health[/<indices>]` as Elasticsearch 7.10 answers it on one node: the
//! status of the indices named (a missing one makes it `red`), and the conditions a request
//! can wait for (`wait_for_status`, `wait_for_active_shards`, `wait_for_nodes`,
//! `wait_for_events`, `wait_for_no_relocating_shards`, `wait_for_no_initializing_shards`,
//! and the existence of the indices named) until `timeout` (30s): not met in time, the
//! answer is 408 with `timed_out: true`. `level=indices|shards` adds each index (and shard).
//!
//! Deciding whether a state satisfies the request is pure ([`Wait::met`]); the handler
//! measures the indices until it is, or the time is up.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::params::Params;
use super::{ApiResult, Engine, Response};
use crate::error::{EngineError, EngineResult};
use crate::resolve::Options;
use crate::store::index::IndexHandle;
use crate::store::settings::parse_time_ms;

/// Health colours, best first (Elasticsearch's order: green 0, yellow 1, red 2).
fn rank(status: &str) -> u8 {
    match status {
        "green" => 0,
        "yellow" => 1,
        _ => 2,
    }
}

/// `wait_for_active_shards`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActiveShards {
    All,
    AtLeast(u64),
}

/// `wait_for_nodes`: a comparison with the node count (`>=N`, `ge(N)`, `<N`, `N`...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nodes {
    Ge(u64),
    Gt(u64),
    Le(u64),
    Lt(u64),
    Eq(u64),
}

/// What a health request waits for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wait {
    pub status: Option<u8>,
    pub active_shards: Option<ActiveShards>,
    pub nodes: Option<Nodes>,
    /// Indices were named: they must all exist.
    pub indices: bool,
}

/// The measured state of the indices a request names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    pub status: &'static str,
    pub primaries: u64,
    pub unassigned: u64,
    /// Every index named exists.
    pub all_exist: bool,
}

impl Wait {
    /// Whether `s` (on a cluster of `nodes` nodes) satisfies every condition.
    pub fn met(&self, s: &State, nodes: u64) -> bool {
        let status = self.status.is_none_or(|w| rank(s.status) <= w);
        let active = match self.active_shards {
            None => true,
            Some(ActiveShards::All) => s.unassigned == 0,
            Some(ActiveShards::AtLeast(n)) => s.primaries >= n,
        };
        let node_ok = match self.nodes {
            None => true,
            Some(Nodes::Ge(n)) => nodes >= n,
            Some(Nodes::Gt(n)) => nodes > n,
            Some(Nodes::Le(n)) => nodes <= n,
            Some(Nodes::Lt(n)) => nodes < n,
            Some(Nodes::Eq(n)) => nodes == n,
        };
        status && active && node_ok && (!self.indices || s.all_exist)
    }
}

fn bad(msg: String) -> EngineError {
    EngineError::IllegalArgument(msg)
}

/// A `wait_for_nodes` form: its prefix, whether it closes with `)`, the bound it makes.
type NodesForm = (&'static str, bool, fn(u64) -> Nodes);

fn parse_nodes(v: &str) -> EngineResult<Nodes> {
    // prefix (and closing parenthesis), in Elasticsearch's order of checks
    const FORMS: [NodesForm; 8] = [
        (">=", false, Nodes::Ge),
        ("ge(", true, Nodes::Ge),
        ("<=", false, Nodes::Le),
        ("le(", true, Nodes::Le),
        (">", false, Nodes::Gt),
        ("gt(", true, Nodes::Gt),
        ("<", false, Nodes::Lt),
        ("lt(", true, Nodes::Lt),
    ];
    let num = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| bad(format!("For input string: \"{s}\"")))
    };
    for (prefix, paren, make) in FORMS {
        let rest = v.strip_prefix(prefix);
        let rest = if paren {
            rest.and_then(|r| r.strip_suffix(')'))
        } else {
            rest
        };
        if let Some(n) = rest {
            return Ok(make(num(n)?));
        }
    }
    Ok(Nodes::Eq(num(v)?))
}

/// The wait conditions and the `level` of a request's parameters.
pub fn parse_wait(params: &Params, named: bool) -> EngineResult<(Wait, u8)> {
    let mut w = Wait {
        indices: named,
        ..Wait::default()
    };
    if let Some(s) = params.get("wait_for_status") {
        w.status = Some(match s {
            "green" | "yellow" | "red" => rank(s),
            _ => return Err(bad(format!("unknown cluster health status [{s}]"))),
        });
    }
    match params.get("wait_for_active_shards") {
        None | Some("default") => {}
        Some("all") => w.active_shards = Some(ActiveShards::All),
        Some(n) => match n.parse::<i64>() {
            Ok(0) => {}
            Ok(k) if k > 0 => w.active_shards = Some(ActiveShards::AtLeast(k as u64)),
            _ => return Err(bad(format!("cannot parse ActiveShardCount[{n}]"))),
        },
    }
    if let Some(n) = params.get("wait_for_nodes").filter(|n| !n.is_empty()) {
        w.nodes = Some(parse_nodes(n)?);
    }
    if let Some(e) = params.get("wait_for_events") {
        if !matches!(
            e.to_ascii_lowercase().as_str(),
            "immediate" | "urgent" | "high" | "normal" | "low" | "languid"
        ) {
            return Err(bad(format!(
                "No enum constant org.elasticsearch.common.Priority.{}",
                e.to_ascii_uppercase()
            )));
        }
    }
    for k in [
        "wait_for_no_relocating_shards",
        "wait_for_no_initializing_shards",
        "local",
    ] {
        params.bool(k)?; // nothing relocates or initializes on one node
    }
    let level = match params.get("level").unwrap_or("cluster") {
        "cluster" => 0,
        "indices" => 1,
        "shards" => 2,
        other => {
            return Err(bad(format!(
                "No enum constant org.elasticsearch.action.admin.cluster.health.ClusterHealthRequest.Level.{}",
                other.to_ascii_uppercase()
            )))
        }
    };
    Ok((w, level))
}

/// The indices a request names (`lenientExpandHidden`, open and closed), and whether all exist.
fn targets(
    engine: &Engine,
    index: Option<&str>,
    params: &Params,
) -> EngineResult<(Vec<std::sync::Arc<IndexHandle>>, bool)> {
    let Some(expr) = index else {
        return Ok((engine.store.all(), true));
    };
    let lenient = Options {
        ignore_unavailable: true,
        forbid_closed: false,
        expand_closed: true,
        expand_hidden: true,
        ..Options::default()
    };
    let opts = params.indices_options(lenient)?;
    let found = engine.store.resolve(expr, opts)?;
    let strict = Options {
        ignore_unavailable: false,
        allow_no_indices: false,
        ..opts
    };
    let all_exist = engine.store.resolve(expr, strict).is_ok();
    Ok((found, all_exist))
}

/// The state of `indices` (red when a named one is missing).
pub(super) fn measure(indices: &[std::sync::Arc<IndexHandle>], all_exist: bool) -> State {
    let mut s = State {
        status: "green",
        all_exist,
        ..State::default()
    };
    for idx in indices {
        let st = idx.settings();
        s.primaries += st.shards as u64;
        s.unassigned += st.shards as u64 * st.replicas as u64;
        if rank(idx.health()) > rank(s.status) {
            s.status = idx.health();
        }
    }
    if !all_exist {
        s.status = "red"; // a missing index is red, as Elasticsearch says
    }
    s
}

fn index_detail(idx: &IndexHandle, level: u8) -> Value {
    let st = idx.settings();
    let (p, r) = (st.shards as u64, st.replicas as u64);
    let mut v = json!({
        "status": idx.health(),
        "number_of_shards": p,
        "number_of_replicas": r,
        "active_primary_shards": p,
        "active_shards": p,
        "relocating_shards": 0,
        "initializing_shards": 0,
        "unassigned_shards": p * r,
    });
    if level >= 2 {
        let shards: Map<String, Value> = (0..p)
            .map(|n| {
                (
                    n.to_string(),
                    json!({"status": idx.health(), "primary_active": true, "active_shards": 1,
                           "relocating_shards": 0, "initializing_shards": 0, "unassigned_shards": r}),
                )
            })
            .collect();
        v["shards"] = Value::Object(shards);
    }
    v
}

/// `GET /_cluster/health[/<indices>]`.
///
/// While it waits, it looks every 50 ms whether the client is still there (`gone`): a
/// client that went away (the edge gave up at its deadline) ends the wait at once, so no
/// thread sleeps for a timeout no one waits for any more.
pub fn health(
    engine: &Engine,
    index: Option<&str>,
    params: &Params,
    gone: &dyn Fn() -> bool,
) -> ApiResult {
    let (wait, level) = parse_wait(params, index.is_some())?;
    let timeout = match params.get("timeout") {
        Some(t) => parse_time_ms("timeout", t)?.max(0) as u64,
        None => 30_000,
    };
    let start = Instant::now();
    let (mut indices, mut exist) = targets(engine, index, params)?;
    let mut state = measure(&indices, exist);
    while !wait.met(&state, 1) && start.elapsed() < Duration::from_millis(timeout) {
        if gone() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        (indices, exist) = targets(engine, index, params)?;
        state = measure(&indices, exist);
    }
    let timed_out = !wait.met(&state, 1);
    let total = state.primaries + state.unassigned;
    let pct = if total == 0 {
        100.0
    } else {
        state.primaries as f64 * 100.0 / total as f64
    };
    let mut body = json!({
        "cluster_name": engine.node.cluster_name,
        "status": state.status,
        "timed_out": timed_out,
        "number_of_nodes": 1,
        "number_of_data_nodes": 1,
        "active_primary_shards": state.primaries,
        "active_shards": state.primaries,
        "relocating_shards": 0,
        "initializing_shards": 0,
        "unassigned_shards": state.unassigned,
        "delayed_unassigned_shards": 0,
        "number_of_pending_tasks": 0,
        "number_of_in_flight_fetch": 0,
        "task_max_waiting_in_queue_millis": 0,
        "active_shards_percent_as_number": pct,
    });
    if level >= 1 {
        let detail: Map<String, Value> = indices
            .iter()
            .map(|i| (i.name.clone(), index_detail(i, level)))
            .collect();
        body["indices"] = Value::Object(detail);
    }
    Ok(Response::json(if timed_out { 408 } else { 200 }, &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(status: &'static str, primaries: u64, unassigned: u64, all_exist: bool) -> State {
        State {
            status,
            primaries,
            unassigned,
            all_exist,
        }
    }

    #[test]
    fn wait_conditions_as_elasticsearch_counts_them() {
        let p = |q: &str| {
            parse_wait(&Params::parse(Some(q.as_bytes())).unwrap(), false)
                .unwrap()
                .0
        };
        let yellow = state("yellow", 2, 2, true);
        let green = state("green", 3, 0, true);
        let table: Vec<(&str, &State, bool)> = vec![
            ("", &yellow, true),
            ("wait_for_status=yellow", &yellow, true),
            ("wait_for_status=green", &yellow, false),
            ("wait_for_status=red", &yellow, true),
            ("wait_for_active_shards=2", &yellow, true),
            ("wait_for_active_shards=3", &yellow, false),
            ("wait_for_active_shards=all", &yellow, false),
            ("wait_for_active_shards=all", &green, true),
            ("wait_for_nodes=1", &green, true),
            ("wait_for_nodes=>=2", &green, false),
            ("wait_for_nodes=ge(1)", &green, true),
            ("wait_for_nodes=<2", &green, true),
            ("wait_for_nodes=gt(1)", &green, false),
            (
                "wait_for_events=languid&wait_for_no_relocating_shards=true",
                &green,
                true,
            ),
        ];
        for (q, s, want) in table {
            assert_eq!(p(q).met(s, 1), want, "{q}");
        }
        let named = parse_wait(&Params::default(), true).unwrap().0;
        assert!(!named.met(&state("red", 0, 0, false), 1));
        assert!(named.met(&green, 1));
    }

    #[test]
    fn bad_parameters_are_refused() {
        for q in [
            "wait_for_status=blue",
            "wait_for_active_shards=some",
            "wait_for_nodes=>x",
            "wait_for_events=soon",
            "level=nodes",
            "wait_for_no_relocating_shards=maybe",
        ] {
            let e = parse_wait(&Params::parse(Some(q.as_bytes())).unwrap(), false).unwrap_err();
            assert_eq!(e.status(), 400, "{q}");
        }
        let (_, level) = parse_wait(&Params::parse(Some(b"level=shards")).unwrap(), false).unwrap();
        assert_eq!(level, 2);
    }
}
