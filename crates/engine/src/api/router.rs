//! Routing: request path segments -> endpoint, and the methods each endpoint allows
//! (a known path with another method is 405, an unknown path 400, as Elasticsearch).

use searchgate_core::proto::Method;

/// An endpoint with its path parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Root,
    CatIndices(Option<String>),
    CatHealth,
    CatCount(Option<String>),
    CatShards(Option<String>),
    ClusterHealth(Option<String>),
    Bulk {
        index: Option<String>,
        type_name: Option<String>,
    },
    Search {
        index: Option<String>,
    },
    /// `_search/scroll[/<id>]`: next page (GET, POST) or clear (DELETE).
    Scroll {
        id: Option<String>,
    },
    Count {
        index: Option<String>,
    },
    Msearch {
        index: Option<String>,
    },
    Mget {
        index: Option<String>,
    },
    Refresh {
        index: Option<String>,
    },
    Mapping {
        index: Option<String>,
        type_name: Option<String>,
    },
    Settings {
        index: Option<String>,
    },
    Index(String),
    DocAuto {
        index: String,
        type_name: Option<String>,
    },
    Doc {
        index: String,
        type_name: Option<String>,
        id: String,
    },
    Create {
        index: String,
        type_name: Option<String>,
        id: String,
    },
    Update {
        index: String,
        type_name: Option<String>,
        id: String,
    },
    Source {
        index: String,
        id: String,
    },
    Template {
        name: Option<String>,
        composable: bool,
    },
    /// `_component_template[/<name>]`.
    ComponentTemplate {
        name: Option<String>,
    },
    /// `[<index>/]_alias[/<name>]` (and `_aliases` with an index).
    Alias {
        index: Option<String>,
        name: Option<String>,
    },
    /// `POST /_aliases` (actions) and `GET /_aliases`.
    Aliases,
    /// `POST /<index>/_close` (`open: false`) and `_open`.
    OpenClose {
        index: String,
        open: bool,
    },
    Stats {
        index: Option<String>,
        metric: Option<String>,
    },
    ResolveIndex(String),
    FieldCaps {
        index: Option<String>,
    },
    Flush {
        index: Option<String>,
    },
    ClusterSettings,
    /// `POST /<index>/_pit` (open) and `DELETE /_pit` (close).
    Pit {
        index: Option<String>,
    },
    /// OpenSearch's form: `POST /<index>/_search/point_in_time` (open) and
    /// `DELETE /_search/point_in_time` (close by `pit_id`).
    OsPit {
        index: Option<String>,
    },
    /// `GET /_search/point_in_time/_all` (list) and `DELETE` (close every one).
    OsPitAll,
    DeleteByQuery(String),
    UpdateByQuery(String),
    Reindex,
    CatAliases(Option<String>),
}

use Method::*;

impl Route {
    /// The methods this endpoint answers.
    pub fn methods(&self) -> &'static [Method] {
        match self {
            Route::Root => &[Get, Head],
            Route::CatIndices(_)
            | Route::CatHealth
            | Route::CatCount(_)
            | Route::CatShards(_)
            | Route::ClusterHealth(_) => &[Get, Head],
            Route::Bulk { .. } => &[Post, Put],
            Route::Search { .. }
            | Route::Count { .. }
            | Route::Msearch { .. }
            | Route::Mget { .. } => &[Get, Post],
            Route::Refresh { .. } => &[Get, Post],
            Route::Scroll { .. } => &[Get, Post, Delete],
            Route::Mapping { index: Some(_), .. } => &[Get, Head, Put, Post],
            Route::Mapping { .. } => &[Get, Head],
            Route::Settings { index: Some(_) } => &[Get, Put],
            Route::Settings { .. } => &[Get],
            Route::Index(_) => &[Get, Head, Put, Delete],
            Route::DocAuto { .. } => &[Post],
            Route::Doc { .. } => &[Get, Head, Put, Post, Delete],
            Route::Create { .. } => &[Put, Post],
            Route::Update { .. } => &[Post],
            Route::Source { .. } => &[Get, Head],
            Route::Template { name: Some(_), .. } => &[Get, Head, Put, Post, Delete],
            Route::Template { .. } => &[Get, Head],
            Route::ComponentTemplate { name: Some(_) } => &[Get, Head, Put, Post, Delete],
            Route::ComponentTemplate { name: None } => &[Get, Head],
            Route::Alias {
                index: Some(_),
                name: Some(_),
            } => &[Get, Head, Put, Post, Delete],
            Route::Alias { .. } => &[Get, Head],
            Route::Aliases => &[Get, Post],
            Route::OpenClose { .. } => &[Post],
            Route::Stats { .. } | Route::ResolveIndex(_) | Route::CatAliases(_) => &[Get],
            Route::FieldCaps { .. } | Route::Flush { .. } => &[Get, Post],
            Route::ClusterSettings => &[Get, Put],
            Route::Pit { index: Some(_) } => &[Post],
            Route::Pit { index: None } => &[Delete],
            Route::OsPit { index: Some(_) } => &[Post],
            Route::OsPit { index: None } => &[Delete],
            Route::OsPitAll => &[Get, Delete],
            Route::DeleteByQuery(_) | Route::UpdateByQuery(_) | Route::Reindex => &[Post],
        }
    }
}

