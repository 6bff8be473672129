//! Every place an Elasticsearch (7.10) request names an index, an alias, a template or the
//! `_index` field, and what the edge does there for a multitenant cluster. This is THE
//! table: the code below implements exactly these rows (the static tables `QUERIES`,
//! `AGGS`, `SEARCH_KEYS`, `PARAMS`, ... are its machine form, and a test checks that each
//! of their names appears here). `<P>` is the tenant's prefix.
//!
//! Actions: **rewrite** (the value is put into the tenant's namespace), **check** (read and
//! refused when it could reach outside), **open** (a sealed id is opened, see `ids`),
//! **pass** (cannot name an index; forwarded as re-serialised data), **refuse** (400 naming
//! it, or 501 for whole endpoints).
//!
//! | where | what | action |
//! |---|---|---|
//! | path | index expressions: comma lists, `*`, `_all`, `-excl`, `<date{math}>` | rewrite (`names.rs`); `_x`, `+x`, `a:b` and names over 234 bytes refused `(n > 234)` |
//! | path | no index (`/_search`, `/_mapping`, ...) | rewrite: `<P>*` inserted |
//! | path | alias names (`/_alias/<n>`, `/<i>/_alias/<n>`), template names (`/_template/<n>`, `/_index_template/<n>`, `/_component_template/<n>`) | rewrite |
//! | path | `/_search/scroll/<id>` | open (scroll); `DELETE .../_all` refused (501) |
//! | path | value segments: document ids, types, setting names, metrics (`/<i>/_doc/<id>`, `/<i>/<type>/...`, `/<i>/_settings/<name>`, `/_stats/<metric>`, ...) | pass, but one starting with `_` is refused (400): Elasticsearch's router backs up from `_doc`, `_create`, `_settings`, `_mapping`, ... to the `{type}` wildcard, so `/<i>/_doc/_msearch` or `/<i>/_settings/_search` is a typed multi-search or search upstream (`request::classify::endpoint_name_in_value`). Ids starting with `_` are legal in Elasticsearch, but in a path their handler depends on method, version and plugins: reach them through `_bulk`, `_mget` and searches. Typed forms with a type not starting with `_` (`/<i>/<type>/_search`, `_msearch`, `_bulk`, `_count`, `_mget`, `_termvectors`, `<id>/_explain`, `<id>/_update`, `_delete_by_query`, `_update_by_query`, `_mapping`, `_validate/query`) are read as their untyped forms; typed `_mtermvectors` is 501 like the untyped one |
//! | path | field names after `_mapping/field/` | pass (`_id` allowed: no route has an explicit child there) |
//! | query string | every parameter, split at `&` and `;` and percent- and `+`-decoded once as the upstream does (`RestUtils.decodeQueryString`) | table `params::PARAMS`: pass / check / open / refuse; unknown and duplicate parameters refused (`illegal_argument_exception`), re-serialised canonically with `&`, `;`, `=`, `+`, `#`, `%` percent-encoded inside names and values |
//! | query string | `q` (Lucene syntax) | check: no field that could be `_index` (`lucene::query_string`) |
//! | query string | `df`, `stored_fields`, `docvalue_fields`, `fields` | check: no field pattern that could be `_index` (but exactly `*`) for `df`; others pass (values come back stripped) |
//! | query string | `scroll_id` | open (scroll) |
//! | query string | `%%` (a literal `%` for the upstream), a bad escape, bytes that are not UTF-8 once decoded; a raw `#` | refuse; `#` is data, written as `%23` |
//! | query string | `sort` | check: no `_index` (a search_after on it could compare with unprefixed values) |
//! | query string | `filter_path` | check: a path segment holding `*` must be only stars (`*`, `**`); `a*`, `-a*`, `indices.ab*` refused: responses keyed by index names (`_mapping`, `_settings`, `_alias`, `_stats`) would answer whether `<P>` starts with the guess (attack18) |
//! | query string | `source`, `pipeline`, `index`, `name`, `alias`, `target`, `new_index` | refuse |
//! | query string | `wait_for_completion=false` | refuse (task ids are shared upstream state) |
//! | query string | `requests_per_second` other than `-1`, `slices` other than `1` | refuse: a by-query or reindex job is not cancelled when the edge gives up on it, and throttling and slices keep uncounted scroll contexts open upstream while it runs |
//! | header | `Content-Type` of a body | check: `application/json`, `application/x-ndjson`, `application/vnd.elasticsearch+json`/`+x-ndjson` with `compatible-with=7\|8\|9` only; other types 406; CBOR, Smile, YAML, compression refused |
//! | header | `Content-Type` without a body | check: it picks the response format upstream when `Accept` names none, so JSON/NDJSON as above, or `application/x-www-form-urlencoded`/`text/plain` (no format upstream); others 406 |
//! | header, query string | `Accept`, `format` (the upstream's response format: `format`, else `Accept`, else `Content-Type`, short names like `yaml` matched in any case) | check: every `Accept` range JSON, NDJSON, `text/plain` or a wildcard (`*/*`, `application/*`, `text/*`), or the short name `json`; `format` only `json` or text; YAML, Smile, CBOR in any spelling refused (406 / 400) |
//! | responses | a body that is not a JSON object where ids are sealed (search with scroll or PIT, PIT opening) | refuse: `ResponsePlan::check_upstream` (502 before the head) and the filter writes the 502 body instead of releasing it |
//! | `_bulk` | framing | Elasticsearch 7.10's `BulkRequestParser`: lines end at `\n`, a trailing `\r` is trimmed, blank or whitespace-only action lines skipped, a last line without `\n` refused; the edge writes one compact line per action or source, no blank lines (`ndjson`) |
//! | `_bulk` | action line: `index`, `create`, `update`, `delete` with `_index` | rewrite (one name; date math resolved first at the request's clock, [`resolve_date_math`], so the concrete name is checked, auto-created and forwarded); other actions refused |
//! | `_bulk` | action keys `_id`, `_type`, `routing`, `op_type`, `version`, `version_type`, `if_seq_no`, `if_primary_term`, `retry_on_conflict`, `require_alias`, `_source` | pass |
//! | `_bulk` | action `_index: null` | pass: 7.10's `BulkRequestParser` ignores a null value, so the path's (rewritten) index applies |
//! | `_bulk` | action key `pipeline` (ingest pipelines are cluster-wide) and unknown keys | refuse |
//! | `_bulk` | source line of `index`/`create` | pass byte-exact (a document never names an index; blank source lines refused) |
//! | `_bulk` | source line of `update` | check as an `_update` body |
//! | `_msearch` | framing | `MultiSearchRequest.readMultiLineFormat`: a `\n` as the very first byte skipped, a blank header is an empty header, every header followed by a body line, a last line without `\n` refused |
//! | `_msearch` | header `index`/`indices` (string or array) | rewrite; `""`, `[]` become `<P>*`; no index: the path's (always confined) |
//! | `_msearch` | header keys `search_type`, `preference`, `routing`, `request_cache`, `allow_partial_search_results`, `ccs_minimize_roundtrips`, `expand_wildcards`, `ignore_unavailable`, `allow_no_indices`, `ignore_throttled` (and their camelCase) | pass; unknown keys refused |
//! | `_msearch` | body line | a search body (below); `pit` refused (its id would come back nested) |
//! | `_mget` | `docs[]._index` | rewrite (one name); keys `_id`, `_type`, `routing`, `_source`, `stored_fields`, `version`, `version_type` pass |
//! | `_mget` | `ids` | pass |
//! | search body | `query`, `post_filter` | the query DSL (below) |
//! | search body | `aggs`/`aggregations` | the aggregations (below) |
//! | search body | `sort` | a sort (see sorts below); `_index` positions recorded |
//! | search body | `search_after` | rewrite the values at `_index` sort positions |
//! | search body | `collapse` | check field (`_index` refused); `inner_hits` as hits options |
//! | search body | `highlight` | check fields (`_index` refused); `highlight_query` as a query |
//! | search body | `rescore` (`rescore[].query.rescore_query`) | a query; `window_size` at most 10000 (the upstream allocates the whole window, whatever `index.max_rescore_window` says) |
//! | search body | `indices_boost` (array or object) | rewrite the index names (one name or pattern each) |
//! | search body | `suggest` | check `field`; phrase `collate` (a template) refused |
//! | search body | `script_fields`, `runtime_mappings`, `ext`, `stats` groups... | refuse `script_fields`, `runtime_mappings`, `ext`; pass plain options |
//! | search body | `pit.id` | open (point in time); the path loses its index (Elasticsearch refuses one with a PIT) |
//! | search body | `slice` | check field (`_index` refused) |
//! | search body | `stored_fields`, `docvalue_fields`, `fields`, `_source`, `from`, `size`, `timeout`, `terminate_after`, `track_total_hits`, `track_scores`, `min_score`, `explain`, `version`, `seq_no_primary_term`, `profile` | pass (values come back stripped) |
//! | `_count`, `_explain`, `_validate/query` body | `query` | the query DSL; other keys refused |
//! | `_field_caps` body | `index_filter`; `fields` (a string or an array of names, as Elasticsearch 8 clients send them) | the query DSL; the names pass (the answer is about mappings, never values) |
//! | `_termvectors` body | `_index` | rewrite; `doc`, `fields`, `filter`, `per_field_analyzer`, options pass |
//! | `_update` body, bulk `update` source | `doc`, `upsert`, `doc_as_upsert`, `scripted_upsert`, `detect_noop`, `_source` | pass; `script` checked (Painless subset, `painless`) |
//! | `_delete_by_query`, `_update_by_query` body | `query`, `max_docs`, `conflicts`, `slice`, `size`, `sort`, `_source`; `script` (update) | query DSL; `sort` as a sort (below), `_index` refused; script checked |
//! | `_reindex` body | `source.index` (expression), `dest.index` (one name) | rewrite, date math resolved first; `source.remote`, `dest.pipeline`, `dest.op_type` other than index/create refused; `source.query` a query; `script` checked |
//! | `PUT /<index>` body | `aliases` names | rewrite (one name, no pattern); `filter` a query; routing options pass |
//! | `PUT /<index>` body | `settings` | check: `index.default_pipeline`, `index.final_pipeline` refused; `index.query.default_field` must not name `_index`, read as Elasticsearch reads a list setting (a string split at commas, each part trimmed: `"title,_index"`, `" _index"` refused) |
//! | `PUT /<index>` body | `mappings` | check: field aliases (`"type": "alias"`) to metadata fields, `copy_to` into `_index` (a string split at commas, as Elasticsearch reads it) and `runtime` scripts refused; the `percolator` field type refused (anywhere in mappings and templates: see `percolate`) |
//! | `PUT /<index>/_settings`, `PUT /<index>/_mapping` body | settings, mappings | check as above; `number_of_replicas`, `auto_expand_replicas` refused in settings updates (not counted against the plan) |
//! | index settings (creation, updates, templates) | the upstream's per-index guards: `index.max_*`, `highlight.max_analyzed_offset`, `mapping.*.limit`, translog flush/generation thresholds and retention, search and indexing slow logs | refuse (they protect the shared JVM, disk and cluster state) |
//! | `POST /_aliases` body | `actions[].add/remove/remove_index`: `index`, `indices` | rewrite (expressions, date math resolved first); `remove_index` with a wildcard refused |
//! | `POST /_aliases` body | `alias`, `aliases` | rewrite (date math resolved first; `add`: one name each; `remove`: patterns allowed); `filter` a query; `routing`, `index_routing`, `search_routing` pass unchanged (a routing value selects a shard of the tenant's own index: never an index); unknown actions and keys refused |
//! | `PUT /<index>/_alias/<name>` body | `index`, `alias` (they override the path upstream) | rewrite, date math resolved first; `filter` a query; routing options pass |
//! | `_template` body | `index_patterns` | rewrite each pattern; `order`, `version` pass; `settings`, `mappings`, `aliases` as index creation |
//! | `_index_template` body | `index_patterns`, `composed_of` | rewrite; `template.{settings,mappings,aliases}` as index creation; `priority`, `version`, `_meta` pass; `data_stream` refused |
//! | `_component_template` body | `template.{settings,mappings,aliases}` | as index creation |
//! | templates | `number_of_shards`, `number_of_replicas`, `auto_expand_replicas` in settings | refuse (they would bypass the plan's shard check at creation) |
//! | `_search/scroll` body and params | `scroll_id` | open (scroll); `scroll` passes |
//! | `DELETE /_search/scroll` body | `scroll_id` (string or array) | open each |
//! | `DELETE /_pit` body | `id` | open (point in time) |
//! | `DELETE /_search/point_in_time` body (OpenSearch) | `pit_id` (string or array) | open each |
//! | query DSL | `term`, `terms` values on `_index` | rewrite: `<P>value` |
//! | query DSL | `prefix`, `wildcard` values on `_index` | rewrite: `<P>value` |
//! | query DSL | `regexp` on `_index` | check with a strict Lucene regexp parser, then rewrite to `"<P>"(<canonical>)` (the prefix one quoted literal: its bytes stay contiguous, so any echo is stripped); `flags` other than `ALL` refused |
//! | query DSL | `match` on `_index` | rewrite `query` to `<P>value`; fuzziness and other options refused |
//! | query DSL | `fuzzy`, `range`, `match_phrase`, `match_phrase_prefix`, `match_bool_prefix`, `common`, `span_term`, `terms_set`, `geo_bounding_box`, `geo_distance`, `geo_polygon` on `_index` | refuse |
//! | query DSL | `distance_feature`, `rank_feature` `field` | check (`_index` refused) |
//! | query DSL | `terms` lookup `index` | rewrite (one name) |
//! | query DSL | `terms` lookup on `_index` (or a field pattern that could be it) | refuse: the looked-up values are the tenant's data, compared unprefixed and as patterns with the prefixed name upstream (a prefix oracle) |
//! | query DSL | `query_string` | check the text (`lucene::query_string`) and `default_field`/`fields` |
//! | query DSL | `multi_match`, `combined_fields`, `simple_query_string` `fields`; `more_like_this` `fields` | check field lists (`_index` patterns refused, exactly `*` passes) |
//! | query DSL | `more_like_this` `like`/`unlike` documents `_index` | rewrite (one name) |
//! | query DSL | `geo_shape`/`shape` `indexed_shape.index` | rewrite (one name; absent: `<P>shapes`, the upstream's default) |
//! | query DSL | `percolate` | refuse: it runs stored queries, which are documents (forwarded unread, as every document) that the upstream parses with the percolator index's real name: `_index` comparisons, `query_string`, `wrapper`, scripts and raw index names (`more_like_this`, terms lookups) inside them would never be checked |
//! | query DSL | `exists`, `ids`, `match_all`, `match_none`, `type`, `parent_id` | pass |
//! | query DSL | `bool`, `dis_max`, `constant_score`, `boosting`, `nested`, `has_child`, `has_parent`, `function_score`, `span_containing`, `span_first`, `span_multi`, `span_near`, `span_not`, `span_or`, `span_within`, `field_masking_span` (its `field` checked), `pinned` | compound: their queries recursively; `inner_hits` as hits options; `function_score` functions' fields checked |
//! | query DSL | `intervals` | check `use_field`, refuse `filter.script`, `_index` as the field refused |
//! | query DSL | `wrapper` (a query hidden in base64), `script`, `script_score`, `function_score` `script_score` | refuse |
//! | query DSL | any other query type | refuse (`parsing_exception` "unknown query [x]") |
//! | aggregations | every type: the keys its 7.10 parser knows, each read as what it holds (`aggs_table::AGGS`: field, fields, plain values, query, sort, script, field configs, filters, include/exclude, composite sources and `after`); any other key refused (`[avg] unknown field [x]`) |
//! | aggregations | `terms`, `composite` (terms sources) on `_index` | pass; `include`/`exclude` values rewritten, regexes as `regexp`; partitions refused; composite `after` rewritten |
//! | aggregations | `cardinality`, `value_count`, `missing` on `_index` | pass |
//! | aggregations | any other aggregation on `_index` (`field`, `source_fields`, `matrix_stats.fields`, `nested.path`, `t_test`/`weighted_avg`/`top_metrics`/`multi_terms` field configs) | refuse |
//! | aggregations | `filter`, `filters`, `adjacency_matrix`, `significant_terms.background_filter`, `significant_text.background_filter`, `t_test.a.filter`/`t_test.b.filter` | queries |
//! | aggregations | `top_metrics.sort`, `bucket_sort.sort` | sorts (below) |
//! | aggregations | `top_hits` | hits options (sort, highlight, ...) |
//! | aggregations | `script` anywhere, `script_heuristic`, `scripted_metric`, `bucket_script`, `bucket_selector`, `moving_fn`, `inference` | refuse |
//! | aggregations | the other types: `adjacency_matrix`, `auto_date_histogram`, `avg`, `avg_bucket`, `boxplot`, `bucket_sort`, `children`, `composite`, `cumulative_cardinality`, `cumulative_sum`, `date_histogram`, `date_range`, `derivative`, `diversified_sampler`, `extended_stats`, `extended_stats_bucket`, `filters`, `geo_bounds`, `geo_centroid`, `geo_distance`, `geohash_grid`, `geotile_grid`, `global`, `histogram`, `ip_range`, `matrix_stats`, `max`, `max_bucket`, `median_absolute_deviation`, `min`, `min_bucket`, `moving_avg`, `moving_percentiles`, `multi_terms`, `nested`, `normalize`, `parent`, `percentile_ranks`, `percentiles`, `percentiles_bucket`, `range`, `rare_terms`, `rate`, `reverse_nested`, `sampler`, `serial_diff`, `significant_terms`, `significant_text`, `stats`, `stats_bucket`, `string_stats`, `sum`, `sum_bucket`, `t_test`, `top_metrics`, `variable_width_histogram`, `weighted_avg` | as their row says |
//! | aggregations | any other aggregation type | refuse ("unknown aggregation type [x]") |
//! | sorts | search body `sort`, `inner_hits`/`top_hits`/`collapse.inner_hits` `sort`, `top_metrics.sort`, `bucket_sort.sort`, `_delete_by_query`/`_update_by_query` `sort`, `_reindex` `source.sort` | one reader (`query::hits::sort`): field sorts take `order`, `missing`, `mode`, `sort_mode`, `unmapped_type`, `numeric_type`, `format`, `nested` (`path` checked, `filter` a query, `max_children`, `nested` again), `nested_path`, `nested_filter` (a query); `_geo_distance` its field (not `_index`) and `order`, `unit`, `mode`, `distance_type`, `validation_method`, `ignore_unmapped` and the nested options; `_script` refused; any other option refused; `_index` sorts recorded for `search_after` (refused in jobs) |
//! | scripts | in `_update`, bulk `update`, `_update_by_query`, `_reindex` | check: the Painless subset of `painless`; stored scripts (`id`) refused |
//! | scripts | anywhere else (search, aggregations, sort, queries) | refuse |
//! | responses | parser source snippets (`[Source: (String)"…"` in error reasons) | redact to the end of their string (`snippets.rs`): they can cut `<P>` short, or quote other requests' buffers |
//! | responses | `_index` values, keys, errors, `_cat` tables, headers | strip every occurrence of `<P>` (`response.rs`); `_cat` rows of others dropped |
//! | responses | `_scroll_id`, `pit_id` (search), `id` (PIT opening) | seal (`ids`) |
//!
//! Must not touch: I/O, framing (`ndjson`), paths (`request`), responses (`response`).

