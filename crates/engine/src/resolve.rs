//! Index expressions, resolved as Elasticsearch 7.10's `IndexNameExpressionResolver` does:
//! a comma list of names, aliases and `*` patterns; `_all`, `*` or nothing for every open
//! index; `-pattern` removes what earlier parts added, once a wildcard was seen (before
//! that, `-x` is a name); an alias stands for its indices (with its filter, if any);
//! wildcards match index and alias names and, as `expand_wildcards` says, open and/or
//! closed indices (hidden ones only when asked, or when the pattern starts with `.` and the
//! index name too). `ignore_unavailable` skips missing (and forbidden closed) names,
//! `allow_no_indices` accepts an expression that matches nothing.
//!
//! Pure: the universe (indices, aliases) comes in, the concrete indices go out. The edge's
//! differential tests call [`resolve_expression`] to ask what the engine would touch.

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::{EngineError, EngineResult};
use super::names::wildcard_match;

/// One index as the resolver sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexEntry {
    pub name: String,
    pub open: bool,
    /// `index.hidden`: wildcards skip it unless `expand_wildcards` includes `hidden`.
    pub hidden: bool,
    /// Its aliases: name -> definition (`filter`, `is_write_index`, routing...).
    pub aliases: serde_json::Map<String, Value>,
}

/// How an expression treats what it does not find (`ignore_unavailable`,
/// `allow_no_indices`) and whether closed indices may be named (`forbid_closed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub ignore_unavailable: bool,
    pub allow_no_indices: bool,
    pub forbid_closed: bool,
    /// Wildcards match open indices (`expand_wildcards` has `open` or `all`).
    pub expand_open: bool,
    /// Wildcards also match closed indices (`expand_wildcards=all`, as `_cat` does).
    pub expand_closed: bool,
    /// Wildcards also match hidden indices.
    pub expand_hidden: bool,
    /// Names only concrete indices (Elasticsearch's `ignoreAliases`, index deletion): a
    /// name that is an alias is refused (skipped with `ignore_unavailable`), and
    /// wildcards do not match aliases.
    pub ignore_aliases: bool,
}

impl Default for Options {
    /// Elasticsearch's `strictExpandOpenAndForbidClosed`, the default of searches.
    fn default() -> Self {
        Options {
            ignore_unavailable: false,
            allow_no_indices: true,
            forbid_closed: true,
            expand_open: true,
            expand_closed: false,
            expand_hidden: false,
            ignore_aliases: false,
        }
    }
}

impl Options {
    /// These options with `expand_wildcards` (a comma list of `open`, `closed`, `hidden`,
    /// `none`, `all`) in place of the endpoint's default expansion.
    pub fn with_expand_wildcards(mut self, value: &str) -> EngineResult<Options> {
        let (mut open, mut closed, mut hidden) = (false, false, false);
        for w in value.split(',').map(str::trim) {
            match w {
                "open" => open = true,
                "closed" => closed = true,
                "hidden" => hidden = true,
                "none" => {}
                "all" => (open, closed, hidden) = (true, true, true),
                other => {
                    return Err(EngineError::IllegalArgument(format!(
                        "No enum constant org.elasticsearch.action.support.IndicesOptions.WildcardStates.{}",
                        other.to_ascii_uppercase()
                    )))
                }
            }
        }
        self.expand_open = open;
        self.expand_closed = closed;
        self.expand_hidden = hidden;
        Ok(self)
    }
}

/// A concrete index an expression touches, with the alias filters it is reached through
/// (`None`: reached without a filter, so unfiltered).
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub index: String,
    pub filters: Option<Vec<Value>>,
}

/// The `index_closed_exception` of a closed index named explicitly.
pub fn closed(name: &str) -> EngineError {
    EngineError::IndexClosed(name.to_string())
}

/// Names touched by one part (index names with their filter, None = unfiltered).
type Part = Vec<(String, Option<Value>)>;

fn alias_members(universe: &[IndexEntry], alias: &str) -> Part {
    universe
        .iter()
        .filter_map(|i| {
            let def = i.aliases.get(alias)?;
            let filter = def.get("filter").filter(|f| !f.is_null()).cloned();
            Some((i.name.clone(), filter))
        })
        .collect()
}

