//! The query-string rows of the table. The query string is read completely, each key and
//! value percent- and `+`-decoded once (as Elasticsearch's `RestUtils.decodeQueryString`,
//! which `RestRequest` uses in 7.10 and OpenSearch 1.x: a parameter ends at `&` or `;`, the
//! first `=` splits name and value, the last of a repeated name wins),
//! decided from [`PARAMS`] (pass / check / open / refuse), and written again canonically;
//! a parameter the table does not know is refused as Elasticsearch refuses one (400
//! `illegal_argument_exception`, "request [<path>] contains unrecognized parameter: [p]"),
//! and so is a parameter given twice (the upstream would keep only one of them).
//! The values the edge acts on (`scroll`, `keep_alive`, `timeout`, `master_timeout`, `v`,
//! `help`, `wait_for_completion`) are read with the engine's own reader
//! (`params`, Elasticsearch 7.10's grammar) and forwarded in canonical form; what it
//! refuses is Elasticsearch's 400 naming the parameter (issue 25).
//!
//! Must not touch: paths, bodies.

use super::super::ids::IdKind;
use super::super::json::Value;
use super::super::lucene::could_name_index;
use super::query::check_query_text;
use super::{check_field_list, illegal, unsupported, Tenant};
use crate::errors::EdgeError;
use crate::params;
use searchgate_core::percent::{self, Plus};

/// What the edge does with a query parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// Cannot name an index or reach the `_index` field: forwarded.
    Pass,
    /// `q`: a Lucene query text (no field that could be `_index`).
    QueryText,
    /// `df`: a field that must not be `_index`.
    Field,
    /// `sort`: `field[:order]` list, no `_index`.
    Sort,
    /// `format`: JSON or text only.
    Format,
    /// `filter_path`: no `*` pattern that could match part of an index name.
    FilterPath,
    /// `scroll_id`: a sealed scroll id, opened.
    ScrollId,
    /// `wait_for_completion`: `false` would leave a task id (shared state): refused.
    WaitForCompletion,
    /// A time value (`params::parse_time`), forwarded in canonical form; `keep_alive`:
    /// also at most `search.max_keep_alive` (a scroll's or point in time's keep-alive).
    Time { keep_alive: bool },
    /// A boolean the edge acts on (`params::parse_bool`), forwarded as `true`/`false`, or
    /// left out when its value leaves the endpoint's default.
    Bool,
    /// Forwarded only with one of these values (why the others are refused).
    OneOf(&'static [&'static str], &'static str),
    /// Never forwarded (why).
    Refuse(&'static str),
}

const BODY_IN_QUERY: &str = "a body in the query string";
const PIPELINE: &str = "ingest pipelines (shared by every cluster on the upstream)";
const PATH_NAME: &str = "a path parameter given in the query string";
/// attacks-10 r2 #4: a by-query or reindex job is not cancelled when the edge gives up on it,
/// and throttling keeps its scroll contexts open while it runs; slices multiply them. None of
/// them is counted against the plan's open contexts.
const JOB_CONTEXTS: &str = "a by-query or reindex job holds its scroll contexts upstream, uncounted, for as long as it runs";

