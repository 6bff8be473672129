//! The endpoint table of `classify`: every endpoint the edge recognises, whether it reads
//! with any method, and how the multitenant class handles it (which path segments are
//! index or alias names, which body and response transform, or 501). First match wins:
//! rows for one method come before the general row of the same path, literal rows before
//! rows with names and ids.
//!
//! On multitenant clusters a segment in a value position ([`Seg::Any`], [`Seg::Name`],
//! [`Seg::Rest`]) must not start with `_`: Elasticsearch's router could take it for an
//! endpoint name (see `classify::endpoint_name_in_value`). Documents with such ids are
//! reached through bodies there. Field names after `_mapping/field/` may ([`Seg::Fields`]).
//!
//! Must not touch: the rewriting itself (`tenancy`), modes, I/O.

use super::routes::{BodyKind as B, Methods, ResponseKind as Rk, Route, Seg, Tenancy};

use Seg::{
    Alias as Al, Any as A, Fields as F, Index as I, Lit as L, Name as N, Rest, ScrollIds as Ids,
};

const fn rw(all_at: Option<u8>, body: B, response: Rk) -> Tenancy {
    Tenancy::Rewrite {
        all_at,
        body,
        response,
    }
}
/// Index names in the path; no body.
const PATH: Tenancy = rw(None, B::None, Rk::Strip);
/// No index in the path: the tenant's `<P>*` inserted first; no body.
const ALL0: Tenancy = rw(Some(0), B::None, Rk::Strip);
const ALL2: Tenancy = rw(Some(2), B::None, Rk::Strip);
const CAT_ROWS: Tenancy = rw(Some(2), B::None, Rk::CatRows);
const BLOCK: Tenancy = Tenancy::Block;
const fn path(body: B) -> Tenancy {
    rw(None, body, Rk::Strip)
}
const fn all0(body: B) -> Tenancy {
    rw(Some(0), body, Rk::Strip)
}

/// Any method; `reads`: a read whatever the method.
const fn r(name: &'static str, pattern: &'static [Seg], reads: bool, t: Tenancy) -> Route {
    Route {
        name,
        pattern,
        methods: Methods::ANY,
        reads,
        tenancy: t,
    }
}

/// Only `methods`; an update unless GET/HEAD.
const fn m(name: &'static str, methods: Methods, pattern: &'static [Seg], t: Tenancy) -> Route {
    mr(name, methods, pattern, false, t)
}

/// Only `methods`, with `reads`.
const fn mr(
    name: &'static str,
    methods: Methods,
    pattern: &'static [Seg],
    reads: bool,
    t: Tenancy,
) -> Route {
    Route {
        name,
        pattern,
        methods,
        reads,
        tenancy: t,
    }
}

const SCROLL: Tenancy = rw(None, B::Scroll, Rk::Search);