fn wildcard_part(universe: &[IndexEntry], pattern: &str, opts: Options) -> Part {
    let mut out: Part = Vec::new();
    let visible = |i: &IndexEntry| {
        let state = if i.open {
            opts.expand_open
        } else {
            opts.expand_closed
        };
        // a hidden index is matched when asked, or by a `.` pattern when its name has a `.`
        let shown = !i.hidden
            || opts.expand_hidden
            || (pattern.starts_with('.') && i.name.starts_with('.'));
        state && shown
    };
    for i in universe.iter().filter(|i| visible(i)) {
        if wildcard_match(pattern, &i.name) {
            out.push((i.name.clone(), None));
        }
        for (alias, def) in i.aliases.iter().filter(|_| !opts.ignore_aliases) {
            if wildcard_match(pattern, alias) {
                let filter = def.get("filter").filter(|f| !f.is_null()).cloned();
                out.push((i.name.clone(), filter));
            }
        }
    }
    out
}

fn explicit_part(universe: &[IndexEntry], name: &str, opts: Options) -> EngineResult<Part> {
    if let Some(i) = universe.iter().find(|i| i.name == name) {
        if !i.open && opts.forbid_closed {
            if opts.ignore_unavailable {
                return Ok(vec![]);
            }
            return Err(closed(name));
        }
        return Ok(vec![(name.to_string(), None)]);
    }
    let members = alias_members(universe, name);
    if members.is_empty() || (opts.ignore_aliases && opts.ignore_unavailable) {
        if opts.ignore_unavailable {
            return Ok(vec![]);
        }
        return Err(EngineError::IndexNotFound(name.to_string()));
    }
    if opts.ignore_aliases {
        return Err(EngineError::IllegalArgument(format!(
            "The provided expression [{name}] matches an alias, specify the corresponding concrete indices instead."
        )));
    }
    Ok(members
        .into_iter()
        .filter(|(n, _)| {
            universe
                .iter()
                .any(|i| &i.name == n && (i.open || !opts.forbid_closed))
        })
        .collect())
}

/// Resolves `expr` against `universe`; concrete indices in name order.
pub fn resolve_expression(
    expr: &str,
    universe: &[IndexEntry],
    opts: Options,
) -> EngineResult<Vec<Resolved>> {
    // split as Elasticsearch splits a list (`params::split_commas`: parts not trimmed,
    // trailing empty parts dropped); no part at all, or `_all` alone, is every index
    let listed = searchgate_core::params::split_commas(expr);
    let parts: Vec<&str> = if listed.is_empty() || listed == ["_all"] {
        vec!["*"]
    } else {
        listed
    };
    let mut acc: BTreeMap<String, Option<Vec<Value>>> = BTreeMap::new();
    let mut wildcard_seen = false;
    for p in parts {
        if p.is_empty() {
            return Err(EngineError::IndexNotFound(p.to_string()));
        }
        if let Some(ex) = p.strip_prefix('-').filter(|_| wildcard_seen) {
            acc.retain(|n, _| !wildcard_match(ex, n));
            continue;
        }
        let touched = if p == "_all" || p.contains('*') {
            wildcard_seen = true;
            let t = wildcard_part(universe, p, opts);
            if t.is_empty() && !opts.allow_no_indices {
                return Err(EngineError::IndexNotFound(p.to_string()));
            }
            t
        } else {
            explicit_part(universe, p, opts)?
        };
        for (name, filter) in touched {
            let slot = acc.entry(name).or_insert_with(|| Some(Vec::new()));
            match (filter, slot.as_mut()) {
                (Some(f), Some(list)) => list.push(f),
                (None, _) => *slot = None,
                (Some(_), None) => {}
            }
        }
    }
    if opts.forbid_closed && opts.expand_closed {
        // closed indices a wildcard reached: refused, or skipped with ignore_unavailable
        let closed_names: Vec<String> = acc
            .keys()
            .filter(|n| universe.iter().any(|i| &i.name == *n && !i.open))
            .cloned()
            .collect();
        if let Some(first) = closed_names.first() {
            if !opts.ignore_unavailable {
                return Err(closed(first));
            }
            closed_names.iter().for_each(|n| {
                acc.remove(n);
            });
        }
    }
    if acc.is_empty() && !opts.allow_no_indices {
        return Err(EngineError::IndexNotFound(expr.to_string()));
    }
    Ok(acc
        .into_iter()
        .map(|(index, filters)| Resolved {
            // an index reached only through filtered aliases: any of their filters
            filters: filters.filter(|f| !f.is_empty()),
            index,
        })
        .collect())
}