/// Every query parameter of the endpoints a multitenant cluster exposes, alphabetically.
pub static PARAMS: &[(&str, Param)] = &[
    ("_source", Param::Pass),
    ("_source_excludes", Param::Pass),
    ("_source_includes", Param::Pass),
    ("active_only", Param::Pass),
    ("alias", Param::Refuse(PATH_NAME)),
    ("all_shards", Param::Pass),
    ("allow_no_indices", Param::Pass),
    ("allow_partial_search_results", Param::Pass),
    ("analyze_wildcard", Param::Pass),
    ("analyzer", Param::Pass),
    ("batched_reduce_size", Param::Pass),
    ("bytes", Param::Pass),
    ("ccs_minimize_roundtrips", Param::Pass),
    ("completion_fields", Param::Pass),
    ("conflicts", Param::Pass),
    ("create", Param::Pass),
    ("default_operator", Param::Pass),
    ("detailed", Param::Pass),
    ("df", Param::Field),
    ("docvalue_fields", Param::Pass),
    ("error_trace", Param::Pass),
    ("expand_wildcards", Param::Pass),
    ("explain", Param::Pass),
    ("field_statistics", Param::Pass),
    ("fielddata", Param::Pass),
    ("fielddata_fields", Param::Pass),
    ("fields", Param::Pass),
    ("filter_path", Param::FilterPath),
    ("flat_settings", Param::Pass),
    ("flush", Param::Pass),
    ("forbid_closed_indices", Param::Pass),
    ("force", Param::Pass),
    ("format", Param::Format),
    ("from", Param::Pass),
    ("groups", Param::Pass),
    ("h", Param::Pass),
    ("health", Param::Pass),
    ("help", Param::Bool),
    ("human", Param::Pass),
    ("if_primary_term", Param::Pass),
    ("if_seq_no", Param::Pass),
    ("ignore_throttled", Param::Pass),
    ("ignore_unavailable", Param::Pass),
    ("include_defaults", Param::Pass),
    ("include_segment_file_sizes", Param::Pass),
    ("include_type_name", Param::Pass),
    ("include_unloaded_segments", Param::Pass),
    ("include_unmapped", Param::Pass),
    ("index", Param::Refuse(PATH_NAME)),
    ("keep_alive", Param::Time { keep_alive: true }),
    ("lang", Param::Pass),
    ("lenient", Param::Pass),
    ("level", Param::Pass),
    ("local", Param::Pass),
    ("master_timeout", Param::Time { keep_alive: false }),
    ("max_concurrent_searches", Param::Pass),
    ("max_concurrent_shard_requests", Param::Pass),
    ("max_docs", Param::Pass),
    ("max_num_segments", Param::Pass),
    ("name", Param::Refuse(PATH_NAME)),
    ("new_index", Param::Refuse(PATH_NAME)),
    ("offsets", Param::Pass),
    ("only_expunge_deletes", Param::Pass),
    ("op_type", Param::Pass),
    ("order", Param::Pass),
    ("payloads", Param::Pass),
    ("pipeline", Param::Refuse(PIPELINE)),
    ("positions", Param::Pass),
    ("pre_filter_shard_size", Param::Pass),
    ("preference", Param::Pass),
    ("preserve_existing", Param::Pass),
    ("pretty", Param::Pass),
    ("pri", Param::Pass),
    ("q", Param::QueryText),
    ("query", Param::Pass),
    ("realtime", Param::Pass),
    ("refresh", Param::Pass),
    ("request", Param::Pass),
    ("request_cache", Param::Pass),
    (
        "requests_per_second",
        Param::OneOf(&["-1", "-1.0"], JOB_CONTEXTS),
    ),
    ("require_alias", Param::Pass),
    ("rest_total_hits_as_int", Param::Pass),
    ("retry_on_conflict", Param::Pass),
    ("rewrite", Param::Pass),
    ("routing", Param::Pass),
    ("s", Param::Pass),
    ("scroll", Param::Time { keep_alive: true }),
    ("scroll_id", Param::ScrollId),
    ("scroll_size", Param::Pass),
    ("search_type", Param::Pass),
    ("seq_no_primary_term", Param::Pass),
    ("size", Param::Pass),
    ("slices", Param::OneOf(&["1"], JOB_CONTEXTS)),
    ("sort", Param::Sort),
    ("source", Param::Refuse(BODY_IN_QUERY)),
    ("source_content_type", Param::Refuse(BODY_IN_QUERY)),
    ("stats", Param::Pass),
    ("stored_fields", Param::Pass),
    ("suggest_field", Param::Pass),
    ("suggest_mode", Param::Pass),
    ("suggest_size", Param::Pass),
    ("suggest_text", Param::Pass),
    ("target", Param::Refuse(PATH_NAME)),
    ("term_statistics", Param::Pass),
    ("terminate_after", Param::Pass),
    ("time", Param::Pass),
    ("timeout", Param::Time { keep_alive: false }),
    ("track_scores", Param::Pass),
    ("track_total_hits", Param::Pass),
    ("typed_keys", Param::Pass),
    ("v", Param::Bool),
    ("verbose", Param::Pass),
    ("version", Param::Pass),
    ("version_type", Param::Pass),
    ("wait_for_active_shards", Param::Pass),
    ("wait_for_completion", Param::WaitForCompletion),
    ("wait_for_events", Param::Pass),
    ("wait_for_no_initializing_shards", Param::Pass),
    ("wait_for_no_relocating_shards", Param::Pass),
    ("wait_for_nodes", Param::Pass),
    ("wait_for_status", Param::Pass),
    ("wait_if_ongoing", Param::Pass),
];