/// The endpoint table.
pub static ROUTES: &[Route] = &[
    r("/", &[], false, PATH),
    // searches: reads with any method
    r(
        "_search",
        &[L("_search")],
        true,
        rw(Some(0), B::Search, Rk::Search),
    ),
    r(
        "_search",
        &[I, L("_search")],
        true,
        rw(None, B::Search, Rk::Search),
    ),
    r(
        "_search",
        &[I, N, L("_search")],
        true,
        rw(None, B::Search, Rk::Search),
    ),
    // OpenSearch's point in time: the contexts of `_pit` under its paths and field names;
    // closing all of them cannot be confined to a tenant (the edge does not keep the
    // upstream ids, only their hashes)
    mr(
        "_search/point_in_time",
        Methods::POST,
        &[I, L("_search"), L("point_in_time")],
        true,
        rw(None, B::None, Rk::PitOpen),
    ),
    mr(
        "_search/point_in_time",
        Methods::DELETE,
        &[L("_search"), L("point_in_time")],
        true,
        rw(None, B::ClosePitIds, Rk::PitList),
    ),
    mr(
        "_search/point_in_time/_all",
        Methods::GET_HEAD,
        &[L("_search"), L("point_in_time"), L("_all")],
        true,
        rw(None, B::None, Rk::PitList),
    ),
    r(
        "_search/point_in_time/_all",
        &[L("_search"), L("point_in_time"), L("_all")],
        true,
        BLOCK,
    ),
    r(
        "_search/point_in_time",
        &[L("_search"), L("point_in_time")],
        true,
        BLOCK,
    ),
    r(
        "_search/point_in_time",
        &[I, L("_search"), L("point_in_time")],
        true,
        BLOCK,
    ),
    // scroll: ids sealed in responses, opened in bodies, parameters and paths
    mr(
        "_search/scroll",
        Methods::DELETE,
        &[L("_search"), L("scroll")],
        true,
        path(B::ClearScroll),
    ),
    mr(
        "_search/scroll",
        Methods::DELETE,
        &[L("_search"), L("scroll"), Ids],
        true,
        PATH,
    ),
    r("_search/scroll", &[L("_search"), L("scroll")], true, SCROLL),
    r(
        "_search/scroll",
        &[L("_search"), L("scroll"), Ids],
        true,
        SCROLL,
    ),
    r(
        "_search/scroll",
        &[L("_search"), L("scroll"), Rest],
        true,
        BLOCK,
    ),
    r("_count", &[L("_count")], true, all0(B::QueryOnly)),
    r("_count", &[I, L("_count")], true, path(B::QueryOnly)),
    r("_count", &[I, N, L("_count")], true, path(B::QueryOnly)),
    r("_msearch", &[L("_msearch")], true, all0(B::Msearch)),
    r("_msearch", &[I, L("_msearch")], true, path(B::Msearch)),
    r("_msearch", &[I, N, L("_msearch")], true, path(B::Msearch)),
    r("_mget", &[L("_mget")], true, path(B::Mget)),
    r("_mget", &[I, L("_mget")], true, path(B::Mget)),
    r("_mget", &[I, N, L("_mget")], true, path(B::Mget)),
    r("_field_caps", &[L("_field_caps")], true, all0(B::FieldCaps)),
    r(
        "_field_caps",
        &[I, L("_field_caps")],
        true,
        path(B::FieldCaps),
    ),
    r(
        "_validate",
        &[L("_validate"), L("query")],
        true,
        all0(B::QueryOnly),
    ),
    r(
        "_validate",
        &[I, L("_validate"), L("query")],
        true,
        path(B::QueryOnly),
    ),
    r(
        "_validate",
        &[I, N, L("_validate"), L("query")],
        true,
        path(B::QueryOnly),
    ),
    r("_explain", &[I, L("_explain"), A], true, path(B::QueryOnly)),
    r(
        "_explain",
        &[I, N, A, L("_explain")],
        true,
        path(B::QueryOnly),
    ),
    r("_analyze", &[L("_analyze")], true, path(B::Analyze)),
    r("_analyze", &[I, L("_analyze")], true, path(B::Analyze)),
    r(
        "_termvectors",
        &[I, L("_termvectors"), Rest],
        true,
        path(B::TermVectors),
    ),
    r(
        "_termvectors",
        &[I, N, L("_termvectors")],
        true,
        path(B::TermVectors),
    ),
    r(
        "_termvectors",
        &[I, N, A, L("_termvectors")],
        true,
        path(B::TermVectors),
    ),
    r("_mtermvectors", &[L("_mtermvectors")], true, BLOCK),
    r("_mtermvectors", &[I, L("_mtermvectors")], true, BLOCK),
    r("_mtermvectors", &[I, N, L("_mtermvectors")], true, BLOCK),
    // point in time: the id sealed when opened, opened when searched or closed
    mr(
        "_pit",
        Methods::POST,
        &[I, L("_pit")],
        true,
        rw(None, B::None, Rk::PitOpen),
    ),
    mr(
        "_pit",
        Methods::DELETE,
        &[L("_pit")],
        true,
        path(B::ClosePit),
    ),
    r("_pit", &[L("_pit")], true, BLOCK),
    r("_pit", &[I, L("_pit")], true, BLOCK),
    r("_search_shards", &[L("_search_shards")], true, BLOCK),
    r("_search_shards", &[I, L("_search_shards")], true, BLOCK),
    r("_rank_eval", &[L("_rank_eval")], true, BLOCK),
    r("_rank_eval", &[I, L("_rank_eval")], true, BLOCK),
    m(
        "_resolve/index",
        Methods::GET_HEAD,
        &[L("_resolve"), L("index"), I],
        PATH,
    ),
    // _cat: reads; only tables of index rows can be confined to one tenant
    r("_cat", &[L("_cat")], true, PATH),
    r("_cat/indices", &[L("_cat"), L("indices")], true, CAT_ROWS),
    r(
        "_cat/indices",
        &[L("_cat"), L("indices"), I],
        true,
        CAT_ROWS,
    ),
    r("_cat/count", &[L("_cat"), L("count")], true, ALL2),
    r("_cat/count", &[L("_cat"), L("count"), I], true, ALL2),
    r("_cat/aliases", &[L("_cat"), L("aliases")], true, CAT_ROWS),
    r(
        "_cat/aliases",
        &[L("_cat"), L("aliases"), Al],
        true,
        CAT_ROWS,
    ),
    r("_cat/shards", &[L("_cat"), L("shards")], true, CAT_ROWS),
    r("_cat/shards", &[L("_cat"), L("shards"), I], true, CAT_ROWS),
    r("_cat/segments", &[L("_cat"), L("segments")], true, CAT_ROWS),
    r(
        "_cat/segments",
        &[L("_cat"), L("segments"), I],
        true,
        CAT_ROWS,
    ),
    r("_cat/recovery", &[L("_cat"), L("recovery")], true, CAT_ROWS),
    r(
        "_cat/recovery",
        &[L("_cat"), L("recovery"), I],
        true,
        CAT_ROWS,
    ),
    r("_cat", &[L("_cat"), Rest], true, BLOCK),
    // cluster: health can be confined to the tenant's indices; the rest is shared state
    r(
        "_cluster/health",
        &[L("_cluster"), L("health")],
        false,
        ALL2,
    ),
    r(
        "_cluster/health",
        &[L("_cluster"), L("health"), I],
        false,
        ALL2,
    ),
    // index metadata; writes read their bodies
    m(
        "_mapping",
        Methods::PUT_POST,
        &[L("_mapping"), Rest],
        all0(B::Mapping),
    ),
    m(
        "_mapping",
        Methods::PUT_POST,
        &[L("_mappings"), Rest],
        all0(B::Mapping),
    ),
    m(
        "_mapping",
        Methods::PUT_POST,
        &[I, L("_mapping"), Rest],
        path(B::Mapping),
    ),
    m(
        "_mapping",
        Methods::PUT_POST,
        &[I, L("_mappings"), Rest],
        path(B::Mapping),
    ),
    m(
        "_mapping",
        Methods::PUT_POST,
        &[I, N, L("_mapping")],
        path(B::Mapping),
    ),
    m(
        "_mapping",
        Methods::PUT_POST,
        &[I, N, L("_mappings")],
        path(B::Mapping),
    ),
    // field mappings: field names may start with `_` (`_id`); nothing routes there but this
    m(
        "_mapping/field",
        Methods::GET_HEAD,
        &[L("_mapping"), L("field"), F],
        ALL0,
    ),
    m(
        "_mapping/field",
        Methods::GET_HEAD,
        &[I, L("_mapping"), L("field"), F],
        PATH,
    ),
    r("_mapping", &[L("_mapping"), Rest], false, ALL0),
    r("_mapping", &[L("_mappings"), Rest], false, ALL0),
    r("_mapping", &[I, L("_mapping"), Rest], false, PATH),
    r("_mapping", &[I, L("_mappings"), Rest], false, PATH),
    r("_mapping", &[I, N, L("_mapping")], false, PATH),
    r("_mapping", &[I, N, L("_mappings")], false, PATH),
    m(
        "_settings",
        Methods::PUT_POST,
        &[L("_settings"), Rest],
        all0(B::Settings),
    ),
    m(
        "_settings",
        Methods::PUT_POST,
        &[I, L("_settings"), Rest],
        path(B::Settings),
    ),
    r("_settings", &[L("_settings"), Rest], false, ALL0),
    r("_settings", &[I, L("_settings"), Rest], false, PATH),
    r("_stats", &[L("_stats"), Rest], false, ALL0),
    r("_stats", &[I, L("_stats"), Rest], false, PATH),
    r("_segments", &[L("_segments")], false, ALL0),
    r("_segments", &[I, L("_segments")], false, PATH),
    r("_recovery", &[L("_recovery")], false, ALL0),
    r("_recovery", &[I, L("_recovery")], false, PATH),
    // index maintenance (updates unless sent with GET)
    r("_refresh", &[L("_refresh")], false, ALL0),
    r("_refresh", &[I, L("_refresh")], false, PATH),
    r("_flush", &[L("_flush"), Rest], false, ALL0),
    r("_flush", &[I, L("_flush"), Rest], false, PATH),
    r("_forcemerge", &[L("_forcemerge")], false, ALL0),
    r("_forcemerge", &[I, L("_forcemerge")], false, PATH),
    r("_cache/clear", &[L("_cache"), L("clear")], false, ALL0),
    r("_cache/clear", &[I, L("_cache"), L("clear")], false, PATH),
    r("_open", &[I, L("_open")], false, PATH),
    r("_close", &[I, L("_close")], false, PATH),
    // aliases: every name rewritten, bodies read (an alias can only point at the tenant's
    // own indices)
    m("_aliases", Methods::GET_HEAD, &[L("_aliases")], ALL0),
    m(
        "_aliases",
        Methods::POST,
        &[L("_aliases")],
        path(B::Aliases),
    ),
    r("_aliases", &[L("_aliases")], false, BLOCK),
    m(
        "_alias",
        Methods::PUT_POST,
        &[I, L("_alias"), Al],
        path(B::PutAlias),
    ),
    m(
        "_alias",
        Methods::PUT_POST,
        &[I, L("_aliases"), Al],
        path(B::PutAlias),
    ),
    m("_alias", Methods::PUT, &[I, L("_alias")], path(B::PutAlias)),
    m(
        "_alias",
        Methods::PUT_POST,
        &[L("_alias"), Al],
        path(B::PutAlias),
    ),
    m(
        "_alias",
        Methods::PUT_POST,
        &[L("_aliases"), Al],
        path(B::PutAlias),
    ),
    r("_alias", &[L("_alias")], false, ALL0),
    r("_alias", &[L("_alias"), Al], false, ALL0),
    r("_alias", &[I, L("_alias")], false, PATH),
    r("_alias", &[I, L("_alias"), Al], false, PATH),
    r("_alias", &[I, L("_aliases")], false, PATH),
    r("_alias", &[I, L("_aliases"), Al], false, PATH),
    // templates: names namespaced, bodies read
    m(
        "_template",
        Methods::PUT_POST,
        &[L("_template"), Al],
        path(B::Template),
    ),
    r(
        "_template",
        &[L("_template")],
        false,
        rw(Some(1), B::None, Rk::Strip),
    ),
    r("_template", &[L("_template"), Al], false, PATH),
    m(
        "_index_template",
        Methods::PUT_POST,
        &[L("_index_template"), Al],
        path(B::IndexTemplate),
    ),
    r(
        "_index_template",
        &[L("_index_template")],
        false,
        rw(Some(1), B::None, Rk::Strip),
    ),
    r("_index_template", &[L("_index_template"), Al], false, PATH),
    r(
        "_index_template",
        &[L("_index_template"), Rest],
        false,
        BLOCK,
    ),
    m(
        "_component_template",
        Methods::PUT_POST,
        &[L("_component_template"), Al],
        path(B::ComponentTemplate),
    ),
    r(
        "_component_template",
        &[L("_component_template")],
        false,
        rw(Some(1), B::None, Rk::Strip),
    ),
    r(
        "_component_template",
        &[L("_component_template"), Al],
        false,
        PATH,
    ),
    // by-query jobs and reindex within the tenant
    m(
        "_delete_by_query",
        Methods::POST,
        &[I, L("_delete_by_query")],
        path(B::DeleteByQuery),
    ),
    m(
        "_delete_by_query",
        Methods::POST,
        &[I, N, L("_delete_by_query")],
        path(B::DeleteByQuery),
    ),
    m(
        "_update_by_query",
        Methods::POST,
        &[I, L("_update_by_query")],
        path(B::UpdateByQuery),
    ),
    m(
        "_update_by_query",
        Methods::POST,
        &[I, N, L("_update_by_query")],
        path(B::UpdateByQuery),
    ),
    m(
        "_reindex",
        Methods::POST,
        &[L("_reindex")],
        path(B::Reindex),
    ),
    // bulk
    r("_bulk", &[L("_bulk")], false, path(B::Bulk)),
    r("_bulk", &[I, L("_bulk")], false, path(B::Bulk)),
    r("_bulk", &[I, N, L("_bulk")], false, path(B::Bulk)),
    // documents
    r("_doc", &[I, L("_doc")], false, path(B::Document)),
    r("_doc", &[I, L("_doc"), A], false, path(B::Document)),
    r("_create", &[I, L("_create"), A], false, path(B::Document)),
    r("_update", &[I, L("_update"), A], false, path(B::Update)),
    r("_source", &[I, L("_source"), A], false, PATH),
    r(
        "_create",
        &[I, N, A, L("_create")],
        false,
        path(B::Document),
    ),
    r("_update", &[I, N, A, L("_update")], false, path(B::Update)),
    r("_source", &[I, N, A, L("_source")], false, PATH),
    // indices
    m("index", Methods::PUT, &[I], path(B::CreateIndex)),
    r("index", &[I], false, PATH),
    r("document", &[I, N], false, path(B::Document)),
    r("document", &[I, N, A], false, path(B::Document)),
];
