//! `percentiles` of small sets as Elasticsearch 7.10 answers them. Its t-digest (3.2, the
//! AVL-tree digest, compression 100) keeps one centroid per value until a set has a couple
//! of hundred values, and then interpolates linearly between neighbouring values at rank
//! `q * (n - 1)` of the sorted values: p50 of `[1, 2, 3]` is `2.0`, p99 is `2.98`. tantivy's
//! percentiles (DDSketch, about 1% relative error) answer `1.99` for both.
//!
//! So a top-level `percentiles` also asks tantivy for its field's values (a `terms`
//! aggregation `<name>\u{1}values` of at most [`EXACT_MAX`] + 1 keys) and their number (a
//! `value_count` `<name>\u{1}count`); when every value is known and there are at most
//! [`EXACT_MAX`] (and fewer than twice the `compression`), the values are computed here,
//! exactly as the digest does. Otherwise tantivy's sketch stands (documented as partial).
//! Only at the top level: under bucket aggregations the extra keys would count against
//! tantivy's bucket limit once per bucket.

use serde_json::{json, Value};

use super::rewrite::{Note, Rewriter};
use crate::error::EngineResult;

/// The largest set computed exactly (Elasticsearch's digest is exact well beyond it).
pub const EXACT_MAX: u64 = 100;

impl Rewriter<'_> {
    /// The siblings of a top-level `percentiles` that carry its exact values.
    pub(super) fn exact_percentiles(
        &mut self,
        name: &str,
        body: &Value,
        here: &str,
    ) -> EngineResult<Vec<(String, Value)>> {
        let Some(field) = body.get("field").and_then(Value::as_str) else {
            return Ok(vec![]);
        };
        let compression = body
            .pointer("/tdigest/compression")
            .and_then(Value::as_f64)
            .unwrap_or(100.0);
        let column = self.column(field)?;
        let mut values = json!({"field": column, "size": EXACT_MAX + 1, "order": {"_key": "asc"}});
        let mut count = json!({ "field": column });
        if let Some(m) = body.get("missing") {
            values["missing"] = m.clone();
            count["missing"] = m.clone();
        }
        self.notes
            .insert(here.to_string(), Note::ExactPercentiles { compression });
        Ok(vec![
            (format!("{name}\u{1}values"), json!({ "terms": values })),
            (format!("{name}\u{1}count"), json!({ "value_count": count })),
        ])
    }
}

/// The sorted values (each repeated as often as it occurs) from the siblings, when they are
/// all there and few enough.
fn known_values(parts: &[(String, Value)], compression: f64) -> Option<Vec<f64>> {
    let part = |k: &str| parts.iter().find(|(n, _)| n == k).map(|(_, v)| v);
    let count = part("count")?.get("value")?.as_f64()? as u64;
    let terms = part("values")?;
    let complete = terms.get("sum_other_doc_count").and_then(Value::as_u64) == Some(0);
    if count == 0 || count > EXACT_MAX || count as f64 >= 2.0 * compression || !complete {
        return None;
    }
    let mut out = Vec::with_capacity(count as usize);
    for b in terms.get("buckets")?.as_array()? {
        let key = b.get("key")?.as_f64()?;
        let n = b.get("doc_count")?.as_u64()?;
        out.extend(std::iter::repeat_n(key, n as usize));
    }
    // a document holding one value twice counts once in `terms`: then not exact
    if out.len() as u64 != count {
        return None;
    }
    out.sort_by(f64::total_cmp);
    Some(out)
}

/// The value at percent `p` of sorted `values`, as the digest interpolates it.
pub fn interpolate(values: &[f64], p: f64) -> Option<f64> {
    let last = values.len().checked_sub(1)?;
    let index = (p / 100.0).clamp(0.0, 1.0) * last as f64;
    let lo = index.floor() as usize;
    let hi = (lo + 1).min(last);
    let frac = index - lo as f64;
    Some(values[lo] * (1.0 - frac) + values[hi] * frac)
}

/// Replaces tantivy's sketch values of `out` by the exact ones when the siblings allow it.
pub fn apply(out: &mut Value, parts: &[(String, Value)], compression: f64) {
    let Some(values) = known_values(parts, compression) else {
        return;
    };
    match out.get_mut("values") {
        Some(Value::Object(m)) => {
            for (k, v) in m.iter_mut() {
                if let Some(x) = k.parse::<f64>().ok().and_then(|p| interpolate(&values, p)) {
                    *v = json!(x);
                }
            }
        }
        Some(Value::Array(a)) => {
            for e in a {
                let x = e
                    .get("key")
                    .and_then(Value::as_f64)
                    .and_then(|p| interpolate(&values, p));
                if let Some(x) = x {
                    e["value"] = json!(x);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_between_neighbours_at_rank_q_n_minus_1() {
        let one_to_five = [1.0, 2.0, 3.0, 4.0, 5.0];
        for (p, want) in [
            (1.0, 1.04),
            (5.0, 1.2),
            (25.0, 2.0),
            (50.0, 3.0),
            (75.0, 4.0),
            (95.0, 4.8),
            (99.0, 4.96),
            (0.0, 1.0),
            (100.0, 5.0),
        ] {
            let got = interpolate(&one_to_five, p).unwrap();
            assert!((got - want).abs() < 1e-9, "p{p}: {got} != {want}");
        }
        assert_eq!(interpolate(&[7.0], 99.0), Some(7.0));
        assert_eq!(interpolate(&[], 50.0), None);
        let three = [1.0, 2.0, 3.0];
        assert!((interpolate(&three, 99.0).unwrap() - 2.98).abs() < 1e-9);
    }

    fn parts(count: u64, buckets: Value, other: u64) -> Vec<(String, Value)> {
        vec![
            ("count".into(), json!({ "value": count as f64 })),
            (
                "values".into(),
                json!({"buckets": buckets, "sum_other_doc_count": other}),
            ),
        ]
    }

    #[test]
    fn exact_only_when_every_value_is_known() {
        let b = json!([{"key": 3.0, "doc_count": 1}, {"key": 1.0, "doc_count": 2}]);
        assert_eq!(
            known_values(&parts(3, b.clone(), 0), 100.0),
            Some(vec![1.0, 1.0, 3.0])
        );
        assert_eq!(known_values(&parts(4, b.clone(), 0), 100.0), None);
        assert_eq!(known_values(&parts(3, b.clone(), 1), 100.0), None);
        assert_eq!(
            known_values(&parts(3, b, 0), 1.0),
            None,
            "small compression"
        );
        let mut out = json!({"values": {"50.0": 1.9, "99.0": 2.9}});
        let b = json!([{"key": 1.0, "doc_count": 1}, {"key": 2.0, "doc_count": 1}, {"key": 3.0, "doc_count": 1}]);
        apply(&mut out, &parts(3, b, 0), 100.0);
        assert_eq!(out["values"]["50.0"], 2.0);
        assert!((out["values"]["99.0"].as_f64().unwrap() - 2.98).abs() < 1e-9);
    }
}
