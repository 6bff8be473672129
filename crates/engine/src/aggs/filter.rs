//! `filter` and `filters` aggregations over queries the engine compiled: tantivy's filter
//! aggregation takes a query builder (typetag-registered), here one that hands out a copy
//! of the compiled query. Rewriting leaves a placeholder (`"\u{1}q<n>"`) where each query
//! goes; [`install`] swaps the placeholders for the builders.

use serde::{Deserialize, Serialize};
use tantivy::aggregation::agg_req::{AggregationVariants, Aggregations};
use tantivy::aggregation::bucket::{FilterAggregation, QueryBuilder};
use tantivy::query::Query as TQuery;
use tantivy::schema::Schema;
use tantivy::tokenizer::TokenizerManager;

use crate::error::{EngineError, EngineResult};

/// A query compiled by the engine, handed to tantivy's filter aggregation.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Compiled {
    #[serde(skip)]
    query: Option<Box<dyn TQuery>>,
}

#[typetag::serde(name = "searchgate_compiled")]
impl QueryBuilder for Compiled {
    fn build_query(
        &self,
        _schema: &Schema,
        _tokenizers: &TokenizerManager,
    ) -> tantivy::Result<Box<dyn TQuery>> {
        self.query.as_ref().map(|q| q.box_clone()).ok_or_else(|| {
            tantivy::TantivyError::InvalidArgument("a filter aggregation lost its query".into())
        })
    }

    fn box_clone(&self) -> Box<dyn QueryBuilder> {
        Box::new(Compiled {
            query: self.query.as_ref().map(|q| q.box_clone()),
        })
    }
}

/// The placeholder of query `n`.
pub fn placeholder(n: usize) -> String {
    format!("\u{1}q{n}")
}

/// Replaces every placeholder filter with its compiled query.
pub fn install(aggs: &mut Aggregations, queries: &mut Vec<Box<dyn TQuery>>) -> EngineResult<()> {
    for agg in aggs.values_mut() {
        if let AggregationVariants::Filter(f) = &mut agg.agg {
            let key = serde_json::to_value(&*f).map_err(EngineError::internal)?;
            let n = key
                .as_str()
                .and_then(|s| s.strip_prefix("\u{1}q"))
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| EngineError::internal("a filter aggregation without its query"))?;
            let q = queries
                .get(n)
                .ok_or_else(|| EngineError::internal("a filter aggregation query is missing"))?
                .box_clone();
            *f = FilterAggregation::new_with_builder(Box::new(Compiled { query: Some(q) }));
        }
        install(&mut agg.sub_aggregation, queries)?;
    }
    Ok(())
}
