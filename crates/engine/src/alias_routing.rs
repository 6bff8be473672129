//! Routing values of aliases and searches, as Elasticsearch 7.10 reads them:
//! - an alias definition's `routing` sets both `index_routing` and `search_routing`
//!   (the specific keys win); they are stored and shown as those two keys; an
//!   `index_routing` with more than one value is refused when the alias is defined;
//! - a write through an alias takes the alias's `index_routing` (a request routing that
//!   differs from it is refused; `Metadata#resolveWriteIndexRouting`);
//! - a search takes, per concrete index, the request's `routing` values for an index named
//!   directly or through an alias without `search_routing`, and an alias's `search_routing`
//!   values intersected with the request's for an index reached through it
//!   (`IndexNameExpressionResolver#resolveSearchRouting`). An index without values is
//!   searched on every shard; as in 7.10, that includes an index whose intersection came
//!   out empty.
//!
//! Pure: definitions, names and the request's routing in; values out. Must not touch:
//! shards (`store::routing` hashes values to shards), I/O.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::error::{EngineError, EngineResult};
use crate::names::wildcard_match;
use crate::resolve::IndexEntry;

/// A routing value list as Elasticsearch splits it (`Strings#splitStringByCommaToArray`).
pub fn values(list: &str) -> BTreeSet<String> {
    searchgate_core::params::split_commas(list)
        .into_iter()
        .map(String::from)
        .collect()
}

fn routing_text(key: &str, v: &Value) -> EngineResult<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(EngineError::Parsing(format!(
            "[{key}] must be a string, got [{v}]"
        ))),
    }
}

/// Reads the routing keys of an alias definition into `def` (as `index_routing` and
/// `search_routing`), refusing a multi-valued index routing as 7.10's `AliasValidator`.
pub fn read_definition_routing(
    alias: &str,
    body: &Map<String, Value>,
    def: &mut Map<String, Value>,
) -> EngineResult<()> {
    let mut index = None;
    let mut search = None;
    if let Some(v) = body.get("routing") {
        let r = routing_text("routing", v)?;
        index = Some(r.clone());
        search = Some(r);
    }
    if let Some(v) = body.get("index_routing") {
        index = Some(routing_text("index_routing", v)?);
    }
    if let Some(v) = body.get("search_routing") {
        search = Some(routing_text("search_routing", v)?);
    }
    if let Some(r) = index {
        if r.contains(',') {
            return Err(EngineError::IllegalArgument(format!(
                "alias [{alias}] has several index routing values associated with it"
            )));
        }
        def.insert("index_routing".into(), Value::String(r));
    }
    if let Some(r) = search {
        def.insert("search_routing".into(), Value::String(r));
    }
    Ok(())
}

/// Normalises the routing keys of a whole `aliases` object (index creation, templates).
pub fn normalise_aliases(aliases: &mut Map<String, Value>) -> EngineResult<()> {
    for (name, def) in aliases.iter_mut() {
        let Some(obj) = def.as_object_mut() else {
            continue;
        };
        let body = obj.clone();
        for k in ["routing", "index_routing", "search_routing"] {
            obj.remove(k);
        }
        read_definition_routing(name, &body, obj)?;
    }
    Ok(())
}

/// The routing of a write to `name` (an index, or an alias whose write index is the
/// target): the alias's `index_routing` when it has one, else the request's.
pub fn write_routing(
    universe: &[IndexEntry],
    name: &str,
    target: &str,
    routing: Option<&str>,
) -> EngineResult<Option<String>> {
    if universe.iter().any(|i| i.name == name) {
        return Ok(routing.map(String::from));
    }
    let def = universe
        .iter()
        .find(|i| i.name == target)
        .and_then(|i| i.aliases.get(name));
    let Some(alias_routing) = def
        .and_then(|d| d.get("index_routing"))
        .and_then(Value::as_str)
    else {
        return Ok(routing.map(String::from));
    };
    if alias_routing.contains(',') {
        return Err(EngineError::IllegalArgument(format!(
            "index/alias [{name}] provided with routing value [{alias_routing}] that resolved to several routing values, rejecting operation"
        )));
    }
    match routing {
        Some(r) if r != alias_routing => Err(EngineError::IllegalArgument(format!(
            "Alias [{name}] has index routing associated with it [{alias_routing}], and was provided with routing value [{r}], rejecting operation"
        ))),
        _ => Ok(Some(alias_routing.to_string())),
    }
}

