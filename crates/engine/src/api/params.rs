//! URI query parameters and path segments: percent-decoding, typed getters (`refresh`,
//! booleans, routing), as Elasticsearch reads them.

use searchgate_core::params;
use searchgate_core::percent::{self, Plus};

use crate::error::{EngineError, EngineResult};
use crate::resolve::Options;
use crate::store::shard::Cond;
use crate::store::RefreshPolicy;

/// Decoded query parameters, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params(pub Vec<(String, String)>);

impl Params {
    /// Parses `a=1&b&c=x%20y`; a bad escape is refused, as Elasticsearch refuses it.
    pub fn parse(query: Option<&[u8]>) -> EngineResult<Params> {
        let pairs = percent::decode_query(query.unwrap_or_default()).map_err(bad_escape)?;
        Ok(Params(pairs))
    }

    /// The last value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A flag (`?pretty`, `?pretty=true`); false when absent or `false`.
    pub fn flag(&self, name: &str) -> bool {
        self.get(name).is_some_and(|v| v != "false")
    }

    /// An optional boolean, read by the edge's reader (`params::parse_bool`): `true`,
    /// `false` or empty (true); whitespace alone leaves the default (`None`); anything else
    /// is Elasticsearch's 400.
    pub fn bool(&self, name: &str) -> EngineResult<Option<bool>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => Ok(params::parse_bool(v)?),
        }
    }

    /// `refresh`: absent/`false` none, `true`/empty now, `wait_for`.
    pub fn refresh(&self) -> EngineResult<RefreshPolicy> {
        match self.get("refresh") {
            None | Some("false") => Ok(RefreshPolicy::None),
            Some("" | "true") => Ok(RefreshPolicy::Immediate),
            Some("wait_for") => Ok(RefreshPolicy::WaitFor),
            Some(v) => Err(EngineError::IllegalArgument(format!(
                "Unknown value for refresh: [{v}]."
            ))),
        }
    }

    /// A non-negative integer parameter.
    pub fn number(&self, name: &str) -> EngineResult<Option<u64>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                EngineError::IllegalArgument(format!(
                    "Failed to parse int parameter [{name}] with value [{v}]"
                ))
            }),
        }
    }

    /// Concurrency control parameters (`if_seq_no`, `if_primary_term`, `version` +
    /// `version_type`).
    pub fn cond(&self) -> EngineResult<Cond> {
        let mut c = Cond {
            if_seq_no: self.number("if_seq_no")?.map(|n| n as i64),
            if_primary_term: self.number("if_primary_term")?,
            external: None,
            require_alias: false,
        };
        if let Some(v) = self.number("version")? {
            match self.get("version_type").unwrap_or("internal") {
                "external" => c.external = Some((v, false)),
                "external_gte" => c.external = Some((v, true)),
                _ => return Err(EngineError::Validation(vec![
                    "internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and `if_primary_term` instead".into(),
                ])),
            }
        }
        if c.if_seq_no.is_some() != c.if_primary_term.is_some() {
            return Err(EngineError::Validation(vec![
                "ifSeqNo is set, but primary term is [0]".into(),
            ]));
        }
        Ok(c)
    }

    /// Refuses a parameter that is not in `allowed` (or the common `pretty`, `human`,
    /// `error_trace`, `filter_path`), as Elasticsearch does: 400 naming it.
    pub fn check(&self, path: &str, allowed: &[&str]) -> EngineResult<()> {
        const COMMON: &[&str] = &["pretty", "human", "error_trace", "filter_path"];
        match self
            .0
            .iter()
            .find(|(k, _)| !allowed.contains(&k.as_str()) && !COMMON.contains(&k.as_str()))
        {
            Some((k, _)) => Err(EngineError::IllegalArgument(format!(
                "request [{path}] contains unrecognized parameter: [{k}]"
            ))),
            None => Ok(()),
        }
    }

    /// How an endpoint resolves index expressions: its defaults (`base`, Elasticsearch's
    /// for that endpoint) with `ignore_unavailable`, `allow_no_indices` and
    /// `expand_wildcards` applied when the request gives them.
    pub fn indices_options(&self, base: Options) -> EngineResult<Options> {
        let mut o = base;
        if let Some(b) = self.bool("ignore_unavailable")? {
            o.ignore_unavailable = b;
        }
        if let Some(b) = self.bool("allow_no_indices")? {
            o.allow_no_indices = b;
        }
        match self.get("expand_wildcards") {
            Some(w) => o.with_expand_wildcards(w),
            None => Ok(o),
        }
    }

    /// Looks a parameter up for the search request parser.
    pub fn lookup(&self) -> impl Fn(&str) -> Option<String> + '_ {
        |k| self.get(k).map(String::from)
    }
}

