//! The parameter lists of every endpoint (Elasticsearch 7.10's REST specification, by
//! route and method). Data only; `super::check` applies them.

use super::Allowed;
use crate::api::router::Route;
use searchgate_core::proto::Method;

const fn ok(accepted: &'static [&'static str]) -> Allowed {
    Allowed {
        accepted,
        off_only: &[],
        unsupported: &[],
    }
}

const CAT_INDICES: &[&str] = &[
    "format",
    "h",
    "help",
    "s",
    "v",
    "local",
    "master_timeout",
    "bytes",
    "health",
    "pri",
    "include_unloaded_segments",
    "time",
    "expand_wildcards",
];
const CAT_HEALTH: &[&str] = &[
    "format",
    "h",
    "help",
    "s",
    "v",
    "local",
    "master_timeout",
    "time",
    "ts",
];
const CAT_ALIASES: &[&str] = &[
    "format",
    "h",
    "help",
    "s",
    "v",
    "local",
    "master_timeout",
    "expand_wildcards",
];
const CLUSTER_HEALTH: &[&str] = &[
    "expand_wildcards",
    "level",
    "local",
    "master_timeout",
    "timeout",
    "wait_for_active_shards",
    "wait_for_nodes",
    "wait_for_events",
    "wait_for_no_relocating_shards",
    "wait_for_no_initializing_shards",
    "wait_for_status",
];
const INDICES_OPTS: &[&str] = &["ignore_unavailable", "allow_no_indices", "expand_wildcards"];
const SEARCH: &[&str] = &[
    "routing",
    "q",
    "df",
    "default_operator",
    "from",
    "size",
    "sort",
    "_source",
    "_source_includes",
    "_source_include",
    "_source_excludes",
    "_source_exclude",
    "version",
    "seq_no_primary_term",
    "track_scores",
    "track_total_hits",
    "rest_total_hits_as_int",
    "stored_fields",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "ignore_throttled",
    "scroll",
    "source",
    "source_content_type",
    "preference",
    "request_cache",
    "search_type",
    "batched_reduce_size",
    "max_concurrent_shard_requests",
    "pre_filter_shard_size",
    "allow_partial_search_results",
    "ccs_minimize_roundtrips",
    "timeout",
    "stats",
];
const SEARCH_OFF: &[&str] = &["typed_keys", "explain", "analyze_wildcard", "lenient"];
const SEARCH_NO: &[&str] = &[
    "analyzer",
    "terminate_after",
    "docvalue_fields",
    "suggest_field",
    "suggest_mode",
    "suggest_size",
    "suggest_text",
];
const COUNT: &[&str] = &[
    "routing",
    "q",
    "df",
    "default_operator",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "ignore_throttled",
    "preference",
    "source",
    "source_content_type",
];
const COUNT_NO: &[&str] = &["analyzer", "terminate_after", "min_score"];
const MSEARCH: &[&str] = &[
    "source",
    "source_content_type",
    "search_type",
    "max_concurrent_searches",
    "pre_filter_shard_size",
    "max_concurrent_shard_requests",
    "rest_total_hits_as_int",
    "ccs_minimize_roundtrips",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "ignore_throttled",
];
const GET_DOC: &[&str] = &[
    "preference",
    "realtime",
    "refresh",
    "routing",
    "_source",
    "_source_includes",
    "_source_excludes",
    "_source_include",
    "_source_exclude",
    "stored_fields",
    "version",
    "version_type",
];
const WRITE_DOC: &[&str] = &[
    "wait_for_active_shards",
    "op_type",
    "refresh",
    "routing",
    "timeout",
    "version",
    "version_type",
    "if_seq_no",
    "if_primary_term",
];
const DELETE_DOC: &[&str] = &[
    "wait_for_active_shards",
    "refresh",
    "routing",
    "timeout",
    "version",
    "version_type",
    "if_seq_no",
    "if_primary_term",
];
const UPDATE_DOC: &[&str] = &[
    "wait_for_active_shards",
    "lang",
    "refresh",
    "retry_on_conflict",
    "routing",
    "timeout",
    "if_seq_no",
    "if_primary_term",
];
const MGET: &[&str] = &[
    "preference",
    "realtime",
    "refresh",
    "routing",
    "stored_fields",
    "_source",
    "_source_includes",
    "_source_excludes",
    "_source_include",
    "_source_exclude",
];
const BY_QUERY: &[&str] = &[
    "routing",
    "q",
    "df",
    "default_operator",
    "conflicts",
    "refresh",
    "wait_for_completion",
    "slices",
    "requests_per_second",
    "scroll",
    "scroll_size",
    "max_docs",
    "timeout",
    "search_timeout",
    "wait_for_active_shards",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "preference",
    "request_cache",
    "search_type",
];
const BY_QUERY_NO: &[&str] = &[
    "analyzer",
    "terminate_after",
    "pipeline",
    "sort",
    "from",
    "size",
    "_source",
    "_source_includes",
    "_source_excludes",
    "stats",
    "version",
    "version_type",
];
const REINDEX: &[&str] = &[
    "refresh",
    "timeout",
    "wait_for_active_shards",
    "wait_for_completion",
    "requests_per_second",
    "scroll",
    "slices",
    "max_docs",
];
const MASTER: &[&str] = &["timeout", "master_timeout"];
const READ_MASTER: &[&str] = &["master_timeout", "local"];
const GET_ALIAS: &[&str] = &[
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "local",
];
const GET_INDEX: &[&str] = &[
    "include_type_name",
    "local",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "flat_settings",
    "master_timeout",
];
const DELETE_INDEX: &[&str] = &[
    "timeout",
    "master_timeout",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
];
const OPEN_CLOSE: &[&str] = &[
    "timeout",
    "master_timeout",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "wait_for_active_shards",
];
const GET_MAPPING: &[&str] = &[
    "include_type_name",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "local",
    "master_timeout",
];
const PUT_MAPPING: &[&str] = &[
    "include_type_name",
    "timeout",
    "master_timeout",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
];
const GET_SETTINGS: &[&str] = &[
    "flat_settings",
    "local",
    "master_timeout",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
];
const PUT_SETTINGS: &[&str] = &[
    "master_timeout",
    "timeout",
    "flat_settings",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
];
const STATS: &[&str] = &[
    "completion_fields",
    "fielddata_fields",
    "fields",
    "groups",
    "level",
    "types",
    "include_unloaded_segments",
    "forbid_closed_indices",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
];