/// What a name of an expression is.
enum Named<'a> {
    Index(&'a str),
    Alias(&'a str),
}

/// The names an expression's parts stand for: names as they are; wildcards expanded to
/// indices (an alias a wildcard matches stands for its indices, without its routing, as
/// Elasticsearch expands wildcards there), `-` exclusions applied once a wildcard was seen.
fn named<'a>(expr: &str, universe: &'a [IndexEntry]) -> Vec<Named<'a>> {
    let parts = searchgate_core::params::split_commas(expr);
    let parts = if parts.is_empty() || parts == ["_all"] {
        vec!["*"]
    } else {
        parts
    };
    let mut out: Vec<Named<'a>> = Vec::new();
    let mut wildcard = false;
    for p in parts {
        if let Some(ex) = p.strip_prefix('-').filter(|_| wildcard) {
            out.retain(|n| match n {
                Named::Index(s) | Named::Alias(s) => !wildcard_match(ex, s),
            });
            continue;
        }
        if p == "_all" || p.contains('*') {
            wildcard = true;
            for i in universe.iter().filter(|i| i.open) {
                let shown = !i.hidden || p.starts_with('.');
                let by_alias = i.aliases.keys().any(|a| wildcard_match(p, a));
                if (shown && wildcard_match(p, &i.name)) || by_alias {
                    out.push(Named::Index(&i.name));
                }
            }
        } else if let Some(i) = universe.iter().find(|i| i.name == p) {
            out.push(Named::Index(&i.name));
        } else if let Some((a, _)) = universe.iter().find_map(|i| i.aliases.get_key_value(p)) {
            out.push(Named::Alias(a));
        }
    }
    out
}