/// What the query string says that the edge acts on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryFacts {
    /// `_cat` with `?v`: the first text line is a header.
    pub verbose: bool,
    /// `_cat` with `?help`: a description table, not index rows.
    pub help: bool,
    /// `?scroll=`: the search opens a scroll context.
    pub scroll: bool,
}

/// Reads the query string of a request to `path` (as the tenant sent it, for messages),
/// appending `?<canonical form>` to `target` when anything is left.
pub fn read_query(
    t: &Tenant,
    query: Option<&[u8]>,
    path: &str,
    target: &mut Vec<u8>,
) -> Result<QueryFacts, EdgeError> {
    let mut facts = QueryFacts::default();
    let mut seen: Vec<String> = Vec::new();
    let mut first = true;
    // `;` ends a parameter too, as in `RestUtils.decodeQueryString` (attacks-10 #2)
    for pair in query.unwrap_or_default().split(|&b| b == b'&' || b == b';') {
        if pair.is_empty() {
            continue;
        }
        let (k, v) = match memchr::memchr(b'=', pair) {
            Some(e) => (&pair[..e], &pair[e + 1..]),
            None => (pair, &b""[..]),
        };
        let key = decode(k)?;
        let mut value = decode(v)?;
        if seen.contains(&key) {
            return Err(illegal(format!(
                "request [{path}] contains the parameter [{key}] more than once"
            )));
        }
        let Some(&(_, rule)) = PARAMS.iter().find(|(n, _)| *n == key) else {
            return Err(illegal(format!(
                "request [{path}] contains unrecognized parameter: [{key}]"
            )));
        };
        seen.push(key.clone());
        if check(t, rule, &key, &mut value)? == Keep::No {
            continue;
        }
        match key.as_str() {
            "v" => facts.verbose = value == "true",
            "help" => facts.help = value == "true",
            "scroll" => facts.scroll = true,
            _ => {}
        }
        target.push(if first { b'?' } else { b'&' });
        first = false;
        encode(&key, target);
        if !value.is_empty() {
            target.push(b'=');
            encode(&value, target);
        }
    }
    Ok(facts)
}

/// Whether a checked parameter is forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    Yes,
    /// Its value means "the endpoint's default": left out.
    No,
}

/// Checks `value` of parameter `key` by its `rule`, rewriting it to what is forwarded.
fn check(t: &Tenant, rule: Param, key: &str, value: &mut String) -> Result<Keep, EdgeError> {
    match rule {
        Param::Time { keep_alive } => {
            let v = params::parse_time(value, key)?;
            if keep_alive {
                params::check_keep_alive(&v, &params::MAX_KEEP_ALIVE)?;
            }
            *value = v.to_string();
            Ok(Keep::Yes)
        }
        Param::Bool => match params::parse_bool(value)? {
            Some(b) => {
                *value = b.to_string();
                Ok(Keep::Yes)
            }
            None => Ok(Keep::No),
        },
        Param::WaitForCompletion => match params::parse_bool(value)? {
            Some(true) => {
                *value = "true".into();
                Ok(Keep::Yes)
            }
            None => Ok(Keep::No),
            Some(false) => Err(illegal(
                "[wait_for_completion=false] is not supported on this cluster: tasks are shared by every cluster on the upstream",
            )),
        },
        _ => check_text(t, rule, key, value).map(|()| Keep::Yes),
    }
}