/// Splits a request path into decoded segments (`/a/b%2Fc/` -> `["a", "b/c"]`); a bad
/// escape is refused.
pub fn segments(path: &[u8]) -> EngineResult<Vec<String>> {
    path.split(|&b| b == b'/')
        .filter(|s| !s.is_empty())
        .map(|s| percent::decode_str(s, Plus::Literal).map_err(bad_escape))
        .collect()
}

fn bad_escape(e: percent::PercentError) -> EngineError {
    EngineError::IllegalArgument(e.reason().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding() {
        let p = Params::parse(Some(b"a=x%20y+z&b=a+b&c=%e2%82%ac")).unwrap();
        assert_eq!(
            (p.get("a"), p.get("b"), p.get("c")),
            (Some("x y z"), Some("a b"), Some("€"))
        );
        for bad in [&b"q=100%"[..], b"q=%zz", b"%4"] {
            assert_eq!(Params::parse(Some(bad)).unwrap_err().status(), 400);
        }
        assert_eq!(
            segments(b"/idx/_doc/a%2Fb+c/").unwrap(),
            vec!["idx", "_doc", "a/b+c"]
        );
        assert!(segments(b"/").unwrap().is_empty());
        assert_eq!(segments(b"/idx/_doc/a%").unwrap_err().status(), 400);
    }

    #[test]
    fn params() {
        let p = Params::parse(Some(b"pretty&refresh=wait_for&q=title:fox&size=5&x=1&x=2")).unwrap();
        assert!(p.flag("pretty"));
        assert_eq!(p.refresh().unwrap(), RefreshPolicy::WaitFor);
        assert_eq!(p.get("q"), Some("title:fox"));
        assert_eq!(p.number("size").unwrap(), Some(5));
        assert_eq!(p.get("x"), Some("2"));
        assert!(Params::parse(Some(b"refresh=maybe"))
            .unwrap()
            .refresh()
            .is_err());
        assert!(Params::parse(Some(b"size=-1"))
            .unwrap()
            .number("size")
            .is_err());
        assert_eq!(
            Params::parse(Some(b"refresh")).unwrap().refresh().unwrap(),
            RefreshPolicy::Immediate
        );
        assert!(!Params::parse(None).unwrap().flag("pretty"));
    }

    #[test]
    fn indices_options_over_the_endpoint_defaults() {
        let base = Options::default();
        let o = Params::parse(Some(
            b"ignore_unavailable=true&expand_wildcards=open,closed",
        ))
        .unwrap()
        .indices_options(base)
        .unwrap();
        assert!(o.ignore_unavailable && o.allow_no_indices && o.expand_open && o.expand_closed);
        let o = Params::parse(Some(b"allow_no_indices=false"))
            .unwrap()
            .indices_options(base)
            .unwrap();
        assert!(!o.allow_no_indices && o.expand_open && !o.expand_closed);
        assert!(Params::parse(Some(b"allow_no_indices=maybe"))
            .unwrap()
            .indices_options(base)
            .is_err());
        assert!(Params::parse(Some(b"expand_wildcards=everything"))
            .unwrap()
            .indices_options(base)
            .is_err());
    }

    #[test]
    fn concurrency_params() {
        let c = Params::parse(Some(b"if_seq_no=3&if_primary_term=1"))
            .unwrap()
            .cond()
            .unwrap();
        assert_eq!((c.if_seq_no, c.if_primary_term), (Some(3), Some(1)));
        let c = Params::parse(Some(b"version=7&version_type=external"))
            .unwrap()
            .cond()
            .unwrap();
        assert_eq!(c.external, Some((7, false)));
        assert!(Params::parse(Some(b"version=7")).unwrap().cond().is_err());
        assert!(Params::parse(Some(b"if_seq_no=3")).unwrap().cond().is_err());
    }
}