fn by_method(m: Method, read: Allowed, write: Allowed) -> Allowed {
    if matches!(m, Method::Get | Method::Head) {
        read
    } else {
        write
    }
}

/// Which template API a route is.
fn template(m: Method, legacy: bool, component: bool) -> Allowed {
    match m {
        Method::Delete => ok(MASTER),
        Method::Get | Method::Head if legacy => Allowed {
            accepted: READ_MASTER,
            off_only: &["flat_settings", "include_type_name"],
            unsupported: &[],
        },
        Method::Get | Method::Head => Allowed {
            accepted: READ_MASTER,
            off_only: &["flat_settings"],
            unsupported: &[],
        },
        _ if legacy => Allowed {
            accepted: &["include_type_name", "create", "master_timeout", "timeout"],
            off_only: &[],
            unsupported: &["order"],
        },
        _ if component => ok(&["create", "timeout", "master_timeout"]),
        _ => ok(&["create", "cause", "master_timeout"]),
    }
}

/// The parameters of `route` called with `m`.
pub fn of(route: &Route, m: Method) -> Allowed {
    match route {
        Route::Root => ok(&[]),
        Route::CatIndices(_) => ok(CAT_INDICES),
        Route::CatHealth => ok(CAT_HEALTH),
        Route::CatCount(_) => ok(&["format", "h", "help", "s", "v", "local", "master_timeout"]),
        Route::CatShards(_) => ok(&[
            "format",
            "h",
            "help",
            "s",
            "v",
            "bytes",
            "local",
            "master_timeout",
        ]),
        Route::CatAliases(_) => ok(CAT_ALIASES),
        Route::ClusterHealth(_) => ok(CLUSTER_HEALTH),
        Route::ClusterSettings => by_method(
            m,
            Allowed {
                accepted: &[
                    "flat_settings",
                    "include_defaults",
                    "local",
                    "master_timeout",
                    "timeout",
                ],
                ..Allowed::default()
            },
            ok(&["flat_settings", "master_timeout", "timeout"]),
        ),
        Route::Bulk { .. } => Allowed {
            accepted: &[
                "refresh",
                "routing",
                "timeout",
                "wait_for_active_shards",
                "type",
                "require_alias",
            ],
            off_only: &[],
            unsupported: &[
                "pipeline",
                "_source",
                "_source_includes",
                "_source_excludes",
            ],
        },
        Route::Search { .. } => Allowed {
            accepted: SEARCH,
            off_only: SEARCH_OFF,
            unsupported: SEARCH_NO,
        },
        Route::Scroll { .. } => ok(&["scroll", "scroll_id", "rest_total_hits_as_int"]),
        Route::Count { .. } => Allowed {
            accepted: COUNT,
            off_only: &["analyze_wildcard", "lenient"],
            unsupported: COUNT_NO,
        },
        Route::Msearch { .. } => Allowed {
            accepted: MSEARCH,
            off_only: &["typed_keys"],
            unsupported: &[],
        },
        Route::Mget { .. } => ok(MGET),
        Route::Refresh { .. } => ok(INDICES_OPTS),
        Route::Flush { .. } => ok(&[
            "ignore_unavailable",
            "allow_no_indices",
            "expand_wildcards",
            "force",
            "wait_if_ongoing",
        ]),
        Route::Mapping { .. } => by_method(
            m,
            ok(GET_MAPPING),
            Allowed {
                accepted: PUT_MAPPING,
                off_only: &["write_index_only"],
                unsupported: &[],
            },
        ),
        Route::Settings { .. } => by_method(
            m,
            Allowed {
                accepted: GET_SETTINGS,
                off_only: &["include_defaults"],
                unsupported: &[],
            },
            Allowed {
                accepted: PUT_SETTINGS,
                off_only: &["preserve_existing"],
                unsupported: &[],
            },
        ),
        Route::Index(_) => match m {
            Method::Put => ok(&[
                "include_type_name",
                "wait_for_active_shards",
                "timeout",
                "master_timeout",
            ]),
            Method::Delete => ok(DELETE_INDEX),
            _ => Allowed {
                accepted: GET_INDEX,
                off_only: &["include_defaults"],
                unsupported: &[],
            },
        },
        Route::Doc { .. } | Route::DocAuto { .. } => match m {
            Method::Get | Method::Head => ok(GET_DOC),
            Method::Delete => ok(DELETE_DOC),
            _ => Allowed {
                accepted: WRITE_DOC,
                off_only: &[],
                unsupported: &["pipeline", "require_alias"],
            },
        },
        Route::Create { .. } => Allowed {
            accepted: WRITE_DOC,
            off_only: &[],
            unsupported: &["pipeline", "require_alias"],
        },
        Route::Update { .. } => Allowed {
            accepted: UPDATE_DOC,
            off_only: &[],
            unsupported: &[
                "require_alias",
                "_source",
                "_source_includes",
                "_source_excludes",
            ],
        },
        Route::Source { .. } => ok(GET_DOC),
        Route::Template { composable, .. } => template(m, !composable, false),
        Route::ComponentTemplate { .. } => template(m, false, true),
        Route::Alias { .. } | Route::Aliases => by_method(m, ok(GET_ALIAS), ok(MASTER)),
        Route::OpenClose { .. } => ok(OPEN_CLOSE),
        Route::Stats { .. } => Allowed {
            accepted: STATS,
            off_only: &["include_segment_file_sizes"],
            unsupported: &[],
        },
        Route::ResolveIndex(_) => ok(&["expand_wildcards"]),
        Route::FieldCaps { .. } => Allowed {
            accepted: &[
                "fields",
                "ignore_unavailable",
                "allow_no_indices",
                "expand_wildcards",
            ],
            off_only: &["include_unmapped"],
            unsupported: &[],
        },
        Route::Pit { index: Some(_) } => Allowed {
            accepted: &[
                "keep_alive",
                "preference",
                "ignore_unavailable",
                "expand_wildcards",
            ],
            off_only: &[],
            unsupported: &["routing"],
        },
        Route::Pit { index: None } => ok(&[]),
        Route::OsPit { index: Some(_) } => Allowed {
            accepted: &[
                "keep_alive",
                "preference",
                "expand_wildcards",
                "allow_partial_pit_creation",
            ],
            off_only: &[],
            unsupported: &["routing"],
        },
        Route::OsPit { index: None } | Route::OsPitAll => ok(&[]),
        Route::DeleteByQuery(_) | Route::UpdateByQuery(_) => Allowed {
            accepted: BY_QUERY,
            off_only: &["analyze_wildcard", "lenient"],
            unsupported: BY_QUERY_NO,
        },
        Route::Reindex => ok(REINDEX),
    }
}