pub mod admin;
pub mod aggs;
pub mod aggs_table;
pub mod bulk_fast;
pub mod bulk_heads;
pub mod docs;
pub mod params;
pub mod query;
pub mod search;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_fuzz;

use super::ids::{IdKind, IdSealer};
use super::json::Value;
use super::names::{rewrite_expr, MAX_NAME};
use super::prefix::Prefix;
use crate::errors::EdgeError;

// The refusals and their wording live below both the table and the Painless subset.
pub use super::refusals::{at, illegal, known_keys, no_scripts, object_mut, parsing, unsupported};

/// What a rewrite needs of the tenant: its prefix, and the means to open its sealed ids.
#[derive(Debug, Clone, Copy)]
pub struct Tenant<'a> {
    pub prefix: &'a Prefix,
    /// The node's sealer and the cluster id the tenant's tokens are bound to (`None`:
    /// sealed ids cannot be opened, every token is missing).
    pub ids: Option<(&'a IdSealer, &'a str)>,
    /// The wall clock of the request (ms since the epoch, UTC): date-math names in bodies
    /// are resolved at it ([`resolve_date_math`]), once, by the edge.
    pub now_ms: i64,
}

impl Tenant<'_> {
    /// `<P>` + `s`: a literal `_index` value in the tenant's namespace.
    pub fn prefixed(&self, s: &str) -> String {
        let mut out = String::with_capacity(self.prefix.as_str().len() + s.len());
        out.push_str(self.prefix.as_str());
        out.push_str(s);
        out
    }

    /// Opens a token the tenant sent (404 search context missing when it does not open).
    pub fn open(&self, kind: IdKind, token: &str) -> Result<String, EdgeError> {
        match self.ids {
            Some((sealer, cluster)) => sealer.open_or_missing(cluster, kind, token),
            None => Err(EdgeError::SearchContextMissing(
                token.chars().take(64).collect(),
            )),
        }
    }
}

