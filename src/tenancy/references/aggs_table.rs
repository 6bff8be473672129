//! The aggregation table: every aggregation type of Elasticsearch 7.10 (with the default
//! distribution's analytics types) that a tenant may use, and for each one every key its
//! parser knows, with what the key holds ([`K`]). A key not in its type's row is refused
//! as Elasticsearch refuses one (`[terms] unknown field [x]`), so nothing reaches the
//! upstream that the edge did not read (attacks-10 #6: `significant_text` and `t_test`
//! carried unread queries under keys a generic walk did not know).
//!
//! Must not touch: the walk itself (`aggs`), queries (`query`), sorts (`search`).

/// What one key of an aggregation body holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum K {
    /// A field name: `_index` only where the type's [`OnIndex`] allows it.
    Field,
    /// A list of field names (`_index` refused).
    Fields,
    /// Values that name no field and hold no query (sizes, intervals, formats, ranges,
    /// orders, bucket paths): scalars, arrays, plain objects; walked anyway, a `script`
    /// inside is refused and a `field` inside checked.
    Plain,
    /// A query (`background_filter`, `filter`).
    Query,
    /// A sort specification, read as a search body's `sort` (nested filters are queries).
    Sort,
    /// A script, or a significance heuristic that runs one: refused.
    Script,
    /// One or a list of `{field, missing, script, filter, time_zone}` (`weighted_avg.value`,
    /// `t_test.a`, `top_metrics.metrics`, `multi_terms.terms`): `filter` is a query.
    FieldConfig,
    /// `filters` of `filters` and `adjacency_matrix`: named (object) or anonymous (array).
    Filters,
    /// `include`/`exclude` of `terms`: on `_index`, values prefixed and regexes confined.
    IncludeExclude,
    /// `composite.sources`.
    Sources,
    /// `composite.after`: values of `_index` sources prefixed.
    After,
}

/// Where the aggregation's `field` may be `_index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnIndex {
    /// Refused: the aggregation would compare or order `_index` values in a way that could
    /// reveal the prefix, or has no use for it.
    Refuse,
    /// Allowed: only counts come back (`cardinality`, `value_count`, `missing`).
    Count,
    /// Allowed: the values come back as buckets (stripped); `include`/`exclude` rewritten.
    Terms,
}

