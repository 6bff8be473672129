//! Aggregations: Elasticsearch aggregation requests are checked against the mapping,
//! their field names rewritten to the keyword JSON field's columns, run per shard with
//! tantivy's distributed aggregation collector, merged across shards and indices, and
//! rendered with Elasticsearch's types (integer counts and keys, `value_as_string` of
//! dates).
//!
//! Supported: terms, min, max, avg, sum, value_count, stats, extended_stats, cardinality,
//! percentiles, histogram, range (and what else tantivy accepts), with sub-aggregations.

use serde_json::{Map, Value};
use tantivy::aggregation::agg_req::Aggregations;
use tantivy::aggregation::intermediate_agg_result::IntermediateAggregationResults;
use tantivy::aggregation::{
    AggContextParams, AggregationLimitsGuard, DistributedAggregationCollector,
};
use tantivy::query::Query as TQuery;
use tantivy::Searcher;

use crate::engine::error::{EngineError, EngineResult};
use crate::engine::mapping::date::format_millis;
use crate::engine::mapping::{LeafKind, Mapping};
use crate::engine::store::schema::F_KW;

fn perr(msg: String) -> EngineError {
    EngineError::Parsing(msg)
}

/// Rewrites an aggregation request for an index and parses it for tantivy.
pub fn prepare(raw: &Value, mapping: &Mapping) -> EngineResult<Aggregations> {
    let rewritten = rewrite_aggs(raw, mapping)?;
    serde_json::from_value(rewritten)
        .map_err(|e| perr(format!("failed to parse aggregations: {e}")))
}

fn rewrite_aggs(raw: &Value, mapping: &Mapping) -> EngineResult<Value> {
    let obj = raw
        .as_object()
        .ok_or_else(|| perr("Expected [START_OBJECT] under [aggregations]".into()))?;
    let mut out = Map::new();
    for (name, def) in obj {
        out.insert(name.clone(), rewrite_one(name, def, mapping)?);
    }
    Ok(Value::Object(out))
}

fn rewrite_one(name: &str, def: &Value, mapping: &Mapping) -> EngineResult<Value> {
    let obj = def.as_object().ok_or_else(|| {
        perr(format!(
            "Expected [START_OBJECT] under [{name}], but got a value"
        ))
    })?;
    let mut out = Map::new();
    let mut kinds = 0;
    for (k, v) in obj {
        match k.as_str() {
            "aggs" | "aggregations" => {
                out.insert("aggs".into(), rewrite_aggs(v, mapping)?);
            }
            "meta" => {}
            kind => {
                kinds += 1;
                out.insert(kind.to_string(), rewrite_body(name, kind, v, mapping)?);
            }
        }
    }
    if kinds != 1 {
        return Err(perr(format!(
            "Expected exactly one aggregation type under [{name}]"
        )));
    }
    Ok(Value::Object(out))
}

fn rewrite_body(name: &str, kind: &str, body: &Value, mapping: &Mapping) -> EngineResult<Value> {
    let mut b = body.clone();
    if let Some(Value::String(field)) = body.get("field") {
        if let Some(info) = mapping.field(field) {
            if info.kind == LeafKind::Text {
                return Err(EngineError::SearchPhase {
                    kind: "illegal_argument_exception".into(),
                    reason: format!("Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [{field}] in order to load field data by uninverting the inverted index. Note that this can use significant memory."),
                });
            }
        }
        b["field"] = Value::String(format!("{F_KW}.{field}"));
    } else if !matches!(
        kind,
        "filter" | "composite" | "multi_terms" | "top_hits" | "filters"
    ) {
        return Err(perr(format!(
            "Required one of fields [field, script], but none were specified. [{name}]"
        )));
    }
    Ok(b)
}

/// Runs the aggregations of one shard.
pub fn collect(
    searcher: &Searcher,
    query: &dyn TQuery,
    aggs: &Aggregations,
) -> EngineResult<IntermediateAggregationResults> {
    let ctx = AggContextParams::new(AggregationLimitsGuard::default(), Default::default());
    let collector = DistributedAggregationCollector::from_aggs(aggs.clone(), ctx);
    searcher.search(query, &collector).map_err(|e| match e {
        tantivy::TantivyError::AggregationError(a) => EngineError::IllegalArgument(a.to_string()),
        tantivy::TantivyError::InvalidArgument(a) => EngineError::IllegalArgument(a),
        other => EngineError::internal(other),
    })
}