/// The name of a method for messages and `Allow`.
pub fn method_name(m: Method) -> &'static str {
    match m {
        Get => "GET",
        Head => "HEAD",
        Post => "POST",
        Put => "PUT",
        Delete => "DELETE",
        Options => "OPTIONS",
        Patch => "PATCH",
        Other => "OTHER",
    }
}

fn opt(s: &str) -> Option<String> {
    Some(s.to_string())
}

/// Finds the endpoint of decoded path segments.
pub fn route(segs: &[String]) -> Option<Route> {
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    Some(match s.as_slice() {
        [] => Route::Root,
        ["_cat", "indices"] => Route::CatIndices(None),
        ["_cat", "indices", p] => Route::CatIndices(opt(p)),
        ["_cat", "health"] => Route::CatHealth,
        ["_cat", "count"] => Route::CatCount(None),
        ["_cat", "count", p] => Route::CatCount(opt(p)),
        ["_cat", "shards"] => Route::CatShards(None),
        ["_cat", "shards", p] => Route::CatShards(opt(p)),
        ["_cluster", "health"] => Route::ClusterHealth(None),
        ["_cluster", "settings"] => Route::ClusterSettings,
        ["_cat", "aliases"] => Route::CatAliases(None),
        ["_cat", "aliases", n] => Route::CatAliases(opt(n)),
        ["_pit"] => Route::Pit { index: None },
        ["_alias"] => Route::Alias {
            index: None,
            name: None,
        },
        ["_alias", n] => Route::Alias {
            index: None,
            name: opt(n),
        },
        ["_aliases"] => Route::Aliases,
        ["_stats"] => Route::Stats {
            index: None,
            metric: None,
        },
        ["_stats", m] => Route::Stats {
            index: None,
            metric: opt(m),
        },
        ["_resolve", "index", e] => Route::ResolveIndex(e.to_string()),
        ["_field_caps"] => Route::FieldCaps { index: None },
        ["_flush"] => Route::Flush { index: None },
        ["_reindex"] => Route::Reindex,
        ["_component_template"] => Route::ComponentTemplate { name: None },
        ["_component_template", n] => Route::ComponentTemplate { name: opt(n) },
        ["_cluster", "health", i] => Route::ClusterHealth(opt(i)),
        ["_bulk"] => Route::Bulk {
            index: None,
            type_name: None,
        },
        ["_search"] => Route::Search { index: None },
        ["_search", "point_in_time"] => Route::OsPit { index: None },
        ["_search", "point_in_time", "_all"] => Route::OsPitAll,
        ["_search", "scroll"] => Route::Scroll { id: None },
        ["_search", "scroll", id] => Route::Scroll { id: opt(id) },
        ["_count"] => Route::Count { index: None },
        ["_msearch"] => Route::Msearch { index: None },
        ["_mget"] => Route::Mget { index: None },
        ["_refresh"] => Route::Refresh { index: None },
        ["_mapping" | "_mappings"] => Route::Mapping {
            index: None,
            type_name: None,
        },
        ["_mapping" | "_mappings", t] => Route::Mapping {
            index: None,
            type_name: opt(t),
        },
        ["_settings"] => Route::Settings { index: None },
        ["_template"] => Route::Template {
            name: None,
            composable: false,
        },
        ["_template", n] => Route::Template {
            name: opt(n),
            composable: false,
        },
        ["_index_template"] => Route::Template {
            name: None,
            composable: true,
        },
        ["_index_template", n] => Route::Template {
            name: opt(n),
            composable: true,
        },
        [first, ..] if first.starts_with('_') && *first != "_all" => return None,
        [i] => Route::Index(i.to_string()),
        [i, "_bulk"] => Route::Bulk {
            index: opt(i),
            type_name: None,
        },
        [i, "_search"] => Route::Search { index: opt(i) },
        [i, "_search", "point_in_time"] => Route::OsPit { index: opt(i) },
        [i, "_count"] => Route::Count { index: opt(i) },
        [i, "_msearch"] => Route::Msearch { index: opt(i) },
        [i, "_mget"] => Route::Mget { index: opt(i) },
        [i, "_refresh"] => Route::Refresh { index: opt(i) },
        [i, "_mapping" | "_mappings"] => Route::Mapping {
            index: opt(i),
            type_name: None,
        },
        [i, "_mapping" | "_mappings", t] => Route::Mapping {
            index: opt(i),
            type_name: opt(t),
        },
        [i, "_settings"] => Route::Settings { index: opt(i) },
        [i, "_alias" | "_aliases"] => Route::Alias {
            index: opt(i),
            name: None,
        },
        [i, "_alias" | "_aliases", n] => Route::Alias {
            index: opt(i),
            name: opt(n),
        },
        [i, "_close"] => Route::OpenClose {
            index: i.to_string(),
            open: false,
        },
        [i, "_open"] => Route::OpenClose {
            index: i.to_string(),
            open: true,
        },
        [i, "_stats"] => Route::Stats {
            index: opt(i),
            metric: None,
        },
        [i, "_stats", m] => Route::Stats {
            index: opt(i),
            metric: opt(m),
        },
        [i, "_field_caps"] => Route::FieldCaps { index: opt(i) },
        [i, "_flush"] => Route::Flush { index: opt(i) },
        [i, "_pit"] => Route::Pit { index: opt(i) },
        [i, "_delete_by_query"] => Route::DeleteByQuery(i.to_string()),
        [i, "_update_by_query"] => Route::UpdateByQuery(i.to_string()),
        [i, "_doc"] => Route::DocAuto {
            index: i.to_string(),
            type_name: None,
        },
        [i, "_doc", id] => Route::Doc {
            index: i.to_string(),
            type_name: None,
            id: id.to_string(),
        },
        [i, "_create", id] => Route::Create {
            index: i.to_string(),
            type_name: None,
            id: id.to_string(),
        },
        [i, "_update", id] => Route::Update {
            index: i.to_string(),
            type_name: None,
            id: id.to_string(),
        },
        [i, "_source", id] => Route::Source {
            index: i.to_string(),
            id: id.to_string(),
        },
        [_, second, ..] if second.starts_with('_') && s.len() == 2 => return None,
        [i, t] => Route::DocAuto {
            index: i.to_string(),
            type_name: opt(t),
        },
        [i, _, "_search"] => Route::Search { index: opt(i) },
        [i, _, "_count"] => Route::Count { index: opt(i) },
        [i, t, "_bulk"] => Route::Bulk {
            index: opt(i),
            type_name: opt(t),
        },
        [i, t, "_mapping" | "_mappings"] => Route::Mapping {
            index: opt(i),
            type_name: opt(t),
        },
        [_, _, third] if third.starts_with('_') => return None,
        [i, t, id] => Route::Doc {
            index: i.to_string(),
            type_name: opt(t),
            id: id.to_string(),
        },
        [i, t, id, "_create"] => Route::Create {
            index: i.to_string(),
            type_name: opt(t),
            id: id.to_string(),
        },
        [i, t, id, "_update"] => Route::Update {
            index: i.to_string(),
            type_name: opt(t),
            id: id.to_string(),
        },
        [i, _, id, "_source"] => Route::Source {
            index: i.to_string(),
            id: id.to_string(),
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(p: &str) -> Option<Route> {
        route(&crate::api::params::segments(p.as_bytes()).unwrap())
    }

    #[test]
    fn spec_section_4_paths() {
        assert_eq!(r("/"), Some(Route::Root));
        assert_eq!(r("/books"), Some(Route::Index("books".into())));
        assert_eq!(
            r("/books/doc/1"),
            Some(Route::Doc {
                index: "books".into(),
                type_name: Some("doc".into()),
                id: "1".into()
            })
        );
        assert_eq!(
            r("/books/_mapping"),
            Some(Route::Mapping {
                index: Some("books".into()),
                type_name: None
            })
        );
        assert_eq!(
            r("/_bulk"),
            Some(Route::Bulk {
                index: None,
                type_name: None
            })
        );
        assert_eq!(r("/_search"), Some(Route::Search { index: None }));
        assert_eq!(
            r("/books/_search"),
            Some(Route::Search {
                index: Some("books".into())
            })
        );
        assert_eq!(r("/_cat/indices"), Some(Route::CatIndices(None)));
        assert_eq!(r("/_search/scroll"), Some(Route::Scroll { id: None }));
        assert_eq!(
            r("/_search/scroll/_all"),
            Some(Route::Scroll {
                id: Some("_all".into())
            })
        );
        assert!(r("/_search/scroll").unwrap().methods().contains(&Delete));
    }

    #[test]
    fn other_forms() {
        assert_eq!(
            r("/b/_doc"),
            Some(Route::DocAuto {
                index: "b".into(),
                type_name: None
            })
        );
        assert_eq!(
            r("/b/doc"),
            Some(Route::DocAuto {
                index: "b".into(),
                type_name: Some("doc".into())
            })
        );
        assert_eq!(
            r("/b/_create/1"),
            Some(Route::Create {
                index: "b".into(),
                type_name: None,
                id: "1".into()
            })
        );
        assert_eq!(
            r("/b/doc/1/_create"),
            Some(Route::Create {
                index: "b".into(),
                type_name: Some("doc".into()),
                id: "1".into()
            })
        );
        assert_eq!(
            r("/b/doc/1/_update"),
            Some(Route::Update {
                index: "b".into(),
                type_name: Some("doc".into()),
                id: "1".into()
            })
        );
        assert_eq!(
            r("/b/doc/_bulk"),
            Some(Route::Bulk {
                index: Some("b".into()),
                type_name: Some("doc".into())
            })
        );
        assert_eq!(
            r("/a,b*/_search"),
            Some(Route::Search {
                index: Some("a,b*".into())
            })
        );
        assert_eq!(
            r("/b/_doc/a%2Fb"),
            Some(Route::Doc {
                index: "b".into(),
                type_name: None,
                id: "a/b".into()
            })
        );
    }

    #[test]
    fn unknown_paths() {
        assert_eq!(r("/_snapshot"), None);
        assert_eq!(r("/_nodes/stats"), None);
        assert_eq!(r("/b/_foo"), None);
        assert_eq!(r("/b/t/_foo"), None);
        assert_eq!(r("/a/b/c/d/e"), None);
    }

    #[test]
    fn alias_paths_are_not_document_writes() {
        assert_eq!(
            r("/books/_alias/b"),
            Some(Route::Alias {
                index: Some("books".into()),
                name: Some("b".into())
            })
        );
        assert_eq!(
            r("/books/_aliases/b"),
            Some(Route::Alias {
                index: Some("books".into()),
                name: Some("b".into())
            })
        );
        assert!(r("/books/_alias/b").unwrap().methods().contains(&Put));
        assert_eq!(r("/_aliases"), Some(Route::Aliases));
        assert_eq!(
            r("/b/_pit"),
            Some(Route::Pit {
                index: Some("b".into())
            })
        );
        assert_eq!(r("/_pit"), Some(Route::Pit { index: None }));
        assert_eq!(
            r("/b/_search/point_in_time"),
            Some(Route::OsPit {
                index: Some("b".into())
            })
        );
        assert_eq!(
            r("/_search/point_in_time"),
            Some(Route::OsPit { index: None })
        );
        assert_eq!(r("/_search/point_in_time/_all"), Some(Route::OsPitAll));
        assert_eq!(
            r("/_resolve/index/a*"),
            Some(Route::ResolveIndex("a*".into()))
        );
        assert_eq!(
            r("/b/_delete_by_query"),
            Some(Route::DeleteByQuery("b".into()))
        );
    }

    #[test]
    fn methods() {
        assert!(r("/_bulk").unwrap().methods().contains(&Post));
        assert!(!r("/_bulk").unwrap().methods().contains(&Get));
        assert!(r("/b").unwrap().methods().contains(&Delete));
    }
}