fn check_text(t: &Tenant, rule: Param, key: &str, value: &mut String) -> Result<(), EdgeError> {
    let at = format!("?{key}");
    match rule {
        Param::Pass | Param::Time { .. } | Param::Bool | Param::WaitForCompletion => Ok(()),
        Param::Refuse(why) => Err(illegal(format!(
            "the [{key}] parameter is not supported on this cluster ({why})"
        ))),
        Param::OneOf(values, _) if values.contains(&value.as_str()) => Ok(()),
        Param::OneOf(values, why) => Err(illegal(format!(
            "[{key}={value}] is not supported on this cluster, only [{}] ({why})",
            values.join("], [")
        ))),
        Param::QueryText => check_query_text(&Value::String(value.clone()), &at),
        Param::Field => check_field_list(&Value::String(value.clone()), &at),
        Param::Sort => {
            for part in value.split(',') {
                let field = part.rsplit_once(':').map_or(part, |(f, _)| f);
                if could_name_index(field) {
                    return Err(unsupported(&format!("sort on [{field}]"), &at));
                }
            }
            Ok(())
        }
        Param::FilterPath => check_filter_path(value, &at),
        Param::Format => match value.as_str() {
            "json" | "JSON" | "txt" | "text" | "" => Ok(()),
            _ => Err(illegal(
                "only the text and json formats are supported on this cluster",
            )),
        },
        Param::ScrollId => {
            *value = t.open(IdKind::Scroll, value)?;
            Ok(())
        }
    }
}

/// `filter_path` (attack18): responses such as `_mapping`, `_settings`, `_alias` and
/// `_stats` are keyed by the upstream's index names, `<P>` included, and the upstream keeps
/// the keys a pattern matches; `a*` (or `-a*`) would answer whether the prefix starts with
/// `a`. Elasticsearch splits the value at commas (each part trimmed, a leading `-` excludes)
/// and each path at `.`; a segment is a pattern when it holds a `*`. Only patterns of stars
/// alone (`*`, `**`), which match every key, are accepted; literal segments pass (matching
/// `<P>name` literally needs the prefix already). The path is split both at every `.` and
/// only at unescaped ones, and every segment of either reading is checked.
fn check_filter_path(value: &str, at: &str) -> Result<(), EdgeError> {
    let java_trim = |s: &str| s.trim_matches(|c: char| c <= ' ').to_string();
    for part in value.split(',') {
        let part = java_trim(part);
        let path = part.strip_prefix('-').unwrap_or(&part);
        // both splittings: at every `.`, and only at unescaped ones (`a\\.*` is the one
        // segment `a.*` upstream)
        let unescaped = path.replace("\\.", "\u{0}");
        let segments = path.split('.').chain(unescaped.split('.'));
        for seg in segments {
            if seg.contains('*') && !seg.chars().all(|c| c == '*') {
                return Err(illegal(format!(
                    "[{at}] segment [{seg}] is not supported on this cluster: a pattern other than [*] or [**] could match part of an index name (use whole names)"
                )));
            }
        }
    }
    Ok(())
}

/// A query component decoded once (`+` is a space), as UTF-8.
pub(crate) fn decode(s: &[u8]) -> Result<String, EdgeError> {
    let out = percent::decode(s, Plus::Space).map_err(|e| illegal(e.reason()))?;
    String::from_utf8(out).map_err(|_| illegal("the query string is not UTF-8 once decoded"))
}

/// A keep-alive in a body (`_search/scroll`'s `scroll`, a search's `pit.keep_alive`),
/// read as the engine and Elasticsearch read it (a string time value, at most
/// `search.max_keep_alive`) and rewritten in canonical form; anything else is refused
/// (issue 25: the edge and the upstream must never keep a context for different times).
pub(super) fn body_keep_alive(v: &mut Value, name: &str) -> Result<(), EdgeError> {
    let Value::String(s) = v else {
        return Err(illegal(format!(
            "Unknown parameter [{name}] in request body or parameter is of the wrong type[{}] ",
            v.token_name()
        )));
    };
    let t = params::parse_time(s, name)?;
    params::check_keep_alive(&t, &params::MAX_KEEP_ALIVE)?;
    *s = t.to_string();
    Ok(())
}

/// Percent-encodes everything but unreserved characters and a few safe delimiters; never
/// `&`, `;`, `=`, `+`, `#` or `%`, which the upstream reads as structure.
fn encode(s: &str, out: &mut Vec<u8>) {
    percent::encode_into(
        s.as_bytes(),
        |b| b.is_ascii_alphanumeric() || b"-._~!$'()*,:@/".contains(&b),
        out,
    );
}