/// The routing values of a search over `expr` by concrete index (an index not listed is
/// searched on every shard); `routing` is the request's `routing` parameter.
pub fn search_routing(
    expr: &str,
    universe: &[IndexEntry],
    routing: Option<&str>,
) -> BTreeMap<String, BTreeSet<String>> {
    let param = routing.map(values);
    let mut routings: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // indices named directly or through an alias without search routing
    let mut norouting: BTreeSet<String> = BTreeSet::new();
    for n in named(expr, universe) {
        let members: Vec<(&str, Option<&str>)> = match n {
            Named::Index(i) => vec![(i, None)],
            Named::Alias(a) => universe
                .iter()
                .filter_map(|i| {
                    let def = i.aliases.get(a)?;
                    Some((
                        i.name.as_str(),
                        def.get("search_routing").and_then(Value::as_str),
                    ))
                })
                .collect(),
        };
        for (index, search) in members {
            if norouting.contains(index) {
                continue;
            }
            match search {
                Some(search) => {
                    let r = routings.entry(index.to_string()).or_default();
                    r.extend(values(search));
                    if let Some(p) = &param {
                        r.retain(|v| p.contains(v));
                    }
                    if r.is_empty() {
                        routings.remove(index);
                    }
                }
                None => {
                    norouting.insert(index.to_string());
                    match &param {
                        Some(p) => routings.insert(index.to_string(), p.clone()),
                        None => routings.remove(index),
                    };
                }
            }
        }
    }
    routings
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(name: &str, aliases: Value) -> IndexEntry {
        IndexEntry {
            name: name.into(),
            open: true,
            hidden: false,
            aliases: aliases.as_object().cloned().unwrap_or_default(),
        }
    }

    fn set(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn definitions_split_routing_into_index_and_search_routing() {
        let mut def = Map::new();
        let body = json!({"routing": "1", "search_routing": "1,2"});
        read_definition_routing("a", body.as_object().unwrap(), &mut def).unwrap();
        assert_eq!(
            Value::Object(def),
            json!({"index_routing": "1", "search_routing": "1,2"})
        );
        let mut def = Map::new();
        let body = json!({"index_routing": "1,2"});
        let e = read_definition_routing("a", body.as_object().unwrap(), &mut def).unwrap_err();
        assert_eq!(e.body().kind, "illegal_argument_exception");
        assert!(e.body().reason.contains("several index routing values"));
        let mut def = Map::new();
        let body = json!({"routing": 5});
        read_definition_routing("a", body.as_object().unwrap(), &mut def).unwrap();
        assert_eq!(def["index_routing"], json!("5"));
        let body = json!({"routing": {"x": 1}});
        assert!(read_definition_routing("a", body.as_object().unwrap(), &mut Map::new()).is_err());
    }

    #[test]
    fn writes_through_an_alias_take_its_index_routing() {
        let u = vec![
            entry("i", json!({"a": {"index_routing": "r"}, "b": {}})),
            entry("j", json!({})),
        ];
        assert_eq!(write_routing(&u, "a", "i", None).unwrap(), Some("r".into()));
        assert_eq!(
            write_routing(&u, "a", "i", Some("r")).unwrap(),
            Some("r".into())
        );
        let e = write_routing(&u, "a", "i", Some("x")).unwrap_err();
        assert!(e
            .body()
            .reason
            .contains("has index routing associated with it [r]"));
        assert_eq!(
            write_routing(&u, "b", "i", Some("x")).unwrap(),
            Some("x".into())
        );
        assert_eq!(
            write_routing(&u, "i", "i", Some("x")).unwrap(),
            Some("x".into())
        );
        assert_eq!(write_routing(&u, "j", "j", None).unwrap(), None);
    }

    /// The table of `resolveSearchRouting` cases (Elasticsearch 7.10's behaviour).
    #[test]
    fn search_routing_as_elasticsearch_resolves_it() {
        let u = vec![
            entry("i", json!({"ra": {"search_routing": "1,2"}, "plain": {}})),
            entry("j", json!({"ra": {"search_routing": "3"}})),
            entry("k", json!({})),
        ];
        type Case = (
            &'static str,
            Option<&'static str>,
            Vec<(&'static str, Vec<&'static str>)>,
        );
        let cases: &[Case] = &[
            ("i", None, vec![]),
            ("i", Some("x,y"), vec![("i", vec!["x", "y"])]),
            ("ra", None, vec![("i", vec!["1", "2"]), ("j", vec!["3"])]),
            ("ra", Some("2,3"), vec![("i", vec!["2"]), ("j", vec!["3"])]),
            // an empty intersection searches every shard, as 7.10 does
            ("ra", Some("9"), vec![]),
            // named directly too: the direct name wins
            ("ra,i", None, vec![("j", vec!["3"])]),
            ("i,ra", None, vec![("j", vec!["3"])]),
            ("plain", Some("5"), vec![("i", vec!["5"])]),
            (
                "_all",
                Some("5"),
                vec![("i", vec!["5"]), ("j", vec!["5"]), ("k", vec!["5"])],
            ),
            // a wildcard stands for indices: aliases it matches bring no routing
            ("r*", None, vec![]),
            ("r*", Some("5"), vec![("i", vec!["5"]), ("j", vec!["5"])]),
        ];
        for (expr, routing, want) in cases {
            let got = search_routing(expr, &u, *routing);
            let want: BTreeMap<String, BTreeSet<String>> =
                want.iter().map(|(i, v)| (i.to_string(), set(v))).collect();
            assert_eq!(got, want, "{expr} {routing:?}");
        }
    }
}