/// Merges shard results and renders them as Elasticsearch does.
pub fn finish(
    parts: Vec<IntermediateAggregationResults>,
    aggs: &Aggregations,
    raw: &Value,
    mapping: &Mapping,
) -> EngineResult<Value> {
    let mut it = parts.into_iter();
    let mut merged = it.next().unwrap_or_default();
    for p in it {
        merged.merge_fruits(p).map_err(EngineError::internal)?;
    }
    let res = merged
        .into_final_result(aggs.clone(), AggregationLimitsGuard::default())
        .map_err(|e| EngineError::IllegalArgument(e.to_string()))?;
    let mut v = serde_json::to_value(res).map_err(EngineError::internal)?;
    fix_types(&mut v, raw, mapping);
    Ok(v)
}

/// Integer counts and keys for integer and date fields; `value_as_string` for dates.
fn fix_types(res: &mut Value, req: &Value, mapping: &Mapping) {
    let (Some(res), Some(req)) = (res.as_object_mut(), req.as_object()) else {
        return;
    };
    for (name, def) in req {
        let Some(out) = res.get_mut(name) else {
            continue;
        };
        let Some(def) = def.as_object() else { continue };
        let kind = def
            .keys()
            .find(|k| !matches!(k.as_str(), "aggs" | "aggregations" | "meta"))
            .cloned()
            .unwrap_or_default();
        let field_kind = def
            .get(&kind)
            .and_then(|b| b.get("field"))
            .and_then(Value::as_str)
            .and_then(|f| mapping.field(f))
            .map(|f| f.kind);
        let integral = field_kind.is_some_and(|k| k.int_bounds().is_some() || k == LeafKind::Date);
        let sub = def.get("aggs").or_else(|| def.get("aggregations"));
        if kind == "value_count" {
            integerize(out, "value");
        }
        if field_kind == Some(LeafKind::Date) && matches!(kind.as_str(), "min" | "max") {
            if let Some(ms) = out.get("value").and_then(Value::as_f64) {
                out["value_as_string"] = Value::String(format_millis(ms as i64));
            }
        }
        if let Some(buckets) = out.get_mut("buckets").and_then(Value::as_array_mut) {
            for b in buckets {
                if integral {
                    integerize(b, "key");
                }
                if field_kind == Some(LeafKind::Date) {
                    if let Some(ms) = b.get("key").and_then(Value::as_i64) {
                        b["key_as_string"] = Value::String(format_millis(ms));
                    }
                }
                if let Some(sub) = sub {
                    fix_types(b, sub, mapping);
                }
            }
        }
    }
}

fn integerize(v: &mut Value, key: &str) {
    if let Some(f) = v.get(key).and_then(Value::as_f64) {
        if f.fract() == 0.0 && f.abs() < 9.0e15 {
            v[key] = Value::from(f as i64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mapping() -> Mapping {
        crate::engine::mapping::parse_mappings(&json!({"properties": {
            "t": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
            "n": {"type": "long"}}}))
        .unwrap()
        .mapping
    }

    #[test]
    fn fields_are_rewritten_and_text_refused() {
        let aggs = json!({"by_t": {"terms": {"field": "t.keyword"}, "aggregations": {"avg_n": {"avg": {"field": "n"}}}}});
        let v = rewrite_aggs(&aggs, &mapping()).unwrap();
        assert_eq!(v["by_t"]["terms"]["field"], "k.t.keyword");
        assert_eq!(v["by_t"]["aggs"]["avg_n"]["avg"]["field"], "k.n");
        assert!(prepare(&aggs, &mapping()).is_ok());
        let e = prepare(&json!({"x": {"terms": {"field": "t"}}}), &mapping()).unwrap_err();
        assert_eq!(e.status(), 400);
        assert!(e
            .body()
            .caused_by
            .unwrap()
            .1
            .contains("Text fields are not optimised"));
        assert!(prepare(&json!({"x": {"bogus": {"field": "n"}}}), &mapping()).is_err());
        assert!(prepare(&json!({"x": {"avg": {}}}), &mapping()).is_err());
    }
}
