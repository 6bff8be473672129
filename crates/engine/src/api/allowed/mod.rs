//! The URL parameters of every endpoint, as Elasticsearch 7.10's REST handlers read them,
//! checked once before any handler runs, so that no parameter is ever ignored:
//! - `accepted`: implemented, or without effect on one node (`timeout`, `master_timeout`,
//!   `preference`, `wait_for_active_shards`, `local`...);
//! - `off_only`: Elasticsearch's, accepted when `false` (their default), 400 otherwise;
//! - `unsupported`: Elasticsearch's, not this engine's: 400 "... is not supported by this
//!   engine";
//! - anything else: 400 "request [<path>] contains unrecognized parameter(s): [x] -> did you
//!   mean [y]?", Elasticsearch's message, with its suggestions (Levenshtein similarity above
//!   0.5, best first).
//!
//! Time values (`timeout`, `master_timeout`, `scroll`, `keep_alive`, `search_timeout`) are
//! read here with the edge's reader, so a value Elasticsearch refuses is a 400 even where
//! the parameter has no effect.
//! `pretty`, `human`, `error_trace`, `filter_path` are accepted everywhere, and `format`
//! too (`json` outside `_cat`; other formats are 400). Values are checked by the handlers.
//! `source` (a body sent as a parameter) counts only where the endpoint takes it and the
//! request has no body, and `source_content_type` only with it: Elasticsearch reads them
//! only then, and reports them as unrecognized otherwise.
//! Pure: a route, a method, whether there is a body and the parameters in; a refusal out.

mod table;

pub use table::of;

use super::params::Params;
use super::router::Route;
use crate::error::{EngineError, EngineResult};
use searchgate_core::proto::Method;

/// The parameters of one endpoint and method.
#[derive(Debug, Clone, Copy, Default)]
pub struct Allowed {
    pub accepted: &'static [&'static str],
    pub off_only: &'static [&'static str],
    pub unsupported: &'static [&'static str],
}

const COMMON: &[&str] = &["pretty", "human", "error_trace", "filter_path", "format"];

/// Parameters whose value is a time value wherever they are accepted.
const TIME_VALUES: &[&str] = &[
    "timeout",
    "master_timeout",
    "scroll",
    "keep_alive",
    "search_timeout",
];

/// Lucene's `LevenshteinDistance`: 1 - edits / longer length (in characters), which is
/// strsim's normalised Levenshtein.
fn similarity(a: &str, b: &str) -> f64 {
    strsim::normalized_levenshtein(a, b)
}

/// Elasticsearch's message for unrecognized parameters (sorted, with suggestions).
fn unrecognized(path: &str, invalid: &[&str], candidates: &[&str]) -> String {
    let mut msg = format!(
        "request [{path}] contains unrecognized parameter{}: ",
        if invalid.len() > 1 { "s" } else { "" }
    );
    let parts: Vec<String> = invalid
        .iter()
        .map(|bad| {
            let mut scored: Vec<(f64, &str)> = candidates
                .iter()
                .map(|c| (similarity(bad, c), *c))
                .filter(|(d, _)| *d > 0.5)
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
            let keys: Vec<&str> = scored.iter().map(|(_, c)| *c).collect();
            match keys.as_slice() {
                [] => format!("[{bad}]"),
                [one] => format!("[{bad}] -> did you mean [{one}]?"),
                many => format!("[{bad}] -> did you mean any of [{}]?", many.join(", ")),
            }
        })
        .collect();
    msg.push_str(&parts.join(", "));
    msg
}