/// Resolves the date-math items (`<logs-{now/d}>`) of a string value naming indices or
/// aliases at the request's clock (`request::datemath`, the one resolver of paths too), so
/// that what the edge checks, confines and auto-creates is what the upstream gets: it never
/// evaluates them a second time (across midnight, say). Refused 400 as the path's are when
/// the edge cannot read one. Other values are left as they are.
pub fn resolve_date_math(t: &Tenant, v: &mut Value) -> Result<(), EdgeError> {
    if let Value::String(s) = v {
        if let Some(new) = crate::request::datemath::resolve_list(s.as_bytes(), t.now_ms)? {
            // the resolver writes names it checked to be plain index names
            *s = String::from_utf8(new).expect("resolved names are UTF-8");
        }
    }
    Ok(())
}

/// Rewrites a string value holding an index expression (comma list, patterns, exclusions).
pub fn rewrite_expression(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    let Value::String(s) = v else {
        return Err(parsing(format!(
            "[{where_}] must be a string (an index name)"
        )));
    };
    let mut out = Vec::with_capacity(s.len() + 24);
    rewrite_expr(t.prefix, s.as_bytes(), &mut out)?;
    *s = String::from_utf8(out).expect("prefix and a UTF-8 expression");
    Ok(())
}

/// Whether `s` can be one index or alias name or pattern ([`rewrite_name`]'s value): not
/// empty, no list, not absurdly long (the exact limit is `names`' to check).
pub fn is_one_name(s: &[u8]) -> bool {
    !s.is_empty() && !s.contains(&b',') && s.len() <= MAX_NAME + 255
}