/// The index a write to `name` goes to: the index itself, or the write index of the alias
/// `name` (its `is_write_index`, or its only index); None when `name` is neither.
pub fn write_target(universe: &[IndexEntry], name: &str) -> EngineResult<Option<String>> {
    if universe.iter().any(|i| i.name == name) {
        return Ok(Some(name.to_string()));
    }
    let members: Vec<(&IndexEntry, &Value)> = universe
        .iter()
        .filter_map(|i| i.aliases.get(name).map(|d| (i, d)))
        .collect();
    if members.is_empty() {
        return Ok(None);
    }
    let flag = |d: &Value| d.get("is_write_index").and_then(Value::as_bool);
    if let Some((i, _)) = members.iter().find(|(_, d)| flag(d) == Some(true)) {
        return Ok(Some(i.name.clone()));
    }
    if let [(i, d)] = members.as_slice() {
        if flag(d) != Some(false) {
            return Ok(Some(i.name.clone()));
        }
    }
    Err(EngineError::IllegalArgument(format!(
        "no write index is defined for alias [{name}]. The write index may be explicitly disabled using is_write_index=false or the alias points to multiple indices without one being designated as a write index"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn idx(name: &str, open: bool, aliases: Value) -> IndexEntry {
        IndexEntry {
            name: name.into(),
            open,
            hidden: false,
            aliases: aliases.as_object().cloned().unwrap_or_default(),
        }
    }

    fn universe() -> Vec<IndexEntry> {
        vec![
            idx(
                "logs-1",
                true,
                json!({"logs": {}, "errors": {"filter": {"term": {"level": "error"}}}}),
            ),
            idx("logs-2", true, json!({"logs": {"is_write_index": true}})),
            idx("books", true, json!({})),
            idx("old", false, json!({"logs": {}})),
        ]
    }

    fn names(expr: &str, opts: Options) -> Result<Vec<String>, String> {
        resolve_expression(expr, &universe(), opts)
            .map(|v| v.into_iter().map(|r| r.index).collect())
            .map_err(|e| e.body().kind)
    }

    #[test]
    fn expressions_as_elasticsearch_7_10() {
        let o = Options::default();
        let table: &[(&str, Result<Vec<&str>, &str>)] = &[
            ("books", Ok(vec!["books"])),
            ("_all", Ok(vec!["books", "logs-1", "logs-2"])),
            ("", Ok(vec!["books", "logs-1", "logs-2"])),
            ("*", Ok(vec!["books", "logs-1", "logs-2"])),
            ("logs-*", Ok(vec!["logs-1", "logs-2"])),
            ("logs-*,-logs-2", Ok(vec!["logs-1"])),
            ("-logs-2", Err("index_not_found_exception")),
            ("logs", Ok(vec!["logs-1", "logs-2"])),
            ("err*", Ok(vec!["logs-1"])),
            ("missing", Err("index_not_found_exception")),
            ("books,missing", Err("index_not_found_exception")),
            ("old", Err("index_closed_exception")),
            ("o*", Ok(vec![])),
            ("books,,logs-1", Err("index_not_found_exception")),
        ];
        for (expr, want) in table {
            let want = want
                .clone()
                .map(|v| v.into_iter().map(String::from).collect());
            assert_eq!(names(expr, o), want.map_err(String::from), "{expr}");
        }
        let lenient = Options {
            ignore_unavailable: true,
            ..o
        };
        assert_eq!(
            names("books,missing,old", lenient),
            Ok(vec!["books".into()])
        );
        let strict = Options {
            allow_no_indices: false,
            ..o
        };
        assert_eq!(names("o*", strict), Err("index_not_found_exception".into()));
    }

    #[test]
    fn expand_wildcards_and_hidden_indices() {
        let mut u = universe();
        u.push(IndexEntry {
            hidden: true,
            ..idx(".secret", true, json!({}))
        });
        u.push(IndexEntry {
            hidden: true,
            ..idx("shadow", true, json!({}))
        });
        let with = |w: &str| Options::default().with_expand_wildcards(w).unwrap();
        let run = |expr: &str, o: Options| -> Result<Vec<String>, String> {
            resolve_expression(expr, &u, o)
                .map(|v| v.into_iter().map(|r| r.index).collect())
                .map_err(|e| e.body().kind)
        };
        let lenient = |o: Options| Options {
            ignore_unavailable: true,
            ..o
        };
        let no_forbid = |o: Options| Options {
            forbid_closed: false,
            ..o
        };
        type Case<'a> = (&'a str, Options, Result<Vec<&'a str>, &'a str>);
        let table: Vec<Case> = vec![
            ("*", with("open"), Ok(vec!["books", "logs-1", "logs-2"])),
            ("*", no_forbid(with("closed")), Ok(vec!["old"])),
            ("*", with("closed"), Err("index_closed_exception")),
            (
                "*",
                lenient(with("all")),
                Ok(vec![".secret", "books", "logs-1", "logs-2", "shadow"]),
            ),
            (
                "*",
                with("open,hidden"),
                Ok(vec![".secret", "books", "logs-1", "logs-2", "shadow"]),
            ),
            ("*", with("none"), Ok(vec![])),
            (".s*", with("open"), Ok(vec![".secret"])),
            ("sh*", with("open"), Ok(vec![])),
            ("shadow", with("none"), Ok(vec!["shadow"])),
            ("o*", no_forbid(with("open,closed")), Ok(vec!["old"])),
        ];
        for (expr, o, want) in table {
            let want = want.map(|v| v.into_iter().map(String::from).collect());
            assert_eq!(run(expr, o), want.map_err(String::from), "{expr} {o:?}");
        }
        let e = Options::default()
            .with_expand_wildcards("opne")
            .unwrap_err();
        assert_eq!(e.status(), 400);
    }

    #[test]
    fn alias_filters_apply_only_without_direct_access() {
        let u = universe();
        let r = resolve_expression("errors", &u, Options::default()).unwrap();
        assert_eq!(
            r[0].filters,
            Some(vec![json!({"term": {"level": "error"}})])
        );
        let r = resolve_expression("errors,logs-1", &u, Options::default()).unwrap();
        assert_eq!(r[0].filters, None);
    }

    // issue 25: a list is split as Elasticsearch splits it (the edge's reading of lists)
    #[test]
    fn lists_split_as_elasticsearch() {
        let o = Options::default();
        assert_eq!(names("books,", o), Ok(vec!["books".to_string()]));
        assert_eq!(names(",", o).unwrap().len(), 3, "no part: every open index");
        assert!(names(" books", o).is_err(), "parts are not trimmed");
        assert!(
            names("books,,logs-1", o).is_err(),
            "an empty part in the middle"
        );
    }

    // issue 25 #5: index deletion names concrete indices only, as Elasticsearch 7.10
    #[test]
    fn aliases_ignored_where_only_indices_count() {
        let u = universe();
        let o = Options {
            ignore_aliases: true,
            ..Options::default()
        };
        let e = resolve_expression("logs", &u, o).unwrap_err().body();
        assert_eq!(
            (e.status, e.kind.as_str()),
            (400, "illegal_argument_exception")
        );
        assert_eq!(
            e.reason,
            "The provided expression [logs] matches an alias, specify the corresponding concrete indices instead."
        );
        let lenient = Options {
            ignore_unavailable: true,
            ..o
        };
        assert!(resolve_expression("logs", &u, lenient).unwrap().is_empty());
        // a wildcard matches index names, never aliases
        assert_eq!(names("error*", o), Ok(vec![]));
        assert_eq!(names("books", o), Ok(vec!["books".to_string()]));
    }

    #[test]
    fn write_targets() {
        let u = universe();
        assert_eq!(write_target(&u, "books").unwrap(), Some("books".into()));
        assert_eq!(write_target(&u, "logs").unwrap(), Some("logs-2".into()));
        assert_eq!(write_target(&u, "errors").unwrap(), Some("logs-1".into()));
        assert_eq!(write_target(&u, "nope").unwrap(), None);
        let two = vec![
            idx("a", true, json!({"x": {}})),
            idx("b", true, json!({"x": {}})),
        ];
        assert_eq!(write_target(&two, "x").unwrap_err().status(), 400);
    }
}