/// How an aggregation type is read.
#[derive(Debug, Clone, Copy)]
pub enum Agg {
    /// An object whose keys are in these groups.
    Keys(OnIndex, &'static [&'static [(&'static str, K)]]),
    /// The body is a query (`filter`).
    Query,
    /// `top_hits`: the options of hits (`query::hits::hits_options`).
    Hits,
    /// Scripted: refused.
    Refuse,
}

use K::*;

/// The values-source keys most field aggregations take.
const VS: &[(&str, K)] = &[
    ("field", Field),
    ("script", Script),
    ("missing", Plain),
    ("value_type", Plain),
    ("format", Plain),
];
const TZ: &[(&str, K)] = &[("time_zone", Plain)];
const SIGMA: &[(&str, K)] = &[("sigma", Plain)];
const PERCENTILES: &[(&str, K)] = &[
    ("percents", Plain),
    ("keyed", Plain),
    ("tdigest", Plain),
    ("hdr", Plain),
    ("method", Plain),
    ("compression", Plain),
    ("number_of_significant_value_digits", Plain),
];
const RANKS: &[(&str, K)] = &[
    ("values", Plain),
    ("keyed", Plain),
    ("tdigest", Plain),
    ("hdr", Plain),
    ("method", Plain),
    ("compression", Plain),
    ("number_of_significant_value_digits", Plain),
];
const COMPRESSION: &[(&str, K)] = &[("compression", Plain)];
const TERMS: &[(&str, K)] = &[
    ("size", Plain),
    ("shard_size", Plain),
    ("min_doc_count", Plain),
    ("shard_min_doc_count", Plain),
    ("show_term_doc_count_error", Plain),
    ("order", Plain),
    ("include", IncludeExclude),
    ("exclude", IncludeExclude),
    ("execution_hint", Plain),
    ("collect_mode", Plain),
];
const RARE: &[(&str, K)] = &[
    ("max_doc_count", Plain),
    ("precision", Plain),
    ("include", IncludeExclude),
    ("exclude", IncludeExclude),
];
const SIGNIFICANT: &[(&str, K)] = &[
    ("size", Plain),
    ("shard_size", Plain),
    ("min_doc_count", Plain),
    ("shard_min_doc_count", Plain),
    ("execution_hint", Plain),
    ("include", IncludeExclude),
    ("exclude", IncludeExclude),
    ("background_filter", Query),
    ("mutual_information", Plain),
    ("chi_square", Plain),
    ("gnd", Plain),
    ("jlh", Plain),
    ("percentage", Plain),
    ("script_heuristic", Script),
];
const SIGNIFICANT_TEXT: &[(&str, K)] = &[
    ("field", Field),
    ("filter_duplicate_text", Plain),
    ("source_fields", Fields),
];
const HISTOGRAM: &[(&str, K)] = &[
    ("interval", Plain),
    ("offset", Plain),
    ("min_doc_count", Plain),
    ("extended_bounds", Plain),
    ("hard_bounds", Plain),
    ("order", Plain),
    ("keyed", Plain),
];
const DATE_HISTOGRAM: &[(&str, K)] = &[("calendar_interval", Plain), ("fixed_interval", Plain)];
const AUTO_DATE: &[(&str, K)] = &[("buckets", Plain), ("minimum_interval", Plain)];
const VARIABLE_WIDTH: &[(&str, K)] = &[
    ("buckets", Plain),
    ("shard_size", Plain),
    ("initial_buffer", Plain),
];
const RANGES: &[(&str, K)] = &[("ranges", Plain), ("keyed", Plain)];
const GEO_DISTANCE: &[(&str, K)] = &[
    ("field", Field),
    ("origin", Plain),
    ("point", Plain),
    ("center", Plain),
    ("ranges", Plain),
    ("unit", Plain),
    ("distance_type", Plain),
    ("keyed", Plain),
];
const GEO_GRID: &[(&str, K)] = &[
    ("field", Field),
    ("precision", Plain),
    ("bounds", Plain),
    ("size", Plain),
    ("shard_size", Plain),
];
const GEO_BOUNDS: &[(&str, K)] = &[("wrap_longitude", Plain)];
const CARDINALITY: &[(&str, K)] = &[("precision_threshold", Plain), ("rehash", Plain)];
const STRING_STATS: &[(&str, K)] = &[("show_distribution", Plain)];
const MATRIX: &[(&str, K)] = &[("fields", Fields), ("missing", Plain), ("mode", Plain)];
const RATE: &[(&str, K)] = &[("unit", Plain), ("mode", Plain)];
const SAMPLER: &[(&str, K)] = &[("shard_size", Plain)];
const DIVERSIFIED: &[(&str, K)] = &[
    ("shard_size", Plain),
    ("max_docs_per_value", Plain),
    ("execution_hint", Plain),
];
const PATH: &[(&str, K)] = &[("path", Fields)];
const JOIN: &[(&str, K)] = &[("type", Plain)];
const NONE: &[(&str, K)] = &[];
const FILTERS: &[(&str, K)] = &[
    ("filters", Filters),
    ("other_bucket", Plain),
    ("other_bucket_key", Plain),
];
const ADJACENCY: &[(&str, K)] = &[("filters", Filters), ("separator", Plain)];
const COMPOSITE: &[(&str, K)] = &[("sources", Sources), ("size", Plain), ("after", After)];
const WEIGHTED: &[(&str, K)] = &[
    ("value", FieldConfig),
    ("weight", FieldConfig),
    ("format", Plain),
    ("value_type", Plain),
];
const T_TEST: &[(&str, K)] = &[("a", FieldConfig), ("b", FieldConfig), ("type", Plain)];
const TOP_METRICS: &[(&str, K)] = &[("metrics", FieldConfig), ("sort", Sort), ("size", Plain)];
const MULTI_TERMS: &[(&str, K)] = &[
    ("terms", FieldConfig),
    ("size", Plain),
    ("shard_size", Plain),
    ("min_doc_count", Plain),
    ("shard_min_doc_count", Plain),
    ("show_term_doc_count_error", Plain),
    ("order", Plain),
    ("collect_mode", Plain),
];
/// Pipeline aggregations: bucket paths name aggregations, not fields.
const PIPE: &[(&str, K)] = &[
    ("buckets_path", Plain),
    ("gap_policy", Plain),
    ("format", Plain),
];
const DERIVATIVE: &[(&str, K)] = &[("unit", Plain)];
const SERIAL_DIFF: &[(&str, K)] = &[("lag", Plain)];
const MOVING_AVG: &[(&str, K)] = &[
    ("window", Plain),
    ("model", Plain),
    ("settings", Plain),
    ("predict", Plain),
    ("minimize", Plain),
];
const MOVING_PERCENTILES: &[(&str, K)] = &[("window", Plain), ("shift", Plain)];
const PERCENTILES_BUCKET: &[(&str, K)] = &[("percents", Plain), ("keyed", Plain)];
const NORMALIZE: &[(&str, K)] = &[("method", Plain)];
const BUCKET_SORT: &[(&str, K)] = &[
    ("sort", Sort),
    ("from", Plain),
    ("size", Plain),
    ("gap_policy", Plain),
];

use Agg::Keys;
use OnIndex::{Count, Refuse as No, Terms as OnTerms};

/// Every aggregation type, alphabetically.
pub static AGGS: &[(&str, Agg)] = &[
    ("adjacency_matrix", Keys(No, &[ADJACENCY])),
    ("auto_date_histogram", Keys(No, &[VS, TZ, AUTO_DATE])),
    ("avg", Keys(No, &[VS])),
    ("avg_bucket", Keys(No, &[PIPE])),
    ("boxplot", Keys(No, &[VS, COMPRESSION])),
    ("bucket_script", Agg::Refuse),
    ("bucket_selector", Agg::Refuse),
    ("bucket_sort", Keys(No, &[BUCKET_SORT])),
    ("cardinality", Keys(Count, &[VS, CARDINALITY])),
    ("children", Keys(No, &[JOIN])),
    ("composite", Keys(No, &[COMPOSITE])),
    ("cumulative_cardinality", Keys(No, &[PIPE])),
    ("cumulative_sum", Keys(No, &[PIPE])),
    (
        "date_histogram",
        Keys(No, &[VS, TZ, HISTOGRAM, DATE_HISTOGRAM]),
    ),
    ("date_range", Keys(No, &[VS, TZ, RANGES])),
    ("derivative", Keys(No, &[PIPE, DERIVATIVE])),
    ("diversified_sampler", Keys(No, &[VS, DIVERSIFIED])),
    ("extended_stats", Keys(No, &[VS, SIGMA])),
    ("extended_stats_bucket", Keys(No, &[PIPE, SIGMA])),
    ("filter", Agg::Query),
    ("filters", Keys(No, &[FILTERS])),
    ("geo_bounds", Keys(No, &[VS, GEO_BOUNDS])),
    ("geo_centroid", Keys(No, &[VS])),
    ("geo_distance", Keys(No, &[GEO_DISTANCE])),
    ("geohash_grid", Keys(No, &[GEO_GRID])),
    ("geotile_grid", Keys(No, &[GEO_GRID])),
    ("global", Keys(No, &[NONE])),
    ("histogram", Keys(No, &[VS, HISTOGRAM])),
    ("inference", Agg::Refuse),
    ("ip_range", Keys(No, &[VS, RANGES])),
    ("matrix_stats", Keys(No, &[MATRIX])),
    ("max", Keys(No, &[VS])),
    ("max_bucket", Keys(No, &[PIPE])),
    ("median_absolute_deviation", Keys(No, &[VS, COMPRESSION])),
    ("min", Keys(No, &[VS])),
    ("min_bucket", Keys(No, &[PIPE])),
    ("missing", Keys(Count, &[VS])),
    ("moving_avg", Keys(No, &[PIPE, MOVING_AVG])),
    ("moving_fn", Agg::Refuse),
    ("moving_percentiles", Keys(No, &[PIPE, MOVING_PERCENTILES])),
    ("multi_terms", Keys(No, &[MULTI_TERMS])),
    ("nested", Keys(No, &[PATH])),
    ("normalize", Keys(No, &[PIPE, NORMALIZE])),
    ("parent", Keys(No, &[JOIN])),
    ("percentile_ranks", Keys(No, &[VS, RANKS])),
    ("percentiles", Keys(No, &[VS, PERCENTILES])),
    ("percentiles_bucket", Keys(No, &[PIPE, PERCENTILES_BUCKET])),
    ("range", Keys(No, &[VS, RANGES])),
    ("rare_terms", Keys(No, &[VS, RARE])),
    ("rate", Keys(No, &[VS, RATE])),
    ("reverse_nested", Keys(No, &[PATH])),
    ("sampler", Keys(No, &[SAMPLER])),
    ("scripted_metric", Agg::Refuse),
    ("serial_diff", Keys(No, &[PIPE, SERIAL_DIFF])),
    ("significant_terms", Keys(No, &[VS, SIGNIFICANT])),
    (
        "significant_text",
        Keys(No, &[SIGNIFICANT_TEXT, SIGNIFICANT]),
    ),
    ("stats", Keys(No, &[VS])),
    ("stats_bucket", Keys(No, &[PIPE])),
    ("string_stats", Keys(No, &[VS, STRING_STATS])),
    ("sum", Keys(No, &[VS])),
    ("sum_bucket", Keys(No, &[PIPE])),
    ("t_test", Keys(No, &[T_TEST])),
    ("terms", Keys(OnTerms, &[VS, TERMS])),
    ("top_hits", Agg::Hits),
    ("top_metrics", Keys(No, &[TOP_METRICS])),
    ("value_count", Keys(Count, &[VS])),
    ("variable_width_histogram", Keys(No, &[VS, VARIABLE_WIDTH])),
    ("weighted_avg", Keys(No, &[WEIGHTED])),
];

/// One table of keys and how each is read.
type KeyTable = &'static [(&'static str, K)];

/// Keys of a `composite` source, by source type (`_index` only in `terms`).
pub static SOURCES: &[(&str, &[KeyTable])] = &[
    (
        "date_histogram",
        &[SOURCE, TZ, DATE_HISTOGRAM, SOURCE_HISTOGRAM],
    ),
    ("geotile_grid", &[SOURCE, SOURCE_GEO]),
    ("histogram", &[SOURCE, SOURCE_HISTOGRAM]),
    ("terms", &[SOURCE]),
];
const SOURCE: &[(&str, K)] = &[
    ("field", Field),
    ("script", Script),
    ("missing_bucket", Plain),
    ("missing", Plain),
    ("value_type", Plain),
    ("order", Plain),
    ("format", Plain),
];
const SOURCE_HISTOGRAM: &[(&str, K)] = &[("interval", Plain), ("offset", Plain)];
const SOURCE_GEO: &[(&str, K)] = &[("precision", Plain), ("bounds", Plain)];

/// The row of aggregation type `name`.
pub fn rule(name: &str) -> Option<Agg> {
    AGGS.iter().find(|(n, _)| *n == name).map(|(_, a)| *a)
}