/// Rewrites a string value holding one index or alias name or pattern (no list).
pub fn rewrite_name(t: &Tenant, v: &mut Value, where_: &str) -> Result<(), EdgeError> {
    match v {
        Value::String(s) if is_one_name(s.as_bytes()) => rewrite_expression(t, v, where_),
        Value::String(_) => Err(parsing(format!(
            "[{where_}] must name one index (no list, not empty)"
        ))),
        _ => Err(parsing(format!(
            "[{where_}] must be a string (an index name)"
        ))),
    }
}

/// The values of a field list (`"f"` or `["f", ...]`); refused when one could be `_index`.
pub fn check_field_list(v: &Value, where_: &str) -> Result<(), EdgeError> {
    let one = |f: &Value| match f {
        Value::String(s) if super::lucene::could_name_index(s) => {
            Err(unsupported(&format!("field [{s}]"), where_))
        }
        Value::String(_) => Ok(()),
        other => Err(parsing(format!(
            "[{where_}] must hold field names, found [{}]",
            other.token_name()
        ))),
    };
    match v {
        Value::Array(a) => a.iter().try_for_each(one),
        other => one(other),
    }
}

/// A field list read the way Elasticsearch reads list settings (`Settings.getAsList`: a
/// string is split at commas and each part trimmed, as Java's `String.trim` does) and
/// mapping string arrays (`XContentMapValues.nodeStringArrayValue`: a string is split at
/// commas): `index.query.default_field`, `copy_to`. Every reading of every element (as
/// sent, split, trimmed either way) is checked; one that could be `_index` is refused
/// (attacks-10 #5: `"title,_index"` and `" _index"` name `_index` upstream).
pub fn check_field_list_setting(v: &Value, where_: &str) -> Result<(), EdgeError> {
    let java_trim = |s: &str| s.trim_matches(|c: char| c <= ' ').to_string();
    let one = |f: &Value| -> Result<(), EdgeError> {
        let Value::String(s) = f else {
            return check_field_list(f, where_);
        };
        let mut readings = vec![s.clone()];
        for part in s.split(',') {
            readings.extend([part.to_string(), java_trim(part), part.trim().to_string()]);
        }
        readings
            .iter()
            .try_for_each(|r| check_field_list(&Value::String(r.clone()), where_))
    };
    match v {
        Value::Array(a) => a.iter().try_for_each(one),
        other => one(other),
    }
}
