//! Prefix and wildcard queries as a regex automaton over a term dictionary, restricted to
//! the key range that shares the query's literal prefix (the JSON path and the pattern's
//! leading literal): the sstable dictionary then reads only those blocks.

use std::sync::Arc;

use tantivy::query::{AutomatonWeight, EnableScoring, Query, Weight};
use tantivy::schema::Field;
use tantivy_fst::Regex;

/// Terms of `field` starting with `prefix` and matching `regex` (which must match whole
/// keys, prefix included).
#[derive(Debug, Clone)]
pub struct RangedRegexQuery {
    field: Field,
    regex: Arc<Regex>,
    prefix: Vec<u8>,
}

impl RangedRegexQuery {
    /// Builds the query; Err for an invalid pattern.
    pub fn new(field: Field, pattern: &str, prefix: Vec<u8>) -> Result<Self, String> {
        let regex = Regex::new(pattern).map_err(|e| e.to_string())?;
        Ok(RangedRegexQuery {
            field,
            regex: Arc::new(regex),
            prefix,
        })
    }
}

impl Query for RangedRegexQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(AutomatonWeight::<Regex>::new_for_json_path(
            self.field,
            self.regex.clone(),
            &self.prefix,
        )))
    }
}