/// Checks the parameters of a request to `route`: 400 for unknown ones, for the ones this
/// engine does not implement, and for `off_only` ones set to anything but `false`.
pub fn check(
    route: &Route,
    m: Method,
    path: &str,
    params: &Params,
    has_body: bool,
) -> EngineResult<()> {
    let a = of(route, m);
    let read = |k: &str| match k {
        "source" => !has_body,
        "source_content_type" => !has_body && params.get("source").is_some(),
        _ => true,
    };
    let known = |k: &str| {
        (COMMON.contains(&k)
            || a.accepted.contains(&k)
            || a.off_only.contains(&k)
            || a.unsupported.contains(&k))
            && read(k)
    };
    let mut invalid: Vec<&str> = params
        .0
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !known(k))
        .collect();
    if !invalid.is_empty() {
        invalid.sort_unstable();
        invalid.dedup();
        let candidates: Vec<&str> = COMMON
            .iter()
            .chain(a.accepted)
            .chain(a.off_only)
            .chain(a.unsupported)
            .copied()
            .filter(|c| !invalid.contains(c))
            .collect();
        return Err(EngineError::IllegalArgument(unrecognized(
            path,
            &invalid,
            &candidates,
        )));
    }
    for (k, v) in &params.0 {
        let refused = a.unsupported.contains(&k.as_str())
            || (a.off_only.contains(&k.as_str()) && v != "false");
        if refused {
            return Err(EngineError::IllegalArgument(format!(
                "[{k}={v}] is not supported by this engine"
            )));
        }
    }
    // time values are read (and refused) as Elasticsearch reads them, also where they
    // have no effect on one node: the edge reads them with the same reader
    for (k, v) in &params.0 {
        if TIME_VALUES.contains(&k.as_str()) {
            searchgate_core::params::parse_time(v, k)?;
        }
    }
    let is_cat = matches!(
        route,
        Route::CatIndices(_)
            | Route::CatHealth
            | Route::CatCount(_)
            | Route::CatShards(_)
            | Route::CatAliases(_)
    );
    match params.get("format") {
        Some(f) if !is_cat && f != "json" => Err(EngineError::IllegalArgument(format!(
            "[format={f}] is not supported by this engine: responses are JSON"
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_of(route: Route, m: Method, query: &str) -> Result<(), String> {
        let p = Params::parse(Some(query.as_bytes())).unwrap();
        check(&route, m, "/x", &p, false).map_err(|e| e.body().reason)
    }

    #[test]
    fn source_counts_only_without_a_body() {
        let p = Params::parse(Some(b"source=%7B%7D&source_content_type=application/json")).unwrap();
        let search = Route::Search { index: None };
        assert_eq!(check(&search, Method::Get, "/x", &p, false), Ok(()));
        let with_body = check(&search, Method::Post, "/x", &p, true).map_err(|e| e.body().reason);
        assert_eq!(
            with_body,
            Err("request [/x] contains unrecognized parameters: [source] -> did you mean [_source]?, [source_content_type]".into())
        );
        let p = Params::parse(Some(b"source_content_type=application/json")).unwrap();
        assert!(check(&search, Method::Get, "/x", &p, false).is_err());
        let p = Params::parse(Some(b"source=%7B%7D&source_content_type=application/json")).unwrap();
        assert!(
            check(&Route::CatHealth, Method::Get, "/x", &p, false).is_err(),
            "only where the endpoint reads a body"
        );
    }

    #[test]
    fn unknown_parameters_are_named_with_suggestions() {
        let search = || Route::Search { index: None };
        assert_eq!(check_of(search(), Method::Get, "size=1&pretty"), Ok(()));
        assert_eq!(
            check_of(search(), Method::Get, "sise=1"),
            Err(
                "request [/x] contains unrecognized parameter: [sise] -> did you mean [size]?"
                    .into()
            )
        );
        assert_eq!(
            check_of(search(), Method::Get, "zzz=1&qqq=2"),
            Err("request [/x] contains unrecognized parameters: [qqq], [zzz]".into())
        );
        assert_eq!(
            check_of(Route::Refresh { index: None }, Method::Post, "refresh=true"),
            Err("request [/x] contains unrecognized parameter: [refresh]".into())
        );
    }

    #[test]
    fn unsupported_and_off_only_parameters() {
        let search = || Route::Search { index: None };
        assert!(check_of(search(), Method::Get, "terminate_after=1")
            .unwrap_err()
            .contains("not supported"));
        assert_eq!(check_of(search(), Method::Get, "routing=a"), Ok(()));
        assert_eq!(check_of(search(), Method::Get, "typed_keys=false"), Ok(()));
        assert!(check_of(search(), Method::Get, "typed_keys=true").is_err());
        assert!(check_of(search(), Method::Get, "format=yaml").is_err());
        assert_eq!(check_of(search(), Method::Get, "format=json"), Ok(()));
        assert_eq!(
            check_of(Route::CatHealth, Method::Get, "format=txt"),
            Ok(())
        );
        let count = Route::Count { index: None };
        assert!(check_of(count, Method::Get, "size=1").is_err());
        let msearch = Route::Msearch { index: None };
        assert!(check_of(msearch, Method::Post, "q=a").is_err());
    }

    #[test]
    fn methods_have_their_own_parameters() {
        let idx = || Route::Index("i".into());
        assert_eq!(check_of(idx(), Method::Get, "flat_settings=true"), Ok(()));
        assert!(check_of(idx(), Method::Put, "flat_settings=true").is_err());
        assert_eq!(
            check_of(idx(), Method::Delete, "ignore_unavailable=true"),
            Ok(())
        );
        let doc = || Route::Doc {
            index: "i".into(),
            type_name: None,
            id: "1".into(),
        };
        assert_eq!(check_of(doc(), Method::Get, "realtime=false"), Ok(()));
        assert!(check_of(doc(), Method::Put, "realtime=false").is_err());
        assert!(check_of(doc(), Method::Put, "pipeline=p")
            .unwrap_err()
            .contains("not supported"));
    }

    #[test]
    fn similarity_is_lucenes() {
        assert_eq!(similarity("size", "size"), 1.0);
        assert_eq!(similarity("sise", "size"), 0.75);
        assert_eq!(similarity("abc", "xyz"), 0.0);
    }
}
